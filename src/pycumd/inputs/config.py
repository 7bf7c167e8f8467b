"""TOML run configurations: the schema, its checks, and the run they describe.

Every key, with its default (``required`` where there is none)::

    units = "lj"                      # lj | metal | real
    device = "auto"                   # auto | cpu | cuda   (the command line overrides)
    precision = "auto"                # auto | single | mixed | double | composite

    [system]                          # a lattice filled with one atom type
    lattice = required                # sc | bcc | fcc
    density = ...                     # reduced number density (lj units) ...
    constant = ...                    # ... or the lattice constant (length units): exactly one
    cells = required                  # int or [nx, ny, nz]
    mass = 1.0                        # mass units
    sphere_radius = 0 (none)          # keep only sites within this distance of the box centre
                                      # (length units; LAMMPS region sphere + create_atoms region)

    [velocity]                        # optional: initial velocities
    temperature = required            # temperature units
    seed = required                   # positive integer
    distribution = "uniform"          # uniform | gaussian
    loop = "geom"                     # geom | all | local  (see pycumd.system.create_velocities)
    zero_momentum = true

    # ... or, instead of [system] and [pair], one of (nuclear units; see pycumd.ions):
    [ions]                            # screened-Coulomb ion mixture (e.g. C/O white-dwarf matter)
    charges = required                # Z per species, e.g. [6, 8]
    mass_numbers = required           # masses in u, e.g. [12.0, 16.0]
    fractions = required              # number fractions, e.g. [0.5, 0.5]
    n_ions = required
    number_density = required         # ions per fm^3
    gamma = ...                       # Coulomb coupling <Z^2> e^2 / (a kT) ...
    temperature = ...                 # ... or kT in MeV: exactly one
    screening_length = (2 a)          # fm
    r_cut = (none: all pairs)         # fm
    seed = 1
    [pasta]                           # nuclear pasta (protons type 1, neutrons type 2)
    n_nucleons = required
    proton_fraction = required
    number_density = required         # nucleons per fm^3
    temperature = required            # kT, MeV
    seed = 1
    a = 110.0, b = -26.0, c = 24.0, Lambda = 1.25, screening_length = 10.0, r_cut = 20.0

    [pair]
    style = "lj/cut"                  # lj/cut | lepton
    r_cut = required                  # length units
    cutoff = "truncate"               # truncate | shift | shift_force
    mixing = "geometric"              # geometric | arithmetic | sixthpower (lj/cut)
    [[pair.coeff]]                    # one table per type pair; types are 1-based as in LAMMPS
    types = required                  # [i, j]
    epsilon = required for lj/cut     # energy units
    sigma = required for lj/cut       # length units
    expression = required for lepton  # "V(r)[; name=value ...]", as pair_style lepton's pair_coeff
    r_cut = (pair.r_cut)

A lepton ``expression`` is read by :mod:`pycumd.potentials.formula_syntax` (never evaluated); an
error names the file's line that holds it.

    [neighbor]
    skin = 0.3 (lj) or 2.0            # length units
    every = 1
    delay = 0
    check = true

    [integrator]
    dt = (unit default)               # time units
    thermostat = "none"               # none | langevin | nose-hoover
    temperature = required with a thermostat   # or [start, stop]
    damping = required with a thermostat       # time units
    seed = required for langevin
    chain = 3                         # nose-hoover chain length

    [run]
    steps = required
    thermo = 100                      # thermo interval in steps (0: first and last only)
    trajectory = ""                   # .xyz, .gsd or .lammpstrj path, empty for none
    trajectory_every = 100

    # optional: a batch of runs (pycumd.ensemble), one per combination of the listed values (the
    # last key varying fastest); short names: density, cells, mass, constant, seed (velocity.seed and,
    # with Langevin, integrator.seed), temperature (velocity.temperature and the thermostat's),
    # epsilon, sigma (every pair.coeff), r_cut, dt, damping; or a dotted key (system.density,
    # pair.coeff.epsilon, integrator.temperature, ...).  Written before the first [section] (or as
    # a [sweep] table).  The trajectory path gets the system number ("traj.gsd" -> "traj.{system}.gsd");
    # --log writes one thermo CSV with a system column.
    sweep = {density = [0.7, 0.75], seed = [1, 2, 3]}

    [tempering]                       # optional, with sweep = {temperature = [T0, T1, ...]} (increasing)
    every = required                  # steps between exchange attempts (LAMMPS temper N M: M)
    seed = required                   # seed of the acceptance draws
    random_pairs = false              # false: even and odd pairs alternate (LAMMPS' default)
    log = ""                          # CSV of the walk: step, each replica's temperature index

Unknown keys and missing required keys raise :class:`ConfigError` naming them.
:func:`plan_from_config` turns a checked config into a :class:`~pycumd.run_plan.RunPlan`.
"""

from __future__ import annotations

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

REQUIRED = object()

SCHEMA = {
    "units": "lj", "device": "auto", "precision": "auto",
    "ions": {"charges": REQUIRED, "mass_numbers": REQUIRED, "fractions": REQUIRED, "n_ions": REQUIRED,
             "number_density": REQUIRED, "gamma": None, "temperature": None, "screening_length": None,
             "screening_in_a": 2.0, "r_cut": None, "seed": 1},
    "pasta": {"n_nucleons": REQUIRED, "proton_fraction": REQUIRED, "number_density": REQUIRED,
              "temperature": REQUIRED, "seed": 1, "a": 110.0, "b": -26.0, "c": 24.0, "Lambda": 1.25,
              "screening_length": 10.0, "r_cut": 20.0},
    "system": {"lattice": REQUIRED, "density": None, "constant": None, "cells": REQUIRED, "mass": 1.0,
               "sphere_radius": 0.0},
    "velocity": {"temperature": REQUIRED, "seed": REQUIRED, "distribution": "uniform", "loop": "geom",
                 "zero_momentum": True},
    "pair": {"style": "lj/cut", "r_cut": REQUIRED, "cutoff": "truncate", "mixing": "geometric",
             "coeff": [{"types": REQUIRED, "epsilon": None, "sigma": None, "expression": None, "r_cut": None}]},
    "neighbor": {"skin": None, "every": 1, "delay": 0, "check": True},
    "integrator": {"dt": None, "thermostat": "none", "temperature": None, "damping": None, "seed": None,
                   "chain": 3},
    "run": {"steps": REQUIRED, "thermo": 100, "trajectory": "", "trajectory_every": 100},
}
OPTIONAL_SECTIONS = {"velocity", "neighbor", "integrator"}
SYSTEM_SECTIONS = {"lattice": ("system", "pair"), "ions": ("ions",), "pasta": ("pasta",)}


class ConfigError(ValueError):
    """A configuration key is unknown, missing or has a bad value (the message names it)."""


def _fill(data: dict, schema: dict, where: str) -> dict:
    if not isinstance(data, dict):
        raise ConfigError(f"{where or 'config'} must be a table")
    unknown = sorted(set(data) - set(schema))
    if unknown:
        raise ConfigError(f"unknown key(s) {', '.join(where + k for k in unknown)}; "
                          f"allowed: {', '.join(where + k for k in schema)}")
    out = {}
    for key, default in schema.items():
        if isinstance(default, dict):
            if key in data:
                out[key] = _fill(data[key], default, f"{where}{key}.")
            elif key in OPTIONAL_SECTIONS:
                out[key] = None if key == "velocity" else _fill({}, default, f"{where}{key}.")
            else:
                raise ConfigError(f"missing section [{where}{key}]")
        elif isinstance(default, list):
            items = data.get(key)
            if not items:
                raise ConfigError(f"missing {where}{key}: give at least one [[{where}{key}]] table")
            out[key] = [_fill(item, default[0], f"{where}{key}[{n}].") for n, item in enumerate(items)]
        elif key in data:
            out[key] = data[key]
        elif default is REQUIRED:
            raise ConfigError(f"missing required key {where}{key}")
        else:
            out[key] = default
    return out


def load_config(text: str) -> dict:
    """Parse TOML text and check it against the schema; returns the filled-in config."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}") from None
    kinds = [k for k in ("ions", "pasta") if k in data]
    if len(kinds) > 1 or (kinds and ("system" in data or "pair" in data)):
        raise ConfigError("describe the particles with exactly one of [system] + [pair], [ions] or [pasta]")
    kind = kinds[0] if kinds else "lattice"
    skipped = {name for k, names in SYSTEM_SECTIONS.items() if k != kind for name in names}
    sweep, tempering = data.pop("sweep", None), data.pop("tempering", None)
    if tempering is not None and sweep is None:
        raise ConfigError("[tempering] needs a sweep over the temperature ladder: sweep = {temperature = [...]}")
    config = _fill(data, {k: v for k, v in SCHEMA.items() if k not in skipped}, "")
    config["kind"] = kind
    config["text"] = text
    _check_values(config)
    config["sweep"], config["tempering"] = _check_sweep(sweep, tempering, config) if sweep is not None else (None, None)
    return config


#: the type of every key's value, as (section, key) -> kind; None values (optional keys left out) pass.
#: Kinds: "count" (int >= 0), "positive_int" (int >= 1), "seed" (int >= 1), "positive" (number > 0),
#: "non_negative" (number >= 0), "number", "bool", "string", "cells" (int >= 1 or three of them),
#: "temperature" (number >= 0, or [start, stop]), "numbers" (a list of numbers), "type_pair" ([i, j],
#: 1-based), or a tuple of the allowed strings.
VALUE_TYPES = {
    (None, "units"): ("lj", "metal", "real", "nuclear"), (None, "device"): ("auto", "cpu", "cuda"),
    (None, "precision"): ("auto", "single", "mixed", "double", "composite"),
    ("system", "lattice"): ("sc", "bcc", "fcc"), ("system", "density"): "positive",
    ("system", "constant"): "positive", ("system", "cells"): "cells", ("system", "mass"): "positive",
    ("system", "sphere_radius"): "non_negative",
    ("velocity", "temperature"): "non_negative", ("velocity", "seed"): "seed",
    ("velocity", "distribution"): ("uniform", "gaussian"), ("velocity", "loop"): ("geom", "all", "local"),
    ("velocity", "zero_momentum"): "bool",
    ("ions", "charges"): "numbers", ("ions", "mass_numbers"): "numbers", ("ions", "fractions"): "numbers",
    ("ions", "n_ions"): "positive_int", ("ions", "number_density"): "positive", ("ions", "gamma"): "positive",
    ("ions", "temperature"): "positive", ("ions", "screening_length"): "positive",
    ("ions", "screening_in_a"): "positive", ("ions", "r_cut"): "positive", ("ions", "seed"): "seed",
    ("pasta", "n_nucleons"): "positive_int", ("pasta", "proton_fraction"): "non_negative",
    ("pasta", "number_density"): "positive", ("pasta", "temperature"): "positive", ("pasta", "seed"): "seed",
    ("pasta", "a"): "number", ("pasta", "b"): "number", ("pasta", "c"): "number", ("pasta", "Lambda"): "positive",
    ("pasta", "screening_length"): "positive", ("pasta", "r_cut"): "positive",
    ("pair", "style"): "string", ("pair", "r_cut"): "positive",
    ("pair", "cutoff"): ("truncate", "shift", "shift_force"),
    ("pair", "mixing"): ("geometric", "arithmetic", "sixthpower"),
    ("pair.coeff", "types"): "type_pair", ("pair.coeff", "epsilon"): "non_negative",
    ("pair.coeff", "sigma"): "positive", ("pair.coeff", "r_cut"): "positive",
    ("neighbor", "skin"): "non_negative", ("neighbor", "every"): "positive_int", ("neighbor", "delay"): "count",
    ("neighbor", "check"): "bool",
    ("integrator", "dt"): "positive", ("integrator", "thermostat"): ("none", "langevin", "nose-hoover"),
    ("integrator", "temperature"): "temperature", ("integrator", "damping"): "positive",
    ("integrator", "seed"): "seed", ("integrator", "chain"): "positive_int",
    ("run", "steps"): "count", ("run", "thermo"): "count", ("run", "trajectory"): "string",
    ("run", "trajectory_every"): "positive_int",
}

_EXPECTED = {"count": "a whole number >= 0", "positive_int": "a whole number >= 1",
             "seed": "a whole number >= 1", "positive": "a number > 0", "non_negative": "a number >= 0",
             "number": "a number", "bool": "true or false", "string": "a string",
             "cells": "a whole number >= 1 or a list of three", "numbers": "a list of numbers",
             "temperature": "a number >= 0 or [start, stop]", "type_pair": "two atom types [i, j] (from 1)"}


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    import math

    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _fits(value, kind) -> bool:
    """Whether ``value`` is of type ``kind`` (a :data:`VALUE_TYPES` kind)."""
    if isinstance(kind, tuple):
        return isinstance(value, str) and value in kind
    if kind in ("count", "positive_int", "seed"):
        return _is_int(value) and value >= (0 if kind == "count" else 1)
    if kind in ("positive", "non_negative", "number"):
        return _is_number(value) and (kind == "number" or value > 0 or (kind == "non_negative" and value == 0))
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "cells":
        return _fits(value, "positive_int") or (isinstance(value, list) and len(value) == 3
                                                 and all(_fits(v, "positive_int") for v in value))
    if kind == "numbers":
        return isinstance(value, list) and len(value) > 0 and all(_is_number(v) for v in value)
    if kind == "temperature":
        return _fits(value, "non_negative") or (isinstance(value, list) and len(value) == 2
                                                 and all(_fits(v, "non_negative") for v in value))
    if kind == "type_pair":
        return isinstance(value, list) and len(value) == 2 and all(_fits(v, "positive_int") for v in value)
    raise AssertionError(f"unknown value kind {kind!r}")


def _check_values(config: dict) -> None:
    """Raise :class:`ConfigError` naming the key, its value and the type it must have, for the
    first value of the wrong type, sign or choice."""
    for (section, key), kind in VALUE_TYPES.items():
        if section is None:
            tables = [("", config)]
        elif section == "pair.coeff":
            coeffs = (config.get("pair") or {}).get("coeff") or []
            tables = [(f"pair.coeff[{n}].", c) for n, c in enumerate(coeffs)]
        else:
            tables = [(f"{section}.", config[section])] if config.get(section) is not None else []
        for prefix, table in tables:
            value = table.get(key)
            if value is None or _fits(value, kind):
                continue
            expected = (f"one of {', '.join(repr(c) for c in kind)}" if isinstance(kind, tuple)
                        else _EXPECTED[kind])
            raise ConfigError(f"{prefix}{key} = {_toml(value)}: expected {expected}")


def _toml(value) -> str:
    """``value`` as it is written in TOML (strings in double quotes, booleans in lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def _thermostat(ic: dict):
    """The thermostat an [integrator] table asks for (None for "none"), with its keys checked."""
    from ..integrators import Langevin, NoseHoover

    if ic["thermostat"] == "none":
        return None
    for key in ("temperature", "damping") + (("seed",) if ic["thermostat"] == "langevin" else ()):
        if ic[key] is None:
            raise ConfigError(f"missing required key integrator.{key} for thermostat {ic['thermostat']!r}")
    if ic["thermostat"] == "langevin":
        return Langevin(ic["temperature"], ic["damping"], ic["seed"])
    return NoseHoover(ic["temperature"], ic["damping"], ic["chain"])


def plan_from_config(config: dict, device=None, precision=None, deterministic: bool = False):
    """The :class:`~pycumd.run_plan.RunPlan` a checked config describes (one stage), or for a config
    with a ``sweep`` the :class:`~pycumd.ensemble.EnsemblePlan` of its batch.

    ``device`` and ``precision`` (e.g. from the command line) override the config's when given.
    """
    from ..components import EngineOptions
    from ..outputs.settings import OutputSettings, TrajectoryOutput
    from ..run_plan import RunPlan, Stage

    engine = EngineOptions(device=device or config["device"], precision=precision or config["precision"],
                           deterministic=deterministic)
    if config.get("sweep"):
        return _ensemble_plan(config, engine)
    system, potential, integrator, neighbor = _stage_parts(config)
    rc = config["run"]
    stage = Stage(steps=rc["steps"], potential=potential, integrator=integrator, neighbor=neighbor,
                  thermo_every=rc["thermo"], system=system)
    outputs = OutputSettings()
    if rc["trajectory"]:
        outputs.trajectories.append(TrajectoryOutput(rc["trajectory"], rc["trajectory_every"]))
    return RunPlan([stage], engine, outputs, source={"kind": "toml", "text": config["text"]})


def _stage_parts(config: dict):
    """The system, potential, integrator and neighbour options of a checked config."""
    from ..components import NeighborOptions
    from ..integrators import VelocityVerlet
    from ..units import get_units

    if config["kind"] == "lattice":
        system, potential, default_dt = _lattice_system_and_pair(config)
        default_skin = None
    else:
        if config["units"] not in ("lj", "nuclear"):
            raise ConfigError(f"[{config['kind']}] systems are in nuclear units; units = {config['units']!r}")
        system, potential, default_dt = _nuclear_system_and_pair(config)
        default_skin = 2.0
    ic, nc = config["integrator"], config["neighbor"]
    neighbor = NeighborOptions(nc["skin"] if nc["skin"] is not None else default_skin,
                               nc["every"], nc["delay"], nc["check"])
    dt = ic["dt"] or default_dt or get_units(system.units.name).dt
    return system, potential, VelocityVerlet(dt, _thermostat(ic)), neighbor


#: the short names of swept keys: name -> the (section, key) pairs it sets (``pair.coeff``: every
#: coefficient table); a pair whose section the config leaves out (no [velocity]) or whose thermostat
#: has no such key is skipped
SWEEP_ALIASES = {
    "density": [("system", "density")], "cells": [("system", "cells")], "mass": [("system", "mass")],
    "constant": [("system", "constant")],
    "seed": [("velocity", "seed"), ("integrator", "seed")],
    "temperature": [("velocity", "temperature"), ("integrator", "temperature")],
    "epsilon": [("pair.coeff", "epsilon")], "sigma": [("pair.coeff", "sigma")], "r_cut": [("pair", "r_cut")],
    "dt": [("integrator", "dt")], "damping": [("integrator", "damping")],
}
TEMPERING_SCHEMA = {"every": REQUIRED, "seed": REQUIRED, "random_pairs": False, "log": ""}


def _sweep_targets(name: str, config: dict) -> list:
    """The (section, key) pairs the swept ``name`` sets in ``config`` (a short name of
    :data:`SWEEP_ALIASES` or a dotted ``section.key``)."""
    if name in SWEEP_ALIASES:
        targets = []
        for section, key in SWEEP_ALIASES[name]:
            table = config.get(section.split(".")[0])
            if table is None:
                continue
            if section == "integrator" and (table["thermostat"] == "none" or
                                            (key == "seed" and table["thermostat"] != "langevin")):
                continue
            targets.append((section, key))
        if not targets:
            raise ConfigError(f"sweep.{name}: the config has no section it applies to "
                              f"({', '.join(s + '.' + k for s, k in SWEEP_ALIASES[name])})")
        return targets
    section, _, key = name.rpartition(".")
    if (section, key) not in VALUE_TYPES or section in ("", None):
        raise ConfigError(f"sweep.{name}: not a key that can be swept; give one of {', '.join(SWEEP_ALIASES)} "
                          f"or a dotted key such as system.density or pair.coeff.epsilon")
    return [(section, key)]


def _set(config: dict, section: str, key: str, value) -> None:
    if section == "pair.coeff":
        for coeff in config["pair"]["coeff"]:
            coeff[key] = value
    else:
        config[section][key] = value


def _check_sweep(sweep, tempering, config: dict):
    """The checked sweep: a list of (name, targets, values), in the order written (the last varies
    fastest); and the tempering table filled in, or None."""
    if not isinstance(sweep, dict) or not sweep:
        raise ConfigError("sweep must be a table of lists, e.g. sweep = {density = [0.7, 0.75], seed = [1, 2]}")
    out = []
    for name, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"sweep.{name} = {_toml(values)}: expected a non-empty list of values")
        out.append((name, _sweep_targets(name, config), values))
    if tempering is not None:
        tempering = _fill(tempering, TEMPERING_SCHEMA, "tempering.")
        for key in ("every", "seed"):
            if not _fits(tempering[key], "positive_int"):
                raise ConfigError(f"tempering.{key} = {_toml(tempering[key])}: expected a whole number >= 1")
        if not isinstance(tempering["log"], str):
            raise ConfigError(f"tempering.log = {_toml(tempering['log'])}: expected a string (a CSV path)")
        if not isinstance(tempering["random_pairs"], bool):
            raise ConfigError(f"tempering.random_pairs = {_toml(tempering['random_pairs'])}: expected true or false")
        names = [name for name, _, _ in out]
        if config["integrator"]["thermostat"] == "none":
            raise ConfigError("[tempering] needs a thermostat: integrator.thermostat = \"langevin\" or \"nose-hoover\"")
        if "temperature" not in names or len(names) != 1:
            raise ConfigError(f"[tempering]: sweep over temperature only (the ladder), got sweep keys {', '.join(names)}")
    return out, tempering


def _ensemble_plan(config: dict, engine):
    """The :class:`~pycumd.ensemble.EnsemblePlan` of a config with a sweep: one member per combination of
    the swept values (the last key varying fastest), each built as the config with those values."""
    import copy
    import itertools

    from ..ensemble import EnsemblePlan

    sweep, tempering = config["sweep"], config["tempering"]
    base = {k: v for k, v in config.items() if k not in ("text", "sweep", "tempering")}
    systems, potentials, integrators, labels = [], [], [], []
    for values in itertools.product(*[v for _, _, v in sweep]):
        member = copy.deepcopy(base)
        label = {}
        for (name, targets, _), value in zip(sweep, values):
            label[name] = value
            for section, key in targets:
                _set(member, section, key, value)
        try:
            _check_values(member)
            system, potential, integrator, neighbor = _stage_parts(member)
        except (ConfigError, ValueError) as exc:
            raise ConfigError(f"sweep {', '.join(f'{k} = {_toml(v)}' for k, v in label.items())}: {exc}") from None
        systems.append(system)
        potentials.append(potential)
        integrators.append(integrator)
        labels.append(label)
    rc = config["run"]
    trajectory = rc["trajectory"] or None
    if trajectory and "{system}" not in trajectory:
        stem, dot, suffix = trajectory.rpartition(".")
        trajectory = f"{stem}.{{system}}.{suffix}" if dot else trajectory + ".{system}"
    exchange = None
    if tempering is not None:
        exchange = {"temperatures": [label["temperature"] for label in labels], "every": tempering["every"],
                    "seed": tempering["seed"], "random_pairs": tempering["random_pairs"]}
    return EnsemblePlan(systems, potentials, integrators, labels, rc["steps"], neighbor, engine,
                        thermo_every=rc["thermo"], trajectory=trajectory, trajectory_every=rc["trajectory_every"],
                        exchange=exchange, exchange_log=(tempering or {}).get("log") or None,
                        source={"kind": "toml", "text": config["text"]})


def _lattice_system_and_pair(config: dict):
    """The lattice system (with velocities) and the LJ potential of a [system] + [pair] config."""
    from ..potentials import LennardJones
    from ..system import create_velocities, lattice_system

    sysc = config["system"]
    system = lattice_system(sysc["lattice"], sysc["cells"], units=config["units"], density=sysc["density"],
                            constant=sysc["constant"], mass=sysc["mass"])
    if sysc["sphere_radius"] > 0:
        system = system.select(system.box.L / 2, sysc["sphere_radius"])
    if config["velocity"] is not None:
        v = config["velocity"]
        create_velocities(system, v["temperature"], v["seed"], distribution=v["distribution"], loop=v["loop"],
                          zero_momentum=v["zero_momentum"])
    pc = config["pair"]
    if pc["style"] not in ("lj/cut", "lepton"):
        raise ConfigError(f"pair.style {pc['style']!r} is not supported (lj/cut, lepton)")
    needed, other = (("epsilon", "sigma"), "expression") if pc["style"] == "lj/cut" else (("expression",), "epsilon")
    for n, c in enumerate(pc["coeff"]):
        for key in needed:
            if c[key] is None:
                raise ConfigError(f"missing required key pair.coeff[{n}].{key} (pair.style {pc['style']!r})")
        if c[other] is not None:
            raise ConfigError(f"pair.coeff[{n}].{other} is not a key of pair.style {pc['style']!r}")
    if pc["style"] == "lepton":
        return system, _lepton(pc, config["text"]), None
    pot = LennardJones(pc["r_cut"], cutoff=pc["cutoff"], mixing=pc["mixing"])
    for c in pc["coeff"]:
        i, j = c["types"]
        extra = {} if c["r_cut"] is None else {"r_cut": c["r_cut"]}
        pot.pair_coeff(i - 1, j - 1, epsilon=c["epsilon"], sigma=c["sigma"], **extra)
    return system, pot, None


def _lepton(pc: dict, text: str):
    """The ``pair_style lepton`` potential of a [pair] table with ``expression`` keys; an expression
    pycumd cannot read is a :class:`ConfigError` naming its line in ``text``."""
    from ..potentials.formula import formula_from_lepton, lepton_pair

    coeffs = []
    for n, c in enumerate(pc["coeff"]):
        i, j = c["types"]
        values = [c["expression"]] + ([] if c["r_cut"] is None else [c["r_cut"]])
        if not isinstance(c["expression"], str):
            raise ConfigError(f"pair.coeff[{n}].expression = {c['expression']!r}: must be a string")
        try:
            lepton_pair(i - 1, j - 1, values)
        except ValueError as exc:
            raise ConfigError(f"{_line_of(text, c['expression'])}pair.coeff[{n}].expression: {exc}") from None
        coeffs.append((min(i, j) - 1, max(i, j) - 1, values))
    return formula_from_lepton(pc["r_cut"], coeffs, n_types=max(max(c["types"]) for c in pc["coeff"]),
                               cutoff_mode=pc["cutoff"])


def _line_of(text: str, value: str) -> str:
    """``"line N: "`` of the first line of ``text`` that holds (the start of) ``value`` as written,
    else ""."""
    start = (value.strip().splitlines() or [""])[0][:40]
    for number, line in enumerate(text.splitlines(), start=1):
        if start and start in line:
            return f"line {number}: "
    return ""


def _nuclear_system_and_pair(config: dict):
    """The system, potential and time step of an [ions] or [pasta] config (nuclear units)."""
    from .. import ions

    if config["kind"] == "ions":
        c = dict(config["ions"])
        return ions.ion_mixture(c.pop("charges"), c.pop("mass_numbers"), c.pop("fractions"),
                                c.pop("n_ions"), c.pop("number_density"), **c)
    c = dict(config["pasta"])
    return ions.pasta(c.pop("n_nucleons"), c.pop("proton_fraction"), c.pop("number_density"),
                      c.pop("temperature"), **c)
