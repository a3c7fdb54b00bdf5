"""Bills from token ledgers: the worked numbers of seed 004_9706bef9153e5571.txt (support assistant,
reasoning request) and seed 000_9652c48a9e6fbd49.txt (agents), exact decimal money."""

from __future__ import annotations

from decimal import Decimal

import pytest

from vazao.catalog.prices import get_price
from vazao.cost.agent import AgentTask, bill_agent
from vazao.cost.conversation import Conversation, bill_conversation, levers
from vazao.cost.ledger import TokenLedger, bill_requests, line, make_bill, price_request
from vazao.errors import VazaoError

SONNET = get_price("claude-sonnet-5.5")
SUPPORT = Conversation(system=6000, turns=8, user=300, reply=250)


def approx(value: Decimal, expected: str, tol: str) -> bool:
    return abs(value - Decimal(expected)) <= Decimal(tol)


# ---- seed 004: the support assistant ------------------------------------------------------------
def test_seed004_history_is_resent_each_turn():
    """'O turno 1 envia 6.300 tokens, o turno 2 envia 6.850, e assim por diante até 10.150 no turno 8.
    Somada nos oito turnos, a entrada é de 65.800 tokens. A saída é de 2.000 tokens.'"""
    sent = [SUPPORT.turn_input(k) for k in range(1, 9)]
    assert sent[0] == 6300 and sent[1] == 6850 and sent[-1] == 10150
    bill = bill_conversation(SUPPORT, SONNET)
    assert bill.tokens.prompt_tokens == 65_800
    assert bill.tokens.billed_output == 2_000


def test_seed004_uncached_conversation_and_daily_bill():
    """'Sem cache, a entrada custa US$ 0,1316 e a saída US$ 0,0200 ... cerca de US$ 0,152. Com 10.000
    conversas por dia, são uns US$ 1.500 por dia.'"""
    bill = bill_conversation(SUPPORT, SONNET)
    assert bill.charge.input_usd == Decimal("0.1316")  # exact: money is Decimal end to end
    assert bill.charge.output_usd == Decimal("0.0200")
    assert bill.total_usd == Decimal("0.1516")
    assert approx(bill.total_usd, "0.152", "0.001")
    per_day = bill.total_usd * 10_000
    assert per_day == Decimal("1516")
    assert approx(per_day, "1500", "20")


def test_seed004_cached_prefix_halves_the_bill():
    """'O primeiro turno o grava (US$ 0,0150), os sete turnos seguintes o leem (... cerca de US$ 0,0042),
    e os 17.800 tokens restantes de entrada são cobrados à tarifa normal (US$ 0,0356) ... a conversa
    custa cerca de US$ 0,075, aproximadamente metade.'"""
    bill = bill_conversation(SUPPORT, SONNET, cache_ttl="5m")
    c, t = bill.charge, bill.tokens
    assert (t.cache_write, t.cache_read, t.new_input) == (6_000, 7 * 6_000, 17_800)
    assert t.new_input == 65_800 - 8 * 6_000
    assert c.cache_write == Decimal("0.0150")
    assert c.cache_read == Decimal("0.0042")
    assert c.new_input == Decimal("0.0356")
    assert c.output_usd == Decimal("0.0200")
    assert bill.total_usd == Decimal("0.0748")
    assert approx(bill.total_usd, "0.075", "0.0005")
    uncached = bill_conversation(SUPPORT, SONNET).total_usd
    assert approx(bill.total_usd / uncached, "0.5", "0.02")


def test_seed004_output_share_and_shorter_replies():
    """'Os 2.000 tokens de saída são 3% de todos os tokens da conversa e 27% da fatura com cache.
    Encurtar as respostas em um terço ... reduz o custo da conversa em cerca de 9%. Cortar um terço do
    prompt de sistema em cache ... economiza aproximadamente o mesmo.'"""
    bill = bill_conversation(SUPPORT, SONNET, cache_ttl="5m")
    assert approx(Decimal(2000) / bill.tokens.total_tokens, "0.03", "0.005")
    assert approx(bill.output_share, "0.27", "0.005")
    by_name = {lv.name: lv for lv in levers(SUPPORT, SONNET, "5m")}
    # The seed's arithmetic counts the replies' output only: a third of 27% ≈ 9%.
    assert approx(by_name["replies ⅓ shorter (output only)"].saving_share, "0.09", "0.005")
    # Shorter replies are also re-sent as shorter history, which the seed leaves out: ≈ 15%.
    assert approx(by_name["replies ⅓ shorter (history too)"].saving_share, "0.151", "0.002")
    assert approx(by_name["system prompt ⅓ shorter"].saving_share, "0.09", "0.01")


def test_caching_lever_offered_when_uncached():
    by_name = {lv.name: lv for lv in levers(SUPPORT, SONNET)}
    assert by_name["cache the system prompt"].total_usd == Decimal("0.0748")


# ---- seed 004: reasoning tokens --------------------------------------------------------------------
def test_seed004_reasoning_billed_as_output():
    """'Uma requisição que devolve uma resposta de 100 tokens depois de 5.000 tokens de raciocínio é
    cobrada por 5.100 tokens de saída.'"""
    gpt5 = get_price("gpt-5")
    bill = bill_requests(gpt5, [("q", TokenLedger(new_input=0, output=100, reasoning=5000))])
    assert bill.tokens.billed_output == 5_100
    assert bill.to_json()["output_tokens"] == 5_100
    assert bill.total_usd == Decimal(5_100) * Decimal(10) / Decimal(1_000_000)
    assert bill.output_share == 1


# ---- seed 000: agents -----------------------------------------------------------------------------
def test_seed000_agent_tokens():
    """Seed 000: 'Um agente que faz 20 chamadas de LLM, cada uma com 5 mil tokens de contexto e 2 mil
    tokens de resposta ... consome 140 mil tokens'; five agents ≈ 700,000–1,000,000 tokens per task."""
    one = AgentTask(calls=20, context=5000, reply=2000)
    assert one.tokens_per_task == 140_000
    five = AgentTask(calls=20, context=5000, reply=2000, agents=5)
    assert 700_000 <= five.tokens_per_task <= 1_000_000
    bill = bill_agent(five, get_price("haiku-5.5"))
    assert bill.tokens.total_tokens == five.tokens_per_task == 700_000
    assert bill.requests == 100
    # Seed 000's table: a five-agent task costs $0.1–1.5; on Haiku 5.5 prices it is $0.15.
    assert bill.total_usd == Decimal("0.15")
    assert Decimal("0.1") <= bill.total_usd <= Decimal("1.5")


def test_agent_with_cached_context():
    task = AgentTask(calls=20, context=5000, reply=2000, agents=5, cached_context=4000)
    bill = bill_agent(task, SONNET, cache_ttl="5m")
    t = bill.tokens
    assert (t.cache_write, t.cache_read) == (5 * 4000, 5 * 19 * 4000)
    assert t.prompt_tokens == 5 * 20 * 5000
    assert bill.total_usd < bill_agent(task, SONNET).total_usd
    with pytest.raises(VazaoError, match=r"cached_context \(11\) exceeds context \(10\)"):
        AgentTask(calls=1, context=10, reply=1, cached_context=11)


# ---- the ledger itself ----------------------------------------------------------------------------
def test_money_sums_exactly_where_floats_drift():
    t = get_price("haiku-5.5")
    lines = [line(t, f"r{i}", TokenLedger(new_input=1)) for i in range(3)]
    total = make_bill(t, lines).total_usd
    assert total == Decimal("0.0000003")  # 3 × $0.10 / 10⁶, exactly
    assert 3 * (0.10 / 1e6) != 0.0000003  # what binary floats would have given


def test_batch_is_half_price_and_ttl_selects_write_price():
    led = TokenLedger(new_input=1_000_000, cache_write=1_000_000, output=1_000_000)
    std, _ = price_request(SONNET, led, cache_ttl="5m")
    half, _ = price_request(SONNET, led, batch=True, cache_ttl="5m")
    assert half.total * 2 == std.total
    one_hour, _ = price_request(SONNET, led, cache_ttl="1h")
    assert one_hour.cache_write == Decimal(4)
    with pytest.raises(VazaoError, match="TTL '2h'"):
        price_request(SONNET, led, cache_ttl="2h")


def test_bad_ledgers_and_prices_without_cache_or_batch():
    with pytest.raises(VazaoError):
        TokenLedger(new_input=-1)
    deepseek = get_price("deepseek-v4-pro")
    with pytest.raises(VazaoError, match="no batch price"):
        price_request(deepseek, TokenLedger(new_input=1), batch=True)
    mistral_like = get_price("gpt-5")  # automatic caching: no write premium
    bill = make_bill(mistral_like, [line(mistral_like, "r", TokenLedger(cache_write=1000))])
    assert bill.charge.cache_write == Decimal("0.00125")  # billed at the input price
    assert any("no cache-write premium" in n for n in bill.notes)
    with pytest.raises(VazaoError, match="turns must be at least 1"):
        Conversation(system=1, turns=0, user=1, reply=1)
