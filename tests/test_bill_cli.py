"""`vazao bill …` through typer's CliRunner: the JSON contract, the seed's numbers, bad input."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from typer.testing import CliRunner

from vazao.catalog.prices import get_price
from vazao.cli import app
from vazao.cost.usage import bill_usage, ledger_from_usage

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CONVERSATION = ["bill", "conversation", "--price", "sonnet-5.5", "--system", "6000", "--turns", "8",
                "--user", "300", "--reply", "250"]
REQUIRED = {"total_usd", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "lines"}


def run_json(args: list[str]) -> dict:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_conversation_json_seed004_uncached():
    """Seed 004_9706bef9153e5571.txt: 65,800 in, 2,000 out, $0.1516 ≈ $0.152; ≈ $1,500/day at 10,000."""
    d = run_json([*CONVERSATION, "--per-day", "10000", "--json"])
    assert set(d) >= REQUIRED
    assert d["input_tokens"] == 65_800 and d["output_tokens"] == 2_000
    assert d["cached_input_tokens"] == 0 and d["cache_write_tokens"] == 0
    assert Decimal(d["total_usd"]) == Decimal("0.1516")
    assert Decimal(d["per_day_usd"]) == Decimal("1516")
    assert len(d["lines"]) == 8 and d["lines"][0]["new_input"] == 6300 and d["lines"][7]["new_input"] == 10150
    assert isinstance(d["total_usd"], str)  # decimal text, never a binary float


def test_conversation_json_seed004_cached():
    d = run_json([*CONVERSATION, "--cache", "5m", "--json"])
    assert d["cache_write_tokens"] == 6_000 and d["cached_input_tokens"] == 42_000
    assert d["new_input_tokens"] == 17_800
    assert Decimal(d["total_usd"]) == Decimal("0.0748")
    assert Decimal(d["usd"]["cache_write"]) == Decimal("0.015")
    assert Decimal(d["usd"]["cache_read"]) == Decimal("0.0042")
    assert Decimal(d["usd"]["new_input"]) == Decimal("0.0356")
    assert abs(Decimal(d["output_share"]) - Decimal("0.27")) < Decimal("0.005")
    levers = {lv["name"]: Decimal(lv["saving_share"]) for lv in d["levers"]}
    assert abs(levers["replies ⅓ shorter (output only)"] - Decimal("0.09")) < Decimal("0.005")


def test_conversation_console_output():
    res = runner.invoke(app, [*CONVERSATION, "--per-day", "10000"])
    assert res.exit_code == 0, res.output
    assert "$0.1516" in res.output and "$1,516.00 per day" in res.output
    assert "65,800" in res.output


def test_agent_json_seed000():
    """Seed 000_9652c48a9e6fbd49.txt: 20 calls × (5,000 + 2,000) = 140,000 tokens; 5 agents = 700,000."""
    d = run_json(["bill", "agent", "--price", "haiku-5.5", "--calls", "20", "--context", "5000",
                  "--reply", "2000", "--agents", "5", "--json"])
    assert d["tokens_per_agent"] == 140_000 and d["tokens_per_task"] == 700_000
    assert d["input_tokens"] + d["output_tokens"] == 700_000
    assert Decimal(d["total_usd"]) == Decimal("0.15")


def test_request_with_reasoning_seed004():
    d = run_json(["bill", "request", "--price", "gpt-5", "--output", "100", "--reasoning", "5000", "--json"])
    assert d["output_tokens"] == 5_100 and d["reasoning_tokens"] == 5_000
    assert Decimal(d["total_usd"]) == Decimal("0.051")


def test_unknown_price_suggests_closest():
    res = runner.invoke(app, ["bill", "conversation", "--price", "sonet-5.5", "--system", "1", "--turns", "1",
                              "--user", "1", "--reply", "1"])
    assert res.exit_code == 2
    assert "unknown price 'sonet-5.5'" in res.output and "sonnet-5.5" in res.output


def test_negative_tokens_and_cache_without_price_are_refused():
    res = runner.invoke(app, [*CONVERSATION[:-1], "-5"])
    assert res.exit_code == 2 and "--reply must be at least 0" in res.output
    res = runner.invoke(app, ["bill", "conversation", "--price", "mistral-large-3", "--system", "10",
                              "--turns", "2", "--user", "1", "--reply", "1", "--cache", "5m"])
    assert res.exit_code == 0  # it lists a cache read price and charges writes as input
    res = runner.invoke(app, [*CONVERSATION, "--cache", "2h"])
    assert res.exit_code == 2 and "TTL '2h'" in res.output


# ---- usage logs ---------------------------------------------------------------------------------
def test_usage_dialects():
    chat = ledger_from_usage({"prompt_tokens": 1000, "completion_tokens": 600,
                              "prompt_tokens_details": {"cached_tokens": 768},
                              "completion_tokens_details": {"reasoning_tokens": 500}})
    assert (chat.new_input, chat.cache_read, chat.output, chat.reasoning) == (232, 768, 100, 500)
    responses = ledger_from_usage({"input_tokens": 1000, "output_tokens": 300,
                                   "input_tokens_details": {"cached_tokens": 200},
                                   "output_tokens_details": {"reasoning_tokens": 100}})
    assert (responses.new_input, responses.cache_read, responses.output, responses.reasoning) == (800, 200, 200, 100)
    anthropic = ledger_from_usage({"input_tokens": 300, "cache_creation_input_tokens": 6000,
                                   "cache_read_input_tokens": 0, "output_tokens": 250})
    assert (anthropic.new_input, anthropic.cache_write, anthropic.output) == (300, 6000, 250)
    assert anthropic.prompt_tokens == 6300


def test_usage_log_with_malformed_lines_is_billed_and_reported(tmp_path):
    log = tmp_path / "usage.jsonl"
    log.write_text("\n".join([
        json.dumps({"model": "gpt-5", "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}}),
        "{not json",
        json.dumps({"model": "gpt-5", "usage": {"prompt_tokens": 10, "completion_tokens": -1}}),
        json.dumps({"model": "gpt-5", "usage": {"prompt_tokens": 10, "completion_tokens": 5,
                                                "prompt_tokens_details": {"cached_tokens": 11}}}),
        json.dumps(["not", "an", "object"]),
        "",
        json.dumps({"custom_id": "b1", "response": {"body": {"model": "gpt-5", "usage": {
            "prompt_tokens": 0, "completion_tokens": 100_000}}}}),
    ]) + "\n", encoding="utf-8")
    ub = bill_usage(log, get_price("gpt-5"))
    assert ub.malformed == 4
    assert [n for n, _ in ub.malformed_lines] == [2, 3, 4, 5]
    assert ub.bill.requests == 2
    assert ub.bill.total_usd == Decimal("1.25") + Decimal("1")  # 1M input at $1.25 + 100k output at $10
    res = runner.invoke(app, ["bill", "usage", str(log), "--price", "gpt-5", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["malformed"] == 4 and d["malformed_lines"][0] == {"line": 2, "reason": "invalid JSON"}
    assert Decimal(d["total_usd"]) == Decimal("2.25")
    res = runner.invoke(app, ["bill", "usage", str(log), "--price", "gpt-5"])
    assert "4 malformed line(s) skipped" in res.output and "line 3: completion_tokens" in res.output


def test_example_usage_log():
    d = run_json(["bill", "usage", str(EXAMPLES / "usage.jsonl"), "--price", "gpt-5", "--json"])
    assert d["requests"] == 6 and d["malformed"] == 2
    assert d["reasoning_tokens"] == 5_064
    assert set(d) >= REQUIRED


def test_usage_log_missing_file():
    res = runner.invoke(app, ["bill", "usage", "/nonexistent/usage.jsonl", "--price", "gpt-5"])
    assert res.exit_code == 2 and "usage log /nonexistent/usage.jsonl does not exist" in res.output


# ---- each line at its own model's price ------------------------------------------------------------
def _usage_line(model: str | None, prompt: int, completion: int, cached: int = 0) -> str:
    usage = {"prompt_tokens": prompt, "completion_tokens": completion,
             "prompt_tokens_details": {"cached_tokens": cached}}
    return json.dumps({"model": model, "usage": usage} if model else {"usage": usage})


def test_usage_lines_are_priced_by_their_own_model(tmp_path):
    """A gpt-5-mini line was once billed at --price gpt-5: $0.002325 instead of $0.000465."""
    # The catalog's rates (src/vazao/catalog/data/prices.yaml), USD per million tokens:
    # gpt-5 input 1.25, output 10; gpt-5-mini input 0.25, output 2, cache_read 0.025.
    gpt5, mini = get_price("gpt-5").base, get_price("gpt-5-mini").base
    assert (gpt5.input, gpt5.output) == (Decimal("1.25"), Decimal("10"))
    assert (mini.input, mini.output, mini.cache_read) == (Decimal("0.25"), Decimal("2"), Decimal("0.025"))
    log = tmp_path / "usage.jsonl"
    log.write_text("\n".join([
        _usage_line("gpt-5-mini", 900, 120),  # 900 × 0.25 + 120 × 2 = 465 µ$ → $0.000465
        _usage_line("gpt-5", 900, 120),  # 900 × 1.25 + 120 × 10 = $0.002325
        _usage_line("gpt-5-mini-2025-08-07", 1000, 100, cached=200),  # 800 × 0.25 + 200 × 0.025 + 100 × 2: $0.000405
        _usage_line("acme-llm-9000", 1000, 0),  # unknown: the fallback gpt-5, 1000 × 1.25 = $0.00125
        _usage_line(None, 2000, 0),  # no model: the fallback, $0.0025
    ]) + "\n", encoding="utf-8")
    ub = bill_usage(log, get_price("gpt-5"))
    by_label = {ln.label: ln.total_usd for ln in ub.bill.lines}
    assert by_label == {"gpt-5-mini": Decimal("0.000465"), "gpt-5": Decimal("0.002325"),
                        "gpt-5-mini-2025-08-07": Decimal("0.000405"), "acme-llm-9000": Decimal("0.00125"),
                        "(no model field)": Decimal("0.0025")}
    assert ub.bill.total_usd == Decimal("0.006945")
    assert (ub.fallback_requests, set(ub.fallback_models)) == (2, {"acme-llm-9000", "(no model field)"})
    d = run_json(["bill", "usage", str(log), "--price", "gpt-5", "--json"])
    assert Decimal(d["total_usd"]) == Decimal("0.006945")
    assert d["prices"]["gpt-5-mini-2025-08-07"] == "gpt-5-mini" and d["prices"]["acme-llm-9000"] == "gpt-5"
    assert d["fallback"] == {"price": "gpt-5", "requests": 2, "models": ["acme-llm-9000", "(no model field)"]}
    res = runner.invoke(app, ["bill", "usage", str(log), "--price", "gpt-5"])
    assert res.exit_code == 0, res.output
    assert "2 line(s) billed at the fallback --price gpt-5" in res.output and "acme-llm-9000" in res.output


def test_usage_without_a_fallback_price(tmp_path):
    log = tmp_path / "usage.jsonl"
    log.write_text(_usage_line("gpt-5-mini", 900, 120) + "\n", encoding="utf-8")
    d = run_json(["bill", "usage", str(log), "--json"])  # every line priced by its model: no --price needed
    assert Decimal(d["total_usd"]) == Decimal("0.000465") and d["fallback"]["requests"] == 0
    log.write_text(_usage_line("acme-llm-9000", 900, 120) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["bill", "usage", str(log)])
    assert res.exit_code == 2 and "no price for model 'acme-llm-9000'" in res.output and "--price" in res.output


def test_usage_log_with_no_readable_line_is_an_error(tmp_path):
    log = tmp_path / "usage.jsonl"
    log.write_text("{not json\n" + json.dumps({"model": "gpt-5"}) + "\n", encoding="utf-8")
    res = runner.invoke(app, ["bill", "usage", str(log), "--price", "gpt-5"])
    assert res.exit_code == 2, res.output
    assert "no line holds a usage object (2 non-empty lines; line 1: invalid JSON)" in res.output
    log.write_text("\n\n", encoding="utf-8")
    res = runner.invoke(app, ["bill", "usage", str(log), "--price", "gpt-5"])
    assert res.exit_code == 2 and "is empty" in res.output


def test_an_unknown_cache_duration_is_refused():
    res = runner.invoke(app, ["bill", "request", "--price", "gpt-5", "--cache", "7y", "--input", "5"])
    assert res.exit_code == 2, res.output
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "7y" in lines[0], res.stderr
