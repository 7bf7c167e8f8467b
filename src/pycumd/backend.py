"""Compute backends: chosen once, they hand out the array module and the CUDA kernels.

Two backends exist:

``cpu``
    NumPy arrays, Numba-compiled loops (``njit``/``prange``).  Always available; the
    reference every GPU result is tested against.
``cuda``
    CuPy arrays, CUDA C kernels compiled at run time by NVRTC through ``cupy.RawModule``
    (cached on disk by CuPy).  Kernel sources are ``.cu`` files inside the package, next
    to the Python module that launches them.

``select("auto")`` takes ``cuda`` when CuPy imports and sees a device, else ``cpu``.
Components pick their implementation once, at construction, from ``backend.name``;
nothing else in the code base asks which device it runs on.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

PACKAGE_DIR = Path(__file__).resolve().parent
BACKEND_NAMES = ("auto", "cpu", "cuda")


class BackendUnavailableError(RuntimeError):
    """The requested backend cannot run on this machine."""


@dataclass(frozen=True)
class Backend:
    """A compute backend.

    Attributes
    ----------
    name : {"cpu", "cuda"}
        Which backend this is.
    xp : module
        The array module: ``numpy`` or ``cupy``.
    device_name : str
        Human-readable device description (CPU model or GPU name).
    fast_float64 : bool
        GPU: float64 arithmetic runs at >= 1/4 of the float32 rate (A100, H100; consumer GPUs run
        it at 1/32-1/64).  Mixed precision's force kernel then sums in float64.
    """

    name: str
    xp: Any
    device_name: str
    fast_float64: bool = False
    _module_cache: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_gpu(self) -> bool:
        return self.name == "cuda"

    def asarray(self, array, dtype=None):
        """Copy/convert a host array to this backend's memory."""
        return self.xp.asarray(array, dtype=dtype)

    def to_host(self, array) -> np.ndarray:
        """Return a NumPy copy (or view, on the CPU backend) of a backend array."""
        if self.is_gpu:
            return array.get()
        return np.asarray(array)

    def synchronize(self) -> None:
        if self.is_gpu:
            self.xp.cuda.get_current_stream().synchronize()

    def kernel_module(self, source: str, defines: dict | None = None, options: tuple = ()):
        """Compile (or fetch from cache) a CUDA source file of the package.

        Parameters
        ----------
        source : str
            Path of the ``.cu`` file relative to the package directory,
            e.g. ``"neighbors/scan.cu"``.
        defines : dict, optional
            Compile-time constants, passed as ``-D NAME=VALUE``.
        options : tuple of str
            Extra NVRTC options.

        Returns
        -------
        cupy.RawModule
        """
        if not self.is_gpu:
            raise BackendUnavailableError("CUDA kernels requested on the cpu backend")
        key = (source, tuple(sorted((defines or {}).items())), tuple(options))
        module = self._module_cache.get(key)
        if module is None:
            path = PACKAGE_DIR / source
            code = path.read_text()
            opts = ("--std=c++17", f"-I{path.parent}", f"-I{PACKAGE_DIR}")
            opts += tuple(f"-D{k}={v}" for k, v in (defines or {}).items()) + tuple(options)
            module = self.xp.RawModule(code=code, options=opts)
            self._module_cache[key] = module
        return module


#: the largest float32 / float64 throughput ratio at which a GPU counts as fast in float64
FLOAT64_FAST_RATIO = 4


def cuda_available() -> bool:
    """True when CuPy imports and at least one CUDA device is visible."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@functools.lru_cache(maxsize=None)
def _make_backend(name: str) -> Backend:
    if name == "cpu":
        import platform

        return Backend("cpu", np, platform.processor() or platform.machine())
    if name == "cuda":
        if not cuda_available():
            raise BackendUnavailableError(
                "device 'cuda' requested but no CUDA GPU is usable: install pycumd[cuda12] or "
                "pycumd[cuda13] on a machine with an NVIDIA GPU, or use --device cpu"
            )
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        gpu = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        ratio = props.get("singleToDoublePrecisionPerfRatio", FLOAT64_FAST_RATIO + 1)
        return Backend("cuda", cupy, gpu, fast_float64=ratio <= FLOAT64_FAST_RATIO)
    raise ValueError(f"unknown device {name!r}: choose one of {', '.join(BACKEND_NAMES)}")


def select(name: str | Backend | None = "auto") -> Backend:
    """Return the backend called ``name`` (``auto``, ``cpu`` or ``cuda``).

    ``auto`` (also ``None``) takes the GPU when CuPy sees one, else the CPU.  The
    environment variable ``PYCUMD_DEVICE`` overrides ``auto``.
    """
    if isinstance(name, Backend):
        return name
    if name is None or name == "auto":
        name = os.environ.get("PYCUMD_DEVICE", "auto")
        if name == "auto":
            name = "cuda" if cuda_available() else "cpu"
    return _make_backend(name)


def array_backend(array) -> Backend:
    """The backend whose memory holds ``array`` (NumPy -> cpu, CuPy -> cuda)."""
    if isinstance(array, np.ndarray):
        return select("cpu")
    module = type(array).__module__
    if module.startswith("cupy"):
        return select("cuda")
    raise TypeError(f"expected a numpy or cupy array, got {type(array).__name__}")
