"""Run LAMMPS input scripts unchanged, for the commands pycumd supports.

:func:`plan_from_lammps_script` reads a script with :mod:`pycumd.inputs.lammps_script` (variables,
substitution, comments, continuation) and executes its commands in order into a
:class:`~pycumd.run_plan.RunPlan` (one stage per ``run``), which :func:`~pycumd.run_plan.execute`
runs; :func:`run_lammps_script` does both.
Supported commands and keywords::

    units lj|metal|real            dimension 3                  boundary p p p
    lattice sc|bcc|fcc SCALE       region ID block xlo xhi ylo yhi zlo zhi (INF, EDGE) [units lattice|box]
                                   region ID sphere cx cy cz r [units lattice|box]
    create_box N REGION            create_atoms TYPE box|region ID       mass TYPE VALUE
    velocity all create T SEED [dist uniform|gaussian] [loop geom|all] [mom yes|no] [rot yes|no]
    pair_style lj/cut RC           pair_coeff I J EPS SIGMA [RC]   (I, J may be *)
    pair_style yukawa KAPPA RC     pair_coeff I J A [RC]
    pair_style coul/debye KAPPA RC pair_coeff * *   (charges per type from read_data)
    atom_style atomic|charge|bond|angle|molecular|full
                                   read_data FILE (Masses, Atoms, Velocities, Pair Coeffs, PairIJ Coeffs;
                                   Bonds, Angles, Dihedrals, Impropers and their Coeffs;
                                   atoms outside the box wrapped with image flags; a later mass overrides)
    bond_style|angle_style|dihedral_style|improper_style STYLE   bond_coeff|angle_coeff|... T COEFFS (T may be *)
    special_bonds fene|charmm|amber|lj/coul A B C|lj A B C|coul A B C [angle yes|no] [dihedral yes|no]
    pair_modify shift yes|no mix geometric|arithmetic|sixthpower tail no
    package gpu|kokkos|omp|intel|cuda ...  (accelerator settings: accepted, not used)
    pair styles with an accelerator suffix (lj/cut/gpu, /omp, /opt, /kk, /intel): the base style
    neighbor SKIN bin              neigh_modify every N delay N check yes|no binsize B (not used)
    timestep DT                    fix ID all nve | nvt temp T0 T1 TDAMP [tchain N] |
                                              langevin T0 T1 DAMP SEED
    unfix ID                       thermo N            thermo_style one|multi
    run N [upto] [start S] [stop S] [pre yes|no] [post yes|no]   (run 0: no integration fix needed)
    print TEXT                     echo/log/newton/processors (ignored)
    restart N FILE | restart 0     write_restart FILE  read_restart FILE   (pycumd checkpoints, carrying
                                   timestep, pair style and coefficients, groups, fix nvt/npt/nph states)
    write_data FILE [nocoeff]      (after a run: atoms, masses, pair coefficients, images, velocities)
    min_style cg|fire              min_modify dmax D   minimize ETOL FTOL MAXITER MAXEVAL

    thermo_style one|custom KEYWORDS|c_ID|c_ID[k]|v_name|f_ID|f_ID[k]   thermo_modify norm yes|no
    compute ID all temp|pe|ke|pressure|temp/region REGION|rdf NBIN [I J ...] [cutoff RC]
    compute ID GROUP msd [com yes|no]
    fix ID all ave/time NEVERY NREPEAT NFREQ c_ID|c_ID[*]|v_name|KEYWORD ... [file F] [mode scalar|vector]
    print "T = $(temp) ${v}"   (thermo keywords, computes, fixes: the state after the last run)
    dump ID GROUP atom|custom|xyz N FILE [columns]   dump_modify   undump ID
    reset_timestep N    displace_atoms all move DX DY DZ    delete_atoms overlap CUT G1 G2
    group ID type|id|region|delete    velocity all scale T | zero linear
    replicate NX NY NZ [bbox|bondlist]
    set atom|type|group|region ID type T | type/fraction T F SEED | x|y|z|vx|vy|vz V | image I J K | charge Q
    fix ID all temp/rescale | momentum | recenter     print TEXT (in run order)

(docs/lammps-compatibility.md has the table.) Anything else stops with an error naming the command
and its line.  In ``lj`` units
``lattice fcc 0.8442`` is the reduced density; otherwise the argument is the lattice constant.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..box import Box
from ..integrators import Langevin, NoseHoover, VelocityVerlet
from ..integrators.fixes import FixChain, Momentum, Recenter, TempRescale
from ..integrators.shake import Shake, ShakeSelection
from ..outputs.ave_time import AveTimeOutput
from ..outputs.dump import DumpOutput
from ..outputs.thermo_keywords import (COMPUTE_STYLES, MULTI, Compute, MSDReference, Names, ThermoState,
                                       ThermoStyle, formula_value, one_style, parse_column)
from ..integrators.barostats import lammps_fix_nh
from ..minimize import MIN_STYLES, MinimizeSettings
from ..molecular.styles.base import KINDS
from ..molecular.styles.registry import make_style
from ..molecular.topology import SpecialBonds, Topology
from ..potentials.lammps_styles import check_pair_style, pair_style_class, potential_from_lammps
from ..system import System, create_velocities, lattice_positions, lattice_spacing
from ..units import get_units
from .lammps_script import Command, LammpsScriptError, read_script
from .text import read_text_input
from .lammps_data import read_lammps_data, type_names_of_masses
from ..components import EngineOptions, NeighborOptions
from ..outputs.settings import OutputSettings, TrajectoryOutput
from ..outputs.lammps_data import write_lammps_data
from ..checkpoint_file import read_checkpoint, system_from_checkpoint
from ..run_plan import RunPlan, RunResult, Stage, execute, write_checkpoint_action

#: the fixes that move atoms (one of them is needed for a run of more than 0 steps)
INTEGRATION_FIXES = ("nve", "nvt", "npt", "nph")

IGNORED = {"echo", "log", "newton", "processors", "atom_modify", "comm_modify"}


class UnsupportedCommandError(LammpsScriptError):
    """A LAMMPS command or keyword that pycumd does not implement."""


@dataclass
class _Setup:
    """What the script has set so far."""

    units: str = "lj"
    lattice: tuple | None = None          # (style, spacing)
    regions: dict = field(default_factory=dict)
    box: Box | None = None
    n_types: int = 0
    positions: list = field(default_factory=list)
    types: list = field(default_factory=list)
    masses: dict = field(default_factory=dict)
    pair: tuple | None = None            # (style, global arguments)
    atom_style: str = "atomic"
    charges: dict = field(default_factory=dict)   # per type, for the per-type Coulomb styles (read_data, set type)
    charges_set_per_atom: str = ""       # a set command that gave part of a type another charge (its words)
    kspace: tuple | None = None          # kspace_style (style, accuracy, line)
    kspace_modify: dict = field(default_factory=dict)   # kspace_modify keywords -> values
    boundary: tuple = ("p", "p", "p")     # boundary (p p p, or p p f for a kspace slab)
    pair_cutoff_mode: str = "truncate"
    pair_mixing: str = "geometric"
    pair_mixing_given: bool = False
    pair_table: int = 12                  # pair_modify table N (LAMMPS' Coulomb table; the solvers' error estimate)       # pair_modify mix given (LAMMPS' CHARMM styles mix arithmetically otherwise)
    pair_coeffs: list = field(default_factory=list)
    skin: float | None = None
    neigh: dict = field(default_factory=lambda: {"every": 1, "delay": 0, "check": True})
    dt: float | None = None
    fixes: dict = field(default_factory=dict)
    thermo_every: int = 0
    pending_velocity: list = field(default_factory=list)
    minimize: dict = field(default_factory=lambda: {"style": "cg", "dmax": 0.1})   # min_style, min_modify
    thermo_style: ThermoStyle | None = None   # thermo_style custom (None: one)
    thermo_norm: bool | None = None           # thermo_modify norm (None: the units' default)
    thermo_style_line: int | None = None      # the line of the thermo_style custom command
    thermo_style_where: str = ""              # its FILE:LINE, for errors met while running
    computes: dict = field(default_factory=dict)   # compute ID -> thermo_keywords.Compute
    groups: dict = field(default_factory=dict)     # group ID -> _Group
    bonded: dict = field(default_factory=dict)     # kind -> BondedStyle (bond_style ... with its coefficients)
    special: SpecialBonds = field(default_factory=SpecialBonds)   # special_bonds
    n_term_types: dict = field(default_factory=dict)   # kind -> types declared (read_data header)


@dataclass(frozen=True)
class TemperSettings:
    """LAMMPS ``temper N M temp fix-ID seed1 seed2`` of one partition: ``steps`` (N), ``every`` (M, steps
    between exchange attempts), ``temperature`` (this partition's entry in the ladder, temperature
    units; its starting temperature unless ``index`` is given), the thermostat fix's ID, ``seed_swap`` (seed1: 0 alternates even and odd pairs as LAMMPS; any
    other value picks them at random), ``seed_boltz`` (seed2: the seed of the acceptance draws) and
    ``index`` (the optional 7th argument: the ladder index this partition starts at, to continue a
    tempering run; None: its own partition index)."""

    steps: int
    every: int
    temperature: float
    fix_id: str
    seed_swap: int
    seed_boltz: int
    index: int | None = None


class LammpsPlanner:
    """Executes LAMMPS commands into a :class:`~pycumd.run_plan.RunPlan` (one stage per ``run``);
    see the module docstring for what is supported. Nothing runs until the plan is executed.

    Parameters
    ----------
    screen : bool
        Print thermo tables and a short description of each run (the plan's outputs).
    """

    def __init__(self, screen=True, partition: tuple[int, int] | None = None):
        self.setup = _Setup()
        self.partition = partition   # (k, N): this script is partition k of N (-partition Nx1); None: one
        self.base_dir = None   # directory of the script, for read_data paths
        self.stages: list = []
        self.outputs = OutputSettings(screen=screen)
        self._system = None    # a System set since the last run (read_data, velocity before the first run)
        self._edits: list = [] # edits of the continuing system since the last run (velocity after a run)
        self._dirty = True     # settings changed since the last run: the next stage builds anew
        #: types whose mass no command has set yet although the system exists (LAMMPS lets set, group,
        #: displace_atoms ... come before mass; velocity and run need every mass: _check_masses)
        self._masses_pending: set = set()
        self.first_step = 0    # the step number of the first run's start (read_restart)
        self._wrap_at_run = False   # set x|y|z since the last run: wrap into the box at the next run
        self._step_origin = (0, None)   # (stage index, step) of the last reset_timestep after a run
        self._restart_fix_states: dict = {}   # fix ID -> {"style", "state"} of read_restart, until the first run
        self._restart_pair_missing = None     # a pair style read_restart did not restore (its name)
        self._command = None   # the command being executed

    def plan(self, engine: EngineOptions | None = None) -> RunPlan:
        """The plan of the commands executed so far."""
        engine = engine or EngineOptions()
        if engine.processors is None:
            engine.processors = getattr(self, "processors", None)    # LAMMPS processors Px Py Pz (MPI runs)
        return RunPlan(list(self.stages), engine, self.outputs, first_step=self.first_step)

    # -- entry points -----------------------------------------------------------------------
    def execute(self, commands: list[Command]) -> None:
        for cmd in commands:
            self._command = cmd                 # its variables (Command.variables) for v_name
            handler = getattr(self, "_cmd_" + cmd.name, None)
            if handler is None and cmd.name not in IGNORED:
                raise UnsupportedCommandError(f"unsupported command '{cmd.name}'", cmd.line, cmd.source)
            try:
                if handler is not None:
                    handler(cmd.args)
            except LammpsScriptError:
                raise
            except OSError as exc:              # read_data, read_restart, table files ...: the file and why
                raise LammpsScriptError(f"{cmd.name}: cannot read {exc.filename or ''}: {exc.strerror or exc}",
                                        cmd.line, cmd.source) from exc
            except (ValueError, IndexError, KeyError, NotImplementedError) as exc:
                msg = str(exc) if not isinstance(exc, IndexError) else "missing argument(s)"
                raise LammpsScriptError(f"{cmd.name}: {_plain_number_message(msg)}", cmd.line, cmd.source) from exc

    # -- system ------------------------------------------------------------------------------
    def _cmd_units(self, a):
        get_units(a[0])
        self.setup.units = a[0]

    def _cmd_atom_style(self, a):
        if a[0] not in ("atomic", "charge", "bond", "angle", "molecular", "full"):
            raise ValueError(f"atom_style {a[0]} is not supported (atomic, charge, bond, angle, molecular, full)")
        if len(a) > 1:
            raise ValueError(f"atom_style {a[0]} takes no arguments")
        self.setup.atom_style = a[0]

    # -- molecular topology --------------------------------------------------------------------
    def _bonded_style(self, kind: str, a) -> None:
        """``bond_style STYLE`` (and angle_, dihedral_, improper_): a new style without coefficients."""
        if not a:
            raise ValueError(f"{kind}_style needs a style name")
        if a[0] == "none":
            self.setup.bonded.pop(kind, None)
        elif a[0] in ("hybrid", "zero", "table"):
            raise NotImplementedError(f"{kind}_style {a[0]} is not supported")
        else:
            self.setup.bonded[kind] = make_style(kind, _without_accelerator_suffix(a[0])).settings(list(a[1:]))
        self._dirty = True

    def _bonded_coeff(self, kind: str, a) -> None:
        """``bond_coeff T COEFFS`` (T: N, *, N*, *N, M*N): the coefficients of the types."""
        style = self.setup.bonded.get(kind)
        if style is None:
            raise ValueError(f"{kind}_coeff before {kind}_style")
        n_types = self.setup.n_term_types.get(kind, 0)
        if n_types == 0:
            raise ValueError(f"{kind}_coeff: the system has no {kind} types (read_data declares them)")
        for t in _type_range(a[0], n_types):
            style.coeff(t, a[1:])
        self._dirty = True

    def _cmd_bond_style(self, a):
        self._bonded_style("bond", a)

    def _cmd_angle_style(self, a):
        self._bonded_style("angle", a)

    def _cmd_dihedral_style(self, a):
        self._bonded_style("dihedral", a)

    def _cmd_improper_style(self, a):
        self._bonded_style("improper", a)

    def _cmd_bond_coeff(self, a):
        self._bonded_coeff("bond", a)

    def _cmd_angle_coeff(self, a):
        self._bonded_coeff("angle", a)

    def _cmd_dihedral_coeff(self, a):
        self._bonded_coeff("dihedral", a)

    def _cmd_improper_coeff(self, a):
        self._bonded_coeff("improper", a)

    def _cmd_special_bonds(self, a):
        self.setup.special = SpecialBonds.from_lammps(a)
        self._dirty = True

    def _molecular_edit(self):
        """The edit that gives a stage's system the styles and special_bonds set now (None without them)."""
        s = self.setup
        if not s.bonded and s.special == SpecialBonds() and not s.n_term_types:
            return None
        styles, special = dict(s.bonded), s.special

        def attach(system):
            if system.topology is None:
                return
            system.topology.styles = dict(styles)
            system.topology.special = special
        return attach

    def _cmd_processors(self, a):
        """``processors Px Py Pz`` (``*`` free): the grid of spatial domains of a run over MPI ranks
        (pycumd.parallel.grid); its further keywords are ignored."""
        from ..parallel.grid import parse_processors

        self.processors = parse_processors(a[:3])

    def _cmd_temper(self, a):
        """``temper N M temp fix-ID seed1 seed2 [index]`` (LAMMPS ``Temper::command``): a run of N steps with a
        replica-exchange attempt every M steps between the partitions (``-partition Nx1``), the thermostat
        fix ``fix-ID`` (nvt or langevin) of each getting the exchanged target temperature.  ``index``
        (0..N-1, usually a world variable) continues a tempering run: the partition starts at that
        index of the ladder of the partitions' ``temp`` values (its thermostat's target reset to it, its
        velocities kept), as LAMMPS does.  Planned as a
        run of N steps whose stage carries :class:`TemperSettings`; the partitions' plans are put together
        into one batch by :func:`plan_partitions`."""
        from .lammps_script import MULTI_PARTITION

        if self.partition is None:
            raise NotImplementedError(MULTI_PARTITION)
        if len(a) < 6:
            raise ValueError("temper needs N M temp fix-ID seed1 seed2")
        if len(a) > 7:
            raise ValueError(f"temper takes at most 7 arguments (N M temp fix-ID seed1 seed2 index), got {len(a)}")
        index = None
        if len(a) == 7:
            k, n = self.partition
            try:
                index = int(a[6])
            except ValueError:
                raise ValueError(f"temper index {a[6]!r}: expected a whole number (the ladder index this "
                                 f"partition starts at)") from None
            if not 0 <= index < n:
                raise ValueError(f"temper index {index} (partition {k}): invalid temperature index value, "
                                 f"expected 0..{n - 1} for {n} partitions")
        steps, every, temp, fix_id = int(a[0]), int(a[1]), float(a[2]), a[3]
        seed_swap, seed_boltz = int(a[4]), int(a[5])
        if steps < 0 or every < 1:
            raise ValueError(f"temper {a[0]} {a[1]}: N must be >= 0 and M >= 1")
        if steps % every:
            raise ValueError(f"temper {steps} {every}: N must be a multiple of M (LAMMPS: non integer # of swaps)")
        if temp <= 0:
            raise ValueError(f"temper temperature {a[2]} must be > 0")
        if seed_swap < 0 or seed_boltz <= 0:
            raise ValueError(f"temper seeds {a[4]} {a[5]}: seed1 must be >= 0 (0: alternate even and odd pairs) "
                             f"and seed2 > 0")
        fix = self.setup.fixes.get(fix_id)
        if fix is None:
            raise ValueError(f"no fix with ID {fix_id}")
        if fix[0] not in ("nvt", "langevin"):
            raise NotImplementedError(f"fix {fix_id} is fix {fix[0]}; temper needs a thermostat fix whose "
                                      f"target it can reset, and pycumd exchanges those of fix nvt and fix langevin")
        others = [f"{fid} ({f[0]})" for fid, f in self.setup.fixes.items()
                  if f[0] in ("temp/rescale", "momentum", "recenter", "shake", "rattle")]
        if others:
            raise NotImplementedError(f"fix {', '.join(others)} beside the thermostat fix {fix_id}: pycumd's replica "
                                      f"exchange resets the target of a thermostat that runs alone")
        self._cmd_run([str(steps)])
        self.stages[-1].temper = TemperSettings(steps, every, temp, fix_id, seed_swap, seed_boltz, index)

    def _cmd_package(self, a):
        """``package gpu|kokkos|omp|intel|cuda ...``: settings of LAMMPS' accelerator packages (threads,
        GPUs, neighbour-list layout, their precision). They do not change the model; pycumd picks its
        own device and precision (``--device``, ``--precision``), so they are accepted and not used."""
        if not a or a[0] not in ("gpu", "kokkos", "omp", "intel", "cuda"):
            raise ValueError(f"package {a[0] if a else ''} is not a LAMMPS accelerator package "
                             f"(gpu, kokkos, omp, intel, cuda)")

    def _cmd_dimension(self, a):
        if a[0] != "3":
            raise ValueError("only dimension 3 is supported")

    def _cmd_boundary(self, a):
        """``boundary p p p``, or ``p p f`` for a slab (with ``kspace_modify slab``: checked where the k-space
        solver is made, :meth:`_potential`); other boundaries raise."""
        if a not in (["p", "p", "p"], ["p", "p", "f"]):
            raise NotImplementedError(f"boundary {' '.join(a)}: pycumd supports 'p p p', and 'p p f' with a "
                                      f"kspace_style ewald|pppm and kspace_modify slab")
        self.setup.boundary = tuple(a)

    def _cmd_lattice(self, a):
        style, scale = a[0], float(a[1])
        if len(a) > 2:
            raise ValueError(f"lattice keywords {' '.join(a[2:])} are not supported")
        if self.setup.units == "lj":
            spacing = lattice_spacing(style, "lj", density=scale)
        else:
            spacing = lattice_spacing(style, self.setup.units, constant=scale)
        self.setup.lattice = (style, spacing)

    def _cmd_region(self, a):
        rid, style = a[0], a[1]
        n_args = {"block": 6, "sphere": 4}.get(style)
        if n_args is None:
            raise ValueError(f"region style {style} is not supported (block, sphere)")
        words = a[2:2 + n_args]
        if len(words) != n_args:
            raise ValueError(f"region {style} needs {n_args} numbers")
        kw = dict(zip(a[2 + n_args::2], a[3 + n_args::2]))
        unknown = set(kw) - {"units"}
        if unknown:
            raise ValueError(f"region keyword(s) {', '.join(sorted(unknown))} not supported")
        scale = self._length_unit(kw.get("units", "lattice"), "region")
        values = []
        for k, word in enumerate(words):
            if style == "block" and word in ("INF", "EDGE"):   # LAMMPS: -/+BIG, or the box's bound
                if word == "EDGE" and self.setup.box is None:
                    raise ValueError("region block EDGE needs a box (create_box or read_data first)")
                if word == "INF":
                    values.append(-1e20 if k % 2 == 0 else 1e20)
                else:
                    lo = float(self.setup.box.origin[k // 2])
                    values.append(lo if k % 2 == 0 else lo + float(self.setup.box.L[k // 2]))
            else:
                values.append(float(word) * scale)
        if style == "block":
            self.setup.regions[rid] = ("block", np.array(values).reshape(3, 2))
        else:
            self.setup.regions[rid] = ("sphere", np.array(values[:3]), values[3])

    def _length_unit(self, units: str, command: str) -> float:
        """Length of one unit of ``units lattice|box`` (a keyword of region, displace_atoms, ...): the
        lattice spacing, 1.0 before any lattice command (LAMMPS' default ``lattice none 1.0``), or 1.0."""
        if units not in ("lattice", "box"):
            raise ValueError(f"{command} units {units} is not supported (lattice, box)")
        if units == "box" or self.setup.lattice is None:
            return 1.0
        return self.setup.lattice[1]

    def _cmd_create_box(self, a):
        n_types, rid = int(a[0]), a[1]
        if rid not in self.setup.regions:
            raise ValueError(f"unknown region {rid!r}")
        if self.setup.regions[rid][0] != "block":
            raise ValueError("create_box needs a block region")
        lo_hi = self.setup.regions[rid][1]
        self.setup.box = Box(lo_hi[:, 1] - lo_hi[:, 0], lo_hi[:, 0])
        self.setup.n_types = n_types

    def _cmd_create_atoms(self, a):
        if self.stages:
            raise NotImplementedError("create_atoms after a run is not supported")
        atom_type, style = int(a[0]), a[1]
        if style not in ("box", "region"):
            raise ValueError(f"create_atoms style {style} is not supported (box, region)")
        extra = a[2:] if style == "box" else a[3:]
        if extra:
            raise ValueError(f"create_atoms keyword(s) {' '.join(extra)} not supported")
        if self.setup.box is None or self.setup.lattice is None:
            raise ValueError("create_atoms needs create_box and lattice first")
        if not 1 <= atom_type <= self.setup.n_types:
            raise ValueError(f"atom type {atom_type} is out of range 1..{self.setup.n_types}")
        style_name, a_lat = self.setup.lattice
        box = self.setup.box
        lo = np.asarray(box.origin)
        hi = lo + box.L
        n_lo = np.floor(lo / a_lat).astype(int) - 1
        n_hi = np.ceil(hi / a_lat).astype(int) + 1
        sites = lattice_positions(style_name, a_lat, n_hi - n_lo, first_cell=n_lo)
        # LAMMPS keeps points in [lo - eps, hi - 2 eps) with eps = 1e-6 L for periodic boxes.
        eps = 1e-6 * box.L
        inside = ((sites >= lo - eps) & (sites < hi - 2 * eps)).all(axis=1)
        if style == "region":
            region = self.setup.regions.get(a[2])
            if region is None:
                raise ValueError(f"unknown region {a[2]!r}")
            if region[0] == "sphere":          # LAMMPS RegSphere::inside: sqrt(dx^2 + dy^2 + dz^2) <= R
                d = sites - region[1]
                inside &= np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]) <= region[2]
            else:
                inside &= ((sites >= region[1][:, 0]) & (sites <= region[1][:, 1])).all(axis=1)
        self.setup.positions.append(sites[inside])
        self.setup.types.append(np.full(inside.sum(), atom_type - 1, np.int32))
        self._dirty = True

    def _cmd_mass(self, a):
        if self.stages:
            raise NotImplementedError("changing masses after a run is not supported")
        mass = float(a[1])
        if not (math.isfinite(mass) and mass > 0):      # named here, not at the command that would use it
            raise ValueError(f"mass must be positive and finite, got {a[1]}")
        types = list(_type_range(a[0], self.setup.n_types))
        for t in types:
            self.setup.masses[t] = mass
        self._masses_pending -= set(types)
        if self._system is not None:        # read_data / read_restart: as LAMMPS, a later mass overrides
            self._system.masses[types] = mass
        self._dirty = True

    def _cmd_velocity(self, a):
        self._group_all(a[0], "velocity")
        self._check_masses("velocity")
        if a[1] in ("create", "scale") and any(f[0] in ("shake", "rattle") for f in self.setup.fixes.values()):
            raise NotImplementedError(f"velocity {a[1]} after fix shake or rattle: LAMMPS then counts the "
                                      f"temperature without the constrained degrees of freedom, which pycumd does not "
                                      f"do here yet; set the velocities before the fix")
        if a[1] == "scale":
            if len(a) != 3:
                raise ValueError("velocity scale keywords are not supported (velocity all scale T)")
            target = float(a[2])
            self._edit_system(lambda system: _scale_velocities(system, target))
            return
        if a[1] == "zero":
            if len(a) != 3 or a[2] not in ("linear", "angular"):
                raise ValueError("velocity zero needs linear or angular (and no keywords)")
            self._edit_system(_zero_linear_momentum if a[2] == "linear" else _zero_angular_momentum)
            return
        if a[1] != "create":
            raise ValueError(f"velocity style {a[1]} is not supported (create, scale, zero)")
        temperature, seed = float(a[2]), int(a[3])
        kw = dict(zip(a[4::2], a[5::2]))
        unknown = set(kw) - {"dist", "loop", "mom", "rot"}
        if unknown:
            raise ValueError(f"velocity keyword(s) {', '.join(sorted(unknown))} not supported")
        for key in ("mom", "rot"):
            if kw.get(key, "no") not in ("yes", "no"):
                raise ValueError(f"velocity {key} {kw[key]}: expected yes or no")
        loop = kw.get("loop", "all")
        if loop not in ("geom", "all"):
            raise ValueError(f"velocity loop {loop} is not supported (geom or all)")
        args = dict(distribution=kw.get("dist", "uniform"), loop=loop, zero_momentum=kw.get("mom", "yes") == "yes",
                    zero_rotation=kw.get("rot", "no") == "yes")
        self._edit_system(lambda system: create_velocities(system, temperature, seed, **args))

    # -- interactions ------------------------------------------------------------------------
    def _cmd_pair_style(self, a):
        args = list(a[1:])              # potentials.lammps_styles converts and checks them
        style = _without_accelerator_suffix(a[0])
        check_pair_style(style, args)
        self.setup.pair = (style, args)
        self.setup.pair_coeffs = []
        self._dirty = True

    def _cmd_pair_coeff(self, a):
        if self.setup.pair is None:
            raise ValueError("pair_coeff before pair_style")
        if len(a) >= 2 and a[0].isdigit() and a[1].isdigit() and int(a[1]) < int(a[0]):
            a = [a[1], a[0], *a[2:]]           # LAMMPS reorders two plain types: pair_coeff 2 1 sets the 1-2 pair
        if self.setup.pair[0] == "lepton":     # read the expression now: an error names this line
            from ..potentials.formula import lepton_pair
            lepton_pair(_type_range(a[0], self.setup.n_types)[0], _type_range(a[1], self.setup.n_types)[0],
                        list(a[2:]))
        style = self.setup.pair[0]
        types_i, types_j = _type_range(a[0], self.setup.n_types), _type_range(a[1], self.setup.n_types)
        if not any(i <= j for i in types_i for j in types_j):
            raise ValueError(f"pair_coeff {a[0]} {a[1]}: no type pair I <= J in these ranges (LAMMPS: Incorrect args "
                             f"for pair coefficients); give the lower type range first")
        # files read at the line, as LAMMPS does (errors name it); their masses set, as LAMMPS' coeff does
        masses = pair_style_class(style).lammps_pair_coeff(
            style, list(types_i), list(types_j), list(a[2:]), a[0] == "*" and a[1] == "*", self.setup.n_types,
            self.base_dir, global_args=list(self.setup.pair[1]))
        self.setup.masses.update(masses)
        if masses and self._system is not None:
            for t, mass in masses.items():
                self._system.masses[t] = mass
        for i in types_i:
            for j in types_j:
                if i <= j:
                    self.setup.pair_coeffs.append((i, j, list(a[2:])))
        self._dirty = True

    def _cmd_kspace_style(self, a):
        """``kspace_style ewald|pppm|msm ACC`` (``none`` removes it): the k-space solver of a ``*/coul/long``
        pair style (:mod:`pycumd.kspace`; msm with the */coul/msm styles); other styles raise
        naming themselves."""
        from ..kspace.base import make_solver

        if not a:
            raise ValueError("kspace_style needs a style (ewald, pppm or none)")
        if a[0] == "none":
            self.setup.kspace = None
        else:
            if len(a) != 2:
                raise ValueError(f"kspace_style {a[0]} takes one argument (the accuracy), got {len(a) - 1}")
            make_solver(_without_accelerator_suffix(a[0]), float(a[1]))     # the style and accuracy checked here
            self.setup.kspace = (_without_accelerator_suffix(a[0]), float(a[1]), self._command.line)
        self.setup.kspace_modify = {}
        self._dirty = True

    def _cmd_kspace_modify(self, a):
        """``kspace_modify mesh NX NY NZ | order N | gewald G | compute yes|no | slab VALUE|nozforce |
        cutoff/adjust yes|no | pressure/scalar yes|no`` (several at once); any other keyword raises naming it."""
        if self.setup.kspace is None:
            raise ValueError("kspace_modify before kspace_style (LAMMPS: 'KSpace style has not yet been set')")
        k, out = 0, self.setup.kspace_modify
        while k < len(a):
            key = a[k]
            if key == "mesh":
                if len(a) < k + 4:
                    raise ValueError("kspace_modify mesh needs three integers NX NY NZ")
                out["mesh"] = tuple(int(w) for w in a[k + 1:k + 4])
                k += 4
                continue
            if k + 1 >= len(a):
                raise ValueError(f"kspace_modify {key} needs a value")
            value = a[k + 1]
            if key == "order":
                out["order"] = int(value)
            elif key == "gewald":
                out["gewald"] = float(value)
            elif key == "compute":
                out["compute"] = _yes_no(value, "kspace_modify compute")
            elif key == "slab":
                out["slab"] = value if value == "nozforce" else float(value)
            elif key == "cutoff/adjust":
                out["cutoff_adjust"] = _yes_no(value, "kspace_modify cutoff/adjust")
            elif key == "pressure/scalar":
                out["pressure_scalar"] = _yes_no(value, "kspace_modify pressure/scalar")
            else:
                raise NotImplementedError(f"kspace_modify {key} is not supported (mesh, order, gewald, compute, "
                                          f"slab, cutoff/adjust, pressure/scalar)")
            k += 2
        from ..kspace.base import make_solver

        style, accuracy, _ = self.setup.kspace
        make_solver(style, accuracy, **_solver_keywords(style, out))      # the values checked here
        self._dirty = True

    def _cmd_pair_modify(self, a):
        for key, value in zip(a[0::2], a[1::2]):
            if key == "table":
                # LAMMPS tabulates the long-range styles' real-space Coulomb (2^N points, default 12; 0: its
                # polynomial erfc); pycumd evaluates erfc exactly either way (docs/charged-systems.md)
                if int(value) < 0:
                    raise ValueError(f"pair_modify table {value}: must be >= 0")
                self.setup.pair_table = int(value)
                continue
            if key == "tail":
                if _yes_no(value, "pair_modify tail"):
                    raise NotImplementedError("pair_modify tail yes (long-range tail corrections) is not supported")
            elif key == "shift":
                self.setup.pair_cutoff_mode = "shift" if value == "yes" else "truncate"
            elif key == "mix":
                self.setup.pair_mixing = value
                self.setup.pair_mixing_given = True
            elif key in ("pair", "special", "compute"):
                raise NotImplementedError(f"pair_modify {key} (settings of one sub-style of pair_style hybrid) is "
                                          f"not supported; pair_modify shift and mix without it apply to every "
                                          f"sub-style, as in LAMMPS")
            else:
                raise ValueError(f"pair_modify {key} is not supported")
        self._dirty = True

    def _cmd_neighbor(self, a):
        if a[1] != "bin":
            raise ValueError(f"neighbor style {a[1]} is not supported (bin)")
        self.setup.skin = float(a[0])
        self._dirty = True

    def _cmd_neigh_modify(self, a):
        k = 0
        while k < len(a):
            key = a[k]
            value = a[k + 1] if k + 1 < len(a) else ""
            if key in ("every", "delay"):
                self.setup.neigh[key] = int(value)
            elif key == "check":
                self.setup.neigh["check"] = value == "yes"
            elif key == "binsize":          # LAMMPS' binning of its own neighbour build: not a model setting
                float(value)
            elif key == "exclude":
                k += self._neigh_exclude(a[k + 1:]) - 2
            else:
                raise ValueError(f"neigh_modify {key} is not supported")
            k += 2
        self._dirty = True

    def _neigh_exclude(self, a) -> int:
        """``neigh_modify exclude type I J | group G1 G2 | molecule/intra all | molecule/inter all | none``
        (LAMMPS accumulates them; ``none`` clears; ``group`` of groups of whole atom types: their type
        pairs); returns the words taken, ``exclude`` included."""
        rules = self.setup.neigh.setdefault("exclude", [])
        if not a:
            raise ValueError("neigh_modify exclude needs type I J, molecule/intra all, molecule/inter all or none")
        if a[0] == "none":
            rules.clear()
            return 2
        if a[0] == "type" and len(a) >= 3:
            i, j = int(a[1]), int(a[2])
            if not (1 <= i <= self.setup.n_types and 1 <= j <= self.setup.n_types):
                raise ValueError(f"neigh_modify exclude type {i} {j}: atom types are 1..{self.setup.n_types}")
            rules.append(("type", i - 1, j - 1))
            return 4
        if a[0] in ("molecule/intra", "molecule/inter") and len(a) >= 2:
            if a[1] != "all":
                raise NotImplementedError(f"neigh_modify exclude {a[0]} of group {a[1]}: only group all is supported")
            rules.append((a[0],))
            return 3
        if a[0] == "group" and len(a) >= 3:
            # groups of whole atom types: the pairs between them are type pairs
            types = []
            for gid in a[1:3]:
                if gid == "all":
                    types.append(list(range(self.setup.n_types)))
                    continue
                group = self.setup.groups.get(gid)
                if group is None:
                    raise ValueError(f"neigh_modify exclude group {a[1]} {a[2]}: unknown group {gid!r}")
                if group.types is None:
                    raise NotImplementedError(f"neigh_modify exclude group {a[1]} {a[2]}: group {gid} is not a "
                                              f"type group; only groups of whole atom types (group ID type ...) "
                                              f"are supported")
                types.append(list(group.types))
            for i in types[0]:
                for j in types[1]:
                    rules.append(("type", i, j))
            return 4
        if a[0] in ("group", "molecule"):
            raise NotImplementedError(f"neigh_modify exclude {a[0]} is not supported (type, group of type groups, "
                                      f"molecule/intra all, molecule/inter all, none)")
        raise ValueError(f"neigh_modify exclude {' '.join(a[:3])}: expected type I J, molecule/intra all, "
                         f"molecule/inter all or none")

    # -- dynamics ----------------------------------------------------------------------------
    def _cmd_timestep(self, a):
        dt = float(a[0])
        if not (math.isfinite(dt) and dt > 0):          # named here, not at the run that would use it
            raise ValueError(f"time step must be positive and finite, got {a[0]}")
        self.setup.dt = dt
        self._dirty = True

    def _cmd_fix(self, a):
        fid, group, style = a[0], a[1], a[2]
        self._group_all(group, f"fix {style}")
        if style == "ave/time":
            self._fix_ave_time(fid, a[3:])
            return
        if style == "temp/rescale":
            if len(a) != 8:
                raise ValueError("fix temp/rescale needs N Tstart Tstop window fraction (no keywords)")
            self.setup.fixes[fid] = ("temp/rescale", TempRescale(int(a[3]), float(a[4]), float(a[5]),
                                                                  float(a[6]), float(a[7])))
        elif style == "momentum":
            self.setup.fixes[fid] = ("momentum", _fix_momentum(a[3:]))
        elif style == "recenter":
            self.setup.fixes[fid] = ("recenter", self._fix_recenter(a[3:]))
        elif style == "nve":
            self.setup.fixes[fid] = ("nve",)
        elif style == "nvt":
            if a[3] != "temp":
                raise ValueError("fix nvt needs 'temp T0 T1 TDAMP'")
            kw = dict(zip(a[7::2], a[8::2]))
            if set(kw) - {"tchain"}:
                raise ValueError(f"fix nvt keyword(s) {', '.join(sorted(set(kw) - {'tchain'}))} not supported")
            self.setup.fixes[fid] = ("nvt", NoseHoover((float(a[4]), float(a[5])), float(a[6]),
                                                      int(kw.get("tchain", 3))))
        elif style == "langevin":
            if len(a) > 7:
                raise ValueError(f"fix langevin keyword(s) {' '.join(a[7:])} not supported")
            self.setup.fixes[fid] = ("langevin", float(a[3]), float(a[4]), float(a[5]), int(a[6]))
        elif style in ("npt", "nph"):
            self.setup.fixes[fid] = (style, lammps_fix_nh(style, a[3:]))     # (thermostat, barostat)
        elif style in ("shake", "rattle"):
            if any(f[0] in ("shake", "rattle") for k, f in self.setup.fixes.items() if k != fid):
                raise ValueError(f"fix {style}: more than one fix shake or rattle")
            self.setup.fixes[fid] = (style, lammps_fix_shake(style, a[3:]))
        else:
            raise ValueError(f"fix style {style} is not supported (nve, nvt, npt, nph, langevin, temp/rescale, "
                             f"momentum, recenter, shake, rattle, ave/time)")
        restored = self._restart_fix_states.pop(fid, None)
        if restored is not None and restored["style"] == style:    # LAMMPS Modify::add_fix: same ID and style
            _load_fix_state(self.setup.fixes[fid], restored["state"])
        self._dirty = True

    def _cmd_unfix(self, a):
        for output in self.outputs.lammps_outputs:
            if output.kind == "ave/time" and output.id == a[0] and output.end_stage is None:
                output.end_stage = len(self.stages)
                return
        if a[0] not in self.setup.fixes:
            raise ValueError(f"unknown fix ID {a[0]!r}")
        self.setup.fixes.pop(a[0])
        self._dirty = True

    def _cmd_thermo(self, a):
        if int(a[0]) < 0:
            raise ValueError(f"thermo interval must be >= 0, got {a[0]}")
        self.setup.thermo_every = int(a[0])

    def _cmd_thermo_style(self, a):
        s = self.setup
        s.thermo_norm = None                    # as LAMMPS: thermo_style resets thermo_modify
        if a == ["one"]:
            s.thermo_style = None
        elif a == ["multi"]:
            s.thermo_style = ThermoStyle(list(MULTI), self._names())
            s.thermo_style_line = self._command.line if self._command is not None else None
            s.thermo_style_where = _where(self._command)
        elif a and a[0] == "custom":
            words = self._expand_wildcards(a[1:], "thermo_style custom")
            s.thermo_style = ThermoStyle(words, self._names())   # v_name are checked at 'run'
            s.thermo_style_line = self._command.line if self._command is not None else None
            s.thermo_style_where = _where(self._command)
        else:
            raise ValueError(f"thermo_style {a[0] if a else ''} is not supported (one, multi, custom)")

    def _cmd_thermo_modify(self, a):
        k = 0
        while k < len(a):
            key = a[k]
            if key == "norm":
                self.setup.thermo_norm = _yes_no(a[k + 1], "thermo_modify norm")
            elif key in ("flush", "lost", "lost/bond", "warn", "line"):
                _ = a[k + 1]                    # output details pycumd does not need (no lost atoms)
            elif key == "format":               # screen layout only: pycumd prints its own (rows keep full values)
                _ = a[k + 2] if a[k + 1] != "none" else None
                k += 1 if a[k + 1] == "none" else 2
            elif key in ("temp", "press"):
                c = self.setup.computes.get(a[k + 1])
                if c is None or c.style != ("temp" if key == "temp" else "pressure"):
                    raise ValueError(f"thermo_modify {key} {a[k + 1]}: needs a compute of that kind")
            else:
                raise ValueError(f"thermo_modify {key} is not supported (norm, format, flush, lost, warn, line)")
            k += 2

    def _cmd_compute(self, a):
        if len(a) < 3:
            raise ValueError("compute needs ID group style")
        if a[2] == "msd":                       # any group: the atoms it holds where the compute is defined
            self._compute_msd(a[0], a[1], a[3:])
            return
        self._group_all(a[1], f"compute {a[2]}")
        if a[2] not in COMPUTE_STYLES:          # an unsupported style is named first
            raise ValueError(f"compute style {a[2]} is not supported ({', '.join(COMPUTE_STYLES)})")
        if a[2] == "temp/region":
            if len(a) != 4:
                raise ValueError("compute temp/region takes one region ID and no keywords")
            region = self.setup.regions.get(a[3])
            if region is None:
                raise ValueError(f"region ID {a[3]!r} for compute temp/region does not exist")
            self.setup.computes[a[0]] = Compute(a[0], "temp/region", _region_spec(region))
            return
        if a[2] == "rdf":
            self.setup.computes[a[0]] = Compute(a[0], "rdf", options=_rdf_options(a[3:], self.setup.n_types))
            return
        if a[2] == "pressure":
            if len(a) < 4 or len(a) > 4:
                raise ValueError("compute pressure takes a temperature compute ID and no keywords")
            c = self.setup.computes.get(a[3])
            if c is None or c.style != "temp":
                raise ValueError(f"compute pressure: {a[3]} is not a temp compute")
        elif len(a) > 3:
            raise ValueError(f"compute {a[2]} arguments {' '.join(a[3:])} are not supported")
        self.setup.computes[a[0]] = Compute(a[0], a[2])

    def _compute_msd(self, cid: str, gid: str, a) -> None:
        """``compute ID GROUP msd [com yes|no] [average no]``: the reference positions are those of the
        group's atoms as they are here in the script (LAMMPS takes them when the compute is created)."""
        select = self._set_selection("group", gid)
        kw = dict(zip(a[0::2], a[1::2]))
        if len(a) % 2 or set(kw) - {"com", "average"}:
            raise ValueError(f"compute msd keyword(s) {' '.join(a)} not supported (com yes/no, average no)")
        if _yes_no(kw.get("average", "no"), "compute msd average"):
            raise NotImplementedError("compute msd average yes (a running-average reference) is not supported")
        reference = MSDReference(_yes_no(kw.get("com", "no"), "compute msd com"))
        self.setup.computes[cid] = Compute(cid, "msd", options=(reference.com,), reference=reference)
        if self.stages and self._system is None and not self._edits:
            # the atoms as the last run left them (an action after it: the run goes on unchanged)
            self.stages[-1].after_run.append(lambda sim, plan, index: _capture(reference, sim.system(), select))
        else:
            self._edit_system(lambda system: _capture(reference, system, select))

    def _expand_wildcards(self, words: list, command: str) -> list:
        """LAMMPS ``c_ID[*]`` (``utils::expand_args``): one item per element of the compute's global
        vector, or per column of its global array."""
        expanded = []
        for word in words:
            if word.startswith("c_") and word.endswith("[*]"):
                compute = self.setup.computes.get(word[2:-3])
                if compute is None:
                    raise ValueError(f"{command}: compute ID {word[2:-3]!r} in {word} is not defined")
                n = compute.array_columns or compute.vector_size
                if not n:
                    raise ValueError(f"{command}: {word}: compute {compute.style} has no vector or array")
                expanded.extend(f"{word[:-3]}[{k}]" for k in range(1, n + 1))
            else:
                expanded.append(word)
        return expanded

    def _cmd_uncompute(self, a):
        if self.setup.computes.pop(a[0], None) is None:
            raise ValueError(f"unknown compute ID {a[0]!r}")

    def _fix_ave_time(self, fid, a):
        nevery, nrepeat, nfreq = int(a[0]), int(a[1]), int(a[2])
        values, k = [], 3
        while k < len(a) and a[k] not in ("file", "ave", "mode", "start", "off", "title1", "title2", "title3",
                                          "format"):
            values.append(a[k])
            k += 1
        kw = dict(zip(a[k::2], a[k + 1::2]))
        if kw.get("ave", "one") != "one" or kw.get("mode", "scalar") not in ("scalar", "vector"):
            raise ValueError("fix ave/time: only ave one and mode scalar or vector are supported")
        unknown = set(kw) - {"file", "ave", "mode"}
        if unknown:
            raise ValueError(f"fix ave/time keyword(s) {', '.join(sorted(unknown))} not supported")
        mode = kw.get("mode", "scalar")
        values = self._expand_wildcards(values, "fix ave/time")
        names = self._names()
        for v in values if mode == "scalar" else []:
            item = parse_column(v, names)
            if item[0] == "variable":
                names.check_variable(item[1])
        computes = {cid: c.spec() for cid, c in self.setup.computes.items()}
        output = AveTimeOutput(fid, nevery, nrepeat, nfreq, values, computes, kw.get("file"),
                               first_stage=len(self.stages), where=_where(self._command), mode=mode)
        output.use_computes(self.setup.computes)
        self.outputs.lammps_outputs.append(output)

    def _names(self) -> Names:
        """What c_ID, f_ID and v_name refer to now: computes, fix ave/time, the current command's variables."""
        fixes = {o.id: len(o.values) for o in self.outputs.lammps_outputs
                 if o.kind == "ave/time" and o.end_stage is None and o.mode == "scalar"}
        variables = self._command.variables if self._command is not None else None
        return Names(dict(self.setup.computes), variables or {}, fixes)

    # -- dumps ------------------------------------------------------------------------------
    def _cmd_dump(self, a):
        did, group, style, every, path = a[0], a[1], a[2], int(a[3]), a[4]
        if any(o.kind == "dump" and o.id == did and o.end_stage is None for o in self.outputs.lammps_outputs):
            raise ValueError(f"dump ID {did!r} is already in use")
        if style not in ("atom", "custom", "xyz"):
            raise ValueError(f"dump style {style} is not supported (atom, custom, xyz)")
        if style != "custom" and len(a) > 5:
            raise ValueError(f"dump {style} takes no columns")
        ids, types = self._group_members(group)
        self.outputs.lammps_outputs.append(DumpOutput(did, style, every, path, list(a[5:]), ids, types,
                                                      first_stage=len(self.stages)))

    def _cmd_dump_modify(self, a):
        dump = self._dump(a[0])
        if dump.first_stage < len(self.stages):
            raise NotImplementedError("dump_modify of a dump that has already been written in a run")
        k = 1
        while k < len(a):
            key = a[k]
            if key == "sort":
                if a[k + 1] not in ("id", "off"):
                    raise ValueError(f"dump_modify sort {a[k + 1]} is not supported (pycumd sorts by id)")
                k += 2
            elif key == "format":
                what = a[k + 1]
                if what == "none":
                    dump.format_line = dump.format_int = dump.format_float = None
                    k += 2
                elif what == "line":
                    dump.format_line = a[k + 2]
                    k += 3
                elif what == "int":
                    dump.format_int = a[k + 2]
                    k += 3
                elif what == "float":
                    dump.format_float = a[k + 2]
                    k += 3
                else:
                    raise ValueError("dump_modify format per column is not supported (line, int, float, none)")
                dump.formats()                 # checked now
            elif key in ("scale", "image"):
                setattr(dump, key, _yes_no(a[k + 1], f"dump_modify {key}"))
                k += 2
            elif key == "flush":
                _yes_no(a[k + 1], "dump_modify flush")   # pycumd flushes every frame
                k += 2
            elif key == "element":
                dump.element = list(a[k + 1:k + 1 + self.setup.n_types])
                if len(dump.element) != self.setup.n_types:
                    raise ValueError("dump_modify element needs one name per atom type")
                self.outputs.type_names = list(dump.element)      # also the names of --trajectory
                k += 1 + self.setup.n_types
            else:
                raise ValueError(f"dump_modify {key} is not supported (sort, format, scale, image, element, flush)")

    def _cmd_undump(self, a):
        self._dump(a[0]).end_stage = len(self.stages)

    def _dump(self, did):
        for o in self.outputs.lammps_outputs:
            if o.kind == "dump" and o.id == did and o.end_stage is None:
                return o
        raise ValueError(f"unknown dump ID {did!r}")

    # -- groups and atom edits ----------------------------------------------------------------
    def _cmd_group(self, a):
        gid, style = a[0], a[1]
        if gid == "all":
            raise ValueError("group all cannot be redefined")
        if style == "type":
            types = set()
            for spec in a[2:]:
                if ":" in spec or "<>" in a[2:]:
                    raise ValueError("group type with ranges 'a:b' or '<>' is not supported (list types, or a*b)")
                types.update(_type_range(spec, self.setup.n_types))
            self.setup.groups[gid] = _Group(types=sorted(types))
        elif style == "region":
            if len(a) != 3:
                raise ValueError("group region takes one region ID")
            region = self.setup.regions.get(a[2])
            if region is None:
                raise ValueError(f"unknown region {a[2]!r}")
            group = _Group(ids=None)
            self.setup.groups[gid] = group
            # static, as LAMMPS: the atoms inside now (at the next run's start after a run)
            self._edit_system(lambda system: group.set_ids(system.ids[_inside(region, system)]))
        elif style == "id":
            select = _id_selection(a[2:])
            group = _Group(ids=None)
            self.setup.groups[gid] = group
            # static, as LAMMPS: the atoms with those ids now (at the next run's start after a run)
            self._edit_system(lambda system: group.set_ids(system.ids[select(system.ids)]))
        elif style in ("delete", "clear"):
            self.setup.groups.pop(gid, None)
        else:
            raise ValueError(f"group style {style} is not supported (type, id, region, delete)")

    def _group_members(self, gid):
        """(ids, types) of a group for outputs: (None, None) for all."""
        if gid == "all":
            return None, None
        group = self.setup.groups.get(gid)
        if group is None:
            raise ValueError(f"unknown group {gid!r}")
        if group.types is not None:
            return None, list(group.types)
        if group.ids is None:
            raise NotImplementedError(f"group {gid} (a region group defined after a run) in a dump is not supported")
        return [int(i) for i in group.ids], None

    def _group_all(self, gid, what):
        """pycumd applies fixes, computes and velocity commands to all atoms: other groups are refused
        unless they hold every atom type."""
        if gid == "all":
            return
        group = self.setup.groups.get(gid)
        if group is None:
            raise ValueError(f"unknown group {gid!r}")
        if group.types is not None and set(group.types) == set(range(self.setup.n_types)):
            return
        raise NotImplementedError(f"{what} on group {gid}: pycumd applies it to group all only")

    def _cmd_displace_atoms(self, a):
        self._group_all(a[0], "displace_atoms")
        if a[1] != "move":
            raise ValueError(f"displace_atoms style {a[1]} is not supported (move)")
        shift = np.array([float(x) for x in a[2:5]])
        kw = dict(zip(a[5::2], a[6::2]))
        if set(kw) - {"units"}:
            raise ValueError(f"displace_atoms keyword(s) {', '.join(sorted(set(kw) - {'units'}))} not supported")
        shift = shift * self._length_unit(kw.get("units", "lattice"), "displace_atoms")
        self._edit_system(lambda system: _displace(system, shift))

    def _cmd_delete_atoms(self, a):
        if a[0] != "overlap":
            raise ValueError(f"delete_atoms style {a[0]} is not supported (overlap)")
        cutoff = float(a[1])
        g1, g2 = self._group_members(a[2]), self._group_members(a[3])
        if len(a) > 4:
            raise ValueError(f"delete_atoms keyword(s) {' '.join(a[4:])} not supported")
        self._edit_system(lambda system: _delete_overlaps(system, cutoff, g1, g2))

    def _cmd_set(self, a):
        """LAMMPS ``set STYLE ID keyword value ...`` (``Set::command``): the atoms are selected once
        (``atom`` ids or ``type`` ranges ``N``, ``*``, ``N*``, ``*N``, ``M*N``; ``group ID``; ``region ID``
        at their current positions), then each keyword is applied to them in order."""
        if len(a) < 4:
            raise ValueError("needs STYLE ID keyword value ...")
        if self.setup.box is None and self._system is None and not self.stages:
            raise ValueError("before a box is defined")
        style, spec = a[0], a[1]
        select = self._set_selection(style, spec)
        edits, k = [], 2
        while k < len(a):
            key = a[k]
            if key == "type":
                new_type = int(a[k + 1])
                self._set_check_type(new_type)
                edits.append(_SetType(new_type))
                k += 2
            elif key == "type/fraction":
                new_type, fraction, seed = int(a[k + 1]), float(a[k + 2]), int(a[k + 3])
                self._set_check_type(new_type)
                if not 0.0 <= fraction <= 1.0:
                    raise ValueError(f"type/fraction: fraction {a[k + 2]} is not in [0, 1]")
                if seed <= 0:
                    raise ValueError(f"type/fraction: seed {a[k + 3]} must be a positive integer")
                edits.append(_SetType(new_type, fraction, seed))
                k += 4
            elif key in ("x", "y", "z", "vx", "vy", "vz"):
                edits.append(_SetComponent(key, float(a[k + 1])))
                self._wrap_at_run |= key in ("x", "y", "z")
                k += 2
            elif key == "image":
                flags = [None if w == "NULL" else int(w) for w in a[k + 1:k + 4]]
                if len(flags) != 3:
                    raise ValueError("image needs three flags (an integer or NULL each)")
                edits.append(_SetImage(flags))
                k += 4
            elif key == "charge":
                edits.append(self._set_charge(style, spec, float(a[k + 1])))
                k += 2
            elif key == "mass":
                raise ValueError(f"mass: atom_style {self.setup.atom_style} has no per-atom masses (as in "
                                 f"LAMMPS, set mass needs an atom style with them); masses are per type: use "
                                 f"the mass command")
            else:
                raise ValueError(f"keyword {key} is not supported (type, type/fraction, x, y, z, vx, vy, vz, "
                                 f"image, charge)")
        if any(isinstance(e, _SetType) for e in edits):
            self._set_types_moved([e.new_type for e in edits if isinstance(e, _SetType)])
            self._freeze_type_groups()
        if edits:
            self._edit_system(lambda system: _apply_set(system, select(system), edits))

    def _set_selection(self, style: str, spec: str):
        """``system -> mask`` of the atoms a ``set`` command selects (as ``Set::selection``)."""
        if style == "atom":
            lo, hi = _id_bounds(spec)
            return lambda system: (system.ids >= lo) & (system.ids <= hi)
        if style == "type":
            types = np.array(list(_type_range(spec, self.setup.n_types)))
            return lambda system: np.isin(system.types, types)
        if style == "group":
            if spec == "all":
                return lambda system: np.ones(system.n_atoms, bool)
            group = self.setup.groups.get(spec)
            if group is None:
                raise ValueError(f"group: unknown group {spec!r}")

            def in_group(system):
                mask = np.ones(system.n_atoms, bool)
                if group.types is not None:
                    mask &= np.isin(system.types, group.types)
                if group.ids is not None:
                    mask &= np.isin(system.ids, group.ids)
                return mask
            return in_group
        if style == "region":
            region = self.setup.regions.get(spec)
            if region is None:
                raise ValueError(f"region: unknown region {spec!r}")
            return lambda system: _inside(region, system)
        if style == "mol":
            raise ValueError("mol: the atom styles pycumd supports (atomic, charge) have no molecule IDs")
        raise ValueError(f"style {style} is not supported (atom, type, group, region)")

    def _set_check_type(self, new_type: int) -> None:
        if not 1 <= new_type <= self.setup.n_types:
            raise ValueError(f"type: atom type {new_type} is out of range 1..{self.setup.n_types}")

    def _set_charge(self, style: str, spec: str, charge: float) -> "_SetCharge":
        """``set ... charge Q``: the selected atoms' charges (per atom, as LAMMPS).  A selection of whole
        types (``set type``, a group of types, ``all``) also sets those types' charge for the Coulomb
        styles that take charges per type (``lj/cut/coul/cut``, ``coul/debye``, ...); any other selection
        makes the per-type charges unknown to them (they then stop with an error naming this)."""
        s = self.setup
        if s.atom_style not in ("charge", "full"):
            raise ValueError(f"charge: atom_style {s.atom_style} has no charges (use atom_style charge or full)")
        if style == "type":
            types = list(_type_range(spec, s.n_types))
        elif style == "group" and (spec == "all" or s.groups.get(spec) is not None
                                   and s.groups[spec].types is not None):
            types = list(range(s.n_types)) if spec == "all" else list(s.groups[spec].types)
        else:
            types = None
            s.charges_set_per_atom = f"set {style} {spec} charge {charge:g}"
        for t in types or ():
            s.charges[t] = charge
        self._dirty = True
        return _SetCharge(charge)

    def _freeze_type_groups(self) -> None:
        """LAMMPS groups are static: a ``group ID type`` holds the atoms of those types when it was
        defined. Before atoms change type, each such group becomes the list of its atoms' ids."""
        for group in self.setup.groups.values():
            if group.types is not None:
                types, group.types = np.asarray(group.types), None
                self._edit_system(lambda system, group=group, types=types:
                                  group.set_ids(system.ids[np.isin(system.types, types)]))

    def _set_types_moved(self, new_types) -> None:
        """Atoms that change type keep their charge in LAMMPS; with charges per type that holds only
        if every type has the same charge: otherwise the new types' charges must be set again
        (``set type T charge Q``) before a Coulomb style can run."""
        s = self.setup
        if s.atom_style == "charge" and len(set(s.charges.values())) > 1:
            for t in new_types:
                s.charges.pop(t - 1, None)
        self._dirty = True

    def _cmd_replicate(self, a):
        """LAMMPS ``replicate NX NY NZ [bbox|bondlist]`` (``Replicate::command``): copy (ix, iy, iz) of
        atom ``id`` gets id ``id + (iz NY NX + iy NX + ix) max_id``, its unwrapped position shifted
        by (ix, iy, iz) old box lengths and wrapped into the new box with image flags; types and
        velocities are copied, the box grows ``NX x NY x NZ`` times. ``bbox`` and ``bondlist`` only
        change how LAMMPS finds the copies (and its bonds, which pycumd's atom styles have not)."""
        if len(a) < 3 or len(a) > 4 or (len(a) == 4 and a[3] not in ("bbox", "bondlist")):
            raise ValueError("replicate takes NX NY NZ and optionally bbox or bondlist")
        counts = [int(w) for w in a[:3]]
        if min(counts) <= 0:
            raise ValueError(f"replication grid {'x'.join(a[:3])}: every count must be > 0")
        if self.setup.box is None:
            raise ValueError("replicate before a box is defined")
        box = self.setup.box
        self.setup.box = Box(np.asarray(box.L) * counts, box.origin)
        groups = [g for g in self.setup.groups.values() if g.types is None]
        self._edit_system(lambda system: _replicate(system, counts, groups))

    def _fix_recenter(self, a) -> Recenter:
        kw = dict(zip(a[3::2], a[4::2]))
        if set(kw) - {"units"}:
            raise ValueError(f"fix recenter keyword(s) {', '.join(sorted(set(kw) - {'units'}))} not supported")
        scale = self._length_unit(kw.get("units", "lattice"), "fix recenter")
        return Recenter([None if v == "NULL" else "INIT" if v == "INIT" else float(v) * scale for v in a[:3]])

    def _cmd_reset_timestep(self, a):
        step = int(a[0])
        if len(a) > 1:
            raise ValueError(f"reset_timestep keyword(s) {' '.join(a[1:])} not supported")
        if step < 0:
            raise ValueError(f"timestep must be >= 0, got {step}")
        if not self.stages:
            self.first_step = step
            return
        # after the last run's actions; the next stage starts from the simulation's step
        self._step_origin = (len(self.stages), step)
        self.stages[-1].after_run.append(lambda sim, plan, index: _reset_step(sim, step))

    def _cmd_print(self, a):
        if not a:
            raise ValueError("print needs text")
        kw = dict(zip(a[1::2], a[2::2]))
        if set(kw) - {"screen"}:
            raise ValueError(f"print keyword(s) {', '.join(sorted(set(kw) - {'screen'}))} not supported")
        text, screen = a[0], self.outputs.screen and kw.get("screen", "yes") == "yes"
        deferred = self._command is not None and self._command.deferred
        if deferred:                            # thermo keywords, computes or fixes: values at the last run's end
            if not self.stages:
                raise ValueError(f"print {text!r}: thermo keywords, computes and fixes in a print need a run "
                                 f"before it")
            names, norm, where = self._names(), self.setup.thermo_norm, _where(self._command)
            names.check_text(text)
            stage = self.stages[-1]
            stage.after_run.append(lambda sim, plan, index: print(_substitute_at_run(text, names, norm, sim, where),
                                                                  flush=True) if screen else None)
            return
        if not screen:
            return
        if not self.stages:
            print(text, flush=True)             # nothing has run yet: in order now
        else:
            self.stages[-1].after_run.append(lambda sim, plan, index: print(text, flush=True))

    def _cmd_min_style(self, a):
        if len(a) != 1 or a[0] not in MIN_STYLES:
            raise ValueError(f"style {' '.join(a)} is not supported (use {' or '.join(MIN_STYLES)})")
        self.setup.minimize["style"] = a[0]

    def _cmd_min_modify(self, a):
        if len(a) != 2 or a[0] != "dmax":
            raise ValueError(f"keyword {' '.join(a)} is not supported (only dmax VALUE)")
        self.setup.minimize["dmax"] = float(a[1])

    def _cmd_minimize(self, a):
        if len(a) != 4:
            raise ValueError("minimize needs etol ftol maxiter maxeval")
        settings = MinimizeSettings(float(a[0]), float(a[1]), int(a[2]), int(a[3]), **self.setup.minimize)
        fixes = self.setup.fixes                # minimisation needs no fix nve: one holds the time step (FIRE)
        if any(f[0] in ("shake", "rattle") for f in fixes.values()):
            raise ValueError("fix shake or rattle cannot be used with minimization (unfix it first, as LAMMPS asks)")
        borrowed = not any(f[0] in ("nve", "nvt") for f in fixes.values())
        if borrowed:
            fixes["minimize"] = ("nve",)
        try:
            self._cmd_run(["0"])                # a stage like 'run 0' that minimises (pycumd.minimize)
        finally:
            if borrowed:
                del fixes["minimize"]
                self._dirty = True
        self.stages[-1].minimize = settings

    def _cmd_run(self, a):
        if self._wrap_at_run:
            self._edit_system(_wrap_into_box)
            self._wrap_at_run = False
        steps, ramp, pre = self._run_length(a)
        s = self.setup
        if steps > 0 and not any(f[0] in INTEGRATION_FIXES for f in s.fixes.values()):
            raise NotImplementedError(f"run {steps} without fix nve, nvt, npt or nph: LAMMPS then computes forces "
                                      f"on atoms that do not move; pycumd needs an integration fix (run 0, a "
                                      f"single-point evaluation, needs none)")
        first = not self.stages
        system = self._current_system() if first else self._system
        self._check_masses("run")
        self._restart_fix_states = {}           # LAMMPS: restart info of fixes is used up by the first run
        if first or self._dirty or system is not None or self._edits:     # new components
            if s.pair is None and self._restart_pair_missing is not None:
                raise ValueError(f"pair_style {self._restart_pair_missing} is not stored in restart files (as in "
                                 f"LAMMPS): give pair_style and pair_coeff after read_restart")
            if s.pair is None:
                raise ValueError("run before pair_style")
            potential = self._potential()
            potential.table(s.n_types)          # every type pair has coefficients (named here, at 'run')
            stage = Stage(steps, potential, self._integrator(), NeighborOptions(
                s.skin, s.neigh["every"], s.neigh["delay"], s.neigh["check"], tuple(s.neigh.get("exclude", ()))),
                s.thermo_every,
                system=system, system_edits=self._edits)
        else:                                                               # the same simulation goes on
            previous = self.stages[-1]
            stage = Stage(steps, previous.potential, previous.integrator, previous.neighbor, s.thermo_every,
                          rebuild=False)
        molecular = self._molecular_edit()
        if molecular is not None and stage.rebuild:
            stage.system_edits = [*stage.system_edits, molecular]
        stage.ramp, stage.pre = ramp, pre
        style, names = s.thermo_style, self._names()
        if style is not None or s.thermo_norm is not None:
            try:                                # variables and fixes as they are now; v_name checked
                style = (style or one_style()).bind(names, s.thermo_norm, s.thermo_style_where)
            except ValueError as exc:
                raise ValueError(f"thermo_style custom (line {s.thermo_style_line}): {exc}") from None
            nfreq = {o.id: o.nfreq for o in self.outputs.lammps_outputs if o.kind == "ave/time" and o.end_stage is None}
            for word, fid in style.fix_items():
                if s.thermo_every % nfreq[fid]:       # LAMMPS' Thermo::init
                    raise ValueError(f"thermo {s.thermo_every} and {word} (fix ave/time {fid}, Nfreq "
                                     f"{nfreq[fid]}) are not computed at compatible times: thermo must be a "
                                     f"multiple of Nfreq")
        stage.thermo_style = style
        stage.checkpoint_settings = self._restart_record()    # restart N FILE: what read_restart restores
        for output in self.outputs.lammps_outputs:    # fix ave/time: variables as they are at this run
            if output.kind == "ave/time" and output.end_stage is None:
                for v in output.values:
                    if v.startswith("v_"):
                        names.check_variable(v[2:])
                output.stage_context.extend([None] * (len(self.stages) + 1 - len(output.stage_context)))
                output.stage_context[len(self.stages)] = {"norm": s.thermo_norm, "variables": names.variables}
        self.stages.append(stage)
        self._system, self._edits, self._dirty = None, [], False

    def _run_length(self, a) -> tuple[int, tuple | None, bool]:
        """``run N [upto] [start S] [stop S] [pre yes|no] [post yes|no]`` (LAMMPS ``Run::command``): the
        number of steps; the (start, stop) steps that ramps and the run fraction span when
        ``start``/``stop`` are given (None: the run's own first and last step); ``pre``."""
        if not a:
            raise ValueError("run needs a number of steps")
        n, upto, start, stop, pre, k = int(a[0]), False, None, None, True, 1
        while k < len(a):
            key = a[k]
            if key == "upto":
                upto, k = True, k + 1
            elif key in ("start", "stop"):
                if k + 1 >= len(a):
                    raise ValueError(f"run {key} needs a step number")
                if key == "start":
                    start = int(a[k + 1])
                else:
                    stop = int(a[k + 1])
                k += 2
            elif key in ("pre", "post"):
                # pre no: a run that continues the previous one does not set its fixes up again (their
                # state goes on as the last step left it); the neighbour list and forces are computed
                # again, which changes nothing. post: LAMMPS' timing summary, which pycumd does not print
                value = _yes_no(a[k + 1] if k + 1 < len(a) else "", f"run {key}")
                pre = value if key == "pre" else pre
                k += 2
            elif key == "every":
                raise NotImplementedError("run every (commands between chunks of a run) is not supported")
            else:
                raise ValueError(f"run keyword {key} is not supported (upto, start, stop, pre, post)")
        if n < 0:
            raise ValueError(f"run length must be >= 0, got {n}")
        if not upto and start is None and stop is None:
            return n, None, pre
        now = self._step_now(a)
        steps = n - now if upto else n
        if steps < 0:
            raise ValueError(f"run {n} upto: the step is already {now}")
        if start is not None and start > now:
            raise ValueError(f"run start {start} is after the run's first step {now}")
        if stop is not None and stop < now + steps:
            raise ValueError(f"run stop {stop} is before the run's last step {now + steps}")
        if start is None and stop is None:
            return steps, None, pre
        return steps, (now if start is None else start, now + steps if stop is None else stop), pre

    def _step_now(self, a) -> int:
        """The step number at which the next run starts (first step, run lengths, reset_timestep)."""
        index, step = self._step_origin
        later = self.stages[index:]
        if any(stage.minimize is not None for stage in later):
            raise NotImplementedError(f"run {' '.join(a)} after minimize: the steps a minimisation takes are "
                                      f"known only when it runs (use reset_timestep after it)")
        return (self.first_step if step is None else step) + sum(stage.steps for stage in later)

    def _potential(self):
        """The pair potential of ``pair_style`` + ``pair_coeff`` (+ per-type charges for Coulomb styles)."""
        s = self.setup
        style, args = s.pair
        try:
            mixing = s.pair_mixing if s.pair_mixing_given or not style.startswith("lj/charmm") else None
            potential = potential_from_lammps(style, args, s.pair_coeffs, n_types=s.n_types,
                                              cutoff_mode=s.pair_cutoff_mode, mixing=mixing, charges=s.charges,
                                              units=s.units, directory=self.base_dir)
        except ValueError as exc:
            if s.charges_set_per_atom and "charge" in str(exc):
                raise ValueError(f"{exc} ('{s.charges_set_per_atom}' gave part of a type another charge; pair_style "
                                 f"{style} takes charges per type)") from exc
            raise
        long_range = getattr(potential, "long_range", False)
        if long_range and s.kspace is None:
            raise ValueError(f"pair_style {style} requires a kspace_style (LAMMPS: 'Must use a KSpace style with "
                             f"this pair style')")
        if s.kspace is not None and not long_range:
            raise ValueError(f"kspace_style {s.kspace[0]} (line {s.kspace[2]}) needs a long-range Coulomb pair style "
                             f"(coul/long, lj/cut/coul/long, buck/coul/long, born/coul/long, lj/charmm/coul/long, or a "
                             f"*/coul/msm style), not {style} (LAMMPS: 'KSpace style is incompatible with Pair style')")
        if long_range and (s.kspace[0] == "msm") != (potential.splitting == "msm"):   # MSM splits 1/r its own way
            raise ValueError(f"kspace_style {s.kspace[0]} (line {s.kspace[2]}) and pair_style {style} do not go "
                             f"together: kspace_style msm needs a */coul/msm pair style (coul/msm, lj/cut/coul/msm, "
                             f"lj/charmm/coul/msm) and those need kspace_style msm (LAMMPS: 'KSpace style is "
                             f"incompatible with Pair style')")
        _check_boundary(s, long_range, style)
        if long_range:
            from ..kspace.base import make_solver

            potential.kspace = make_solver(s.kspace[0], s.kspace[1], **_solver_keywords(s.kspace[0], s.kspace_modify))
            potential.table_bits = s.pair_table
        return potential

    # -- restarts and data files ------------------------------------------------------------------
    def _cmd_restart(self, a):
        every = int(a[0])
        if every < 0:
            raise ValueError(f"restart interval must be >= 0, got {every}")
        if every == 0:
            self.outputs.checkpoint, self.outputs.checkpoint_every = None, 0
            return
        if len(a) != 2:
            raise NotImplementedError("restart N FILE takes one file (pycumd keeps the previous checkpoint "
                                      "as FILE.1); two alternating files are not supported")
        if "*" in a[1]:
            raise NotImplementedError("restart file names with '*' (one file per step) are not supported")
        self.outputs.checkpoint, self.outputs.checkpoint_every = a[1], every

    def _cmd_write_restart(self, a):
        if len(a) != 1:
            raise ValueError("write_restart takes one file name and no keywords")
        self._after_last_run("write_restart", write_checkpoint_action(a[0], self._restart_record()))

    def _restart_record(self):
        """A function returning what a restart file carries besides the atoms, box, masses, units and step
        (LAMMPS ``write_restart``): atom style and per-type charges, timestep, pair style with its
        coefficients and ``pair_modify`` settings (not for styles LAMMPS does not store:
        :data:`PAIR_STYLES_NOT_IN_RESTART`), groups, and the state of the fixes that store one (nvt, npt,
        nph), keyed by fix ID; called when the file is written."""
        s = self.setup
        pair = None
        if s.pair is not None:
            pair = {"style": s.pair[0], "args": list(s.pair[1]), "shift": s.pair_cutoff_mode, "mix": s.pair_mixing,
                    "coeffs": [[i, j, list(c)] for i, j, c in s.pair_coeffs]}
        settings = {"atom_style": s.atom_style, "charges": {str(t): float(q) for t, q in s.charges.items()},
                    "timestep": s.dt if s.dt is not None else get_units(s.units).dt, "pair": pair}
        fixes = {fid: (f[0], _fix_state_holder(f)) for fid, f in s.fixes.items() if _fix_state_holder(f) is not None}
        groups = dict(s.groups)

        def record() -> dict:
            return {"lammps": {**settings, "groups": {gid: g.record() for gid, g in groups.items()},
                               "fixes": {fid: {"style": style, "state": holder.restart_state()}
                                         for fid, (style, holder) in fixes.items()}}}
        return record

    def _cmd_write_data(self, a):
        unknown = [k for k in a[1:] if k != "nocoeff"]
        if unknown:
            raise ValueError(f"write_data keyword(s) {' '.join(unknown)} not supported")
        path, style, charges = a[0], self.setup.atom_style, dict(self.setup.charges)
        pair_coeffs = None if "nocoeff" in a[1:] else self._pair_coeffs_section()
        self._after_last_run("write_data", lambda sim, plan, index: write_lammps_data(
            path, sim.system(), atom_style=style, charges=charges, pair_coeffs=pair_coeffs,
            bonded_coeffs="nocoeff" not in a[1:]))

    def _pair_coeffs_section(self):
        """The pair coefficients as a data file section (LAMMPS ``write_data``): ``Pair Coeffs`` when
        only pairs I I were given (others mix when read), ``PairIJ Coeffs`` when every pair I <= J was;
        None for styles LAMMPS writes none of (:data:`PAIR_STYLES_NOT_IN_DATA`) or no pair style."""
        s = self.setup
        if s.pair is None or s.pair[0] in PAIR_STYLES_NOT_IN_DATA:
            return None
        latest = {}
        for i, j, args in s.pair_coeffs:
            latest[(i, j)] = args
        if not latest:
            return None
        title = f"# {s.pair[0]}"
        if all(i == j for i, j in latest):
            return f"Pair Coeffs {title}", [" ".join([str(i + 1), *latest[i, j]]) for i, j in sorted(latest)]
        if len(latest) == s.n_types * (s.n_types + 1) // 2:
            return f"PairIJ Coeffs {title}", [" ".join([str(i + 1), str(j + 1), *latest[i, j]])
                                               for i, j in sorted(latest)]
        raise ValueError("pair coefficients were given for some type pairs I != J but not all: a data file's "
                         "Pair Coeffs section cannot hold them (give every pair I <= J, or use nocoeff)")

    def _after_last_run(self, command: str, action) -> None:
        if not self.stages:
            raise NotImplementedError(f"{command} before the first run is not supported (use 'run 0' first)")
        if self._system is not None or self._edits:
            raise NotImplementedError(f"{command} after commands that change the atoms since the last run "
                                      f"is not supported")
        self.stages[-1].after_run.append(action)

    def _cmd_read_restart(self, a):
        if len(a) != 1:
            raise ValueError("read_restart takes one file name")
        if self.stages:
            raise NotImplementedError("read_restart after a run is not supported")
        path = Path(a[0])
        if not path.is_absolute() and self.base_dir is not None:
            path = Path(self.base_dir) / path
        checkpoint = read_checkpoint(path)
        system = system_from_checkpoint(checkpoint)
        s = self.setup
        s.units, s.box, s.n_types = checkpoint.meta["units"], system.box, system.n_types
        s.masses.update({t: float(m) for t, m in enumerate(system.masses)})
        self.first_step = checkpoint.step
        self._set_system(system)
        # a checkpoint of pycumd's own runs has no LAMMPS settings: the time step it ran with
        record = checkpoint.context.get("lammps", {"timestep": checkpoint.meta["dt"]})
        s.dt = float(record["timestep"])
        s.atom_style = record.get("atom_style", s.atom_style)
        s.charges = {int(t): float(q) for t, q in record.get("charges", {}).items()}
        pair = record.get("pair")
        self._restart_pair_missing = None
        if pair is not None and pair["style"] in PAIR_STYLES_NOT_IN_RESTART:
            s.pair, s.pair_coeffs, self._restart_pair_missing = None, [], pair["style"]
        elif pair is not None:
            s.pair, s.pair_coeffs = (pair["style"], list(pair["args"])), [(i, j, list(c)) for i, j, c in pair["coeffs"]]
            s.pair_cutoff_mode, s.pair_mixing = pair["shift"], pair["mix"]
        s.groups.update({gid: _Group.from_record(g) for gid, g in record.get("groups", {}).items()})
        self._restart_fix_states = dict(record.get("fixes", {}))
        if system.topology is not None:     # bond_style ... and special_bonds, as LAMMPS' restart files
            s.n_term_types = dict(system.topology.n_types)
            s.bonded, s.special = dict(system.topology.styles), system.topology.special

    def _cmd_read_data(self, a):
        if len(a) != 1:
            raise ValueError("read_data keywords are not supported")
        path = Path(a[0])
        if not path.is_absolute() and self.base_dir is not None:
            path = Path(self.base_dir) / path
        data = read_lammps_data(path, self.setup.atom_style, per_type_charges=False)
        s = self.setup
        topology = None
        if "terms" in data:
            s.n_term_types = dict(data["n_term_types"])
            for kind in KINDS:
                if s.n_term_types.get(kind, 0) and kind in s.bonded:
                    s.bonded[kind] = s.bonded[kind].renewed()     # new types: no coefficients
                for t, words, line in data["term_coeffs"][kind]:     # as a bond_coeff command each (LAMMPS)
                    if kind not in s.bonded:
                        raise ValueError(f"{path}:{line}: {kind.capitalize()} Coeffs need a {kind}_style command "
                                         f"before read_data (as in LAMMPS)")
                    s.bonded[kind].coeff(t, words)
            max_id = int(data["ids"].max(initial=0))
            molecule = np.zeros(max_id + 1, np.int64)
            molecule[data["ids"]] = data["molecules"]
            topology = Topology(molecule, dict(data["terms"]), dict(data["term_types"]), dict(data["n_term_types"]))
        s.box, s.n_types = data["box"], data["n_types"]
        s.masses.update(data["masses"])
        s.charges = data["charges"]          # the types whose atoms all carry one charge
        s.charges_set_per_atom = ""
        for i, j, words, line in data["pair_coeffs"]:     # as a pair_coeff command each (LAMMPS)
            if s.pair is None:
                raise ValueError(f"{path}:{line}: Pair Coeffs need a pair_style command before read_data (as in "
                                 f"LAMMPS)")
            s.pair_coeffs.append((i, j, list(words)))
        missing = [t + 1 for t in range(s.n_types) if t not in s.masses]
        if missing:
            raise ValueError(f"{path}: no Masses for type(s) {missing}")
        masses = [s.masses[t] for t in range(s.n_types)]
        names = type_names_of_masses(path)
        if names and self.outputs.type_names is None:       # element symbols for the trajectories
            self.outputs.type_names = [names.get(t) for t in range(s.n_types)]
        self._set_system(System(s.box, data["positions"] - np.asarray(s.box.origin), masses, s.units,
                                types=data["types"], velocities=data["velocities"], images=data["images"],
                                ids=data["ids"], topology=topology, charges=data.get("atom_charges")))

    # -- helpers -----------------------------------------------------------------------------
    def _current_system(self) -> System:
        """The system set since the last run, or the one built from the setup commands."""
        if self._system is not None:
            return self._system
        s = self.setup
        if s.box is None:
            raise ValueError("no box yet: use region + create_box + create_atoms first")
        # a type without a mass yet gets 1.0 until its mass command comes (LAMMPS lets set, group,
        # displace_atoms ... come before mass); velocity, run and minimize check (_check_masses)
        self._masses_pending = {t for t in range(s.n_types) if t not in s.masses}
        positions = np.concatenate(s.positions) if s.positions else np.empty((0, 3))
        types = np.concatenate(s.types) if s.types else np.empty(0, np.int32)
        masses = [s.masses.get(t, 1.0) for t in range(s.n_types)]
        charges = np.zeros(len(types)) if s.atom_style in ("charge", "full") else None   # LAMMPS' q = 0
        return System(s.box, positions - np.asarray(s.box.origin), masses, s.units, types=types, charges=charges)

    def _check_masses(self, command: str) -> None:
        """LAMMPS' check before ``velocity``, ``run`` and ``minimize``: every type has its mass (of the
        system built, or of the setup commands where none is built yet)."""
        pending = self._masses_pending
        if self._system is None and not self.stages:
            pending = {t for t in range(self.setup.n_types) if t not in self.setup.masses}
        if pending:
            missing = ", ".join(str(t + 1) for t in sorted(pending))
            raise ValueError(f"mass not set for atom type(s) {missing}: {command} needs every type's mass (the mass "
                             f"command, or Masses in the data file), as in LAMMPS")

    def _set_system(self, system: System) -> None:
        """A new system for the next run (its edits so far are superseded)."""
        self._system, self._edits, self._dirty = system, [], True

    def _edit_system(self, edit) -> None:
        """Apply ``edit(system)`` now before the first run (or to a system set since the last
        run); after a run, to the continuing system at the start of the next one."""
        if not self.stages or self._system is not None:
            system = self._current_system()
            edit(system)
            self._set_system(system)
        else:
            self._edits.append(edit)

    def _integrator(self) -> VelocityVerlet:
        """The integrator (and thermostat) of the fixes defined now."""
        s = self.setup
        integrators = [f for f in s.fixes.values() if f[0] in INTEGRATION_FIXES]
        langevin = [f for f in s.fixes.values() if f[0] == "langevin"]
        if len(integrators) > 1:
            raise ValueError("exactly one of fix nve, nvt, npt or nph is needed to run")
        thermostat = barostat = None
        if not integrators:                     # run 0: nothing is integrated
            pass
        elif integrators[0][0] == "nvt":
            thermostat = integrators[0][1]
        elif integrators[0][0] in ("npt", "nph"):
            thermostat, barostat = integrators[0][1]
        if langevin:
            if thermostat is not None:
                raise ValueError("fix langevin with fix nvt: use one thermostat")
            _, t0, t1, damp, seed = langevin[0]
            thermostat = Langevin((t0, t1), damp, seed)
        # constraints right after the thermostat: RATTLE's position constraint (LAMMPS: its final_integrate)
        # runs before every end-of-step fix
        constraints = [f[1] for f in s.fixes.values() if f[0] in ("shake", "rattle")]
        extra = [f[1] for f in s.fixes.values() if f[0] in ("temp/rescale", "momentum", "recenter")]
        dt = s.dt if s.dt is not None else get_units(s.units).dt
        if barostat is not None:
            # the barostat drives its thermostat itself; the constraints and the other fixes follow it
            # (fix shake's post_force before npt's hooks that read the pressure at the next step)
            integrator = VelocityVerlet(dt, thermostat, barostat)
            if extra or constraints:
                integrator.thermostat = FixChain([integrator.thermostat] + constraints + extra)
            return integrator
        if extra or constraints:
            thermostat = FixChain(([thermostat] if thermostat is not None else []) + constraints + extra)
        return VelocityVerlet(dt, thermostat, barostat)


@dataclass
class _Group:
    """A LAMMPS group: atom types (0-based) or, for a region group, the ids inside it when defined."""

    types: list | None = None
    ids: np.ndarray | None = None

    def set_ids(self, ids) -> None:
        self.ids = np.asarray(ids)

    def record(self) -> dict:
        """The group as a restart file stores it (JSON)."""
        return {"types": None if self.types is None else [int(t) for t in self.types],
                "ids": None if self.ids is None else [int(i) for i in self.ids]}

    @classmethod
    def from_record(cls, record: dict) -> "_Group":
        return cls(types=record["types"], ids=None if record["ids"] is None else np.array(record["ids"], np.int64))


def lammps_fix_shake(style: str, a) -> Shake:
    """``fix ID all shake|rattle TOL ITER N [b types] [a types] [t types] [m masses]`` (LAMMPS ``FixShake``)."""
    if len(a) < 5:
        raise ValueError(f"fix {style} needs TOL ITER N and at least one of b, a, t, m with values")
    try:
        tol, iters, every = float(a[0]), int(a[1]), int(a[2])
    except ValueError:
        raise ValueError(f"fix {style}: TOL ITER N must be numbers, got {' '.join(a[:3])}") from None
    values: dict = {"b": [], "a": [], "t": [], "m": []}
    mode = None
    for word in a[3:]:
        if word in values:
            mode = word
        elif word == "mol":
            raise NotImplementedError(f"fix {style} keyword mol (a molecule template, for the molecules fix deposit "
                                      f"or fix pour add) is not implemented: pycumd has no molecule command; the "
                                      f"clusters of the atoms present come from b, a, t and m")
        elif mode is None or word[:1].isalpha():
            raise ValueError(f"fix {style}: unexpected {word!r} (b, a, t, m followed by types or masses)")
        else:
            try:
                values[mode].append(float(word) if mode == "m" else int(word))
            except ValueError:
                raise ValueError(f"fix {style}: {mode} takes {'masses' if mode == 'm' else 'integer types'}, got "
                                 f"{word!r}") from None
    if any(m == 0.0 for m in values["m"]):
        raise ValueError(f"fix {style}: invalid atom mass 0 for m")
    selection = ShakeSelection(tuple(values["b"]), tuple(values["a"]), tuple(values["t"]), tuple(values["m"]))
    return Shake(tol, iters, every, selection, rattle=style == "rattle")


def _fix_state_holder(fix: tuple):
    """The object of a fix of ``_Setup.fixes`` whose state a restart file stores (LAMMPS stores
    the Nose-Hoover chains and the barostat of fix nvt, npt and nph), or None."""
    if fix[0] == "nvt":
        return fix[1]
    if fix[0] in ("npt", "nph"):
        return fix[1][1]
    return None


def _load_fix_state(fix: tuple, state: dict) -> None:
    """Put a restart file's state of a fix (``_fix_state_holder(fix).restart_state()``) into a fix
    defined again with the same ID and style."""
    if fix[0] == "nvt":
        fix[1].load_restart_state(state)
        return
    thermostat, barostat = fix[1]
    barostat.load_restart_state(state)
    if thermostat is not None and state["thermostat"] is not None:
        thermostat.load_restart_state(state["thermostat"])


#: pair styles whose settings and coefficients LAMMPS does not write to restart files (restartinfo = 0)
PAIR_STYLES_NOT_IN_RESTART = ("table", "eam", "eam/alloy", "eam/fs", "hybrid", "hybrid/overlay")
#: pair styles whose coefficients pycumd's write_data leaves out (table: LAMMPS writes none; lepton:
#: its expressions hold spaces, which a data file line cannot; coul/long: it has none)
PAIR_STYLES_NOT_IN_DATA = ("table", "lepton", "eam", "eam/alloy", "eam/fs", "coul/long", "hybrid",
                           "hybrid/overlay")


@dataclass
class _SetType:
    """``set ... type T`` or, with ``fraction`` and ``seed``, ``type/fraction T FRACTION SEED``: an atom
    changes type if ``RanPark.reset(seed, x)`` then ``uniform() < fraction`` (LAMMPS' per-atom draw from
    the atom's coordinates, independent of atom order and processors)."""

    new_type: int
    fraction: float | None = None
    seed: int | None = None

    def apply(self, system: System, mask: np.ndarray) -> None:
        if self.fraction is not None:
            from ..lammps_random import RanPark

            rng, x = RanPark(1), system.positions + np.asarray(system.box.origin)
            chosen = np.zeros_like(mask)
            for i in np.flatnonzero(mask):
                rng.reset(self.seed, x[i])
                chosen[i] = rng.uniform() < self.fraction
            mask = chosen
        system.types[mask] = self.new_type - 1


@dataclass
class _SetComponent:
    """``set ... x|y|z|vx|vy|vz VALUE`` (a position in box units; it stays where it is set, outside the
    box if so, for later commands, and is wrapped into the box with image flags at the next run's
    set-up, as LAMMPS does: :func:`_wrap_into_box`)."""

    key: str
    value: float

    def apply(self, system: System, mask: np.ndarray) -> None:
        d = "xyz".index(self.key[-1])
        if self.key.startswith("v"):
            system.velocities[mask, d] = self.value
            return
        system.positions[mask, d] = self.value - float(system.box.origin[d])


@dataclass
class _SetCharge:
    """``set ... charge Q``: the selected atoms' per-atom charges (the system's ``charges``, zero where
    none were given)."""

    charge: float

    def apply(self, system: System, mask: np.ndarray) -> None:
        if system.charges is None:
            system.charges = np.zeros(system.n_atoms)
        system.charges[mask] = self.charge


@dataclass
class _SetImage:
    """``set ... image NX NY NZ`` (``NULL``: that flag unchanged); positions do not move."""

    flags: list

    def apply(self, system: System, mask: np.ndarray) -> None:
        for d, flag in enumerate(self.flags):
            if flag is not None:
                system.images[mask, d] = flag


def _capture(reference: MSDReference, system: System, select) -> None:
    """A compute msd's reference: the atoms ``select(system)`` picks, as they are now."""
    reference.capture(system, select(system))


def _wrap_into_box(system: System) -> None:
    """Positions into the box, image flags counting the crossings (LAMMPS ``Domain::pbc`` at a run's set-up)."""
    system.positions = system.box.wrap(system.positions, system.images)


def _apply_set(system: System, mask: np.ndarray, edits: list) -> None:
    """The keywords of one ``set`` command, in order, on the atoms it selected."""
    for edit in edits:
        edit.apply(system, mask)


def _id_bounds(spec: str) -> tuple[int, int]:
    """LAMMPS id ranges ``N``, ``*``, ``N*``, ``*N``, ``M*N`` (``utils::bounds``) -> (lo, hi), inclusive."""
    if "*" in spec:
        lo, hi = spec.split("*")
        lo_hi = (int(lo) if lo else 1, int(hi) if hi else 2 ** 63 - 1)
    else:
        lo_hi = (int(spec), int(spec))
    if lo_hi[0] < 1 or lo_hi[0] > lo_hi[1]:
        raise ValueError(f"set atom: bad id range {spec!r} (N, *, N*, *N or M*N, ids from 1)")
    return lo_hi


def _rdf_options(a, n_types: int) -> tuple:
    """``compute ID all rdf Nbin [I J ...] [cutoff Rc]`` -> (Nbin, Rc or None: the largest pair cutoff,
    the type pairs as ((ilo, ihi), (jlo, jhi)) 0-based inclusive ranges, or None: all with all)."""
    if not a:
        raise ValueError("compute rdf needs Nbin")
    bins = int(a[0])
    if bins < 1:
        raise ValueError(f"compute rdf: Nbin must be >= 1, got {bins}")
    rest, cutoff = list(a[1:]), None
    if len(rest) >= 2 and rest[-2] == "cutoff":
        cutoff = float(rest[-1])
        if not cutoff > 0:
            raise ValueError(f"compute rdf: cutoff must be > 0, got {rest[-1]}")
        rest = rest[:-2]
    if len(rest) % 2:
        raise ValueError(f"compute rdf: type pairs come in twos (I J ...), got {' '.join(rest)}")
    pairs = None
    if rest:
        pairs = []
        for i, j in zip(rest[0::2], rest[1::2]):
            ri, rj = _type_range(i, n_types), _type_range(j, n_types)
            pairs.append(((ri.start, ri.stop - 1), (rj.start, rj.stop - 1)))
        pairs = tuple(pairs)
    return bins, cutoff, pairs


#: kspace_modify keywords only MSM reads (LAMMPS accepts them with any style and the others ignore them)
_MSM_ONLY_KEYWORDS = ("cutoff_adjust", "pressure_scalar")


def _solver_keywords(style: str, modify: dict) -> dict:
    """The make_solver keywords of the kspace_modify values for ``style`` (the MSM-only ones left out for the
    other styles, which ignore them as LAMMPS does)."""
    return {k: v for k, v in modify.items() if style == "msm" or k not in _MSM_ONLY_KEYWORDS}


def _check_boundary(s, long_range: bool, style: str) -> None:
    """LAMMPS' checks of the boundary against the k-space solver: ``p p f`` needs ``kspace_modify slab``
    (LAMMPS: 'Cannot use non-periodic boundaries with PPPM'), and a slab needs ``p p f`` ('Incorrect
    boundaries with slab PPPM'); pycumd has non-periodic boundaries only for a slab."""
    slab = s.kspace_modify.get("slab") if s.kspace is not None else None
    periodic = s.boundary == ("p", "p", "p")
    solver = {"pppm": "PPPM", "ewald": "Ewald", "msm": "MSM"}.get(s.kspace[0], s.kspace[0]) if s.kspace else ""
    if not periodic and not long_range:
        raise NotImplementedError(f"boundary {' '.join(s.boundary)} with pair_style {style}: pycumd has non-periodic "
                                  f"boundaries only for a slab (a */coul/long style, kspace_style ewald|pppm and "
                                  f"kspace_modify slab); use boundary p p p")
    if not periodic and slab is None:
        raise ValueError(f"boundary {' '.join(s.boundary)} with kspace_style {s.kspace[0]} needs kspace_modify slab "
                         f"(LAMMPS: 'Cannot use non-periodic boundaries with {solver}')")
    if periodic and slab is not None:
        raise ValueError(f"kspace_modify slab needs boundary p p f, not p p p (LAMMPS: 'Incorrect boundaries with "
                         f"slab {solver}')")


def _yes_no(value: str, what: str) -> bool:
    if value not in ("yes", "no"):
        raise ValueError(f"{what} needs yes or no, got {value!r}")
    return value == "yes"


def _inside(region, system: System) -> np.ndarray:
    """Mask of the atoms inside a region (box coordinates; as LAMMPS' Region::match)."""
    x = system.positions + np.asarray(system.box.origin)
    if region[0] == "sphere":
        d = x - region[1]
        return np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]) <= region[2]
    return ((x >= region[1][:, 0]) & (x <= region[1][:, 1])).all(axis=1)


def _scale_velocities(system: System, target: float) -> None:
    """LAMMPS ``velocity all scale T``: scale to the temperature of compute temp (3N - 3 dof)."""
    ke = 0.5 * system.units.mvv2e * float((system.per_atom_mass[:, None] * system.velocities ** 2).sum())
    dof = max(3 * system.n_atoms - 3, 1)
    t = 2.0 * ke / (dof * system.units.boltz)
    if t == 0.0:
        raise ValueError("velocity scale: the temperature is 0, nothing to scale")
    system.velocities *= np.sqrt(target / t)


def _zero_linear_momentum(system: System) -> None:
    """LAMMPS ``velocity all zero linear``: subtract the centre-of-mass velocity."""
    m = system.per_atom_mass
    system.velocities -= (m[:, None] * system.velocities).sum(axis=0) / m.sum()


def _zero_angular_momentum(system: System) -> None:
    """LAMMPS ``velocity all zero angular``: take out the rotation about the centre of mass
    (:func:`pycumd.lammps_random.zero_rotation`, on the unwrapped positions)."""
    from ..lammps_random import zero_rotation

    zero_rotation(system.velocities, system.unwrapped_positions() + np.asarray(system.box.origin),
                  system.per_atom_mass)


def _displace(system: System, shift) -> None:
    """LAMMPS ``displace_atoms all move``: shift, then wrap with image counts (``Domain::remap``)."""
    unwrapped = system.unwrapped_positions() + shift
    L = np.asarray(system.box.L)
    system.images = np.floor(unwrapped / L).astype(np.int32)
    system.positions = unwrapped - system.images * L


def _replicate(system: System, counts, id_groups) -> None:
    """LAMMPS ``replicate`` in place (see ``LammpsPlanner._cmd_replicate``); ``id_groups``: groups of
    ids, which gain the copies of their atoms. Wrapping is LAMMPS' ``Domain::remap`` (whole box
    lengths added or subtracted one at a time), so the positions are LAMMPS' bits.  A molecular system's
    copies get their own terms (the atom IDs offset as the atoms') and molecule IDs (positive ones offset
    by the copy's index times the largest molecule ID, as LAMMPS); the terms' atoms are the copies of the
    same unwrapped image, so the image flags must be consistent (LAMMPS' condition too)."""

    old_L, lo = np.asarray(system.box.L), np.asarray(system.box.origin)
    new_box = Box(old_L * counts, lo)
    hi = lo + old_L * np.asarray(counts)
    period = hi - lo
    unwrapped = (system.positions + lo) + system.images * old_L     # Domain::unmap
    max_id = int(system.ids.max()) if system.n_atoms else 0
    parts, offsets = [], []
    for iz in range(counts[2]):
        for iy in range(counts[1]):
            for ix in range(counts[0]):
                x = unwrapped + np.array([ix, iy, iz]) * old_L
                images = np.zeros(x.shape, np.int32)
                for d in range(3):
                    while (low := x[:, d] < lo[d]).any():
                        x[low, d] += period[d]
                        images[low, d] -= 1
                    while (high := x[:, d] >= hi[d]).any():
                        x[high, d] -= period[d]
                        images[high, d] += 1
                    x[:, d] = np.maximum(x[:, d], lo[d])
                offset = (iz * counts[1] * counts[0] + iy * counts[0] + ix) * max_id
                parts.append((x - lo, images, system.ids + offset))
                offsets.append(offset)
    for group in id_groups:
        if group.ids is not None:
            group.set_ids(np.concatenate([np.asarray(group.ids) + off for off in offsets]))
    copies = len(parts)
    system.box = new_box
    system.positions = np.concatenate([p[0] for p in parts])
    system.images = np.concatenate([p[1] for p in parts])
    system.ids = np.concatenate([p[2] for p in parts])
    system.types = np.tile(system.types, copies)
    system.velocities = np.tile(system.velocities, (copies, 1))
    names = ("positions", "images", "ids", "types", "velocities")
    if system.charges is not None:
        system.charges = np.tile(system.charges, copies)
        names += ("charges",)
    if system.topology is not None:
        system.topology = _replicate_topology(system.topology, offsets, max_id)
    order = np.argsort(system.ids, kind="stable")
    for name in names:
        setattr(system, name, getattr(system, name)[order])


def _replicate_topology(topology, offsets, max_id: int):
    """The topology of ``len(offsets)`` copies whose atom IDs are ``id + offset`` (LAMMPS ``replicate``)."""
    from ..molecular.styles.base import KINDS

    old = topology.molecule
    max_mol = int(old.max(initial=0))
    molecule = np.zeros(max(offsets) + max_id + 1, np.int64)
    for copy, offset in enumerate(offsets):
        part = old[1:max_id + 1]
        molecule[offset + 1:offset + len(part) + 1] = np.where(part > 0, part + copy * max_mol, 0)
    new = topology.copy()
    new.molecule = molecule
    for kind in KINDS:
        atoms = topology.terms[kind]
        new.terms[kind] = np.concatenate([atoms + offset for offset in offsets]) if len(atoms) else atoms
        new.types[kind] = np.tile(topology.types[kind], len(offsets))
    return new


def _delete_overlaps(system: System, cutoff: float, group1, group2) -> None:
    """LAMMPS ``delete_atoms overlap CUT G1 G2`` (``DeleteAtoms::delete_overlap``, one process): each
    atom I of G1, in id order, is deleted if an atom J of G2 lies within the cutoff (minimum image)
    that is not deleted yet; a pair across the periodic boundary (J a ghost in LAMMPS) with both
    atoms in both groups deletes only the lower id. Ids are then renumbered 1..N (``compress yes``)."""
    if system.topology is not None and system.topology.has_terms():
        raise NotImplementedError("delete_atoms of a system with bonds is not supported yet")

    from scipy.spatial import cKDTree

    def member(group):
        ids, types = group
        mask = np.ones(system.n_atoms, bool)
        if ids is not None:
            mask &= np.isin(system.ids, ids)
        if types is not None:
            mask &= np.isin(system.types, types)
        return mask

    in1, in2 = member(group1), member(group2)
    order = np.argsort(system.ids, kind="stable")
    L = np.asarray(system.box.L)
    x = np.mod(system.positions, L)
    tree = cKDTree(x, boxsize=L)
    deleted = np.zeros(system.n_atoms, bool)
    for i in order:
        if not in1[i]:
            continue
        for j in tree.query_ball_point(x[i], cutoff):
            if j == i or not in2[j]:
                continue
            d = x[i] - x[j]
            if np.dot(d, d) >= cutoff * cutoff:           # across the boundary: a ghost in LAMMPS
                if in2[i] and in1[j] and system.ids[i] > system.ids[j]:
                    continue
            elif deleted[j]:
                continue
            deleted[i] = True
            break
    keep = ~deleted
    system.positions, system.velocities = system.positions[keep], system.velocities[keep]
    system.types, system.images = system.types[keep], system.images[keep]
    if system.charges is not None:
        system.charges = system.charges[keep]
    ids = system.ids[keep]
    system.ids = np.argsort(np.argsort(ids, kind="stable"), kind="stable").astype(np.int64) + 1


#: LAMMPS accelerator packages' style suffixes (lj/cut/gpu is lj/cut computed by the GPU package)
ACCELERATOR_SUFFIXES = ("gpu", "omp", "opt", "kk", "intel")


def _without_accelerator_suffix(style: str) -> str:
    """``lj/cut/gpu`` -> ``lj/cut``: the same model, computed by one of LAMMPS' accelerator packages
    (pycumd computes it its own way); a style without such a suffix is returned as it is."""
    base, _, suffix = style.rpartition("/")
    return base if suffix in ACCELERATOR_SUFFIXES and base else style


def _plain_number_message(msg: str) -> str:
    """Python's float()/int() complaint as a LAMMPS user reads it (``v_T`` where a number must be)."""
    m = re.match(r"(could not convert string to float|invalid literal for int\(\) with base 10): '(.*)'$", msg)
    if m is None:
        return msg
    word = m.group(2)
    if word.startswith("v_"):
        return f"{word}: a variable in this argument is not supported (pycumd needs a number here)"
    if m.group(1).startswith("invalid literal"):
        return f"{word!r} is not a whole number (invalid literal for an integer)"
    return f"{word!r} is not a number"


def _region_spec(region) -> tuple:
    """A region of ``_Setup.regions`` as :func:`pycumd.outputs.thermo_keywords.region_contains` takes it."""
    if region[0] == "sphere":
        return ("sphere", (*(float(c) for c in region[1]), float(region[2])))
    return ("block", tuple(float(v) for v in np.asarray(region[1]).ravel()))


def _substitute_at_run(text: str, names: Names, norm, sim, where: str) -> str:
    """A deferred print text with the simulation's values (LAMMPS print after a run); errors (divide by
    0 ...) name the print command's ``FILE:LINE``."""
    state = ThermoState(sim, norm=norm, names=names)
    state.between_runs = True
    try:
        return names.substitute(text, lambda word, index: formula_value(state, word, index))
    except ValueError as exc:
        raise ValueError(f"{where}: print: {exc}") from None


def _where(command) -> str:
    """``FILE:LINE`` of a command (for errors met while the plan runs)."""
    return f"{command.source}:{command.line}" if command is not None else "<input>"


def _reset_step(sim, step: int) -> None:
    """LAMMPS ``reset_timestep N`` between runs (an after-run action on the simulation)."""
    sim.state.step = step


def _fix_momentum(a) -> Momentum:
    every, flags, rescale, k = int(a[0]), (True, True, True), False, 1
    while k < len(a):
        if a[k] == "linear":
            flags = tuple(int(f) == 1 for f in a[k + 1:k + 4])
            k += 4
        elif a[k] == "rescale":
            rescale, k = True, k + 1
        elif a[k] == "angular":
            raise NotImplementedError("fix momentum angular is not supported (linear is)")
        else:
            raise ValueError(f"fix momentum keyword {a[k]} is not supported (linear, rescale)")
    return Momentum(every, flags, rescale)


_ID_TESTS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
             "==": np.equal, "!=": np.not_equal}


def _id_selection(args: list):
    """LAMMPS ``group ID id ...`` (``Group::assign``): a list of ids and ``a:b`` / ``a:b:step`` ranges,
    or one test ``< N``, ``<= N``, ``> N``, ``>= N``, ``== N``, ``!= N``, ``<> A B`` (A <= id <= B).
    Returns ``ids -> mask``."""
    if not args:
        raise ValueError("group id needs ids")
    if args[0] in _ID_TESTS:
        if len(args) != 2:
            raise ValueError(f"group id {args[0]} takes one id")
        test, bound = _ID_TESTS[args[0]], int(args[1])
        return lambda ids: test(ids, bound)
    if args[0] == "<>":
        if len(args) != 3:
            raise ValueError("group id <> takes two ids")
        lo, hi = int(args[1]), int(args[2])
        return lambda ids: (ids >= lo) & (ids <= hi)
    chosen = []
    for spec in args:
        parts = [int(p) for p in spec.split(":")]
        if len(parts) == 1:
            chosen.append(parts[0])
        elif len(parts) in (2, 3) and parts[-1] > 0:
            chosen.extend(range(parts[0], parts[1] + 1, parts[2] if len(parts) == 3 else 1))
        else:
            raise ValueError(f"group id: bad id range {spec!r} (N, A:B or A:B:STEP)")
    wanted = np.array(chosen, dtype=np.int64)
    return lambda ids: np.isin(ids, wanted)


def _type_range(spec: str, n_types: int) -> range:
    """LAMMPS type ranges: ``3``, ``*``, ``2*``, ``*3``, ``2*4`` (1-based) -> 0-based range."""
    if n_types <= 0:
        raise ValueError("types used before create_box")
    if "*" in spec:
        lo, hi = spec.split("*")
        lo = int(lo) if lo else 1
        hi = int(hi) if hi else n_types
    else:
        lo = hi = int(spec)
    if not 1 <= lo <= hi <= n_types:
        raise ValueError(f"type {spec} is out of range 1..{n_types}")
    return range(lo - 1, hi)


def read_commands(text: str, filename: str, variables=None, base_dir=None, edit=None,
                  partition: tuple[int, int] | None = None) -> list[Command]:
    """:func:`~pycumd.inputs.lammps_script.read_script`, except that when reading stops at a line (a
    ``$`` reference that needs a running simulation ...), the commands before it are planned first, so
    that an earlier command pycumd does not support is the error reported: LAMMPS would stop there.
    ``edit``: a function ``list -> list`` applied to the commands read (benchmarks/lammps_coverage.py
    shortens runs with it)."""
    edit = edit or (lambda commands: commands)
    try:
        return edit(read_script(text, filename, variables, base_dir=base_dir, partition=partition))
    except LammpsScriptError as exc:
        earlier = LammpsPlanner(screen=False, partition=partition)
        earlier.base_dir = base_dir
        earlier.execute(edit(getattr(exc, "commands_before", [])))
        raise


def plan_from_lammps_script(path=None, text=None, variables=None, screen: bool = True, base_dir=None,
                            source_name: str = "<input>", partition: tuple[int, int] | None = None) -> RunPlan:
    """The :class:`~pycumd.run_plan.RunPlan` of a LAMMPS input (a file ``path`` or a string ``text``;
    ``base_dir``: where a text's relative paths are, default the file's directory; ``source_name``:
    a text's name in error messages; ``partition``: ``(k, N)``, the script read as partition k (0-based)
    of LAMMPS ``-partition Nx1``, its ``world`` variables taking their k-th value)."""
    if (path is None) == (text is None):
        raise ValueError("give exactly one of path or text")
    if path is not None:
        text = read_text_input(path, "LAMMPS input")
        base_dir = base_dir or str(Path(path).resolve().parent)
    planner = LammpsPlanner(screen=screen, partition=partition)
    planner.base_dir = base_dir
    planner.execute(read_commands(text, str(path) if path is not None else source_name, variables, base_dir,
                                  partition=partition))
    plan = planner.plan()
    plan.source = {"kind": "lammps", "text": text, "variables": dict(variables or {}), "base_dir": base_dir}
    return plan


def run_lammps_script(path=None, text=None, variables=None, *, screen: bool = True, log=None, trajectory=None,
                      progress=None, **engine) -> RunResult:
    """Read a LAMMPS input and run it; returns the :class:`~pycumd.run_plan.RunResult`
    (``.sim``: the last simulation, ``.thermo.rows``: the thermo rows).

    ``log``: CSV thermo path; ``trajectory``: ``(path, every)``; ``engine``: device, precision,
    deterministic, ... (:class:`~pycumd.components.EngineOptions`), over what the script set
    (``processors``: the grid of spatial domains, kept unless ``processors=`` is given).
    """
    import dataclasses

    plan = plan_from_lammps_script(path, text, variables, screen=screen)
    plan.engine = dataclasses.replace(plan.engine, **engine)
    plan.outputs.thermo_log, plan.outputs.progress = log, progress
    if trajectory:
        plan.outputs.trajectories.append(TrajectoryOutput(*trajectory))
    return execute(plan)


def parse_partition(text: str) -> int:
    """LAMMPS ``-partition NxM``: the number of partitions N (M must be 1: pycumd runs the partitions as
    one batch in one process); LAMMPS' other forms (a bare ``P``, several groups) raise."""
    m = re.fullmatch(r"\s*(\d+)\s*x\s*(\d+)\s*", str(text))
    if m is None:
        raise ValueError(f"-partition {text}: expected NxM (N partitions of M processes each), e.g. 4x1")
    n, procs = int(m.group(1)), int(m.group(2))
    if procs != 1:
        raise NotImplementedError(f"-partition {text}: partitions of {procs} processes are not implemented; pycumd "
                                  f"runs the {n} partitions as one batch in one process: give -partition {n}x1")
    if n < 1:
        raise ValueError(f"-partition {text}: N must be >= 1")
    return n


def plan_partitions(path, n_partitions: int, variables=None, engine: EngineOptions | None = None, *,
                    text: str | None = None, base_dir=None):
    """LAMMPS ``-partition Nx1`` of a script with ``temper``: the script read once per partition
    (:func:`plan_from_lammps_script` with ``partition=(k, N)``), and the partitions' temper runs put
    together into one :class:`~pycumd.ensemble.EnsemblePlan` (member k: partition k) with its replica
    exchange (:class:`~pycumd.tempering.ReplicaExchange`: the ladder of the partitions' ``temp`` values,
    every M steps, seed2 as its seed, random pairs where seed1 is non-zero).

    What a partition may hold besides the set-up: exactly one ``temper`` and no other run or
    minimisation, no dumps or ``fix ave/time`` (each raises, naming what).  The thermo interval is the
    script's ``thermo``; thermo rows are pycumd's default columns, one CSV with a ``system`` column
    (``pycumd run --log``).  ``text``/``base_dir``: the script's text read already (``path`` then only
    names it; a batch checkpoint stores both, :attr:`EnsemblePlan.source`)."""
    from ..ensemble import EnsemblePlan

    name = str(path)
    if text is None:
        text = read_text_input(path, "LAMMPS input")
        base_dir = str(Path(path).resolve().parent)
    plans = [plan_from_lammps_script(text=text, variables=variables, screen=False, base_dir=base_dir,
                                     source_name=name, partition=(k, n_partitions)) for k in range(n_partitions)]
    tempers = [[i for i, st in enumerate(p.stages) if st.temper is not None] for p in plans]
    if not tempers[0]:
        raise NotImplementedError(f"{name}: -partition {n_partitions}x1 runs a script with temper (replica "
                                  f"exchange, run as one batch); this script has none, and independent "
                                  f"partitions are not implemented (a TOML sweep runs independent systems)")
    for k, plan in enumerate(plans):
        if len(plan.stages) != 1:
            raise NotImplementedError(f"{name} (partition {k}): a run or minimize besides temper is not "
                                      f"implemented for -partition runs; temper must be the script's only run")
        if plan.outputs.lammps_outputs or plan.outputs.trajectories:
            raise NotImplementedError(f"{name}: dump and fix ave/time are not implemented for -partition runs "
                                      f"(pycumd run --trajectory writes one file per partition)")
        if plan.first_step != 0:
            raise NotImplementedError(f"{name}: a temper run starting at step {plan.first_step} (reset_timestep, "
                                      f"read_restart) is not implemented")
    stages = [plan.stages[0] for plan in plans]
    settings = [st.temper for st in stages]
    for key in ("steps", "every", "seed_swap", "seed_boltz", "fix_id"):
        values = {getattr(t, key) for t in settings}
        if len(values) > 1:
            raise ValueError(f"{name}: temper's {key} differs between the partitions ({sorted(values)}); only "
                             f"the temperature may")
    ladder = [t.temperature for t in settings]
    if any(b <= a for a, b in zip(ladder, ladder[1:])):
        raise NotImplementedError(f"{name}: temper temperatures {ladder} (by partition): pycumd's replica exchange "
                                  f"needs them increasing with the partition index")
    systems = []
    for plan, stage in zip(plans, stages):
        system = stage.system.copy()
        for edit in stage.system_edits:
            edit(system)
        systems.append(system)
    t = settings[0]
    exchange = {"temperatures": ladder, "every": t.every, "seed": t.seed_boltz, "random_pairs": t.seed_swap != 0}
    indices = [s.index for s in settings]
    if any(i is not None for i in indices):          # temper ... index: a tempering run continued
        if any(i is None for i in indices):
            missing = [k for k, i in enumerate(indices) if i is None]
            raise ValueError(f"{name}: temper has its index argument in some partitions but not in {missing}; "
                             f"give it in every partition or in none")
        if sorted(indices) != list(range(n_partitions)):
            raise ValueError(f"{name}: temper indices {indices} (by partition) are not a permutation of "
                             f"0..{n_partitions - 1}: each temperature must be taken by exactly one partition")
        exchange["initial_index"] = indices
    start = exchange.get("initial_index", range(n_partitions))     # each partition's starting ladder index
    engine = engine or plans[0].engine
    return EnsemblePlan(systems, [st.potential for st in stages], [st.integrator for st in stages],
                        [{"partition": k, "temperature": ladder[i]} for k, i in enumerate(start)], t.steps,
                        stages[0].neighbor, engine, thermo_every=stages[0].thermo_every, exchange=exchange,
                        exchange_log="log.lammps", exchange_log_style="lammps",
                        source={"kind": "lammps-partitions", "path": name, "text": text, "base_dir": base_dir,
                                "partitions": n_partitions, "variables": dict(variables or {})})


__all__ = ["LammpsPlanner", "TemperSettings", "UnsupportedCommandError", "parse_partition", "plan_from_lammps_script",
           "plan_partitions", "read_commands", "run_lammps_script"]
