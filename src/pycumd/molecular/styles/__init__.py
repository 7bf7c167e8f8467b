"""Bonded styles (one module + one .cuh each) and their registry (:mod:`.registry`)."""
