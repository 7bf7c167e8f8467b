"""LAMMPS' Park-Miller generator and the ``velocity ... create ... loop geom`` recipe.

LAMMPS draws initial velocities with its own minimal-standard Park-Miller generator
(``RanPark``).  With ``loop geom`` the generator is re-seeded for every atom from a hash
of the user seed and the atom's coordinates, so an atom's velocity depends only on its
position and the seed -- not on the number of MPI ranks or on the atom order.  This
module reproduces that bit for bit, which lets a pycumd run start from exactly the
velocities a LAMMPS reference run (e.g. ``bench/in.lj``) starts from.

The generator
-------------
``uniform()`` is Park and Miller's minimal standard ``seed <- 16807 * seed mod (2^31 - 1)``
computed with Schrage's factorisation (``IQ = 127773``, ``IR = 2836``) in 32-bit signed
integers, returning ``seed * (1.0 / 2147483647)`` (a product with the rounded reciprocal,
not a quotient).  ``gaussian()`` is the Marsaglia polar method: draw
``v1 = 2u - 1``, ``v2 = 2u - 1`` until ``0 < r^2 < 1``, form
``fac = sqrt(-2 ln(r^2) / r^2)``, return ``v2 * fac`` and keep ``v1 * fac`` for the next
call.

Per-atom reseeding (``RanPark::reset(seed, coord)``)
---------------------------------------------------
A Jenkins one-at-a-time hash (32-bit unsigned arithmetic) runs over the 4 bytes of the
``int`` seed followed by the 24 bytes of the three ``double`` coordinates, both in the
machine's (little-endian) byte order.  LAMMPS reads those bytes through ``char *``, which
is signed on x86-64, so every byte >= 0x80 is sign-extended (adds ``byte - 256`` modulo
2^32).  Per byte: ``h += b; h += h << 10; h ^= h >> 6``; at the end
``h += h << 3; h ^= h >> 11; h += h << 15``.  The new seed is ``h & 0x7ffffff`` -- only
27 bits, although the LAMMPS comment says 31 -- with 0 replaced by 1.  The generator is
then warmed up by 5 discarded ``uniform()`` calls and the gaussian cache is cleared.

``velocity GROUP create T SEED loop geom`` step by step
-------------------------------------------------------
Read from ``Velocity::create`` / ``RanPark`` in the LAMMPS source and checked against
LAMMPS 22 Jul 2025 by ``tests/test_lammps_random.py``: :func:`velocity_create_loop_geom`
reproduces LAMMPS' velocities bit for bit on one rank (``dist uniform`` and
``gaussian``, ``mom yes`` and ``no``, any mass).  The hash reads the coordinates' bits,
so the positions must be bit-identical to LAMMPS' (for ``lattice fcc RHO`` with the
default orientation, ``(cell + basis) * (4/RHO)**(1/3)`` in float64 is):

1. For each atom ``i`` in the group, in local order: ``reset(SEED, x[i])``, then the raw
   triple -- ``dist uniform`` (default): ``(u() - 0.5, u() - 0.5, u() - 0.5)``;
   ``dist gaussian``: ``(g(), g(), g())``, where the first two gaussians are the two
   halves of one polar-method pair and the third starts a new pair.  This is
   :func:`loop_geom_velocities`.
2. Mass factor: ``v = raw * (1 / sqrt(m_i))`` (per-type mass, or per-atom ``rmass``).
   In 2d the z component is set to 0 instead.
3. ``mom yes`` (default): subtract the group's centre-of-mass velocity
   ``vcm = sum(m_i v_i) / sum(m_i)``.
4. ``rot yes`` (default **no**): remove the angular momentum about the centre of mass
   (uses unwrapped coordinates; not reproduced here).
5. Rescale: ``T = sum(m_i |v_i|^2) * mvv2e / (dof * k_B)`` with the default
   ``compute temp`` of the group, ``dof = dim * N - dim`` (``extra_dof`` defaults to the
   dimension; fixes that remove degrees of freedom, e.g. ``fix shake``, defined *before*
   the ``velocity`` command subtract theirs as well); every velocity is multiplied by
   ``sqrt(T_target / T)``.

:func:`velocity_create_loop_geom` performs all of these steps except ``rot yes``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = [
    "RanPark",
    "loop_geom_seeds",
    "loop_geom_velocities",
    "velocity_create_loop_geom",
    "lammps_temperature",
]

_IA = 16807
_IM = 2147483647
_AM = 1.0 / _IM
_IQ = 127773
_IR = 2836
_MASK32 = 0xFFFFFFFF
_SEED_MASK = 0x7FFFFFF  # 27 bits, exactly as in LAMMPS
_WARMUP = 5


def _check_seed(seed: int) -> int:
    seed = int(seed)
    if seed <= 0 or seed > 2147483647:
        raise ValueError(f"RanPark seed must be a positive 32-bit int, got {seed}")
    return seed


def _signed_byte(b: int) -> int:
    """A byte read through a signed ``char`` and converted to ``unsigned int``."""
    return (b - 256) & _MASK32 if b >= 128 else b


def _hash_seed(seed: int, coord) -> int:
    """Seed that ``RanPark::reset(seed, coord)`` derives (before the warm-up)."""
    data = np.asarray(seed, dtype="<i4").tobytes() + np.asarray(coord, dtype="<f8").tobytes()
    if len(data) != 28:
        raise ValueError("coord must hold exactly three numbers")
    h = 0
    for b in data:
        h = (h + _signed_byte(b)) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    s = h & _SEED_MASK
    return s if s != 0 else 1


class RanPark:
    """LAMMPS' Park-Miller minimal standard generator, bit for bit.

    Parameters
    ----------
    seed : int
        Initial state, ``1 <= seed <= 2**31 - 1``.

    Notes
    -----
    A pure-Python object, meant for checks and small jobs; the vectorised per-atom
    path is :func:`loop_geom_velocities`.

    Examples
    --------
    >>> r = RanPark(1)
    >>> r.uniform() == 16807 * (1.0 / 2147483647)
    True
    """

    def __init__(self, seed: int):
        self.seed = _check_seed(seed)
        self._save = False
        self._second = 0.0

    def uniform(self) -> float:
        """Next uniform deviate in (0, 1)."""
        s = self.seed
        k = s // _IQ
        s = _IA * (s - k * _IQ) - _IR * k
        if s < 0:
            s += _IM
        self.seed = s
        return _AM * s

    def gaussian(self) -> float:
        """Next standard normal deviate (Marsaglia polar method, pairs cached)."""
        if self._save:
            self._save = False
            return self._second
        while True:
            v1 = 2.0 * self.uniform() - 1.0
            v2 = 2.0 * self.uniform() - 1.0
            rsq = v1 * v1 + v2 * v2
            if rsq < 1.0 and rsq != 0.0:
                break
        fac = math.sqrt(-2.0 * math.log(rsq) / rsq)
        self._second = v1 * fac
        self._save = True
        return v2 * fac

    def reset(self, seed: int, coord=None) -> None:
        """Re-seed the generator.

        Parameters
        ----------
        seed : int
            Positive 32-bit seed.
        coord : sequence of 3 float, optional
            Without it the state simply becomes ``seed``.  With it, the state becomes
            the 27-bit hash of ``seed`` and ``coord`` (see the module docstring), and
            the generator is warmed up with 5 ``uniform()`` calls -- LAMMPS'
            ``RanPark::reset(int, double *)``.
        """
        if coord is None:
            self.seed = _check_seed(seed)
        else:
            self.seed = _hash_seed(_check_seed(seed), coord)
            for _ in range(_WARMUP):
                self.uniform()
        self._save = False

    def state(self) -> int:
        """The current integer state (LAMMPS ``RanPark::state()``)."""
        return self.seed


# --------------------------------------------------------------------------- kernels


@njit(cache=True, inline="always")
def _nb_uniform(s):
    k = s // _IQ
    s = _IA * (s - k * _IQ) - _IR * k
    if s < 0:
        s += _IM
    return s, _AM * s


@njit(cache=True)
def _nb_hash_seeds(seed_bytes, coord_bytes):
    n = coord_bytes.shape[0]
    out = np.empty(n, dtype=np.int64)
    # the seed's 4 bytes are hashed first and are the same for every atom
    h0 = np.int64(0)
    for j in range(seed_bytes.shape[0]):
        b = np.int64(seed_bytes[j])
        if b >= 128:
            b -= 256
        h0 = (h0 + b) & 0xFFFFFFFF
        h0 = (h0 + (h0 << 10)) & 0xFFFFFFFF
        h0 ^= h0 >> 6
    for i in range(n):
        h = h0
        for j in range(coord_bytes.shape[1]):
            b = np.int64(coord_bytes[i, j])
            if b >= 128:
                b -= 256
            h = (h + b) & 0xFFFFFFFF
            h = (h + (h << 10)) & 0xFFFFFFFF
            h ^= h >> 6
        h = (h + (h << 3)) & 0xFFFFFFFF
        h ^= h >> 11
        h = (h + (h << 15)) & 0xFFFFFFFF
        s = h & 0x7FFFFFF
        out[i] = s if s != 0 else 1
    return out


@njit(cache=True)
def _nb_triples(seeds, gaussian):
    n = seeds.shape[0]
    v = np.empty((n, 3), dtype=np.float64)
    for i in range(n):
        s = seeds[i]
        for _ in range(5):
            s, u = _nb_uniform(s)
        if not gaussian:
            for d in range(3):
                s, u = _nb_uniform(s)
                v[i, d] = u - 0.5
        else:
            d = 0
            while d < 3:
                while True:
                    s, u1 = _nb_uniform(s)
                    s, u2 = _nb_uniform(s)
                    v1 = 2.0 * u1 - 1.0
                    v2 = 2.0 * u2 - 1.0
                    rsq = v1 * v1 + v2 * v2
                    if rsq < 1.0 and rsq != 0.0:
                        break
                fac = math.sqrt(-2.0 * math.log(rsq) / rsq)
                v[i, d] = v2 * fac
                if d + 1 < 3:
                    v[i, d + 1] = v1 * fac
                d += 2
    return v


@njit(cache=True)
def _nb_sum_mv2(v, m):
    # sequential sums, in atom order, as ComputeTemp::compute_scalar on one rank
    t = 0.0
    for i in range(v.shape[0]):
        t += (v[i, 0] * v[i, 0] + v[i, 1] * v[i, 1] + v[i, 2] * v[i, 2]) * m[i]
    return t


@njit(cache=True)
def _nb_vcm(v, m):
    # Group::mass and Group::vcm on one rank: sequential sums, then p / M
    mtot = 0.0
    for i in range(m.shape[0]):
        mtot += m[i]
    p = np.zeros(3)
    for i in range(v.shape[0]):
        for d in range(3):
            p[d] += v[i, d] * m[i]
    if mtot > 0.0:
        for d in range(3):
            p[d] /= mtot
    return p


@njit(cache=True)
def _nb_zero_rotation(v, x, m):
    # Velocity::zero_rotation on one rank (LAMMPS): Group::xcm, Group::angmom and Group::inertia as
    # sequential sums over the atoms, Group::omega by the inverse of the inertia tensor, then
    # v -= omega x (x - xcm). Returns False (v untouched) where the tensor's determinant is <= 1e-6,
    # where LAMMPS diagonalises it instead.
    n = v.shape[0]
    mtot = 0.0
    for i in range(n):
        mtot += m[i]
    cm = np.zeros(3)
    for i in range(n):
        for d in range(3):
            cm[d] += x[i, d] * m[i]
    if mtot > 0.0:
        for d in range(3):
            cm[d] /= mtot
    lmom = np.zeros(3)
    inertia = np.zeros((3, 3))
    for i in range(n):
        dx, dy, dz = x[i, 0] - cm[0], x[i, 1] - cm[1], x[i, 2] - cm[2]
        lmom[0] += m[i] * (dy * v[i, 2] - dz * v[i, 1])
        lmom[1] += m[i] * (dz * v[i, 0] - dx * v[i, 2])
        lmom[2] += m[i] * (dx * v[i, 1] - dy * v[i, 0])
    for i in range(n):
        dx, dy, dz = x[i, 0] - cm[0], x[i, 1] - cm[1], x[i, 2] - cm[2]
        inertia[0, 0] += m[i] * (dy * dy + dz * dz)
        inertia[1, 1] += m[i] * (dx * dx + dz * dz)
        inertia[2, 2] += m[i] * (dx * dx + dy * dy)
        inertia[0, 1] -= m[i] * dx * dy
        inertia[1, 2] -= m[i] * dy * dz
        inertia[0, 2] -= m[i] * dx * dz
    inertia[1, 0], inertia[2, 1], inertia[2, 0] = inertia[0, 1], inertia[1, 2], inertia[0, 2]
    a = inertia
    det = (a[0, 0] * a[1, 1] * a[2, 2] + a[0, 1] * a[1, 2] * a[2, 0] + a[0, 2] * a[1, 0] * a[2, 1]
           - a[0, 0] * a[1, 2] * a[2, 1] - a[0, 1] * a[1, 0] * a[2, 2] - a[2, 0] * a[1, 1] * a[0, 2])
    if not det > 1.0e-6:
        return False
    inv = np.empty((3, 3))
    inv[0, 0] = a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]
    inv[0, 1] = -(a[0, 1] * a[2, 2] - a[0, 2] * a[2, 1])
    inv[0, 2] = a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]
    inv[1, 0] = -(a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
    inv[1, 1] = a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]
    inv[1, 2] = -(a[0, 0] * a[1, 2] - a[0, 2] * a[1, 0])
    inv[2, 0] = a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]
    inv[2, 1] = -(a[0, 0] * a[2, 1] - a[0, 1] * a[2, 0])
    inv[2, 2] = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    for r in range(3):
        for c in range(3):
            inv[r, c] /= det
    w = np.empty(3)
    for r in range(3):
        w[r] = inv[r, 0] * lmom[0] + inv[r, 1] * lmom[1] + inv[r, 2] * lmom[2]
    for i in range(n):
        dx, dy, dz = x[i, 0] - cm[0], x[i, 1] - cm[1], x[i, 2] - cm[2]
        v[i, 0] -= w[1] * dz - w[2] * dy
        v[i, 1] -= w[2] * dx - w[0] * dz
        v[i, 2] -= w[0] * dy - w[1] * dx
    return True


def zero_rotation(velocities, unwrapped, masses) -> None:
    """LAMMPS ``velocity ... rot yes`` / ``velocity zero angular`` (``Velocity::zero_rotation``), in
    place: the angular velocity of the whole, from its angular momentum and inertia tensor about the
    centre of mass, taken out of every atom's velocity.

    Parameters
    ----------
    velocities : ndarray (N, 3) float64
        Changed in place (velocity units).
    unwrapped : ndarray (N, 3)
        Unwrapped positions (positions + images x box lengths, with the box origin: LAMMPS' ``unmap``).
    masses : ndarray (N,)
        Per-atom masses.

    Raises ValueError where the inertia tensor is (nearly) singular (determinant <= 1e-6: a single
    atom, atoms on a line), where LAMMPS diagonalises it instead (not implemented here).
    """
    v = np.ascontiguousarray(velocities, dtype=np.float64)
    ok = _nb_zero_rotation(v, np.ascontiguousarray(unwrapped, dtype=np.float64),
                           np.ascontiguousarray(np.broadcast_to(np.asarray(masses, dtype=np.float64), (len(v),))))
    if not ok:
        raise ValueError("zeroing the angular momentum (velocity rot yes / zero angular): the inertia tensor is "
                         "(nearly) singular (determinant <= 1e-6, e.g. one atom or atoms on a line); LAMMPS then "
                         "diagonalises it, which pycumd does not")
    velocities[...] = v


# --------------------------------------------------------------------------- public API


def _as_positions(positions) -> np.ndarray:
    x = np.asarray(positions)
    if x.ndim != 2 or x.shape[1] != 3:
        raise ValueError(f"positions must have shape (N, 3), got {x.shape}")
    if x.dtype != np.float64:
        raise TypeError(
            "positions must be float64: the hash runs over the bytes of the doubles LAMMPS "
            f"stores, got {x.dtype}"
        )
    return np.ascontiguousarray(x, dtype="<f8")


def loop_geom_seeds(positions, seed: int) -> np.ndarray:
    """Per-atom generator states after ``RanPark::reset(seed, x_i)`` (before warm-up).

    Parameters
    ----------
    positions : (N, 3) float64 array
        Atom coordinates exactly as LAMMPS stores them.
    seed : int
        The ``velocity create`` seed (positive 32-bit).

    Returns
    -------
    (N,) int64 array
        The 27-bit hashed seeds (0 mapped to 1).
    """
    x = _as_positions(positions)
    seed_bytes = np.frombuffer(np.asarray(_check_seed(seed), dtype="<i4").tobytes(), np.uint8)
    coord_bytes = x.view(np.uint8).reshape(x.shape[0], 24)
    return _nb_hash_seeds(seed_bytes, coord_bytes)


def loop_geom_velocities(positions, seed: int, distribution: str = "uniform") -> np.ndarray:
    """Raw velocities that ``velocity ... create T SEED loop geom`` starts from.

    Parameters
    ----------
    positions : (N, 3) float64 array
        Atom coordinates, bit-identical to LAMMPS' ``x`` at the time of the ``velocity``
        command (e.g. from ``lmp.numpy.extract_atom("x")``).
    seed : int
        The ``velocity create`` seed.
    distribution : {"uniform", "gaussian"}
        LAMMPS' ``dist`` keyword.

    Returns
    -------
    (N, 3) float64 array
        Per atom, uniform: ``u - 0.5`` for x, y, z; gaussian: three successive
        ``gaussian()`` draws.  These are the values before the mass factor
        ``1/sqrt(m)``, momentum zeroing and the temperature rescaling (see the module
        docstring and :func:`velocity_create_loop_geom`).

    Notes
    -----
    Compiled with Numba; about 1e6 atoms per few tens of milliseconds after the first
    (cached) compilation.
    """
    if distribution not in ("uniform", "gaussian"):
        raise ValueError(f"distribution must be 'uniform' or 'gaussian', got {distribution!r}")
    seeds = loop_geom_seeds(positions, seed)
    return _nb_triples(seeds, distribution == "gaussian")


def lammps_temperature(velocities, masses, dimension: int = 3, extra_dof: int | None = None,
                       fix_dof: int = 0, mvv2e: float = 1.0, boltz: float = 1.0) -> float:
    """Temperature as LAMMPS' default ``compute temp`` evaluates it.

    Parameters
    ----------
    velocities : (N, 3) array
    masses : float or (N,) array
        Per-atom masses (a scalar applies to all atoms).
    dimension : {2, 3}
    extra_dof : int, optional
        ``compute_modify extra/dof``; defaults to ``dimension``.
    fix_dof : int
        Degrees of freedom removed by fixes (0 without constraints).
    mvv2e, boltz : float
        Unit conversions (both 1 in LJ units).

    Returns
    -------
    float
        ``sum(m |v|^2) * tfactor`` with ``tfactor = mvv2e / (dof * boltz)``,
        ``dof = dimension * N - extra_dof - fix_dof``.
    """
    v = np.asarray(velocities, dtype=np.float64)
    n = v.shape[0]
    m = np.broadcast_to(np.asarray(masses, dtype=np.float64), (n,))
    if extra_dof is None:
        extra_dof = dimension
    dof = dimension * n - extra_dof - fix_dof
    if dof <= 0:
        raise ValueError(f"no degrees of freedom left (dof = {dof})")
    tfactor = mvv2e / (dof * boltz)
    t = _nb_sum_mv2(np.ascontiguousarray(v), np.ascontiguousarray(m))
    return t * tfactor


def velocity_create_loop_geom(positions, temperature: float, seed: int, masses=1.0,
                              distribution: str = "uniform", zero_momentum: bool = True,
                              dimension: int = 3, extra_dof: int | None = None,
                              fix_dof: int = 0, mvv2e: float = 1.0,
                              boltz: float = 1.0) -> np.ndarray:
    """Final velocities of ``velocity all create T SEED loop geom [dist ..] [mom ..]``.

    Parameters
    ----------
    positions : (N, 3) float64 array
        Coordinates exactly as LAMMPS holds them at the ``velocity`` command.
    temperature : float
        Target temperature ``T``.
    seed : int
        Positive 32-bit seed.
    masses : float or (N,) array
        Per-atom masses.
    distribution : {"uniform", "gaussian"}
        ``dist`` keyword.
    zero_momentum : bool
        ``mom yes`` (default) or ``mom no``.
    dimension : {2, 3}
        In 2d the z component is zeroed (and the dof are ``2N - 2``).
    extra_dof, fix_dof, mvv2e, boltz
        As in :func:`lammps_temperature`.

    Returns
    -------
    (N, 3) float64 array

    Notes
    -----
    Steps, in LAMMPS' order: raw triple, times ``1/sqrt(m)``; subtract the centre-of-mass
    velocity (if ``zero_momentum``); rescale by ``sqrt(T / T_current)``.  ``rot yes`` is
    not supported (it needs unwrapped coordinates and the inertia tensor).  Summations
    run in array order, as LAMMPS does on one rank; agreement is to round-off.
    """
    raw = loop_geom_velocities(positions, seed, distribution)
    return finish_velocity_create(raw, masses, temperature, zero_momentum, dimension, extra_dof, fix_dof,
                                  mvv2e, boltz)


def finish_velocity_create(raw, masses, temperature: float, zero_momentum: bool = True, dimension: int = 3,
                           extra_dof: int | None = None, fix_dof: int = 0, mvv2e: float = 1.0,
                           boltz: float = 1.0, unwrapped=None) -> np.ndarray:
    """The steps of ``velocity create`` after the raw draws, in LAMMPS' order and summation order.

    ``raw * 1/sqrt(m)``; subtract the centre-of-mass velocity (if ``zero_momentum``); take out the
    rotation about the centre of mass (``rot yes``: when ``unwrapped``, the (N, 3) unwrapped
    positions, is given; :func:`zero_rotation`); rescale by ``sqrt(T / T_current)`` with
    :func:`lammps_temperature`.  Returns a new (N, 3) float64 array.
    """
    if dimension not in (2, 3):
        raise ValueError(f"dimension must be 2 or 3, got {dimension}")
    raw = np.asarray(raw, dtype=np.float64)
    n = raw.shape[0]
    m = np.broadcast_to(np.asarray(masses, dtype=np.float64), (n,))
    factor = 1.0 / np.sqrt(m)
    v = raw * factor[:, None]
    if dimension == 2:
        v[:, 2] = 0.0
    if zero_momentum:
        v -= _nb_vcm(v, np.ascontiguousarray(m))
    if unwrapped is not None:
        zero_rotation(v, unwrapped, m)
    t = lammps_temperature(v, m, dimension, extra_dof, fix_dof, mvv2e, boltz)
    if t == 0.0:
        raise ValueError("current temperature is zero; cannot rescale")
    v *= math.sqrt(temperature / t)
    return v
