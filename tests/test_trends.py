"""Price history and price-trend scenarios (issue 23): the scenarios are the seed's figures, the
projection is the break-even formula (cost.breakeven) month by month, and every figure has a source.

Seed 004_9706bef9153e5571.txt (../shared/seeds/, Portuguese) states the figures; its sentences are
quoted below verbatim, and the scenarios' parameters and derived numbers are checked against them."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path

import pytest

from vazao.catalog.hardware import get_accelerator
from vazao.catalog.prices import parse_history, price_history
from vazao.cost.breakeven import break_even
from vazao.cost.selfhost import Throughput, selfhost_cost
from vazao.cost.trends import (
    BreakEvenTrend,
    TrendMonth,
    TrendProjection,
    TrendScenario,
    load_trend,
    monthly_factor,
    parse_horizon,
    parse_trends,
    project,
    project_with_range,
    trend_scenarios,
)
from vazao.errors import VazaoError
from vazao.resultfiles import json_document

SEED_004 = Path(__file__).resolve().parents[2] / "shared" / "seeds" / "004_9706bef9153e5571.txt"
# the seed's sentences, verbatim (section "Preços em queda não aposentam o problema de projeto")
EPOCH = ("A Epoch AI estima que o preço de atingir um nível fixo de desempenho cai cerca de 40 vezes por ano, "
         "com taxas de 9 a 900 vezes conforme o benchmark e o patamar de desempenho.")
TOP_TIER = ("As equipes costumam querer o melhor modelo disponível, e o preço da faixa mais alta não está caindo "
            "40 vezes ao ano: a faixa de topo da Anthropic custa US$ 10 e US$ 50 por milhão de tokens.")
REBOUND = ("A Anthropic informa que agentes usam cerca de quatro vezes os tokens de um chat e sistemas multiagentes "
           "cerca de quinze vezes, o que significa que tokens mais baratos são gastos em mais passos.")
NOT_PERSIST = "a própria Epoch alerta que as quedas mais rápidas ocorreram no ano mais recente e podem não persistir"


def test_the_seeds_sentences_are_quoted_verbatim():
    s = trend_scenarios()
    assert s["epoch-fixed-capability"].seed == EPOCH
    assert s["flat-top-tier"].seed == TOP_TIER
    assert s["agent-rebound"].seed == s["multi-agent-rebound"].seed == REBOUND
    assert "may not persist" in s["epoch-fixed-capability"].caveat  # the seed's third limit, carried as the caveat
    if SEED_004.is_file():  # the shared seeds are beside the checkout in this project's layout
        text = " ".join(SEED_004.read_text(encoding="utf-8").split())
        for sentence in (EPOCH, TOP_TIER, REBOUND, NOT_PERSIST):
            assert sentence in text


def test_forty_times_a_year_is_a_monthly_factor_of_0_7354():
    """Seed 004: "cai cerca de 40 vezes por ano". Compounded monthly, ÷40 a year is ×40^(−1/12) a month
    = 0.7354 (a 26.5 % fall each month), and twelve such months are ÷40 again."""
    epoch = trend_scenarios()["epoch-fixed-capability"]
    assert epoch.api_price_fall_per_year == 40
    f = epoch.api_monthly_factor
    assert round(f, 4) == Decimal("0.7354")
    assert round(1 - f, 3) == Decimal("0.265")
    assert abs(f ** 12 * 40 - 1) < Decimal("1e-20")
    assert float(f) == pytest.approx(40 ** (-1 / 12), rel=1e-15)
    assert epoch.gpu_monthly_factor == 1 and epoch.tokens_monthly_factor == 1  # nothing else moves


def test_the_nine_to_nine_hundred_range():
    """Seed 004: "com taxas de 9 a 900 vezes" — a month's factor from 9^(−1/12) = 0.8327 to 900^(−1/12) = 0.5673;
    the central 40x lies inside."""
    epoch = trend_scenarios()["epoch-fixed-capability"]
    assert epoch.api_price_fall_range == (Decimal(9), Decimal(900))
    lo, hi = (monthly_factor(x, falling=True) for x in epoch.api_price_fall_range)
    assert (round(lo, 4), round(hi, 4)) == (Decimal("0.8327"), Decimal("0.5673"))
    assert hi < epoch.api_monthly_factor < lo
    assert json_document(epoch)["api_price_fall_range"] == ["9", "900"]


def test_the_rebound_multipliers_and_the_top_tier():
    """Seed 004: agents ≈ 4× a chat's tokens, multi-agent systems ≈ 15× (3.75× an agent); the top tier
    "não está caindo 40 vezes ao ano" at US$ 10 / US$ 50, which the price history holds."""
    s = trend_scenarios()
    assert s["agent-rebound"].tokens_per_task_multiplier == 4
    assert s["multi-agent-rebound"].tokens_per_task_multiplier == 15
    assert s["multi-agent-rebound"].tokens_per_task_multiplier / s["agent-rebound"].tokens_per_task_multiplier \
        == Decimal("3.75")
    assert s["agent-rebound"].api_price_fall_per_year == s["epoch-fixed-capability"].api_price_fall_per_year
    flat = s["flat-top-tier"]
    assert flat.api_monthly_factor == flat.gpu_monthly_factor == flat.tokens_monthly_factor == 1
    top = price_history().family("anthropic-top")
    assert [(p.input, p.output) for p in top] == [(Decimal(10), Decimal(50))]
    opus = [p for p in price_history().family("anthropic-opus") if "2024-03" <= p.as_of <= "2025-08"]
    assert len(opus) == 3 and {(p.input, p.output) for p in opus} == {(Decimal(15), Decimal(75))}  # flat 17 months


# ---- the projection, by hand -----------------------------------------------------------------------
def row(rps: float = 1.0, usd_h: str = "2"):
    """test_cost_breakeven's deployment: $2/h serving 1 request/s (86,400 a day), against $0.001 a request."""
    tp = Throughput(rps, rps * 1000, rps * 200, "analytic", "")
    return break_even(selfhost_cost("dep", 1, Decimal(usd_h), "given", tp), "gpu", "api", Decimal("0.001"), 1200)


def test_the_break_even_month_by_month_by_hand():
    """$2/h = $48/day against $0.001/request: 48,000 requests/day in month 0 (test_cost_breakeven), then
    48,000 × 40^(m/12). It passes the 86,400/day capacity when 40^(m/12) > 1.8, m > 12·ln 1.8/ln 40 = 1.91:
    from month 2 the API is cheaper at any load. At 0.8 requests/s the API bills 0.001 × 0.8 × 3,600 × 730 =
    $2,102.40 a month against the GPU's 2 × 730 = $1,460: the API is cheaper once 2,102.40 × f^m ≤ 1,460,
    m ≥ ln(0.6944)/ln(0.7354) = 1.19, month 2; summed, the saving 642.40, 728.40, 405.26, −218.75: month 3."""
    epoch = trend_scenarios()["epoch-fixed-capability"]
    p = project(row(), epoch, 24, Decimal("0.001"), 1200, rps=0.8)
    m = p.months
    assert len(m) == 24 and m[0].month == 0 and m[-1].month == 23
    assert m[0].breakeven_requests_per_day == pytest.approx(48_000)
    assert m[1].breakeven_requests_per_day == pytest.approx(48_000 * 40 ** (1 / 12))
    assert m[2].breakeven_requests_per_day is None and p.api_cheaper_at_any_load_from_month == 2
    assert m[12].api_usd_per_request == Decimal("0.000025")  # 0.001 / 40
    assert m[0].api_usd_per_mtok == Decimal("0.833333")  # 0.001 / 1,200 tokens × 10^6
    assert (m[0].api_usd_per_month, m[0].selfhost_usd_per_month) == (Decimal("2102.40"), Decimal("1460.00"))
    assert [x.cumulative_selfhost_saving_usd for x in m[:4]] == [Decimal("642.40"), Decimal("728.40"),
                                                                 Decimal("405.26"), Decimal("-218.75")]
    assert (m[0].cheaper, m[1].cheaper, m[2].cheaper) == ("self-hosted", "self-hosted", "api")
    assert p.winner_changes_month == 2 and p.cumulative_changes_month == 3
    assert "from month 2" in p.summary()


def test_the_self_hosted_figure_keeps_its_band_month_by_month():
    """$2/h over 1,200 tokens a request at 1 request/s is $0.462963/Mtok blended ($2 / 4.32M tokens × 10⁶); a
    throughput band of 160–250 output tok/s (0.8–1.25×) puts it at $0.37037–$0.578704, and GPU $/h held flat
    (epoch-fixed-capability's factor 1) keeps both edges every month."""
    from vazao.bands import Band
    from vazao.cost.breakeven import break_even

    tp = Throughput(1.0, 1000.0, 200.0, "analytic", "", band=Band(160.0, 250.0))
    r = break_even(selfhost_cost("dep", 1, Decimal("2"), "given", tp), "gpu", "api", Decimal("0.001"), 1200)
    p = project(r, trend_scenarios()["epoch-fixed-capability"], 3, Decimal("0.001"), 1200)
    assert p.months[0].selfhost_usd_per_mtok == Decimal("0.462963")
    assert all(m.selfhost_usd_per_mtok_band == (Decimal("0.37037"), Decimal("0.578704")) for m in p.months)
    assert row().selfhost.usd_per_mtok_blended_band is None  # no band in, none out
    assert project(row(), trend_scenarios()["epoch-fixed-capability"], 2, Decimal("0.001"), 1200) \
        .months[0].selfhost_usd_per_mtok_band is None


def test_the_range_moves_the_months():
    """At 9x/year: 9^(m/12) > 1.8 from m = 4 (12·ln 1.8/ln 9 = 3.2) and 9^(−m/12) ≤ 0.6944 from m = 2 (1.99);
    at 900x/year: from m = 2 (1.04) and m = 1 (0.64)."""
    p = project_with_range(row(), trend_scenarios()["epoch-fixed-capability"], 24, Decimal("0.001"), 1200, rps=0.8)
    (lo, hi) = p.bounds
    assert (lo.api_price_fall_per_year, lo.api_cheaper_at_any_load_from_month, lo.winner_changes_month) == (9, 4, 2)
    assert (hi.api_price_fall_per_year, hi.api_cheaper_at_any_load_from_month, hi.winner_changes_month) == (900, 2, 1)
    assert "at 9x/year" in p.summary() and "at 900x/year" in p.summary()


def test_flat_prices_move_nothing_and_a_rebound_moves_tasks_not_tokens():
    s = trend_scenarios()
    flat = project(row(), s["flat-top-tier"], 6, Decimal("0.001"), 1200, rps=0.8)
    assert len({(x.api_usd_per_request, x.breakeven_requests_per_day, x.api_usd_per_month) for x in flat.months}) == 1
    assert flat.winner_changes_month is None and flat.api_cheaper_at_any_load_from_month is None
    assert "stays so through month 5" in flat.summary()
    # ×4 tokens a task: the API bills 4× per task, the GPU carries ¼ the tasks: break-even 12,000 tasks/day,
    # the same 48,000 × 1,200 tokens/day
    agent = project(row(), s["agent-rebound"], 3, Decimal("0.001"), 1200)
    assert agent.months[0].breakeven_requests_per_day == pytest.approx(12_000)
    assert agent.months[0].capacity_requests_per_day == pytest.approx(21_600)
    assert agent.months[0].breakeven_requests_per_day * 4 * 1200 == pytest.approx(48_000 * 1200)
    assert agent.months[0].api_usd_per_mtok == Decimal("0.833333")  # per token, the price is the scenario's, not ×4
    assert agent.months[0].cheaper is None  # no traffic, no bills
    multi = project(row(), s["multi-agent-rebound"], 1, Decimal("0.001"), 1200, rps=0.8)
    assert multi.months[0].copies == 12  # 0.8 tasks/s × 15 = 12 of today's requests/s, at 1/s per copy


def test_the_trend_reads_back():
    from vazao.catalog.prices import get_price
    from vazao.cost.policy import BreakEvenAnswer, RequestShape, SelfHostQuery, breakeven
    from vazao.results import SLO

    q = SelfHostQuery("llama-3.1-8b", "h100-sxm", shape=RequestShape(512, 128), count=1, analytic=True,
                      slo=SLO.parse("ttft_p95=1s,tpot_p95=50ms"))
    be = breakeven(q, ["h100-sxm", "a100-sxm-80gb"], get_price("gpt-5-mini"), rps=3.0, horizon_months=12,
                   trend=trend_scenarios()["epoch-fixed-capability"])
    doc = json.loads(json.dumps(json_document(be)))
    assert doc["kind"] == "breakeven trend" and doc["trend"]["scenario"]["is_forecast"] is False
    assert "not a forecast" in doc["trend"]["label"] and "epoch.ai" in doc["trend"]["label"]
    back = BreakEvenAnswer.from_json(doc)
    assert json.loads(json.dumps(json_document(back))) == doc
    assert back.trend == be.trend and back.trend is not None
    for cls, obj in ((BreakEvenTrend, be.trend), (TrendProjection, be.trend.projections[0]),
                     (TrendMonth, be.trend.projections[0].months[3]), (TrendScenario, be.trend.scenario)):
        assert cls.from_json(json.loads(json.dumps(json_document(obj)))) == obj
    plain = breakeven(q, ["h100-sxm"], get_price("gpt-5-mini"))
    assert plain.to_json()["kind"] == "breakeven" and "trend" not in plain.to_json()
    with pytest.raises(VazaoError, match="both a horizon and a trend"):
        breakeven(q, ["h100-sxm"], get_price("gpt-5-mini"), horizon_months=12)


# ---- scenarios from a file, horizons ----------------------------------------------------------------
GOOD = """trends:
  - id: my-trend
    name: our own guess
    api_price_fall_per_year: 2
    gpu_price_fall_per_year: 1.25
    citation: "our finance team, 2026-12 plan"
    caveat: "a planning assumption, not a measurement"
"""


def test_a_user_trend_file(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text(GOOD, encoding="utf-8")
    s = load_trend(str(f))
    assert (s.id, s.api_price_fall_per_year, s.gpu_price_fall_per_year) == ("my-trend", 2, Decimal("1.25"))
    assert s.tokens_per_task_multiplier == 1 and s.api_price_fall_range is None
    assert abs(s.gpu_monthly_factor ** 12 * Decimal("1.25") - 1) < Decimal("1e-20")


@pytest.mark.parametrize("text, message", [
    (GOOD.replace('    citation: "our finance team, 2026-12 plan"\n', ""), "lacks 'citation'"),
    (GOOD.replace('    caveat: "a planning assumption, not a measurement"\n', ""), "lacks 'caveat'"),
    (GOOD.replace("api_price_fall_per_year: 2", "api_price_fall_per_yr: 2"), "unknown field 'api_price_fall_per_yr'"),
    (GOOD.replace("api_price_fall_per_year: 2", "api_price_fall_per_year: 100000"), "a factor per year must be"),
    (GOOD.replace("api_price_fall_per_year: 2", "api_price_fall_per_year: -2"), "non-negative"),
    (GOOD.replace("    api_price_fall_per_year: 2\n    gpu_price_fall_per_year: 1.25\n", ""), "sets none of"),
    (GOOD + GOOD.split("\n", 1)[1], "duplicate trend id"),
    ("trends: []\n", "no trend scenario"),
    ("scenarios: []\n", "top-level 'trends:'"),
])
def test_a_bad_trend_file_is_one_error(text, message):
    with pytest.raises(VazaoError, match=message):
        parse_trends(text, "t.yaml")


def test_trend_names_and_horizons():
    with pytest.raises(VazaoError, match="epoch-fixed-capability"):
        load_trend("epoch")
    assert [parse_horizon(h) for h in ("24mo", "2y", "36", "6 months")] == [24, 24, 36, 6]
    for bad in ("0mo", "121mo", "11y", "soon", "-3", "1.5y"):
        with pytest.raises(VazaoError, match="horizon"):
            parse_horizon(bad)


# ---- the price history ---------------------------------------------------------------------------
def test_every_history_row_has_a_source_and_a_date():
    h = price_history()
    assert len(h.api) >= 20 and len(h.gpu) >= 5
    for p in (*h.api, *h.gpu):
        assert p.source.strip() and len(p.as_of) in (7, 10), p
    for g in h.gpu:
        assert get_accelerator(g.gpu).id == g.gpu  # a catalog id, so a row can be set beside its GPU
    assert [p.as_of for p in h.api] == sorted(p.as_of for p in h.api)


def test_published_cuts_in_the_history():
    """o3's June 2025 cut (openai.com/api/pricing via langfuse pull 7223): $10/$40 → $2/$8, 80 % off both;
    GPT-4 (2023-03, $30 input) to GPT-4o mini (2024-07, $0.15): 200× cheaper input in 16 months."""
    h = price_history()
    o3 = [p for p in h.api if p.model == "o3"]
    assert [(p.as_of, p.input, p.output) for p in o3] == [("2025-04-16", 10, 40), ("2025-06-10", 2, 8)]
    assert 1 - o3[1].input / o3[0].input == 1 - o3[1].output / o3[0].output == Decimal("0.8")
    gpt4 = next(p for p in h.api if p.model == "gpt-4")
    mini = next(p for p in h.api if p.model == "gpt-4o-mini")
    assert gpt4.input / mini.input == 200


def test_a_bad_history_row_is_refused():
    with pytest.raises(VazaoError, match="lacks 'source'"):
        parse_history("api:\n  - {model: m, provider: p, as_of: '2025-01', usd_per_mtok: {input: 1, output: 2}}\n",
                      "h.yaml")
    with pytest.raises(VazaoError, match="not YYYY-MM"):
        parse_history("gpu:\n  - {gpu: h100-sxm, provider: p, as_of: 'last year', usd_per_gpu_hour: 2, source: s}\n",
                      "h.yaml")
    with pytest.raises(VazaoError, match="unknown field 'price'"):
        parse_history("gpu:\n  - {gpu: h100-sxm, provider: p, as_of: '2025-01', price: 2, source: s}\n", "h.yaml")
    assert math.isfinite(float(price_history().gpu[0].usd_per_gpu_hour))
