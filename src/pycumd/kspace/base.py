"""The contract of a reciprocal-space (k-space) Coulomb solver: LAMMPS' ``kspace_style``.

An Ewald-split Coulomb sum puts ``q_i q_j erfc(g r) / r`` in the real-space pair style
(``*/coul/long``) and the rest, ``q_i q_j erf(g r) / r`` summed over all periodic images, in a
k-space solver.  A solver is built from the style's arguments (:func:`make_solver`), set up once
per box and set of charges (:meth:`KSpaceSolver.setup`: it chooses ``g_ewald`` and its grid or
k-vectors from the requested accuracy exactly as LAMMPS does), and called every step
(:meth:`KSpaceSolver.compute`: it adds its forces into the force array, and with ``with_energy``
sets :attr:`~KSpaceSolver.energy` and :attr:`~KSpaceSolver.virial`).

This module is a leaf: it imports nothing of the package.
"""

from __future__ import annotations

import numpy as np

#: the kspace styles this package implements
KSPACE_STYLES = ("ewald", "pppm", "msm")


class KSpaceSolver:
    """Reciprocal-space part of an Ewald-split Coulomb sum (LAMMPS ``kspace_style``).

    Parameters
    ----------
    accuracy : float
        LAMMPS' ACC argument: the requested relative RMS force accuracy (the absolute accuracy is
        ``accuracy * two_charge_force``, the force between two unit charges 1 length unit apart).
    mesh : tuple of 3 int, optional
        ``kspace_modify mesh nx ny nz`` (PPPM; 0 or None: chosen from the accuracy).  Ewald
        ignores it, as LAMMPS does (its own ``kmax/ewald`` is not implemented).
    order : int, optional
        ``kspace_modify order`` (PPPM charge-assignment order 2..7, default 5; Ewald ignores it).
    gewald : float, optional
        ``kspace_modify gewald`` (1/length; 0 or None: chosen from the accuracy).
    compute : bool
        ``kspace_modify compute no`` gives False: :meth:`compute` then adds nothing and sets the
        energy and virial to zero (LAMMPS' behaviour).
    slab : float or "nozforce", optional
        ``kspace_modify slab VALUE`` (ewald and pppm; the system must have ``boundary p p f``):
        the k-space sum sees the box extended along z by the factor VALUE (> 1; LAMMPS warns
        below 2), and the Yeh-Berkowitz dipole correction (:meth:`_slab_correction`) is added to
        the energy and the z forces.  ``"nozforce"``: no extension and no correction, the k-space
        z forces are left out.  None: no slab (LAMMPS' default).

    Attributes
    ----------
    name : str
        ``"ewald"`` or ``"pppm"``.
    accuracy_relative : float
        LAMMPS' ACC argument.
    g_ewald : float
        The Ewald splitting parameter (1/length), chosen by :meth:`setup` or given by ``gewald``.
    energy : float
        After ``compute(..., with_energy=True)``: LAMMPS' ``elong`` (energy units), including the
        self energy ``-qqrd2e g/sqrt(pi) sum q^2`` and the neutralising-background term
        ``-qqrd2e pi (sum q)^2 / (2 g^2 V)``.
    virial : numpy.ndarray, shape (6,)
        After ``compute(..., with_energy=True)``: xx, yy, zz, xy, xz, yz (energy units), LAMMPS'
        kspace virial (sum over atoms of r_a F_b; divide by the volume for a pressure).
    """

    name: str = ""
    #: how the pair style splits 1/r: ``"ewald"`` (``erfc(g r)/r``, the ``*/coul/long`` styles) or ``"msm"``
    #: (``1/r - gamma(r/a)/a``, the ``*/coul/msm`` styles)
    splitting: str = "ewald"
    #: whether :meth:`coulomb_cutoff` may return another cutoff than the pair style's (MSM's cutoff/adjust)
    adjusts_cutoff: bool = False
    #: the ranks among which the atoms are spread (a :class:`pycumd.parallel.comm.Communicator`), or None
    #: for one process: each rank passes only its own atoms to :meth:`compute`, the solver sums its grid
    #: (or structure factors) over the ranks, every rank solves the same replicated problem and
    #: interpolates to its own atoms (:meth:`set_communicator`; CPU)
    grid_comm = None

    #: whether a compute without energies may be captured in a CUDA graph (no host synchronisation, no
    #: allocation after the first call; the box fixed while the graph replays): PPPM on the GPU
    capturable = False
    #: the step-control array (:attr:`pycumd.contracts.ForceEvaluator.control`) of the evaluator that owns
    #: the solver, or None: a capturable solver's kernels that write forces return at once in a frozen
    #: block, as the pair kernels do
    control = None

    def __init__(self, accuracy: float, *, mesh=None, order=None, gewald=None, compute=True, slab=None):
        accuracy = float(accuracy)
        if not np.isfinite(accuracy) or accuracy == 0.0:
            raise ValueError(f"kspace_style {self.name}: accuracy must be a non-zero number, got {accuracy!r}")
        self.accuracy_relative = abs(accuracy)   # LAMMPS takes fabs() of ACC
        self.mesh_requested = _mesh_argument(self.name, mesh)
        self.order_requested = order
        if gewald is not None and (not np.isfinite(float(gewald)) or float(gewald) < 0.0):
            raise ValueError(f"kspace_modify gewald: must be >= 0, got {gewald!r}")
        self.gewald_requested = float(gewald) if gewald else 0.0
        self.compute_enabled = bool(compute)
        self.slab_flag, self.slab_volfactor = _slab_argument(self.name, slab)
        self.g_ewald = self.gewald_requested
        self.energy = 0.0
        self.virial = np.zeros(6)

    def setup(self, box_lengths, charges, r_cut_coul: float, qqrd2e: float, backend, precision,
              units_name: str, *, table_bits: int = 12, dielectric: float = 1.0) -> None:
        """Choose the parameters (``g_ewald``, k-vectors or grid) for this box and these charges.

        Parameters
        ----------
        box_lengths : array_like, shape (3,)
            Edge lengths of the orthogonal periodic box (length units).
        charges : numpy.ndarray, shape (N,)
            All charges of the system (host float64, charge units).
        r_cut_coul : float
            The real-space Coulomb cutoff of the ``*/coul/long`` pair style (length units).
        qqrd2e : float
            The Coulomb constant of the unit system (energy length / charge^2).
        backend : pycumd.backend.Backend
            Where :meth:`compute` runs.
        precision : pycumd.precision.Precision
            The precision policy (the grid's type).
        units_name : str
            LAMMPS' unit style (``real``, ``metal``, ``lj``, ...): the two-charge force's units.
        table_bits : int
            The pair style's ``pair_modify table`` bits (LAMMPS' default 12; 0: no table).  Only the
            estimated accuracy that :meth:`describe` reports depends on it.
        dielectric : float
            LAMMPS' ``dielectric``: the two-charge force uses ``qqr2e = qqrd2e * dielectric``.
        """
        raise NotImplementedError

    def coulomb_cutoff(self, box_lengths, charges, r_cut_coul: float, qqrd2e: float, units_name: str, *,
                       table_bits: int = 12, dielectric: float = 1.0) -> float:
        """The real-space Coulomb cutoff (length units) the pair style must use with this solver for this
        box and these charges (arguments as :meth:`setup`): ``r_cut_coul`` unless :attr:`adjusts_cutoff`."""
        return float(r_cut_coul)

    def compute(self, positions, charges, box_lengths, forces, with_energy: bool) -> None:
        """Add the reciprocal-space forces (force units) into ``forces``.

        Parameters
        ----------
        positions : backend array, shape (N, 3) or (N, 4)
            Positions (length units; the first three columns are read, any float type).
        charges : backend array, shape (N,)
            Charges (float64).
        box_lengths : array_like, shape (3,)
            The box (must be the one :meth:`setup` was called with).
        forces : backend array, shape (N, 3)
            Forces; the solver's are added to them.
        with_energy : bool
            Also set :attr:`energy` and :attr:`virial` (a host synchronisation on the GPU).
            Without it, the GPU path neither synchronises nor allocates after its first call.
        """
        raise NotImplementedError

    def per_atom_energy(self, positions, charges, box_lengths):
        """Per-atom k-space energies (LAMMPS ``eatom``): not implemented yet."""
        raise NotImplementedError(f"kspace_style {self.name}: per-atom energies are not implemented")

    def describe(self) -> list[str]:
        """The lines LAMMPS prints at its init for this solver (after :meth:`setup`)."""
        raise NotImplementedError

    def set_communicator(self, comm) -> None:
        """Spread the atoms over ``comm``'s ranks (see :attr:`grid_comm`); :meth:`setup` must still be given
        every charge of the system.  The energy and virial are then the whole system's on every rank."""
        self.grid_comm = comm if comm is not None and comm.size > 1 else None

    def _sum_over_ranks(self, array):
        """``array`` (a host grid or vector of partial sums over this rank's atoms) summed over the ranks
        of :attr:`grid_comm`, in place; unchanged for one process."""
        if self.grid_comm is None:
            return array
        return self.grid_comm.allreduce_sum(array)

    # -- shared by the styles ------------------------------------------------------------------
    def _start_compute(self, box_lengths, with_energy: bool) -> bool:
        """The start of every style's :meth:`compute`: False (and, with energies, energy and virial 0)
        under ``kspace_modify compute no``; a box other than the last one's tables made for it
        (:meth:`_follow_box`: LAMMPS' ``KSpace::setup`` under a barostat, the same grid and g_ewald)."""
        if not self.compute_enabled:
            if with_energy:
                self.energy, self.virial = 0.0, np.zeros(6)
            return False
        box = np.asarray(box_lengths, dtype=np.float64).reshape(3)
        if not np.array_equal(box, self.box_lengths):
            self._follow_box(box)
        return True

    def _follow_box(self, box) -> None:
        """The tables of a new box (length units, (3,)) for the next computes."""
        self._setup_box(box)

    def _common_setup(self, box_lengths, charges, r_cut_coul, qqrd2e, units_name, table_bits,
                      dielectric):
        """The quantities every style's parameter choice reads (LAMMPS' KSpace::qsum_qsq, two_charge)."""
        from pycumd.kspace.accuracy import charge_sums, two_charge_force

        box = np.asarray(box_lengths, dtype=np.float64).reshape(3)
        if not np.all(np.isfinite(box)) or box.min() <= 0.0:
            raise ValueError(f"kspace_style {self.name}: box lengths must be positive, got {box}")
        if not r_cut_coul or r_cut_coul <= 0.0:
            raise ValueError(f"kspace_style {self.name}: the pair style's Coulomb cutoff must be > 0, "
                             f"got {r_cut_coul!r}")
        self.box_lengths = box
        self.kbox = self._kspace_box(box)            # the extended box of a slab (the box otherwise)
        self.volume = float(np.prod(self.kbox))
        self.natoms = int(len(charges))
        self.qsum, self.qsqsum = charge_sums(charges)
        self.qqrd2e = float(qqrd2e)
        self.q2 = self.qsqsum * self.qqrd2e
        self.r_cut = float(r_cut_coul)
        self.table_bits = int(table_bits)
        self.two_charge_force = two_charge_force(units_name, self.qqrd2e * float(dielectric))
        self.accuracy = self.accuracy_relative * self.two_charge_force

    def _kspace_box(self, box) -> np.ndarray:
        """The box (3,) the k-space sum sees: ``box`` with z times the slab factor (LAMMPS'
        ``zprd_slab``; the box itself without ``slab``)."""
        box = np.asarray(box, dtype=np.float64).reshape(3).copy()
        box[2] *= self.slab_volfactor
        return box

    def _slab_correction(self, positions, charges, forces, with_energy: bool) -> None:
        """LAMMPS' ``slabcorr`` (Yeh and Berkowitz, with Ballenegger et al.'s terms of a net charge):
        with the dipole ``M = sum q_i z_i``, ``Q = sum q`` and the extended volume V,

            E += qqrd2e 2 pi (M^2 - Q sum q_i z_i^2 - Q^2 Lz_slab^2 / 12) / V,
            F_i,z += -qqrd2e 4 pi q_i (M - Q z_i) / V,

        the sum over z_i^2 only where ``|Q| > 1e-5`` (LAMMPS' SMALL).  Both are unchanged by a shift of
        the z origin.  No virial term (LAMMPS adds none).  Vectorised on the backend's arrays."""
        xp = self.backend.xp
        z = positions[:, 2].astype(xp.float64)
        q = charges.astype(xp.float64)
        if with_energy or not self.backend.is_gpu:      # the GPU checks where it synchronises anyway
            z_min = float(z.min()) if z.shape[0] else np.inf
            z_max = float(z.max()) if z.shape[0] else -np.inf
            if self.grid_comm is not None:
                z_min, z_max = -self.grid_comm.max(-z_min), self.grid_comm.max(z_max)
            self._check_slab_extent(z_min, z_max)
        dipole = q @ z
        if self.grid_comm is not None:
            dipole = self.grid_comm.sum(float(dipole))
        ffact = -4.0 * np.pi * self.qqrd2e / self.volume
        forces[:, 2] += (ffact * q * (dipole - self.qsum * z)).astype(forces.dtype)
        if with_energy:
            dipole = float(dipole)
            dipole_r2 = float(q @ (z * z)) if abs(self.qsum) > _SLAB_SMALL else 0.0
            if self.grid_comm is not None:
                dipole_r2 = self.grid_comm.sum(dipole_r2)
            zprd_slab = self.box_lengths[2] * self.slab_volfactor
            e_slab = 2.0 * np.pi * (dipole * dipole - self.qsum * dipole_r2
                                    - self.qsum * self.qsum * zprd_slab * zprd_slab / 12.0) / self.volume
            self.energy += self.qqrd2e * e_slab

    def _check_slab_extent(self, z_min: float, z_max: float) -> None:
        """LAMMPS' ``boundary p p f`` loses an atom that leaves the box along z; the engine keeps z periodic
        for the pairs, which is the same only while the atoms stay inside ``[0, Lz)`` with a vacuum gap of
        at least the Coulomb cutoff between the slab's two faces across the z boundary.  A ValueError
        otherwise."""
        lz = float(self.box_lengths[2])
        if z_min < 0.0 or z_max >= lz:
            raise ValueError(f"kspace_modify slab (boundary p p f): an atom left the box along z (z from {z_min:g} to "
                             f"{z_max:g}, box 0 to {lz:g}; LAMMPS: 'Lost atoms')")
        if lz - (z_max - z_min) < self.r_cut:
            raise ValueError(f"kspace_modify slab (boundary p p f): the atoms span z from {z_min:g} to {z_max:g} in a "
                             f"box of {lz:g}, a vacuum gap of {lz - (z_max - z_min):g} < the Coulomb cutoff "
                             f"{self.r_cut:g}: pycumd keeps z periodic for the pairs and needs the gap (make the box "
                             f"taller along z)")

    def _self_and_background(self) -> float:
        """``g sum q^2 / sqrt(pi) + pi (sum q)^2 / (2 g^2 V)`` (charge^2 / length), subtracted from
        the reciprocal sum in LAMMPS' energy."""
        g = self.g_ewald
        return g * self.qsqsum / np.sqrt(np.pi) + 0.5 * np.pi * self.qsum ** 2 / (g * g * self.volume)


#: LAMMPS' SMALL of slabcorr: below this |sum q| the net-charge terms of the slab correction are left out
_SLAB_SMALL = 1.0e-5


def _slab_argument(style: str, slab):
    """``(flag, volfactor)`` of ``kspace_modify slab VALUE|nozforce`` as LAMMPS reads it: (0, 1.0) none,
    (1, VALUE) the extended box and the dipole correction, (2, 1.0) nozforce."""
    if slab is None:
        return 0, 1.0
    if style not in ("ewald", "pppm"):
        raise NotImplementedError(f"kspace_modify slab is not implemented for kspace_style {style} (ewald and pppm "
                                  f"have it; LAMMPS: 'Cannot use slab correction with MSM')")
    if isinstance(slab, str) and slab == "nozforce":
        return 2, 1.0
    try:
        factor = float(slab)
    except (TypeError, ValueError):
        raise ValueError(f"kspace_modify slab: expected a number > 1 or 'nozforce', got {slab!r}") from None
    if not np.isfinite(factor) or factor <= 1.0:
        raise ValueError(f"kspace_modify slab {slab}: the factor must be > 1 (LAMMPS: 'Bad kspace_modify slab "
                         f"parameter')")
    return 1, factor


def _mesh_argument(style: str, mesh):
    if mesh is None:
        return (0, 0, 0)
    if np.isscalar(mesh):
        mesh = (mesh, mesh, mesh)
    mesh = tuple(int(m) for m in mesh)
    if len(mesh) != 3 or min(mesh) < 0:
        raise ValueError(f"kspace_modify mesh: expected three integers >= 0, got {mesh!r}")
    return mesh


def make_solver(style: str, accuracy: float, **modify) -> KSpaceSolver:
    """The solver of a LAMMPS ``kspace_style STYLE ACC`` with ``kspace_modify`` keywords.

    Parameters
    ----------
    style : str
        ``"ewald"``, ``"pppm"`` or ``"msm"``; any other style raises NotImplementedError naming it.
    accuracy : float
        The ACC argument (relative RMS force accuracy).
    **modify
        ``mesh``, ``order``, ``gewald``, ``compute``, ``slab`` (see :class:`KSpaceSolver`); msm also takes
        ``cutoff_adjust``, ``pressure_scalar`` and ``neighbor_skin`` (:class:`pycumd.kspace.msm.MSM`).
    """
    if style == "ewald":
        from pycumd.kspace.ewald import Ewald
        return Ewald(accuracy, **modify)
    if style == "pppm":
        from pycumd.kspace.pppm import PPPM
        return PPPM(accuracy, **modify)
    if style == "msm":
        from pycumd.kspace.msm import MSM
        return MSM(accuracy, **modify)
    raise NotImplementedError(f"kspace_style {style} is not implemented (pycumd has: "
                              f"{', '.join(KSPACE_STYLES)})")
