"""Break-even traffic between an API price and a self-hosted deployment."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from vazao.catalog.prices import get_price
from vazao.cli import app
from vazao.cost.breakeven import bill_workload, break_even, workload_ledgers
from vazao.cost.selfhost import Throughput, selfhost_cost
from vazao.workload import load_workload

runner = CliRunner()


def cost(rps: float, usd_h: str = "2"):
    tp = Throughput(rps, rps * 1000, rps * 200, "analytic", "")
    return selfhost_cost("dep", 1, Decimal(usd_h), "given", tp)


def test_break_even_by_hand():
    # $2/h = $48/day; the API charges $0.001 per request → 48,000 requests/day break even.
    be = break_even(cost(1.0), "gpu", "api", Decimal("0.001"), 1200)
    assert be.capacity_requests_per_day == 86_400
    assert be.breakeven_requests_per_day == 48_000
    assert be.breakeven_tokens_per_day == 48_000 * 1200
    assert be.breakeven_share_of_capacity == Decimal(48_000) / Decimal(86_400)
    assert be.selfhost_saving_at_capacity_per_day == Decimal("38.40")  # $86.40 of API bill − $48
    assert "self-host cheaper above 48,000" in be.verdict


def test_never_breaks_even_when_full_load_costs_more_than_the_api():
    be = break_even(cost(0.1), "gpu", "api", Decimal("0.001"), 1200)  # capacity 8,640/day < 48,000
    assert be.breakeven_requests_per_day is None
    assert be.selfhost_saving_at_capacity_per_day < 0
    assert be.verdict.startswith("API cheaper")


def test_workload_prefix_written_once_then_read():
    """Seed 004_9706bef9153e5571.txt's support workload: the 6,000-token policy prefix is written by the
    first request and read by every later one; the re-sent history is plain input."""
    plan = load_workload("support").specs()
    leds = workload_ledgers(plan, cached=True)
    assert leds[0].cache_write == 6000 and leds[0].cache_read == 0
    assert all(led.cache_read == 6000 for led in leds[1:] if plan[leds.index(led)].prefix_id)
    assert sum(led.prompt_tokens for led in leds) == sum(r.prompt_tokens for r in plan)
    sonnet = get_price("sonnet-5.5")
    cached, plain = bill_workload(plan, sonnet, "5m"), bill_workload(plan, sonnet)
    assert cached.total_usd < plain.total_usd
    assert plain.tokens.prompt_tokens == cached.tokens.prompt_tokens


def test_breakeven_cli_analytic():
    res = runner.invoke(app, ["cost", "breakeven", "llama-3.1-70b", "--price", "sonnet-5.5", "--input", "2000",
                              "--output", "300", "--gpus", "h100-sxm,a100-sxm-80gb", "--analytic", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert Decimal(d["api_usd_per_request"]) == Decimal("0.007")  # 2,000 × $2/M + 300 × $10/M
    assert sorted(r["gpu"] for r in d["rows"]) == ["a100-sxm-80gb", "h100-sxm"]
    be = [r["breakeven_requests_per_day"] for r in d["rows"]]
    assert be == sorted(be, key=lambda x: (x is None, x or 0))  # the best deployment first
    assert d["winner"] == (d["rows"][0]["gpu"] if be[0] is not None else None)
    for r in d["rows"]:
        assert r["selfhost"]["throughput_source"] == "analytic"
        if r["breakeven_requests_per_day"] is not None:
            per_day = Decimal(r["selfhost"]["usd_per_hour"]) * 24
            assert abs(Decimal(repr(r["breakeven_requests_per_day"])) * Decimal("0.007") - per_day) < Decimal("0.01")


def test_breakeven_cli_workload_and_errors():
    res = runner.invoke(app, ["cost", "breakeven", "llama-3.1-8b", "--price", "haiku-5.5", "--workload", "chat",
                              "--gpus", "l40s", "--count", "1"])
    assert res.exit_code == 0, res.output
    assert "Break-even against claude-haiku-5.5" in res.output
    res = runner.invoke(app, ["cost", "breakeven", "llama-3.1-8b", "--price", "nope", "--input", "1",
                              "--output", "1"])
    assert res.exit_code == 2 and "unknown price" in res.output
    res = runner.invoke(app, ["cost", "breakeven", "llama-3.1-8b", "--price", "haiku-5.5", "--input", "10",
                              "--output", "10", "--gpus", "h100-sxmm"])
    assert res.exit_code == 2 and "h100-sxm" in res.output


def test_breakeven_at_a_traffic_gives_both_monthly_bills():
    res = runner.invoke(app, ["cost", "breakeven", "llama-3.1-8b", "--price", "sonnet-5.5", "--input", "2000",
                              "--output", "300", "--gpus", "h100-sxm", "--analytic", "--traffic", "1/s", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    (at,) = d["at_traffic"]
    # the API side: $0.007 a request (2,000 × $2/M + 300 × $10/M) × 1 req/s × 730 h × 3,600 s
    assert at["api_usd_per_month"] == pytest.approx(0.007 * 730 * 3600)
    assert at["cheaper"] == ("self-hosted" if at["selfhost_usd_per_month"] < at["api_usd_per_month"] else "api")
