"""The prefix advisor: static prefix, simulated cache hits, savings, and what breaks the prefix."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vazao.catalog.prices import get_price
from vazao.cli import app
from vazao.cost.prefix import (
    Request,
    Span,
    _move_to_end,
    analyze,
    classify,
    pretokenize,
    read_requests,
    request_text,
    simulate_cache,
    volatile_spans,
)
from vazao.cost.prompt_cache import lcp_all, majority_prefix
from vazao.cost.volatile import word_align
from vazao.errors import VazaoError

runner = CliRunner()
SONNET = get_price("sonnet-5.5")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
POLICY = " ".join(f"Rule {i}: refunds, shipping and tone must follow clause {i} of the handbook." for i in range(80))


def test_block_cache_hits_exactly():
    a = list("abcdefgh")
    seqs = [a, a, a[:4] + list("wxyz")]
    run = simulate_cache(seqs, [None] * 3, block=4, min_cacheable=0, ttl_s=None)
    assert run.read_units == (0, 8, 4)
    assert run.write_units == (8, 0, 0)  # request 0 wrote both blocks and later requests read them
    assert run.hit_rate == pytest.approx(12 / 24)
    # a block only counts whole: a 7-unit shared head yields one block
    run = simulate_cache([a, a[:7] + ["!"]], [None, None], block=4, min_cacheable=0, ttl_s=None)
    assert run.read_units == (0, 4)
    # below the provider's minimum cacheable prefix nothing is cached
    run = simulate_cache(seqs, [None] * 3, block=4, min_cacheable=16, ttl_s=None)
    assert run.read_units == (0, 0, 0)


def test_ttl_expires_entries_between_requests():
    a = list("abcdefgh")
    warm = simulate_cache([a, a, a], [0.0, 200.0, 450.0], block=4, min_cacheable=0, ttl_s=300.0)
    assert warm.read_units == (0, 8, 8)  # each read refreshes the entry
    cold = simulate_cache([a, a, a], [0.0, 400.0, 401.0], block=4, min_cacheable=0, ttl_s=300.0)
    assert cold.read_units == (0, 0, 8)


def test_volatile_span_is_found_and_classified():
    a = pretokenize(f"System. Current time: 2026-10-14 14:02. {POLICY} Question A?")
    b = pretokenize(f"System. Current time: 2026-10-14 14:07. {POLICY} Question B?")
    spans = volatile_spans(a, b, window=4096, min_run=32)
    assert len(spans) == 1
    sa, sb = spans[0]
    assert "".join(b[sb.start:sb.end]) == "07" and "".join(a[sa.start:sa.end]) == "02"
    assert sb.static_after > 500
    assert classify("14:07") == "timestamp"
    assert classify("Customer: Bruno Lima") == "name"
    assert classify("a1b2c3d4-1111-2222") == "id"
    assert classify("  4821 ") == "number"


def _requests(n: int, volatile_first: bool) -> list[Request]:
    out = []
    for k in range(n):
        head = f"Now: 2026-10-14 14:{k:02d}. User: {['Ana', 'Bruno', 'Carla'][k % 3]}.\n"
        body = f"You are the Loja Vazao assistant.\n{POLICY}\n"
        text = head + body if volatile_first else body + head
        out.append(Request(k + 1, text + f"Question {k}: where is order {48000 + k}?", None))
    return out


def test_timestamp_early_breaks_caching_and_moving_it_restores_it():
    broken = analyze(_requests(10, volatile_first=True), SONNET, min_cacheable_tokens=256)
    assert broken.cache.hit_rate == 0 and broken.cache.savings_usd == 0
    assert broken.static_prefix_tokens <= 12  # "Now: 2026-10-14 14:" and no further
    assert broken.volatile, "the timestamp must be reported"
    top = broken.volatile[0]
    assert "timestamp" in top.kind and top.requests == 9 and top.static_after_tokens > 500
    assert broken.after_fix is not None and broken.after_fix.hit_rate > 0.8
    assert broken.after_fix.savings_share > Decimal("0.6")
    assert any("Move it after the static part" in a for a in broken.advice)

    good = analyze(_requests(10, volatile_first=False), SONNET, min_cacheable_tokens=256)
    assert good.static_prefix_tokens > 500
    assert good.cache.hit_rate > 0.8
    # savings under the price table: reads at $0.10/M instead of $2/M, one write at $2.50/M
    assert good.cache.cached_usd < good.cache.uncached_usd * Decimal("0.3")
    assert abs(good.cache.hit_rate - broken.after_fix.hit_rate) < 0.05


def test_char_unit_and_exact_billing_of_cached_tokens():
    reqs = _requests(6, volatile_first=False)
    r = analyze(reqs, SONNET, unit="char", min_cacheable_tokens=256)
    assert r.unit == "char" and r.cache.hit_rate > 0.7
    tokens = sum(round(len(q.text) / 4) for q in reqs)  # 4 characters per token by default
    assert r.prompt_tokens == tokens
    assert r.cache.uncached_usd == Decimal(tokens) * 2 / Decimal(1_000_000)  # every token at $2/M


def test_request_formats():
    assert request_text({"prompt": "hello"}) == "hello"
    chat = request_text({"messages": [{"role": "system", "content": "S"},
                                      {"role": "user", "content": [{"type": "text", "text": "Q"}]}]})
    assert chat == "<system>\nS\n<user>\nQ\n"
    anthropic = request_text({"system": [{"type": "text", "text": "S"}], "messages": [{"role": "user",
                                                                                      "content": "Q"}]})
    assert anthropic.startswith("<system>\nS\n") and anthropic.endswith("<user>\nQ\n")
    batch = request_text({"custom_id": "x", "body": {"messages": [{"role": "user", "content": "Q"}]}})
    assert batch == "<user>\nQ\n"
    assert request_text({"input": "plain"}) == "plain"
    with pytest.raises(ValueError):
        request_text({"nothing": 1})


def test_malformed_lines_are_counted(tmp_path):
    f = tmp_path / "req.jsonl"
    f.write_text("\n".join([json.dumps({"prompt": "a" * 100}), "{broken", json.dumps({"x": 1}),
                            json.dumps({"prompt": "b", "timestamp": "not a time"}),
                            json.dumps({"prompt": "a" * 100})]) + "\n", encoding="utf-8")
    reqs, malformed, bad = read_requests(f)
    assert len(reqs) == 2 and malformed == 3
    assert [n for n, _ in bad] == [2, 3, 4]
    res = runner.invoke(app, ["prefix", str(f), "--price", "sonnet-5.5", "--min-cacheable", "0", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["malformed"] == 3 and d["requests"] == 2


def test_prefix_cli_on_the_example():
    res = runner.invoke(app, ["prefix", str(EXAMPLES / "requests.jsonl"), "--price", "sonnet-5.5", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["requests"] == 8 and d["hit_rate"] == 0
    assert d["volatile"][0]["kind"] == "timestamp, name"
    assert d["after_fix"]["hit_rate"] > 0.8
    assert Decimal(d["after_fix"]["savings_usd"]) > 0
    res = runner.invoke(app, ["prefix", str(EXAMPLES / "requests.jsonl"), "--price", "sonnet-5.5"])
    assert res.exit_code == 0 and "Volatile content" in res.output and "advice:" in res.output


def test_prefix_bad_input():
    with pytest.raises(VazaoError, match="no requests"):
        analyze([], SONNET)
    res = runner.invoke(app, ["prefix", str(EXAMPLES / "requests.jsonl"), "--price", "sonnet-5.5",
                              "--unit", "word"])
    assert res.exit_code == 2 and "--unit" in res.output
    res = runner.invoke(app, ["prefix", "/nonexistent.jsonl", "--price", "sonnet-5.5"])
    assert res.exit_code == 2 and "requests file /nonexistent.jsonl does not exist" in res.output


def test_shared_and_majority_prefixes():
    seqs = [list("abcdXXXX"), list("abcdefgh"), list("abcdefgZ"), list("Qbcdefgh")]
    assert lcp_all(seqs) == 0 and lcp_all(seqs[:3]) == 4 and lcp_all([]) == 0
    assert majority_prefix(seqs, 4) == (4, 3)  # 'abcd' leads three of four; no second block is shared by two
    assert majority_prefix(seqs, 2) == (6, 2)  # 'abcdef' leads two: half of the requests


def test_a_character_span_widens_to_whole_words():
    a = list("Customer: Souza. " + "x y z " * 10)
    b = list("Customer: Lima. " + "x y z " * 10)
    [(sa, sb)] = volatile_spans(a, b, window=400, min_run=8)
    assert "".join(b[sb.start:sb.end]) == "Lim"  # the shared trailing 'a' reads as static
    wa, wb = word_align(a, sa), word_align(b, sb)
    assert "".join(a[wa.start:wa.end]) == "Souza" and "".join(b[wb.start:wb.end]) == "Lima"
    assert wb.static_after == sb.static_after - 1


def test_moving_spans_to_the_end_keeps_every_unit_once():
    moved = _move_to_end(list("abcdefgh"), [Span(5, 6, 0), Span(1, 3, 0), Span(2, 4, 0)])
    assert "".join(moved) == "adeghbcf"  # (2, 4) overlaps (1, 3) and stays in place
    assert _move_to_end(list("abc"), []) == list("abc")


def test_bad_arguments_are_reported_in_order():
    reqs = _requests(2, volatile_first=False)
    with pytest.raises(VazaoError, match="^no requests to analyze$"):
        analyze([], SONNET, unit="word", chars_per_token=0)
    with pytest.raises(VazaoError, match="^unit must be token or char, got 'word'$"):
        analyze(reqs, SONNET, unit="word", chars_per_token=0)
    with pytest.raises(VazaoError, match="^chars_per_token must be positive, got 0$"):
        analyze(reqs, SONNET, chars_per_token=0)


def test_many_requests_are_sampled_in_pairs_and_say_so():
    reqs = [Request(k + 1, f"Now: 14:{k % 60:02d}. {POLICY[:2000]} Question {k}?", float(k)) for k in range(801)]
    rep = analyze(reqs, SONNET, min_cacheable_tokens=64)
    assert any(n.startswith("volatile content searched in one pair of consecutive requests in 2;") for n in rep.notes)
    assert rep.volatile and rep.volatile[0].kind == "timestamp"
    assert rep.after_fix is not None and rep.after_fix.hit_rate > rep.cache.hit_rate
