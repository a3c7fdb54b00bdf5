"""Library errors speak library words (issue 22): a message raised outside vazao.cli names parameters, never
a command-line flag; the CLI says the flag of the running command instead (cli/app.error_text)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vazao
from vazao.cli import app
from vazao.errors import VazaoError

SRC = Path(__file__).resolve().parents[1] / "src" / "vazao"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]+")
# Modules whose `--flags` are an inference engine's (launch commands and their checks) or the fake server's
# own, not vazao's: they say what the engine accepts.
ENGINE_FLAGS = {"plan/commands.py", "plan/artefacts.py", "plan/artefacts_disagg.py", "catalog/engine_flags.py",
                "testing/fake_server.py"}
# the input layer's readers: their `what` argument begins the message they raise
READERS = {"input_file", "output_file", "output_folder", "read_bytes", "read_text", "read_json", "read_yaml",
           "iter_lines", "input_stream", "number", "positive", "split_list", "number_list", "loads_json",
           "loads_yaml", "write_text", "decode"}


def _library_modules():
    for p in sorted(SRC.rglob("*.py")):
        rel = p.relative_to(SRC).as_posix()
        if rel.startswith("cli/") or rel in ENGINE_FLAGS:
            continue
        yield rel, ast.parse(p.read_text(encoding="utf-8"))


def _strings(node: ast.AST):
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub


def _called(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def test_no_library_error_names_a_flag():
    found = []
    for rel, tree in _library_modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and node.exc is not None:
                texts = list(_strings(node.exc))
            elif isinstance(node, ast.Call) and _called(node) in READERS and len(node.args) >= 2:
                texts = list(_strings(node.args[1]))  # `what`: the reader's message begins with it
            else:
                continue
            found += [f"{rel}:{t.lineno}: {t.value[:70]!r}" for t in texts if FLAG.search(t.value)]
    assert not found, "library errors naming a CLI flag:\n" + "\n".join(found)


def test_the_walk_sees_raises_and_readers():
    """The check above is only as good as its walk: it must reach the raises and reader calls there are."""
    raises = readers = 0
    for _rel, tree in _library_modules():
        for node in ast.walk(tree):
            raises += isinstance(node, ast.Raise)
            readers += isinstance(node, ast.Call) and _called(node) in READERS
    assert raises > 300 and readers > 50


def test_a_library_error_names_its_parameter():
    with pytest.raises(VazaoError) as exc:
        vazao.SLO.parse(",,")
    assert exc.value.parameter == "slo" and str(exc.value).startswith("slo has an empty item")
    with pytest.raises(VazaoError) as exc:
        vazao.make_deployment("llama-3.1-8b", "h100-sxm", count=0)
    assert exc.value.parameter == "count" and "--" not in str(exc.value)


@pytest.mark.parametrize(("argv", "said"), [
    # the parameter begins the message: the flag takes its place
    (["cost", "selfhost", "llama-3.1-8b", "--gpu", "h100-sxm", "--input", "100", "--output", "10", "--slo", ",,"],
     "error: --slo has an empty item"),
    (["estimate", "llama-3.1-8b", "--gpu", "h100-sxm", "--count", "0"], "error: --count must be"),
    # the parameter is named inside: the flag that sets it, where the library says `table`
    (["bill", "usage", "LOG", "--batch"], "give --price, a fallback price"),
    # a message that does not name it: the flag before it
    (["bill", "request", "--price", "gpt-5", "--cache", "7y", "--input", "5"], "error: --cache: gpt-5 caches"),
])
def test_the_cli_says_the_flag(argv, said, tmp_path):
    log = tmp_path / "usage.jsonl"
    log.write_text('{"model": "no-such-model", "usage": {"prompt_tokens": 3, "completion_tokens": 2}}\n')
    res = CliRunner().invoke(app, [str(log) if a == "LOG" else a for a in argv])
    assert res.exit_code == 2
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], res.stderr
