"""Watts and joules per token from a step's utilisation (physics/energy.py), electricity in a self-hosted
cost (cost/energy.py), and owning against renting and an API (cost/own.py, `vazao cost own`).

Expected figures cite their sources: board ratings from catalog/data/ownership.yaml (vendor datasheets),
the H200 decode draw from arXiv:2605.11999, seed 003's rule for cards (../shared/seeds/003_*.txt)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from vazao.analytic import decode_cost, estimate, prefill_cost, steady_point
from vazao.catalog.ownership import energy_model, power_of, purchases_of, site
from vazao.cli import app
from vazao.cost.energy import EnergySite, default_site, energy_cost
from vazao.cost.own import OwnAnswer, payback_month, purchase_price, running_option
from vazao.cost.policy import OwnChoice, RequestShape, SelfHostQuery, own
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.physics.energy import board_power_w, idle_power_w, step_energy

runner = CliRunner()


def test_every_figure_is_sourced_and_dated():
    from vazao.catalog._load import load_yaml

    d = load_yaml("ownership.yaml")
    for acc, row in d["power"].items():
        assert row["tdp_w"] > 0 and row["source"] and row["as_of"], acc
    for acc, rows in d["purchase"].items():
        for r in rows:
            assert r["condition"] in ("new", "used") and r["usd"] > 0 and r["source"] and r["as_of"], acc
    assert 0 < energy_model().idle_share < energy_model().memory_share < 1


def test_ratings_are_the_datasheets():
    # NVIDIA H100 SXM datasheet: up to 700 W; GeForce RTX 3090: 350 W; Tesla P40: 250 W
    assert power_of("h100-sxm").tdp_w == 700
    assert power_of("rtx-3090").tdp_w == 350
    assert power_of("p40").tdp_w == 250
    assert power_of("m2-ultra") is None  # no published board rating: unknown, never guessed


def test_h200_decode_draws_what_was_measured():
    """arXiv:2605.11999: memory-bound decode on an H200 (700 W) draws 137-300 W. The model's memory share
    comes from that paper's upper figure, so this holds the mechanism (activity from the step's
    roofline terms) to it across batches, not an independent check of the number."""
    dep = make_deployment("llama-3.1-8b", "h200")
    for b in (1, 8, 64, 256):
        c = decode_cost(dep, b, 1024)
        assert c.bound == "memory"
        assert 137 <= board_power_w(dep.accelerator, c) <= 300


def test_compute_bound_prefill_runs_near_the_rating_and_idle_is_the_floor():
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    pf = prefill_cost(dep, 1, 4096)
    assert pf.bound == "compute"
    assert board_power_w(dep.accelerator, pf) >= 0.9 * 700
    assert idle_power_w(dep.accelerator) == pytest.approx(0.11 * 700)


def test_joules_per_token_fall_with_the_batch():
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    j = [step_energy(dep.accelerator, 1, decode_cost(dep, b, 1024), b).joules_per_token for b in (1, 8, 64)]
    assert j[0] > j[1] > j[2]
    # one token at batch 1 costs the whole step: power x step time
    c = decode_cost(dep, 1, 1024)
    assert j[0] == pytest.approx(board_power_w(dep.accelerator, c) * c.time_s)


def test_estimate_rows_carry_the_steps_energy():
    dep = make_deployment("llama-3.1-70b", "h100-sxm", count=8)
    est = estimate(dep, [1, 64], 1024, 256)
    r = est.rows[0]
    assert r.decode_power_w == pytest.approx(board_power_w(dep.accelerator, r.decode))
    # the replica's 8 boards over the step, per token
    assert r.decode_j_per_token == pytest.approx(r.decode_power_w * 8 * r.decode_step_s)
    assert est.rows[1].decode_j_per_token < r.decode_j_per_token
    # the joules at the catalog's datacenter: PUE 1.56 (Uptime 2024), $0.13/kWh (EIA 2024), 3.6 MJ a kWh
    assert r.decode_electricity_usd_per_mtok == pytest.approx(r.decode_j_per_token * 1e6 / 3.6e6 * 1.56 * 0.13)
    assert estimate(make_deployment("llama-3.1-8b", "m2-ultra"), [1], 128, 32).rows[0].decode_power_w is None


def test_steady_power_is_the_cycles_time_weighted_draw():
    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    p = steady_point(dep, 1000, 300, 32)
    dec = board_power_w(dep.accelerator, decode_cost(dep, 32, 1150))
    pf = board_power_w(dep.accelerator, prefill_cost(dep, 1, 1000))
    assert min(dec, pf) <= p.power_w <= max(dec, pf)


def test_electricity_arithmetic():
    """1 GPU at 500 W serving, 100 W idle, half the hours busy, PUE 1.5, $0.10/kWh:
    (0.5 x 500 + 0.5 x 100) W = 300 W -> 0.3 kW x 1.5 x 0.10 = $0.045/h; at 1,000 out tok/s busy half
    the time: 1.8 M tokens an hour -> $0.025/M."""
    e = energy_cost(500, 100, 1, 0.0, 1000.0, Decimal("0.5"), EnergySite(1.5, Decimal("0.10"), "test"))
    assert e.usd_per_hour == Decimal("0.045000")
    assert e.usd_per_mtok_output == Decimal("0.025000")
    assert e.j_per_output_token == pytest.approx(0.5)  # 500 W / 1000 tok/s
    assert e.kwh_per_mtok_output == pytest.approx(300 * 1.5 / 500 * 1e6 / 3.6e6)


def test_site_inputs_are_checked():
    with pytest.raises(VazaoError, match="PUE"):
        EnergySite(0.5, Decimal("0.1"), "x")
    with pytest.raises(VazaoError, match="electricity price"):
        default_site(usd_per_kwh="cheap")
    assert default_site(home=True).pue == 1.0
    assert default_site().pue == site().datacenter_pue == 1.56  # Uptime Institute 2024


def test_selfhost_cost_shows_its_electricity():
    r = runner.invoke(app, ["cost", "selfhost", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "1000", "-o", "300",
                            "--analytic", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    e = d["energy"]
    assert 77 < e["serving_w_per_gpu"] <= 700
    out_tps = d["throughput"]["output_tokens_per_s"]
    assert e["j_per_output_token"] == pytest.approx(e["serving_w_per_gpu"] / out_tps)


def test_purchase_prices_pick_the_newest_of_the_cheapest_condition():
    usd, src, cond = purchase_price("rtx-3090", "RTX 3090", None, None)
    assert cond == "used" and usd in (Decimal(700), Decimal(650)) and "catalog" in src
    usd, _, cond = purchase_price("rtx-3090", "RTX 3090", "new", None)
    assert (usd, cond) == (Decimal(1499), "new")  # NVIDIA's launch price
    assert purchase_price("h100-sxm", "H100", None, "25000")[0] == Decimal(25000)
    with pytest.raises(VazaoError, match="no published"):
        purchase_price("h100-sxm", "H100", None, None)
    with pytest.raises(VazaoError, match="purchase price"):
        purchase_price("rtx-3090", "RTX 3090", None, "-5")
    assert [p.condition for p in purchases_of("rtx-4090")][0] == "new"


def test_payback_month():
    """$1,000 of cards, $10 a month to run, against a $60-a-month bill for the same requests: 1000 / 50 =
    month 20; against $5 a month, never."""
    from vazao.cost.own import OwnOption

    o = OwnOption("owned", "cards", 1, Decimal("0.001"), None, Decimal(10), Decimal(1000), Decimal(0), 60_000.0)
    rent = running_option("rented", "cloud", 1, Decimal("0.001"), 60_000.0, 36, 100)
    cheap = running_option("api", "api", 0, Decimal("0.0000833"), 60_000.0, 36, 100)
    assert payback_month(o, rent, 36) == 20
    assert payback_month(o, cheap, 36) is None
    assert payback_month(o, rent, 12) is None  # past the horizon


def _own(traffic: float) -> OwnAnswer:
    q = SelfHostQuery("llama-3.1-8b", "rtx-3090", RequestShape(1000, 300), analytic=True)
    return own(q, OwnChoice(("p40", "rtx-3090", "rtx-5090"), ("h100-sxm",), "gpt-5-mini",
                            site=default_site(home=True), horizon_months=36, requests_per_s=traffic))


def test_seed_003_rule_comes_out_of_the_numbers():
    """Seed 003: 'if the product is a conversation with few people, cheap VRAM wins, provided the card
    has FP16 tensor cores (which excludes Pascal, however tempting the P40's 24 GB); if the product is
    throughput, batch and long prompts, the generation wins' and old cards are 'generally worse per
    token generated' in power and heat. Few users: a used RTX 3090 beats the P40 and the new RTX 5090;
    heavy traffic: the RTX 5090 wins. The P40 spends the most joules per token either way."""
    few, many = _own(0.5), _own(20)
    owned = lambda a: [o for o in a.options if o.kind == "owned"]  # noqa: E731
    assert owned(few)[0].label.startswith("llama-3.1-8b bf16 on 1× rtx-3090") and "used" in owned(few)[0].label
    assert "rtx-5090" in owned(many)[0].label
    for a in (few, many):
        j = {o.label.split(" on ")[1].split(" ")[1]: o.cost.energy.j_per_output_token for o in owned(a)}
        assert max(j, key=j.get) == "p40", j
    # every option carries the same requests; the total ranks them
    totals = [o.total_usd for o in few.options]
    assert totals == sorted(totals)


def test_own_is_one_json_document_that_reads_back():
    a = _own(0.5)
    d = a.to_json()
    assert d["kind"] == "own" and d["cheapest"] == a.options[0].label
    assert OwnAnswer.from_json(json.loads(json.dumps(d))).to_json() == d


def test_cost_own_cli_and_bad_input():
    ok = runner.invoke(app, ["cost", "own", "llama-3.1-8b", "--gpu", "rtx-3090", "--traffic", "1/s", "-i", "500",
                             "-o", "200", "--analytic", "--home", "--api-price", "gpt-5-mini"])
    assert ok.exit_code == 0, ok.output
    assert "pays back" in ok.output and "rtx-3090" in ok.output
    for args, word in ((["--resale", "1.5"], "resale"), (["--horizon", "forever"], "horizon"),
                       (["--price", "abc"], "price"), (["--pue", "9"], "pue"), (["--condition", "mint"], "condition")):
        r = runner.invoke(app, ["cost", "own", "llama-3.1-8b", "--gpu", "rtx-3090", "--traffic", "1/s", "-i", "500",
                                "-o", "200", "--analytic", *args])
        assert r.exit_code == 2, (args, r.output)
        assert word in r.output.lower(), (args, r.output)


def test_a_simulated_run_reports_its_energy_and_it_reads_back():
    from vazao.sim import simulate
    from vazao.sim.run import SimResult
    from vazao.workload import workload_from_dict

    dep = make_deployment("llama-3.1-8b", "h100-sxm")
    w = workload_from_dict({"arrival": {"kind": "poisson", "rate": 2.0}, "prompt": 500, "output": 100,
                            "requests": 60, "seed": 1}, name="light")
    r = simulate(dep, w)
    e = r.energy
    assert e is not None and 0 < e.busy_share <= 1
    idle = idle_power_w(dep.accelerator)
    assert idle <= e.mean_w_per_gpu <= e.serving_w_per_gpu <= 700
    assert e.j_per_output_token == pytest.approx(e.mean_w_per_gpu / r.summary.output_tokens_per_s)
    assert e.electricity_usd_per_mtok == pytest.approx(e.j_per_output_token * 1e6 / 3.6e6 * 1.56 * 0.13)
    back = SimResult.from_json(json.loads(json.dumps(r.to_json())), r.summary)
    assert back.energy == e
    # a lighter load leaves the boards idle more of the time: fewer watts, more joules per token
    heavy = simulate(dep, workload_from_dict({"arrival": {"kind": "poisson", "rate": 20.0}, "prompt": 500,
                                              "output": 100, "requests": 400, "seed": 1}, name="heavy"))
    assert heavy.energy.busy_share >= e.busy_share
    assert heavy.energy.j_per_output_token < e.j_per_output_token


def test_plan_buy_prices_cards_as_owned_and_leaves_out_unpriced_ones(tmp_path):
    """--buy: each GPU-hour is the card's published price over its life plus electricity at the candidate's
    draw (cost.own.owned_gpu_hour); the H100 has no published purchase price in the catalog: left out."""
    from vazao.cost.own import owned_gpu_hour

    r = runner.invoke(app, ["plan", "-w", "chat", "--traffic", "1/s", "--models", "llama-3.1-8b", "--gpus",
                            "rtx-3090,h100-sxm", "--buy", "--simulate-top", "2", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["inputs"]["buy"] is True
    assert all(c["gpu"] == "rtx-3090" for c in d["candidates"])
    assert d["pruned"]["by_reason"].get("no purchase price", 0) >= 1
    w = d["candidates"][0]
    assert w["power_w_per_gpu"] is not None and w["j_per_output_token"] is not None
    assert w["electricity_usd_per_mtok"] == pytest.approx(w["j_per_output_token"] * 1e6 / 3.6e6 * 1.56 * 0.13)
    # the hourly price is the owned one: far under the rental catalog's, and at least the capex alone
    capex_h = 700 / (4 * 12 * 730)  # $700 used (catalog), 4 years (GeForce convention)
    rate = w["usd_per_hour"] / w["count"]
    assert capex_h < rate < float(owned_gpu_hour("rtx-3090", "NVIDIA GeForce RTX 3090", 350)[0]) + 1e-9
