"""The run's JSONL log: a meta header, then one line per request as it completes.

Every line is flushed when written, so a Ctrl-C, a crash or a kill loses at most the line being
written; ``vazao summarize run.jsonl`` rebuilds the summary from what is there.

Line kinds: ``meta`` (the run: URL without secrets, workload, options), ``point`` (a sweep level
starts), ``record`` (a measured request: the RequestRecord JSON shape, read by
results.read_jsonl), ``warmup`` (a warm-up request, excluded from summaries), ``probe``
(pre-flight requests), ``server`` (what the server says about itself), ``end`` (the summary,
written last). results.read_jsonl reads only ``record`` lines.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vazao.errors import VazaoError
from vazao.results import RequestRecord

__all__ = ["LogContents", "RecordLog", "read_log"]


def _round(x: float) -> float:
    return round(x, 7)


_FORMATS: dict[int, str] = {}


def _fixed7(values: tuple[float, ...]) -> str:
    """A JSON list of finite floats, each to 7 decimals, formatted in one call."""
    n = len(values)
    fmt = _FORMATS.get(n)
    if fmt is None:
        fmt = ",".join(["%.7f"] * n)
        if n <= 4096:
            _FORMATS[n] = fmt
    return "[" + fmt % values + "]"


class RecordLog:
    """Append-only JSONL writer; one line per write, flushed at once."""

    def __init__(self, path: str | Path, meta: dict[str, Any]):
        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            raise VazaoError(f"folder {self.path.parent} does not exist (for the records file {self.path})")
        self._fh = open(self.path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 (held open for the run)
        self.written = 0
        self.note("meta", **meta)

    def note(self, kind: str, **data: Any) -> None:
        self._write({"kind": kind, **data})

    def record(self, rec: RequestRecord, kind: str = "record") -> None:
        """RequestRecord.to_json()'s shape, built by hand: dataclasses.asdict deep-copies every gap,
        and the gaps (a hundred a request, the bulk of the line) are written with one "%.7f" format
        per line, the value round(g, 7) gives, at a quarter of the cost of json.dumps([round(g, 7) ...])."""
        first, end = rec.first_token_s, rec.end_s
        head = json.dumps({
            "kind": kind, "request_id": rec.request_id, "source": rec.source, "arrival_s": _round(rec.arrival_s),
            "prompt_tokens": rec.prompt_tokens, "output_tokens": rec.output_tokens,
            "first_token_s": None if first is None else _round(first), "end_s": None if end is None else _round(end)},
            allow_nan=False)
        tail = json.dumps({"cached_prompt_tokens": rec.cached_prompt_tokens, "error": rec.error, "status": rec.status,
                           "extra": dict(rec.extra)}, default=_default, allow_nan=False)
        gaps = rec.itl_s
        if all(map(math.isfinite, gaps)):
            itl = _fixed7(tuple(gaps))
        else:
            itl = json.dumps([_round(g) for g in gaps], allow_nan=False)  # raises, as before
        self._write_line(f'{head[:-1]}, "itl_s": {itl}, {tail[1:]}')
        self.written += 1

    def _write(self, obj: dict) -> None:
        self._write_line(json.dumps(obj, default=_default, allow_nan=False))

    def _write_line(self, line: str) -> None:
        if self._fh is None:
            return
        self._fh.write(line + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
            self._fh = None

    def __enter__(self) -> RecordLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_json"):
        return obj.to_json()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    return str(obj)


@dataclass
class LogContents:
    meta: dict = field(default_factory=dict)
    records: list[RequestRecord] = field(default_factory=list)
    warmup: list[RequestRecord] = field(default_factory=list)
    points: list[dict] = field(default_factory=list)  # the "point" lines, in order
    by_point: dict[int, list[RequestRecord]] = field(default_factory=lambda: defaultdict(list))
    notes: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    malformed: int = 0


def read_log(path: str | Path) -> LogContents:
    """Everything in a run's JSONL; a truncated last line counts as malformed, nothing else fails."""
    p = Path(path)
    if not p.is_file():
        raise VazaoError(f"{path} does not exist")
    out = LogContents()
    with p.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line)
                kind = d.get("kind", "record")
                if kind in ("record", "warmup"):
                    rec = RequestRecord.from_json(d)
                    if kind == "warmup":
                        out.warmup.append(rec)
                    else:
                        out.records.append(rec)
                        out.by_point[int(rec.extra.get("point", 0))].append(rec)
                elif kind == "meta" and not out.meta:
                    out.meta = d
                elif kind == "point":
                    out.points.append(d)
                else:
                    out.notes[kind].append(d)
            except (ValueError, TypeError, KeyError, AttributeError):
                out.malformed += 1
    if not out.meta and not out.records:
        raise VazaoError(f"{path} holds no vazao records")
    return out
