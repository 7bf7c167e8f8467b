"""Static structure factor S(q) from the reciprocal lattice of the box (direct method).

``S(q) = 1/N |sum_j exp(i q . r_j)|^2`` for every reciprocal-lattice vector
``q = 2 pi (nx/Lx, ny/Ly, nz/Lz)`` (integers n, q != 0) with ``q_min <= |q| < q_max``, averaged over
the vectors in each |q| bin and over frames (freud's ``StaticStructureFactorDirect`` with every
vector; freud calls q ``k``).

The sum factorises per dimension: with ``e_d[j, n] = exp(i 2 pi n x_jd / L_d)`` the density modes of
one plane ``nx`` are a matrix product, ``rho[nx, ny, nz] = sum_j (e_x[j, nx] e_y[j, ny]) e_z[j, nz]``,
i.e. one complex GEMM of (ny x N) by (N x nz) per ``nx`` (cuBLAS on the GPU, BLAS on the CPU), over
chunks of atoms to bound memory.  Cost ``8 N (2 n_max + 1)^3`` flops per frame.
"""

from __future__ import annotations

import numpy as np

from ..backend import array_backend, select

__all__ = ["StructureFactor", "structure_factor"]

ATOM_CHUNK = 1 << 16


class StructureFactor:
    """S(q) accumulated over frames (``compute`` returns ``self``).

    Parameters
    ----------
    q_max : float
        Largest wave number (1/length units).
    bins : int
        Number of |q| bins on ``[q_min, q_max)``.
    q_min : float
        Smallest wave number (default 0; q = 0 itself is always left out).

    Attributes
    ----------
    q : (bins,) bin centres (1/length)
    bin_edges : (bins + 1,)
    S : (bins,) S(q), NaN in bins that hold no reciprocal-lattice vector
    n_vectors : (bins,) number of q vectors per bin (in the last frame's box)
    """

    def __init__(self, q_max: float, bins: int = 100, q_min: float = 0.0):
        if not q_max > q_min >= 0 or int(bins) < 1:
            raise ValueError(f"structure factor needs 0 <= q_min < q_max and bins >= 1, "
                             f"got q_min={q_min}, q_max={q_max}, bins={bins}")
        self.q_max, self.q_min, self.bins = float(q_max), float(q_min), int(bins)
        self.bin_edges = np.linspace(self.q_min, self.q_max, self.bins + 1)
        self.q = 0.5 * (self.bin_edges[1:] + self.bin_edges[:-1])
        self._sum = np.zeros(self.bins)
        self._frames_per_bin = np.zeros(self.bins, np.int64)
        self.n_vectors = np.zeros(self.bins, np.int64)
        self.n_frames = 0

    def compute(self, positions, box_lengths) -> "StructureFactor":
        """Add one frame: ``positions`` (N, 3 or 4) NumPy or CuPy (computed there), ``box_lengths`` (3,)."""
        xp = array_backend(positions).xp
        L = np.asarray(box_lengths, dtype=np.float64)
        n_max = np.floor(self.q_max * L / (2.0 * np.pi)).astype(int)
        grids = [np.arange(-m, m + 1) for m in n_max]
        qx, qy, qz = np.meshgrid(*[2.0 * np.pi * g / l for g, l in zip(grids, L)], indexing="ij")
        q_norm = np.sqrt(qx**2 + qy**2 + qz**2)
        inside = (q_norm >= self.q_min) & (q_norm < self.q_max) & (q_norm > 0)
        rho = xp.zeros(q_norm.shape, np.complex128)
        n = positions.shape[0]
        for a in range(0, n, ATOM_CHUNK):
            x = xp.asarray(positions[a:a + ATOM_CHUNK, :3], dtype=np.float64)
            e = [xp.exp(1j * x[:, d, None] * xp.asarray(2.0 * np.pi * grids[d] / L[d])[None, :]) for d in range(3)]
            for ix in range(len(grids[0])):
                rho[ix] += (e[0][:, ix, None] * e[1]).T @ e[2]          # (ny, N) @ (N, nz)
        s_q = xp.abs(rho) ** 2 / n
        s_q = np.asarray(s_q.get() if hasattr(s_q, "get") else s_q)
        which = np.digitize(q_norm[inside], self.bin_edges) - 1
        counts = np.bincount(which, minlength=self.bins)[:self.bins]
        sums = np.bincount(which, weights=s_q[inside], minlength=self.bins)[:self.bins]
        filled = counts > 0
        self._sum[filled] += sums[filled] / counts[filled]
        self._frames_per_bin += filled
        self.n_vectors = counts
        self.n_frames += 1
        return self

    @property
    def S(self) -> np.ndarray:
        if self.n_frames == 0:
            raise ValueError("S(q) not computed yet: call compute() on at least one frame")
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self._frames_per_bin > 0, self._sum / np.maximum(self._frames_per_bin, 1), np.nan)

    def table(self) -> dict:
        """Columns for CSV output: ``q``, ``S``, ``n_vectors``."""
        return {"q": self.q, "S": self.S, "n_vectors": self.n_vectors}


def structure_factor(path, q_max: float, bins: int = 100, q_min: float = 0.0, start: int = 0,
                     stop: int | None = None, stride: int = 1, device: str = "cpu") -> StructureFactor:
    """S(q) averaged over the frames ``start:stop:stride`` of a trajectory file (GSD, XYZ, dump)."""
    from .trajectory import read_trajectory

    backend = select(device)
    result = StructureFactor(q_max, bins, q_min)
    for frame in read_trajectory(path, start, stop, stride):
        result.compute(backend.asarray(frame.positions), frame.lengths)
    if result.n_frames == 0:
        raise ValueError(f"{path}: no frames in the selection {start}:{stop}:{stride}")
    return result
