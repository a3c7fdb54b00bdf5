"""The user's own `vazao bench` runs as measured rows, so `vazao calibrate runs/` fits on them.

A bench result JSON (what `vazao bench --output run.json` writes) holds one summary per load level:
`run.concurrency` / `run.rate` and `summary` for a single level, or `points` for a sweep. Each level
gives up to four rows — mean TTFT, mean ITL, mean TPOT and output tokens/s — at that concurrency or
request rate, with the level's mean prompt and output lengths. The result does not say what served it,
so the deployment (model, GPU, format, counts) comes from the caller; a run whose server named a
catalog model is read as that model when the caller names none.

Mean lengths stand for the run's length distribution: a workload with a long tail of outputs is
predicted as if every request had the mean (stated in every row's source)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.validate.rows import Condition, MeasuredRow, Problem


@dataclass(frozen=True)
class RunDeployment:
    """What served the runs: names as the catalogs know them."""

    engine: str  # engine family (engines.yaml)
    gpu: str
    model: str | None = None  # None: the model the server named
    weights: str = ""  # "": the model file's own format (a GGUF's), else bf16
    kv: str = "not stated"
    gpu_count: int = 1
    tp: int = 1
    pp: int = 1


def run_files(path: Path | str) -> list[Path]:
    """The bench result files under `path` (a file, or a folder searched for *.json)."""
    p = Path(path)
    if not p.is_dir():
        return [inputs.input_file(p, "bench result")]
    files = sorted(f for f in p.rglob("*.json") if f.is_file())
    if not files:
        raise VazaoError(f"bench runs {p}: no *.json result files in this folder")
    if len(files) > limits.MAX_RUN_FILES:
        raise VazaoError(f"bench runs {p}: {len(files):,} JSON files is over the limit of {limits.MAX_RUN_FILES:,}")
    return files


def _levels(doc: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(level, summary) pairs of one result: the sweep's points, or the single run."""
    if isinstance(doc.get("points"), list):
        return [(p, p["summary"]) for p in doc["points"] if isinstance(p, Mapping) and isinstance(p.get("summary"),
                                                                                                   Mapping)]
    run, summary = doc.get("run"), doc.get("summary")
    if isinstance(run, Mapping) and isinstance(summary, Mapping):
        return [(run, summary)]
    return []


def _condition(level: Mapping[str, Any]) -> Condition | None:
    if isinstance(level.get("concurrency"), int) and level["concurrency"] > 0:
        return Condition("concurrency", float(level["concurrency"]))
    rate = level.get("rate")
    if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate > 0:
        return Condition("rate", float(rate))
    return None


def _count(value: Any) -> int:
    """A token or request count from a result file: a non-negative integer, else 0 (the level is skipped)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return 0
    return int(value)


def _mean(summary: Mapping[str, Any], key: str) -> float | None:
    lat = summary.get(key)
    v = lat.get("mean") if isinstance(lat, Mapping) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 \
        else None


def level_rows(doc: Mapping[str, Any], dep: RunDeployment, where: str) -> tuple[list[MeasuredRow], list[Problem]]:
    """The rows of one bench result `doc` (read from `where`)."""
    rows: list[MeasuredRow] = []
    problems: list[Problem] = []
    levels = _levels(doc)
    if not levels:
        return rows, [Problem(0, where, "not a vazao bench result (no summary or points)")]
    served = (doc.get("run") or {}).get("model") if isinstance(doc.get("run"), Mapping) else None
    model = dep.model or (str(served) if served else None)
    if not model:
        return rows, [Problem(0, where, "the run does not name its model; give the model")]
    for i, (level, summary) in enumerate(levels):
        rid = f"{Path(where).stem}#{i}"
        cond = _condition(level)
        ok = _count(summary.get("requests")) - _count(summary.get("errors"))
        if cond is None:
            problems.append(Problem(0, rid, "the level names no concurrency or request rate"))
            continue
        if ok <= 0:
            problems.append(Problem(0, rid, "no request of this level succeeded"))
            continue
        prompt = round(_count(summary.get("prompt_tokens")) / ok)
        output = round(_count(summary.get("output_tokens")) / ok)
        if prompt < 1 or output < 1:
            problems.append(Problem(0, rid, "the summary has no prompt or output token counts"))
            continue
        values = {"ttft_ms": _mean(summary, "ttft_s"), "itl_ms": _mean(summary, "itl_s"),
                  "tpot_ms": _mean(summary, "tpot_s")}
        values = {k: v * 1e3 for k, v in values.items() if v is not None}
        tok_s = summary.get("output_tokens_per_s")
        if isinstance(tok_s, (int, float)) and not isinstance(tok_s, bool) and math.isfinite(tok_s) and tok_s > 0:
            values["output_tok_s_total"] = float(tok_s)
        for metric, value in values.items():
            rows.append(MeasuredRow(
                id=f"{rid}:{metric}", line=0, engine=dep.engine, family=dep.engine, version=None, model=model,
                weights=dep.weights, kv=dep.kv, gpu=dep.gpu, gpu_count=dep.gpu_count, tp=dep.tp, pp=dep.pp,
                input_len=prompt, output_len=output, condition=cond, metric=metric, value=value, median=False,
                source=f"{where} (vazao bench; mean lengths {prompt}/{output})", uniform_lengths=False))
    return rows, problems


def read_runs(paths: Iterable[Path], dep: RunDeployment) -> tuple[list[MeasuredRow], list[Problem]]:
    rows: list[MeasuredRow] = []
    problems: list[Problem] = []
    for f in paths:
        doc = inputs.read_json(f, "bench result")
        if not isinstance(doc, Mapping):
            problems.append(Problem(0, str(f), "not a vazao bench result (not a JSON object)"))
            continue
        r, p = level_rows(doc, dep, str(f))
        rows += r
        problems += p
    return rows, problems
