"""Molecular topology and bonded interactions: :mod:`.topology` (molecules, terms in atom IDs, special pairs,
the per-atom gather lists), :mod:`.bonded` (the fixed-order bonded forces on the CPU and the GPU, the
special-pair exclusion pass, :class:`~pycumd.molecular.bonded.MolecularForces`), :mod:`.styles` (one module
and one ``.cuh`` per bonded style, and their registry)."""
