"""`--csv` after any command (issue 13: '--csv on every table'): each table the command prints goes
to stdout as CSV, from the same rich table the terminal shows, and nothing else does."""

from __future__ import annotations

import csv
import io
import json

import pytest
from typer.testing import CliRunner

from vazao.cli import app

runner = CliRunner()


def _tables(text: str) -> list[list[list[str]]]:
    return [list(csv.reader(io.StringIO(block))) for block in text.strip("\n").split("\n\n")]


def test_gpus_csv_has_one_row_per_catalog_entry():
    res = runner.invoke(app, ["gpus", "--csv"])
    assert res.exit_code == 0, res.output
    (table,) = _tables(res.stdout)
    ids = [g["id"] for g in json.loads(runner.invoke(app, ["gpus", "--json"]).stdout)["gpus"]]
    assert table[0][0] == "id" and [r[0] for r in table[1:]] == ids


def test_estimate_csv_rows_are_the_batches_asked_for_and_the_same_numbers_as_json():
    args = ["estimate", "llama-3.1-8b", "-g", "h100-sxm", "-b", "1,4,64"]
    (table,) = _tables(runner.invoke(app, [*args, "--csv"]).stdout)
    header, rows = table[0], table[1:]
    assert [r[0] for r in rows] == ["1", "4", "64"]
    js = json.loads(runner.invoke(app, [*args, "--json"]).stdout)["rows"]
    col = header.index("tok/s total")
    for r, j in zip(rows, js, strict=True):
        # the cell is the terminal's: the value, then its 80% band where the profile is calibrated
        value = r[col].split(" (")[0]
        assert float(value.replace(",", "")) == pytest.approx(j["tokens_per_s_total"], rel=0.01)
        band = j.get("tokens_per_s_band")
        if band:
            assert r[col].endswith(")") and "–" in r[col]


def test_headers_wrapped_for_the_terminal_are_one_line_and_markup_is_gone():
    res = runner.invoke(app, ["demo", "--csv"])
    assert res.exit_code == 0, res.output
    table = _tables(res.stdout)[0]
    assert "tok/s @b1" in table[0] and all("\n" not in h and "[" not in h for h in table[0])
    assert "needs" not in res.stdout and "vazao " not in res.stdout  # the prose lines are dropped


def test_sweep_csv_has_a_row_per_level():
    res = runner.invoke(app, ["simulate", "llama-3.1-8b", "-g", "h100-sxm", "--requests", "40", "--rate", "2,4,8",
                              "--csv"])
    (table,) = _tables(res.stdout)
    assert table[0][0] == "rate" and [r[0] for r in table[1:]] == ["2", "4", "8"]


@pytest.mark.parametrize("args,needle", [
    (["fit", "llama-3.1-8b", "-g", "h100-sxm", "--csv"], "prints no table"),
    (["estimate", "llama-3.1-8b", "-g", "h100-sxm", "--csv", "--json"], "choose one"),
])
def test_csv_refusals_are_one_line_exit_2(args, needle):
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and needle in res.output
