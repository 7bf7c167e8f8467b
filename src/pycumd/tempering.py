"""Replica exchange (parallel tempering) over the members of an :class:`~pycumd.ensemble.Ensemble`.

As LAMMPS' ``temper`` command: every ``every`` steps, neighbouring temperatures of the ladder
``T_0 < T_1 < ... < T_{M-1}`` try to exchange their replicas, the pairs ``(k, k+1)`` with ``k`` even
at even attempts and odd at odd attempts.  The pair is accepted with the Metropolis probability

    P = min(1, exp(Delta)),   Delta = (E_a - E_b) (1 / (k_B T_k) - 1 / (k_B T_{k+1}))

where ``E_a`` is the potential energy (energy units, the whole system) of the replica at ``T_k``
and ``E_b`` that of the replica at ``T_{k+1}`` (LAMMPS' ``boltz_factor``; it is symmetric in the
two replicas).  On acceptance the two replicas exchange their thermostats' targets
(``reset_target``, LAMMPS ``Fix::reset_target``) and each scales its velocities by
``sqrt(T_new / T_old)`` (LAMMPS ``Temper::scale_velocities``, after Sugita and Okamoto); their
configurations stay where they are.

The uniform number of an attempt comes from the counter-based generator of the Langevin noise
(:func:`pycumd.integrators.langevin.counter_uniform`, keyed by ``(seed, attempt, k)``), so a run
is repeatable from its seed and the decision does not depend on where it is made or in which order
the pairs are visited.  On the GPU :meth:`ReplicaExchange.attempt` decides on the device
(``tempering.cu``: one thread per pair), on the CPU on the host, with the same arithmetic.
"""

from __future__ import annotations

import math

import numpy as np

from .integrators.langevin import counter_uniform


def exchange_log_ratio(e_low: float, e_high: float, t_low: float, t_high: float, boltz: float) -> float:
    """``Delta = (E_low - E_high) (1/(k_B T_low) - 1/(k_B T_high))``: the log of the Metropolis
    ratio of exchanging the replica at ``T_low`` (potential energy ``e_low``) with the one at
    ``T_high`` (``e_high``).  Energies in energy units, temperatures in temperature units."""
    return (e_low - e_high) * (1.0 / (boltz * t_low) - 1.0 / (boltz * t_high))


def accept_exchange(delta: float, uniform: float) -> bool:
    """LAMMPS' rule: accept when ``delta >= 0``, else when ``uniform < exp(delta)``."""
    return delta >= 0.0 or uniform < math.exp(delta)


class ReplicaExchange:
    """The temperature ladder of a replica-exchange run and its bookkeeping.

    Parameters
    ----------
    temperatures : sequence of float
        The ladder, one temperature per replica (temperature units), strictly increasing.
        Replica ``i`` (member ``i`` of the ensemble) starts at ``temperatures[i]`` (or at
        ``temperatures[initial_index[i]]``): :meth:`bind` sets its thermostat's target to it (its
        velocities are the caller's).
    every : int
        Steps between two exchange attempts (LAMMPS ``temper N M`` M).
    seed : int
        Seed of the acceptance draws (positive).
    random_pairs : bool
        False (LAMMPS' default, ``seed_swap`` 0): even and odd pairs alternate; True: each attempt
        picks even or odd pairs with probability 1/2 (from the same generator).
    initial_index : sequence of int, optional
        Each member's starting index in the ladder, a permutation of ``0 .. M-1`` (LAMMPS ``temper
        ... index``, the ``world2temp`` of a tempering run being continued, e.g. from the last line
        of its universe log). Default: member ``i`` at ``temperatures[i]``.

    Attributes
    ----------
    replica_at : ndarray (M,) int
        ``replica_at[k]``: the member at temperature ``k`` (LAMMPS ``temp2world``).
    attempts, accepted : ndarray (M - 1,) int
        Attempts and acceptances of each neighbouring pair ``(k, k+1)``.
    walk : list of (step, ndarray (M,) int)
        After each attempt, each member's temperature index (LAMMPS' tempering status lines:
        ``world2temp``).
    """

    def __init__(self, temperatures, every: int, seed: int, random_pairs: bool = False, initial_index=None):
        t = np.asarray(temperatures, dtype=np.float64)
        if t.ndim != 1 or len(t) < 2:
            raise ValueError(f"replica exchange needs a ladder of at least 2 temperatures, got {temperatures!r}")
        if not (np.all(t > 0) and np.all(np.diff(t) > 0)):
            raise ValueError(f"replica-exchange temperatures must be positive and increasing, got {t.tolist()}")
        if isinstance(every, bool) or int(every) != every or every < 1:
            raise ValueError(f"replica-exchange interval must be a whole number of steps >= 1, got {every!r}")
        if isinstance(seed, bool) or int(seed) != seed or seed < 1:
            raise ValueError(f"replica-exchange seed must be a positive integer, got {seed!r}")
        self.temperatures = t
        self.every, self.seed, self.random_pairs = int(every), int(seed), bool(random_pairs)
        m = len(t)
        self.replica_at = np.arange(m)
        self.initial_index = None
        if initial_index is not None:
            index = np.asarray(initial_index)
            if index.shape != (m,) or not np.issubdtype(index.dtype, np.integer) or sorted(index.tolist()) != list(range(m)):
                raise ValueError(f"replica-exchange initial_index {list(initial_index)!r}: each member's index in the "
                                 f"ladder of {m} temperatures, a permutation of 0..{m - 1} (each index once)")
            self.initial_index = index.astype(np.int64)
            self.replica_at[self.initial_index] = np.arange(m)
        self.attempts = np.zeros(m - 1, dtype=np.int64)
        self.accepted = np.zeros(m - 1, dtype=np.int64)
        self.n_attempts = 0
        self.walk: list = []

    @property
    def n_replicas(self) -> int:
        return len(self.temperatures)

    @property
    def temperature_index(self) -> np.ndarray:
        """Each member's index in the ladder (LAMMPS ``world2temp``), shape (M,)."""
        index = np.empty_like(self.replica_at)
        index[self.replica_at] = np.arange(self.n_replicas)
        return index

    @property
    def start_index(self) -> np.ndarray:
        """Each member's index in the ladder at the start of the tempering run, shape (M,)
        (``initial_index``, or member ``i`` at ``i``): the first status line of LAMMPS' universe log."""
        return self.initial_index.copy() if self.initial_index is not None else np.arange(self.n_replicas)

    def acceptance_ratios(self) -> np.ndarray:
        """Accepted / attempted of each pair ``(k, k+1)``, shape (M - 1,) (NaN where none was tried)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.attempts > 0, self.accepted / np.maximum(self.attempts, 1), np.nan)

    def bind(self, members) -> None:
        """Check that there is one member per temperature, each with a thermostat that can change
        its target (``reset_target``), and put every member's thermostat at its temperature."""
        if len(members) != self.n_replicas:
            raise ValueError(f"replica exchange over {self.n_replicas} temperatures needs as many systems, "
                             f"the ensemble has {len(members)}")
        index = self.temperature_index
        for i, sim in enumerate(members):
            th = sim.thermostat
            if th is None or not th.has_target_temperature:
                raise ValueError(f"replica exchange: system {i} has "
                                 f"{'no thermostat' if th is None else th.describe()}; each replica needs a "
                                 f"thermostat with a target temperature (Langevin or Nose-Hoover)")
            th.reset_target(float(self.temperatures[index[i]]))

    def pairs(self, attempt: int) -> list:
        """The lower indices ``k`` of the pairs ``(k, k+1)`` tried at attempt number ``attempt``."""
        if self.random_pairs:
            which = 0 if counter_uniform(self.seed, attempt, 2**32, 0) < 0.5 else 1
        else:
            which = attempt % 2
        return list(range(which, self.n_replicas - 1, 2))

    def attempt(self, energies, boltz: float, step: int, backend=None) -> list:
        """One exchange attempt from the members' potential energies ``energies`` (shape (M,),
        energy units, by member; on the GPU a device array or host values).  Updates the ladder and
        the counts and returns the accepted pairs as ``(k, member at T_k, member at T_{k+1})``
        (before the exchange); the caller applies them (:meth:`apply`).  With a GPU ``backend`` the
        decision is made on the device (:meth:`_attempt_on_device`)."""
        if backend is not None and backend.is_gpu:
            return self._attempt_on_device(energies, boltz, step, backend)
        energies = np.asarray(energies, dtype=np.float64)
        a = self.n_attempts
        done = []
        for k in self.pairs(a):
            low, high = int(self.replica_at[k]), int(self.replica_at[k + 1])
            delta = exchange_log_ratio(energies[low], energies[high], self.temperatures[k],
                                       self.temperatures[k + 1], boltz)
            self.attempts[k] += 1
            if accept_exchange(delta, counter_uniform(self.seed, a, k, 0)):
                self.accepted[k] += 1
                done.append((k, low, high))
                self.replica_at[k], self.replica_at[k + 1] = high, low
        self.n_attempts += 1
        self.walk.append((int(step), self.temperature_index.copy()))
        return done

    def _attempt_on_device(self, energies, boltz: float, step: int, backend) -> list:
        """:meth:`attempt` with the Metropolis decisions made by ``tempering.cu``'s ``exchange_attempt``
        (one thread per pair); the ladder and counts come back to the host (a few integers)."""
        xp = backend.xp
        pairs = self.pairs(self.n_attempts)
        which = pairs[0] if pairs else 0
        m = self.n_replicas
        kernel = backend.kernel_module("tempering.cu", options=("--fmad=false",)).get_function("exchange_attempt")
        replica_at = xp.asarray(self.replica_at.astype(np.int32))
        attempts, accepted = xp.asarray(self.attempts), xp.asarray(self.accepted)
        scale = xp.ones(m, dtype=np.float64)
        index = self.temperature_index
        target = xp.asarray(self.temperatures[index])
        before = self.replica_at.copy()
        blocks = max(1, -(-len(pairs) // 128))
        kernel((blocks,), (128,), (xp.asarray(energies, dtype=np.float64), replica_at,
                                  xp.asarray(self.temperatures), np.int32(m), np.float64(boltz),
                                  np.uint64(self.seed), np.uint64(self.n_attempts), np.int32(which),
                                  attempts, accepted, scale, target))
        self.replica_at = backend.to_host(replica_at).astype(np.int64)
        self.attempts, self.accepted = backend.to_host(attempts), backend.to_host(accepted)
        done = [(k, int(before[k]), int(before[k + 1])) for k in pairs if self.replica_at[k] != before[k]]
        self.n_attempts += 1
        self.walk.append((int(step), self.temperature_index.copy()))
        return done

    def apply(self, members, done) -> None:
        """Give the exchanged members their new temperatures: the thermostat's target
        (``reset_target``) and the velocities scaled by ``sqrt(T_new / T_old)``."""
        t = self.temperatures
        for k, low, high in done:
            for member, t_old, t_new in ((low, t[k], t[k + 1]), (high, t[k + 1], t[k])):
                sim = members[member]
                sim.integrator.scale_velocities(sim.state, math.sqrt(t_new / t_old))
                sim.thermostat.reset_target(float(t_new))

    def checkpoint_state(self) -> dict:
        """The ladder's assignment, the counts and the walk (JSON)."""
        return {"temperatures": self.temperatures.tolist(), "every": self.every, "seed": self.seed,
                "random_pairs": self.random_pairs, "replica_at": self.replica_at.tolist(),
                "attempts": self.attempts.tolist(), "accepted": self.accepted.tolist(),
                "n_attempts": self.n_attempts, "walk": [[s, w.tolist()] for s, w in self.walk]}

    def restore_checkpoint_state(self, state: dict, members) -> None:
        """Take a :meth:`checkpoint_state` (same ladder, interval and seed), and put each member's
        thermostat at its temperature."""
        for key in ("temperatures", "every", "seed", "random_pairs"):
            mine = getattr(self, key)
            mine = mine.tolist() if hasattr(mine, "tolist") else mine
            if state[key] != mine:
                raise ValueError(f"the checkpoint's replica exchange has {key} {state[key]}, this one {mine}")
        self.replica_at = np.asarray(state["replica_at"], dtype=np.int64)
        self.attempts = np.asarray(state["attempts"], dtype=np.int64)
        self.accepted = np.asarray(state["accepted"], dtype=np.int64)
        self.n_attempts = int(state["n_attempts"])
        self.walk = [(int(s), np.asarray(w)) for s, w in state["walk"]]
        index = self.temperature_index
        for i, sim in enumerate(members):
            sim.thermostat.reset_target(float(self.temperatures[index[i]]))

    def summary(self) -> str:
        """Acceptance ratio of each pair and the round trips' coverage, for the end of a run."""
        ratios = self.acceptance_ratios()
        lines = [f"replica exchange: {self.n_attempts} attempts every {self.every} steps"]
        for k, r in enumerate(ratios):
            lines.append(f"  T {self.temperatures[k]:g} <-> {self.temperatures[k + 1]:g}: "
                         f"{self.accepted[k]}/{self.attempts[k]} accepted"
                         + (f" ({r:.3f})" if np.isfinite(r) else ""))
        if self.walk:
            visited = np.zeros((self.n_replicas, self.n_replicas), dtype=bool)
            for _, w in self.walk:
                visited[np.arange(self.n_replicas), w] = True
            lines.append("  temperatures visited per replica: "
                         + " ".join(str(int(v.sum())) for v in visited))
        return "\n".join(lines)


__all__ = ["ReplicaExchange", "accept_exchange", "exchange_log_ratio"]
