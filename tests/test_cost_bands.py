"""The 80% band of every self-hosted cost figure (a figure shown without its band is a bug): the throughput's
band, the $ figures at its edges — at full load the same hours over more or fewer tokens, at a fixed traffic
the same tokens over the copies each edge needs — the same band `vazao estimate` and `vazao simulate` print
beside the same throughput, and the CLI, JSON and page showing it."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from vazao.analytic import estimate
from vazao.bands import Band
from vazao.cli import app
from vazao.cost.selfhost import SelfHostCost, Throughput, at_traffic, selfhost_cost, throughput_from_summary
from vazao.physics.deployment import make_deployment
from vazao.results import Latency, RunSummary

runner = CliRunner()


def _tp(band: Band | None, rps: float = 10.0) -> Throughput:
    # 100 output and 400 input tokens a request
    return Throughput(requests_per_s=rps, input_tokens_per_s=400.0 * rps, output_tokens_per_s=100.0 * rps,
                      source="analytic", detail="", input_time_share=0.25, batch=8, band=band)


def test_full_load_bands_by_hand():
    # $/Mtok = $/h / (tokens/s × 3600) × 10⁶ (src/vazao/cost/selfhost.py's formula): $3.60/h over 1,000 output
    # tok/s is $1.00; the band's edges 800 and 1,250 tok/s give $1.25 and $0.80
    c = selfhost_cost("x", 2, Decimal("1.8"), "given", _tp(Band(800.0, 1250.0)))
    assert c.usd_per_mtok_output == Decimal("1")
    assert c.usd_per_mtok_output_band == (Decimal("0.8"), Decimal("1.25"))
    assert c.usd_per_mtok_blended == Decimal("0.2")  # 5,000 tokens/s in all
    assert c.usd_per_mtok_blended_band == (Decimal("0.16"), Decimal("0.25"))
    assert c.usd_per_request == Decimal("0.0001")  # $3.60 over 36,000 requests an hour
    assert c.usd_per_request_band == (Decimal("0.00008"), Decimal("0.000125"))
    # idle paid hours scale the figure and its band alike
    half = selfhost_cost("x", 2, Decimal("1.8"), "given", _tp(Band(800.0, 1250.0)), "0.5")
    assert half.usd_per_mtok_output_band == (Decimal("1.6"), Decimal("2.5"))


def test_a_measured_throughput_has_no_band():
    s = RunSummary(requests=10, errors=0, duration_s=10.0, ttft_s=Latency(0.1, 0.1, 0.1, 0.1, 0.1),
                   itl_s=Latency(0.02, 0.02, 0.02, 0.02, 0.02), tpot_s=Latency(0.02, 0.02, 0.02, 0.02, 0.02),
                   e2e_s=Latency(1.0, 1.0, 1.0, 1.0, 1.0), request_throughput_per_s=1.0, output_tokens_per_s=100.0,
                   total_tokens_per_s=500.0)
    c = selfhost_cost("x", 1, Decimal("2"), "given", throughput_from_summary(s))
    assert c.throughput.band is None and c.usd_per_mtok_output_band is None and c.usd_per_request_band is None
    assert "none: a measured throughput" in "\n".join(_lines(c))


def test_a_fixed_traffic_moves_the_copies_not_the_tokens():
    # one copy carries 10 req/s (band 8–12.5); 25 req/s needs 3 copies, 2 at the fast edge, 4 (⌈25/8⌉) at the slow
    one = selfhost_cost("x", 1, Decimal("2"), "given", _tp(Band(800.0, 1250.0)))
    c = at_traffic(one, 25.0)
    assert c.gpus == 3
    lo, hi = c.usd_per_mtok_output_band
    assert lo == (c.usd_per_mtok_output * 2 / 3).quantize(c.usd_per_mtok_output)
    assert hi == (c.usd_per_mtok_output * 4 / 3).quantize(c.usd_per_mtok_output)
    assert c.throughput.band == Band(2400.0, 3750.0)  # three copies' throughput
    # a traffic one copy carries at either edge: the cost does not move
    light = at_traffic(one, 5.0)
    assert light.gpus == 1 and light.usd_per_mtok_output_band == (light.usd_per_mtok_output,) * 2


def test_json_keeps_the_bands():
    c = at_traffic(selfhost_cost("x", 1, Decimal("2"), "given", _tp(Band(800.0, 1250.0, "widened: x"))), 25.0)
    back = SelfHostCost.from_json(json.loads(json.dumps(c.to_json())))
    assert back.usd_per_mtok_output_band == c.usd_per_mtok_output_band
    assert back.usd_per_request_band == c.usd_per_request_band
    assert back.throughput.band == c.throughput.band


def test_analytic_throughput_carries_estimates_max_load_band():
    """The same figure, the same band: `vazao cost selfhost --analytic` without an SLO is estimate's max load."""
    from vazao.cost.selfhost import analytic_throughput

    dep = make_deployment("llama-3.1-8b", "h100-sxm", "fp8")
    tp = analytic_throughput(dep, 1024, 256)
    est = estimate(dep, [1], 1024, 256)
    assert tp.output_tokens_per_s == pytest.approx(est.max_load_tokens_per_s)
    assert tp.band is not None and est.max_load_band is not None
    assert tp.band.low == pytest.approx(est.max_load_band.low) and tp.band.high == pytest.approx(est.max_load_band.high)
    assert tp.band.low < tp.output_tokens_per_s < tp.band.high


def test_selfhost_cli_shows_every_amount_with_its_band():
    base = ["cost", "selfhost", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "1000", "-o", "250", "--analytic"]
    d = json.loads(runner.invoke(app, [*base, "--json"]).stdout)
    lo, hi = (Decimal(x) for x in d["usd_per_mtok_output_band"])
    assert lo < Decimal(d["usd_per_mtok_output"]) < hi
    t_lo, t_hi, _ = d["throughput"]["band"]
    assert t_lo < d["throughput"]["output_tokens_per_s"] < t_hi
    out = runner.invoke(app, base).output
    assert f"${Decimal(d['usd_per_mtok_output']):.4f} (${lo:.4f}–${hi:.4f})" in out
    assert "80% band" in out and "calibration residuals" in out


def test_own_options_carry_bands_an_api_bill_has_none():
    res = runner.invoke(app, ["cost", "own", "llama-3.1-8b", "--gpu", "rtx-3090", "--rent", "h100-sxm", "--traffic",
                              "1/s", "-i", "500", "-o", "200", "--analytic", "--home", "--api-price", "gpt-5-mini",
                              "--json"])
    assert res.exit_code == 0, res.output
    options = {o["kind"]: o for o in json.loads(res.stdout)["options"]}
    assert options["api"]["usd_per_request_band"] is None
    for kind in ("owned", "rented"):
        o = options[kind]
        lo, hi = (Decimal(x) for x in o["usd_per_mtok_output_band"])
        assert lo <= Decimal(o["usd_per_mtok_output"]) <= hi, o
    # a rented option's band is its bill's: the cost per request at the copies each edge needs
    rented = options["rented"]
    assert rented["usd_per_request_band"] == rented["cost"]["usd_per_request_band"]
    # the owned option at each edge: the cards that edge needs (up front) and the horizon's total
    owned = options["owned"]
    for k in ("upfront_usd", "monthly_usd", "total_usd"):
        lo, hi = (Decimal(x) for x in owned[f"{k}_band"])
        assert lo <= Decimal(owned[k]) <= hi, k
    assert Decimal(owned["upfront_usd_band"][1]) % Decimal(owned["upfront_usd"]) == 0  # whole cards


def _lines(c: SelfHostCost) -> list[str]:
    from vazao.report.cost_console import selfhost_lines

    return selfhost_lines(c)
