"""simulate(): a Deployment serving a Workload, step by step through `step_cost`; compare() and sweep()
run it over comparison variants and over rates or concurrencies."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any

from vazao import limits
from vazao.bands import Band, deployment_band
from vazao.errors import VazaoError
from vazao.physics.energy import board_power_w, electricity_usd_per_mtok, idle_power_w
from vazao.physics.memory import attention_ranks, fit
from vazao.physics.pipeline import microbatches
from vazao.physics.step import BatchShape, step_cost
from vazao.resultfiles import from_document
from vazao.results import SLO, RequestRecord, RunSummary, TaskSummary, summarize_tasks
from vazao.sim.config import DisaggConfig, SimConfig, apply_axis
from vazao.sim.disagg import KVLink
from vazao.sim.engine import Engine
from vazao.sim.loop import Runner
from vazao.sim.speculative import SpecModel
from vazao.sim.stats import Stats, TimelinePoint
from vazao.workload import Workload

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment


@dataclass(frozen=True)
class SimEnergy:
    """The boards' draw over a simulated run (physics/energy.py): busy steps at the draw of a step of
    the run's mean shape (its mean batch decoding, its mean prompt prefilling, each for its share of the
    busy time), idle between them; joules per output token at the run's steady throughput."""

    serving_w_per_gpu: float
    idle_w_per_gpu: float
    busy_share: float  # of the engines' simulated time
    mean_w_per_gpu: float
    gpus: int
    j_per_output_token: float | None
    electricity_usd_per_mtok: float | None = None  # per million output tokens at the catalog's site

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SimEnergy:
        return from_document(cls, d)


def sim_energy(dep: Deployment, summary: RunSummary, stats: Stats, engines: int, completed: int,
               prompt_tokens: int) -> SimEnergy | None:
    """See SimEnergy. The busy share is the engines' busy time over their simulated time (the run's
    span, every engine counted); an engine that runs a pp-th of a pipelined replica counts a pp-th of
    its boards, which is what dep.count over `engines` gives."""
    acc = dep.accelerator
    idle = idle_power_w(acc)
    if idle is None or stats.busy_s <= 0 or completed <= 0:
        return None
    batch = max(1, round(stats.seq_s / stats.busy_s))
    mean_in = max(1, round(prompt_tokens / completed))
    mean_out = max(1, round(summary.output_tokens / max(1, summary.requests)))
    dec = step_cost(dep, BatchShape.decode(batch, mean_in + mean_out // 2))
    pf = step_cost(dep, BatchShape.prefill(1, mean_in))
    w_dec, w_pf = board_power_w(acc, dec), board_power_w(acc, pf)
    if w_dec is None or w_pf is None:
        return None
    pf_s = min(stats.busy_s, completed * pf.time_s)  # the prefills' share of the busy time
    serving = (pf_s * w_pf + (stats.busy_s - pf_s) * w_dec) / stats.busy_s
    span = max(stats.busy_s / engines, summary.duration_s)
    busy = min(1.0, stats.busy_s / (engines * span)) if span > 0 else 1.0
    mean_w = idle + busy * (serving - idle)
    out = summary.output_tokens_per_s
    j = mean_w * dep.count / out if out > 0 else None
    return SimEnergy(serving, idle, busy, mean_w, dep.count, j, electricity_usd_per_mtok(j))


@dataclass(frozen=True)
class SimResult:
    """A simulated run: the RunSummary every tool shares, plus what only a simulator can see."""

    summary: RunSummary
    workload: str
    deployment: str
    config: str
    completed: int
    errors: int
    unfinished: int  # planned but never served: past an overload bound, or after a refused turn
    preemptions: int
    prompt_tokens: int  # over every completed request (warm-up included)
    prefill_tokens: int  # prompt tokens actually computed (cache hits and recomputes accounted)
    cached_prompt_tokens: int  # prompt tokens served by the prefix cache at first admission
    steps: int
    mean_batch: float  # sequences per engine step, weighted by step time
    peak_running: int  # most requests holding KV at once on one replica
    kv_blocks_per_replica: int
    block_size: int
    kv_capacity_tokens: int  # per replica
    timeline: tuple[TimelinePoint, ...]
    warnings: tuple[str, ...]
    wall_s: float
    kv_blocks_in_use_at_end: int = 0  # a self-check: every finished request gave its blocks back
    # 80% bands (low, high, note) of the headline figures from the engine profile's calibration
    bands: dict[str, Band] | None = None
    # grouped by task (an agent workload's tasks: results.summarize_tasks); None for workloads without tasks
    tasks: TaskSummary | None = None
    # the boards' energy over the run (sim_energy); None where the accelerator has no published rating
    energy: SimEnergy | None = None
    _stats: Stats | None = field(default=None, repr=False, compare=False)

    @property
    def cache_hit_share(self) -> float:
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def simulated_requests_per_s(self) -> float:
        return self.completed / self.wall_s if self.wall_s > 0 else 0.0

    def records(self, include_warmup: bool = False) -> list[RequestRecord]:
        return self._stats.records(counted_only=not include_warmup) if self._stats else []

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload, "deployment": self.deployment, "config": self.config,
            "completed": self.completed, "errors": self.errors, "unfinished": self.unfinished,
            "preemptions": self.preemptions, "prompt_tokens": self.prompt_tokens,
            "prefill_tokens": self.prefill_tokens, "cached_prompt_tokens": self.cached_prompt_tokens,
            "cache_hit_share": self.cache_hit_share, "steps": self.steps, "mean_batch": self.mean_batch,
            "peak_running": self.peak_running, "kv_blocks_per_replica": self.kv_blocks_per_replica,
            "block_size": self.block_size, "kv_capacity_tokens": self.kv_capacity_tokens,
            "timeline": [p.to_json() for p in self.timeline], "warnings": list(self.warnings),
            "wall_s": self.wall_s, "kv_blocks_in_use_at_end": self.kv_blocks_in_use_at_end,
            "bands": self.bands,
            **({"tasks": self.tasks.to_json()} if self.tasks is not None else {}),
            "energy": None if self.energy is None else self.energy.to_json(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any], summary: RunSummary | None = None) -> SimResult:
        """A run from its JSON. Its summary is not in it but beside it (a simulation document's, a
        variant's or a point's "summary"): given, else read from a "summary" key in `d`. The run's
        columns (records()) stay behind: a result read back has no records."""
        if summary is None:
            if "summary" not in d:
                raise VazaoError("a simulated run's JSON holds no summary: pass the document's beside it")
            summary = RunSummary.from_json(d["summary"])
        e = d.get("energy")
        return from_document(cls, d, summary=summary, energy=None if e is None else SimEnergy.from_json(e))


def kv_blocks(dep: Deployment, cfg: SimConfig, max_context: int) -> tuple[int, int]:
    """(blocks, tokens) of KV cache per replica: fit()'s capacity, less a draft model's share."""
    f = fit(dep, max_context)
    if not f.weights_fit:
        raise VazaoError(f"{dep.label()}: {f.reason}")
    tokens = f.kv_capacity_tokens
    if cfg.spec and cfg.spec.draft_model is not None:
        draft_w, draft_kv = SpecModel(cfg.spec, dep).memory()
        free = f.free_bytes_for_kv / dep.count - draft_w
        # each GPU's tokens; under attention data parallelism the replica's tp GPUs hold their own
        tokens = int(max(0.0, free) / (f.kv_bytes_per_token_per_gpu + draft_kv)) * attention_ranks(dep)
    return tokens // cfg.block_size, tokens


def resolve_config(dep: Deployment, workload: Workload, config: SimConfig | None = None) -> SimConfig:
    """The settings a run uses: `config`, else the engine's preset; with no max_context, the workload's
    longest request, rounded up, at most the model's own context: what a plan's command sets (--max-model-len,
    --context-length, a llama.cpp slot), and so what the engine must hold to start. A reserved layout sets
    aside each slot's whole context up front (a llama.cpp slot is -c / -np tokens; the model's 131,072 per
    slot would hold no sequence on a 12 GB card); a paged one needs one such sequence to fit (vLLM will not
    start otherwise). Requests past the model's own context are refused either way."""
    cfg = config or SimConfig.from_engine(dep.engine)
    if cfg.max_context is None:
        from vazao.workload import context_for

        cfg = replace(cfg, max_context=context_for(workload, dep.model.max_context))
    return cfg


def _check_capacity(cfg: SimConfig, blocks: int, tokens: int, max_context: int, label: str) -> None:
    if blocks < 1:
        raise VazaoError(f"{label}: the KV cache holds {tokens} tokens, less than one block of "
                         f"{cfg.block_size}: no request can be served")
    need = -(-max_context // cfg.block_size)
    if cfg.kv_layout == "reserved" and need > blocks:
        raise VazaoError(
            f"{label}: the reserved KV layout sets aside max_context = {max_context:,} tokens per "
            f"sequence but a replica's KV cache holds {blocks * cfg.block_size:,}: not even one request "
            f"fits; lower max_context or use the paged layout")
    if need > blocks:
        # vLLM refuses to start when its KV cache cannot hold one max_model_len sequence
        # (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory); plan prunes such a shape alike
        raise VazaoError(
            f"{label}: the engine would not start: one sequence of max_context = {max_context:,} tokens (the "
            f"workload's longest request, unless set) needs more KV cache than a replica's {blocks * cfg.block_size:,} "
            f"tokens; lower max_context (longer requests are then refused) or give it more memory")


def check_size(dep: Deployment, workload: Workload) -> None:
    """Refuse, before any work, a run whose memory or time no machine has: the simulator holds every
    request it has served, every sequence in flight and one KV pool per replica (vazao.limits)."""
    name = f"workload {workload.name}"
    if workload.requests is not None and workload.requests > limits.MAX_SIM_REQUESTS:
        raise VazaoError(f"{name}: {workload.requests:,} requests; the simulator runs at most "
                         f"{limits.MAX_SIM_REQUESTS:,}")
    a = workload.arrival
    if a.concurrency is not None and a.concurrency > limits.MAX_CONCURRENCY:
        raise VazaoError(f"{name}: concurrency {a.concurrency:,}; the simulator runs at most "
                         f"{limits.MAX_CONCURRENCY:,} requests in flight")
    if a.rate is not None and a.rate > limits.MAX_RATE:
        raise VazaoError(f"{name}: rate {a.rate:g}/s; the simulator takes at most {limits.MAX_RATE:,}/s")
    if (workload.requests is None and a.rate is not None and workload.duration_s is not None
            and a.rate * workload.duration_s > limits.MAX_SIM_REQUESTS):
        raise VazaoError(f"{name}: {a.rate:g}/s for {workload.duration_s:g} s is about "
                         f"{a.rate * workload.duration_s:,.0f} requests; the simulator runs at most "
                         f"{limits.MAX_SIM_REQUESTS:,}")
    if dep.replicas > limits.MAX_SIM_REPLICAS:
        raise VazaoError(f"{dep.label()}: {dep.replicas:,} replicas; the simulator runs at most "
                         f"{limits.MAX_SIM_REPLICAS:,} engines")


Progress = Callable[[int, int], None]  # (done, total), as report.progress.progress_bar takes it
OnSample = Callable[[float, int], None]  # (simulated time, requests done), as Stats.on_sample takes it


def _request_progress(workload: Workload, progress: Progress | None, offset: int = 0,
                      total: int | None = None) -> OnSample | None:
    """A Stats.on_sample hook turning the run's advance into (done, total): requests served out of
    those planned, else simulated seconds out of the duration."""
    if progress is None:
        return None
    if workload.requests:
        planned = workload.requests
        grand = total or planned
        return lambda t, n: progress(offset + min(n, planned), grand)
    if workload.duration_s:
        d = workload.duration_s
        grand = total or int(d)
        return lambda t, n: progress(offset + int(min(t, d)), grand)
    return None


def _run_size(workload: Workload) -> int:
    return workload.requests or int(workload.duration_s or 0)


def simulate(dep: Deployment, workload: Workload, config: SimConfig | None = None, slo: SLO | None = None,
             progress: Progress | None = None) -> SimResult:
    """Serve `workload` on `dep` (each replica its own engine) and summarise it. `progress(done,
    total)` is called a few hundred times over the run (requests served, or simulated seconds)."""
    return _simulate(dep, workload, config, slo, _request_progress(workload, progress))


def _simulate(dep: Deployment, workload: Workload, config: SimConfig | None, slo: SLO | None,
              on_sample: OnSample | None) -> SimResult:
    check_size(dep, workload)
    cfg = resolve_config(dep, workload, config)
    max_context = cfg.max_context or dep.model.max_context
    blocks, tokens = kv_blocks(dep, cfg, max_context)
    _check_capacity(cfg, blocks, tokens, max_context, dep.label())
    if not workload.bounded and workload.duration_s is None:
        raise VazaoError(f"workload {workload.name}: set requests or a duration")
    stats = Stats(cfg.timeline_points)
    stats.on_sample = on_sample
    replicas = dep.replicas
    link = None
    if cfg.disagg:
        d: DisaggConfig = cfg.disagg
        if d.prefill + d.decode != replicas:
            raise VazaoError(f"disaggregation {d.prefill}:{d.decode} needs {d.prefill + d.decode} replicas; "
                             f"{dep.label()} has {replicas} (count / (tp × pp))")
        first = [Engine(dep, cfg, blocks, max_context, stats, None, index=i, role="prefill")
                 for i in range(d.prefill)]
        second = [Engine(dep, cfg, blocks, max_context, stats, None, index=d.prefill + i, role="decode")
                  for i in range(d.decode)]
        link = KVLink.of(dep, d)
    else:
        # pipeline-parallel engines keep pp micro-batches in flight: pp engines on a pp-th of the KV each
        micro = microbatches(dep)
        if blocks // micro < 1:
            micro = 1
        first = [Engine(dep, cfg, blocks // micro, max_context, stats, None, index=i)
                 for i in range(replicas * micro)]
        second = []
    runner = Runner(workload, first, second, stats, link, cfg.max_waiting, dep.engine.request_overhead_s,
                    cfg.client_reaction_s)
    t0 = time.perf_counter()
    runner.run()
    wall = time.perf_counter() - t0

    warnings: list[str] = []
    unfinished = runner.unsent
    if runner.stopped:
        warnings.append(f"{runner.stopped}; {unfinished:,} planned requests not served, the summary covers "
                        "those that were")
    errors = len(stats.r_error)
    completed = len(stats.r_id) - errors
    if errors:
        first_reason = next(iter(stats.r_error.values()))
        warnings.append(f"{errors:,} requests could not be served: {first_reason}")
    if stats.preemptions:
        warnings.append(f"{stats.preemptions:,} preemptions: the KV cache ran out and requests were recomputed")
    summary = stats.summary(slo)
    regime = "queueing" if workload.arrival.kind == "burst" else "serving"
    figures = {"output_tokens_per_s": (summary.output_tokens_per_s, ""),
               "ttft_p95_s": (summary.ttft_s.p95, "ttft_ms"), "itl_p95_s": (summary.itl_s.p95, "itl_ms"),
               "tpot_p50_s": (summary.tpot_s.p50, "tpot_ms"), "e2e_p95_s": (summary.e2e_s.p95, "e2e_latency_ms")}
    found = {k: deployment_band(dep, regime, v, metric=m) for k, (v, m) in figures.items() if v}
    bands = {k: v for k, v in found.items() if v} or None
    prompt_tokens = sum(p for i, p in enumerate(stats.r_prompt) if i not in stats.r_error)
    return SimResult(
        summary=summary,
        workload=workload.name,
        deployment=dep.label(),
        config=cfg.describe(),
        completed=completed,
        errors=errors,
        unfinished=unfinished,
        preemptions=stats.preemptions,
        prompt_tokens=prompt_tokens,
        prefill_tokens=stats.prefill_tokens,
        cached_prompt_tokens=stats.cached_tokens,
        steps=stats.steps,
        mean_batch=stats.seq_s / stats.busy_s if stats.busy_s else 0.0,
        peak_running=stats.peak_running,
        kv_blocks_per_replica=blocks,
        block_size=cfg.block_size,
        kv_capacity_tokens=tokens,
        timeline=tuple(stats.timeline),
        warnings=tuple(warnings),
        wall_s=wall,
        kv_blocks_in_use_at_end=sum(e.pool.num_used for e in first + second),
        bands=bands,
        tasks=_tasks(workload, runner, stats),
        energy=sim_energy(dep, summary, stats, len(first) + len(second), completed, prompt_tokens),
        _stats=stats,
    )


def _tasks(workload: Workload, runner: Runner, stats: Stats) -> TaskSummary | None:
    """The run grouped by task, when its requests belong to tasks. An agent task cut short by the plan's
    `requests` or by the run's end counts as incomplete (it planned fewer calls than its loop makes)."""
    if not runner.task_sizes:
        return None
    planned = runner.task_sizes
    if workload.agent is not None:
        planned = dict.fromkeys(planned, workload.agent.loop.requests_per_task)
    return summarize_tasks(stats.iter_records(), runner.task_ids, planned)


# ---- several runs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    name: str
    result: SimResult
    throughput_ratio: float  # output tokens/s over the first variant's

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.result.summary.to_json(),
                "throughput_ratio": self.throughput_ratio, "sim": self.result.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Variant:
        return cls(d["name"], SimResult.from_json(d["sim"], RunSummary.from_json(d["summary"])),
                   float(d["throughput_ratio"]))


def compare(dep: Deployment, workload: Workload, config: SimConfig, axes: Sequence[tuple[str, Sequence[str]]],
            slo: SLO | None = None, progress: Progress | None = None) -> list[Variant]:
    """Every combination of the axes' values (the first axis varies slowest), named `axis=value …`;
    `progress(done, total)` over all the runs together."""
    combos = list(itertools.product(*[[(axis, v) for v in values] for axis, values in axes]))
    size = _run_size(workload)
    runs: list[tuple[str, SimResult]] = []
    for i, combo in enumerate(combos):
        cfg, d = config, dep
        for axis, value in combo:
            cfg, d = apply_axis(cfg, d, axis, value)
        name = " ".join(f"{a}={v}" for a, v in combo)
        hook = _request_progress(workload, progress, i * size, len(combos) * size)
        runs.append((name, _simulate(d, workload, cfg, slo, hook)))
    base = runs[0][1].summary.output_tokens_per_s if runs else 0.0
    return [Variant(n, r, r.summary.output_tokens_per_s / base if base else 0.0) for n, r in runs]


class SweepKind(str, Enum):
    """What a sweep varies: a Poisson rate (requests/s) or a closed loop's concurrency. A str, so it
    compares, hashes, formats and writes to JSON as its value ("rate", "concurrency")."""

    RATE = "rate"
    CONCURRENCY = "concurrency"

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)


@dataclass(frozen=True)
class Point:
    kind: SweepKind
    value: float
    result: SimResult

    def to_json(self) -> dict[str, Any]:
        return {self.kind.value: self.value, "summary": self.result.summary.to_json(), "sim": self.result.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Point:
        """The point's kind is the key its level is under ("rate": 4.0, or "concurrency": 8)."""
        kind = next(k for k in SweepKind if k.value in d)
        return cls(kind, d[kind.value], SimResult.from_json(d["sim"], RunSummary.from_json(d["summary"])))


def sweep(dep: Deployment, workload: Workload, config: SimConfig, *, rates: Sequence[float] = (),
          concurrencies: Sequence[int] = (), slo: SLO | None = None, progress: Progress | None = None) -> list[Point]:
    """One run per rate (Poisson) or per concurrency (closed loop): the latency–throughput curve;
    `progress(done, total)` over all the runs together."""
    if rates and concurrencies:
        raise VazaoError("sweep either rates or concurrencies, not both")
    levels = [(SweepKind.RATE, r, workload.with_overrides(rate=r)) for r in rates]
    levels += [(SweepKind.CONCURRENCY, c, workload.with_overrides(concurrency=c)) for c in concurrencies]
    sizes = [_run_size(w) for _, _, w in levels]
    points: list[Point] = []
    for i, (kind, value, w) in enumerate(levels):
        hook = _request_progress(w, progress, sum(sizes[:i]), sum(sizes))
        points.append(Point(kind, value, _simulate(dep, w, config, slo, hook)))
    return points


# ---- one invocation, as `vazao simulate` makes it ----------------------------------------------
@dataclass(frozen=True)
class SimRun:
    """A single run, a comparison or a sweep, with what was simulated (the deployment, the workload and
    the settings: `head`). Its JSON is `vazao simulate --json`'s object; the run's columns stay behind
    its results, so a summary or a records file is built from them only when asked for."""

    head: dict[str, Any]
    result: SimResult | None = None
    variants: tuple[Variant, ...] = ()
    points: tuple[Point, ...] = ()

    @property
    def summary(self) -> RunSummary:
        """The single run's summary; a comparison's first variant's, a sweep's last point's."""
        if self.variants:
            return self.variants[0].result.summary
        if self.points:
            return self.points[-1].result.summary
        assert self.result is not None  # a single run: neither variants nor points
        return self.result.summary

    @property
    def named(self) -> list[tuple[str, SimResult]]:
        """(name, result) per run: `axis=value …` per variant, `rate 4` per point, "" for a single run."""
        if self.variants:
            return [(v.name, v.result) for v in self.variants]
        if self.points:
            return [(f"{p.kind} {p.value:g}", p.result) for p in self.points]
        assert self.result is not None  # a single run: neither variants nor points
        return [("", self.result)]

    def to_json(self) -> dict[str, Any]:
        out = {"kind": "simulation", **self.head, "summary": self.summary.to_json()}
        if self.variants:
            out["variants"] = [v.to_json() for v in self.variants]
        elif self.points:
            out["points"] = [p.to_json() for p in self.points]
        else:
            assert self.result is not None  # a single run: neither variants nor points
            out["sim"] = self.result.to_json()
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SimRun:
        """`vazao simulate --json`'s document read back: the head is every key but the results'."""
        head = {k: v for k, v in d.items() if k not in _RESULT_KEYS}
        if "variants" in d:
            return cls(head, variants=tuple(Variant.from_json(v) for v in d["variants"]))
        if "points" in d:
            return cls(head, points=tuple(Point.from_json(p) for p in d["points"]))
        return cls(head, result=SimResult.from_json(d["sim"], RunSummary.from_json(d["summary"])))


_RESULT_KEYS = ("kind", "summary", "variants", "points", "sim")  # what SimRun.to_json adds to its head


def _swept(rates: Sequence[float], concurrencies: Sequence[int]) -> str:
    if len(rates) > 1:
        return "Poisson rate sweep " + ", ".join(f"{r:g}" for r in rates) + "/s"
    return "closed-loop concurrency sweep " + ", ".join(str(c) for c in concurrencies)


def describe(dep: Deployment, workload: Workload, cfg: SimConfig, slo: SLO | None = None,
             swept: str | None = None) -> dict[str, Any]:
    """What every `vazao simulate` output starts with: the deployment, the workload, the settings."""
    head: dict[str, Any] = {
            "model": dep.model.name, "gpu": dep.accelerator.id, "count": dep.count, "tp": dep.tp, "pp": dep.pp,
            "format": dep.weight_format.name, "kv_format": dep.kv_format.name, "engine": dep.engine.name,
            "deployment": dep.label(), "workload": workload.name, "workload_description": workload.describe(swept),
            "config": cfg.describe()}
    if slo:
        head["slo"] = dict(slo.limits)
    return head


def run_simulation(dep: Deployment, workload: Workload, config: SimConfig | None = None, slo: SLO | None = None, *,
                   axes: Sequence[tuple[str, Sequence[str]]] = (), rates: Sequence[float] = (),
                   concurrencies: Sequence[int] = (), progress: Progress | None = None) -> SimRun:
    """`vazao simulate`'s one call: a comparison over `axes`, a sweep over several `rates` or
    `concurrencies`, else a single run (a single rate or concurrency belongs in the workload)."""
    cfg = resolve_config(dep, workload, config)
    sweeping = len(rates) > 1 or len(concurrencies) > 1
    if axes and sweeping:
        raise VazaoError("a comparison runs at one traffic level: give a single rate or concurrency with it")
    head = describe(dep, workload, cfg, slo, _swept(rates, concurrencies) if sweeping else None)
    if axes:
        return SimRun(head, variants=tuple(compare(dep, workload, cfg, axes, slo, progress=progress)))
    if sweeping:
        return SimRun(head, points=tuple(sweep(dep, workload, cfg, rates=rates, concurrencies=concurrencies,
                                               slo=slo, progress=progress)))
    return SimRun(head, result=simulate(dep, workload, cfg, slo, progress=progress))
