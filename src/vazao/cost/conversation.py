"""A multi-turn conversation whose history is re-sent every turn.

Turn k (1-based) sends the system prompt, k user messages and the k − 1 earlier replies:
    input_k = system + k × user + (k − 1) × reply
With the system prompt cached, turn 1 writes it at the cache-write price and turns 2…n read it;
everything else is new input (seed 004_9706bef9153e5571.txt: 6,300, 6,850, … 10,150 tokens,
65,800 in all, 17,800 of them outside the cached prefix). Turns are assumed to arrive within the
cache TTL, as the seed assumes; reasoning tokens are billed but not re-sent as history."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal

from vazao.catalog.prices import PriceTable, share_str, usd_str
from vazao.cost.ledger import Bill, TokenLedger, line, make_bill
from vazao.errors import VazaoError
from vazao.resultfiles import from_document


@dataclass(frozen=True)
class Conversation:
    system: int  # tokens of system prompt and static policy text
    turns: int
    user: int  # tokens per user message
    reply: int  # tokens per reply
    reasoning: int = 0  # thinking tokens per turn (billed as output, not re-sent)
    resent_reply: int | None = None  # a reply's tokens when re-sent as history (None: = reply)

    def __post_init__(self) -> None:
        for name in ("system", "turns", "user", "reply", "reasoning"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                raise VazaoError(f"{name} must be a non-negative integer, got {v!r}")
        if self.turns < 1:
            raise VazaoError(f"turns must be at least 1, got {self.turns}")
        if self.resent_reply is not None and self.resent_reply < 0:
            raise VazaoError("resent_reply must be non-negative")

    @property
    def history_reply(self) -> int:
        return self.reply if self.resent_reply is None else self.resent_reply

    def turn_input(self, k: int) -> int:
        return self.system + k * self.user + (k - 1) * self.history_reply

    def ledgers(self, cached: bool) -> list[tuple[str, TokenLedger]]:
        out = []
        for k in range(1, self.turns + 1):
            sent = self.turn_input(k)
            if cached and self.system:
                rest = sent - self.system
                led = (TokenLedger(new_input=rest, cache_write=self.system, output=self.reply,
                                   reasoning=self.reasoning) if k == 1 else
                       TokenLedger(new_input=rest, cache_read=self.system, output=self.reply,
                                   reasoning=self.reasoning))
            else:
                led = TokenLedger(new_input=sent, output=self.reply, reasoning=self.reasoning)
            out.append((f"turn {k}", led))
        return out


def bill_conversation(conv: Conversation, table: PriceTable, cache_ttl: str | None = None,
                      batch: bool = False) -> Bill:
    """One conversation's bill, a line per turn; cache_ttl None bills without prompt caching."""
    cached = cache_ttl is not None
    if cached and table.base.cache_read is None:
        raise VazaoError(f"{table.id} lists no prompt-cache price; bill without prompt caching")
    if cached:
        table.base.write_rate(cache_ttl)  # an unknown TTL fails here, before any arithmetic
    lines = [line(table, label, led, 1, batch, cache_ttl) for label, led in conv.ledgers(cached)]
    return make_bill(table, lines, batch, cache_ttl)


@dataclass(frozen=True)
class Lever:
    """What one design change does to a conversation's bill."""

    name: str
    total_usd: Decimal
    saving_usd: Decimal
    saving_share: Decimal

    def to_json(self) -> dict:
        return {"name": self.name, "total_usd": usd_str(self.total_usd),
                "saving_usd": usd_str(self.saving_usd), "saving_share": share_str(self.saving_share)}

    @classmethod
    def from_json(cls, d: Mapping) -> Lever:
        return from_document(cls, d)


def _third_off(n: int) -> int:
    return (2 * n + 1) // 3  # n − n/3, rounded to the nearest token


def levers(conv: Conversation, table: PriceTable, cache_ttl: str | None = None,
           batch: bool = False) -> list[Lever]:
    """Re-bill the conversation under the seed's levers: replies a third shorter (counting only the
    output, as seed 004 does, and also with the shorter replies re-sent as history), a third off the
    system prompt, and caching the system prompt when it is not cached."""
    base = bill_conversation(conv, table, cache_ttl, batch).total_usd
    shorter = _third_off(conv.reply)
    variants = [
        ("replies ⅓ shorter (output only)", replace(conv, reply=shorter, resent_reply=conv.history_reply),
         cache_ttl),
        ("replies ⅓ shorter (history too)", replace(conv, reply=shorter, resent_reply=None), cache_ttl),
        ("system prompt ⅓ shorter", replace(conv, system=_third_off(conv.system)), cache_ttl),
    ]
    if cache_ttl is None and table.base.cache_read is not None and conv.system:
        variants.append(("cache the system prompt", conv, "default"))
    out = []
    for name, variant, ttl in variants:
        total = bill_conversation(variant, table, ttl, batch).total_usd
        saving = base - total
        out.append(Lever(name, total, saving, saving / base if base else Decimal(0)))
    return out
