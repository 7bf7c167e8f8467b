"""The package's layers: no import cycle, front-ends above the engine, outputs below it, and every
module importable on its own (docs/architecture.md)."""

from __future__ import annotations

import ast
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pycumd"

#: parts of the package that sit above the engine (they build and run simulations; ase is the public
#: path of inputs/ase, __main__ is ``python -m pycumd``; potential_maps is an application beside the MD
#: engine with its own commands, reading through inputs/)
FRONT_ENDS = {"__main__", "ase", "cli", "inputs", "run_plan", "bench", "potential_maps"}
#: what outputs/ (below the simulation loop) must not import: the loop and everything above it
OUTPUTS_MUST_NOT_IMPORT = FRONT_ENDS | {"simulation", "components", "bookkeeping", "step_graph", "integrators"}


def _modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        names.append(".".join(parts))
    return names


def _part(module: str) -> str | None:
    """'pycumd.inputs.config' -> 'inputs'; 'pycumd.simulation' -> 'simulation'; 'pycumd' -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _import_edges() -> dict[str, set[str]]:
    """part -> parts it imports (every import statement, function-level ones included)."""
    edges: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        source = _part(module)
        if source is None:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    name = ".".join(base + ([node.module] if node.module else []))
                    targets = [name] if node.module else [f"{name}.{a.name}" for a in node.names]
                elif node.module:
                    targets = [node.module]
            for target in targets:
                if target.startswith("pycumd."):
                    dest = _part(target)
                    if dest and dest != source:
                        edges.setdefault(source, set()).add(dest)
    return edges


def _find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if not state.get(v):
                found = visit(v)
                if found:
                    return found
        state[u] = 2
        stack.pop()
        return None

    for u in sorted(edges):
        if not state.get(u):
            found = visit(u)
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_planted_cycle():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": {"c"}}) is None


def test_no_import_cycle_among_the_parts_of_the_package():
    edges = _import_edges()
    assert "simulation" in edges and "inputs" in edges      # the graph is not empty
    assert _find_cycle(edges) is None, " -> ".join(_find_cycle(edges))


def test_front_ends_sit_above_the_engine_and_outputs_below_it():
    edges = _import_edges()
    engine_parts = set(edges) | {v for vs in edges.values() for v in vs}
    engine_parts -= FRONT_ENDS
    upward = sorted(f"{u} -> {v}" for u in engine_parts for v in edges.get(u, ()) if v in FRONT_ENDS)
    assert not upward, f"engine parts import front-ends: {upward}"
    outputs_imports = edges.get("outputs", set()) & OUTPUTS_MUST_NOT_IMPORT
    assert not outputs_imports, f"outputs import the step loop or a front-end: {sorted(outputs_imports)}"


@pytest.mark.ci_only
def test_every_module_imports_alone_in_a_fresh_interpreter():
    """Each module imported first, alone: an import-order dependency or a cycle that only bites
    in one order shows up here."""
    modules = _modules()
    assert len(modules) > 40

    def try_import(module):
        proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True)
        return module, proc.returncode, proc.stderr.strip().splitlines()[-1:] if proc.returncode else []

    with ThreadPoolExecutor(max_workers=4) as pool:
        failures = [(m, err) for m, rc, err in pool.map(try_import, modules) if rc != 0]
    # a module that needs CuPy at import fails only for lack of it on a machine without a GPU
    failures = [(m, e) for m, e in failures if not (e and "No module named 'cupy" in e[0])]
    assert not failures, failures


def test_pair_select_is_the_registry():
    """potentials/pair_select.cuh is the text the potential registry generates (rewrite it with
    ``python -m pycumd.potentials.registry`` after adding a potential)."""
    from pycumd.potentials.registry import PAIR_SELECT, header_ids, lammps_pair_styles, pair_select_source

    assert PAIR_SELECT.read_text() == pair_select_source()
    assert header_ids()["potentials/lennard_jones.cuh"] == 0
    assert {"lj/cut", "yukawa", "coul/debye", "table", "lepton"} <= set(lammps_pair_styles())


def _defined_names(part: str) -> set:
    """Every name a part of the package defines: functions, classes, assigned names and attributes."""
    names = set()
    root = PACKAGE / part if (PACKAGE / part).is_dir() else PACKAGE / f"{part}.py"
    for path in ([root] if root.is_file() else sorted(root.rglob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


#: private members of the standard library's types that the engine may use (namedtuple's)
STANDARD_PRIVATE = {"_replace", "_asdict", "_fields"}


def test_engine_uses_no_private_member_of_another_package():
    """An engine module imports no ``_name`` of another part of the package and reads no
    ``obj._name`` that its own part does not define: the parts meet through their public members
    (pycumd.contracts), never through another part's internals such as a list's builder."""
    defined: dict = {}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        part = _part(module)
        if part is None or part in FRONT_ENDS:
            continue
        own = defined.setdefault(part, _defined_names(part))
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else [])) if node.level else (node.module or "")
                if target.startswith("pycumd") and _part(target) != part:
                    found += [f"{path.name}:{node.lineno} imports {target}.{a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                if node.attr not in own and node.attr not in STANDARD_PRIVATE:
                    found.append(f"{path.name}:{node.lineno} reads .{node.attr}")
    assert not found, "\n".join(found)


def test_no_class_name_tests():
    """Capabilities are flags of the contracts, never ``type(x).__name__ == ...`` comparisons."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn))
                                                      for op in node.ops):
                for side in [node.left, *node.comparators]:
                    if isinstance(side, ast.Attribute) and side.attr == "__name__" and isinstance(side.value, ast.Call) \
                            and isinstance(side.value.func, ast.Name) and side.value.func.id == "type":
                        found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, "class-name tests: " + ", ".join(found)


def test_engine_parts_derive_from_their_contracts():
    """Every neighbour structure, force evaluator, integrator and step hook derives from the base
    class of its protocol, so that it has every member the engine uses."""
    from pycumd import contracts
    from pycumd.forces import PairForces
    from pycumd.integrators import CRescale, Langevin, MTKBarostat, NoseHoover, VelocityVerlet
    from pycumd.integrators.fixes import FixChain, Momentum, Recenter, TempRescale
    from pycumd.neighbors.allpairs import AllPairsForces, AllPairsNeighbors
    from pycumd.neighbors.verlet import NeighborList
    from pycumd.parallel.domains import DomainForces, DomainNeighborList
    from pycumd.parallel.matrix import MatrixForces

    for cls in (NeighborList, AllPairsNeighbors, DomainNeighborList):
        assert issubclass(cls, contracts.NeighborStructureBase), cls
    from pycumd.parallel.replicated import ReplicatedForces

    for cls in (PairForces, AllPairsForces, DomainForces, MatrixForces, ReplicatedForces):
        assert issubclass(cls, contracts.ForceEvaluatorBase), cls
    for cls in (NoseHoover, Langevin, MTKBarostat, CRescale, FixChain, Momentum, Recenter, TempRescale):
        assert issubclass(cls, contracts.StepHooksBase), cls
    assert issubclass(VelocityVerlet, contracts.IntegratorBase)
    assert not Langevin.runs_in_composite and Langevin.runs_over_ranks and NoseHoover.runs_over_ranks
    assert PairForces.capturable and not DomainForces.capturable and NeighborList.capturable
    with pytest.raises(NotImplementedError, match="spatial domains"):      # a decomposed run rebuilds instead
        DomainNeighborList.__new__(DomainNeighborList).checkpoint_state()
