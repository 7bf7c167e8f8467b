"""pycumd: molecular dynamics on GPUs, in Python.

The public API, flat::

    System, Box, lattice_system, create_velocities      what is simulated
    LennardJones, Yukawa, NuclearPasta                  how particles interact
    VelocityVerlet, Langevin, NoseHoover                how they move
    MTKBarostat, CRescale                               at constant pressure
    Simulation, ThermoReporter, ExtXYZWriter            running and reporting
    Ensemble, ReplicaExchange                           many systems at once, parallel tempering
    RunPlan, Stage, execute, OutputSettings             one run description, one driver (every front-end)
    EngineOptions, NeighborOptions, Reporter
    prefix_sum, counting_sort, cell_index, reorder      the scan library
    select_backend                                      cpu | cuda | auto
"""

from importlib import import_module

__version__ = "0.1.0"

#: each public name and the module that defines it, imported at the first use of the name (so that
#: ``pycumd --help`` and ``import pycumd.cli`` load neither Numba nor the engine)
_PUBLIC = {
    "select_backend": (".backend", "select"), "Box": (".box", "Box"),
    "EngineOptions": (".components", "EngineOptions"), "NeighborOptions": (".components", "NeighborOptions"),
    "CRescale": (".integrators", "CRescale"), "Langevin": (".integrators", "Langevin"),
    "MTKBarostat": (".integrators", "MTKBarostat"), "NoseHoover": (".integrators", "NoseHoover"),
    "VelocityVerlet": (".integrators", "VelocityVerlet"),
    "CountingSortResult": (".neighbors.counting_sort", "CountingSortResult"),
    "cell_index": (".neighbors.counting_sort", "cell_index"),
    "counting_sort": (".neighbors.counting_sort", "counting_sort"),
    "reorder": (".neighbors.counting_sort", "reorder"), "prefix_sum": (".neighbors.scan", "prefix_sum"),
    "Reporter": (".outputs.reporter", "Reporter"), "OutputSettings": (".outputs.settings", "OutputSettings"),
    "TrajectoryOutput": (".outputs.settings", "TrajectoryOutput"),
    "ThermoReporter": (".outputs.thermo", "ThermoReporter"),
    "ExtXYZWriter": (".outputs.trajectory", "ExtXYZWriter"), "GSDWriter": (".outputs.trajectory", "GSDWriter"),
    "LammpsDumpWriter": (".outputs.trajectory", "LammpsDumpWriter"),
    "trajectory_writer": (".outputs.trajectory", "trajectory_writer"),
    "LennardJones": (".potentials", "LennardJones"), "NuclearPasta": (".potentials.pasta", "NuclearPasta"),
    "Yukawa": (".potentials.yukawa", "Yukawa"), "RunPlan": (".run_plan", "RunPlan"),
    "RunResult": (".run_plan", "RunResult"), "Stage": (".run_plan", "Stage"), "execute": (".run_plan", "execute"),
    "Simulation": (".simulation", "Simulation"), "Ensemble": (".ensemble", "Ensemble"),
    "ReplicaExchange": (".tempering", "ReplicaExchange"), "SimulationError": (".simulation", "SimulationError"),
    "InputError": (".system", "InputError"), "System": (".system", "System"),
    "create_velocities": (".system", "create_velocities"), "lattice_system": (".system", "lattice_system"),
    "get_units": (".units", "get_units"),
}


def __getattr__(name):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'pycumd' has no attribute {name!r}")
    module, attribute = _PUBLIC[name]
    value = getattr(import_module(module, __name__), attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))


__all__ = [
    "Box", "CRescale", "CountingSortResult", "EngineOptions", "NeighborOptions", "OutputSettings", "Reporter", "RunPlan",
    "RunResult", "Stage", "TrajectoryOutput", "execute", "ExtXYZWriter", "GSDWriter", "LammpsDumpWriter", "InputError", "Langevin", "LennardJones", "MTKBarostat", "NoseHoover",
    "NuclearPasta", "Simulation", "SimulationError", "System", "ThermoReporter", "VelocityVerlet", "Yukawa",
    "cell_index", "counting_sort", "create_velocities", "get_units", "lattice_system", "prefix_sum",
    "reorder", "select_backend", "trajectory_writer",
]
