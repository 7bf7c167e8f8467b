"""Readers, writers and reproductions of other codes' conventions (LAMMPS inputs, generators)."""
