"""One `vazao bench` run: validate the workload, ask the server about itself, probe and calibrate,
then run one level, a sweep of levels, or a search for the highest load that meets an SLO;
every request is logged as it completes, and the result carries the warnings a reader needs."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vazao import limits
from vazao.errors import VazaoError
from vazao.loadgen import redact, server_facts
from vazao.loadgen.client import StreamClient, Target, error_kind, load_tokenizer
from vazao.loadgen.load import LevelResult, LoadOptions, find_max, run_level
from vazao.loadgen.loop import loop_name
from vazao.loadgen.preflight import BenchRefused, Preflight, preflight
from vazao.loadgen.progress import LiveProgress
from vazao.loadgen.prompts import Dataset, PromptBuilder, TextMaker
from vazao.loadgen.records import RecordLog, default_records_path, new_run_id
from vazao.loadgen.waits import within
from vazao.results import SLO, RequestRecord, RunSummary

__all__ = ["FATAL_KINDS", "BenchConfig", "BenchResult", "Outcome", "Verdict", "run_bench"]

# error kinds that say the server cannot serve this run as asked (key, path, streaming,
# max_tokens): a rerun against the same server fails the same way
FATAL_KINDS = ("http_401", "http_403", "http_404", "http_405", "not_streaming", "ignored_max_tokens")

DEFINITIONS = {
    "ttft": "send → first chunk with non-empty content",
    "itl": "every gap between consecutive content chunks, pooled",
    "tpot": "per request (E2E − TTFT) / (output tokens − 1)",
    "e2e": "send → last content chunk",
    "peers": "guidellm 'ITL' = this TPOT, guidellm 'TPOT' includes TTFT; AIPerf 'ITL' = this TPOT",
}


class Outcome(enum.Enum):
    OK = "ok"  # every measured request succeeded
    PARTIAL = "partial"  # measured, with some failed requests, or cut short (interrupted, no level finished)
    FAILED = "failed"  # nothing usable: the server unreachable, refusing, or every request failed


@dataclass(frozen=True)
class Verdict:
    """How a run went, and the exit code a command line should end with: 0 for ok and partial (the
    numbers stand, the warnings say what is missing), 1 when the server failed the run, 2 when the
    run was asked of a server it could not reach (bad input), 128 + the signal that interrupted it."""

    outcome: Outcome
    reason: str
    exit_code: int

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK


@dataclass
class BenchConfig:
    target: Target
    workload: str = "chat"
    records_path: Path | None = None  # None: a new file in records.runs_dir(), never the working directory
    requests: int | None = None
    duration_s: float | None = None
    seed: int | None = None
    concurrency: list[int] | None = None
    rate: list[float] | None = None
    find_max: bool = False
    slo: SLO | None = None
    warmup: int | None = None
    request_timeout_s: float = 300.0
    stall_timeout_s: float = 60.0
    connect_timeout_s: float = 10.0
    max_connections: int = 1024
    max_time_s: float | None = 3600.0
    drain_s: float | None = None
    tokenizer: str | None = None
    dataset: str | None = None
    probe: bool = True
    progress: bool = True
    max_trials: int = 8
    overwrite: bool = False  # the records file may exist already (--force); else it is created new
    run_id: str | None = None  # made at the start of the run when not given
    meta: dict[str, Any] = field(default_factory=dict)

    def levels(self) -> list[dict[str, Any]]:
        if self.concurrency and self.rate:
            raise VazaoError("give concurrency or rate, not both")
        if self.concurrency:
            return [{"concurrency": c} for c in self.concurrency]
        if self.rate:
            return [{"rate": r} for r in self.rate]
        return [{}]


@dataclass
class BenchResult:
    config: BenchConfig
    workload: Any
    preflight: Preflight | None = None
    levels: list[LevelResult] = field(default_factory=list)
    search: str | None = None  # find-max: "rate" | "concurrency"
    best: LevelResult | None = None
    server_after: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    clock_origin: float | None = None  # time.perf_counter() at the run clock's zero
    run_id: str | None = None
    event_loop: str | None = None  # the loop the client ran on: uvloop | asyncio
    stop_signal: int | None = None  # the signal that interrupted the run, where the caller caught one
    records_kept: bool = True  # False: no request reached the server, and the empty records file was removed

    @property
    def sweep(self) -> bool:
        return self.search is not None or len(self.levels) > 1

    @property
    def summary(self) -> RunSummary | None:
        """One level: its summary. Find-max: the best passing level. A sweep: the last level."""
        if self.search is not None:
            return self.best.summary if self.best else None
        return self.levels[-1].summary if self.levels else None

    def all_records(self) -> list[RequestRecord]:
        return [r for lv in self.levels for r in lv.records]

    def verdict(self) -> Verdict:
        """ok, partial or failed, with the reason and the exit code `vazao bench` ends with."""
        if self.interrupted:
            return Verdict(Outcome.PARTIAL, "interrupted: the requests in flight were recorded as cancelled",
                           128 + (self.stop_signal or 2))  # 2: SIGINT, what asyncio's cancel stands for
        recs = self.all_records()
        if recs and all(error_kind(r.error) == "connect" for r in recs):  # a wrong URL without the probe
            detail = recs[0].error.split(":", 1)[1].strip()
            return Verdict(Outcome.FAILED, f"cannot reach {self.config.target.safe_url}: {detail}", 2)
        errors = _merge_errors(self.levels)
        fatal = [k for k in errors if k in FATAL_KINDS]
        if fatal:
            return Verdict(Outcome.FAILED, f"requests failed in ways a rerun will not fix: {', '.join(fatal)}", 1)
        if recs and not any(r.ok for r in recs):
            return Verdict(Outcome.FAILED, "every measured request failed", 1)
        if not recs:
            return Verdict(Outcome.PARTIAL, "no request was measured (the time limit ended the run first)", 0)
        bad = sum(1 for r in recs if not r.ok)
        if bad:
            kinds = ", ".join(f"{k} ×{v}" for k, v in errors.items())
            return Verdict(Outcome.PARTIAL, f"{bad} of {len(recs)} measured requests failed: {kinds}", 0)
        return Verdict(Outcome.OK, "", 0)

    def token_sources(self) -> dict[str, dict[str, int]]:
        recs = self.all_records()
        return {"output": dict(Counter(str(r.extra.get("tokens_from")) for r in recs)),
                "prompt": dict(Counter(str(r.extra.get("prompt_tokens_from")) for r in recs))}

    def to_json(self) -> dict:
        cfg = self.config
        out: dict[str, Any] = {
            "kind": "bench run",
            "summary": self.summary,
            "run": {"url": cfg.target.safe_url, "model": self.preflight.model if self.preflight else cfg.target.model,
                    "api": cfg.target.api, "workload": getattr(self.workload, "name", cfg.workload),
                    "workload_description": self.workload.describe() if self.workload is not None else None,
                    "workload_spec": cfg.workload, "requests": cfg.requests, "seed": cfg.seed,
                    "duration_s": cfg.duration_s,
                    "records": str(cfg.records_path) if self.records_kept and cfg.records_path else None,
                    "run_id": self.run_id, "interrupted": self.interrupted},
            "errors": _merge_errors(self.levels),
            "tokens": self.token_sources(),
            "client": _client_json(self.levels, self.event_loop),
            "server": self._server_json(),
            "warnings": self.warnings,
            "definitions": DEFINITIONS,
        }
        if cfg.slo is not None:
            out["slo"] = dict(cfg.slo.limits)
        if self.preflight is not None:
            out["calibration"] = self.preflight.sizing.to_json()
        if self.sweep:
            out["points"] = [lv.to_json() for lv in self.levels]
        else:
            lv = self.levels[-1] if self.levels else None
            if lv is not None:
                out["run"].update(lv.level)
                out["run"].update({"stopped": lv.stopped, "not_sent": lv.not_sent,
                                   "warmup_requests": len(lv.warmup)})
        if self.search is not None:
            out["search"] = self.search
            out[f"max_{self.search}"] = self.best.level[self.search] if self.best else None
        return out

    def _server_json(self) -> dict:
        facts = dict(self.preflight.facts) if self.preflight else {}
        facts.update(self.server_after)
        return facts


def _merge_errors(levels: list[LevelResult]) -> dict[str, int]:
    c: Counter = Counter()
    for lv in levels:
        c.update(lv.errors)
    return dict(c.most_common())


def _client_json(levels: list[LevelResult], event_loop: str | None = None) -> dict:
    if not levels:
        return {}
    cpu = [lv.cpu for lv in levels]
    wall = sum(c.wall_s for c in cpu)
    cpu_s = sum(c.cpu_s for c in cpu)
    chunks = sum(c.chunks for c in cpu)
    lags = [c.loop_lag_p99_s for c in cpu if c.loop_lag_p99_s is not None]
    return {
        "cpu_s": cpu_s, "wall_s": wall, "share_of_core": cpu_s / wall if wall else None,
        "peak_share_of_core": max(c.peak_share_of_core for c in cpu), "chunks": chunks,
        "us_per_chunk": cpu_s / chunks * 1e6 if chunks else None,
        "loop_lag_p99_s": max(lags) if lags else None,
        "peak_in_flight": max(lv.peak_in_flight for lv in levels),
        "event_loop": event_loop,
    }


def _plan(cfg: BenchConfig, level: dict[str, Any]):
    from vazao.workload import load_workload

    w = load_workload(cfg.workload, requests=cfg.requests, rate=level.get("rate"),
                      concurrency=level.get("concurrency"), seed=cfg.seed, duration_s=cfg.duration_s)
    if w.requests is not None and w.requests > limits.MAX_BENCH_REQUESTS:
        raise VazaoError(f"workload {w.name}: {w.requests:,} requests is over the limit of "
                         f"{limits.MAX_BENCH_REQUESTS:,} "
                         "per level (give duration_s for a long run)", parameter="duration_s")
    plan = w.iter_specs()  # lazily: memory stays flat, and the first request goes out at once
    warmup = w.warmup if cfg.warmup is None else cfg.warmup
    return w, plan, warmup


def level_label(level: Mapping[str, Any], short: bool = False) -> str:
    """A sweep level in words ("concurrency 8", "rate 2/s"), or as a table cell (short: "c=8", "2/s")."""
    if "concurrency" in level:
        return f"c={level['concurrency']}" if short else f"concurrency {level['concurrency']}"
    if "rate" in level:
        return f"{level['rate']:g}/s" if short else f"rate {level['rate']:g}/s"
    return "-" if short else "bench"


async def run_bench(cfg: BenchConfig, result: BenchResult | None = None) -> BenchResult:
    """Run everything `cfg` asks for. `result` (optional) is filled in as levels finish, so a caller
    that is interrupted (the task cancelled: Ctrl-C, SIGTERM) still holds what was measured,
    the level that was running included, with its requests in flight recorded as cancelled."""
    with redact.scope(cfg.target.secrets()):
        return await _run_bench(cfg, result)


async def _run_bench(cfg: BenchConfig, result: BenchResult | None) -> BenchResult:
    deadline = time.perf_counter() + cfg.max_time_s if cfg.max_time_s else None
    levels = cfg.levels()
    if cfg.find_max and cfg.slo is None:
        raise VazaoError("find_max needs an SLO to meet (e.g. ttft_p95=1s)")
    if cfg.find_max and len(levels) > 1:
        raise VazaoError("find_max starts from one rate or concurrency value, not a list")
    workload, _, _ = _plan(cfg, levels[0])  # an invalid workload fails here, before any traffic
    result = result or BenchResult(cfg, workload)
    result.workload = workload
    result.run_id = cfg.run_id or new_run_id()
    tokenizer = load_tokenizer(cfg.tokenizer) if cfg.tokenizer else None
    dataset = Dataset.load(cfg.dataset) if cfg.dataset else None
    maker = TextMaker(seed=workload.seed, tokenizer=tokenizer)
    drain = cfg.drain_s if cfg.drain_s is not None else min(cfg.request_timeout_s, 30.0)
    result.event_loop = loop_name()
    meta = {"tool": "vazao bench", "url": cfg.target.safe_url, "api": cfg.target.api, "event_loop": result.event_loop,
            "workload": workload.name, "workload_description": workload.describe(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **cfg.meta}
    progress = LiveProgress(enabled=cfg.progress)
    if cfg.records_path is None:
        cfg.records_path = default_records_path()
    log: RecordLog | None = None
    try:
        with RecordLog(cfg.records_path, meta, run_id=result.run_id, overwrite=cfg.overwrite) as log:
            async with StreamClient(cfg.target, request_timeout_s=cfg.request_timeout_s,
                                    stall_timeout_s=cfg.stall_timeout_s, connect_timeout_s=cfg.connect_timeout_s,
                                    max_connections=cfg.max_connections, tokenizer=tokenizer) as client:
                result.clock_origin = client.origin
                log.note("clock", perf_counter_origin=client.origin)
                try:
                    await _levels(cfg, result, client, log, maker, dataset, progress, levels, deadline, drain)
                except asyncio.CancelledError:
                    result.interrupted = True
                    raise
                finally:
                    result.server_after = await _after(client, result)
                    log.note("end", summary=result.summary, server_after=result.server_after,
                             interrupted=result.interrupted,
                             points=[{**lv.level, "summary": lv.summary} for lv in result.levels])
    finally:
        result.warnings[:0] = collect_warnings(result)
        progress.close()
        if log is not None and log.reached == 0:
            # nothing got to the server (a wrong URL, a refused connection): the file would hold only
            # the meta line and failed connects, clutter where the user looks for measured runs
            with contextlib.suppress(OSError):
                log.path.unlink()
            result.records_kept = False
    return result


async def _preflight(client: StreamClient, maker: TextMaker, log: RecordLog, probe: bool,
                     deadline: float | None) -> Preflight:
    if deadline is None:
        return await preflight(client, maker, log, probe=probe)
    try:
        return await within(preflight(client, maker, log, probe=probe), max(0.0, deadline - time.perf_counter()))
    except asyncio.TimeoutError:
        raise BenchRefused("the run's time limit (max_time_s) ran out during the pre-flight "
                           "(server facts and probe requests)") from None


async def _levels(cfg: BenchConfig, result: BenchResult, client: StreamClient, log: RecordLog, maker: TextMaker,
                  dataset: Dataset | None, progress: LiveProgress, levels: list[dict[str, Any]],
                  deadline: float | None, drain: float) -> None:
    workload = result.workload
    pre = await _preflight(client, maker, log, cfg.probe, deadline)
    result.preflight = pre
    log.note("server", **pre.facts, model=pre.model, calibration=pre.sizing.to_json(), notes=pre.notes)
    builder = PromptBuilder(maker, pre.sizing, cfg.target.api, dataset)
    point = 0
    multi = cfg.find_max or len(levels) > 1

    async def trial(level: dict[str, Any]) -> LevelResult:
        nonlocal point
        w, plan, warmup = _plan(cfg, level)
        log.note("point", index=point, **level)
        lv = await run_level(
            client, builder, plan, concurrency=w.concurrency, warmup=warmup, log=log,
            progress=progress, total=w.requests,
            options=LoadOptions(duration_s=cfg.duration_s or w.duration_s, drain_s=drain, deadline=deadline),
            slo=cfg.slo, level=level, point=point if multi else None, label=level_label(level),
            on_interrupt=result.levels.append)
        point += 1
        result.levels.append(lv)
        return lv

    if cfg.find_max:
        key = "concurrency" if cfg.concurrency else "rate"
        result.search = key
        start = levels[0].get(key) or (workload.arrival.rate if key == "rate" else None) or 1.0
        best, _ = await find_max(lambda x: trial({key: int(x) if key == "concurrency" else x}),
                                 cfg.slo, float(start), integer=key == "concurrency", max_trials=cfg.max_trials)
        result.best = best
        return
    for level in levels:
        if deadline is not None and time.perf_counter() >= deadline:
            result.warnings.append(f"the run's time limit ended the sweep before {level}")
            break
        await trial(level)


async def _after(client: StreamClient, result: BenchResult) -> dict[str, Any]:
    if client.pool is None or result.preflight is None:
        return {}
    before = result.preflight.facts.get("metrics_before")
    if not before:
        return {}
    try:
        after = await asyncio.wait_for(
            server_facts.scrape_metrics(client.pool, client.target.root_url, client.headers), 6)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        return {}
    delta = server_facts.metrics_delta(before, after)
    out: dict[str, Any] = {"metrics_after": after, "metrics_delta": delta}
    sent = [*result.preflight.probes, *(r for lv in result.levels for r in (*lv.warmup, *lv.records))]
    client_out = sum(r.output_tokens for r in sent)
    client_in = sum(r.prompt_tokens for r in sent if r.status == 200)
    for name, mine in (("generation_tokens_total", client_out), ("prompt_tokens_total", client_in)):
        for k, v in delta.items():
            if k.endswith(name):
                out.setdefault("server_vs_client", {})[name] = {"server": v, "client": mine}
    return out


def collect_warnings(result: BenchResult) -> list[str]:
    cfg = result.config
    out: list[str] = []
    if result.preflight is not None:
        out += result.preflight.notes
    for lv in result.levels:
        where = f"[{level_label(lv.level)}] " if len(result.levels) > 1 else ""
        out += [where + w for w in lv.cpu.warnings()]
        if lv.dispatch_lag_p99_s is not None and lv.dispatch_lag_p99_s > 0.025:
            out.append(f"{where}requests left the client up to {lv.dispatch_lag_p99_s * 1e3:.0f} ms (p99) later "
                       "than planned: the client could not keep the arrival schedule")
        if lv.peak_in_flight >= cfg.max_connections:
            out.append(f"{where}{lv.peak_in_flight} requests were in flight against a limit of "
                       f"{cfg.max_connections} connections: later ones queued inside the client "
                       "(raise max_connections)")
        if lv.not_sent:
            out.append(f"{where}{lv.not_sent} planned requests were not sent: the level's time ran out ({lv.stopped})")
        n, bad = len(lv.records), sum(lv.errors.values())
        if bad:
            kinds = ", ".join(f"{k} ×{v}" for k, v in lv.errors.items())
            out.append(f"{where}{bad} of {n} requests failed: {kinds}")
    recs = [r for r in result.all_records() if r.ok]
    if recs:
        asked = sum(int(r.extra.get("max_tokens", 0)) for r in recs) / len(recs)
        got = sum(r.output_tokens for r in recs) / len(recs)
        if asked and got < 0.9 * asked:
            out.append(f"the server stopped early: {asked:.0f} output tokens asked on average, {got:.0f} "
                       "received (end of sequence); pass --ignore-eos where the server supports it")
        src = Counter(r.extra.get("tokens_from") for r in recs)
        if src.get("chunks"):
            out.append("output tokens were counted as one per content chunk (the server sent no usage); "
                       "pass --tokenizer tokenizer.json to count them exactly")
        planned = [(r.prompt_tokens, r.extra["planned_prompt_tokens"]) for r in recs
                   if r.extra.get("planned_prompt_tokens")]
        if planned:
            err = sum(abs(a - p) / p for a, p in planned) / len(planned)
            if err > 0.1:
                out.append(f"prompts differed from their planned sizes by {err:.0%} on average "
                           "(the server's counts are used in the summary)")
    return list(dict.fromkeys(out))
