"""Bill real request logs: one JSON object per line holding a usage object.

Accepted per line (the usage may sit at the top level, under "usage", or under response.body.usage
as in OpenAI batch output files):
- Chat Completions: prompt_tokens (cached included), completion_tokens (reasoning included),
  prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens.
- Responses API: input_tokens, output_tokens, input_tokens_details.cached_tokens,
  output_tokens_details.reasoning_tokens (same inclusive meaning).
- Anthropic Messages: input_tokens (new input only), cache_read_input_tokens,
  cache_creation_input_tokens, output_tokens.
Each request is priced on its own (a long-context tier applies per request), then summed per model
label. A line that is not such an object is counted and reported; the rest are billed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vazao.catalog.prices import PriceTable
from vazao.cost.ledger import Bill, Charge, Line, TokenLedger, make_bill, price_request
from vazao.errors import VazaoError

MAX_REPORTED = 20


class UsageError(ValueError):
    """A line that holds no usable usage object."""


def _count(d: Mapping, key: str, default: int | None = None) -> int:
    if key not in d or d[key] is None:
        if default is None:
            raise UsageError(f"missing {key}")
        return default
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise UsageError(f"{key} is not a non-negative integer: {v!r}")
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
    return str(model) if model else "(no model field)"


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
    bill: Bill
    malformed: int
    malformed_lines: tuple[tuple[int, str], ...]  # (line number, reason), the first MAX_REPORTED

    def to_json(self) -> dict:
        return {**self.bill.to_json(), "malformed": self.malformed,
                "malformed_lines": [{"line": n, "reason": r} for n, r in self.malformed_lines]}


def bill_usage(path: str | Path, table: PriceTable, batch: bool = False,
               cache_ttl: str | None = None) -> UsageBill:
    p = Path(path).expanduser()
    groups: dict[str, tuple[int, TokenLedger, Charge, int]] = {}
    bad: list[tuple[int, str]] = []
    malformed = 0
    try:
        fh = p.open(encoding="utf-8")
    except OSError as exc:
        raise VazaoError(f"cannot read usage log {p}: {exc.strerror or exc}") from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            text = raw.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
                led = ledger_from_usage(_find_usage(obj))
            except (ValueError, UsageError) as exc:  # JSONDecodeError is a ValueError
                malformed += 1
                if len(bad) < MAX_REPORTED:
                    reason = "invalid JSON" if isinstance(exc, json.JSONDecodeError) else str(exc)
                    bad.append((n, reason))
                continue
            label = _model_of(obj)
            charge, tier = price_request(table, led, batch, cache_ttl)
            count, tokens, total, top = groups.get(label, (0, TokenLedger(), Charge(), 0))
            groups[label] = (count + 1, tokens + led, total + charge, max(top, tier))
    notes = [f"every one of the log's {malformed} lines was malformed"] if malformed and not groups else []
    lines = [Line(label, c, t, ch, tier) for label, (c, t, ch, tier) in sorted(groups.items())]
    return UsageBill(make_bill(table, lines, batch, cache_ttl, notes), malformed, tuple(bad))
