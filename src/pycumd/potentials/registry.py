"""The one registry of pair potentials: every :class:`~pycumd.potentials.base.PairPotential` subclass
in a module of this package that names its own :attr:`~pycumd.potentials.base.PairPotential.cuda_header`.

Derived from it, and from nothing else:

* the compile-time id of each CUDA header (:func:`header_ids`: ``POTENTIAL_HEADER_ID`` of the force
  kernels; 0 Lennard-Jones, then the order of the header paths), and a named constant for each
  (``POTENTIAL_ID_LENNARD_JONES``, ...: kernels compare ids with those, never with numbers);
* the ``#if`` chain of ``potentials/pair_select.cuh`` (:func:`pair_select_source`; the file is
  written by ``python -m pycumd.potentials.registry`` and ``tests/test_architecture.py`` checks it);
* the LAMMPS pair styles (:func:`lammps_pair_styles`, from each class's
  :attr:`~pycumd.potentials.base.PairPotential.lammps_styles`).

Adding a potential is adding its two files, ``potentials/NAME.py`` and ``potentials/NAME.cuh``
(and running this module once to rewrite ``pair_select.cuh``).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path

from .base import ManyBodyPotential, PairPotential

PACKAGE_DIR = Path(__file__).resolve().parent
PAIR_SELECT = PACKAGE_DIR / "pair_select.cuh"
#: id 0, and the header a kernel compiled without POTENTIAL_HEADER_ID gets (the kernel source checks)
DEFAULT_HEADER = "potentials/lennard_jones.cuh"


@functools.lru_cache(maxsize=None)
def potential_classes() -> tuple:
    """The registered potential classes: Lennard-Jones (id 0), then the others in the order of
    their CUDA header paths."""
    for info in pkgutil.iter_modules([str(PACKAGE_DIR)]):
        importlib.import_module(f"{__package__}.{info.name}")
    found: dict = {}
    pending = list(PairPotential.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        header = cls.__dict__.get("cuda_header")
        if not header or not cls.__module__.startswith(f"{__package__}."):
            continue
        if header in found and found[header] is not cls:
            raise TypeError(f"{found[header].__name__} and {cls.__name__} both declare cuda_header {header!r}")
        found[header] = cls
    return tuple(found[h] for h in sorted(found, key=lambda h: (h != DEFAULT_HEADER, h)))


@functools.lru_cache(maxsize=None)
def header_ids() -> dict:
    """CUDA header path -> ``POTENTIAL_HEADER_ID``."""
    return {cls.cuda_header: k for k, cls in enumerate(potential_classes())}


@functools.lru_cache(maxsize=None)
def many_body_classes() -> tuple:
    """The registered many-body potential classes (:class:`~pycumd.potentials.base.ManyBodyPotential`
    subclasses of this package that declare their own ``lammps_styles``), by name."""
    potential_classes()                         # imports every module of the package
    found, pending = [], list(ManyBodyPotential.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__dict__.get("lammps_styles") and cls.__module__.startswith(f"{__package__}."):
            found.append(cls)
    return tuple(sorted(found, key=lambda c: c.__name__))


@functools.lru_cache(maxsize=None)
def lammps_pair_styles() -> dict:
    """LAMMPS ``pair_style`` name -> (potential class, (fewest, most) global arguments): the pair
    potentials' and the many-body potentials' styles."""
    styles: dict = {}
    for cls in potential_classes() + many_body_classes():
        for style, counts in cls.lammps_styles.items():
            if style in styles:
                raise TypeError(f"{styles[style][0].__name__} and {cls.__name__} both declare pair_style {style}")
            styles[style] = (cls, tuple(counts))
    return styles


def id_macro(header: str) -> str:
    """The kernels' name for a header's id: ``potentials/lennard_jones.cuh`` -> ``POTENTIAL_ID_LENNARD_JONES``."""
    return "POTENTIAL_ID_" + Path(header).stem.upper()


def pair_select_source() -> str:
    """The text of ``potentials/pair_select.cuh``: the ``#if`` chain over :func:`header_ids`."""
    ids = header_ids()
    lines = ["// The pair potential of a force kernel, chosen at compile time by POTENTIAL_HEADER_ID.",
             "// Generated from the registered potential classes by `python -m pycumd.potentials.registry`",
             "// (pycumd.potentials.registry.header_ids maps each potential's cuda_header to its id).",
             "// Each header defines PAIR_TABLE_COLUMNS and pair_raw(r2, row, energy, force_over_r).",
             "#pragma once"]
    lines += [f"#define {id_macro(header)} {hid}" for header, hid in ids.items()]
    lines += ["#ifndef POTENTIAL_HEADER_ID",
              f"#define POTENTIAL_HEADER_ID {id_macro(DEFAULT_HEADER)}",
              "#endif",
              ""]
    for k, (header, hid) in enumerate(ids.items()):
        lines.append(f"#{'if' if k == 0 else 'elif'} POTENTIAL_HEADER_ID == {hid}")
        lines.append(f'#include "{header}"')
    lines += ["#else", '#error "unknown POTENTIAL_HEADER_ID"', "#endif", ""]
    return "\n".join(lines)


def main() -> None:
    """Write ``pair_select.cuh`` from the registry."""
    PAIR_SELECT.write_text(pair_select_source())
    print(f"wrote {PAIR_SELECT} ({len(header_ids())} potentials)")


if __name__ == "__main__":
    main()
