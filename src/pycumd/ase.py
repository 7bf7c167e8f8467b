"""pycumd from ASE, the public path: ``from pycumd.ase import Calculator`` (docs/ase.md).

A pycumd :class:`Calculator` for ASE's optimisers and MD, conversions between ``ase.Atoms`` and
:class:`~pycumd.system.System` (:func:`atoms_to_system`, :func:`system_to_atoms`), and :func:`run`
(pycumd's own integrators for N steps on an ``Atoms``).  Units are ASE's (eV, Angstrom, amu).  The
implementation is a front-end beside the other input formats, :mod:`pycumd.inputs.ase`; importing
this module does not import ASE.
"""

from .inputs.ase import Calculator, atoms_to_system, check_cell, run, system_to_atoms

__all__ = ["Calculator", "atoms_to_system", "check_cell", "run", "system_to_atoms"]
