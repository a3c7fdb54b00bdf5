"""Budgets in the spec (seed 004_9706bef9153e5571.txt, "Ponha o orçamento na especificação"): per
user-visible task, p95 time to first token, p95 total time and a token budget split into cached
input, new input and output; with the value of a successful task, a cost per task and a margin.

`check` prices each task's tokens, compares latency with a measured run (a `vazao bench` JSON with a
"summary") or a simulated one, and says which limits each task misses.

Budget file:
    price: claude-sonnet-5.5          # default price for every task
    measured: run.json                # optional: default latency source (relative to this file)
    tasks:
      - name: support-reply
        ttft_p95: 800ms               # latency limits: ttft|total|tpot|itl _ p50|p90|p95|p99|mean
        total_p95: 8s
        tokens: {cached_input: 6000, new_input: 1200, output: 250}   # also cache_write, reasoning
        calls: 1                      # LLM requests per task: tiers and latency limits are per call
        value_usd: "0.05"             # value of a successful task
        success_rate: 0.9             # optional: share of tasks that succeed (default 1)
        max_cost_usd: "0.02"          # optional cap on the cost per task
        min_margin_usd: "0"           # optional floor on the margin (default 0 when value is given)
        max_error_rate: 0.01          # optional: share of a run's requests allowed to fail (default 0)

The error rate is part of every budget: whenever a run (measured or simulated) is checked, its failed
requests over its requests must not exceed `max_error_rate` (the task's, else the file's top-level
one, else 0): a run whose requests failed cannot pass on the latencies of the few that succeeded.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from vazao import inputs
from vazao.catalog.prices import LineDict, PriceTable, get_price, money, read_yaml, usd_str
from vazao.cost.ledger import Charge, TokenLedger, price_request
from vazao.errors import VazaoError
from vazao.results import Latency, RunSummary
from vazao.units import fmt_seconds, parse_count, parse_duration

TOP_KEYS = frozenset({"price", "measured", "tasks", "description", "max_error_rate"})
TASK_KEYS = frozenset({"name", "description", "price", "tokens", "calls", "value_usd", "success_rate",
                       "max_cost_usd", "min_margin_usd", "measured", "batch", "cache_ttl", "max_error_rate"})
MAX_BUDGET_BYTES = 4 * 2**20  # a budget file is a few kB
MAX_TASKS = 10_000
MAX_TASK_TOKENS = 2**40  # tokens of one category in one task (10^12: far past any task)
MAX_CALLS = 1_000_000
MAX_USD = Decimal(10**12)
MAX_LIMIT_S = 1e7  # a latency limit (~116 days)
MAX_RUN_BYTES = 256 * 2**20  # a `vazao bench --json` output may carry every record
TOKEN_KEYS = ("cached_input", "new_input", "output", "cache_write", "reasoning")
LATENCY_KEY = re.compile(r"^(ttft|total|tpot|itl)_(p50|p90|p95|p99|mean)$")
# budget metric -> RunSummary field
SUMMARY_FIELD = {"ttft": "ttft_s", "total": "e2e_s", "tpot": "tpot_s", "itl": "itl_s"}


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
        if n > MAX_TASK_TOKENS:
            raise _err(where, kline, f"tokens.{key} must be at most {MAX_TASK_TOKENS:,} tokens, got {n:.3g}")
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
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_LIMIT_S:
        raise _err(where, line, f"{key}: must be a positive, finite duration (at most {MAX_LIMIT_S:g} s), "
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
    if amount > MAX_USD:  # Decimal arithmetic past ~10^999999 overflows; no task is worth a trillion
        raise _err(where, line, f"{key}: must be at most ${MAX_USD:,}, got {str(value)[:40]!r}")
    return amount


def _path(value: Any, base: Path | None, key: str, where: str, line: int) -> Path:
    if not isinstance(value, str) or not value:
        raise _err(where, line, f"{key} must be a file path")
    p = Path(value).expanduser()
    return p if p.is_absolute() or base is None else base / p


def parse_budget(text: str, where: str = "budget", base: Path | None = None,
                 extra_prices: Mapping[str, PriceTable] | None = None) -> Budget:
    data = read_yaml(text, where)
    if not isinstance(data, LineDict):
        raise VazaoError(f"{where}: expected a mapping with a 'tasks:' list")
    for key in data:
        if key not in TOP_KEYS:
            raise _err(where, data.line_of(key), f"unknown field {key!r} (known: {', '.join(sorted(TOP_KEYS))})")
    default_price = data.get("price")
    measured = _path(data["measured"], base, "measured", where, data.line_of("measured")) \
        if data.get("measured") else None
    raw_tasks = data.get("tasks")
    if not isinstance(raw_tasks, list) or not raw_tasks:
        raise _err(where, data.line_of("tasks"), "'tasks' must be a non-empty list")
    if len(raw_tasks) > MAX_TASKS:
        raise _err(where, data.line_of("tasks"), f"{len(raw_tasks):,} tasks; at most {MAX_TASKS:,}")
    default_errors = (_fraction(data["max_error_rate"], "max_error_rate", where, data.line_of("max_error_rate"))
                      if data.get("max_error_rate") is not None else Decimal(0))
    tasks, names = [], set()
    for raw in raw_tasks:
        if not isinstance(raw, LineDict):
            raise _err(where, data.line_of("tasks"), "each task must be a mapping")
        line = raw.line
        latency: dict[str, float] = {}
        for key in raw:
            if key not in TASK_KEYS and not LATENCY_KEY.match(str(key)):
                raise _err(where, raw.line_of(key), f"unknown field {key!r} in task {raw.get('name', '?')!r} "
                           f"(known: {', '.join(sorted(TASK_KEYS))}, and latency limits like ttft_p95, total_p95)")
            if LATENCY_KEY.match(str(key)):
                latency[key] = _duration(raw[key], key, where, raw.line_of(key))
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _err(where, line, "every task needs a name")
        if name in names:
            raise _err(where, raw.line_of("name"), f"duplicate task name {name!r}")
        names.add(name)
        price_name = raw.get("price", default_price)
        if not price_name:
            raise _err(where, line, f"task {name!r} has no price (set 'price:' on the task or at the top)")
        try:
            price = get_price(str(price_name), extra_prices)
        except VazaoError as exc:
            at = raw.line_of("price") if "price" in raw else data.line_of("price")
            raise _err(where, at, str(exc)) from None
        if "tokens" not in raw:
            raise _err(where, line, f"task {name!r} has no tokens budget")
        tokens = _tokens(raw["tokens"], where, raw.line_of("tokens"))
        calls = raw.get("calls", 1)
        if isinstance(calls, bool) or not isinstance(calls, int) or not 1 <= calls <= MAX_CALLS:
            raise _err(where, raw.line_of("calls"), f"calls must be an integer from 1 to {MAX_CALLS:,}, "
                       f"got {str(calls)[:40]!r}")
        value = _money(raw["value_usd"], "value_usd", where, raw.line_of("value_usd")) \
            if raw.get("value_usd") is not None else None
        success = Decimal(1)
        if raw.get("success_rate") is not None:
            success = _fraction(raw["success_rate"], "success_rate", where, raw.line_of("success_rate"))
        max_errors = default_errors
        if raw.get("max_error_rate") is not None:
            max_errors = _fraction(raw["max_error_rate"], "max_error_rate", where, raw.line_of("max_error_rate"))
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
        tasks.append(TaskBudget(
            name=name, price=price, tokens=tokens, latency=latency, value_usd=value, success_rate=success,
            max_cost_usd=_money(raw["max_cost_usd"], "max_cost_usd", where, raw.line_of("max_cost_usd"))
            if raw.get("max_cost_usd") is not None else None,
            min_margin_usd=_money(raw["min_margin_usd"], "min_margin_usd", where, raw.line_of("min_margin_usd"))
            if raw.get("min_margin_usd") is not None else None,
            measured=_path(raw["measured"], base, "measured", where, raw.line_of("measured"))
            if raw.get("measured") else None,
            batch=batch, cache_ttl=cache_ttl, calls=calls, line=line, max_error_rate=max_errors,
        ))
    return Budget(tuple(tasks), measured, None)


def load_budget(path: str | Path, extra_prices: Mapping[str, PriceTable] | None = None) -> Budget:
    p = Path(path).expanduser()
    text = inputs.read_text(inputs.input_stream(p, "budget file"), "budget file", max_bytes=MAX_BUDGET_BYTES)
    b = parse_budget(text, f"budget file {inputs._show(p)}", p.parent, extra_prices)
    return Budget(b.tasks, b.measured, p)


def read_run(path: str | Path) -> RunSummary:
    """A measured run: `vazao bench --json` output (an object with "summary") or a bare RunSummary."""
    p = Path(path).expanduser()
    where = f"run file {inputs._show(p)}"
    data = inputs.read_json(inputs.input_stream(p, "run file"), "run file", max_bytes=MAX_RUN_BYTES)
    summary = data.get("summary", data) if isinstance(data, dict) else None
    if not isinstance(summary, dict) or "ttft_s" not in summary:
        raise VazaoError(f"{where}: no RunSummary (expected a 'summary' object with ttft_s, e2e_s, …)")
    return summary_from_json(summary, where)


_LATENCY_FIELDS = ("ttft_s", "itl_s", "tpot_s", "e2e_s")
_RATE_FIELDS = ("duration_s", "request_throughput_per_s", "output_tokens_per_s", "total_tokens_per_s")


def summary_from_json(d: Mapping[str, Any], where: str = "run") -> RunSummary:
    """A RunSummary from its JSON, every number checked: counts whole and non-negative, errors at
    most requests, times and rates finite and non-negative (a latency may be null: no data)."""
    def num(key: str, value: Any, integer: bool = False) -> float | int:
        return inputs.number(value, f"{where}: summary.{key}", minimum=0, integer=integer)

    requests = int(num("requests", d.get("requests"), True))
    errors = int(num("errors", d.get("errors", 0), True))
    if errors > requests:
        raise VazaoError(f"{where}: summary.errors ({errors:,}) exceeds summary.requests ({requests:,})")
    lat = {}
    for key in _LATENCY_FIELDS:
        raw = d.get(key) or {}
        if not isinstance(raw, Mapping):
            raise VazaoError(f"{where}: summary.{key} must be an object of mean, p50, p90, p95, p99")
        lat[key] = Latency(*(None if raw.get(q) is None else float(num(f"{key}.{q}", raw[q]))
                             for q in ("mean", "p50", "p90", "p95", "p99")))
    # null is how --json writes a rate it could not compute (no completed request): no throughput
    rates = {k: 0.0 if d.get(k) is None else float(num(k, d[k])) for k in _RATE_FIELDS}
    goodput = d.get("goodput_requests_per_s")
    source = d.get("source", "measured")
    return RunSummary(
        requests=requests, errors=errors, **lat, **rates,
        goodput_requests_per_s=None if goodput is None else float(num("goodput_requests_per_s", goodput)),
        source=str(source)[:40] if isinstance(source, str) else "measured",
        prompt_tokens=int(num("prompt_tokens", d.get("prompt_tokens", 0), True)),
        output_tokens=int(num("output_tokens", d.get("output_tokens", 0), True)),
    )


def analytic_summary(dep, tokens: TokenLedger, concurrency: int = 1) -> RunSummary:
    """One call's latency on a self-hosted deployment, analytic model (cost.selfhost.analytic_point):
    its cached input served by the engine's prefix cache, `concurrency` requests in flight. Every
    percentile is the point value. Pass a task's tokens_per_call."""
    from vazao.cost.selfhost import analytic_point

    prompt = tokens.prompt_tokens
    if prompt < 1 or tokens.billed_output < 1:
        raise VazaoError("a simulated task needs at least one input and one output token")
    cached = tokens.cache_read if dep.engine.prefix_caching else 0
    p = analytic_point(dep, prompt, tokens.billed_output, concurrency, cached)
    return RunSummary(
        requests=1, errors=0, duration_s=p.e2e_s,
        ttft_s=Latency(p.ttft_s, p.ttft_s, p.ttft_s, p.ttft_s, p.ttft_s),
        itl_s=Latency(p.tpot_s, p.tpot_s, p.tpot_s, p.tpot_s, p.tpot_s),
        tpot_s=Latency(p.tpot_s, p.tpot_s, p.tpot_s, p.tpot_s, p.tpot_s),
        e2e_s=Latency(p.e2e_s, p.e2e_s, p.e2e_s, p.e2e_s, p.e2e_s),
        request_throughput_per_s=1 / p.e2e_s, output_tokens_per_s=tokens.billed_output / p.e2e_s,
        total_tokens_per_s=(prompt + tokens.billed_output) / p.e2e_s, source="analytic",
        prompt_tokens=prompt, output_tokens=tokens.billed_output,
    )


def simulated_summary(dep, tokens: TokenLedger, concurrency: int = 1, requests: int = 100) -> RunSummary | None:
    """One call shape served on the discrete-event simulator, closed loop at `concurrency`, the cached
    input as a prefix shared by every request (the engine's prefix cache)."""
    from vazao.sim import simulate
    from vazao.workload import workload_from_dict

    fresh = tokens.new_input + tokens.cache_write
    out = tokens.billed_output
    if fresh < 1 or out < 1:
        raise VazaoError("a simulated task needs at least one uncached input and one output token per call")
    spec = {"arrival": {"kind": "concurrency", "concurrency": concurrency}, "prompt": fresh, "output": out,
            "requests": requests + concurrency, "warmup": concurrency}
    if tokens.cache_read:
        spec["prefixes"] = [{"id": "task", "tokens": tokens.cache_read, "share": 1.0}]
    return simulate(dep, workload_from_dict(spec, name="budget task")).summary


# ---- checking ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    what: str  # 'cost', 'margin', 'ttft_p95', …
    limit: str
    actual: str
    ok: bool | None  # None: not checked (no latency source)

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TaskResult:
    name: str
    price: str
    tokens: TokenLedger
    charge: Charge
    cost_usd: Decimal
    margin_usd: Decimal | None
    checks: tuple[Check, ...]
    latency_source: str | None

    @property
    def misses(self) -> list[str]:
        return [f"{c.what}: {c.actual} > {c.limit}" if c.what not in ("margin",)
                else f"margin: {c.actual} < {c.limit}" for c in self.checks if c.ok is False]

    @property
    def passed(self) -> bool:
        return all(c.ok is not False for c in self.checks)

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "price": self.price,
            "cost_usd": usd_str(self.cost_usd),
            "margin_usd": None if self.margin_usd is None else usd_str(self.margin_usd),
            "pass": self.passed,
            "misses": self.misses,
            "tokens": self.tokens.to_json(),
            "usd": self.charge.to_json(),
            "checks": [c.to_json() for c in self.checks],
            "latency_source": self.latency_source,
        }


@dataclass(frozen=True)
class BudgetResult:
    tasks: tuple[TaskResult, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.tasks)

    def to_json(self) -> dict:
        return {"pass": self.passed, "tasks": [t.to_json() for t in self.tasks], "notes": list(self.notes)}


def _usd(d: Decimal) -> str:
    return f"${usd_str(d)}"


def check_task(task: TaskBudget, summary: RunSummary | None, source: str | None,
               strict: bool = False) -> TaskResult:
    """strict: a latency limit with no run to check it against is a miss, not a skip."""
    per_call_prompt = -(-task.tokens.prompt_tokens // task.calls)
    charge, _tier = price_request(task.price, task.tokens, task.batch, task.cache_ttl, per_call_prompt)
    cost = charge.total
    checks = []
    if task.max_cost_usd is not None:
        checks.append(Check("cost", _usd(task.max_cost_usd), _usd(cost), cost <= task.max_cost_usd))
    margin = None
    if task.value_usd is not None:
        margin = task.success_rate * task.value_usd - cost
        floor = task.min_margin_usd if task.min_margin_usd is not None else Decimal(0)
        checks.append(Check("margin", _usd(floor), _usd(margin), margin >= floor))
    if summary is not None:
        checks.append(_error_check(task, summary))
    for key, limit in task.latency.items():
        metric, pct = key.split("_", 1)
        if summary is None:
            checks.append(Check(key, fmt_seconds(limit), "not measured", False if strict else None))
            continue
        value = getattr(summary, SUMMARY_FIELD[metric]).get(pct)
        if value is None:
            checks.append(Check(key, fmt_seconds(limit), "no data in run", False))
        else:
            checks.append(Check(key, fmt_seconds(limit), fmt_seconds(value), value <= limit))
    return TaskResult(task.name, task.price.id, task.tokens, charge, cost, margin, tuple(checks), source)


def _error_check(task: TaskBudget, summary: RunSummary) -> Check:
    limit = f"{float(task.max_error_rate):.1%}"
    if summary.requests < 1:
        return Check("error_rate", limit, "no requests in run", False)
    rate = Decimal(summary.errors) / Decimal(summary.requests)
    actual = f"{float(rate):.1%} ({summary.errors:,} of {summary.requests:,} requests failed)"
    return Check("error_rate", limit, actual, rate <= task.max_error_rate)


def check_budget(budget: Budget, measured: Mapping[str, Path] | None = None, measured_all: Path | None = None,
                 simulate: Callable[[TaskBudget], RunSummary] | None = None,
                 simulate_label: str = "simulated", strict: bool = False) -> BudgetResult:
    """Price every task and check it against its latency source: the task's own `measured` file, a
    per-task CLI file, a CLI file for every task, the budget's top-level `measured`, else `simulate`."""
    measured = dict(measured or {})
    unknown = set(measured) - {t.name for t in budget.tasks}
    if unknown:
        raise VazaoError(f"--measured names unknown task(s): {', '.join(sorted(unknown))}")
    results, notes = [], []
    cache: dict[Path, RunSummary] = {}
    for task in budget.tasks:
        path = task.measured or measured.get(task.name) or measured_all or budget.measured
        summary, source = None, None
        if path is not None:
            if path not in cache:
                cache[path] = read_run(path)
            summary, source = cache[path], f"measured {path}"
        elif simulate is not None and task.latency:
            summary, source = simulate(task), simulate_label
        elif task.latency and not strict:
            notes.append(f"{task.name}: latency limits not checked (no --measured run or --simulate)")
        results.append(check_task(task, summary, source, strict))
    return BudgetResult(tuple(results), tuple(notes))
