"""Imports point down the layers of docs/architecture.md, never up, and no modules import each other.

Every module under src/vazao is parsed (not imported) and every import statement counted, those inside
functions and under TYPE_CHECKING included: a deferred import is still a dependency, it only hides it.
A unit is a top-level module (vazao.analytic) or a package (vazao.sim); a unit may import its own
modules and any unit of a lower layer, never one of its own layer or above."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DOC = ROOT / "docs" / "architecture.md"

# lowest first; the same table is docs/architecture.md's "Layers"
LAYERS: tuple[tuple[str, ...], ...] = (
    ("vazao",),  # the package root: __version__ and the public names, resolved lazily (PEP 562)
    ("errors", "limits", "resultfiles", "examples"),  # no vazao imports (examples: the shipped workload files)
    ("units", "inputs"),  # base units; reading what a user hands in, within limits
    ("catalog", "results", "workload"),  # data in: hardware/models/formats/prices; result records; traffic
    ("physics",),  # the one cost model: memory, step_cost, engine profiles
    ("bands",),  # error bands of a calibrated profile
    ("analytic", "sim"),  # the two users of step_cost: closed form and discrete-event simulation
    ("validate", "cost"),  # predictions against measured rows; bills and self-hosting on estimate/sim
    ("calibrate", "budget"),  # fitting profiles with validate's predictions; budgets checked with cost
    ("plan",),  # the deployment search
    ("loadgen", "demo"),  # measuring real servers; the first screen's answers
    ("report", "quality"),  # rendering: console, JSON, plots, HTML; a format's quality measured on two servers
    ("serve",),  # the local web page: the library's calls over HTTP, jobs in processes
    ("cli", "testing"),  # the command line; the fake server shipped for users' tests (never imported)
    ("__main__",),
)

# Upward imports that exist today, each to be removed by the change that fixes it (the test then says so).
KNOWN_UPWARD: dict[tuple[str, str], str] = {
    # a type-only import (under TYPE_CHECKING) of the launch command that catalog.engine_flags checks; the
    # check belongs in plan.commands, or EngineCommand below catalog
    ("vazao.catalog.engine_flags", "vazao.plan.commands"): "type hint of check_command's argument",
}

# Module cycles that exist today (each lazily imported one way to work at all).
KNOWN_CYCLES: dict[frozenset[str], str] = {
    frozenset({"vazao.catalog.engine_flags", "vazao.plan.commands"}): "the upward type-only import above",
    frozenset({"vazao.workload.types", "vazao.workload.specs"}): "Workload.iter_specs calls workload.specs",
    frozenset({"vazao.plan.artefacts", "vazao.plan.artefacts_disagg"}): "disaggregated artefacts reuse the rest",
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted((SRC / "vazao").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imported(name: str, path: Path, tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(module, line) of every vazao module this one imports: `from a import b` is a.b when b is a
    module, else a."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the importer's package
                package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            if t == "vazao" or t.startswith("vazao."):
                while t not in MODULES:  # a name inside a module: the module
                    t = t.rsplit(".", 1)[0]
                if t != name:
                    yield t, node.lineno


def _graph() -> dict[str, dict[str, int]]:
    return {name: dict(_imported(name, path, ast.parse(path.read_text(encoding="utf-8"))))
            for name, path in MODULES.items()}


GRAPH = _graph()


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


LAYER = {u: i for i, layer in enumerate(LAYERS) for u in layer}


def test_every_unit_has_a_layer():
    missing = sorted({unit(m) for m in MODULES} - set(LAYER))
    assert not missing, f"place {missing} in LAYERS here and in docs/architecture.md"
    gone = sorted(set(LAYER) - {unit(m) for m in MODULES})
    assert not gone, f"LAYERS names units that no longer exist: {gone}"


def test_imports_point_down():
    upward = {}
    for importer, targets in GRAPH.items():
        for target, line in targets.items():
            a, b = unit(importer), unit(target)
            if a != b and LAYER[b] >= LAYER[a]:
                upward[(importer, target)] = f"{MODULES[importer].relative_to(ROOT)}:{line}"
    new = {k: v for k, v in upward.items() if k not in KNOWN_UPWARD}
    assert not new, "imports of a unit in the same or a higher layer (docs/architecture.md, Layers):\n" + "\n".join(
        f"  {where}: {a} (layer {LAYER[unit(a)]}) imports {b} (layer {LAYER[unit(b)]})"
        for (a, b), where in sorted(new.items()))
    fixed = sorted(set(KNOWN_UPWARD) - set(upward))
    assert not fixed, f"no longer imported upward: remove {fixed} from KNOWN_UPWARD"


def _cycles(graph: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(frozenset(comp))
    return out


def test_no_import_cycles():
    cycles = set(_cycles(GRAPH))
    new = [sorted(c) for c in cycles - set(KNOWN_CYCLES)]
    assert not new, f"modules that import each other (directly or round a loop): {new}"
    fixed = [sorted(c) for c in set(KNOWN_CYCLES) - cycles]
    assert not fixed, f"no longer a cycle: remove {fixed} from KNOWN_CYCLES"


def test_cycle_finder_finds_a_loop():
    assert _cycles({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == [frozenset("abc")]


def test_nothing_but_the_version_from_the_package_root():
    """`from vazao import get_model` would reach any layer through the lazy root and hide the arrow."""
    found = []
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "vazao" and not node.level:
                found += [f"{path.relative_to(ROOT)}:{node.lineno}: {a.name}" for a in node.names
                          if a.name != "__version__" and f"vazao.{a.name}" not in MODULES]
    assert not found, "import these from the module that defines them:\n" + "\n".join(found)


def test_docs_list_the_same_layers():
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if re.match(r"\|\s*\d+\s*\|", line)]
    documented = tuple(tuple(re.findall(r"`([\w.]+)`", row.split("|")[2])) for row in rows)
    assert documented == LAYERS, "docs/architecture.md's Layers table and LAYERS differ"
