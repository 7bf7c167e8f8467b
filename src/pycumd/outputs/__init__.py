"""Outputs: the reporters and writers a Simulation calls (thermo rows, trajectories, progress).

This package sits below the simulation loop: it imports nothing of the engine's front-ends, and the
engine hands it what it needs to write.
"""
