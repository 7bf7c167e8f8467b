"""Electrostatic potential maps: direct, cutoff and multilevel summation on a 3-D lattice.

>>> from pycumd.potential_maps import potential_map
>>> pmap = potential_map("adk_open.pqr", spacing=0.5, padding=10.0, method="direct")
>>> pmap.values.shape, pmap.origin, pmap.spacing          # (nx, ny, nz), Angstrom, Angstrom
>>> pmap.write("adk.dx")

Units: positions in Angstrom, charges in elementary charges; the map in kT/e at 300 K (default),
volts, or e/Angstrom (``units=``).  Methods (docs/potential-maps.md):

``direct``  every atom at every point (:mod:`.direct`), exact up to rounding;
``cutoff``  atoms within ``cutoff`` only, smoothly shifted to zero there (:mod:`.cutoff`);
``msm``     multilevel summation (:mod:`.msm`): the full Coulomb potential in linear time, also for
            periodic boxes (then the Ewald potential).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pycumd.potential_maps.cutoff import cutoff_sum
from pycumd.potential_maps.direct import PRECISIONS, direct_sum
from pycumd.potential_maps.lattice import (UNITS, Lattice, lattice_around, periodic_lattice, unit_factor,
                                           z_slabs)
from pycumd.potential_maps.msm import msm_sum
from pycumd.system import InputError

__all__ = ["potential_map", "PotentialMap", "check_map_fits", "Lattice", "lattice_around", "periodic_lattice", "direct_sum",
           "cutoff_sum", "msm_sum", "unit_factor", "UNITS", "METHODS", "z_slabs"]

METHODS = ("direct", "cutoff", "msm")


@dataclass
class PotentialMap:
    """A potential map and where it lives.

    Attributes
    ----------
    values_zyx : numpy.ndarray, shape (nz, ny, nx)
        The potential in ``units``, x fastest in memory.
    lattice : Lattice
        Origin, spacing and shape (Angstrom).
    units : str
        ``kT/e`` (300 K), ``V`` or ``e/A``.
    method : str
    periodic : bool
    """

    values_zyx: np.ndarray
    lattice: Lattice
    units: str
    method: str
    periodic: bool = False

    @property
    def values(self) -> np.ndarray:
        """The map indexed ``values[i, j, k]`` for point (i, j, k), shape (nx, ny, nz) (a view)."""
        return self.values_zyx.T

    @property
    def origin(self) -> np.ndarray:
        return np.asarray(self.lattice.origin)

    @property
    def spacing(self) -> np.ndarray:
        return np.asarray(self.lattice.spacing)

    def write(self, path, comment: str = "") -> None:
        """Write ``.dx`` (OpenDX) or ``.npy`` (+ ``.json`` with origin and spacing)."""
        from pycumd.outputs.dx import write_map

        text = f"electrostatic potential in {self.units} ({self.method}{', periodic' if self.periodic else ''}), pycumd"
        write_map(path, self.values_zyx, self.lattice.origin, self.lattice.spacing,
                  f"{text}\n{comment}" if comment else text)


def _molecule(source, **read_options):
    from pycumd.inputs.molecules import Molecule, read_molecule

    if isinstance(source, Molecule):
        return source
    if isinstance(source, (str, Path)):
        return read_molecule(source, **read_options)
    positions, charges = source
    return Molecule(positions, charges)


def check_map_fits(lattice: Lattice, precision: str = "single", memory_bytes: int | None = None) -> None:
    """InputError with the lattice's size and the memory its values need, before anything is
    allocated, when that is more than the machine's memory (``memory_bytes``, default the physical
    memory; not checked where the platform does not say)."""
    points = int(np.prod([int(n) for n in lattice.shape], dtype=object))
    needed = points * (4 if precision == "single" else 8)
    if memory_bytes is None:
        try:
            memory_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            return
    if needed > memory_bytes:
        nx, ny, nz = lattice.shape
        raise InputError(f"a map of {nx} x {ny} x {nz} = {points:.3g} points at spacing "
                         f"{min(lattice.spacing):.4g} A needs at least {_bytes(needed)} for its values "
                         f"({precision} precision); this machine has {_bytes(memory_bytes)}: use a larger "
                         f"--spacing (or a smaller --padding)")


def _bytes(n: int) -> str:
    """``n`` bytes as B, KiB, MiB, ... (1024-based)."""
    size, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if size < 1024 or unit == "EiB":
            break
        size /= 1024
    return f"{size:.3g} {unit}"


def potential_map(source, *, spacing: float = 0.5, padding: float = 10.0, method: str = "direct",
                  cutoff: float = 12.0, msm_spacing: float = 1.0, device="auto", precision: str = "single",
                  units: str = "kT/e", periodic: bool | None = None, lattice: Lattice | None = None,
                  devices=None, **read_options) -> PotentialMap:
    """Compute the electrostatic potential of charged atoms on a lattice.

    Parameters
    ----------
    source : str or Path, Molecule, or (positions (N, 3), charges (N,))
        A .pqr/.pdb/.data/.gsd file, a :class:`~pycumd.inputs.molecules.Molecule`, or arrays
        (Angstrom, elementary charges).
    spacing : float
        Lattice spacing, Angstrom (periodic maps: adjusted to divide the box).
    padding : float
        Margin around the atoms' bounding box, Angstrom (non-periodic maps).
    method : {"direct", "cutoff", "msm"}
    cutoff : float
        Cutoff of ``cutoff`` (where the potential is shifted to zero) and ``msm`` (its short-range
        split), Angstrom.
    msm_spacing : float
        Finest MSM grid spacing, Angstrom.
    device : {"auto", "cpu", "cuda"}
    precision : {"single", "double"}
    units : {"kT/e", "V", "e/A"}
    periodic : bool, optional
        Periodic map over the input's box (default: when the input has a box and the method is
        ``cutoff`` or ``msm``); ``direct`` is non-periodic only.
    lattice : Lattice, optional
        Evaluate on this lattice instead of one built from ``spacing`` and ``padding``.
    devices : sequence of int, optional
        GPUs to split the z slices of a ``direct`` map over.
    **read_options
        Passed to the file reader (``charges_from`` for PDB, ``frame`` for GSD).

    Returns
    -------
    PotentialMap
    """
    if method not in METHODS:
        raise InputError(f"unknown --method {method!r}: choose one of {', '.join(METHODS)}")
    if precision not in PRECISIONS:
        raise InputError(f"unknown --precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    factor = unit_factor(units)
    molecule = _molecule(source, **read_options)
    if periodic is None:
        periodic = molecule.box is not None and method != "direct"
    if periodic and molecule.box is None:
        raise InputError(f"{molecule.source}: a periodic map needs an input with a box (LAMMPS data, GSD)")
    if periodic and method == "direct":
        raise InputError("direct summation is non-periodic: use --method msm for a periodic map")
    box = molecule.box if periodic else None
    if lattice is None:
        lattice = (periodic_lattice(box, spacing, molecule.box_origin) if periodic
                   else lattice_around(molecule.positions, spacing, padding))
    check_map_fits(lattice, precision)
    args = (molecule.positions, molecule.charges, lattice)
    if method == "direct":
        values = direct_sum(*args, backend=device, precision=precision, devices=devices)
    elif method == "cutoff":
        values = cutoff_sum(*args, cutoff, backend=device, precision=precision, periodic_box=box)
    else:
        values = msm_sum(*args, cutoff, msm_spacing, backend=device, precision=precision, periodic_box=box)
    values *= values.dtype.type(factor)
    return PotentialMap(values, lattice, units, method, bool(periodic))
