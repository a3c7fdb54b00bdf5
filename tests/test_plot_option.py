"""`--plot PATH` on estimate and simulate (issue 13): the command's own picture, drawn from the same
report `vazao report` builds; a bad name or folder fails with exit 2 before any work."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vazao.cli import app

pytest.importorskip("altair", reason="the report extra (altair) is not installed")
pytest.importorskip("vl_convert", reason="the report extra (vl-convert-python) is not installed")

runner = CliRunner()
EST = ["estimate", "llama-3.1-8b", "-g", "h100-sxm", "-b", "1,16,64"]
SIM = ["simulate", "llama-3.1-8b", "-g", "h100-sxm", "--requests", "40"]


def test_estimate_plot_is_the_roofline_svg(tmp_path):
    out = tmp_path / "roofline.svg"
    res = runner.invoke(app, [*EST, "--plot", str(out)])
    assert res.exit_code == 0, res.output
    svg = out.read_text()
    assert svg.startswith("<svg") and "<path" in svg and "roofline" in res.stdout
    assert "arithmetic intensity" in svg.lower() or "flop" in svg.lower()


def test_simulate_sweep_plot_png_and_json_stdout_stays_one_object(tmp_path):
    out = tmp_path / "curve.png"
    res = runner.invoke(app, [*SIM, "--rate", "2,8", "--slo", "ttft_p95=500ms", "--plot", str(out), "--json"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)  # the 'wrote' line went to stderr
    assert "rate sweep 2, 8/s" in obj["workload_description"]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


@pytest.mark.parametrize("name,needle", [("plot.pdf", "expected a name ending in"),
                                         ("missing/plot.svg", "does not exist")])
def test_bad_plot_path_fails_before_any_work(tmp_path, name, needle):
    for cmd in (EST, [*SIM, "--rate", "2,4"]):
        res = runner.invoke(app, [*cmd, "--plot", str(tmp_path / name)])
        assert res.exit_code == 2 and needle in res.output
        assert "tok/s" not in res.stdout and "TTFT" not in res.stdout  # no table printed: nothing ran


def test_fit_plot_is_the_memory_bar(tmp_path):
    out = tmp_path / "memory.svg"
    res = runner.invoke(app, ["fit", "llama-3.1-70b", "-g", "h100-sxm", "-n", "2", "--plot", str(out)])
    assert res.exit_code == 0, res.output
    svg = out.read_text()
    assert svg.startswith("<svg") and "KV cache" in svg and "weights" in svg


def test_breakeven_plot_has_the_api_line_and_a_curve_per_gpu(tmp_path):
    out = tmp_path / "cost.html"
    res = runner.invoke(app, ["cost", "breakeven", "llama-3.1-8b", "-p", "sonnet-5.5", "-w", "chat",
                              "--gpus", "h100-sxm,l4", "--plot", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert "wrote" not in res.stdout  # --quiet: the result only
    assert "API: claude" in html and "h100-sxm (vllm)" in html and " l4 tp" in html


def test_plan_and_validate_plots(tmp_path):
    from pathlib import Path

    out = tmp_path / "pareto.svg"
    res = runner.invoke(app, ["plan", "-m", "llama-3.1-8b", "-g", "l4,h100-sxm", "-f", "bf16,fp8", "--traffic", "5/s",
                              "--requests", "40", "--simulate-top", "4", "--plot", str(out)])
    assert res.exit_code in (0, 1), res.output
    assert out.read_text().startswith("<svg") and "wrote" in res.stdout
    csv_file = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-measurements.csv"
    if not csv_file.exists():
        pytest.skip("no shared measurements beside this clone")
    out = tmp_path / "accuracy.png"
    res = runner.invoke(app, ["validate", str(csv_file), "--engine", "llama.cpp", "--workers", "1", "--plot", str(out)])
    assert res.exit_code == 0, res.output
    assert out.read_bytes()[:4] == b"\x89PNG"
