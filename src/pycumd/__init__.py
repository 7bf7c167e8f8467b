"""pycumd: molecular dynamics on GPUs, in Python.

The public API, flat::

    System, Box, lattice_system, create_velocities      what is simulated
    LennardJones, Yukawa, NuclearPasta                  how particles interact
    VelocityVerlet, Langevin, NoseHoover                how they move
    MTKBarostat, CRescale                               at constant pressure
    Simulation, ThermoReporter, ExtXYZWriter            running and reporting
    RunPlan, Stage, execute, OutputSettings             one run description, one driver (every front-end)
    EngineOptions, NeighborOptions, Reporter
    prefix_sum, counting_sort, cell_index, reorder      the scan library
    select_backend                                      cpu | cuda | auto
"""

from .backend import select as select_backend
from .box import Box
from .components import EngineOptions, NeighborOptions
from .integrators import CRescale, Langevin, MTKBarostat, NoseHoover, VelocityVerlet
from .neighbors.counting_sort import CountingSortResult, cell_index, counting_sort, reorder
from .neighbors.scan import prefix_sum
from .outputs.reporter import Reporter
from .outputs.settings import OutputSettings, TrajectoryOutput
from .outputs.thermo import ThermoReporter
from .outputs.trajectory import ExtXYZWriter, GSDWriter, LammpsDumpWriter, trajectory_writer
from .potentials import LennardJones
from .potentials.pasta import NuclearPasta
from .potentials.yukawa import Yukawa
from .run_plan import RunPlan, RunResult, Stage, execute
from .simulation import Simulation, SimulationError
from .system import InputError, System, create_velocities, lattice_system
from .units import get_units

__version__ = "0.1.0"

__all__ = [
    "Box", "CRescale", "CountingSortResult", "EngineOptions", "NeighborOptions", "OutputSettings", "Reporter", "RunPlan",
    "RunResult", "Stage", "TrajectoryOutput", "execute", "ExtXYZWriter", "GSDWriter", "LammpsDumpWriter", "InputError", "Langevin", "LennardJones", "MTKBarostat", "NoseHoover",
    "NuclearPasta", "Simulation", "SimulationError", "System", "ThermoReporter", "VelocityVerlet", "Yukawa",
    "cell_index", "counting_sort", "create_velocities", "get_units", "lattice_system", "prefix_sum",
    "reorder", "select_backend", "trajectory_writer",
]
