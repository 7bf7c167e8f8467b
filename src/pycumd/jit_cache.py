"""Numba's on-disk cache for the CPU kernels that closures build around a pair function.

Numba caches a module-level ``njit(cache=True)`` function by its file and bytecode.  A kernel
built by a closure (``forces._make_cpu_half_kernel(pair_function)``) is keyed by Numba on the
pickled cells it captures, and a captured ``njit`` function pickles with a per-process id, so
such a kernel would compile again in every process.  :func:`cache_kernel` gives it a cache keyed
by what it captures in stable terms instead:

* the source of every module of the pycumd package (a change to any of them, the kernel
  templates and cutoff wrappers included, is a new key);
* the builder's key (:meth:`PairPotential.kernel_cache_key`): the file and name of the raw pair
  function, its file's contents, and the cutoff treatment.

A pair function with no source file (a formula's generated function) gives no key: its kernels
are compiled at their first call in each process, as before.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import sys
from pathlib import Path


def tolerate_cache_write_errors() -> None:
    """Make a Numba cache file that cannot be written (a full disk, a file-size limit, a read-only
    folder) cost only the caching: the kernel, compiled in memory, runs on, and the error the user
    sees is the one of the run's own outputs.  (Numba lets such an OSError out of the compilation
    outside Windows.)  Applied once, to every cached function of the process."""
    from numba.core.caching import Cache

    if getattr(Cache, "_pycumd_tolerant", False):
        return

    @contextlib.contextmanager
    def guard(self):
        try:
            yield
        except OSError:
            pass                        # not cached: compiled again by the next process

    Cache._guard_against_spurious_io_errors = guard
    Cache._pycumd_tolerant = True


@functools.lru_cache(maxsize=None)
def package_digest() -> str:
    """SHA-256 of the paths and contents of the pycumd package's ``.py`` files."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def source_key(function):
    """A key naming a module-level ``njit`` function across processes, or None.

    ``(module, qualified name, SHA-256 of its file)`` for a function defined at the top level of a
    module with a source file; None for a closure or a function generated from text.
    """
    py_func = getattr(function, "py_func", function)
    qualname = getattr(py_func, "__qualname__", "")
    module = sys.modules.get(getattr(py_func, "__module__", None) or "")
    if "<" in qualname or getattr(py_func, "__closure__", None) or module is None:
        return None
    if getattr(module, qualname, None) is not function:
        return None
    try:
        path = inspect.getsourcefile(py_func)
        contents = Path(path).read_bytes() if path else None
    except (OSError, TypeError):
        return None
    if contents is None:
        return None
    return (module.__name__, qualname, hashlib.sha256(contents).hexdigest())


def cache_kernel(kernel, key):
    """Give ``kernel`` (a closure's ``njit`` dispatcher, not yet compiled) Numba's disk cache under
    ``key`` (a tuple of strings, numbers and bools) and the package's source; return it.

    ``key`` None, or no writable cache folder: the kernel is returned as it is (compiled per process).
    """
    if key is None:
        return kernel
    from numba.core.caching import FunctionCache, IndexDataCacheFile

    digest = hashlib.sha256(repr((package_digest(), kernel.py_func.__qualname__, key)).encode()).hexdigest()

    class KeyedCache(FunctionCache):
        """Numba's function cache with one index file per key (``NAME-LINE-DIGEST.pyXY.nbi``): kernels of
        other pair functions have the same signature, and processes compiling two of them at once
        must not share an index, whose entries name data files by number."""

        def __init__(self, py_func):
            super().__init__(py_func)
            self._cache_file = IndexDataCacheFile(cache_path=self._cache_path,
                                                  filename_base=f"{self._impl.filename_base}-{digest[:16]}",
                                                  source_stamp=self._impl.locator.get_source_stamp())

        def _index_key(self, sig, codegen):
            return (sig, codegen.magic_tuple(), digest)

    try:
        kernel._cache = KeyedCache(kernel.py_func)
    except RuntimeError:                   # no cache locator (no writable folder): compile per process
        pass
    return kernel


# every engine module that compiles with Numba imports this one (forces, potentials): the guard is in
# place before the first cache file is written
tolerate_cache_write_errors()
