"""The report files a benchmark user expects next to a run's records (`vazao bench --outputs`):
the result JSON, a CSV with one row per load level, and the HTML run report.

The CSV's columns follow guidellm's (level, request counts, duration, throughputs, TTFT and ITL
mean/p50/p95/p99, E2E percentiles), in vazao's definitions (results.py) and with latencies in
milliseconds, as a spreadsheet reader expects; every number comes from the result JSON, so the CSV
and the JSON never disagree."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vazao import inputs
from vazao.errors import VazaoError

__all__ = ["CSV_COLUMNS", "KINDS", "csv_rows", "csv_text", "output_paths", "parse_kinds"]

KINDS = ("json", "csv", "html")

CSV_COLUMNS = (
    "level", "concurrency", "rate", "requests", "successes", "errors", "duration_s",
    "request_rate_per_s", "output_tokens_per_s",
    "ttft_mean_ms", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms",
    "itl_mean_ms", "itl_p50_ms", "itl_p95_ms", "itl_p99_ms",
    "e2e_p50_ms", "e2e_p95_ms", "e2e_p99_ms",
)


def parse_kinds(text: str | None) -> tuple[str, ...]:
    """'json,csv,html' → the kinds, in that order, each once; an unknown one is refused."""
    if text is None:
        return ()
    kinds = []
    for k in inputs.split_list(text, "output kinds", max_items=len(KINDS) * 4):
        k = k.lower()
        if k not in KINDS:
            raise VazaoError(f"output kind {k[:20]!r} is not one of {', '.join(KINDS)}")
        if k not in kinds:
            kinds.append(k)
    return tuple(kinds)


def output_paths(kinds: Sequence[str], records: Path, result: Path | None) -> dict[str, Path]:
    """Where each kind goes: the result JSON (-o) itself for json, else `<records stem>.json`; the
    others beside the result when there is one, else beside the records, by the same stem."""
    base = result if result is not None else records
    return {k: (result if k == "json" and result is not None else base.with_suffix(f".{k}")) for k in kinds}


def _level(point: Mapping[str, Any], run: Mapping[str, Any]) -> str:
    """The load level: the one set for the run or sweep level, else the workload's own arrivals
    (the first clause of its description, e.g. "closed loop, concurrency 3")."""
    if point.get("concurrency") is not None:
        return f"concurrency {point['concurrency']}"
    if point.get("rate") is not None:
        return f"rate {point['rate']:g}/s"
    described = run.get("workload_description")
    return described.split(";", 1)[0] if isinstance(described, str) and described else "bench"


def _ms(summary: Mapping[str, Any], metric: str, stat: str) -> float | None:
    v = (summary.get(metric) or {}).get(stat)
    return None if v is None else v * 1000.0


def csv_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per load level of a bench result JSON (a sweep's points, or the run itself)."""
    run = data.get("run") or {}
    points = data.get("points") or [{**{k: run.get(k) for k in ("concurrency", "rate")}, "summary": data["summary"]}]
    rows = []
    for p in points:
        s = p["summary"]
        row: dict[str, Any] = {
            "level": _level(p, run), "concurrency": p.get("concurrency"), "rate": p.get("rate"),
            "requests": s["requests"], "successes": s["requests"] - s["errors"], "errors": s["errors"],
            "duration_s": s["duration_s"], "request_rate_per_s": s["request_throughput_per_s"],
            "output_tokens_per_s": s["output_tokens_per_s"],
        }
        for metric, key in (("ttft", "ttft_s"), ("itl", "itl_s")):
            for stat in ("mean", "p50", "p95", "p99"):
                row[f"{metric}_{stat}_ms"] = _ms(s, key, stat)
        for stat in ("p50", "p95", "p99"):
            row[f"e2e_{stat}_ms"] = _ms(s, "e2e_s", stat)
        rows.append(row)
    return rows


def csv_text(data: Mapping[str, Any]) -> str:
    """The CSV: a header row, then one row per level; a value not measured is an empty cell, and
    floats are written in full (repr), so they read back as the same numbers."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for row in csv_rows(data):
        w.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buf.getvalue()
