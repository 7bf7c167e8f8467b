"""Analysis of positions and velocities, on the device during a run or on a trajectory file.

* :class:`RDF` / :func:`rdf`: radial distribution function over the engine's cell list
  (:func:`lammps_rdf`: one frame as LAMMPS' ``compute rdf`` array);
* :class:`MSD` / :func:`msd`: mean squared displacement with image counters, multiple time origins
  in a sliding window (:func:`msd_from_reference`: from one fixed reference, LAMMPS' ``compute msd``);
  :class:`VACF` / :func:`vacf`: velocity autocorrelation, the same way;
* :class:`StructureFactor` / :func:`structure_factor`: S(q) on the box's reciprocal lattice;
* :func:`read_trajectory`: GSD, extended XYZ and LAMMPS dump frames.

Each class takes frames from NumPy or CuPy arrays and computes where they are; the reporters that
run them during a simulation are in :mod:`pycumd.outputs.analysis`.
"""

from .correlation import MSD, VACF, msd, msd_from_reference, vacf
from .rdf import RDF, lammps_rdf, rdf
from .structure_factor import StructureFactor, structure_factor
from .trajectory import TrajectoryError, TrajectoryFrame, read_trajectory

__all__ = ["MSD", "VACF", "msd", "msd_from_reference", "vacf", "RDF", "lammps_rdf", "rdf", "StructureFactor",
           "structure_factor", "TrajectoryError", "TrajectoryFrame", "read_trajectory"]
