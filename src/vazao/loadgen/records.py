"""The run's JSONL log: a meta header, then one line per request as it completes.

Every line is flushed when written, so a Ctrl-C, a crash or a kill loses at most the line being
written; ``vazao summarize run.jsonl`` rebuilds the summary from what is there.

Line kinds: ``meta`` (the run: URL without secrets, workload, options), ``point`` (a sweep level
starts), ``record`` (a measured request: the RequestRecord JSON shape, read by
results.read_jsonl), ``warmup`` (a warm-up request, excluded from summaries), ``probe``
(pre-flight requests), ``server`` (what the server says about itself), ``end`` (the summary,
written last). results.read_jsonl reads only ``record`` lines.

Every line carries the run's ``run_id`` (random, made when the run starts), so a file that holds
several runs (concatenated, or written by an older version that appended) is never summarized as
one: ``read_log`` refuses such a file unless a run is named. The writer creates its file (or, when
told to overwrite, truncates it); it never appends to what is there.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vazao import inputs
from vazao.errors import VazaoError
from vazao.loadgen.redact import redact
from vazao.results import RequestRecord

__all__ = ["RUNS_DIR_ENV", "LogContents", "RecordLog", "default_records_name", "default_records_path",
           "new_run_id", "read_log", "read_runs", "runs_dir"]

RUNS_DIR_ENV = "VAZAO_RUNS_DIR"


def new_run_id() -> str:
    return secrets.token_hex(6)


def default_records_name() -> str:
    """Unique per run: two runs started in the same second never share a file."""
    now = time.time()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    return f"vazao-bench-{stamp}-{int(now * 1000) % 1000:03d}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"


def runs_dir() -> Path:
    """The one folder runs go to when no records path is given: $VAZAO_RUNS_DIR, else
    $XDG_STATE_HOME/vazao/bench, else ~/.local/state/vazao/bench. Never the working directory: a run
    started in a checkout would leave its records among the sources."""
    env = os.environ.get(RUNS_DIR_ENV) or ""
    if env:
        return Path(env).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or ""
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"  # XDG: relative is invalid
    return base / "vazao" / "bench"


def default_records_path() -> Path:
    """A new records file in runs_dir(), the folder made when missing."""
    folder = runs_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VazaoError(f"cannot make the runs folder {folder} ({exc.strerror or exc}); give records_path, "
                         f"a records file, or set ${RUNS_DIR_ENV}", parameter="records_path") from None
    return folder / default_records_name()


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
    """JSONL writer for one run; one line per write, flushed at once. The file is created new
    (an existing one is refused) unless `overwrite`, which truncates it: never appended to."""

    def __init__(self, path: str | Path, meta: dict[str, Any], *, run_id: str | None = None,
                 overwrite: bool = False):
        self.path = Path(path)
        self.run_id = run_id or new_run_id()
        if self.path.parent and not self.path.parent.exists():
            raise VazaoError(f"folder {self.path.parent} does not exist (for the records file {self.path})")
        try:
            self._fh = open(self.path, "w" if overwrite else "x", encoding="utf-8", buffering=1)  # noqa: SIM115
        except FileExistsError:
            raise inputs.OutputExists("records file", str(self.path)) from None
        except OSError as exc:
            raise VazaoError(f"cannot write records file {self.path}: {exc.strerror or exc}") from None
        self.written = 0
        self.reached = 0  # request lines whose request got to the server (not a connect failure)
        self.note("meta", **meta)

    def note(self, kind: str, **data: Any) -> None:
        self._write({"kind": kind, "run_id": self.run_id, **data})

    def record(self, rec: RequestRecord, kind: str = "record") -> None:
        """RequestRecord.to_json()'s shape, built by hand: dataclasses.asdict deep-copies every gap,
        and the gaps (a hundred a request, the bulk of the line) are written with one "%.7f" format
        per line, the value round(g, 7) gives, at a quarter of the cost of json.dumps([round(g, 7) ...])."""
        first, end = rec.first_token_s, rec.end_s
        head = json.dumps({
            "kind": kind, "run_id": self.run_id, "request_id": rec.request_id, "source": rec.source,
            "arrival_s": _round(rec.arrival_s),
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
        if not (rec.error or "").startswith("connect:"):
            self.reached += 1

    def _write(self, obj: dict) -> None:
        self._write_line(json.dumps(obj, default=_default, allow_nan=False))

    def _write_line(self, line: str) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write(redact(line) + "\n")
            self._fh.flush()
        except OSError as exc:  # a full disk: the run cannot keep its records, so it must stop
            raise VazaoError(f"cannot write records file {self.path}: {exc.strerror or exc}") from None

    def close(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.flush()
                os.fsync(fh.fileno())
            except OSError:
                pass  # reported by the write that failed
            finally:
                fh.close()

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
    warmup_by_point: dict[int, list[RequestRecord]] = field(default_factory=lambda: defaultdict(list))
    notes: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    malformed: int = 0
    run_id: str | None = None
    runs: list[str] = field(default_factory=list)  # every run id in the file, in order


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _loads(line: str) -> dict:
    """One line, strictly: an object, no NaN/Infinity, finite times (json.loads' C parser with one
    hook, not inputs.loads_json's per-number one: a run's file holds millions of gaps)."""
    d = json.loads(line, parse_constant=_no_constant)
    if not isinstance(d, dict):
        raise ValueError("not an object")
    if d.get("kind", "record") in ("record", "warmup", "probe"):
        times = [d.get("arrival_s", 0.0), d.get("first_token_s") or 0.0, d.get("end_s") or 0.0]
        if not (all(map(math.isfinite, times)) and all(map(math.isfinite, d.get("itl_s") or ()))):
            raise ValueError("a time that is not a finite number")
    return d


def _add(out: LogContents, d: dict) -> None:
    kind = d.get("kind", "record")
    if kind in ("record", "warmup"):
        rec = RequestRecord.from_json(d)
        if kind == "warmup":
            out.warmup.append(rec)
            out.warmup_by_point[int(rec.extra.get("point", 0))].append(rec)
        else:
            out.records.append(rec)
            out.by_point[int(rec.extra.get("point", 0))].append(rec)
    elif kind == "meta" and not out.meta:
        out.meta = d
    elif kind == "point":
        out.points.append(d)
    else:
        out.notes[kind].append(d)


def read_log(path: str | Path, run: str | None = None) -> LogContents:
    """One run of a records JSONL; a torn line counts as malformed, nothing else fails. A file
    holding several runs needs `run` (one of their ids)."""
    runs = read_runs(path)
    ids = list(runs)
    if run is None:
        if len(ids) > 1:
            raise VazaoError(f"{path} holds {len(ids)} runs ({', '.join(ids[:8])}"
                             f"{', ...' if len(ids) > 8 else ''}); pick one with `run`", parameter="run")
        run = ids[0]
    if run not in runs:
        raise VazaoError(f"{path} has no run {run!r}; its runs: {', '.join(ids[:8])}")
    return runs[run]


def read_runs(path: str | Path) -> dict[str, LogContents]:
    """Every run in a records JSONL by run id, in file order. Lines written before run ids existed
    belong to the run their `meta` line started (named #1, #2, ...)."""
    runs: dict[str, LogContents] = {}
    legacy, current = 0, None
    stray = 0  # unreadable lines before any run started
    for _, line in inputs.iter_lines(path, "records file"):
        if line is not None:
            line = line.strip()
            if not line:
                continue
        try:
            if line is None:
                raise ValueError("unreadable line")
            d = _loads(line)
            rid = d.get("run_id")
            if rid is None:
                if d.get("kind") == "meta":
                    legacy += 1
                    current = f"#{legacy}"
                rid = current or "#1"
            rid = str(rid)
            current = rid
            out = runs.setdefault(rid, LogContents(run_id=rid))
            _add(out, d)
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            if current is None:
                stray += 1
            else:
                runs[current].malformed += 1
    runs = {k: v for k, v in runs.items() if v.meta or v.records}
    if not runs:
        raise VazaoError(f"{path} holds no vazao records")
    ids = list(runs)
    for out in runs.values():
        out.runs = ids
    runs[ids[0]].malformed += stray
    return runs
