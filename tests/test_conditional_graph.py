"""The driver-API layer for CUDA graphs with conditional nodes (pycumd.conditional_graph)."""

import ctypes

import pytest

from pycumd import conditional_graph
from pycumd.conditional_graph import ConditionalGraphUnavailable, GraphChain

from conftest import HAVE_CUDA


def test_node_parameters_have_the_driver_layout():
    """CUgraphNodeParams is 256 bytes with the conditional parameters at byte 16 (cuda.h, CUDA 13)."""
    assert ctypes.sizeof(conditional_graph._NodeParams) == 256
    assert conditional_graph._NodeParams.conditional.offset == 16
    params = conditional_graph._ConditionalParams
    assert (params.handle.offset, params.type.offset, params.size.offset,
            params.graphs_out.offset, params.context.offset) == (0, 8, 12, 16, 24)


@pytest.mark.skipif(HAVE_CUDA, reason="a CUDA driver is present")
def test_without_a_driver_the_error_says_so(monkeypatch):
    monkeypatch.setattr(conditional_graph._Driver, "_instance", None)
    with pytest.raises(ConditionalGraphUnavailable, match="CUDA driver"):
        GraphChain.create()
