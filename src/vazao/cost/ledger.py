"""The token ledger of a request and the bill it produces under a price table.

A request's prompt splits into tokens read from the provider's cache, tokens written to it and new
(uncached) input; its completion into visible output and reasoning tokens, which providers bill as
output (seed 004_9706bef9153e5571.txt). Dollars are Decimal and exact: tokens × rate / 10⁶."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from vazao.catalog.prices import MTOK, PriceTable, get_price, share_str, usd_str
from vazao.errors import VazaoError
from vazao.resultfiles import from_document

CATEGORIES = ("new_input", "cache_read", "cache_write", "output", "reasoning")


@dataclass(frozen=True)
class TokenLedger:
    new_input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0  # visible answer tokens
    reasoning: int = 0  # thinking tokens, billed as output

    def __post_init__(self) -> None:
        for name in CATEGORIES:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise VazaoError(f"{name} tokens must be a non-negative integer, got {v!r}")

    @property
    def prompt_tokens(self) -> int:
        """Every token sent: what decides a long-context tier."""
        return self.new_input + self.cache_read + self.cache_write

    @property
    def billed_output(self) -> int:
        return self.output + self.reasoning

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.billed_output

    def __add__(self, other: TokenLedger) -> TokenLedger:
        return TokenLedger(*(getattr(self, c) + getattr(other, c) for c in CATEGORIES))

    def times(self, n: int) -> TokenLedger:
        return TokenLedger(*(getattr(self, c) * n for c in CATEGORIES))

    def to_json(self) -> dict:
        return {c: getattr(self, c) for c in CATEGORIES}

    @classmethod
    def from_json(cls, d: Mapping) -> TokenLedger:
        return from_document(cls, d)


@dataclass(frozen=True)
class Charge:
    """Dollars per ledger category."""

    new_input: Decimal = Decimal(0)
    cache_read: Decimal = Decimal(0)
    cache_write: Decimal = Decimal(0)
    output: Decimal = Decimal(0)
    reasoning: Decimal = Decimal(0)

    @property
    def input_usd(self) -> Decimal:
        return self.new_input + self.cache_read + self.cache_write

    @property
    def output_usd(self) -> Decimal:
        """Visible output plus reasoning: everything billed at output rates."""
        return self.output + self.reasoning

    @property
    def total(self) -> Decimal:
        return self.input_usd + self.output_usd

    def __add__(self, other: Charge) -> Charge:
        return Charge(*(getattr(self, c) + getattr(other, c) for c in CATEGORIES))

    def times(self, n: int) -> Charge:
        return Charge(*(getattr(self, c) * n for c in CATEGORIES))

    def to_json(self) -> dict:
        """Dollars per category; 'output' is the visible answer, 'reasoning' the thinking tokens."""
        return {c: usd_str(getattr(self, c)) for c in CATEGORIES}

    @classmethod
    def from_json(cls, d: Mapping) -> Charge:
        return from_document(cls, d)


def price_request(table: PriceTable, ledger: TokenLedger, batch: bool = False,
                  cache_ttl: str | None = None, tier_tokens: int | None = None) -> tuple[Charge, int]:
    """One request's charge and the long-context tier threshold it fell in (0: base tier).
    The tier is chosen by the whole prompt and re-prices the whole request. `tier_tokens` prices a
    ledger that sums several equal requests: the prompt size of one of them picks the tier."""
    size = ledger.prompt_tokens if tier_tokens is None else tier_tokens
    tier = table.tier_for(size)
    rates = table.rates_for(size, batch)
    read_rate = rates.input if rates.cache_read is None else rates.cache_read
    write_rate = rates.write_rate(cache_ttl) if ledger.cache_write else Decimal(0)
    charge = Charge(
        new_input=ledger.new_input * rates.input / MTOK,
        cache_read=ledger.cache_read * read_rate / MTOK,
        cache_write=ledger.cache_write * write_rate / MTOK,
        output=ledger.output * rates.output / MTOK,
        reasoning=ledger.reasoning * rates.reasoning_rate / MTOK,
    )
    return charge, tier.above_input_tokens


@dataclass(frozen=True)
class Line:
    """`requests` requests with these summed tokens and dollars."""

    label: str
    requests: int
    tokens: TokenLedger
    charge: Charge
    tier_above_tokens: int = 0  # the highest long-context tier any of its requests hit

    @property
    def total_usd(self) -> Decimal:
        return self.charge.total

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "requests": self.requests,
            **self.tokens.to_json(),
            "prompt_tokens": self.tokens.prompt_tokens,
            "usd": self.charge.to_json(),
            "total_usd": usd_str(self.total_usd),
            "long_context_tier_above": self.tier_above_tokens or None,
        }

    @classmethod
    def from_json(cls, d: Mapping) -> Line:
        """The tokens are flat beside the label, the dollars under "usd"; the totals are derived."""
        return cls(d["label"], d["requests"], TokenLedger.from_json(d), Charge.from_json(d["usd"]),
                   d.get("long_context_tier_above") or 0)


def line(table: PriceTable, label: str, ledger: TokenLedger, count: int = 1, batch: bool = False,
         cache_ttl: str | None = None) -> Line:
    """`count` identical requests."""
    if count < 0:
        raise VazaoError(f"request count must be non-negative, got {count}")
    charge, tier = price_request(table, ledger, batch, cache_ttl)
    return Line(label, count, ledger.times(count), charge.times(count), tier)


@dataclass(frozen=True)
class Bill:
    price: PriceTable
    lines: tuple[Line, ...]
    batch: bool = False
    cache_ttl: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def tokens(self) -> TokenLedger:
        return sum((ln.tokens for ln in self.lines), TokenLedger())

    @property
    def charge(self) -> Charge:
        return sum((ln.charge for ln in self.lines), Charge())

    @property
    def total_usd(self) -> Decimal:
        return self.charge.total

    @property
    def requests(self) -> int:
        return sum(ln.requests for ln in self.lines)

    @property
    def output_share(self) -> Decimal:
        """Output (with reasoning) dollars as a fraction of the bill."""
        total = self.total_usd
        return self.charge.output_usd / total if total else Decimal(0)

    def to_json(self) -> dict:
        t, c = self.tokens, self.charge
        return {
            "price": self.price.id,
            "price_as_of": self.price.as_of,
            "batch": self.batch,
            "cache_ttl": self.cache_ttl,
            "total_usd": usd_str(self.total_usd),
            "requests": self.requests,
            "input_tokens": t.prompt_tokens,  # every prompt token: new + cached + cache write
            "new_input_tokens": t.new_input,
            "cached_input_tokens": t.cache_read,
            "cache_write_tokens": t.cache_write,
            "output_tokens": t.billed_output,  # billed output, reasoning included
            "reasoning_tokens": t.reasoning,
            "input_usd": usd_str(c.input_usd),  # new input + cache reads + cache writes
            "output_usd": usd_str(c.output_usd),  # visible output + reasoning
            "usd": c.to_json(),  # by category
            "output_share": share_str(self.output_share),
            "lines": [ln.to_json() for ln in self.lines],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, d: Mapping, table: PriceTable | None = None) -> Bill:
        """The bill's lines from its JSON; its totals are derived from them. The JSON names its price
        table (id and date) without the rates: `table` when given (a user's own prices file), else the
        catalog's table of that id, which must be the one the bill was priced at (the same as_of)."""
        if table is None:
            table = get_price(d["price"])
            if table.as_of != d.get("price_as_of"):
                raise VazaoError(f"this bill was priced at {d['price']} as of {d.get('price_as_of')}; the "
                                 f"catalog's is as of {table.as_of}: pass that table to read it back")
        return cls(table, tuple(Line.from_json(ln) for ln in d["lines"]), bool(d.get("batch", False)),
                   d.get("cache_ttl"), tuple(d.get("notes") or ()))


def check_ttl(table: PriceTable, cache_ttl: str | None) -> None:
    """A cache TTL the table prices. A table without write prices caches automatically at no premium:
    it takes `default` or a TTL some provider sells (5m, 1h, …), and refuses anything else (a typo
    such as 7y would otherwise bill silently as if it meant something)."""
    if cache_ttl in (None, "default"):
        return
    ttls = table.base.cache_ttls
    if ttls:
        if cache_ttl not in ttls:
            raise VazaoError(f"{table.id} has no prompt-cache TTL {str(cache_ttl)[:40]!r}; it has: "
                             f"{', '.join(ttls)} (or default)", parameter="cache_ttl")
        return
    from vazao.catalog.prices import all_prices

    sold = sorted({t for p in all_prices() for t in p.base.cache_ttls} - {"default"})
    if cache_ttl not in sold:
        raise VazaoError(f"{table.id} caches automatically, with no TTL to choose; cache TTL "
                         f"{str(cache_ttl)[:40]!r} is none that any provider sells ({', '.join(sold)}, or default)",
                         parameter="cache_ttl")


def make_bill(table: PriceTable, lines: Iterable[Line], batch: bool = False, cache_ttl: str | None = None,
              notes: Iterable[str] = ()) -> Bill:
    check_ttl(table, cache_ttl)
    lines = tuple(lines)
    notes = list(notes)
    tokens = sum((ln.tokens for ln in lines), TokenLedger())
    if tokens.cache_read and table.base.cache_read is None:
        notes.append(f"{table.id} lists no cache-read price: cached tokens billed as input")
    if tokens.cache_write and not table.base.cache_write:
        notes.append(f"{table.id} charges no cache-write premium: cache writes billed as input")
    return Bill(table, lines, batch, cache_ttl, tuple(notes))


def bill_requests(table: PriceTable, ledgers: Iterable[tuple[str, TokenLedger]], batch: bool = False,
                  cache_ttl: str | None = None) -> Bill:
    """One line per (label, ledger) request."""
    return make_bill(table, (line(table, label, led, 1, batch, cache_ttl) for label, led in ledgers),
                     batch, cache_ttl)
