"""Other tools' benchmark results read as vazao RunSummaries: guidellm's ``benchmarks.json`` and the
result JSON of ``vllm bench serve --save-result``. One result type, two more sources.

The formats, read from the tools' own source:

- guidellm, github.com/vllm-project/guidellm at v0.7.3-12-gee7a774 (commit ee7a77457ba6):
  ``benchmark/schemas/report.py`` (the report: ``metadata``, ``config``, ``benchmarks``),
  ``schemas/benchmark.py`` (a benchmark: ``config.strategy``, ``metrics``, ``duration``),
  ``schemas/metrics.py`` (``GenerativeMetrics``: ``request_totals`` and one ``StatusDistributionSummary``
  per metric, keyed successful | incomplete | errored | total), ``schemas/statistics.py``
  (``DistributionSummary``: mean, median, count, total_sum, percentiles p001 … p999), and
  ``scheduler/strategies.py`` (how a strategy names itself: ``concurrent@4``, ``constant@2.00``).
  The older shape (v0.3.0: ``args.strategy``, ``request_totals`` beside ``metrics``, percentiles that
  may lack p50) is read too.
- vllm, github.com/vllm-project/vllm ``vllm/benchmarks/serve.py`` at commit 009e6d4a1cd6 (``benchmark()``'s
  result dict, ``process_one_metric``, ``result_json`` in ``main``) and ``benchmarks/benchmark_serving.py``
  at 0049e29c41fd (before ``failed`` existed: failures are then ``num_prompts − completed``).

What maps to what (vazao's definitions are in results.py):

- TTFT: guidellm ``metrics.time_to_first_token_ms.successful`` (ms); vllm ``mean|median|pNN_ttft_ms``.
- ITL: guidellm ``inter_token_latency_ms``, each request's mean gap counted once per gap (its mean is
  the pooled mean, its percentiles smoother than per-chunk gaps); vllm ``…_itl_ms``, every chunk gap.
- TPOT: not in guidellm (its per-request TPOT is kept only gap-weighted, as the ITL above); vllm ``…_tpot_ms``.
- E2E: guidellm ``request_latency`` (in seconds); vllm ``…_e2el_ms``, only with ``--percentile-metrics …,e2el``.
- req/s, output and total tok/s: guidellm ``requests_per_second``, ``output_tokens_per_second``,
  ``tokens_per_second`` (successful, mean); vllm ``request_throughput``, ``output_throughput``,
  ``total_token_throughput``.
- requests, errors: guidellm ``request_totals`` (errors = errored + incomplete, as vazao counts a
  cancelled request); vllm ``completed + failed``, ``failed``.

Nothing is filled in that the file does not hold: vllm writes the median and the percentiles of
``--metric-percentiles`` (default 99) only, so p90/p95 stay None, as does whatever a tool did not
measure; tables show them as "-". Every number goes through ``inputs.number`` (finite, ≥ 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.resultfiles import foreign_tool
from vazao.results import Latency, RunSummary

__all__ = ["EXPECTED", "ForeignRun", "describe", "guidellm_runs", "read_documents",
           "read_foreign", "runs_of", "vllm_run"]

# guidellm keeps every request's stats in its report by default: a long run's file reaches hundreds
# of MB, above limits.MAX_FILE_BYTES: such files are read up to limits.MAX_RESULT_BYTES.
EXPECTED = ("a vazao bench result (`vazao bench -o`), guidellm's benchmarks.json "
            "or a `vllm bench serve --save-result` JSON")
_PCTS = ("p50", "p90", "p95", "p99")
_NONE = Latency(None, None, None, None, None)


@dataclass(frozen=True)
class ForeignRun:
    """One run of another tool, as vazao reads it."""

    label: str  # the run within its file ("concurrent@4"); "" when the file holds one run
    tool: str  # "guidellm 0.7.3", "vllm bench serve"
    summary: RunSummary
    level: Mapping[str, float] = field(default_factory=dict)  # {"concurrency": 4} | {"rate": 2.0} | {}
    notes: tuple[str, ...] = ()  # what differs from vazao's definitions, what the file does not give


def read_documents(path: Path | str, what: str = "bench result") -> list[Any]:
    """The JSON document(s) of a result file: one, or one per line (``vllm bench serve
    --append-result`` writes each run as a line of its own)."""
    text = inputs.read_text(path, what, max_bytes=limits.MAX_RESULT_BYTES)
    where = f"{what} {path}"
    try:
        return [inputs.loads_json(text, where)]
    except VazaoError as whole:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) < 2:
            raise
        try:
            return [inputs.loads_json(ln, f"{where} line {i}") for i, ln in enumerate(lines, 1)]
        except VazaoError:
            raise whole from None


def describe(data: Any) -> str:
    """What a JSON document looks like, for an error that says what a file is."""
    if isinstance(data, list):
        return f"a JSON list of {len(data)} items"
    if not isinstance(data, Mapping):
        return f"a JSON {type(data).__name__}"
    if not data:
        return "an empty JSON object"
    if isinstance(data.get("benchmarks"), list):
        return "a report with a `benchmarks` list but no guidellm metrics in it"
    keys = ", ".join(str(k)[:30] for k in list(data)[:6])
    return f"a JSON object with keys {keys}{', …' if len(data) > 6 else ''}"


def read_foreign(data: Any, where: str) -> list[ForeignRun]:
    """The runs of a guidellm report (one per benchmark) or of a vllm result (one)."""
    kind = foreign_tool(data)
    if kind == "guidellm":
        return guidellm_runs(data, where)
    if kind == "vllm":
        return [vllm_run(data, where)]
    raise VazaoError(f"{where}: this file is {describe(data)}; expected {EXPECTED}")


def runs_of(docs: Sequence[Any], where: str) -> list[ForeignRun]:
    """The runs of a file's documents: one document of either tool, or several vllm results, one a
    line (`vllm bench serve --append-result`), labelled 1, 2, …"""
    if len(docs) == 1:
        return read_foreign(docs[0], where)
    for i, d in enumerate(docs, 1):
        if foreign_tool(d) != "vllm":
            raise VazaoError(f"{where}: this file holds {len(docs)} JSON lines and line {i} is {describe(d)}; "
                             f"expected {EXPECTED}")
    return [vllm_run(d, f"{where} line {i}", str(i)) for i, d in enumerate(docs, 1)]


# ---- numbers ------------------------------------------------------------------------------------


def _num(value: Any, what: str, *, integer: bool = False) -> float | int:
    return inputs.number(value, what, minimum=0, integer=integer)


def _opt(d: Mapping[str, Any], key: str, what: str, scale: float = 1.0) -> float | None:
    v = d.get(key)
    return None if v is None else float(_num(v, f"{what}{key}")) * scale


def _mapping(d: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(d, Mapping):
        raise VazaoError(f"{what} must be an object, got {type(d).__name__}")
    return d


# ---- guidellm -----------------------------------------------------------------------------------

_STRATEGY_LEVEL = {"concurrent": ("concurrency", "streams"), "constant": ("rate", "rate"),
                   "poisson": ("rate", "rate")}


def guidellm_runs(data: Mapping[str, Any], where: str) -> list[ForeignRun]:
    meta = data.get("metadata") if isinstance(data.get("metadata"), Mapping) else {}
    version = meta.get("guidellm_version")
    tool = f"guidellm {version}" if isinstance(version, str) and len(version) < 40 else "guidellm"
    runs: list[ForeignRun] = []
    seen: dict[str, int] = {}
    for i, b in enumerate(data["benchmarks"]):
        label, level = _strategy(b)
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:  # the same strategy twice in one report: keep both columns apart
            label = f"{label}#{seen[label]}"
        runs.append(_guidellm_one(b, f"{where} benchmark {i + 1} ({label}): ", label, level, tool))
    return runs


def _strategy(b: Mapping[str, Any]) -> tuple[str, dict[str, float]]:
    """guidellm's own name for the strategy (SchedulingStrategy.__str__) and vazao's load level."""
    holder = b.get("config") if isinstance(b.get("config"), Mapping) else b.get("args")
    s = holder.get("strategy") if isinstance(holder, Mapping) else None
    kind = str(s.get("type_", "?"))[:30] if isinstance(s, Mapping) else "?"
    if kind == "synchronous":
        return kind, {"concurrency": 1}
    if kind == "throughput":
        cap = s.get("max_concurrency")
        return f"throughput@{cap or 'unlimited'}", {}
    if kind in _STRATEGY_LEVEL:
        axis, key = _STRATEGY_LEVEL[kind]
        v = s.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            value = float(_num(v, f"strategy {kind} {key}"))
            shown = f"{int(value)}" if axis == "concurrency" else f"{value:.2f}"
            return f"{kind}@{shown}", {axis: int(value) if axis == "concurrency" else value}
    return kind, {}


def _dist(m: Mapping[str, Any], name: str, what: str) -> Mapping[str, Any] | None:
    """The successful requests' DistributionSummary of metric `name`, or None when none was measured."""
    status = m.get(name)
    if status is None:
        return None
    d = _mapping(_mapping(status, f"{what}metrics.{name}").get("successful"), f"{what}metrics.{name}.successful")
    count = d.get("count")
    return None if count is not None and _num(count, f"{what}metrics.{name}.successful.count") == 0 else d


def _latency(m: Mapping[str, Any], name: str, what: str, scale: float) -> Latency:
    d = _dist(m, name, what)
    if d is None:
        return _NONE
    at = f"{what}metrics.{name}.successful."
    pct = _mapping(d.get("percentiles") or {}, f"{at}percentiles")
    p50 = _opt(pct, "p50", f"{at}percentiles.", scale)
    if p50 is None:  # v0.3 files may leave p50 out of the percentiles; `median` is the same value
        p50 = _opt(d, "median", at, scale)
    return Latency(_opt(d, "mean", at, scale), p50, *(_opt(pct, p, f"{at}percentiles.", scale) for p in _PCTS[1:]))


def _mean(m: Mapping[str, Any], name: str, what: str) -> float | None:
    d = _dist(m, name, what)
    return None if d is None else _opt(d, "mean", f"{what}metrics.{name}.successful.")


def _tokens(m: Mapping[str, Any], name: str, what: str) -> int:
    d = _dist(m, name, what)
    total = None if d is None else _opt(d, "total_sum", f"{what}metrics.{name}.successful.")
    return 0 if total is None else round(total)


def _guidellm_one(b: Mapping[str, Any], what: str, label: str, level: dict[str, float], tool: str) -> ForeignRun:
    m = _mapping(b.get("metrics"), f"{what}metrics")
    totals = m.get("request_totals", b.get("request_totals"))  # v0.4+: in metrics; v0.3: beside them
    totals = _mapping(totals, f"{what}request_totals")
    count = {k: int(_num(totals.get(k, 0), f"{what}request_totals.{k}", integer=True))
             for k in ("successful", "incomplete", "errored")}
    errors = count["incomplete"] + count["errored"]
    duration = b.get("duration")
    if duration is None and "start_time" in b and "end_time" in b:
        duration = float(_num(b["end_time"], f"{what}end_time")) - float(_num(b["start_time"], f"{what}start_time"))
    summary = RunSummary(
        requests=count["successful"] + errors, errors=errors,
        duration_s=float(_num(duration, f"{what}duration")),
        ttft_s=_latency(m, "time_to_first_token_ms", what, 1e-3),
        itl_s=_latency(m, "inter_token_latency_ms", what, 1e-3),
        tpot_s=_NONE,
        e2e_s=_latency(m, "request_latency", what, 1.0),
        request_throughput_per_s=_mean(m, "requests_per_second", what),
        output_tokens_per_s=_mean(m, "output_tokens_per_second", what),
        total_tokens_per_s=_mean(m, "tokens_per_second", what),
        prompt_tokens=_tokens(m, "prompt_token_count", what),
        output_tokens=_tokens(m, "output_token_count", what),
    )
    notes = ["ITL is guidellm's: each request's mean gap, counted once per gap (its mean is the pooled "
             "mean; its percentiles are smoother than per-chunk gaps); TPOT is not given"]
    if errors:
        notes.append("throughputs count successful requests (guidellm's console counts all)")
    return ForeignRun(label, tool, summary, level, tuple(notes))


# ---- vllm bench serve ---------------------------------------------------------------------------


def _vllm_latency(data: Mapping[str, Any], metric: str, what: str) -> Latency:
    pcts = {p: _opt(data, f"{p}_{metric}_ms", what, 1e-3) for p in _PCTS}
    if pcts["p50"] is None:
        pcts["p50"] = _opt(data, f"median_{metric}_ms", what, 1e-3)
    return Latency(_opt(data, f"mean_{metric}_ms", what, 1e-3), *pcts.values())


def _vllm_failed(data: Mapping[str, Any], completed: int, what: str) -> int:
    if data.get("failed") is not None:
        return int(_num(data["failed"], f"{what}failed", integer=True))
    if isinstance(data.get("errors"), list):  # older files, or --save-detailed: one entry per request
        return sum(1 for e in data["errors"] if e)
    if data.get("num_prompts") is not None:  # before `failed`: every prompt was sent, once
        prompts = int(_num(data["num_prompts"], f"{what}num_prompts", integer=True))
        if prompts >= completed:
            return prompts - completed
    raise VazaoError(f"{what.rstrip(': ')}: no `failed`, `errors` or `num_prompts`, so its failed requests are unknown")


def _vllm_level(data: Mapping[str, Any], what: str) -> dict[str, float]:
    c, r = data.get("max_concurrency"), data.get("request_rate")
    if c is not None:
        return {"concurrency": int(_num(c, f"{what}max_concurrency", integer=True))}
    if r is not None and r != "inf":
        return {"rate": float(_num(r, f"{what}request_rate"))}
    return {}


def vllm_run(data: Mapping[str, Any], where: str, label: str = "") -> ForeignRun:
    what = f"{where}: "
    completed = int(_num(data["completed"], f"{what}completed", integer=True))
    failed = _vllm_failed(data, completed, what)
    # with no request completed vllm still writes its latencies, as 0 (np.mean of [0]): not measured
    lat = {m: _vllm_latency(data, m, what) if completed else _NONE for m in ("ttft", "itl", "tpot", "e2el")}
    summary = RunSummary(
        requests=completed + failed, errors=failed, duration_s=float(_num(data["duration"], f"{what}duration")),
        ttft_s=lat["ttft"], itl_s=lat["itl"], tpot_s=lat["tpot"], e2e_s=lat["e2el"],
        request_throughput_per_s=float(_num(data["request_throughput"], f"{what}request_throughput")),
        output_tokens_per_s=_opt(data, "output_throughput", what),
        total_tokens_per_s=_opt(data, "total_token_throughput", what),
        goodput_requests_per_s=_opt(data, "request_goodput", what),
        prompt_tokens=int(_num(data.get("total_input_tokens", 0), f"{what}total_input_tokens", integer=True)),
        output_tokens=int(_num(data.get("total_output_tokens", 0), f"{what}total_output_tokens", integer=True)),
    )
    notes = ["percentiles vllm did not write (it writes the median and --metric-percentiles, default 99) "
             "are not given"]
    if summary.e2e_s.mean is None:
        notes.append("E2E is not given (vllm writes it with --percentile-metrics ttft,tpot,itl,e2el)")
    if summary.goodput_requests_per_s is not None:
        notes.append("goodput is under vllm's own --goodput limits")
    return ForeignRun(label, "vllm bench serve", summary, _vllm_level(data, what), tuple(notes))

