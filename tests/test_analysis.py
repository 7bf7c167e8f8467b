"""Analysis (pycumd.analysis, pycumd.outputs.analysis): g(r), MSD, VACF and S(q) against freud, brute
force and the definitions, on trajectory files in the three formats and as reporters during a run."""

import numpy as np
import pytest

from pycumd import LennardJones, Simulation, VelocityVerlet, create_velocities, lattice_system
from pycumd.analysis import MSD, RDF, VACF, StructureFactor, TrajectoryError, msd, rdf, read_trajectory, \
    structure_factor, vacf
from pycumd.analysis.rdf import pair_distance_histogram
from pycumd.outputs.analysis import MSDReporter, RDFReporter, StructureFactorReporter, VACFReporter
from pycumd.outputs.trajectory import trajectory_writer

freud = pytest.importorskip("freud")
pytest.importorskip("gsd")

EVERY = 10


def _melt(tmp_path, device="cpu", precision="auto", steps=200):
    """A hot LJ liquid of 256 atoms; trajectories in the three formats and the four analysis reporters."""
    system = lattice_system("fcc", 4, density=0.8442)
    create_velocities(system, temperature=3.0, seed=4928)
    lj = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    sim = Simulation(system, lj, VelocityVerlet(dt=0.005), device=device, precision=precision)
    reporters = {"rdf": RDFReporter(tmp_path / "rdf.csv", EVERY, 2.5, 50),
                 "msd": MSDReporter(tmp_path / "msd.csv", EVERY, 8),
                 "vacf": VACFReporter(tmp_path / "vacf.csv", EVERY, 8),
                 "sq": StructureFactorReporter(tmp_path / "sq.csv", EVERY, 8.0, 20, 1.0)}
    sim.reporters.extend(reporters.values())
    sim.reporters.extend(trajectory_writer(tmp_path / f"traj.{ext}", EVERY) for ext in ("gsd", "xyz", "lammpstrj"))
    sim.run(steps)
    sim.close()
    return reporters


@pytest.fixture(scope="module")
def melt(tmp_path_factory):
    path = tmp_path_factory.mktemp("melt")
    return path, _melt(path)


def _csv(path):
    return np.genfromtxt(path, delimiter=",", names=True)


def _freud_box(frame):
    return freud.box.Box(*frame.lengths)


def test_rdf_of_a_trajectory_matches_freud(melt):
    path, _ = melt
    frames = list(read_trajectory(path / "traj.gsd"))
    assert len(frames) == 21
    ours = rdf(path / "traj.gsd", r_max=2.5, bins=50)
    ref = freud.density.RDF(bins=50, r_max=2.5, normalization_mode="finite_size")
    for f in frames:
        ref.compute((_freud_box(f), f.positions - 0.5 * f.lengths), reset=False)
    np.testing.assert_allclose(ours.r, ref.bin_centers, rtol=1e-6)
    assert ours.rdf.max() > 2.0                                 # a first peak, not a flat line
    np.testing.assert_allclose(ours.rdf, ref.rdf, atol=2e-4)    # freud works in float32


def test_the_three_file_formats_give_the_same_analysis(melt):
    path, _ = melt
    g = {ext: rdf(path / f"traj.{ext}", 2.5, 50).rdf for ext in ("gsd", "xyz", "lammpstrj")}
    m = {ext: msd(path / f"traj.{ext}").msd for ext in ("gsd", "xyz", "lammpstrj")}
    np.testing.assert_allclose(g["xyz"], g["lammpstrj"], rtol=0, atol=0)     # both 10 digits
    np.testing.assert_allclose(g["gsd"], g["xyz"], atol=1e-4)                # gsd holds float32
    np.testing.assert_allclose(m["xyz"], m["lammpstrj"], rtol=1e-8)          # continuity == images here
    np.testing.assert_allclose(m["gsd"], m["xyz"], rtol=1e-5)


def test_msd_of_a_trajectory_matches_freud_and_the_definition(melt):
    path, _ = melt
    frames = list(read_trajectory(path / "traj.lammpstrj"))
    unwrapped = np.array([f.unwrapped() for f in frames])
    assert np.abs(np.diff([f.images for f in frames], axis=0)).sum() > 0        # atoms crossed the box
    ours = msd(path / "traj.lammpstrj", dt=EVERY * 0.005)
    ref = freud.msd.MSD(mode="window").compute(unwrapped)
    assert ours.msd[-1] > 0.5
    np.testing.assert_allclose(ours.msd, ref.msd, rtol=2e-3, atol=1e-6)      # freud: float32
    # windowed (lags < 5), every frame an origin: the definition in float64
    short = msd(path / "traj.lammpstrj", window=5)
    T = len(frames)
    direct = [np.mean([((unwrapped[t + k] - unwrapped[t]) ** 2).sum(axis=1).mean() for t in range(T - k)])
              for k in range(5)]
    np.testing.assert_allclose(short.msd, direct, rtol=1e-12)
    np.testing.assert_allclose(ours.times[:3], [0.0, 0.05, 0.1])


def test_vacf_matches_the_definition(melt):
    path, _ = melt
    v = np.array([f.velocities for f in read_trajectory(path / "traj.xyz")])
    ours = vacf(path / "traj.xyz", window=6)
    direct = [np.mean([(v[t] * v[t + k]).sum(axis=1).mean() for t in range(len(v) - k)]) for k in range(6)]
    np.testing.assert_allclose(ours.vacf, direct, rtol=1e-12)
    assert ours.normalized[0] == 1.0 and ours.normalized[5] < 0.9


def test_structure_factor_matches_the_definition_and_a_perfect_crystal(melt, rng):
    path, _ = melt
    frame = list(read_trajectory(path / "traj.lammpstrj"))[-1]
    s = StructureFactor(q_max=7.0, bins=14, q_min=1.0).compute(frame.positions, frame.lengths)
    n_max = np.floor(7.0 * frame.lengths / (2 * np.pi)).astype(int)
    grid = np.stack(np.meshgrid(*[np.arange(-m, m + 1) for m in n_max], indexing="ij"), -1).reshape(-1, 3)
    q = grid * 2 * np.pi / frame.lengths
    norm = np.linalg.norm(q, axis=1)
    keep = (norm >= 1.0) & (norm < 7.0)
    rho = np.exp(1j * frame.positions @ q[keep].T).sum(axis=0)
    which = np.digitize(norm[keep], s.bin_edges) - 1
    per_vector = np.abs(rho) ** 2 / len(frame.positions)
    expected = [per_vector[which == b].mean() if np.any(which == b) else np.nan for b in range(14)]
    np.testing.assert_allclose(s.S, expected, rtol=1e-10)
    np.testing.assert_array_equal(s.n_vectors, np.bincount(which, minlength=14))
    # one fcc cell of edge a: S = N at the 8 vectors (1,1,1) 2 pi / a; (1,0,0), (1,1,0) are extinct
    crystal = lattice_system("fcc", 1, density=0.8442)
    a = crystal.box.lengths[0]
    q111 = 2 * np.pi / a * np.sqrt(3)
    sq = StructureFactor(q_max=q111 * 1.01, bins=1, q_min=q111 * 0.99).compute(crystal.positions, crystal.box.L)
    assert sq.n_vectors[0] == 8
    np.testing.assert_allclose(sq.S[0], crystal.n_atoms, rtol=1e-9)
    below = StructureFactor(q_max=q111 * 0.99, bins=5).compute(crystal.positions, crystal.box.L)
    assert np.nanmax(below.S) < 1e-20


def test_reporters_write_what_the_trajectory_functions_compute(melt):
    path, reporters = melt
    traj = path / "traj.gsd"
    checks = {"rdf": ("g", rdf(traj, 2.5, 50).table()),
              "msd": ("msd", msd(traj, window=8, dt=EVERY * 0.005).table()),
              "vacf": ("vacf", vacf(traj, window=8, dt=EVERY * 0.005).table()),
              "sq": ("S", structure_factor(traj, 8.0, 20, 1.0).table())}
    for name, (column, expected) in checks.items():
        written = _csv(reporters[name].path)
        assert len(written) == len(expected[column]), name
        # the reporters saw float64 state; the file float32 positions (velocities: float32 too)
        np.testing.assert_allclose(written[column], expected[column], rtol=1e-4, atol=1e-5, err_msg=name)
    assert _csv(reporters["msd"].path)["time"][1] == pytest.approx(0.05)


def test_pair_histogram_matches_brute_force_in_small_and_flat_boxes(backend, rng):
    for L, n in (((5.0, 5.0, 5.0), 300), ((4.2, 9.0, 13.0), 400), ((2.1, 2.1, 6.0), 60)):
        L = np.array(L)
        x = rng.uniform(-1.0, 1.0, (n, 3)) * L + L / 2           # some outside the box
        r_max = 0.5 * L.min()
        counts = pair_distance_histogram(backend.asarray(x), L, r_max, 37)
        d = x[:, None] - x[None]
        d -= L * np.rint(d / L)
        r = np.sqrt((d**2).sum(-1))[~np.eye(n, dtype=bool)]
        expected = np.histogram(r[r < r_max], bins=37, range=(0, r_max))[0]
        np.testing.assert_array_equal(counts, expected)


def test_bad_input_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="more than half the box"):
        RDF(3.0, 10).compute(np.zeros((4, 3)), (5.0, 5.0, 5.0))
    with pytest.raises(ValueError, match="not computed yet"):
        MSD(4).msd
    with pytest.raises(ValueError, match="window must be >= 1"):
        VACF(0)
    with pytest.raises(TrajectoryError, match="unknown trajectory format '.pdb'"):
        next(read_trajectory(tmp_path / "x.pdb"))
    bad = tmp_path / "plain.xyz"
    bad.write_text("1\nno lattice here\nAr 0 0 0\n")
    with pytest.raises(TrajectoryError, match="plain.xyz frame 0: no Lattice="):
        next(read_trajectory(bad))
    with pytest.raises(ValueError, match="interval must be > 0"):
        RDFReporter(tmp_path / "r.csv", 0, 2.0)


@pytest.mark.cuda
def test_reporters_on_the_gpu_match_the_cpu(tmp_path):
    from pycumd.backend import cuda_available

    if not cuda_available():
        pytest.skip("no CUDA GPU")
    (tmp_path / "cpu").mkdir()
    (tmp_path / "gpu").mkdir()
    cpu = _melt(tmp_path / "cpu", "cpu", steps=100)
    gpu = _melt(tmp_path / "gpu", "cuda", "double", steps=100)     # reads the device state, no host frame
    for name, column, tol in (("rdf", "g", 1e-9), ("msd", "msd", 1e-9), ("vacf", "vacf", 1e-9), ("sq", "S", 1e-7)):
        np.testing.assert_allclose(_csv(gpu[name].path)[column], _csv(cpu[name].path)[column], rtol=tol,
                                   atol=1e-12, err_msg=name)
