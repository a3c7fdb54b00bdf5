"""Bounds on user input live in one place (issue 22): vazao/limits.py defines every MAX_ constant, and no
other module defines one, so the library and the CLI cannot disagree about a bound (a seed the CLI refused
but the library took, three durations called MAX_DURATION_S)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vazao import limits
from vazao.cli import app
from vazao.errors import VazaoError
from vazao.workload import workload_from_dict

SRC = Path(__file__).resolve().parents[1] / "src" / "vazao"


def _module_constants(tree: ast.Module):
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        for t in targets:
            if isinstance(t, ast.Name):
                yield t.id, node.lineno


def test_only_limits_defines_max_constants():
    stray = []
    for p in sorted(SRC.rglob("*.py")):
        if p.name == "limits.py" and p.parent == SRC:
            continue
        tree = ast.parse(p.read_text(encoding="utf-8"))
        stray += [f"{p.relative_to(SRC)}:{line} {name}" for name, line in _module_constants(tree)
                  if name.startswith("MAX_")]
    assert not stray, "MAX_ constants outside vazao/limits.py:\n" + "\n".join(stray)


def test_each_bound_has_one_value():
    tree = ast.parse((SRC / "limits.py").read_text(encoding="utf-8"))
    names = [name for name, _ in _module_constants(tree)]
    assert len(names) == len(set(names))
    assert sum(n.startswith("MAX_") for n in names) > 50  # the walk read the real file


def test_the_library_and_the_cli_refuse_the_same_seed():
    """limits.SEED_LIMIT (2^32, numpy's legacy generators) holds for a workload built in the library too."""
    base = {"arrival": {"kind": "concurrency", "concurrency": 1}, "prompt": 10, "output": 10, "requests": 5}
    assert workload_from_dict({**base, "seed": limits.SEED_LIMIT - 1}).seed == limits.SEED_LIMIT - 1
    with pytest.raises(VazaoError):
        workload_from_dict({**base, "seed": limits.SEED_LIMIT})
    res = CliRunner().invoke(app, ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--requests", "5",
                                   "--seed", str(limits.SEED_LIMIT)])
    assert res.exit_code == 2 and "--seed" in res.stderr
