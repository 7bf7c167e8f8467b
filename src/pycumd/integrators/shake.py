"""Bond and angle constraints: LAMMPS ``fix shake`` and ``fix rattle`` (``FixShake``, ``FixRattle``).

Clusters (:func:`find_clusters`, as ``FixShake::find_clusters``): a bond is constrained when its type is
listed after ``b``, the type of one of its atoms after ``t``, or the mass of one of its atoms is within
0.1 of a mass after ``m``.  An atom with 2 or 3 constrained bonds is the centre of a cluster of 3 or 4
atoms (``shake3``, ``shake4``); two atoms joined by one constrained bond, neither with another, are a
cluster of 2 (``shake2``); a 3-cluster whose angle (centre in the middle) has a type listed after ``a``
also holds the distance of the angle's outer atoms (``shake3angle``).  The lengths are the bond style's
equilibrium distances (``harmonic``: r0); the angle's 1-3 distance is ``sqrt(b1^2 + b2^2 - 2 b1 b2
cos(theta0))``.  Constrained bonds and angles are taken off the force field (LAMMPS sets their types
negative); the special pairs stay as the bonds made them.  Each constraint removes one degree of
freedom from the temperature (``Fix::dof``: 1, 2, 3 and 3 per cluster).

The step (``velocity Verlet``, ``FixShake::post_force``): after the forces, each cluster's positions one
step ahead without constraints, ``x' = x + dt v + dtfsq f / m``, are corrected by constraint forces
``lambda_c r_c`` along the current bond vectors ``r_c``; the lambdas solve the linearised constraint
equations, iterated with the quadratic terms until no lambda changes by more than the tolerance
(``shake2``: the exact root of the quadratic).  ``fix shake``: in ``post_force`` with ``dtfsq = dt^2``
(``v`` is the half-step velocity).  ``fix rattle``: ``post_force`` removes the velocity components along
the bonds from ``v + dt/2 f/m`` (``FixRattle::vrattle*``), and the position constraint runs after the
final half step (LAMMPS' ``final_integrate`` of the fix; here ``end_step``, before every other fix's
end-of-step hook) with ``dtfsq = dt^2 / 2``.  At each run's set-up (``FixShake::setup``): positions
corrected onto the constraints (``correct_coordinates``), RATTLE's velocities corrected
(``correct_velocities``), then the constraint forces of the first step with ``dtfsq = dt^2 / 2``.

The constraint virial ``sum_c lambda_c r_c r_c`` (per cluster, 6 components, summed in cluster order) is
added to the pressure (``thermo_virial``).

Over MPI ranks (spatial domains, :mod:`pycumd.parallel.domains`): after each neighbour build each rank
keeps the clusters with an atom it owns and maps their atoms to its extended rows (owned, then ghosts;
a member beyond the ghost layer stops the run naming the cluster).  Before each kernel the velocities
and forces it reads (and, once per build, the masses) are sent to the ghost rows
(``DomainNeighborList.forward``); every rank holding a cluster solves it from the same numbers in the
same order, so with the same result, and keeps the corrections of its owned atoms only (no reverse
communication).  The constraint virial is counted by the owner of each cluster's first atom and summed
over the ranks at each step (rank 0 of the owners reports it, as a k-space solver's); the degrees of
freedom are the whole system's clusters' (each rank knows every cluster).  A failed cluster stops every
rank with the same error.  A checkpoint over ranks rebuilds the lists and computes the forces again
(:meth:`~pycumd.simulation.Simulation.start_checkpoint`), without the constraint forces: each atom's
constraint force of the step is kept (by id), added back and stored in the checkpoint, so that the writing
run and a continuation on any number of ranks go on with it (a checkpoint written on one rank holds the
step's forces instead, and continues on one rank only).

Kernels: one Numba function per cluster kind on the CPU, and ``shake.cu`` on the GPU with one thread
per cluster doing the same operations in the same order (each atom belongs to one cluster: no atomics).
The order of every operation is LAMMPS' (the matrix, its cofactor inverse, the quadratic coefficients,
the force sums), so double-precision runs follow LAMMPS' trajectory to rounding.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numba
import numpy as np

from ..contracts import StepHooksBase
from ..forces import min_image
from ..jit_cache import cache_kernel
from ..system import InputError

#: cluster kinds in LAMMPS' order (shake_flag 2, 3, 4, 1)
KINDS = ("shake2", "shake3", "shake4", "shake3angle")
#: atoms of a cluster of each kind (the centre first; shake2: the lower ID first)
ATOMS = {"shake2": 2, "shake3": 3, "shake4": 4, "shake3angle": 3}
#: the constraints of each kind as (p, q) atom positions within the cluster: SHAKE's ``r = x_p - x_q``
SHAKE_PAIRS = {"shake2": ((0, 1),), "shake3": ((0, 1), (0, 2)), "shake4": ((0, 1), (0, 2), (0, 3)),
               "shake3angle": ((0, 1), (0, 2), (1, 2))}
#: RATTLE's orientation of the same constraints (``FixRattle``: ``r01 = x1 - x0``)
RATTLE_PAIRS = {kind: tuple((q, p) for p, q in pairs) for kind, pairs in SHAKE_PAIRS.items()}
#: LAMMPS' shake_flag of each kind
SHAKE_FLAG = {"shake2": 2, "shake3": 3, "shake4": 4, "shake3angle": 1}
#: mass match of the ``m`` selection (LAMMPS MASSDELTA)
MASS_DELTA = 0.1
#: status codes of a cluster after a kernel
OK, NOT_CONVERGED, DIVERGED, SINGULAR, NEGATIVE_DETERMINANT = 0, 1, 2, 3, 4


@dataclass
class Clusters:
    """The constrained clusters of a system, in atom IDs.

    Attributes
    ----------
    atoms : dict kind -> (n, ATOMS[kind]) int64 atom IDs (the centre first)
    lengths : dict kind -> (n, constraints) float64, each constraint's length (length units)
    bond_types : dict kind -> (n, bonds) int64, 0-based bond type of each constrained bond
    angle_types : (n_shake3angle,) int64, 0-based angle type of each angle cluster
    off : dict bonded kind -> bool mask of the topology's terms taken off the force field
    """

    atoms: dict
    lengths: dict
    bond_types: dict
    angle_types: np.ndarray
    off: dict = field(default_factory=dict)

    def count(self, kind: str) -> int:
        return len(self.atoms[kind])

    @property
    def dof(self) -> int:
        """Degrees of freedom removed (one per constraint; LAMMPS ``FixShake::dof``)."""
        return sum(self.count(k) * len(SHAKE_PAIRS[k]) for k in KINDS)

    def describe(self) -> str:
        return (f"{self.count('shake2')} clusters of 2, {self.count('shake3')} of 3, {self.count('shake4')} of 4, "
                f"{self.count('shake3angle')} frozen angles")


@dataclass(frozen=True)
class ShakeSelection:
    """What LAMMPS' ``b``, ``a``, ``t``, ``m`` arguments select: 1-based bond, angle and atom types, masses."""

    bond_types: tuple = ()
    angle_types: tuple = ()
    atom_types: tuple = ()
    masses: tuple = ()


def find_clusters(topology, ids, types, masses_per_atom, selection: ShakeSelection, what: str = "fix shake") -> Clusters:
    """The clusters of ``topology`` (atom IDs ``ids``, their 0-based ``types`` and masses) that
    ``selection`` constrains, as LAMMPS ``FixShake::find_clusters`` finds them.

    Raises ValueError naming the atoms for a cluster of more than 4 atoms, connected clusters, a type
    outside the declared ones, angle clusters of one type with different bond types, or a style
    without an equilibrium value; warns when nothing is constrained.
    """
    n_bond_types, n_angle_types = topology.n_types["bond"], topology.n_types["angle"]
    n_atom_types = int(max(types.max(initial=-1) + 1, 1))
    for name, values, limit in (("bond", selection.bond_types, n_bond_types),
                                ("angle", selection.angle_types, n_angle_types),
                                ("atom", selection.atom_types, None)):
        for t in values:
            if t < 1 or (limit is not None and t > limit):
                raise ValueError(f"{what}: invalid {name} type {t} (the system has {limit} {name} types)")
    bond_flag = np.zeros(n_bond_types + 1, bool)
    bond_flag[list(selection.bond_types)] = True
    angle_flag = np.zeros(n_angle_types + 1, bool)
    angle_flag[list(selection.angle_types)] = True
    max_id = len(topology.molecule) - 1
    type_of = np.full(max_id + 1, -1, np.int64)
    type_of[ids] = types
    mass_of = np.zeros(max_id + 1)
    mass_of[ids] = masses_per_atom
    type_flag = np.zeros(max(n_atom_types, int(max(selection.atom_types, default=0))) + 1, bool)
    type_flag[list(selection.atom_types)] = True

    def mass_match(a: int) -> bool:
        return any(abs(m - mass_of[a]) <= MASS_DELTA for m in selection.masses)

    # the 1-2 partners of each atom in LAMMPS' special-list order: the bonds it stores (it is their
    # first atom, file order), then the bonds stored by its partners (by the partner's ID)
    bonds, btypes = topology.terms["bond"], topology.types["bond"]
    partners: dict = {}
    for k, (a, b) in enumerate(bonds.tolist()):
        partners.setdefault(a, []).append((b, k))
    reverse: dict = {}
    for k, (a, b) in enumerate(bonds.tolist()):
        reverse.setdefault(b, []).append((a, k))
    for b, lst in reverse.items():
        lst.sort(key=lambda item: item[0])
        known = {p for p, _ in partners.get(b, [])}
        partners.setdefault(b, []).extend((a, k) for a, k in lst if a not in known)
    shaken: dict = {}
    for a, lst in partners.items():
        chosen = []
        for b, k in lst:
            t = int(btypes[k]) + 1
            if (bond_flag[t] or type_flag[type_of[a] + 1] or type_flag[type_of[b] + 1]
                    or (selection.masses and (mass_match(b) or mass_match(a)))):
                chosen.append((b, k))
        shaken[a] = chosen
    nshake = {a: len(c) for a, c in shaken.items()}
    for a, c in shaken.items():
        if len(c) > 3:
            raise ValueError(f"{what}: shake cluster of more than 4 atoms: atom {a} has {len(c)} constrained bonds "
                             f"(to atoms {' '.join(str(b) for b, _ in c)}); constrain fewer bond types")
    for a, c in shaken.items():
        if len(c) > 1:
            for b, _ in c:
                if nshake.get(b, 0) > 1:
                    raise ValueError(f"{what}: shake clusters are connected: atoms {a} and {b} are both centres of "
                                     f"clusters and constrained to each other")
    # angles by centre and outer pair
    angle_of: dict = {}
    for k, (a1, a2, a3) in enumerate(topology.terms["angle"].tolist()):
        angle_of.setdefault((a2, min(a1, a3), max(a1, a3)), k)
    out = {kind: [] for kind in KINDS}
    bond_off = np.zeros(len(bonds), bool)
    angle_off = np.zeros(topology.count("angle"), bool)
    angle_clusters = []
    for a in sorted(shaken):
        c = shaken[a]
        if len(c) == 1:
            b, k = c[0]
            if nshake.get(b, 0) == 1 and a < b:
                out["shake2"].append(([a, b], [k]))
                bond_off[k] = True
        elif len(c) > 1:
            members = [a] + [b for b, _ in c]
            kinds = [k for _, k in c]
            bond_off[kinds] = True
            kind = "shake3" if len(c) == 2 else "shake4"
            if len(c) == 2:
                angle = angle_of.get((a, min(members[1], members[2]), max(members[1], members[2])))
                if angle is not None and angle_flag[int(topology.types["angle"][angle]) + 1]:
                    kind = "shake3angle"
                    angle_off[angle] = True
                    angle_clusters.append(angle)
            out[kind].append((members, kinds))
    if not any(out.values()):
        warnings.warn(f"{what}: the selection (b {list(selection.bond_types)}, a {list(selection.angle_types)}, "
                      f"t {list(selection.atom_types)}, m {list(selection.masses)}) constrains no bonds: no SHAKE "
                      f"clusters", stacklevel=3)
    bond_style = topology.styles.get("bond")
    if any(out.values()) and bond_style is None:
        raise ValueError(f"{what}: a bond style must be defined for SHAKE (the constraint lengths are its r0)")

    def bond_length(t0: int) -> float:
        return float(bond_style.equilibrium(t0))

    atoms, lengths, bond_types = {}, {}, {}
    for kind in KINDS:
        rows = out[kind]
        k = ATOMS[kind]
        atoms[kind] = np.asarray([r[0] for r in rows], np.int64).reshape(-1, k)
        n_bonds = len(SHAKE_PAIRS[kind]) if kind != "shake3angle" else 2
        bond_types[kind] = np.asarray([[int(btypes[b]) for b in r[1]] for r in rows], np.int64).reshape(-1, n_bonds)
        lengths[kind] = np.asarray([[bond_length(t) for t in bt] for bt in bond_types[kind]],
                                   np.float64).reshape(-1, n_bonds)
    angle_types = np.asarray([int(topology.types["angle"][k]) for k in angle_clusters], np.int64)
    if len(angle_clusters):
        angle_style = topology.styles.get("angle")
        if angle_style is None:
            raise ValueError(f"{what}: an angle style must be defined for SHAKE angle constraints")
        distance = {}
        for t in sorted(set(angle_types.tolist())):
            pairs = {(int(min(bt)), int(max(bt))) for bt, at in zip(bond_types["shake3angle"], angle_types) if at == t}
            if len(pairs) > 1:
                raise ValueError(f"{what}: shake angles of angle type {t + 1} have different bond types {sorted(pairs)}")
            t1, t2 = pairs.pop()
            b1, b2 = bond_length(t1), bond_length(t2)
            distance[t] = math.sqrt(b1 * b1 + b2 * b2 - 2.0 * b1 * b2 * math.cos(angle_style.equilibrium(t)))
        third = np.asarray([distance[t] for t in angle_types.tolist()]).reshape(-1, 1)
        lengths["shake3angle"] = np.concatenate([lengths["shake3angle"], third], axis=1)
    else:
        lengths["shake3angle"] = np.zeros((0, 3))
    return Clusters(atoms, lengths, bond_types, angle_types, {"bond": bond_off, "angle": angle_off})


# -- the CPU kernels -------------------------------------------------------------------------------
@numba.njit(inline="always")
def _dot(a, i, b, j):
    return a[i, 0] * b[j, 0] + a[i, 1] * b[j, 1] + a[i, 2] * b[j, 2]


@numba.njit(inline="always")
def _coef(P, Q, c, d, im):
    """d(r_c)/d(lambda_d r_d) per unit: the inverse masses shared by constraints c and d, signed."""
    v = 0.0
    if P[c] == P[d]:
        v += im[P[c]]
    if P[c] == Q[d]:
        v -= im[P[c]]
    if Q[c] == P[d]:
        v -= im[Q[c]]
    if Q[c] == Q[d]:
        v += im[Q[c]]
    return v


@numba.njit(inline="always")
def _inverse(a, ai, nc):
    """The cofactor inverse of the nc x nc matrix a (nc 2 or 3) into ai, as LAMMPS; returns the determinant."""
    if nc == 2:
        det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
        if det == 0.0:
            return det
        di = 1.0 / det
        ai[0, 0] = a[1, 1] * di
        ai[0, 1] = -a[0, 1] * di
        ai[1, 0] = -a[1, 0] * di
        ai[1, 1] = a[0, 0] * di
        return det
    det = (a[0, 0] * a[1, 1] * a[2, 2] + a[0, 1] * a[1, 2] * a[2, 0] + a[0, 2] * a[1, 0] * a[2, 1]
           - a[0, 0] * a[1, 2] * a[2, 1] - a[0, 1] * a[1, 0] * a[2, 2] - a[0, 2] * a[1, 1] * a[2, 0])
    if det == 0.0:
        return det
    di = 1.0 / det
    ai[0, 0] = di * (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1])
    ai[0, 1] = -di * (a[0, 1] * a[2, 2] - a[0, 2] * a[2, 1])
    ai[0, 2] = di * (a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1])
    ai[1, 0] = -di * (a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
    ai[1, 1] = di * (a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0])
    ai[1, 2] = -di * (a[0, 0] * a[1, 2] - a[0, 2] * a[1, 0])
    ai[2, 0] = di * (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0])
    ai[2, 1] = -di * (a[0, 0] * a[2, 1] - a[0, 1] * a[2, 0])
    ai[2, 2] = di * (a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0])
    return det


_VIRIAL_AXES = np.array([[0, 0], [1, 1], [2, 2], [0, 1], [0, 2], [1, 2]], np.int64)
_CROSS = np.array([[0, 1], [0, 2], [1, 2]], np.int64)     # LAMMPS' order of the quadratic cross terms


def _make_shake_kernel(kind: str):
    """The Numba kernel of ``kind``: ``(x, v, f, mass, row_of, atoms, lengths, L, invL, dtv, dtfsq, tol,
    max_iter, virial, status)``; adds the constraint forces to ``f``, writes each cluster's virial
    (n, 6) and status (n,)."""
    pairs = SHAKE_PAIRS[kind]
    na, nc = ATOMS[kind], len(pairs)
    P = np.array([p for p, _ in pairs], np.int64)
    Q = np.array([q for _, q in pairs], np.int64)
    n_cross = 1 if nc == 2 else 3
    axes, cross = _VIRIAL_AXES, _CROSS

    @numba.njit(cache=False)
    def kernel(x, v, f, mass, row_of, atoms, lengths, L, invL, dtv, dtfsq, tol, max_iter, virial, status):
        row = np.empty(na, np.int64)
        im = np.empty(na)
        xs = np.empty((na, 3))
        r = np.empty((nc, 3))
        s = np.empty((nc, 3))
        coef = np.empty((nc, nc))
        a = np.empty((nc, nc))
        ai = np.empty((nc, nc))
        qd = np.empty((nc, nc))
        qx = np.empty((nc, 3))
        lam = np.empty(nc)
        lnew = np.empty(nc)
        b = np.empty(nc)
        for m in range(atoms.shape[0]):
            for k in range(na):
                i = row_of[atoms[m, k]]
                row[k] = i
                im[k] = 1.0 / mass[i]
                dtfmsq = dtfsq / mass[i]
                for d in range(3):
                    xs[k, d] = x[i, d] + dtv * v[i, d] + dtfmsq * f[i, d]
            for c in range(nc):
                ip, iq = row[P[c]], row[Q[c]]
                for d in range(3):
                    r[c, d] = min_image(x[ip, d] - x[iq, d], L[d], invL[d])
                    s[c, d] = min_image(xs[P[c], d] - xs[Q[c], d], L[d], invL[d])
            status[m] = OK
            if nc == 1:         # shake2: the exact root of the quadratic
                r01sq = _dot(r, 0, r, 0)
                s01sq = _dot(s, 0, s, 0)
                mm = im[0] + im[1]
                qa = mm * mm * r01sq
                qb = 2.0 * mm * _dot(s, 0, r, 0)
                qc = s01sq - lengths[m, 0] * lengths[m, 0]
                det = qb * qb - 4.0 * qa * qc
                if det < 0.0:
                    status[m] = NEGATIVE_DETERMINANT
                    det = 0.0
                l1 = (-qb + math.sqrt(det)) / (2.0 * qa)
                l2 = (-qb - math.sqrt(det)) / (2.0 * qa)
                lam[0] = l1 if abs(l1) <= abs(l2) else l2
            else:
                for c in range(nc):
                    for d in range(nc):
                        coef[c, d] = _coef(P, Q, c, d, im)
                for c in range(nc):
                    for d in range(nc):
                        a[c, d] = 2.0 * coef[c, d] * _dot(s, c, r, d)
                if _inverse(a, ai, nc) == 0.0:
                    status[m] = SINGULAR
                    continue
                for c in range(nc):
                    for d in range(nc):
                        qd[c, d] = coef[c, d] * coef[c, d] * _dot(r, d, r, d)
                    for k in range(n_cross):
                        d, e = cross[k, 0], cross[k, 1]
                        qx[c, k] = 2.0 * coef[c, d] * coef[c, e] * _dot(r, d, r, e)
                for c in range(nc):
                    lam[c] = 0.0
                niter = 0
                done = False
                while not done and niter < max_iter:
                    for c in range(nc):
                        quad = qd[c, 0] * lam[0] * lam[0]
                        for d in range(1, nc):
                            quad += qd[c, d] * lam[d] * lam[d]
                        for k in range(n_cross):
                            quad += qx[c, k] * lam[cross[k, 0]] * lam[cross[k, 1]]
                        b[c] = lengths[m, c] * lengths[m, c] - _dot(s, c, s, c) - quad
                    for c in range(nc):
                        acc = ai[c, 0] * b[0]
                        for d in range(1, nc):
                            acc += ai[c, d] * b[d]
                        lnew[c] = acc
                    done = True
                    for c in range(nc):
                        if abs(lnew[c] - lam[c]) > tol:
                            done = False
                        lam[c] = lnew[c]
                    for c in range(nc):
                        if abs(lam[c]) > 1e150:
                            done = True
                            status[m] = DIVERGED
                    niter += 1
                if not done:
                    status[m] = NOT_CONVERGED
            for c in range(nc):
                lam[c] = lam[c] / dtfsq
            for k in range(na):
                i = row[k]
                for d in range(3):
                    acc = 0.0
                    for c in range(nc):
                        if P[c] == k:
                            acc += lam[c] * r[c, d]
                        elif Q[c] == k:
                            acc -= lam[c] * r[c, d]
                    f[i, d] += acc
            for j in range(6):
                p, q = axes[j, 0], axes[j, 1]
                acc = lam[0] * r[0, p] * r[0, q]
                for c in range(1, nc):
                    acc += lam[c] * r[c, p] * r[c, q]
                virial[m, j] = acc

    return kernel


def _make_rattle_kernel(kind: str):
    """The Numba kernel of RATTLE's velocity constraints of ``kind``: ``(x, v, f, mass, row_of, atoms, L,
    invL, dtfv, status)``: ``vp = v + dtfv f / m``; ``v`` corrected so that ``vp`` has no component along
    the constrained bonds (``FixRattle::vrattle*``)."""
    pairs = RATTLE_PAIRS[kind]
    na, nc = ATOMS[kind], len(pairs)
    P = np.array([p for p, _ in pairs], np.int64)
    Q = np.array([q for _, q in pairs], np.int64)

    @numba.njit(cache=False)
    def kernel(x, v, f, mass, row_of, atoms, L, invL, dtfv, status):
        row = np.empty(na, np.int64)
        im = np.empty(na)
        vp = np.empty((na, 3))
        r = np.empty((nc, 3))
        w = np.empty((nc, 3))
        a = np.empty((nc, nc))
        ai = np.empty((nc, nc))
        cc = np.empty(nc)
        lam = np.empty(nc)
        for m in range(atoms.shape[0]):
            for k in range(na):
                i = row_of[atoms[m, k]]
                row[k] = i
                im[k] = 1.0 / mass[i]
                dtfvinvm = dtfv / mass[i]
                for d in range(3):
                    vp[k, d] = v[i, d] + dtfvinvm * f[i, d]
            for c in range(nc):
                ip, iq = row[P[c]], row[Q[c]]
                for d in range(3):
                    r[c, d] = min_image(x[ip, d] - x[iq, d], L[d], invL[d])
                    w[c, d] = vp[P[c], d] - vp[Q[c], d]
            status[m] = OK
            if nc == 1:
                l01 = -_dot(r, 0, w, 0) / (_dot(r, 0, r, 0) * (im[0] + im[1]))
                i0, i1 = row[0], row[1]
                for d in range(3):
                    v[i0, d] -= im[0] * l01 * r[0, d]
                for d in range(3):
                    v[i1, d] -= im[1] * (-l01) * r[0, d]
                continue
            for c in range(nc):
                for d in range(nc):
                    a[c, d] = _coef(P, Q, c, d, im) * _dot(r, c, r, d)
                cc[c] = -_dot(w, c, r, c)
            if nc == 2:
                det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
                if det == 0.0:
                    status[m] = SINGULAR
                    continue
                di = 1.0 / det
                lam[0] = di * (a[1, 1] * cc[0] - a[0, 1] * cc[1])
                lam[1] = di * (-a[1, 0] * cc[0] + a[0, 0] * cc[1])
            else:
                if _inverse(a, ai, nc) == 0.0:
                    status[m] = SINGULAR
                    continue
                for c in range(nc):
                    acc = 0.0
                    for d in range(nc):
                        acc += ai[c, d] * cc[d]
                    lam[c] = acc
            for k in range(na):
                i = row[k]
                for d in range(3):
                    acc = 0.0
                    for c in range(nc):
                        if Q[c] == k:
                            acc += lam[c] * r[c, d]
                        elif P[c] == k:
                            acc -= lam[c] * r[c, d]
                    v[i, d] -= im[k] * acc

    return kernel


_CPU_KERNELS: dict = {}


def cpu_kernel(which: str, kind: str):
    """The Numba kernel ``which`` ("shake" or "rattle") of cluster ``kind`` (compiled once per process)."""
    key = (which, kind)
    if key not in _CPU_KERNELS:
        kernel = (_make_shake_kernel if which == "shake" else _make_rattle_kernel)(kind)
        _CPU_KERNELS[key] = cache_kernel(kernel, ("integrators.shake", which, kind))
    return _CPU_KERNELS[key]


# -- the fix ------------------------------------------------------------------------------------------
class Shake(StepHooksBase):
    """LAMMPS ``fix ID all shake TOL ITER N b ... a ... t ... m ...`` (``rattle=True``: ``fix rattle``).

    Parameters
    ----------
    tolerance : float
        Convergence of the iteration: no Lagrange multiplier changes by more than this (LAMMPS' test, on
        the multipliers before their division by ``dtfsq``: mass units).
    max_iter : int
        Iterations at most; a cluster not converged by then stops the run
        (:class:`~pycumd.bookkeeping.SimulationError` naming the step and the atoms; LAMMPS goes on silently).
    print_every : int
        Print the bond (and angle) statistics of the constrained clusters every N steps (0: never).
    selection : ShakeSelection
    rattle : bool
        ``fix rattle``: also the velocity constraints.
    """

    #: over spatial domains each rank solves the clusters with an atom it owns (see the module docstring)
    runs_over_ranks = True
    runs_in_composite = False

    def __init__(self, tolerance: float, max_iter: int, print_every: int, selection: ShakeSelection,
                 rattle: bool = False):
        self.name = "rattle" if rattle else "shake"
        if not (tolerance > 0 and math.isfinite(tolerance)):
            raise ValueError(f"fix {self.name}: tolerance must be positive, got {tolerance}")
        if max_iter < 1:
            raise ValueError(f"fix {self.name}: the iteration count must be >= 1, got {max_iter}")
        if print_every < 0:
            raise ValueError(f"fix {self.name}: the output interval must be >= 0, got {print_every}")
        if not (selection.bond_types or selection.angle_types or selection.atom_types or selection.masses):
            raise ValueError(f"fix {self.name} selects nothing: give b, a, t or m with types or masses")
        self.tolerance, self.max_iter, self.print_every = float(tolerance), int(max_iter), int(print_every)
        self.selection, self.rattle = selection, bool(rattle)
        self.clusters: Clusters | None = None
        self._bound = None
        self._sim = None
        self._virial = None
        self._restored_virial = None

    # -- the contract ---------------------------------------------------------------------------
    def off_terms(self, system) -> dict:
        if system.topology is None:
            raise ValueError(f"fix {self.name} needs a molecular system (atom style bond, angle, molecular or "
                             f"full, with bonds)")
        self.clusters = find_clusters(system.topology, system.ids, system.types, system.per_atom_mass,
                                      self.selection, f"fix {self.name}")
        return self.clusters.off

    @property
    def constrained_dof(self) -> int:
        return 0 if self.clusters is None else self.clusters.dof

    def constraint_virial(self):
        """The constraint virial of the last step ((6,) energy units).  Over MPI ranks: the whole system's on
        rank 0 of the owners and zeros on the others (summed over the ranks it is counted once, as a k-space
        solver's :meth:`~pycumd.contracts.ForceEvaluator.global_energy_virial`)."""
        if self._virial is None:
            return None
        b = self._bound
        if b.decomposition is not None:
            return b.total_virial.copy() if b.decomposition.owners.rank == 0 else np.zeros(6)
        if self._restored_virial is not None:     # continued on one rank from a checkpoint of several
            return self._restored_virial.copy()
        out = np.zeros(6)
        for kind in KINDS:
            if self.clusters.count(kind):
                out += np.asarray(b.backend.to_host(self._virial[kind]), np.float64).sum(axis=0)
        return out

    def bind(self, sim) -> None:
        if sim.state.lo is not None:
            raise NotImplementedError(f"fix {self.name} is not implemented in composite precision")
        if self.clusters is None:
            raise RuntimeError(f"fix {self.name}: clusters not found (off_terms was not called by the components)")
        self._bound = _Bound(sim, self.clusters)
        self._sim = sim
        self._virial = None
        self._restored_virial = None

    def setup(self, sim) -> None:
        """``FixShake::setup``: correct the positions onto the constraints, RATTLE's velocities, then the
        constraint forces of the first step (``dtfsq = dt^2 / 2``)."""
        if self._bound is None:           # a simulation set up without binding its fixes (run ... pre no)
            self.bind(sim)
        if self.print_every:              # LAMMPS prints them before the set-up's corrections
            self._stats(sim)
        b = self._bound
        dt, ftm2v = sim.integrator.dt, sim.units.ftm2v
        half = 0.5 * dt * dt * ftm2v
        s = sim.state
        xp = sim.backend.xp
        zeros_v = xp.zeros_like(s.velocities)
        fc = xp.zeros_like(s.forces)
        self._shake(sim, zeros_v, fc, dt, half, "setup")
        x = s.positions
        m = s.per_atom_mass.astype(np.float64)
        x[:, :3] = (x[:, :3] + (half / m)[:, None] * fc).astype(x.dtype)
        if b.decomposition is not None:   # the ghosts' positions corrected too (LAMMPS: a forward communication)
            sim.neighbors.refresh_ghosts(s)
        if self.rattle:
            b.rattle(sim, 0.0)
        self._virial = self._shake(sim, s.velocities, s.forces, dt, half, "setup")

    def post_force(self, sim) -> None:
        if self.print_every and sim.step % self.print_every == 0:
            self._stats(sim)
        dt, ftm2v = sim.integrator.dt, sim.units.ftm2v
        if self.rattle:
            self._bound.rattle(sim, 0.5 * dt * ftm2v)
        else:
            self._virial = self._shake(sim, sim.state.velocities, sim.state.forces, dt, dt * dt * ftm2v, "post_force")

    def end_step(self, sim) -> None:
        if self.rattle:
            dt = sim.integrator.dt
            self._virial = self._shake(sim, sim.state.velocities, sim.state.forces, dt,
                                       0.5 * dt * dt * sim.units.ftm2v, "final_integrate")

    def checkpoint_state(self) -> dict:
        """What a continued run needs besides the state's arrays: the constraint virial of the last step (per
        cluster kind, (clusters, 6) as lists; the pressure and a barostat read it before the next SHAKE) and
        whether the negative-determinant warning was given.  The clusters come again from the checkpoint's
        topology (:meth:`off_terms`), and the step's constraint forces are in the stored forces: SHAKE keeps
        no unconstrained positions between steps (it works from x, v and f at each ``post_force``).

        Over MPI ranks (a collective call, after :meth:`~pycumd.simulation.Simulation.start_checkpoint`, whose
        rebuild computes the forces again without the constraint forces): each atom's constraint force of the last
        step, gathered by id from every rank, is added to the forces again (the writing run goes on with them, as
        the continuation does) and stored, with the whole system's constraint virial."""
        if self._bound is not None and self._bound.decomposition is not None:
            return self._domain_checkpoint_state()
        virial = None
        if self._virial is not None:
            be = self._bound.backend
            virial = {kind: np.asarray(be.to_host(self._virial[kind]), np.float64).tolist()
                      for kind in self._bound.kinds}
        return {"virial": virial, "warned": bool(self._bound.warned) if self._bound is not None else False}

    def restore_checkpoint_state(self, state: dict) -> None:
        """Put :meth:`checkpoint_state` back (after :meth:`bind`); a checkpoint of other clusters is refused."""
        b = self._bound
        if b.decomposition is not None or "constraint_forces" in state:
            self._restore_domain_checkpoint_state(state)
            return
        b.warned = bool(state.get("warned", False))
        if state.get("virial") is None:
            self._virial = None
            return
        for kind, rows in state["virial"].items():
            rows = np.asarray(rows, np.float64).reshape(-1, 6)
            if kind not in b.virial or rows.shape != tuple(b.virial[kind].shape):
                raise ValueError(f"fix {self.name}: the checkpoint's {kind} clusters ({len(rows)}) are not this run's "
                                 f"({self.clusters.count(kind) if kind in KINDS else 0}): another selection or topology")
            b.virial[kind][...] = b.backend.xp.asarray(rows)
        self._virial = b.virial

    def describe(self) -> str:
        sel = self.selection
        words = [f"{k} {' '.join(map(str, v))}" for k, v in (("b", sel.bond_types), ("a", sel.angle_types),
                                                              ("t", sel.atom_types), ("m", sel.masses)) if v]
        text = f"{self.name} {self.tolerance:g} {self.max_iter} {self.print_every} {' '.join(words)}"
        return text + (f" ({self.clusters.describe()})" if self.clusters is not None else "")

    def _domain_checkpoint_state(self) -> dict:
        """:meth:`checkpoint_state` over MPI ranks (collective)."""
        b, sim = self._bound, self._sim
        ids, forces = b.host_constraint_forces()
        parts = b.decomposition.comm.allgather((ids, forces))
        ids = np.concatenate([p[0] for p in parts])
        forces = np.concatenate([p[1] for p in parts]).reshape(-1, 3)
        order = np.argsort(ids, kind="stable")
        ids, forces = ids[order], forces[order]
        if b.forces_recomputed(sim):          # the checkpoint's rebuild computed the forces again
            b.add_constraint_forces(sim, ids, forces)
        return {"virial": None, "warned": bool(b.warned),
                "virial_total": None if self._virial is None else [float(w) for w in b.total_virial],
                "constraint_forces": {"ids": ids.tolist(), "forces": forces.tolist()}}

    def _restore_domain_checkpoint_state(self, state: dict) -> None:
        """:meth:`restore_checkpoint_state` of a checkpoint written over MPI ranks (continued on any number of
        ranks; the continuation's rebuild computed the forces without the constraint forces: they are added
        again by atom id), or refused for one written on one rank and continued over ranks."""
        b, sim = self._bound, self._sim
        if "constraint_forces" not in state:
            raise NotImplementedError(f"fix {self.name}: a checkpoint written on one rank does not continue over MPI "
                                      f"ranks yet (it holds the step's forces, not each atom's constraint force); "
                                      f"continue it on one rank")
        b.warned = bool(state.get("warned", False))
        stored = state["constraint_forces"]
        b.add_constraint_forces(sim, np.asarray(stored["ids"], np.int64),
                                np.asarray(stored["forces"], np.float64).reshape(-1, 3))
        total = state.get("virial_total")
        if total is None:
            self._virial = None
            return
        self._virial = b.virial
        if b.decomposition is not None:
            b.total_virial = np.asarray(total, np.float64)
        else:
            self._restored_virial = np.asarray(total, np.float64)

    # -- the work -----------------------------------------------------------------------------------
    def _shake(self, sim, v, f, dtv, dtfsq, where: str) -> dict:
        b = self._bound
        self._restored_virial = None
        virial = b.shake(sim, v, f, dtv, dtfsq, self.tolerance, self.max_iter)
        if b.decomposition is None:
            self._check(sim, where)
            return virial
        # over ranks: this rank's share of the virial (the clusters whose first atom it owns) and its failed
        # clusters (and RATTLE's velocity constraints' before them), summed over the ranks in one reduction; a
        # failure anywhere stops every rank with one message
        local = np.zeros(7)
        for kind in b.kinds:
            if len(b.index[kind]):
                rows = np.asarray(b.backend.to_host(b.virial[kind]), np.float64)[b.counted[kind]]
                local[:6] += rows.sum(axis=0)
        status_all = b.backend.to_host(b.status_all)[:b.n_computed]
        local[6] = np.count_nonzero((status_all != OK) & (status_all != NEGATIVE_DETERMINANT))
        local[6] += b.rattle_problem is not None
        total = b.decomposition.owners.sum(local)
        if total[6]:
            message = b.rattle_problem or self._problem(sim, where)
            messages = [m for m in b.decomposition.comm.allgather(message) if m is not None]
            from ..bookkeeping import SimulationError

            raise SimulationError(messages[0])
        self._problem(sim, where)         # the negative-determinant warning, on the ranks that meet it
        b.total_virial = np.asarray(total[:6], np.float64)
        return virial

    def _check(self, sim, where: str) -> None:
        message = self._problem(sim, where)
        if message is not None:
            from ..bookkeeping import SimulationError

            raise SimulationError(message)

    def _problem(self, sim, where: str):
        """The error of the clusters of the last kernels (None: none), warning once for a negative
        determinant."""
        b = self._bound
        status_all = b.backend.to_host(b.status_all)
        if not status_all.any():
            return None
        start = 0
        for kind in b.kinds:
            count = b.computed(kind)
            status = status_all[start:start + count]
            start += count
            worst = int(status.max(initial=0))
            if worst == OK:
                continue
            m = int(np.argmax(status == worst)) if worst != NEGATIVE_DETERMINANT else int(np.argmax(status > 0))
            atoms = " ".join(str(a) for a in self.clusters.atoms[kind][b.cluster_index(kind, m)])
            if worst == NEGATIVE_DETERMINANT:
                if not b.warned:
                    warnings.warn(f"fix {self.name}: Shake determinant < 0.0 at step {sim.step} (cluster of atoms "
                                  f"{atoms}); its constraint is solved approximately, as LAMMPS does", stacklevel=3)
                    b.warned = True
                continue
            problem = {NOT_CONVERGED: f"SHAKE did not converge in {self.max_iter} iterations (tolerance "
                                      f"{self.tolerance:g})",
                       DIVERGED: "SHAKE diverged (a Lagrange multiplier above 1e150)",
                       SINGULAR: "Shake determinant = 0.0"}[worst]
            return (f"fix {self.name}: {problem} at step {sim.step} ({where}) for the {kind} cluster of atoms {atoms}; "
                    f"a smaller time step, a better-relaxed start or more iterations may help")
        return None

    def _stats(self, sim) -> None:
        """LAMMPS ``FixShake::stats``: per bond (and angle) type the average length, its spread and count.
        Over MPI ranks every atom's position is gathered (collective) and rank 0 prints."""
        s, be = sim.state, sim.backend
        ids = be.to_host(s.ids)
        x = np.asarray(s.host_positions(be), np.float64)[:, :3]
        d = sim.decomposition
        if d is not None:
            parts = d.comm.allgather((np.asarray(ids, np.int64), x))
            if d.comm.rank != 0:
                return
            ids = np.concatenate([p[0] for p in parts])
            x = np.concatenate([p[1] for p in parts])
        row = np.full(int(ids.max()) + 1, -1, np.int64)
        row[ids] = np.arange(len(ids))
        L = np.asarray(s.box_lengths, np.float64)
        stats_b: dict = {}
        stats_a: dict = {}
        for kind in KINDS:
            atoms = self.clusters.atoms[kind]
            if not len(atoms):
                continue
            for c in range(atoms.shape[1] - 1):
                d = x[row[atoms[:, 0]]] - x[row[atoms[:, c + 1]]]
                d -= L * np.rint(d / L)
                for t, r in zip(self.clusters.bond_types[kind][:, c], np.sqrt((d * d).sum(axis=1))):
                    stats_b.setdefault(int(t) + 1, []).append(r)
            if kind == "shake3angle":        # the law of cosines of the three distances, as LAMMPS
                r = []
                for p, q in ((0, 1), (0, 2), (1, 2)):
                    d = x[row[atoms[:, p]]] - x[row[atoms[:, q]]]
                    d -= L * np.rint(d / L)
                    r.append(np.sqrt((d * d).sum(axis=1)))
                angle = np.arccos((r[0] * r[0] + r[1] * r[1] - r[2] * r[2]) / (2.0 * r[0] * r[1])) * (180.0 / math.pi)
                for t, a in zip(self.clusters.angle_types, angle):
                    stats_a.setdefault(int(t) + 1, []).append(a)
        width = int(math.log10(max(1, sim.topology.n_types["bond"] + 1, sim.topology.n_types["angle"] + 1))) + 2
        lines = [f"{self.name.upper()} stats (type/ave/delta/count) on step {sim.step}"]
        lines += [f"Bond:  {t:>{width}d}   {np.mean(v):<9.6g} {np.ptp(v):<11.6g} {len(v):>8d}"
                  for t, v in sorted(stats_b.items())]
        lines += [f"Angle: {t:>{width}d}   {np.mean(v):<9.6g} {np.ptp(v):<11.6g} {len(v):>8d}"
                  for t, v in sorted(stats_a.items())]
        print("\n".join(lines))


class _Bound:
    """A :class:`Shake`'s clusters on one simulation's backend: the ID -> row map, the kernels, the
    per-cluster virial and status arrays.

    On one rank every cluster is computed, reading the state's rows.  Over spatial domains
    (``sim.decomposition`` set) the clusters computed are those with an owned atom (:meth:`follow_domain`,
    after each build), reading the extended rows (owned, then ghosts) of the domain's neighbour list, whose
    ghost rows get the velocities and forces the kernels read by forward communication."""

    def __init__(self, sim, clusters: Clusters):
        self.backend = be = sim.backend
        xp = be.xp
        self.clusters = clusters
        self.kinds = [k for k in KINDS if clusters.count(k)]
        self.all_atoms = {k: xp.asarray(clusters.atoms[k]) for k in self.kinds}
        self.all_lengths = {k: xp.asarray(clusters.lengths[k]) for k in self.kinds}
        #: the clusters computed here, by kind: all of them on one rank; over domains those with an owned atom
        self.atoms, self.lengths = dict(self.all_atoms), dict(self.all_lengths)
        #: spatial domains: the decomposition; per kind the global indices of the computed clusters (host
        #: int64) and which of them this rank counts in the virial (host bool: its first atom owned)
        self.decomposition = sim.decomposition
        self.index = self.counted = None
        #: spatial domains: the whole system's constraint virial of the last step ((6,), summed over the ranks)
        self.total_virial = np.zeros(6)
        self._mapped = None
        self.mass_rows = None
        #: spatial domains: the error of the last velocity constraints on this rank (None: none), raised on every
        #: rank by the position constraints that always follow them (:meth:`Shake._shake`)
        self.rattle_problem = None
        #: spatial domains: (ids, forces) of this rank's owned atoms at the last constraint step (backend arrays,
        #: (n,) and (n, 3)): the constraint forces a checkpoint's rebuild takes off and adds again by id
        self.constraint_forces = None
        self._forces_key = None           # (neighbour list, builds) when they were last in the state's forces
        self._allocate()
        if self.decomposition is None:
            max_id = int(be.to_host(sim.state.ids).max())
        else:
            neighbors = sim.neighbors
            if not (hasattr(neighbors, "forward") and hasattr(neighbors, "extended_ids")):
                raise NotImplementedError(f"fix shake over MPI ranks runs on spatial domains (the neighbour list), not "
                                          f"on {self.decomposition.kind}")
            max_id = len(sim.topology.molecule) - 1       # every atom id of the whole system
        self.row_of = xp.full(max_id + 1, -1, np.int32 if be.is_gpu else np.int64)
        self.warned = False
        if be.is_gpu:
            precision = sim.precision
            defines = {"real_t": _C_TYPE[np.dtype(precision.state_dtype).name],
                       "accum_t": _C_TYPE[np.dtype(precision.accum_dtype).name]}
            self._module = be.kernel_module("integrators/shake.cu", defines, options=precision.cuda_options)

    def _allocate(self) -> None:
        """The virial (n, 6) and status (n,) arrays of the computed clusters; every kind's status in one
        array (one read per check), each kind a view of its part."""
        xp = self.backend.xp
        counts = {k: len(self.atoms[k]) for k in self.kinds}
        self.n_computed = sum(counts.values())
        self.virial = {k: xp.zeros((counts[k], 6)) for k in self.kinds}
        self.status_all = xp.zeros(max(self.n_computed, 1), np.int32)
        self.status, start = {}, 0
        for k in self.kinds:
            self.status[k] = self.status_all[start:start + counts[k]]
            start += counts[k]

    def computed(self, kind: str) -> int:
        """How many clusters of ``kind`` the kernels compute here."""
        return len(self.atoms[kind])

    def cluster_index(self, kind: str, m: int) -> int:
        """The index in :class:`Clusters` of the ``m``-th computed cluster of ``kind``."""
        return m if self.index is None else int(self.index[kind][m])

    def follow_domain(self, sim) -> None:
        """Spatial domains, after each build (a no-op until the next): map the atom ids to the extended
        rows (the owned row where an atom is also a ghost), keep the clusters with an owned atom, and send
        the masses to the ghost rows.  A kept cluster with an atom beyond the ghost layer stops every rank
        with an error naming it (one flag all-reduce per build)."""
        nl = sim.neighbors
        key = (id(nl), nl.n_builds)
        if key == self._mapped:
            return
        be, xp = self.backend, self.backend.xp
        ids, n = nl.extended_ids, sim.state.n_atoms
        self.row_of.fill(-1)
        self.row_of[ids[n:]] = xp.arange(n, len(ids), dtype=self.row_of.dtype)
        self.row_of[ids[:n]] = xp.arange(n, dtype=self.row_of.dtype)
        self.index, self.counted = {}, {}
        problem = None
        for k in self.kinds:
            rows = self.row_of[self.all_atoms[k]]
            present = rows >= 0
            owned = present & (rows < n)
            touches = owned.any(axis=1)
            incomplete = touches & ~present.all(axis=1)
            if problem is None and bool(incomplete.any()):
                m = int(xp.argmax(incomplete))
                atoms = " ".join(str(int(a)) for a in self.clusters.atoms[k][m])
                problem = (f"fix shake: the {k} cluster of atoms {atoms} reaches beyond the ghost layer of a domain "
                           f"(rank {self.decomposition.comm.rank}): every atom of a cluster must lie within the "
                           f"cutoff plus skin of its owned atoms; use fewer MPI ranks, or a longer cutoff or skin")
            which = xp.nonzero(touches)[0]
            self.index[k] = np.asarray(be.to_host(which), np.int64)
            self.atoms[k] = self.all_atoms[k][which]
            self.lengths[k] = self.all_lengths[k][which]
            self.counted[k] = np.asarray(be.to_host(owned[which, 0]), bool)
        comm = self.decomposition.comm
        if comm.any(problem is not None):     # every rank stops with the message of the lowest rank that met it
            raise InputError([p for p in comm.allgather(problem) if p is not None][0])
        self._allocate()
        self.mass_rows = self.extended(sim, sim.state.per_atom_mass)
        self._mapped = key

    def extended(self, sim, values):
        """``values`` (an owned per-atom array of the state's length) on the extended rows: the owned rows
        copied, the ghost rows sent by their owners (``DomainNeighborList.forward``; collective)."""
        xp, nl = self.backend.xp, sim.neighbors
        out = xp.empty((len(nl.extended_ids),) + tuple(values.shape[1:]), dtype=values.dtype)
        out[:len(values)] = values
        nl.forward(out)
        return out

    def _rows(self, state) -> None:
        if self.backend.is_gpu:
            n = state.n_atoms
            self._module.get_function("shake_row_map")(((n + 255) // 256,), (256,),
                                                       (state.ids, self.row_of, np.int32(n)))
        else:
            self.row_of[state.ids] = np.arange(len(state.ids))

    def _inputs(self, sim, v, f) -> tuple:
        """``(x, v, f, mass)`` the kernels read: the state's rows on one rank, the extended rows over domains."""
        s = sim.state
        if self.decomposition is None:
            self._rows(s)
            return s.positions, v, f, s.per_atom_mass
        self.follow_domain(sim)
        if v.dtype != f.dtype:
            return sim.neighbors.extended, self.extended(sim, v), self.extended(sim, f), self.mass_rows
        # one forward communication for both (their columns side by side), then each contiguous for the kernels
        xp, width = self.backend.xp, v.shape[1]
        both = self.extended(sim, xp.concatenate([v, f], axis=1))
        return (sim.neighbors.extended, xp.ascontiguousarray(both[:, :width]), xp.ascontiguousarray(both[:, width:]),
                self.mass_rows)

    def shake(self, sim, v, f, dtv, dtfsq, tol, max_iter) -> dict:
        s = sim.state
        x, v_rows, f_rows, mass = self._inputs(sim, v, f)
        L = np.asarray(s.box_lengths, np.float64)
        for kind in self.kinds:
            n = self.computed(kind)
            if self.backend.is_gpu:
                if n:
                    self._module.get_function(f"shake_{kind}")(
                        ((n + 127) // 128,), (128,),
                        (x, np.int32(x.shape[1]), v_rows, f_rows, np.int32(f_rows.shape[1]), mass,
                         self.row_of, self.atoms[kind], self.lengths[kind], np.int32(n),
                         *(np.float64(length) for length in L), np.float64(dtv), np.float64(dtfsq),
                         np.float64(tol), np.int32(max_iter), self.virial[kind], self.status[kind]))
            else:
                cpu_kernel("shake", kind)(x, v_rows, f_rows, mass, self.row_of, self.atoms[kind],
                                          self.lengths[kind], L, 1.0 / L, float(dtv), float(dtfsq), float(tol),
                                          int(max_iter), self.virial[kind], self.status[kind])
        if f_rows is not f:             # domains: the owned atoms' corrected forces
            if f is s.forces:           # the step's constraint forces by atom id (for a checkpoint's rebuild)
                self.constraint_forces = (s.ids.copy(), f_rows[:len(f)] - f)
                self._forces_key = (id(sim.neighbors), sim.neighbors.n_builds)
            f[...] = f_rows[:len(f)]
        return self.virial

    def host_constraint_forces(self) -> tuple:
        """:attr:`constraint_forces` on the host: ids (n,) int64 and forces (n, 3) float64 (empty before any)."""
        if self.constraint_forces is None:
            return np.zeros(0, np.int64), np.zeros((0, 3))
        ids, forces = self.constraint_forces
        return (np.asarray(self.backend.to_host(ids), np.int64),
                np.asarray(self.backend.to_host(forces), np.float64).reshape(-1, 3))

    def forces_recomputed(self, sim) -> bool:
        """Whether the lists were built (and the forces computed) again since the last constraint step."""
        nl = sim.neighbors
        return self.constraint_forces is not None and self._forces_key != (id(nl), nl.n_builds)

    def add_constraint_forces(self, sim, ids, forces) -> None:
        """Add ``forces`` ((k, 3) float64, the constraint forces of the atoms ``ids``, which include every atom
        this rank owns) to the state's forces, each to its atom's row."""
        s, be, xp = sim.state, self.backend, self.backend.xp
        own = np.asarray(be.to_host(s.ids), np.int64)
        where = np.full(int(max(ids.max(initial=0), own.max(initial=0))) + 1, -1, np.int64)
        where[ids] = np.arange(len(ids))
        k = where[own]
        if (k < 0).any():
            raise ValueError(f"the checkpoint holds no constraint force of atom {int(own[np.argmax(k < 0)])}")
        added = xp.asarray(forces[k], dtype=s.forces.dtype)
        s.forces[...] = s.forces + added
        self.constraint_forces = (s.ids.copy(), added)
        nl = sim.neighbors
        self._forces_key = (id(nl), nl.n_builds)

    def rattle(self, sim, dtfv) -> None:
        s = sim.state
        x, v_rows, f_rows, mass = self._inputs(sim, s.velocities, s.forces)
        L = np.asarray(s.box_lengths, np.float64)
        for kind in self.kinds:
            n = self.computed(kind)
            if self.backend.is_gpu:
                if n:
                    self._module.get_function(f"rattle_{kind}")(
                        ((n + 127) // 128,), (128,),
                        (x, np.int32(x.shape[1]), v_rows, f_rows, mass, self.row_of, self.atoms[kind], np.int32(n),
                         *(np.float64(length) for length in L), np.float64(dtfv), self.status[kind]))
            else:
                cpu_kernel("rattle", kind)(x, v_rows, f_rows, mass, self.row_of, self.atoms[kind], L, 1.0 / L,
                                           float(dtfv), self.status[kind])
        if v_rows is not s.velocities:  # domains: the owned atoms' corrected velocities
            s.velocities[...] = v_rows[:len(s.velocities)]
        message = self._rattle_problem(s)
        if self.decomposition is not None:        # raised on every rank by the position constraint that follows
            self.rattle_problem = message         # (Shake._shake's reduction): no collective of its own
            return
        if message is not None:
            from ..bookkeeping import SimulationError

            raise SimulationError(message)

    def _rattle_problem(self, s):
        """The error of the last velocity constraints (a singular matrix), or None."""
        status_all = self.backend.to_host(self.status_all)
        if not status_all.any():
            return None
        for kind in self.kinds:
            status = self.backend.to_host(self.status[kind])
            if status.max(initial=0) == SINGULAR:
                m = self.cluster_index(kind, int(np.argmax(status == SINGULAR)))
                atoms = " ".join(str(a) for a in self.clusters.atoms[kind][m])
                return f"fix rattle: Rattle determinant = 0.0 at step {s.step} for the {kind} cluster of atoms {atoms}"
        return None


_C_TYPE = {"float32": "float", "float64": "double"}


__all__ = ["ATOMS", "Clusters", "KINDS", "RATTLE_PAIRS", "SHAKE_PAIRS", "Shake", "ShakeSelection",
           "find_clusters"]
