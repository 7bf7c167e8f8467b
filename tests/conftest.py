"""Shared fixtures: every backend-aware test runs once per available backend.

Tests marked ``ci_only`` (long soak, fuzz and sweep runs) are deselected unless ``PYCUMD_CI=1``
is set, as ``.ci/run`` does: the README's test command stays under 10 minutes on two cores.
"""

import os
import zlib

import numpy as np
import pytest

from pycumd import backend as _backend

HAVE_CUDA = _backend.cuda_available()
#: the full suite (CI): ci_only tests run, fuzz tests take their full number of examples
CI = os.environ.get("PYCUMD_CI") == "1"


def pytest_collection_modifyitems(config, items):
    """Deselect the ``ci_only`` tests outside CI (``PYCUMD_CI=1`` runs them)."""
    if CI:
        return
    deselected = [item for item in items if item.get_closest_marker("ci_only")]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [item for item in items if not item.get_closest_marker("ci_only")]


def _backend_params():
    yield pytest.param("cpu", id="cpu")
    yield pytest.param("cuda", id="cuda", marks=[
        pytest.mark.cuda,
        pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine"),
    ])


@pytest.fixture(params=list(_backend_params()))
def backend(request):
    """The compute backend under test: ``cpu`` always, ``cuda`` where a GPU is visible."""
    return _backend.select(request.param)


@pytest.fixture
def rng(request):
    """A fresh random generator per test, seeded from the test name (repeatable runs)."""
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)
