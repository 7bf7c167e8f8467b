"""pycumd: molecular dynamics on GPUs, in Python."""

__version__ = "0.1.0"
