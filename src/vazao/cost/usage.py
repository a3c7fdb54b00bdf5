"""Bill real request logs: one JSON object per line holding a usage object.

Accepted per line (the usage may sit at the top level, under "usage", or under response.body.usage
as in OpenAI batch output files):
- Chat Completions: prompt_tokens (cached included), completion_tokens (reasoning included),
  prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens.
- Responses API: input_tokens, output_tokens, input_tokens_details.cached_tokens,
  output_tokens_details.reasoning_tokens (same inclusive meaning).
- Anthropic Messages: input_tokens (new input only), cache_read_input_tokens,
  cache_creation_input_tokens, output_tokens.
Each request is priced on its own (a long-context tier applies per request) at the price-catalog entry
of the model it names (a dated snapshot such as gpt-5-mini-2025-08-07 resolves to gpt-5-mini), then
summed per model label. A line that names no model, or one the catalog does not price, is billed at
the fallback price and reported as such. A line that is not such an object is counted and reported;
the rest are billed. A log in which no line can be read is an error."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.catalog.prices import PriceTable, get_price
from vazao.cost.ledger import Bill, Charge, Line, TokenLedger, price_request
from vazao.errors import VazaoError

REPORTED_LINES = 20
NO_MODEL = "(no model field)"
# A dated snapshot of a catalog model: gpt-5-mini-2025-08-07, claude-sonnet-4-5-20250929.
_SNAPSHOT = re.compile(r"[-@](?:\d{4}-\d{2}-\d{2}|\d{8})$")


class UnpricedModelError(VazaoError):
    """A usage line whose model no price table lists, with no fallback price given."""


class UsageError(ValueError):
    """A line that holds no usable usage object."""


def _count(d: Mapping, key: str, default: int | None = None) -> int:
    if key not in d or d[key] is None:
        if default is None:
            raise UsageError(f"missing {key}")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise UsageError(f"{key} is not a non-negative integer: {repr(v)[:40]}")
    if v > limits.MAX_TOKENS:
        raise UsageError(f"{key} is {v:.3g} tokens: past any request")
    return v


def _details(d: Mapping, key: str) -> Mapping:
    v = d.get(key) or {}
    if not isinstance(v, Mapping):
        raise UsageError(f"{key} is not an object")
    return v


def _body(obj: Mapping) -> Mapping:
    """response.body of an OpenAI batch output line, else {}."""
    resp = obj.get("response")
    body = resp.get("body") if isinstance(resp, Mapping) else None
    return body if isinstance(body, Mapping) else {}


def _model_of(obj: Mapping) -> str:
    model = obj.get("model") or _body(obj).get("model")
    if not isinstance(model, str) or not model.strip():
        return NO_MODEL
    return model.strip()[:limits.MAX_LABEL]


def _find_usage(obj: Any) -> Mapping:
    if not isinstance(obj, Mapping):
        raise UsageError("not a JSON object")
    for cand in (obj.get("usage"), _body(obj).get("usage"), obj):
        if isinstance(cand, Mapping) and any(k in cand for k in ("prompt_tokens", "input_tokens")):
            return cand
    raise UsageError("no usage object (prompt_tokens/input_tokens)")


def ledger_from_usage(usage: Mapping) -> TokenLedger:
    """A usage object in any of the three dialects → a TokenLedger."""
    if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:  # Anthropic
        return TokenLedger(
            new_input=_count(usage, "input_tokens"),
            cache_read=_count(usage, "cache_read_input_tokens", 0),
            cache_write=_count(usage, "cache_creation_input_tokens", 0),
            output=_count(usage, "output_tokens"),
            reasoning=0,  # Anthropic counts thinking inside output_tokens, billed at the output rate
        )
    if "prompt_tokens" in usage:  # Chat Completions
        prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens", 0)
        cached = _count(_details(usage, "prompt_tokens_details"), "cached_tokens", 0)
        reasoning = _count(_details(usage, "completion_tokens_details"), "reasoning_tokens", 0)
    else:  # Responses API
        prompt, completion = _count(usage, "input_tokens"), _count(usage, "output_tokens", 0)
        cached = _count(_details(usage, "input_tokens_details"), "cached_tokens", 0)
        reasoning = _count(_details(usage, "output_tokens_details"), "reasoning_tokens", 0)
    if cached > prompt:
        raise UsageError(f"cached_tokens {cached} exceed the prompt's {prompt}")
    if reasoning > completion:
        raise UsageError(f"reasoning_tokens {reasoning} exceed the completion's {completion}")
    return TokenLedger(new_input=prompt - cached, cache_read=cached, output=completion - reasoning,
                       reasoning=reasoning)


@dataclass(frozen=True)
class UsageBill:
    bill: Bill  # bill.price is the fallback table (or the first table used when there is none)
    malformed: int
    malformed_lines: tuple[tuple[int, str], ...]  # (line number, reason), the first REPORTED_LINES
    prices: tuple[tuple[str, str], ...] = ()  # (model label, price id it was billed at)
    fallback_requests: int = 0  # lines billed at the fallback price
    fallback_models: tuple[str, ...] = ()  # their model labels (NO_MODEL for lines that name none)

    def to_json(self) -> dict:
        return {**self.bill.to_json(), "malformed": self.malformed,
                "malformed_lines": [{"line": n, "reason": r} for n, r in self.malformed_lines],
                "prices": {label: pid for label, pid in self.prices},
                "fallback": {"price": self.bill.price.id if self.fallback_requests else None,
                             "requests": self.fallback_requests, "models": list(self.fallback_models)}}

    @classmethod
    def from_json(cls, d: Mapping, table: PriceTable | None = None) -> UsageBill:
        """`table`: the bill's own price table, as Bill.from_json takes it (default: the catalog's)."""
        fallback = d.get("fallback") or {}
        return cls(Bill.from_json(d, table), d.get("malformed", 0),
                   tuple((m["line"], m["reason"]) for m in d.get("malformed_lines") or ()),
                   tuple((d["prices"] or {}).items()), fallback.get("requests", 0),
                   tuple(fallback.get("models") or ()))


class _Pricer:
    """The table for each model label, resolved once per label: the catalog entry (or the user's
    prices file) of the model, else the fallback."""

    def __init__(self, fallback: PriceTable | None, extra: Mapping[str, PriceTable] | None):
        self.fallback, self.extra = fallback, extra
        self.tables: dict[str, PriceTable | None] = {}

    def own(self, label: str) -> PriceTable | None:
        if label not in self.tables:
            self.tables[label] = None if label == NO_MODEL else self._resolve(label)
        return self.tables[label]

    def _resolve(self, label: str) -> PriceTable | None:
        for name in dict.fromkeys((label, _SNAPSHOT.sub("", label))):
            try:
                return get_price(name, self.extra)
            except VazaoError:
                continue
        return None


def _notes(tables: Mapping[str, PriceTable], tokens: Mapping[str, TokenLedger]) -> list[str]:
    notes = []
    for pid, t in tables.items():
        led = tokens[pid]
        if led.cache_read and t.base.cache_read is None:
            notes.append(f"{pid} lists no cache-read price: cached tokens billed as input")
        if led.cache_write and not t.base.cache_write:
            notes.append(f"{pid} charges no cache-write premium: cache writes billed as input")
    return notes


def bill_usage(path: str | Path, table: PriceTable | None, batch: bool = False, cache_ttl: str | None = None,
               extra_prices: Mapping[str, PriceTable] | None = None) -> UsageBill:
    """Bill a usage log, each line at its own model's price; `table` is the fallback for lines
    whose model is missing or unpriced (None: such lines are an error)."""
    p = Path(path).expanduser()
    pricer = _Pricer(table, extra_prices)
    groups: dict[str, tuple[int, TokenLedger, Charge, int]] = {}
    used: dict[str, PriceTable] = {}
    used_tokens: dict[str, TokenLedger] = {}
    label_price: dict[str, str] = {}
    fallback_n, fallback_models = 0, {}
    bad: list[tuple[int, str]] = []
    malformed = seen = 0
    for n, raw in inputs.iter_lines(inputs.input_stream(p, "usage log"), "usage log"):
        text = (raw or "").strip() if raw is not None else None
        if text == "":
            continue
        seen += 1
        try:
            if text is None:
                raise UsageError("not UTF-8 text, or a line longer than 16 MiB")
            obj = _loads(text, n)
            led = ledger_from_usage(_find_usage(obj))
        except UsageError as exc:
            malformed += 1
            if len(bad) < REPORTED_LINES:
                bad.append((n, str(exc)))
            continue
        label = _model_of(obj)
        own = pricer.own(label)
        priced = own or table
        if priced is None:
            raise UnpricedModelError(f"usage log {inputs._show(p)} line {n}: no price for model {label!r}; give "
                                     "`table`, a fallback price for lines whose model the price catalog does not "
                                     "list", parameter="table")
        if own is None:
            fallback_n += 1
            fallback_models[label] = None
        try:
            charge, tier = price_request(priced, led, batch, cache_ttl)
        except VazaoError as exc:
            raise VazaoError(f"usage log {inputs._show(p)} line {n} (model {label!r}, price {priced.id}): "
                             f"{exc}") from None
        used[priced.id] = priced
        used_tokens[priced.id] = used_tokens.get(priced.id, TokenLedger()) + led
        label_price.setdefault(label, priced.id)
        count, tokens, total, top = groups.get(label, (0, TokenLedger(), Charge(), 0))
        groups[label] = (count + 1, tokens + led, total + charge, max(top, tier))
    if not seen:
        raise VazaoError(f"usage log {inputs._show(p)} is empty: no line to bill")
    if not groups:
        detail = f"; line {bad[0][0]}: {bad[0][1]}" if bad else ""
        raise VazaoError(f"usage log {inputs._show(p)}: no line holds a usage object ({seen:,} non-empty "
                         f"line{'s' if seen != 1 else ''}{detail})")
    lines = [Line(label, c, t, ch, tier) for label, (c, t, ch, tier) in sorted(groups.items())]
    head = table or next(iter(used.values()))
    notes = _notes(used, used_tokens)
    bill = Bill(head, tuple(lines), batch, cache_ttl, tuple(notes))
    return UsageBill(bill, malformed, tuple(bad), tuple(sorted(label_price.items())), fallback_n,
                     tuple(fallback_models))


def _loads(text: str, n: int) -> Any:
    try:
        return inputs.loads_json_line(text, n)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
