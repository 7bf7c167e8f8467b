"""Front-ends: what turns a user's input (a LAMMPS script, a TOML file) into a run of the engine.

This package sits above the engine: it imports the engine and the outputs, and nothing below it
imports this package.
"""
