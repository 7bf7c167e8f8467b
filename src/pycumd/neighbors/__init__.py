"""Neighbor search: prefix sums, counting sort into cells."""

from pycumd.neighbors.counting_sort import CountingSortResult, cell_index, counting_sort, reorder
from pycumd.neighbors.scan import prefix_sum

__all__ = ["prefix_sum", "CountingSortResult", "counting_sort", "cell_index", "reorder"]
