"""Measured runs read back: the summary rebuilt from a records file (complete or cut short), the
runs a result file holds (vazao's result or records, guidellm's benchmarks.json, `vllm bench serve`
results) as comparison columns, and the simulator's prediction for the workload a run used."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vazao import inputs
from vazao.errors import VazaoError
from vazao.loadgen import foreign
from vazao.loadgen.client import error_kind
from vazao.loadgen.records import LogContents, read_log, read_runs
from vazao.resultfiles import foreign_tool, kind_of
from vazao.results import LATENCIES, SLO, Background, RunSummary, summarize

__all__ = ["Column", "Comparison", "ComparisonRow", "compare", "load_columns", "log_summary", "simulate_like",
           "summary_of_log"]

_RATES = (("req/s", "request_throughput_per_s"), ("output tok/s", "output_tokens_per_s"),
          ("total tok/s", "total_tokens_per_s"))
_COUNTS = (("requests", "requests"), ("errors", "errors"), ("prompt tokens", "prompt_tokens"),
           ("output tokens", "output_tokens"))


@dataclass(frozen=True)
class Column:
    """One run to set beside others: its name, summary and what its file says about it (`data`:
    the result or log summary for vazao's files; tool, level and notes for another tool's)."""

    name: str
    summary: RunSummary
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ComparisonRow:
    """One figure across the runs. unit: "s" (a latency), "rate" (per second) or "count". ratio:
    second run over first, only when exactly two runs are compared and both have the figure
    (None for counts, and where the first is 0)."""

    label: str
    unit: str
    values: tuple[float | int | None, ...]
    ratio: float | None = None
    # each column's 80% band of this figure (a prediction's: SimResult.bands), None where it has none
    bands: tuple[tuple[float, float] | None, ...] = ()

    @property
    def inside(self) -> bool | None:
        """A measured first column against a predicted second: whether the measurement lies in the band."""
        if len(self.values) != 2 or len(self.bands) != 2 or self.bands[0] is not None or self.bands[1] is None:
            return None
        v = self.values[0]
        return None if v is None else self.bands[1][0] <= v <= self.bands[1][1]


@dataclass(frozen=True)
class Comparison:
    names: tuple[str, ...]
    rows: tuple[ComparisonRow, ...]

    @property
    def paired(self) -> bool:
        """Exactly two runs: the rows carry the second's ratio to the first."""
        return len(self.names) == 2


def _ratio(values: tuple) -> float | None:
    if len(values) != 2:
        return None
    a, b = values
    return None if a is None or b is None or a == 0 else b / a


def compare(columns: list[Column]) -> Comparison:
    """Runs side by side: latency percentiles, throughputs and counts, with ratios for a pair."""
    summaries = [c.summary for c in columns]

    def bands(key: str) -> tuple[tuple[float, float] | None, ...]:
        found = [(c.data.get("bands") or {}).get(key) for c in columns]
        return tuple(None if b is None else (float(b[0]), float(b[1])) for b in found)

    rows = []
    for label, key in LATENCIES:
        for st in ("p50", "p95", "p99"):
            vals = tuple(getattr(s, key).get(st) for s in summaries)
            # a simulated run's bands are keyed as its figures: ttft_p95_s, tpot_p50_s, …
            rows.append(ComparisonRow(f"{label} {st}", "s", vals, _ratio(vals), bands(f"{key[:-2]}_{st}_s")))
    for label, key in _RATES:
        vals = tuple(getattr(s, key) for s in summaries)
        rows.append(ComparisonRow(label, "rate", vals, _ratio(vals), bands(key)))
    for label, key in _COUNTS:
        rows.append(ComparisonRow(label, "count", tuple(getattr(s, key) for s in summaries)))
    return Comparison(tuple(c.name for c in columns), tuple(rows))


def log_summary(path: Path, slo: SLO | None, run: str | None = None) -> dict[str, Any]:
    """The summary of one run of a records file, with its errors, counts and run facts."""
    return summary_of_log(read_log(path, run), path, slo)


def summary_of_log(log: LogContents, path: Path, slo: SLO | None) -> dict[str, Any]:
    from vazao.loadgen.session import DEFINITIONS

    if not log.records:
        what = "warm-up requests only" if log.warmup else "no request records"
        raise VazaoError(f"{path} (run {log.run_id}) holds {what}: nothing to summarize "
                         "(the run ended before any measured request finished)")
    levels = {int(p.get("index", i)): {k: v for k, v in p.items() if k in ("concurrency", "rate")}
              for i, p in enumerate(log.points)}
    points = []
    if len(log.by_point) > 1 or log.points:
        for idx in sorted(log.by_point):
            recs = log.by_point[idx]
            points.append({**levels.get(idx, {}), "summary": summarize(
                recs, slo, background=Background.of(log.warmup_by_point.get(idx, ())))})
    summary = (points[-1]["summary"] if points
               else summarize(log.records, slo, background=Background.of(log.warmup)))
    errors: dict[str, int] = {}
    for r in log.records:
        if r.error:
            k = error_kind(r.error)
            errors[k] = errors.get(k, 0) + 1
    out: dict[str, Any] = {"summary": summary, "errors": errors, "records": len(log.records),
                           "warmup_excluded": len(log.warmup), "malformed_lines": log.malformed,
                           "complete": bool(log.notes.get("end")),
                           "run": {"run_id": log.run_id,
                                   **{k: log.meta.get(k) for k in ("url", "api", "workload", "started")
                                      if k in log.meta}},
                           "definitions": DEFINITIONS}
    if points:
        out["points"] = points
    return out


def load_columns(path: Path, slo: SLO | None, wanted: list[str]) -> list[Column]:
    """A column for each run a file holds: a vazao result JSON, the run(s) of a records JSONL (its
    only run, else each of `wanted`, named file#run), a guidellm benchmarks.json (one per benchmark,
    named file#strategy) or a `vllm bench serve` result. The kind is read from the content."""
    inputs.input_file(path, "bench result", allow_special=True)
    if path.suffix == ".jsonl":  # streamed: a records file can be far larger than a result
        return _records_runs(read_runs(path), path, slo, wanted)
    docs = foreign.read_documents(path)
    first = docs[0]
    if len(docs) > 1 and isinstance(first, dict) and first.get("kind") == "meta":  # records, named .json
        return _records_runs(read_runs(path), path, slo, wanted)
    if len(docs) == 1 and isinstance(first, dict) and isinstance(first.get("summary"), dict):
        try:
            return [Column(path.name, RunSummary.from_json(first["summary"]), first)]
        except (TypeError, KeyError, ValueError):
            what = _looks_like(first)
            if what in ("a vazao bench run result", "a vazao simulation result"):
                raise VazaoError(f"{path}: its summary is not a vazao bench summary") from None
            raise VazaoError(f"{path}: this file is {what}; expected {foreign.EXPECTED}") from None
    if len(docs) == 1 and foreign_tool(first) is None:
        raise VazaoError(f"{path}: this file is {_looks_like(first)}; expected {foreign.EXPECTED}")
    return [Column(f"{path.name}#{r.label}" if r.label else path.name, r.summary,
                   {"foreign": True, "tool": r.tool, "level": dict(r.level), "notes": list(r.notes)})
            for r in foreign.runs_of(docs, str(path))]


def _looks_like(data: Any) -> str:
    """What a JSON document is: a vazao result of another kind (plan, validation …) or its shape."""
    kind = kind_of(data)
    if kind in ("unknown", "error"):
        return foreign.describe(data) if kind == "unknown" else "a vazao error result"
    return f"a vazao {kind} result"


def _records_runs(runs: dict[str, LogContents], path: Path, slo: SLO | None, wanted: list[str]) -> list[Column]:
    if len(runs) == 1:
        (log,) = runs.values()
        return [_column(path.name, log, path, slo)]
    picked = [r for r in wanted if r in runs]
    if not picked:
        raise VazaoError(f"{path} holds {len(runs)} runs ({', '.join(list(runs)[:8])}); "
                         "pick them with `run`", parameter="run")
    return [_column(f"{path.name}#{r}", runs[r], path, slo) for r in picked]


def _column(name: str, log: LogContents, path: Path, slo: SLO | None) -> Column:
    data = summary_of_log(log, path, slo)
    return Column(name, data["summary"], data)


def simulate_like(data: dict, *, gpu: str, model: str, engine: str | None = None, fmt: str | None = None,
                  count: int = 1, slo: SLO | None = None) -> Column:
    """The simulator's prediction for the workload and load level a bench result ran."""
    from vazao.physics.deployment import make_deployment
    from vazao.sim.config import SimConfig
    from vazao.sim.run import simulate
    from vazao.workload import load_workload

    run = data.get("run") or {}
    spec = run.get("workload_spec") or run.get("workload")
    if not spec:
        raise VazaoError("the result does not name its workload (compare a `vazao bench -o` JSON result)")
    level = {k: run[k] for k in ("concurrency", "rate") if run.get(k) is not None}
    if data.get("points"):  # a sweep: its summary is the last level's
        level = {k: v for k, v in data["points"][-1].items() if k in ("concurrency", "rate")}
    w = load_workload(spec, requests=run.get("requests"), seed=run.get("seed"), duration_s=run.get("duration_s"),
                      **level)
    dep = make_deployment(model, gpu, fmt, count=count, engine=engine)
    result = simulate(dep, w, SimConfig.from_engine(dep.engine), slo)
    return Column(f"simulated {dep.label()}", result.summary, {"tool": "vazao simulate", "bands": result.bands or {}})
