"""vazao validate / calibrate name a missing measurements path as missing (exit 2, one line), whatever
else the command would have asked of the path next (--engine for bench runs, the CSV's columns)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from vazao.cli import app

runner = CliRunner()


@pytest.mark.parametrize("args", [
    ["validate", "{missing}"],  # a CSV name: before this, "bench runs do not say which engine served them"
    ["validate", "{missing}", "--engine", "vllm", "--gpu", "h100-sxm"],
    ["calibrate", "{missing}", "--engine", "vllm", "-o", "{out}"],
])
@pytest.mark.parametrize("name", ["nonexistent.csv", "no-such-runs"])
def test_a_missing_path_says_it_does_not_exist(tmp_path, args, name):
    missing = tmp_path / name
    res = runner.invoke(app, [a.format(missing=missing, out=tmp_path / "p.yaml") for a in args])
    assert res.exit_code == 2, res.output
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert lines == [f"error: measurements {missing} does not exist"], res.stderr
    assert not (tmp_path / "p.yaml").exists()


def test_a_folder_of_runs_still_needs_the_engine(tmp_path):
    res = runner.invoke(app, ["validate", str(tmp_path)])
    assert res.exit_code == 2 and "give --engine" in res.stderr, res.output
