"""How a predicted latency is held to an SLO limit: the band's pessimistic edge (the default) or the
predicted value (--judge prediction); the band is shown either way (cost.capacity.Check, SLO.judge)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.cost.capacity import Check
from vazao.errors import VazaoError
from vazao.plan import PlanInputs, Traffic, run_plan
from vazao.results import SLO


def test_a_check_holds_the_edge_or_the_value_as_told():
    band = Check("tpot_p95", 0.040, 0.060, 0.050)
    assert not band.met and band.met_by_value and band.ratio == pytest.approx(1.2)
    value = Check("tpot_p95", 0.040, 0.060, 0.050, "prediction")
    assert value.met and value.ratio == pytest.approx(0.8)
    assert value.to_json()["judged_by"] == "prediction" and value.to_json()["pessimistic_s"] == 0.060
    assert value.to_json()["judged_s"] == 0.040 and band.to_json()["judged_s"] == 0.060
    # the plan report reads what was held, not the edge, from a plan's JSON
    from vazao.report.plan_report import _worst

    assert _worst({"checks": [value.to_json()]})[1] == pytest.approx(0.8)
    assert _worst({"checks": [band.to_json()]})[1] == pytest.approx(1.2)
    # no band (an uncalibrated profile): the value, whatever the judge
    assert Check("tpot_p95", 0.040, None, 0.050).met


def test_an_slo_keeps_its_judge_and_refuses_an_unknown_one():
    s = SLO.parse("ttft_p95=1s")
    assert s.judge == "band" and s.judged_by(None) is s
    assert s.judged_by("prediction").judge == "prediction"
    assert s.judged_by("prediction").limits == s.limits
    with pytest.raises(VazaoError, match="judge"):
        s.judged_by("optimistic")


def _inputs(judge: str) -> PlanInputs:
    # L40S is Ada: the vLLM profile was fitted on Hopper, so its bands are widened (bands.py)
    return PlanInputs(workload="chat", traffic=Traffic(rate=8), slo=SLO.parse("ttft_p95=1s,tpot_p95=40ms")
                      .judged_by(judge), models=("llama-3.1-8b",), gpus=("l40s",), formats=("fp8",), max_gpus=4,
                      requests=80, simulate_top=4, disagg=False)


def test_judging_by_the_prediction_counts_what_the_band_would_call_marginal():
    by_band, by_value = run_plan(_inputs("band"), workers=1), run_plan(_inputs("prediction"), workers=1)
    for c in by_value.candidates:
        if c.source == "simulated":
            assert c.meets_slo == all(k.value is not None and k.value <= k.limit for k in c.checks)
            assert not c.marginal
            assert c.bands  # the band is still there to be shown
    for c in by_band.candidates:
        if c.source == "simulated" and c.bands:
            assert c.meets_slo == all(k.edge <= k.limit for k in c.checks)
    # holding the pessimistic edge never needs fewer GPUs than holding the value
    if by_band.winner is not None:
        assert by_value.winner is not None and by_value.winner.count <= by_band.winner.count


def test_cli_judge_flag():
    r = CliRunner().invoke(app, ["cost", "selfhost", "llama-3.1-8b", "-g", "h100-sxm", "-i", "800",
                                 "-o", "300", "--judge", "prediction", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["slo_judge"] == "prediction"
    r = CliRunner().invoke(app, ["plan", "-m", "llama-3.1-8b", "-g", "h100-sxm", "--judge", "optimistic"])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output


def test_a_plan_whose_candidates_are_only_marginal_says_how_to_take_them():
    # Llama-8B FP8 on L40S: the vLLM fit never saw Ada, so its band is widened and a 20 ms TPOT limit is met by
    # tp2's prediction (about 18 ms), not by the band's pessimistic edge (about 23 ms); two tp1 replicas miss it
    args = ["plan", "-m", "llama-3.1-8b", "-g", "l40s", "-f", "fp8", "--traffic", "8/s", "--slo",
            "ttft_p95=1s,tpot_p95=20ms", "--max-gpus", "2", "--requests", "80", "--simulate-top", "4",
            "--no-disagg", "--workers", "1"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1, r.output
    text = " ".join(r.output.split())
    assert "each held at its band's pessimistic edge" in text
    assert "meet it by the prediction but not by its band's pessimistic edge (marginal): --judge prediction" in text
    r = CliRunner().invoke(app, [*args, "--judge", "prediction"])
    assert r.exit_code == 0, r.output
    assert "each held at the prediction (--judge prediction)" in " ".join(r.output.split())
