"""Process grids: the 3-D grid of spatial domains and the P x Q grid of the all-pairs force matrix.

Spatial domains (:func:`choose_domain_grid`): among the factorisations ``px * py * pz = P`` that
agree with the user's fixed counts (LAMMPS ``processors Px Py Pz``, ``*`` = free) and whose domains
are at least one ghost layer thick (``L_d / p_d >= r_cut + skin`` in every direction, so that one
exchange with each face neighbour brings every ghost), the one with the least domain surface
``Lx Ly / (px py) + Lx Lz / (px pz) + Ly Lz / (py pz)`` (LAMMPS' rule: the least ghost volume);
ties go to the first in the order (px, py, pz) increasing.  A grid whose domains would be thinner
than the ghost layer is left out when free (a coarser grid in that direction is taken), and is an
:class:`~pycumd.system.InputError` when the user fixed it or when no grid fits.

Force matrix (:func:`choose_matrix_grid`): ``P * Q = size`` with P (target blocks, process rows)
and Q (source blocks, process columns) as close to square as possible (P >= Q), or the user's.
"""

from __future__ import annotations

import numpy as np

from ..system import InputError


def _factor_triples(size: int):
    for px in range(1, size + 1):
        if size % px:
            continue
        for py in range(1, size // px + 1):
            if (size // px) % py:
                continue
            yield px, py, size // (px * py)


def parse_processors(text) -> tuple:
    """``"2 * 1"`` or ``("2", "*", "1")`` or ``(2, 0, 1)`` -> ``(2, 0, 1)``; 0 (``*``) = free."""
    parts = text.split() if isinstance(text, str) else list(text)
    if len(parts) != 3:
        raise InputError(f"processors needs three counts (Px Py Pz, '*' for free), got {text!r}")
    out = []
    for p in parts:
        if p in ("*", 0, "0"):
            out.append(0)
            continue
        try:
            value = int(p)
        except (TypeError, ValueError):
            raise InputError(f"processors: {p!r} is not a whole number or '*'") from None
        if value < 1:
            raise InputError(f"processors: counts must be >= 1 or '*', got {p!r}")
        out.append(value)
    return tuple(out)


def choose_domain_grid(size: int, box_lengths, r_ghost: float, processors=None) -> tuple:
    """The (px, py, pz) grid of spatial domains for ``size`` ranks (see the module docstring).

    Parameters
    ----------
    size : int
        Number of ranks P.
    box_lengths : sequence of 3 floats
        Box edges (length units).
    r_ghost : float
        Ghost-layer width ``r_cut + skin`` (length units); every domain must be at least this thick.
    processors : sequence of 3 ints or str, optional
        Fixed counts per direction, 0 or ``*`` for free (LAMMPS ``processors``).

    Returns
    -------
    tuple of 3 ints
    """
    L = np.asarray(box_lengths, dtype=np.float64)
    fixed = parse_processors(processors) if processors is not None else (0, 0, 0)
    allowed = [g for g in _factor_triples(size) if all(f in (0, c) for f, c in zip(fixed, g))]
    if not allowed:
        raise InputError(f"processors {' '.join(str(f) if f else '*' for f in fixed)} cannot make a grid of "
                         f"{size} MPI ranks (the counts must multiply to {size})")
    fits = [g for g in allowed if (L / np.asarray(g) >= r_ghost).all()]
    if not fits:
        g = min(allowed, key=lambda g: -float((L / np.asarray(g)).min()))
        d = int(np.argmin(L / np.asarray(g)))
        raise InputError(
            f"{size} MPI ranks cannot split the box {' x '.join(f'{x:g}' for x in L)} into domains at least "
            f"one ghost layer (r_cut + skin = {r_ghost:g}) thick: the best grid {g[0]}x{g[1]}x{g[2]} leaves "
            f"domains {L[d] / g[d]:.6g} thick along {'xyz'[d]}; use fewer ranks or a larger box")

    def surface(g):
        a = L / np.asarray(g, dtype=np.float64)
        return a[0] * a[1] + a[0] * a[2] + a[1] * a[2]
    return min(fits, key=surface)


def choose_matrix_grid(size: int, grid=None) -> tuple:
    """(P, Q) with ``P * Q = size`` for the all-pairs force matrix: P process rows (target blocks),
    Q process columns (source blocks); default the most square (P >= Q); ``grid`` a user's
    ``(P, Q)`` or ``"PxQ"``."""
    if grid is not None:
        if isinstance(grid, str):
            try:
                grid = tuple(int(x) for x in grid.lower().split("x"))
            except ValueError:
                raise InputError(f"force-matrix grid must be PxQ (e.g. 2x2), got {grid!r}") from None
        if len(grid) != 2 or min(grid) < 1 or grid[0] * grid[1] != size:
            raise InputError(f"force-matrix grid {grid} must be two counts >= 1 whose product is the "
                             f"{size} MPI ranks")
        return int(grid[0]), int(grid[1])
    q = max(d for d in range(1, int(size**0.5) + 1) if size % d == 0)
    return size // q, q


def block_range(n: int, blocks: int, index: int) -> tuple:
    """``[start, stop)`` of block ``index`` of ``n`` items in ``blocks`` near-equal contiguous blocks
    (the first ``n % blocks`` one larger)."""
    base, extra = divmod(n, blocks)
    start = index * base + min(index, extra)
    return start, start + base + (1 if index < extra else 0)
