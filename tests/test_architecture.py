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
