"""The driver-API layer for CUDA graphs with conditional nodes (pycumd.conditional_graph)."""

import ctypes
import re
from pathlib import Path

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


def test_control_array_indices_agree_with_the_kernels():
    """step_graph.py reads the control array at the indices the kernels write it (control_layout.cuh); the ring of
    build counts ends before the arrival count and inside the state's 32 entries."""
    from pycumd import step_graph
    from pycumd.neighbors.verlet import CAPACITY_WINDOW

    header = (Path(step_graph.__file__).parent / "control_layout.cuh").read_text()
    device = {name: int(value) for name, value in re.findall(r"#define CONTROL_(\w+) (\d+)", header)}
    host = {name: getattr(step_graph, name) for name in device}
    assert device and host == device
    assert step_graph.BUILD_COUNTS + CAPACITY_WINDOW <= step_graph.ARRIVALS < 32
