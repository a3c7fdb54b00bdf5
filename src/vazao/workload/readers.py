"""Lengths files (one integer a line, or a CSV column) and arrival traces (timestamps, optionally
with prompt and output tokens), read with one-line errors naming the file and line."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.errors import VazaoError


def _resolve(name: str, base: Path | None) -> Path:
    p = Path(name).expanduser()
    return p if p.is_absolute() or base is None else base / p


def _csv_rows(text: str, what: str) -> list[dict]:
    try:
        return list(csv.DictReader(text.splitlines()))
    except csv.Error as exc:  # a NUL byte, a field past csv's size limit
        raise VazaoError(f"{what} is not a readable CSV: {exc}") from None


def _read_lengths(path: Path, column: str | None, where: str) -> list[int]:
    """Lengths from a file: one integer per line, or a CSV column (header row)."""
    what = f"{where}: lengths file"
    text = inputs.read_text(inputs.input_stream(path, what), what)
    shown = inputs._show(path)
    out: list[int] = []
    if column:
        rows = _csv_rows(text, f"{what} {shown}")
        if rows and column not in rows[0]:
            names = ", ".join(str(c)[:40] for c in list(rows[0])[:20])
            raise VazaoError(f"{where}: {shown} has no column {column!r} (columns: {names})")
        cells = [(i + 2, r[column]) for i, r in enumerate(rows)]
    else:
        cells = [(i + 1, line.strip()) for i, line in enumerate(text.splitlines()) if line.strip()]
    if len(cells) > limits.MAX_REQUESTS:
        raise VazaoError(f"{where}: {shown} holds {len(cells):,} lengths; at most {limits.MAX_REQUESTS:,}")
    for line_no, cell in cells:
        out.append(int(inputs.number(cell, f"{where}: {shown} line {line_no}: token count", minimum=1,
                                     maximum=limits.MAX_REQUEST_TOKENS, integer=True)))
    if not out:
        raise VazaoError(f"{where}: {shown} holds no lengths")
    return out


def _timestamp(cell: Any, at: str) -> float:
    try:
        return float(inputs.number(cell, f"{at}: timestamp", minimum=0))
    except VazaoError:
        if isinstance(cell, str) and cell.strip():
            try:
                float(cell.strip().replace("_", ""))
            except ValueError:
                raise VazaoError(f"{at}: {cell.strip()[:40]!r} is not a timestamp") from None
        raise


def _read_trace(path: Path) -> tuple[list[float], list[int], list[int]]:
    """A trace: one timestamp (seconds) per line, or a CSV with a header holding `timestamp` and,
    optionally, `prompt_tokens` and `output_tokens` columns."""
    shown = inputs._show(path)
    text = inputs.read_text(inputs.input_stream(path, "trace"), "trace")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) > limits.MAX_REQUESTS + 1:
        raise VazaoError(f"trace {shown}: {len(lines):,} lines; at most {limits.MAX_REQUESTS:,} arrivals")
    ts: list[float] = []
    prompts: list[int] = []
    outputs: list[int] = []
    if lines and "timestamp" in lines[0]:
        rows = _csv_rows("\n".join(lines), f"trace {shown}")
        if rows and "timestamp" not in rows[0]:
            raise VazaoError(f"trace {shown}: the header has no `timestamp` column")
        for i, row in enumerate(rows, start=2):
            at = f"trace {shown} line {i}"
            ts.append(_timestamp(row.get("timestamp"), at))
            if row.get("prompt_tokens"):
                prompts.append(int(inputs.number(row["prompt_tokens"], f"{at}: prompt_tokens", minimum=1,
                                                 maximum=limits.MAX_REQUEST_TOKENS, integer=True)))
            if row.get("output_tokens"):
                outputs.append(int(inputs.number(row["output_tokens"], f"{at}: output_tokens", minimum=1,
                                                 maximum=limits.MAX_REQUEST_TOKENS, integer=True)))
        if prompts and len(prompts) != len(ts) or outputs and len(outputs) != len(ts):
            raise VazaoError(f"trace {shown}: prompt_tokens/output_tokens must be given on every line or none")
    else:
        for i, ln in enumerate(lines, start=1):
            ts.append(_timestamp(ln.split(",")[0], f"trace {shown} line {i}"))
    return ts, prompts, outputs


def _check_trace(ts: list[float], where: str) -> None:
    if not ts:
        raise VazaoError(f"{where}: the trace holds no timestamps")
    for i in range(len(ts)):
        if not math.isfinite(ts[i]) or ts[i] < 0:
            raise VazaoError(f"{where}: timestamp {i + 1} ({ts[i]}) must be a finite, non-negative second")
        if i and ts[i] < ts[i - 1]:
            raise VazaoError(f"{where}: timestamps are not monotonic: entry {i + 1} ({ts[i]:g} s) comes "
                             f"before entry {i} ({ts[i - 1]:g} s)")
