"""The simulation state: a plain dataclass of backend arrays (NumPy or CuPy)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .composite import ff_from_double_array
from .precision import Precision
from .system import System


@dataclass
class State:
    """Arrays the kernels read and write, on one backend: the physics a checkpoint writes (engine
    scratch, such as the step-control array of the CUDA-graph steps, belongs to the parts that use it).

    Attributes
    ----------
    positions : array
        CPU: (N, 3) float64.  GPU: (N, 4) ``real_t`` rows ``x, y, z, type`` (one 16- or 32-byte
        load per atom in the kernels).  Relative to the box origin; wrapped into the box at
        every neighbour-list build, so in between they may stray outside by up to skin/2.
    velocities : array, (N, 3) ``real_t``
    forces : array, (N, 3) ``accum_t``
    per_atom_mass : array, (N,) ``real_t``
    types : array, (N,) int32
    images : array, (N, 3) int32
    ids : array, (N,) int64
    positions_at_build : array, like positions: snapshot at the last neighbour build (float32 in
        mixed precision on the GPU: :meth:`pycumd.precision.Precision.at_build_dtype`)
    energy : array, (N,) ``accum_t``: per-atom potential energy of the last reporting step
    virial : array, (N, 6) ``accum_t``: per-atom virial xx, yy, zz, xy, xz, yz
    box_lengths : tuple of 3 floats
    step : int
    lo : dict or None
        Composite precision only: the float32 low parts of ``positions`` ((N, 4), the type
        column 0), ``velocities``, ``per_atom_mass``, ``forces``, ``energy`` and ``virial``,
        each the same shape as its high part; a value is ``hi + lo`` (see :meth:`values`).
    mass_of_type : array or None
        GPU, not composite: (n_types,) ``real_t``, the mass of each type (``System.masses``: masses
        are per type, as LAMMPS' ``mass``), of which ``per_atom_mass`` is ``mass_of_type[types]``.
        The fused half-step kernel reads an atom's mass by the type in its position row's w (4 or 8
        bytes per atom per step fewer than ``per_atom_mass``; the same values, the same bits).
    charges : array, (N,) float64, or None
        Per-atom charges (charge units; ``System.charges``), moving with their particles; None for a
        system without them.
    """

    positions: object
    velocities: object
    forces: object
    per_atom_mass: object
    types: object
    images: object
    ids: object
    positions_at_build: object
    energy: object
    virial: object
    box_lengths: tuple
    step: int = 0
    lo: dict | None = None
    mass_of_type: object = None
    charges: object = None

    def per_atom_arrays(self) -> tuple:
        """The arrays that move with a particle when particles are reordered."""
        arrays = (self.positions, self.velocities, self.per_atom_mass, self.types, self.images, self.ids)
        if self.charges is not None:
            arrays += (self.charges,)
        if self.lo is not None:
            arrays += tuple(self.lo[name] for name in ("positions", "velocities", "per_atom_mass"))
        return arrays

    def spare_at_build(self) -> tuple:
        """Arrays whose values are dead while the neighbour list is rebuilt, so that the build may
        use their memory as scratch (see :func:`~pycumd.neighbors.counting_sort.reorder_in_place`).

        ``positions_at_build`` is taken again at the end of the build; ``forces``, ``energy`` and
        ``virial`` (and their composite low parts) are computed again after it (with reordering,
        their old values would belong to other particles anyway).  After a build they are
        undefined until the next force computation.
        """
        arrays = (self.positions_at_build, self.forces, self.energy, self.virial)
        if self.lo is not None:
            arrays += tuple(self.lo[name] for name in ("forces", "energy", "virial"))
        return arrays

    def memory_by_array(self) -> dict:
        """Bytes held by each array of the state, by name (composite low parts as ``lo.<name>``)."""
        out = {}
        for name in ("positions", "velocities", "forces", "per_atom_mass", "types", "images", "ids",
                     "positions_at_build", "energy", "virial", "mass_of_type", "charges"):
            array = getattr(self, name)
            if array is not None:
                out[name] = int(array.nbytes)
        for name, array in (self.lo or {}).items():
            out[f"lo.{name}"] = int(array.nbytes)
        return out

    def values(self, name: str, backend):
        """The array ``name`` as numbers: the backend array itself, or in composite precision
        the host float64 array ``hi + lo`` (so that no float64 arithmetic runs on the GPU)."""
        hi = getattr(self, name)
        if self.lo is None:
            return hi
        return backend.to_host(hi).astype(np.float64) + backend.to_host(self.lo[name]).astype(np.float64)

    @property
    def n_atoms(self) -> int:
        return len(self.types)

    @classmethod
    def from_system(cls, system: System, backend, precision: Precision) -> "State":
        xp = backend.xp
        n = system.n_atoms
        real, accum = precision.state_dtype, precision.accum_dtype
        if backend.is_gpu:
            host = np.empty((n, 4), dtype=np.float64)
            host[:, :3] = system.positions
            host[:, 3] = system.types
            positions = xp.asarray(host.astype(real))
        else:
            positions = system.positions.astype(real, copy=True)
        lo = None
        if precision.composite:
            if not backend.is_gpu:
                raise ValueError("composite precision runs on the GPU only")
            lo = {"positions": host, "velocities": system.velocities,
                  "per_atom_mass": system.per_atom_mass}
            lo = {k: xp.asarray(ff_from_double_array(v)[..., 1]) for k, v in lo.items()}
            lo.update(forces=xp.zeros((n, 3), np.float32), energy=xp.zeros(n, np.float32),
                      virial=xp.zeros((n, 6), np.float32))
        return cls(
            positions=positions,
            # copies (xp.array), never views of the System: the state is reordered in place at
            # every neighbour build, and the caller's System must not be reordered with it
            velocities=xp.array(system.velocities, dtype=real),
            forces=xp.zeros((n, 3), dtype=accum),
            per_atom_mass=xp.array(system.per_atom_mass, dtype=real),
            types=xp.array(system.types, dtype=np.int32),
            images=xp.array(system.images, dtype=np.int32),
            ids=xp.array(system.ids, dtype=np.int64),
            positions_at_build=positions.astype(precision.at_build_dtype(backend.is_gpu)),
            energy=xp.zeros(n, dtype=accum),
            virial=xp.zeros((n, 6), dtype=accum),
            box_lengths=tuple(system.box.lengths),
            lo=lo,
            mass_of_type=(xp.asarray(np.asarray(system.masses, dtype=real))
                          if backend.is_gpu and not precision.composite else None),
            charges=None if system.charges is None else xp.array(system.charges, dtype=np.float64),
        )

    def host_values(self, name: str, backend) -> np.ndarray:
        """The array ``name`` on the host as float64 (``hi + lo`` in composite precision)."""
        if self.lo is not None:
            return self.values(name, backend)
        return backend.to_host(getattr(self, name)).astype(np.float64)

    def host_positions(self, backend) -> np.ndarray:
        """Positions on the host, (N, 3) float64."""
        return self.host_values("positions", backend)[:, :3]
