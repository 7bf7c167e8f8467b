"""The one registry of bonded styles: every :class:`~pycumd.molecular.styles.base.BondedStyle` subclass in a
module of this package.  Adding a style is adding its two files, ``styles/KIND_NAME.py`` and
``styles/KIND_NAME.cuh``: the LAMMPS reader, the kernels and the data files find it here."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path

from .base import KINDS, BondedStyle


@functools.lru_cache(maxsize=None)
def bonded_styles() -> dict:
    """``{(kind, lammps_style): class}`` of every registered style."""
    for info in pkgutil.iter_modules([str(Path(__file__).resolve().parent)]):
        importlib.import_module(f"{__package__}.{info.name}")
    found: dict = {}
    for cls in BondedStyle.__subclasses__():
        key = (cls.kind, cls.lammps_style)
        if key in found:
            raise TypeError(f"{found[key].__name__} and {cls.__name__} both declare {cls.kind}_style {cls.lammps_style}")
        found[key] = cls
    return found


def make_style(kind: str, name: str) -> BondedStyle:
    """A new style object of ``kind`` (bond, angle, dihedral, improper) and LAMMPS name ``name``;
    a ValueError lists the styles there are."""
    if kind not in KINDS:
        raise ValueError(f"unknown bonded kind {kind!r}")
    cls = bonded_styles().get((kind, name))
    if cls is None:
        known = sorted(n for k, n in bonded_styles() if k == kind)
        raise ValueError(f"{kind}_style {name} is not supported (supported: {', '.join(known)})")
    return cls()
