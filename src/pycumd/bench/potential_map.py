"""``pycumd bench potential-map``: the issue's targets for electrostatic potential maps, in one run.

1. DCS throughput (kernel only, single precision with compensated sums) on a 100,000-atom system,
   against the reciprocal-square-root bound of the device (SMs x 16 SFU lanes x clock);
2. DCS accuracy: single against float64 on adk_open.pqr at 0.5 A;
3. cutoff summation (12 A) against DCS at 100,000 atoms and 0.5 A, both end to end;
4. MSM on the 1.5M-atom system at 0.5 A: time with the map on the GPU (and the copy to the host),
   relative RMS error against DCS on two z slices;
5. MSM error against DCS on adk at 0.5 A for several cutoffs ``a`` and grid spacings ``h``.

Test systems: adk_open.pqr (3,341 atoms, PDB2PQR/CHARMM charges) centred in a cubic cell filled with
TIP3P-charged water on a 3.104 A grid (0.0334 molecules/A^3), each oxygen displaced by up to 0.4 A
per axis at random (a perfect water crystal has a strong 3.1 A Fourier component that aliases with
MSM grids of h ~ 1.5 A), random orientations, waters with the oxygen closer than 2.6 A to a protein
atom removed), with Na+/Cl- replacing waters at 0.15 M plus 4
Na+ to neutralise; the cell is tiled ``cells^3`` times (100,000 atoms: one 100 A cell; 1.5M atoms:
3^3 cells of 82.5 A).
"""

from __future__ import annotations

import datetime
import json
import platform
import time
from pathlib import Path

import numpy as np

from pycumd.bench import argument_parser, default_out_dir

ADK_CANDIDATES = [Path(__file__).resolve().parents[4] / "shared" / "data" / "adk_open.pqr", Path(".pm_data/adk_open.pqr"),
                  Path(__file__).resolve().parents[3] / ".pm_data" / "adk_open.pqr"]


def adk_path(quick: bool = False) -> Path:
    """adk_open.pqr where it is found; with ``quick`` (a smoke run) the shipped NaCl cluster example
    stands in for it when it is not."""
    for p in ADK_CANDIDATES:
        if p.exists():
            return p
    if quick:
        from pycumd.potential_maps.examples import example_path

        print("pycumd bench potential-map: adk_open.pqr not found; --quick runs on the shipped example "
              "nacl-cluster instead", flush=True)
        return example_path("nacl-cluster")
    raise FileNotFoundError("the benchmark's solute adk_open.pqr (PDB2PQR charges of PDB 4AKE) was not found "
                            "(looked in " + ", ".join(map(str, ADK_CANDIDATES)) + "); --quick runs without it")


def solvated_adk(cell_length: float, cells: int = 1, seed: int = 7, solute=None):
    """adk in TIP3P-charged water with 0.15 M NaCl, neutral, tiled ``cells^3`` times (module docstring).

    Returns positions (N, 3) Angstrom and charges (N,) e."""
    from scipy.spatial import cKDTree

    from pycumd.inputs.molecules import read_pqr

    rng = np.random.default_rng(seed)
    adk = read_pqr(solute or adk_path())
    protein = adk.positions - adk.positions.mean(axis=0) + cell_length / 2
    spacing = 3.104
    axis = np.arange(spacing / 2, cell_length, spacing)
    oxygens = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
    oxygens += rng.uniform(-0.4, 0.4, oxygens.shape)     # break the grid's long-range order (liquid-like)
    oxygens = oxygens[cKDTree(protein).query(oxygens, k=1)[0] > 2.6]
    n_pairs = int(round(0.15 * 6.02214076e23 * 1e-27 * cell_length**3))
    n_na, n_cl = n_pairs + int(round(-adk.charges.sum())), n_pairs
    pick = rng.permutation(len(oxygens))
    ions, waters = oxygens[pick[:n_na + n_cl]], oxygens[pick[n_na + n_cl:]]
    rotations = _random_rotations(rng, len(waters))
    half = np.deg2rad(104.52) / 2
    local_h = 0.9572 * np.array([[np.sin(half), 0.0, np.cos(half)], [-np.sin(half), 0.0, np.cos(half)]])
    hydrogens = waters[:, None, :] + np.einsum("nij,hj->nhi", rotations, local_h)
    positions = np.concatenate([protein, waters, hydrogens.reshape(-1, 3), ions])
    charges = np.concatenate([adk.charges, np.full(len(waters), -0.834), np.full(2 * len(waters), 0.417),
                              np.ones(n_na), -np.ones(n_cl)])
    shifts = np.stack(np.meshgrid(*[np.arange(cells)] * 3, indexing="ij"), -1).reshape(-1, 3) * cell_length
    positions = (positions[None] + shifts[:, None]).reshape(-1, 3)
    return positions, np.tile(charges, len(shifts))


def _random_rotations(rng, n):
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    return np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
                     np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
                     np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)


def rel_rms(a, b) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.sqrt(np.mean((a - b) ** 2) / np.mean(b**2)))


def environment(backend) -> dict:
    import numba

    info = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": backend.device_name, "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__}
    if backend.is_gpu:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        sms, clock_khz = props["multiProcessorCount"], props["clockRate"]
        info.update(cupy=cupy.__version__, cuda_runtime=cupy.cuda.runtime.runtimeGetVersion(),
                    driver=cupy.cuda.runtime.driverGetVersion(), sms=sms, clock_mhz=clock_khz / 1e3,
                    rsqrt_bound_per_s=sms * 16 * clock_khz * 1e3)
    return info


def _timed(backend, fn, repeats=1):
    """Best wall time (s) of ``fn()`` over ``repeats`` calls after one warm-up; returns (seconds, result)."""
    result = fn()
    backend.synchronize()
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        backend.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best, result


def dcs_kernel_rate(backend, positions, charges, lattice, newton: int = 0) -> dict:
    """Kernel-only DCS throughput (atom-lattice evaluations per second), timed with CUDA events."""
    import cupy as cp

    from pycumd.potential_maps.direct import _launch_gpu, atoms_relative, split_hi_lo

    atoms = atoms_relative(positions, charges, lattice.origin)
    hi, lo = (cp.asarray(a) for a in split_hi_lo(atoms))
    nx, ny, nz = lattice.shape
    out = cp.empty((nz, ny, nx), np.float32)
    _launch_gpu(backend, (hi, lo), len(atoms), out, lattice, 0, nz, "single", newton)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(3):
        start.record()
        _launch_gpu(backend, (hi, lo), len(atoms), out, lattice, 0, nz, "single", newton)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    evals = len(atoms) * lattice.n_points
    return {"rsqrt_newton": newton, "atoms": len(atoms), "points": lattice.n_points, "kernel_s": min(times),
            "evals_per_s": evals / min(times)}


def main(argv=None) -> int:
    from pycumd.backend import select
    from pycumd.inputs.molecules import read_pqr
    from pycumd.potential_maps import Lattice, cutoff_sum, direct_sum, lattice_around, msm_sum

    parser = argument_parser("potential-map", "Electrostatic potential maps: direct-sum throughput and accuracy, cutoff "
                             "and multilevel summation against the direct sum, on a solvated protein.")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--json", help="append the results as one JSON object to this file")
    parser.add_argument("--quick", action="store_true", help="small sizes (a CPU smoke run)")
    parser.add_argument("--parts", nargs="*", default=["dcs", "accuracy", "cutoff", "msm", "msm-errors"])
    parser.add_argument("--plot", metavar="JSON", help="only draw the docs figures from a results file")
    parser.add_argument("--plot-dir", default=str(default_out_dir("potential-map")),
                        help="where --plot writes the figures (default: ./bench-potential-map)")
    args = parser.parse_args(argv)
    if args.plot:
        for path in plot(args.plot, args.plot_dir):
            print(f"wrote {path}")
        return 0
    backend = select(args.device)
    results = {"environment": environment(backend)}
    print(json.dumps(results["environment"]), flush=True)
    spacing = 2.0 if args.quick else 0.5
    solute = adk_path(args.quick)
    adk = read_pqr(solute)

    if "dcs" in args.parts and backend.is_gpu:
        positions, charges = solvated_adk(100.0, 1, solute=solute)
        lattice = Lattice((0.0, 0.0, 20.0), (0.5, 0.5, 0.5), (256, 256, 64))
        results["dcs_throughput"] = []
        for newton in (0, 1, 2):
            rate = dcs_kernel_rate(backend, positions, charges, lattice, newton)
            rate["fraction_of_rsqrt_bound"] = rate["evals_per_s"] / results["environment"]["rsqrt_bound_per_s"]
            results["dcs_throughput"].append(rate)
            print("DCS kernel:", json.dumps(rate), flush=True)

    if "accuracy" in args.parts:
        from pycumd.potential_maps import direct

        lattice = lattice_around(adk.positions, spacing, 10.0)
        t64, double = _timed(backend, lambda: direct_sum(adk.positions, adk.charges, lattice, backend=backend,
                                                         precision="double"))
        results["dcs_accuracy_adk"] = []
        for newton in ((0, 1, 2) if backend.is_gpu else (0,)):
            direct.RSQRT_NEWTON = newton
            t32, single = _timed(backend, lambda: direct_sum(adk.positions, adk.charges, lattice, backend=backend))
            row = {"rsqrt_newton": newton, "points": lattice.n_points, "shape": lattice.shape, "spacing": spacing,
                   "rel_rms_single_vs_double": rel_rms(single, double), "single_s": t32, "double_s": t64}
            results["dcs_accuracy_adk"].append(row)
            print("DCS accuracy (adk):", json.dumps(row), flush=True)
        direct.RSQRT_NEWTON = 0

    if "cutoff" in args.parts:
        positions, charges = solvated_adk(40.0 if args.quick else 100.0, 1, solute=solute)
        lattice = lattice_around(positions, spacing, 0.0)
        from pycumd.potential_maps import cutoff as cutoff_module

        t_dcs, dcs = _timed(backend, lambda: direct_sum(positions, charges, lattice, backend=backend))
        results["cutoff_vs_dcs"] = []
        for z_per_thread in ((4, 8) if backend.is_gpu else (8,)):
            cutoff_module.Z_PER_THREAD = z_per_thread
            t_cut, cut = _timed(backend, lambda: cutoff_sum(positions, charges, lattice, 12.0, backend=backend), 3)
            t_dev, _ = _timed(backend, lambda: cutoff_sum(positions, charges, lattice, 12.0, backend=backend,
                                                          to_host=False), 3)
            row = {"z_per_thread": z_per_thread, "atoms": len(positions), "points": lattice.n_points,
                   "shape": lattice.shape, "dcs_s": t_dcs, "cutoff_s": t_cut, "cutoff_on_gpu_s": t_dev,
                   "speedup": t_dcs / t_cut}
            results["cutoff_vs_dcs"].append(row)
            print("cutoff vs DCS:", json.dumps(row), flush=True)
        cutoff_module.Z_PER_THREAD = 4

    if "msm" in args.parts:
        positions, charges = solvated_adk(40.0 if args.quick else 82.5, 2 if args.quick else 3, solute=solute)
        lattice = lattice_around(positions, spacing, 0.0)
        rows = []
        for a, h in ((12.0, 2.5), (12.0, 1.5), (12.0, 1.0), (10.0, 1.0)):
            run = lambda: msm_sum(positions, charges, lattice, a, h, backend=backend, to_host=False)
            seconds, values = _timed(backend, run, 2)
            short_s, _ = _timed(backend, lambda: cutoff_sum(positions, charges, lattice, a, split="msm",
                                                            backend=backend, to_host=False), 1)
            t0 = time.perf_counter()
            host = backend.to_host(values)
            copy_s = time.perf_counter() - t0
            del values
            nz = lattice.shape[2]
            errors = []
            for z in (nz // 4, nz // 2):
                slab = lattice.slab(z, 1)
                ref = direct_sum(positions, charges, slab, backend=backend)
                errors.append((host[z:z + 1], ref))
            err = rel_rms(np.concatenate([e[0] for e in errors]), np.concatenate([e[1] for e in errors]))
            rows.append({"atoms": len(positions), "points": lattice.n_points, "shape": lattice.shape, "cutoff": a,
                         "h": h, "gpu_s": seconds, "short_range_s": short_s, "copy_to_host_s": copy_s, "rel_rms_vs_dcs": err,
                         "dcs_subset_points": 2 * lattice.shape[0] * lattice.shape[1]})
            print("MSM:", json.dumps(rows[-1]), flush=True)
            del host
        results["msm_large"] = rows

    if "msm-errors" in args.parts:
        lattice = lattice_around(adk.positions, spacing, 10.0)
        ref = direct_sum(adk.positions, adk.charges, lattice, backend=backend, precision="double")
        rows = []
        for a in (8.0, 10.0, 12.0):
            for h in (1.5, 2.0, 2.5, 3.0):
                got = msm_sum(adk.positions, adk.charges, lattice, a, h, backend=backend, precision="double")
                rows.append({"cutoff": a, "h": h, "rel_rms_vs_dcs": rel_rms(got, ref),
                             "max_abs_over_max": float(np.abs(got - ref).max() / np.abs(ref).max())})
                print("MSM error (adk):", json.dumps(rows[-1]), flush=True)
        results["msm_errors_adk"] = rows

    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(results, default=lambda o: list(o) if isinstance(o, tuple) else str(o)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def plot(json_path, out_dir) -> list:
    """Figures for docs/potential-maps.md from a bench JSON line: the MSM error against DCS on adk as a
    function of ``h`` for each cutoff, and a map slice of adk (DCS beside the MSM error, computed here)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pycumd.inputs.molecules import read_pqr
    from pycumd.potential_maps import direct_sum, lattice_around, msm_sum, unit_factor

    results = [json.loads(line) for line in Path(json_path).read_text().splitlines() if line.strip()][-1]
    env = results["environment"]
    stamp = (f"{env['device']}, cupy {env.get('cupy', '-')}, CUDA runtime {env.get('cuda_runtime', '-')}, "
             f"numpy {env['numpy']}, numba {env['numba']}, {env['date'][:10]}")
    out = Path(out_dir)
    written = []
    rows = results.get("msm_errors_adk", [])
    if rows:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        for a in sorted({r["cutoff"] for r in rows}):
            sel = [r for r in rows if r["cutoff"] == a]
            ax.loglog([r["h"] for r in sel], [r["rel_rms_vs_dcs"] for r in sel], "o-", label=f"a = {a:g} A")
        ax.axhline(1e-3, color="gray", ls=":", lw=1)
        ax.set(xlabel="finest MSM grid spacing h (A)", ylabel="relative RMS error vs DCS (float64)",
               title="MSM error, adk_open.pqr, 0.5 A map")
        ax.legend()
        fig.text(0.01, 0.01, stamp, fontsize=6)
        fig.tight_layout()
        fig.savefig(out / "potential_map_msm_error.png", dpi=110)
        written.append(out / "potential_map_msm_error.png")
    adk = read_pqr(adk_path())
    lattice = lattice_around(adk.positions, 0.5, 10.0)
    z = lattice.shape[2] // 2
    slab = lattice.slab(z, 1)
    factor = unit_factor("kT/e")
    dcs = direct_sum(adk.positions, adk.charges, slab, precision="double")[0] * factor
    msm = msm_sum(adk.positions, adk.charges, lattice, 12.0, 2.5, precision="double")[z] * factor
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    extent = [lattice.origin[0], lattice.origin[0] + (lattice.shape[0] - 1) * 0.5,
              lattice.origin[1], lattice.origin[1] + (lattice.shape[1] - 1) * 0.5]
    image = axes[0].imshow(dcs.T, origin="lower", extent=extent, cmap="RdBu_r", vmin=-150, vmax=150)
    axes[0].contour(dcs.T, levels=[-100, 100], colors=["red", "blue"], extent=extent, linewidths=0.6)
    near = np.abs(adk.positions[:, 2] - slab.origin[2]) < 1.0
    axes[0].plot(adk.positions[near, 0], adk.positions[near, 1], "k.", ms=1)
    axes[0].set(title=f"adk_open.pqr, DCS, z = {slab.origin[2]:.2f} A (0.5 A map)", xlabel="x (A)", ylabel="y (A)")
    fig.colorbar(image, ax=axes[0], label="potential (kT/e, 300 K), vacuum")
    error = np.abs(msm - dcs) / np.sqrt(np.mean(dcs**2))
    image = axes[1].imshow(np.log10(error.T + 1e-12), origin="lower", extent=extent, cmap="viridis", vmin=-7, vmax=-2)
    axes[1].set(title="MSM (a = 12 A, h = 2.5 A): log10 |MSM - DCS| / RMS(DCS)", xlabel="x (A)")
    fig.colorbar(image, ax=axes[1])
    fig.text(0.01, 0.01, f"slice computed with pycumd's CPU path; bench figures: {stamp}", fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "potential_map_adk_slice.png", dpi=110)
    written.append(out / "potential_map_adk_slice.png")
    return written
