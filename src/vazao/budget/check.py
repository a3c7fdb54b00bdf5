"""Checking a budget: each task priced, its margin, error rate and latency limits against a run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

from vazao.budget.runs import read_run
from vazao.budget.spec import Budget, TaskBudget
from vazao.catalog.prices import usd_str
from vazao.cost.capacity import Check
from vazao.cost.ledger import Charge, TokenLedger, price_request
from vazao.errors import VazaoError
from vazao.resultfiles import from_document
from vazao.results import RunSummary
from vazao.units import fmt_seconds

if TYPE_CHECKING:
    from vazao.bands import Band

# budget metric -> RunSummary field
SUMMARY_FIELD = {"ttft": "ttft_s", "total": "e2e_s", "tpot": "tpot_s", "itl": "itl_s"}


@dataclass(frozen=True)
class BudgetCheck:
    what: str  # 'cost', 'margin', 'ttft_p95', …
    limit: str
    actual: str
    ok: bool | None  # None: not checked (no latency source)
    # a predicted latency's 80% band (low, high) in seconds, and what was held to the limit: "band" (its
    # pessimistic edge, as plan and cost selfhost judge an SLO) or "prediction"; None for a measured one
    band: tuple[float, float] | None = None
    judged_by: str | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: Mapping) -> BudgetCheck:
        return from_document(cls, d)


@dataclass(frozen=True)
class TaskResult:
    name: str
    price: str
    tokens: TokenLedger
    charge: Charge
    cost_usd: Decimal
    margin_usd: Decimal | None
    checks: tuple[BudgetCheck, ...]
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

    @classmethod
    def from_json(cls, d: Mapping) -> TaskResult:
        """The charge is under "usd"; pass and misses are derived from the checks."""
        return from_document(cls, d, charge=Charge.from_json(d["usd"]))


@dataclass(frozen=True)
class BudgetResult:
    tasks: tuple[TaskResult, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.tasks)

    def to_json(self) -> dict:
        return {"kind": "budget", "pass": self.passed, "tasks": [t.to_json() for t in self.tasks],
                "notes": list(self.notes)}

    @classmethod
    def from_json(cls, d: Mapping) -> BudgetResult:
        return from_document(cls, d)


def _usd(d: Decimal) -> str:
    return f"${usd_str(d)}"


# the latency band of a predicted run: (budget metric key, value in s) -> Band, or None
LatencyBand = Callable[[str, float], "Band | None"]


def check_task(task: TaskBudget, summary: RunSummary | None, source: str | None,
               strict: bool = False, band: LatencyBand | None = None, judge: str = "band") -> TaskResult:
    """strict: a latency limit with no run to check it against is a miss, not a skip. band: a predicted
    run's latency band (None: measured); `judge` "band" holds its pessimistic edge to the limit, the one
    judgement plan and cost selfhost make (cost.capacity.Check), "prediction" the value itself."""
    per_call_prompt = -(-task.tokens.prompt_tokens // task.calls)
    charge, _tier = price_request(task.price, task.tokens, task.batch, task.cache_ttl, per_call_prompt)
    cost = charge.total
    checks = []
    if task.max_cost_usd is not None:
        checks.append(BudgetCheck("cost", _usd(task.max_cost_usd), _usd(cost), cost <= task.max_cost_usd))
    margin = None
    if task.value_usd is not None:
        margin = task.success_rate * task.value_usd - cost
        floor = task.min_margin_usd if task.min_margin_usd is not None else Decimal(0)
        checks.append(BudgetCheck("margin", _usd(floor), _usd(margin), margin >= floor))
    if summary is not None:
        checks.append(_error_check(task, summary))
    for key, limit in task.latency.items():
        metric, pct = key.split("_", 1)
        if summary is None:
            checks.append(BudgetCheck(key, fmt_seconds(limit), "not measured", False if strict else None))
            continue
        value = getattr(summary, SUMMARY_FIELD[metric]).get(pct)
        b = band(key, value) if band is not None and value else None
        if value is None:
            checks.append(BudgetCheck(key, fmt_seconds(limit), "no data in run", False))
        elif b is None:
            checks.append(BudgetCheck(key, fmt_seconds(limit), fmt_seconds(value), value <= limit))
        else:  # the one judgement plan and cost selfhost make of a predicted SLO term
            met = Check(key, value, b.high, limit, judge).met
            actual = f"{fmt_seconds(value)} ({fmt_seconds(b.low)}–{fmt_seconds(b.high)})"
            checks.append(BudgetCheck(key, fmt_seconds(limit), actual, met, (b.low, b.high), judge))
    return TaskResult(task.name, task.price.id, task.tokens, charge, cost, margin, tuple(checks), source)


def _error_check(task: TaskBudget, summary: RunSummary) -> BudgetCheck:
    limit = f"{float(task.max_error_rate):.1%}"
    if summary.requests < 1:
        return BudgetCheck("error_rate", limit, "no requests in run", False)
    rate = Decimal(summary.errors) / Decimal(summary.requests)
    actual = f"{float(rate):.1%} ({summary.errors:,} of {summary.requests:,} requests failed)"
    return BudgetCheck("error_rate", limit, actual, rate <= task.max_error_rate)


def check_budget(budget: Budget, measured: Mapping[str, Path] | None = None, measured_all: Path | None = None,
                 simulate: Callable[[TaskBudget], RunSummary] | None = None,
                 simulate_label: str = "simulated", strict: bool = False, band: LatencyBand | None = None,
                 judge: str = "band") -> BudgetResult:
    """Price every task and check it against its latency source: the task's own `measured` file, a
    file in `measured` (task name -> run), `measured_all` (a run for every task), the budget's
    top-level `measured`, else `simulate` (its latencies with `band`, held to the limits as `judge` says)."""
    measured = dict(measured or {})
    unknown = set(measured) - {t.name for t in budget.tasks}
    if unknown:
        raise VazaoError(f"measured runs given for unknown task(s): {', '.join(sorted(unknown))}")
    results, notes = [], []
    cache: dict[Path, RunSummary] = {}
    for task in budget.tasks:
        path = task.measured or measured.get(task.name) or measured_all or budget.measured
        summary, source, predicted = None, None, False
        if path is not None:
            if path not in cache:
                cache[path] = read_run(path)
            summary, source = cache[path], f"measured {path}"
        elif simulate is not None and task.latency:
            summary, source, predicted = simulate(task), simulate_label, True
        elif task.latency and not strict:
            notes.append(f"{task.name}: latency limits not checked (no measured run and no simulator)")
        results.append(check_task(task, summary, source, strict, band if predicted else None, judge))
    return BudgetResult(tuple(results), tuple(notes))
