"""The CLI contract under hostile input: exit 2 and one line on stderr that names the input, never a
traceback; with --json the error is one JSON object on stdout. (bench/hostile_sweep.py runs the same
families, and many more cases, as subprocesses.)"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vazao import limits
from vazao.cli import app
from vazao.cli.app import check_positive, parse_float_list, parse_int_list
from vazao.errors import VazaoError

runner = CliRunner()
M, G, P = "llama-3.1-8b", "h100-sxm", "claude-haiku-5.5"
FIT = ["fit", M, "--gpu", G]
SIM = ["simulate", M, "--gpu", G, "--requests", "20"]
CONV = ["bill", "conversation", "-p", P, "--system", "100", "--turns", "3", "--user", "10", "--reply", "10"]
HERE = os.path.dirname(__file__)
REQUESTS = os.path.join(HERE, "..", "examples", "requests.jsonl")


def one_line_error(args: list[str], *needles: str) -> str:
    res = runner.invoke(app, args)
    assert res.exit_code == 2, (args, res.exit_code, res.output)
    err = res.stderr
    assert "Traceback" not in res.output, (args, res.output)
    # an exit through typer.Exit / sys.exit, never an exception that escaped the command
    assert res.exception is None or isinstance(res.exception, SystemExit), (args, repr(res.exception))
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, (args, err)
    assert lines[0].startswith("error: "), lines
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# ---- click/typer parse errors ----------------------------------------------------------------------
@pytest.mark.parametrize("args,needle", [
    ([*FIT, "--count", "1e12"], "--count"),
    ([*FIT, "--count", "nan"], "'nan'"),
    ([*FIT, "--count", "1.5"], "--count"),
    ([*FIT, "--no-such-flag"], "--no-such-flag"),
    (["fit", M], "--gpu"),
    (["fit"], "model"),
    (["no-such-command"], "no-such-command"),
    (["bill", "nope"], "nope"),
    ([*SIM, "--spec-alpha", "x"], "--spec-alpha"),
])
def test_parse_errors_are_one_line(args, needle):
    one_line_error(args, needle)


def test_help_still_works():
    res = runner.invoke(app, ["--help"])
    assert res.exit_code == 0 and "simulate" in res.stdout
    res = runner.invoke(app, [])
    assert res.exit_code == 2 and "Usage" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["fit", "--help"])
    assert res.exit_code == 0 and "--count" in res.stdout


# ---- --json: the error is one JSON object on stdout -----------------------------------------------------
@pytest.mark.parametrize("args,needle", [
    ([*FIT, "--count", "x", "--json"], "--count"),  # a parse error, before any command runs
    (["fit", M, "--gpu", "no-such-gpu", "--json"], "no-such-gpu"),
    ([*SIM, "--seed", "-1", "--json"], "--seed"),
    (["cost", "train", "--params", "1e400", "--tokens", "1T", "--gpu", G, "--json"], "1e400"),
    ([*FIT, "--json", "--bogus"], "--bogus"),
])
def test_json_errors_are_one_json_object(args, needle):
    res = runner.invoke(app, args)
    assert res.exit_code == 2
    obj = json.loads(res.stdout)
    assert list(obj) == ["error"] and needle in obj["error"]
    assert "\n" not in obj["error"]


# ---- numbers and lists, bounded before work ------------------------------------------------------------
@pytest.mark.parametrize("args,needles", [
    ([*SIM[:-2], "--requests", str(10**12)], ("--requests", "at most")),
    ([*SIM, "--concurrency", "1000000000"], ("--concurrency", "at most")),
    ([*SIM, "--concurrency", ""], ("--concurrency", "empty")),
    ([*SIM, "--rate", "1,,2"], ("--rate", "empty item")),
    ([*SIM, "--rate", "nan"], ("--rate", "finite")),
    ([*SIM, "--rate", "1e400"], ("--rate",)),
    ([*SIM, "--seed", "-1"], ("--seed", "at least 0")),
    ([*SIM, "--seed", str(2**32)], ("--seed", "at most")),
    ([*SIM, "--count", "2", "--tp", "1", "--disagg", ""], ("--disagg",)),
    ([*SIM, "--count", "2", "--tp", "1", "--disagg", "1:1", "--kv-link", "0"], ("--kv-link",)),
    ([*SIM, "--duration", "1e400s"], ("out of range",)),
    ([*SIM, "--compare", "batching=static,,continuous"], ("empty item",)),
    ([*SIM, "--compare", "max_seqs=1,2,3,4,5,6,7,8", "--compare", "block=16,32,64,128,256,512,1024,2048,4096"],
     ("at most 64",)),
    ([*SIM, "--spec-k", "2", "--spec-alpha", "nan"], ("--spec-alpha",)),
    ([*SIM, "--count", str(2**40)], ("--count", "at most")),
    (["estimate", M, "--gpu", G, "--batch", "1.5"], ("--batch", "whole")),
    (["estimate", M, "--gpu", G, "--batch", ""], ("--batch", "empty")),
    ([*FIT, "--context", str(10**15)], ("--context", "at most")),
    ([*FIT, "--count", "99999999999999999999999"], ("--count",)),
    ([*CONV[:7], str(10**12), *CONV[8:]], ("--turns", "at most")),
    ([*CONV, "--cache", "7y"], ("7y",)),
    (["bill", "request", "-p", P, "-i", "100", "--cache", ""], ("--cache",)),
    (["bill", "agent", "-p", P, "--calls", "0", "--context", "1", "--reply", "1"], ("--calls",)),
    (["cost", "train", "--params", "7B", "--tokens", "1e300T", "--gpu", G], ("out of range",)),
    (["cost", "train", "--params", "7B", "--tokens", "1T", "--gpu", G, "--mfu", "nan"], ("--mfu",)),
    (["cost", "breakeven", M, "-p", P, "--gpus", "", "--input", "1", "--output", "1"], ("--gpus",)),
    (["prefix", REQUESTS, "-p", P, "--chars-per-token", "nan"], ("--chars-per-token",)),
    (["prefix", REQUESTS, "-p", P, "--block", "0"], ("--block",)),
    (["prefix", REQUESTS, "-p", P, "--min-cacheable", "-1"], ("--min-cacheable",)),
    (["prefix", REQUESTS, "-p", P, "--cache", "7y"], ("7y",)),
    (["prices", "import", "--from-litellm", "--as-of", "yesterday"], ("--as-of",)),
])
def test_bad_numbers_are_one_line(args, needles):
    one_line_error(args, *needles)


# ---- output paths: refused before the run, or a one-line error at write time ------------------------------
def test_output_paths(tmp_path):
    one_line_error([*SIM, "--records", str(tmp_path)], "folder")
    one_line_error([*SIM, "--records", str(tmp_path / "no" / "x.jsonl")], "does not exist")
    if os.path.exists("/dev/full"):
        one_line_error([*SIM, "--records", "/dev/full"], "/dev/full")
    res = runner.invoke(app, [*SIM, "--records", str(tmp_path / "ok.jsonl")])
    assert res.exit_code == 0 and len((tmp_path / "ok.jsonl").read_text().splitlines()) == 20


# ---- the shared list and number parsers -----------------------------------------------------------------
@pytest.mark.parametrize("text", ["", ",", "1,,2", "1,", "nan", "inf", "-1", "0", "1e400", "a", "1.5"])
def test_int_lists_refuse(text):
    with pytest.raises(VazaoError):
        parse_int_list(text, "--batch")


@pytest.mark.parametrize("text", ["", "1,,2", "nan", "inf", "-1", "0", "1e400", "x"])
def test_float_lists_refuse(text):
    with pytest.raises(VazaoError):
        parse_float_list(text, "--rate")


def test_lists_are_bounded():
    assert parse_int_list("1, 4,16", "--c") == [1, 4, 16]
    assert parse_float_list("0.5,2", "--r") == [0.5, 2.0]
    with pytest.raises(VazaoError, match="at most"):
        parse_int_list(str(limits.MAX_CONCURRENCY + 1), "--c")
    with pytest.raises(VazaoError, match="at most"):
        parse_float_list("1e7", "--r")
    with pytest.raises(VazaoError, match="items"):
        parse_int_list(",".join(["1"] * 1000), "--c")


def test_check_positive_uses_the_named_bound():
    check_positive(count=8, requests=10**6, tp=None)
    with pytest.raises(VazaoError, match="--max-seqs"):
        check_positive(max_seqs=0)
    with pytest.raises(VazaoError, match="--requests must be at most"):
        check_positive(requests=limits.MAX_SIM_REQUESTS + 1)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30))
def test_any_text_as_a_list_is_a_list_or_one_error(text):
    try:
        values = parse_int_list(text, "--batch")
    except VazaoError as exc:
        assert "\n" not in str(exc)
    else:
        assert values and all(isinstance(v, int) and 1 <= v <= limits.MAX_CONCURRENCY for v in values)


# ---- the last resort: a reader that missed vazao.inputs still gives one line, a bug stays a bug ------------
def test_user_faults_a_reader_missed_are_one_line(monkeypatch):
    import vazao.physics.memory as cmds  # the fit command imports fit from here when it runs

    def deep(*_a, **_k):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(cmds, "fit", deep)
    line = one_line_error(FIT, "unexpected RecursionError")
    assert "recursion" in line


def test_a_genuine_bug_keeps_its_traceback(monkeypatch):
    import vazao.physics.memory as cmds  # the fit command imports fit from here when it runs

    def bug(*_a, **_k):
        raise TypeError("a bug")

    monkeypatch.setattr(cmds, "fit", bug)
    res = runner.invoke(app, FIT)
    assert res.exit_code == 1 and isinstance(res.exception, TypeError)


def test_budget_simulation_concurrency_is_bounded_before_work():
    from typer.testing import CliRunner

    from vazao.cli import app

    r = CliRunner().invoke(app, ["budget", "check", "examples/budget.yaml", "--simulate", "--model", "llama-3.1-8b",
                                 "--gpu", "h100-sxm", "--concurrency", "1000000"])
    assert r.exit_code == 2 and "at most 10,000" in r.output and "Traceback" not in r.output
