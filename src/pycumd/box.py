"""Periodic orthorhombic simulation box."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Box:
    """An orthorhombic box ``[lo, lo + lengths)``, periodic in all three directions.

    Parameters
    ----------
    lengths : array_like, shape (3,)
        Edge lengths (length units), all positive.
    origin : array_like, shape (3,), optional
        Lower corner ``lo``.  Positions are stored relative to it internally
        (``[0, L)``); writers add it back.
    """

    lengths: tuple
    origin: tuple = (0.0, 0.0, 0.0)

    def __post_init__(self):
        lengths = tuple(float(x) for x in np.broadcast_to(np.asarray(self.lengths, float), (3,)))
        origin = tuple(float(x) for x in np.broadcast_to(np.asarray(self.origin, float), (3,)))
        if not all(np.isfinite(lengths)) or min(lengths) <= 0:
            raise ValueError(f"box lengths must be positive and finite, got {lengths}")
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "origin", origin)

    @property
    def L(self) -> np.ndarray:
        """Edge lengths as a float64 array of shape (3,)."""
        return np.array(self.lengths)

    @property
    def volume(self) -> float:
        return float(np.prod(self.lengths))

    def wrap(self, positions: np.ndarray, images: np.ndarray | None = None):
        """Wrap positions (relative to the origin) into ``[0, L)``; update image counters in place.

        Returns the wrapped positions (a new array).
        """
        L = self.L
        shift = np.floor(positions / L)
        wrapped = positions - shift * L
        wrapped[wrapped >= L] -= np.broadcast_to(L, wrapped.shape)[wrapped >= L]
        if images is not None:
            images += shift.astype(images.dtype)
        return wrapped

    def minimum_image(self, dr: np.ndarray) -> np.ndarray:
        """Minimum-image convention for separation vectors, shape (..., 3)."""
        L = self.L
        return dr - L * np.rint(dr / L)
