"""A measured run's summary read back from `vazao bench --json` output (or a bare RunSummary), every
number checked."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.results import Latency, RunSummary


def read_run(path: str | Path) -> RunSummary:
    """A measured run: `vazao bench --json` output (an object with "summary") or a bare RunSummary."""
    p = Path(path).expanduser()
    where = f"run file {inputs._show(p)}"
    data = inputs.read_json(inputs.input_stream(p, "run file"), "run file", max_bytes=limits.MAX_RESULT_BYTES)
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
