"""The replicas of ``pycumd bench batch``'s independent case, as plain arrays for the peer engines.

``pycumd bench batch --systems R --atoms N`` runs R copies of LAMMPS' bench/in.lj liquid of N atoms
(fcc at density 0.8442 in ``CELLS[N]`` unit cells, e.g. 5 x 5 x 10 for 1,000 atoms, so a box of
8.40 x 8.40 x 16.80; LJ epsilon 1, sigma 1, mass 1, cutoff 2.5 truncated; skin 0.3; NVE; dt 0.005);
system i has velocities at T 1.44 from seed ``SEED0 + i`` (LAMMPS ``velocity ... loop geom``).  This
module builds exactly those starts with the bench's own builder (``pycumd.bench.batch.member_system``)
and hands them on as NumPy arrays, so that ``jaxmd_batch.py`` and ``openmm_batch.py`` integrate the
same replicas:

    python benchmarks/peers/batch_replicas.py --systems 1024 --atoms 1000 --out /tmp/replicas.npz

The file holds ``positions`` and ``velocities`` (R, N, 3), ``box`` (3,), ``masses`` (N,), ``seeds``
(R,) and the scalars ``density``, ``temperature``, ``cutoff``, ``skin``, ``dt`` (lj units, float64).
A peer given ``--replicas-file`` takes its first R replicas (seeds SEED0 .. SEED0 + R - 1: the bench's
replicas at R); without one it builds them here (pycumd imported from ../../src).
Needs NumPy and pycumd only (no GPU).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..", "src")


def _bench():
    """``pycumd.bench.batch``, imported from this checkout's src/ (the installed copy may be stale)."""
    if SRC not in sys.path:
        sys.path.insert(0, SRC)
    from pycumd.bench import batch

    return batch


@dataclass
class Replicas:
    """R replicas of one LJ liquid (lj units; arrays float64).

    positions, velocities : (R, N, 3)   start of each replica (sigma; sigma/tau)
    box : (3,)                          orthorhombic box edges, origin at 0 (sigma)
    masses : (N,)                       per-atom mass (1)
    seeds : (R,)                        the velocity seed of each replica
    density, temperature, cutoff, skin, dt : the in.lj parameters the bench uses
    """

    positions: np.ndarray
    velocities: np.ndarray
    box: np.ndarray
    masses: np.ndarray
    seeds: np.ndarray
    density: float
    temperature: float
    cutoff: float
    skin: float
    dt: float

    @property
    def systems(self) -> int:
        return self.positions.shape[0]

    @property
    def atoms(self) -> int:
        return self.positions.shape[1]

    def first(self, systems: int) -> "Replicas":
        """The first ``systems`` replicas (the bench's replicas at that count)."""
        if not 1 <= systems <= self.systems:
            raise ValueError(f"asked for {systems} replicas; this description has {self.systems}")
        return Replicas(self.positions[:systems], self.velocities[:systems], self.box, self.masses,
                        self.seeds[:systems], self.density, self.temperature, self.cutoff, self.skin, self.dt)

    def save(self, path: str) -> None:
        np.savez(path, positions=self.positions, velocities=self.velocities, box=self.box, masses=self.masses,
                 seeds=self.seeds, density=self.density, temperature=self.temperature, cutoff=self.cutoff,
                 skin=self.skin, dt=self.dt)

    @classmethod
    def load(cls, path: str) -> "Replicas":
        try:
            with np.load(path) as f:
                return cls(f["positions"], f["velocities"], f["box"], f["masses"], f["seeds"],
                           float(f["density"]), float(f["temperature"]), float(f["cutoff"]), float(f["skin"]),
                           float(f["dt"]))
        except (OSError, KeyError, ValueError) as e:
            raise ValueError(f"{path}: not a replica file of batch_replicas.py ({e})") from None


def build(systems: int, atoms: int) -> Replicas:
    """The starts of ``pycumd bench batch --systems systems --atoms atoms`` (independent case)."""
    batch = _bench()
    if systems < 1:
        raise ValueError(f"--systems must be positive, got {systems}")
    seeds = batch.SEED0 + np.arange(systems)
    pos = np.empty((systems, atoms, 3))
    vel = np.empty((systems, atoms, 3))
    box = masses = None
    for i, seed in enumerate(seeds):
        s = batch.member_system(atoms, int(seed))
        if s.n_atoms != atoms or np.any(np.asarray(s.box.origin) != 0):
            raise AssertionError(f"member_system gave {s.n_atoms} atoms, origin {s.box.origin}")
        pos[i], vel[i] = s.positions, s.velocities
        box = np.asarray(s.box.lengths, dtype=np.float64)
        masses = np.asarray(s.masses, dtype=np.float64)[np.asarray(s.types)]
    return Replicas(pos, vel, box, masses, seeds, batch.DENSITY, batch.TEMPERATURE, batch.CUTOFF, batch.SKIN,
                    batch.DT)


def get(systems: int, atoms: int, path: str | None = None) -> Replicas:
    """The first ``systems`` replicas from ``path`` (checked to hold ``atoms`` atoms each), else built."""
    if path is None:
        return build(systems, atoms)
    r = Replicas.load(path)
    if r.atoms != atoms:
        raise ValueError(f"{path}: replicas of {r.atoms} atoms, asked for {atoms}")
    return r.first(systems)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", type=int, default=1024)
    ap.add_argument("--atoms", type=int, default=1000)
    ap.add_argument("--out", required=True, help="the .npz file to write")
    args = ap.parse_args(argv)
    try:
        r = build(args.systems, args.atoms)
    except ValueError as e:
        print(f"batch_replicas: {e}")
        return 2
    r.save(args.out)
    print(f"batch_replicas: {r.systems} replicas x {r.atoms} atoms, box {' x '.join(f'{v:.4f}' for v in r.box)}, "
          f"seeds {r.seeds[0]}..{r.seeds[-1]} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
