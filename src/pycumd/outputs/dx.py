"""OpenDX (``.dx``) and ``.npy`` output of a scalar field on a rectilinear lattice.

The ``.dx`` layout is the one APBS writes and VMD, PyMOL and GridDataFormats read: a
``gridpositions`` object (counts, origin, three ``delta`` rows), a ``gridconnections`` object and a
``double`` array with z varying fastest, three values per line.  The file is written one x-slab at
a time, so a map is never held twice (a GPU array is copied to the host slab by slab).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["write_dx", "write_npy", "write_map"]


def _host(array):
    return array.get() if hasattr(array, "get") else np.asarray(array)


def write_dx(path, values_zyx, origin, spacing, comment: str = "") -> None:
    """Write an OpenDX file.

    Parameters
    ----------
    path : str or Path
    values_zyx : array (NumPy or CuPy), shape (nz, ny, nx)
        The field, x fastest in memory (point (i, j, k) is ``values_zyx[k, j, i]``).
    origin : sequence of 3 floats
        Position of point (0, 0, 0), Angstrom.
    spacing : sequence of 3 floats
        Point spacing along x, y, z, Angstrom.
    comment : str
        Written as ``#`` lines at the top (e.g. units, program, date).
    """
    nz, ny, nx = values_zyx.shape
    with open(path, "w") as f:
        for line in comment.splitlines():
            f.write(f"# {line}\n")
        f.write(f"object 1 class gridpositions counts {nx} {ny} {nz}\n")
        f.write("origin {:.8e} {:.8e} {:.8e}\n".format(*origin))
        f.write(f"delta {spacing[0]:.8e} 0.000000e+00 0.000000e+00\n")
        f.write(f"delta 0.000000e+00 {spacing[1]:.8e} 0.000000e+00\n")
        f.write(f"delta 0.000000e+00 0.000000e+00 {spacing[2]:.8e}\n")
        f.write(f"object 2 class gridconnections counts {nx} {ny} {nz}\n")
        f.write(f"object 3 class array type double rank 0 items {nx * ny * nz} data follows\n")
        carry = np.empty(0)
        for i in range(nx):
            slab = np.concatenate([carry, _host(values_zyx[:, :, i]).T.reshape(-1).astype(np.float64)])
            full = len(slab) // 3 * 3
            if full:
                np.savetxt(f, slab[:full].reshape(-1, 3), fmt="%.7e")
            carry = slab[full:]
        if len(carry):
            f.write(" ".join(f"{v:.7e}" for v in carry) + "\n")
        f.write('attribute "dep" string "positions"\n')
        f.write('object "regular positions regular connections" class field\n')
        f.write('component "positions" value 1\ncomponent "connections" value 2\ncomponent "data" value 3\n')


def write_npy(path, values_zyx) -> None:
    """Write the field as ``.npy`` with shape (nx, ny, nz) (``a[i, j, k]`` is point (i, j, k)),
    stored in Fortran order so that no transposed copy is made."""
    np.save(path, _host(values_zyx).T)


def write_map(path, values_zyx, origin, spacing, comment: str = "") -> None:
    """Write by suffix: ``.dx`` (OpenDX) or ``.npy`` (with a ``.json`` beside it for origin and spacing)."""
    path = Path(path)
    if path.suffix == ".dx":
        write_dx(path, values_zyx, origin, spacing, comment)
    elif path.suffix == ".npy":
        import json

        write_npy(path, values_zyx)
        path.with_suffix(".json").write_text(json.dumps(
            {"origin": list(map(float, origin)), "spacing": list(map(float, spacing)),
             "shape": [int(v) for v in values_zyx.shape[::-1]], "comment": comment}, indent=1) + "\n")
    else:
        from pycumd.system import InputError

        raise InputError(f"{path}: unknown map format {path.suffix!r} (use .dx or .npy)")
