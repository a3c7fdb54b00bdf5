"""The API price catalog: the seed's table, exact decimals, look-ups, bad input, litellm import."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from vazao.catalog.prices import (
    get_price,
    load_prices,
    money,
    parse_prices,
    price_tables,
    read_yaml,
)
from vazao.cli import app
from vazao.cost.ledger import TokenLedger, price_request
from vazao.errors import NotFoundError, VazaoError

runner = CliRunner()
SEED = "004_9706bef9153e5571.txt"


def test_every_price_has_source_and_as_of_and_decimal_rates():
    tables = price_tables()
    assert len(tables) >= 12
    assert {t.provider for t in tables.values()} >= {"anthropic", "openai", "google", "deepseek", "mistral"}
    for t in tables.values():
        assert t.source and t.as_of, t.id
        for tier in t.tiers:
            for r in (tier.rates, tier.batch):
                if r is None:
                    continue
                assert isinstance(r.input, Decimal) and isinstance(r.output, Decimal)
                assert all(isinstance(v, Decimal) for v in r.cache_write.values())


def test_seed_004_anthropic_october_2026_table():
    """Seed 004: Haiku 5.5 $0.10/$0.50 (5× above 100,000 prompt tokens), Sonnet 5.5 $2/$10 with cache
    write $2.50 and cache read $0.10, Opus 5.5 $4/$20; output five times input on every model."""
    haiku, sonnet, opus = get_price("haiku-5.5"), get_price("sonnet-5.5"), get_price("opus-5.5")
    assert (haiku.base.input, haiku.base.output) == (Decimal("0.10"), Decimal("0.50"))
    assert (sonnet.base.input, sonnet.base.output) == (Decimal(2), Decimal(10))
    assert sonnet.base.write_rate("5m") == Decimal("2.50") and sonnet.base.cache_read == Decimal("0.10")
    assert (opus.base.input, opus.base.output) == (Decimal(4), Decimal(20))
    for t in (haiku, sonnet, opus):
        assert t.base.output == 5 * t.base.input
        assert t.as_of == "2026-10"
        assert t.batch_discount == Decimal("0.5")  # "Requisições em lote têm 50% de desconto"
        assert t.base.cache_read <= t.base.input / 10  # "um décimo ... ou menos"
    long = haiku.rates_for(100_001)
    assert (long.input, long.output) == (5 * haiku.base.input, 5 * haiku.base.output)
    assert haiku.rates_for(100_000) is haiku.base  # "para prompts de até 100.000 tokens"


def test_seed_004_gpt5_launch_price_ratio_is_eight():
    gpt5 = get_price("gpt-5")
    assert (gpt5.base.input, gpt5.base.output) == (Decimal("1.25"), Decimal(10))
    assert gpt5.base.output / gpt5.base.input == 8  # "uma diferença de oito vezes"
    assert gpt5.as_of == "2025-08"


def test_lookup_is_tolerant_and_unknown_names_suggest_closest():
    assert get_price("claude-sonnet-5-5").id == "claude-sonnet-5.5"
    assert get_price("Claude Sonnet 5.5").id == "claude-sonnet-5.5"
    assert get_price("anthropic/claude-opus-5.5").id == "claude-opus-5.5"
    with pytest.raises(NotFoundError) as exc:
        get_price("sonet-5.5")
    assert "sonnet-5.5" in exc.value.suggestions


def test_yaml_numbers_are_exact_decimals_and_money_refuses_floats():
    data = read_yaml("a: 0.1\nb: 2.50\n")
    assert data["a"] == Decimal("0.1") and isinstance(data["a"], Decimal)
    assert data["a"] * 3 == Decimal("0.3")  # 0.1 * 3 != 0.3 in binary floating point
    assert money("$1,500.25") == Decimal("1500.25")
    with pytest.raises(VazaoError, match="not a float"):
        money(0.1)
    with pytest.raises(VazaoError):
        money("-3")


def test_prices_file_errors_name_the_line():
    text = ("prices:\n"
            "  - id: x\n"
            "    provider: p\n"
            "    usd_per_mtok: {input: 1, output: 2}\n"
            "    discount: 0.5\n"
            "    source: s\n"
            "    as_of: '2026-10'\n")
    with pytest.raises(VazaoError, match=r"x.yaml:5: unknown field 'discount'"):
        parse_prices(text, "x.yaml")
    with pytest.raises(VazaoError, match="lacks 'as_of'"):
        parse_prices(text.replace("    discount: 0.5\n", "").replace("    as_of: '2026-10'\n", ""), "x.yaml")


def test_prices_cli_table_and_json():
    res = runner.invoke(app, ["prices"])
    assert res.exit_code == 0, res.output
    assert "claude-sonnet-5.5" in res.output and "as of" in res.output
    res = runner.invoke(app, ["prices", "--provider", "anthropic", "--json"])
    assert res.exit_code == 0
    data = json.loads(res.stdout)
    ids = {p["id"] for p in data["prices"]}
    assert "claude-haiku-5.5" in ids and "gpt-5" not in ids
    haiku = next(p for p in data["prices"] if p["id"] == "claude-haiku-5.5")
    assert haiku["long_context"][0]["above_input_tokens"] == 100000
    assert haiku["usd_per_mtok"]["input"] == "0.1"


def test_gpu_rental_comes_from_the_accelerator_catalog():
    from vazao.catalog.hardware import get_accelerator

    res = runner.invoke(app, ["prices", "--gpus", "--json"])
    assert res.exit_code == 0, res.output
    rows = {g["id"]: g for g in json.loads(res.stdout)["gpus"]}
    h100 = get_accelerator("h100-sxm")
    assert Decimal(rows["h100-sxm"]["usd_per_hour"]) == Decimal(repr(h100.usd_per_hour))
    assert rows["h100-sxm"]["as_of"] == h100.price_as_of and rows["h100-sxm"]["source"]


# ---- litellm import --------------------------------------------------------------------------------
LITELLM_SAMPLE = {
    "sample_spec": {"input_cost_per_token": 0.0, "output_cost_per_token": 0.0, "mode": "chat",
                    "litellm_provider": "one of https://docs.litellm.ai/docs/providers"},
    "acme-chat-1": {
        "litellm_provider": "anthropic", "mode": "chat", "max_input_tokens": 1000000,
        "input_cost_per_token": 1e-07, "output_cost_per_token": 5e-07,
        "cache_creation_input_token_cost": 1.25e-07, "cache_creation_input_token_cost_above_1hr": 2e-07,
        "cache_read_input_token_cost": 1e-08,
        "input_cost_per_token_batches": 5e-08, "output_cost_per_token_batches": 2.5e-07,
        "input_cost_per_token_above_100k_tokens": 5e-07, "output_cost_per_token_above_100k_tokens": 2.5e-06,
        "cache_read_input_token_cost_above_100k_tokens": 5e-08,
        "source": "https://example.com/pricing",
    },
    "acme-tiered": {
        "litellm_provider": "dashscope", "mode": "chat",
        "tiered_pricing": [
            {"input_cost_per_token": 4e-07, "output_cost_per_token": 1.2e-06, "range": [0, 256000.0]},
            {"input_cost_per_token": 1.2e-06, "output_cost_per_token": 3.6e-06, "range": [256000.0, 1000000.0]},
        ],
    },
    "acme-embed": {"litellm_provider": "openai", "mode": "embedding", "input_cost_per_token": 1e-08,
                   "output_cost_per_token": 0.0},
    "acme-broken": {"litellm_provider": "openai", "mode": "chat", "input_cost_per_token": "free"},
}


def test_prices_import_from_litellm_json(tmp_path):
    src = tmp_path / "model_prices_and_context_window_backup.json"
    src.write_text(json.dumps(LITELLM_SAMPLE), encoding="utf-8")
    out = tmp_path / "imported.yaml"
    res = runner.invoke(app, ["prices", "import", "--from-litellm", str(src), "--out", str(out),
                              "--as-of", "2026-12-02", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["imported"] == 2 and report["skipped"] == 3  # sample_spec, embedding, broken
    tables = load_prices(out)
    t = tables["acme-chat-1"]
    assert t.base.input == Decimal("0.1") and t.base.output == Decimal("0.5")  # per million, exact
    assert t.base.write_rate("5m") == Decimal("0.125") and t.base.write_rate("1h") == Decimal("0.2")
    assert t.rates_for(10, batch=True).input == Decimal("0.05")
    assert t.tier_for(100_001).above_input_tokens == 100_000
    assert t.rates_for(100_001).output == Decimal("2.5")
    assert t.as_of == "2026-12-02" and "example.com" in t.source
    assert tables["acme-tiered"].rates_for(300_000).input == Decimal("1.2")
    # the imported file prices a bill through --prices
    res = runner.invoke(app, ["bill", "request", "--price", "acme-chat-1", "--prices", str(out),
                              "--input", "100000", "--count", "10", "--json"])
    assert res.exit_code == 0, res.output
    assert Decimal(json.loads(res.stdout)["total_usd"]) == Decimal("0.1")  # 10 × 100k × $0.10/M


def test_prices_import_needs_a_format_and_a_file(tmp_path, monkeypatch):
    res = runner.invoke(app, ["prices", "import", str(tmp_path / "x.json")])
    assert res.exit_code == 2 and "--from-litellm" in res.output
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    res = runner.invoke(app, ["prices", "import", "--from-litellm"])
    assert res.exit_code == 2 and "litellm is not installed" in res.output


def test_tier_applies_to_the_whole_request():
    haiku = get_price("haiku-5.5")
    small, tier = price_request(haiku, TokenLedger(new_input=100_000, output=1000))
    big, tier_big = price_request(haiku, TokenLedger(new_input=100_001, output=1000))
    assert tier == 0 and tier_big == 100_000
    assert small.output == Decimal("0.0005") and big.output == Decimal("0.0025")  # output re-priced too
