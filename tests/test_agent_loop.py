"""Agents whose context grows (issue 23, first part): `bill agent --history` bills each call with every
earlier reply and tool output re-sent, the growing prefix cached where the API caches it.

Seed 000 (000_9652c48a9e6fbd49.txt, line 113): an agent of 20 calls, each 5,000 context and 2,000 reply
tokens, "consumes 140 thousand tokens" (the flat count); line 121: a 5-agent task consumes "1 to 5
million tokens", "0.1 to 1.5 dollars per task". Seed 004 (004_9706bef9153e5571.txt, line 51): agents use
≈ 4× a chat's tokens and multi-agent systems ≈ 15× (Anthropic)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from vazao.catalog.prices import get_price
from vazao.cli import app
from vazao.cost.agent import AgentLoop, AgentTask, bill_agent_loop

SEED = AgentLoop(calls=20, context=5_000, reply=2_000, agents=5)
runner = CliRunner()


def test_the_flat_count_is_the_seeds_140k():
    assert AgentTask(calls=20, context=5_000, reply=2_000).tokens_per_agent == 140_000  # seed 000, line 113
    assert SEED.flat_tokens_per_task == 5 * 140_000


def test_the_loop_resends_the_history():
    # call k sends 5,000 + 2,000 (k − 1): Σ = 20 × 5,000 + 2,000 × (0 + 1 + … + 19) = 100,000 + 380,000
    assert [SEED.prompt(k) for k in (1, 2, 20)] == [5_000, 7_000, 43_000]
    assert SEED.tokens_per_agent == 100_000 + 380_000 + 20 * 2_000 == 520_000
    # five agents: 2.6 M tokens, inside seed 000's "1 to 5 million tokens" for a 5-agent task (line 121)
    assert 1_000_000 <= SEED.tokens_per_task == 2_600_000 <= 5_000_000
    m = SEED.multipliers()
    assert m["history_over_flat"] == pytest.approx(2_600_000 / 700_000)
    assert m["task_over_one_agent"] == 5.0 and m["seed_multi_agent_over_agent"] == 15 / 4


def test_a_merge_call_reads_every_agents_reply():
    loop = AgentLoop(calls=20, context=5_000, reply=2_000, agents=5, merge_reply=1_000)
    assert loop.merge_prompt == 5_000 + 5 * 2_000
    assert loop.tokens_per_task == 2_600_000 + 15_000 + 1_000


def test_the_bill_is_each_call_at_its_own_price():
    table = get_price("gpt-5")
    rates = table.tiers[0].rates
    bill = bill_agent_loop(SEED, table)
    # uncached: 5 agents × 480,000 prompt tokens and 5 × 40,000 output tokens at the table's rates
    by_hand = (Decimal(5 * 480_000) * rates.input + Decimal(5 * 40_000) * rates.output) / Decimal(1_000_000)
    assert bill.total_usd == by_hand.quantize(bill.total_usd)
    assert [ln.label for ln in bill.lines][:2] == ["call 1", "call 2"] and len(bill.lines) == 20


def test_caching_reads_the_previous_prompt_and_writes_what_was_appended():
    led = dict((label, ledger) for label, ledger, _ in SEED.ledgers(cached=True))
    assert led["call 1"].cache_write == 5_000 and led["call 1"].cache_read == 0
    assert led["call 20"].cache_read == SEED.prompt(19) == 41_000 and led["call 20"].cache_write == 2_000
    bill = bill_agent_loop(SEED, get_price("gpt-5-mini"), "5m")
    # every prompt token but each agent's last appended part is read from the cache
    assert bill.tokens.cache_read == 5 * sum(SEED.prompt(k) for k in range(1, 20)) == 2_185_000
    # on a small model the seed's 5-agent task costs what seed 000 says: 0.1 to 1.5 dollars (line 121)
    assert Decimal("0.1") <= bill.total_usd <= Decimal("1.5")


def test_the_cli_shows_the_loop_and_refuses_mixed_models():
    res = runner.invoke(app, ["bill", "agent", "--price", "gpt-5-mini", "--calls", "20", "--context", "5000",
                              "--reply", "2000", "--agents", "5", "--history", "--cache", "5m", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["tokens_per_task"] == 2_600_000 and d["flat_tokens_per_task"] == 700_000
    assert d["multipliers"]["seed_multi_agent_over_agent"] == 3.75
    for argv, said in ((["--tool-output", "500"], "add --history"),
                       (["--history", "--cached-context", "1000"], "--cached-context")):
        res = runner.invoke(app, ["bill", "agent", "--price", "gpt-5-mini", "--calls", "3", "--context", "100",
                                  "--reply", "10", *argv])
        lines = [x for x in res.stderr.splitlines() if x.strip()]
        assert res.exit_code == 2 and len(lines) == 1 and said in lines[0], res.stderr


def test_a_loop_is_bounded_before_it_is_billed():
    """Each call of a loop is a bill line: a typo of millions of calls is refused in one line, not built."""
    from vazao import limits
    from vazao.errors import VazaoError

    assert AgentLoop(calls=limits.MAX_LOOP_CALLS, context=1, reply=1).calls == limits.MAX_LOOP_CALLS
    with pytest.raises(VazaoError, match="at most"):
        AgentLoop(calls=limits.MAX_LOOP_CALLS + 1, context=1, reply=1)
