"""CPU threads per process: over MPI ranks the cores are shared among the ranks on the node, and an
explicit count or NUMBA_NUM_THREADS wins (pycumd.parallel.threads)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import pytest

from pycumd.parallel import threads
from pycumd.parallel.threads import configure_cpu_threads, usable_cores

SRC = str(Path(threads.__file__).resolve().parents[2])


@pytest.fixture
def numba_threads():
    """Numba's thread count restored after the test."""
    before = numba.get_num_threads()
    yield before
    numba.set_num_threads(before)


class FakeComm:
    """A communicator whose node holds ``ranks`` ranks (the launcher variables are unset in the test)."""

    def __init__(self, ranks):
        self.ranks = ranks

    def Split_type(self, kind):
        return self

    def Get_size(self):
        return self.ranks


@pytest.fixture
def no_launcher(monkeypatch):
    for name in ("NUMBA_NUM_THREADS", *threads.LOCAL_SIZE_VARIABLES):
        monkeypatch.delenv(name, raising=False)


def test_ranks_share_the_cores_of_their_node(numba_threads, no_launcher, monkeypatch):
    pool = numba.config.NUMBA_NUM_THREADS
    ranks = max(1, usable_cores() // 2)
    words = configure_cpu_threads(FakeComm(ranks))
    expected = max(1, min(pool, usable_cores() // ranks))
    assert numba.get_num_threads() == expected
    assert words.startswith(f"{expected} thread") and f"{usable_cores()} cores / {ranks} ranks on this node" in words
    # more ranks than cores: one thread each; the launcher's variable is read before any MPI call
    monkeypatch.setenv("MPI_LOCALNRANKS", str(4 * usable_cores()))
    assert configure_cpu_threads(FakeComm(1)).startswith("1 thread (")
    assert numba.get_num_threads() == 1


def test_an_explicit_count_or_numba_num_threads_wins(numba_threads, no_launcher, monkeypatch):
    assert configure_cpu_threads(FakeComm(1), requested=1) == "1 thread (as asked)"
    assert numba.get_num_threads() == 1
    with pytest.raises(ValueError, match=r"--threads 100000: Numba's pool on this machine has 1 to \d+ threads"):
        configure_cpu_threads(None, requested=100000)
    monkeypatch.setenv("NUMBA_NUM_THREADS", str(numba.config.NUMBA_NUM_THREADS))
    assert configure_cpu_threads(FakeComm(64)) == "1 thread (NUMBA_NUM_THREADS)"   # left as it was
    assert numba.get_num_threads() == 1


def test_one_process_keeps_numbas_setting(numba_threads, no_launcher):
    numba.set_num_threads(1)
    assert configure_cpu_threads(None) == "1 thread"
    assert numba.get_num_threads() == 1


@pytest.mark.skipif(shutil.which("mpiexec") is None, reason="needs mpiexec and mpi4py (pip install 'pycumd[mpi]')")
def test_mpi_ranks_on_one_node_divide_its_cores():
    """Two ranks under mpiexec: the node's ranks from the launcher and from COMM_TYPE_SHARED agree."""
    pytest.importorskip("mpi4py")
    code = ("import json, os, numba\n"
            "from mpi4py import MPI\n"
            "from pycumd.parallel.threads import configure_cpu_threads, usable_cores\n"
            "launcher = configure_cpu_threads(MPI.COMM_WORLD)\n"
            "for name in ('OMPI_COMM_WORLD_LOCAL_SIZE', 'MPI_LOCALNRANKS'):\n"
            "    os.environ.pop(name, None)\n"
            "shared = configure_cpu_threads(MPI.COMM_WORLD)\n"
            "ranks = MPI.COMM_WORLD.gather([launcher, shared, numba.get_num_threads(), usable_cores()])\n"
            "if MPI.COMM_WORLD.Get_rank() == 0:\n"
            "    print('RESULT', json.dumps(ranks), flush=True)\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    env["PYTHONPATH"] = os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run(["mpiexec", "-n", "2", sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(line for line in proc.stdout.splitlines() if "RESULT " in line)
    ranks = json.loads(line.split("RESULT ", 1)[1])
    assert len(ranks) == 2
    for launcher, shared, n, cores in ranks:
        assert n == max(1, cores // 2)
        assert launcher == shared == f"{n} thread{'' if n == 1 else 's'} ({cores} cores / 2 ranks on this node)"
