"""Published (or the user's own) measurements as rows: the CSV schema of
shared/data/published-measurements.csv, read through vazao.inputs, each line checked on its own.

A row that cannot be read (missing column, a value that is not a positive number, a condition
vazao does not know) becomes a Problem with its line number; the file as a whole is refused only
when it is not a CSV of that schema at all."""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

from vazao import inputs
from vazao.errors import VazaoError

COLUMNS = ("id", "engine", "model", "precision_weights", "gpu", "gpu_count", "tp", "pp", "input_len",
           "output_len", "concurrency_or_batch", "metric", "value")
OPTIONAL = ("source", "engine_version", "params_b", "precision_kv_or_compute", "notes")
METRICS = {
    # metric: (what it measures, unit in the file)
    "output_tok_s_total": "output tokens/s over all GPUs",
    "output_tok_s_per_gpu": "output tokens/s per GPU",
    "total_tok_s": "input + output tokens/s",
    "tg_tok_s_batch1": "single-stream decode tokens/s",
    "pp_tok_s": "prompt-processing tokens/s",
    "ttft_ms": "time to first token (ms)",
    "tpot_ms": "time per output token (ms)",
    "itl_ms": "inter-token latency (ms)",
    "e2e_latency_ms": "end-to-end latency (ms)",
}
MAX_CSV_BYTES = 32 * 2**20  # the shared file is 0.6 MB
MAX_ROWS = 200_000
MAX_LEN = 10_000_000  # tokens in a prompt or answer
MAX_CELL = 4096  # characters in one cell (notes run ~400)

# engine column → engine family of engines.yaml; a wrapper "nim(trtllm)" is its inner engine
_FAMILIES = {"trtllm": "trtllm", "tensorrt-llm": "trtllm", "trt-llm": "trtllm", "vllm": "vllm",
             "sglang": "sglang", "llama.cpp": "llama.cpp", "llamacpp": "llama.cpp", "ollama": "llama.cpp",
             "lmdeploy": None, "tgi": None}


@dataclass(frozen=True)
class Condition:
    """How the load was offered: 'max' (all requests queued at once), 'batch' (a static batch of
    `value` sequences), 'concurrency' (closed loop of `value` users) or 'rate' (`value` requests/s)."""

    kind: str
    value: float

    def describe(self) -> str:
        users = f"{self.value:g} user" + ("s" if self.value != 1 else "")
        return {"max": "max load", "batch": f"batch {self.value:g}", "concurrency": users,
                "rate": "all at once" if math.isinf(self.value) else f"{self.value:g} req/s"}[self.kind]


@dataclass(frozen=True)
class MeasuredRow:
    id: str
    line: int
    engine: str  # as written
    family: str  # engines.yaml profile name
    version: tuple[int, ...] | None
    model: str
    weights: str
    kv: str  # as written ('not stated' when the file says so)
    gpu: str
    gpu_count: int
    tp: int
    pp: int
    input_len: int
    output_len: int
    condition: Condition
    metric: str
    value: float
    median: bool  # the notes say the figure is a median, not a mean
    source: str


@dataclass(frozen=True)
class Problem:
    line: int
    id: str
    reason: str


def engine_family(name: str) -> str | None:
    """'mlperf-submitter(trtllm)' and 'nim(trtllm)' → 'trtllm'; unknown engines → None."""
    key = name.strip().lower()
    inner = re.search(r"\(([^()]+)\)\s*$", key)
    if inner:
        key = inner.group(1).strip()
    return _FAMILIES.get(key.replace(" ", ""))


def parse_version(text: str) -> tuple[int, ...] | None:
    """'0.14.0 (Triton tensorrtllm_backend)' → (0, 14, 0); 'v1.0' → (1, 0); no leading number → None."""
    m = re.match(r"\s*v?(\d+(?:\.\d+){0,3})\b", text or "")
    return tuple(int(x) for x in m.group(1).split(".")) if m else None


def parse_condition(text: str) -> Condition:
    t = text.strip().lower().replace(" ", "")
    if t in ("max(offline)", "max", "offline", "max-load"):
        return Condition("max", 0.0)
    if re.fullmatch(r"(request_rate|rate)=(inf|infinite)(/s)?", t):
        return Condition("rate", math.inf)  # every request sent at once, then served by the engine
    m = re.fullmatch(r"(request_rate|rate)=([0-9.e+]+)(/s)?", t)
    if m:
        return Condition("rate", _positive(m.group(2), "request rate", 1e6))
    m = re.fullmatch(r"(concurrency|users)=([0-9]+)", t)
    if m:
        return Condition("concurrency", _positive(m.group(2), "concurrency", 1e6, integer=True))
    m = re.fullmatch(r"(batch=)?([0-9]+)", t)
    if m:
        return Condition("batch", _positive(m.group(2), "batch", 1e6, integer=True))
    raise VazaoError(f"unknown concurrency_or_batch {text[:40]!r} (max(offline), request_rate=X/s, "
                     "concurrency=N or a batch size)")


def _positive(text: str, what: str, maximum: float, integer: bool = False) -> float:
    try:
        v = float(text)
    except ValueError:
        raise VazaoError(f"{what} {text[:40]!r} is not a number") from None
    if not math.isfinite(v) or v <= 0:
        raise VazaoError(f"{what} must be a positive number, got {text[:40]!r}")
    if v > maximum:
        raise VazaoError(f"{what} must be at most {maximum:g}, got {text[:40]!r}")
    if integer and v != int(v):
        raise VazaoError(f"{what} must be a whole number, got {text[:40]!r}")
    return v


def _length(text: str, what: str) -> int:
    try:
        v = float(text)
    except ValueError:
        raise VazaoError(f"{what} {text[:40]!r} is not a number") from None
    if not math.isfinite(v) or v < 0 or v != int(v) or v > MAX_LEN:
        raise VazaoError(f"{what} must be a whole number of tokens from 0 to {MAX_LEN:,}, got {text[:40]!r}")
    return int(v)


def _row(d: dict, line: int) -> MeasuredRow:
    metric = d["metric"].strip()
    if metric not in METRICS:
        raise VazaoError(f"unknown metric {metric[:40]!r} (known: {', '.join(METRICS)})")
    family = engine_family(d["engine"])
    if family is None:
        raise VazaoError(f"unknown engine {d['engine'][:40]!r} (known: trtllm, vllm, sglang, llama.cpp, "
                         "and wrappers such as nim(trtllm))")
    count = int(_positive(d["gpu_count"], "gpu_count", 1e5, integer=True))
    tp = int(_positive(d["tp"], "tp", 4096, integer=True))
    pp = int(_positive(d["pp"], "pp", 4096, integer=True))
    if count % (tp * pp):
        raise VazaoError(f"gpu_count {count} is not a multiple of tp × pp = {tp * pp}")
    notes = (d.get("notes") or "").lower()
    return MeasuredRow(
        id=d["id"].strip() or f"line-{line}", line=line, engine=d["engine"].strip(), family=family,
        version=parse_version(d.get("engine_version") or ""), model=d["model"].strip(),
        weights=d["precision_weights"].strip(), kv=(d.get("precision_kv_or_compute") or "not stated").strip(),
        gpu=d["gpu"].strip(), gpu_count=count, tp=tp, pp=pp,
        input_len=_length(d["input_len"], "input_len"), output_len=_length(d["output_len"], "output_len"),
        condition=parse_condition(d["concurrency_or_batch"]), metric=metric,
        value=_positive(d["value"], "value", 1e12), median="median" in notes and "mean" not in notes,
        source=(d.get("source") or "").strip(),
    )


def read_rows(path: Path | str) -> tuple[list[MeasuredRow], list[Problem]]:
    """Every row of a measurements CSV; lines that cannot be read come back as Problems."""
    text = inputs.read_text(path, "measurements CSV", max_bytes=MAX_CSV_BYTES)
    return parse_rows(text, str(path))


def parse_rows(text: str, where: str = "measurements CSV") -> tuple[list[MeasuredRow], list[Problem]]:
    if "\x00" in text:
        raise VazaoError(f"{where}: contains NUL bytes; not a CSV file")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        raise VazaoError(f"{where}: empty, or no header line") from None
    header = [h.strip().lstrip("\ufeff") for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise VazaoError(f"{where}: missing column(s) {', '.join(missing)} (the schema of "
                         "shared/data/published-measurements.csv)")
    rows: list[MeasuredRow] = []
    problems: list[Problem] = []
    while True:
        line = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(Problem(line, "", f"malformed CSV: {exc}"))
            continue
        if not cells or all(not c.strip() for c in cells):
            continue
        if len(rows) + len(problems) >= MAX_ROWS:
            raise VazaoError(f"{where}: more than {MAX_ROWS:,} rows")
        if len(cells) != len(header):
            problems.append(Problem(line, cells[0][:40] if cells else "",
                                    f"malformed CSV: {len(cells)} cells where the header has {len(header)}"))
            continue
        if any(len(c) > MAX_CELL for c in cells):
            problems.append(Problem(line, cells[0][:40], f"a cell longer than {MAX_CELL:,} characters"))
            continue
        d = dict(zip(header, cells, strict=True))
        try:
            rows.append(_row(d, line))
        except VazaoError as exc:
            problems.append(Problem(line, d.get("id", "")[:40], str(exc)))
    return rows, problems
