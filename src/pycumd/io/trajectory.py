"""Trajectory frames in extended XYZ (read by ASE, OVITO and freud)."""

from __future__ import annotations

import numpy as np


class ExtXYZWriter:
    """Appends a frame every ``every`` steps: species, positions (wrapped, box origin added),
    velocities and ids, with the box as the ``Lattice`` and the step and time in the comment line.

    Parameters
    ----------
    path : str or path
    every : int
        Interval in steps (> 0).
    type_names : list of str, optional
        Species names per type (default ``"1", "2", ...`` as LAMMPS numbers them).
    """

    needs_energy = False

    def __init__(self, path, every: int, type_names=None):
        if every <= 0:
            raise ValueError(f"trajectory interval must be > 0, got {every}")
        self.every = int(every)
        self.type_names = type_names
        self._file = open(path, "w")
        self._last_step = None

    def wants(self, step: int, run_start: int, run_end: int) -> bool:
        return step % self.every == 0

    def report(self, sim) -> None:
        if sim.state.step == self._last_step:
            return
        self._last_step = sim.state.step
        system = sim.system()
        names = self.type_names or [str(t + 1) for t in range(system.n_types)]
        L = system.box.L
        origin = np.asarray(system.box.origin)
        lattice = " ".join(f"{x:.10g}" for x in np.diag(L).ravel())
        f = self._file
        f.write(f"{system.n_atoms}\n")
        f.write(f'Lattice="{lattice}" Origin="{" ".join(f"{x:.10g}" for x in origin)}" '
                f'Properties=species:S:1:pos:R:3:velo:R:3:id:I:1 pbc="T T T" '
                f'step={sim.state.step} time={sim.time:.10g}\n')
        pos = system.positions + origin
        for i in range(system.n_atoms):
            p, v = pos[i], system.velocities[i]
            f.write(f"{names[system.types[i]]} {p[0]:.10g} {p[1]:.10g} {p[2]:.10g} "
                    f"{v[0]:.10g} {v[1]:.10g} {v[2]:.10g} {system.ids[i]}\n")
        f.flush()

    def begin_run(self) -> None:
        pass

    def close(self) -> None:
        self._file.close()
