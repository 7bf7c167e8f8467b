"""Shared fixtures: every backend-aware test runs once per available backend."""

import zlib

import numpy as np
import pytest

from pycumd import backend as _backend

HAVE_CUDA = _backend.cuda_available()


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
