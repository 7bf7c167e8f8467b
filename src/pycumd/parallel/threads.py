"""CPU threads per rank: Numba's pool sized so that the ranks on a node share its cores.

Numba starts as many threads as the machine has cores, in every process; P ranks on one node then
run P x cores threads on the cores and the throughput collapses.  :func:`configure_cpu_threads`
picks, in this order:

1. the thread count asked for (``pycumd run --threads N``, ``EngineOptions.threads``);
2. ``NUMBA_NUM_THREADS`` if it is set in the environment (Numba's own setting, left as it is);
3. over MPI ranks: the usable cores divided by the ranks on this node (at least 1);
4. one process: Numba's setting as it is (every core by default).

The ranks on this node come from ``PYCUMD_LOCAL_SIZE`` or the launcher (``OMPI_COMM_WORLD_LOCAL_SIZE``
of Open MPI, ``MPI_LOCALNRANKS`` of MPICH's Hydra), or else from
``MPI.Comm.Split_type(COMM_TYPE_SHARED)``.
"""

from __future__ import annotations

import os

#: environment variables that launchers set to the number of ranks on the node (Open MPI, MPICH/Hydra)
LOCAL_SIZE_VARIABLES = ("PYCUMD_LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")


def ranks_on_this_node(comm) -> int:
    """The number of ranks of ``comm`` (a Communicator or an mpi4py communicator) on this node.

    A collective call when no launcher variable gives it (every rank of ``comm`` calls it).
    """
    for name in LOCAL_SIZE_VARIABLES:
        value = os.environ.get(name)
        if value and value.isdigit() and int(value) > 0:
            return int(value)
    from mpi4py import MPI

    comm = getattr(comm, "comm", comm)
    return comm.Split_type(MPI.COMM_TYPE_SHARED).Get_size()


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the system reports one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def configure_cpu_threads(comm=None, requested: int | None = None) -> str:
    """Set Numba's thread count for this process (rules in the module docstring); return the run
    header's words for it, e.g. ``"2 threads (4 cores / 2 ranks on this node)"``.

    Raises ValueError for a ``requested`` count outside 1 ... Numba's pool size.
    """
    import numba

    pool = numba.config.NUMBA_NUM_THREADS
    if requested is not None:
        if not 1 <= requested <= pool:
            raise ValueError(f"--threads {requested}: Numba's pool on this machine has 1 to {pool} threads "
                             f"(set NUMBA_NUM_THREADS to allow more)")
        numba.set_num_threads(requested)
        return f"{_threads(requested)} (as asked)"
    if os.environ.get("NUMBA_NUM_THREADS"):
        return f"{_threads(numba.get_num_threads())} (NUMBA_NUM_THREADS)"
    if comm is None:
        return _threads(numba.get_num_threads())
    cores, ranks = usable_cores(), ranks_on_this_node(comm)
    threads = max(1, min(pool, cores // ranks))
    numba.set_num_threads(threads)
    return f"{_threads(threads)} ({cores} cores / {ranks} ranks on this node)"


def _threads(n: int) -> str:
    return f"{n} thread" if n == 1 else f"{n} threads"
