"""A budget file (seed 004_9706bef9153e5571.txt): per task, latency limits, a token budget, a price, its
value and limits on cost, margin and error rate; read, every field checked, into TaskBudgets.

The format is described in vazao.budget."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.catalog.prices import LineDict, PriceTable, get_price, money, read_yaml
from vazao.cost.ledger import TokenLedger
from vazao.errors import VazaoError
from vazao.units import parse_count, parse_duration

TOP_KEYS = frozenset({"price", "measured", "tasks", "description", "max_error_rate"})
TASK_KEYS = frozenset({"name", "description", "price", "tokens", "calls", "value_usd", "success_rate",
                       "max_cost_usd", "min_margin_usd", "measured", "batch", "cache_ttl", "max_error_rate"})
TOKEN_KEYS = ("cached_input", "new_input", "output", "cache_write", "reasoning")
LATENCY_KEY = re.compile(r"^(ttft|total|tpot|itl)_(p50|p90|p95|p99|mean)$")


@dataclass(frozen=True)
class TaskBudget:
    name: str
    price: PriceTable
    tokens: TokenLedger
    latency: Mapping[str, float]  # 'ttft_p95' -> seconds
    value_usd: Decimal | None = None
    success_rate: Decimal = Decimal(1)
    max_cost_usd: Decimal | None = None
    min_margin_usd: Decimal | None = None
    measured: Path | None = None
    batch: bool = False
    cache_ttl: str | None = None
    calls: int = 1  # LLM requests the task's tokens are spread over (tiers and latency are per call)
    line: int = 0
    max_error_rate: Decimal = Decimal(0)  # failed requests / requests a checked run may have

    @property
    def tokens_per_call(self) -> TokenLedger:
        """The mean call, rounded down to whole tokens (at least one output token)."""
        t, n = self.tokens, self.calls
        return TokenLedger(t.new_input // n, t.cache_read // n, t.cache_write // n,
                           max(1, t.output // n), t.reasoning // n)


@dataclass(frozen=True)
class Budget:
    tasks: tuple[TaskBudget, ...]
    measured: Path | None = None
    path: Path | None = None


def _err(where: str, line: int, msg: str) -> VazaoError:
    return VazaoError(f"{where}:{line}: {msg}" if line else f"{where}: {msg}")


def _tokens(raw: Any, where: str, line: int) -> TokenLedger:
    if not isinstance(raw, dict):
        raise _err(where, line, f"tokens must be a mapping of {', '.join(TOKEN_KEYS)}")
    counts = {}
    for key, value in raw.items():
        kline = raw.line_of(key) if isinstance(raw, LineDict) else line
        if key not in TOKEN_KEYS:
            raise _err(where, kline, f"unknown token field {key!r} (known: {', '.join(TOKEN_KEYS)})")
        if isinstance(value, bool):
            raise _err(where, kline, f"tokens.{key} must be a number of tokens, got {value!r}")
        try:
            n = parse_count(str(value)) if isinstance(value, (str, Decimal)) else value
        except VazaoError as exc:
            raise _err(where, kline, f"tokens.{key}: {exc}") from None
        if not isinstance(n, (int, float)) or not math.isfinite(n) or n < 0 or n != int(n):
            raise _err(where, kline, f"tokens.{key} must be a non-negative whole number of tokens, got {value!r}")
        if n > limits.MAX_TOKENS:
            raise _err(where, kline, f"tokens.{key} must be at most {limits.MAX_TOKENS:,} tokens, got {n:.3g}")
        counts[key] = int(n)
    return TokenLedger(new_input=counts.get("new_input", 0), cache_read=counts.get("cached_input", 0),
                       cache_write=counts.get("cache_write", 0), output=counts.get("output", 0),
                       reasoning=counts.get("reasoning", 0))


def _duration(value: Any, key: str, where: str, line: int) -> float:
    if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
        raise _err(where, line, f"{key}: give a unit, e.g. {value}ms or {value}s")
    if not isinstance(value, str):
        raise _err(where, line, f"{key}: expected a duration such as 800ms, got {value!r}")
    try:
        seconds = parse_duration(value)
    except VazaoError as exc:
        raise _err(where, line, f"{key}: {exc}") from None
    if not math.isfinite(seconds) or seconds <= 0 or seconds > limits.MAX_RUN_S:
        raise _err(where, line, f"{key}: must be a positive, finite duration (at most {limits.MAX_RUN_S:g} s), "
                   f"got {value[:40]!r}")
    return seconds


def _fraction(raw: Any, key: str, where: str, line: int) -> Decimal:
    """A share in [0, 1], written as a decimal (0.01) or an integer (0, 1)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, Decimal)) or not 0 <= raw <= 1:
        raise _err(where, line, f"{key} must be a fraction in [0, 1], got {str(raw)[:40]!r}")
    return Decimal(raw)


def _money(value: Any, key: str, where: str, line: int) -> Decimal:
    try:
        amount = money(value, key)
    except VazaoError as exc:
        raise _err(where, line, str(exc)) from None
    if amount > limits.MAX_BUDGET_USD:  # Decimal arithmetic past ~10^999999 overflows; no task is worth a trillion
        raise _err(where, line, f"{key}: must be at most ${limits.MAX_BUDGET_USD:,}, got {str(value)[:40]!r}")
    return amount


def _path(value: Any, base: Path | None, key: str, where: str, line: int) -> Path:
    if not isinstance(value, str) or not value:
        raise _err(where, line, f"{key} must be a file path")
    p = Path(value).expanduser()
    return p if p.is_absolute() or base is None else base / p


@dataclass(frozen=True)
class _Defaults:
    """What a budget file's top level gives every task, and where to report a task's error."""

    where: str
    base: Path | None
    extra_prices: Mapping[str, PriceTable] | None
    price: Any  # the top-level price name, None when absent
    price_line: int
    tasks_line: int
    max_error_rate: Decimal


def _top_level(data: Any, where: str, base: Path | None,
               extra_prices: Mapping[str, PriceTable] | None) -> tuple[_Defaults, Path | None, list]:
    """The file's top-level fields: (task defaults, top-level measured run, raw task list)."""
    if not isinstance(data, LineDict):
        raise VazaoError(f"{where}: expected a mapping with a 'tasks:' list")
    for key in data:
        if key not in TOP_KEYS:
            raise _err(where, data.line_of(key), f"unknown field {key!r} (known: {', '.join(sorted(TOP_KEYS))})")
    measured = _path(data["measured"], base, "measured", where, data.line_of("measured")) \
        if data.get("measured") else None
    raw_tasks = data.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise _err(where, data.line_of("tasks"), "'tasks' must be a non-empty list")
    if len(raw_tasks) > limits.MAX_TASKS:
        raise _err(where, data.line_of("tasks"), f"{len(raw_tasks):,} tasks; at most {limits.MAX_TASKS:,}")
    errors = (_fraction(data["max_error_rate"], "max_error_rate", where, data.line_of("max_error_rate"))
              if data.get("max_error_rate") is not None else Decimal(0))
    return (_Defaults(where, base, extra_prices, data.get("price"), data.line_of("price"), data.line_of("tasks"),
                      errors), measured, raw_tasks)


def _latency_limits(raw: LineDict, where: str) -> dict[str, float]:
    """The task's latency limits ('ttft_p95' -> seconds); any other unknown field is an error."""
    latency: dict[str, float] = {}
    for key in raw:
        if key not in TASK_KEYS and not LATENCY_KEY.match(str(key)):
            raise _err(where, raw.line_of(key), f"unknown field {key!r} in task {raw.get('name', '?')!r} "
                       f"(known: {', '.join(sorted(TASK_KEYS))}, and latency limits like ttft_p95, total_p95)")
        if LATENCY_KEY.match(str(key)):
            latency[key] = _duration(raw[key], key, where, raw.line_of(key))
    return latency


def _task_name(raw: LineDict, names: set[str], where: str) -> str:
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _err(where, raw.line, "every task needs a name")
    if name in names:
        raise _err(where, raw.line_of("name"), f"duplicate task name {name!r}")
    names.add(name)
    return name


def _task_price(raw: LineDict, name: str, d: _Defaults) -> PriceTable:
    price_name = raw.get("price", d.price)
    if not price_name:
        raise _err(d.where, raw.line, f"task {name!r} has no price (set 'price:' on the task or at the top)")
    try:
        return get_price(str(price_name), d.extra_prices)
    except VazaoError as exc:
        raise _err(d.where, raw.line_of("price") if "price" in raw else d.price_line, str(exc)) from None


def _optional(raw: LineDict, key: str, read: Callable[[Any, str, str, int], Any], where: str, default: Any = None):
    """raw[key] read by `read(value, key, where, line)`, or `default` when absent or null."""
    return read(raw[key], key, where, raw.line_of(key)) if raw.get(key) is not None else default


def _calls(raw: LineDict, where: str) -> int:
    calls = raw.get("calls", 1)
    if isinstance(calls, bool) or not isinstance(calls, int) or not 1 <= calls <= limits.MAX_CALLS:
        raise _err(where, raw.line_of("calls"), f"calls must be an integer from 1 to {limits.MAX_CALLS:,}, "
                   f"got {str(calls)[:40]!r}")
    return calls


def _batch_and_ttl(raw: LineDict, price: PriceTable, where: str) -> tuple[bool, str | None]:
    """batch (true/false) and cache_ttl, each checked against what the price table offers."""
    batch = raw.get("batch", False)
    if not isinstance(batch, bool):
        raise _err(where, raw.line_of("batch"), "batch must be true or false")
    cache_ttl = raw.get("cache_ttl")
    if cache_ttl is not None:
        cache_ttl = str(cache_ttl)
        try:
            price.base.write_rate(cache_ttl)
        except VazaoError as exc:
            raise _err(where, raw.line_of("cache_ttl"), str(exc)) from None
    if batch and not price.has_batch:
        raise _err(where, raw.line_of("batch"), f"{price.id} has no batch price")
    return batch, cache_ttl


def _task(raw: Any, names: set[str], d: _Defaults) -> TaskBudget:
    where = d.where
    if not isinstance(raw, LineDict):
        raise _err(where, d.tasks_line, "each task must be a mapping")
    latency = _latency_limits(raw, where)
    name = _task_name(raw, names, where)
    price = _task_price(raw, name, d)
    if "tokens" not in raw:
        raise _err(where, raw.line, f"task {name!r} has no tokens budget")
    tokens = _tokens(raw["tokens"], where, raw.line_of("tokens"))
    calls = _calls(raw, where)
    value = _optional(raw, "value_usd", _money, where)
    success = _optional(raw, "success_rate", _fraction, where, Decimal(1))
    max_errors = _optional(raw, "max_error_rate", _fraction, where, d.max_error_rate)
    batch, cache_ttl = _batch_and_ttl(raw, price, where)
    return TaskBudget(
        name=name, price=price, tokens=tokens, latency=latency, value_usd=value, success_rate=success,
        max_cost_usd=_optional(raw, "max_cost_usd", _money, where),
        min_margin_usd=_optional(raw, "min_margin_usd", _money, where),
        measured=_path(raw["measured"], d.base, "measured", where, raw.line_of("measured"))
        if raw.get("measured") else None,
        batch=batch, cache_ttl=cache_ttl, calls=calls, line=raw.line, max_error_rate=max_errors,
    )


def parse_budget(text: str, where: str = "budget", base: Path | None = None,
                 extra_prices: Mapping[str, PriceTable] | None = None) -> Budget:
    """A budget file's text; `where` names it in errors, `base` resolves its relative run paths."""
    defaults, measured, raw_tasks = _top_level(read_yaml(text, where), where, base, extra_prices)
    names: set[str] = set()
    return Budget(tuple(_task(raw, names, defaults) for raw in raw_tasks), measured, None)


def load_budget(path: str | Path, extra_prices: Mapping[str, PriceTable] | None = None) -> Budget:
    p = Path(path).expanduser()
    text = inputs.read_text(inputs.input_stream(p, "budget file"), "budget file", max_bytes=limits.MAX_BUDGET_BYTES)
    b = parse_budget(text, f"budget file {inputs._show(p)}", p.parent, extra_prices)
    return Budget(b.tasks, b.measured, p)
