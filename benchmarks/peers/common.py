"""What the peer drivers share: the in.lj system (fcc lattice, velocities) built the same way, and
running one measurement in a child process."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

DENSITY = 0.8442
TEMPERATURE = 1.44
CUTOFF = 2.5
DT = 0.005
WARMUP = 300           # warm-up steps before the timing, as `pycumd bench lj`
FCC_BASIS = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])


def fcc_lattice(cells: int, density: float = DENSITY):
    """Sites (i + b) * a of an fcc lattice of cells^3 unit cells; returns (positions (N,3), box length)."""
    a = (4.0 / density) ** (1.0 / 3.0)
    g = np.arange(cells, dtype=np.float64)
    ijk = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 1, 3)
    pos = ((ijk + FCC_BASIS[None, :, :]) * a).reshape(-1, 3)
    return pos, cells * a


def random_velocities(n: int, temperature: float = TEMPERATURE, seed: int = 87287):
    """Gaussian velocities (mass 1), zero total momentum, scaled to T exactly with 3N-3 dof."""
    rng = np.random.default_rng(seed)
    v = rng.normal(0.0, np.sqrt(temperature), size=(n, 3))
    v -= v.mean(axis=0)
    t_now = (v * v).sum() / (3 * n - 3)
    return v * np.sqrt(temperature / t_now)


def error_line(text: str) -> str:
    """The line of a child's output that names the exception (ANSI colours removed), else its last line."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", s).strip() for s in text.splitlines()]
    lines = [s for s in lines if s.strip("^~ ")]
    for s in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit)\b", s) or "CUDA_ERROR" in s:
            return s
    return lines[-1] if lines else ""


def run_child(script: str, child_args: list, timeout: float) -> tuple:
    """Run ``script --_child --_result FILE *child_args`` in a fresh Python process.

    The child writes its record as JSON to FILE.  Its output is echoed (the last 25 lines when it
    fails).  Returns ``(record or None, error or None, output)``: a failure, a timeout or a missing
    result gives no record and a one-line error.
    """
    fd, result = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(script), "--_child", "--_result", result, *child_args]
    err, out, rec = None, "", None
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        out = p.stdout
        if p.returncode == 0:
            sys.stdout.write(p.stdout)
        else:
            sys.stdout.write("\n".join(p.stdout.splitlines()[-25:]) + "\n")
            err = f"exit {p.returncode}: {error_line(p.stdout)}"
    except subprocess.TimeoutExpired:
        err = f"timed out after {timeout} s"
    if err is None:
        try:
            with open(result) as f:
                rec = json.loads(f.read())
        except (OSError, ValueError) as e:
            err = f"no result: {e}"
    os.unlink(result)
    return rec, err, out


def add_run_arguments(ap) -> None:
    """The arguments both peer drivers take: sizes, timed and warm-up steps, the time allowed for
    each run (one size, one precision, in a child process), the JSON output, and the child's own."""
    ap.add_argument("--cells", type=int, nargs="+", default=[20, 63], help="fcc cells per edge (N = 4 cells^3)")
    ap.add_argument("--steps", type=int, default=500, help="timed steps")
    ap.add_argument("--warmup", type=int, default=WARMUP, help=f"warm-up steps (default {WARMUP}, as pycumd bench lj)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed for each run")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)


def gpu_name() -> str | None:
    """The first GPU's name from nvidia-smi, or None where there is none (the peers' records' device)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        names = [s.strip() for s in out.stdout.splitlines() if s.strip()]
        return names[0] if out.returncode == 0 and names else None
    except (OSError, subprocess.SubprocessError):
        return None


def _refuse(reasons, text: str) -> None:
    """Print why nothing is measured; append it to ``reasons`` (a list) where one is given."""
    print(text)
    if reasons is not None:
        reasons.append(text)


def openmm_with_platform(script: str, platform: str, reasons: list | None = None):
    """The ``openmm`` module if it imports and has ``platform`` (else None, having printed why, and
    appended it to ``reasons`` if given: the peer scripts then measure nothing and exit 0)."""
    try:
        import openmm
    except ImportError as e:
        _refuse(reasons, f"{script}: OpenMM is not installed ({e}); nothing measured.")
        return None
    names = [openmm.Platform.getPlatform(i).getName() for i in range(openmm.Platform.getNumPlatforms())]
    if platform not in names:
        _refuse(reasons, f"{script}: OpenMM {openmm.__version__} has no {platform} platform (it has {names}); "
                         f"load errors: {openmm.Platform.getPluginLoadFailures()}; nothing measured.")
        return None
    return openmm


def package_versions(*names: str) -> dict:
    """Installed versions of the named distributions (those installed)."""
    from importlib import metadata

    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def pycumd_value(path, n: int, precision: str, key: str):
    """``record[key]`` of the last pycumd record (``"engine": "pycumd"``) of ``n`` atoms in ``precision``
    that has it, in a JSON-lines file (a peer matching pycumd's run: its force error, its start
    energy), or None (no file, no such record)."""
    if not path:
        return None
    found = None
    try:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("engine") == "pycumd" and r.get("N") == n and r.get("precision") == precision \
                        and r.get(key) is not None:
                    found = r[key]
    except OSError:
        return None
    return found


def write_record(path, record: dict, mode: str = "a") -> None:
    """One JSON line: appended to ``--json`` (mode "a"), or a child's result file (mode "w")."""
    if path:
        with open(path, mode) as f:
            f.write(json.dumps(record) + "\n")


def jax_device(script: str, allow_cpu: bool, reasons: list | None = None):
    """``(device kind, JAX-MD version)`` of the device the JAX-MD children will run on, or None (after
    printing why, and appending it to ``reasons`` if given) when JAX or JAX-MD cannot start or JAX sees
    no GPU (unless ``allow_cpu``).  The parent
    only looks: it keeps JAX from taking 75% of the GPU's memory (the variable is read when the backend
    starts, and removed again so that the children run with JAX's defaults)."""
    had = "XLA_PYTHON_CLIENT_PREALLOCATE" in os.environ
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax_md
        devs = jax.devices()
    except Exception as e:                 # ImportError, or a JAX backend failing to start
        _refuse(reasons, f"{script}: jax / jax_md cannot be imported or started ({type(e).__name__}: {e}); "
                         f"nothing measured.")
        return None
    finally:
        if not had:
            os.environ.pop("XLA_PYTHON_CLIENT_PREALLOCATE", None)
    gpu = [d for d in devs if d.platform == "gpu"]
    if not gpu and not allow_cpu:
        _refuse(reasons, f"{script}: JAX sees no GPU (devices {devs}); nothing measured.")
        return None
    dev = (gpu or devs)[0]
    return getattr(dev, "device_kind", str(dev)), getattr(jax_md, "__version__", None)
