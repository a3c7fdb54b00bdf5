"""Closed-form scenarios on top of step_cost: decode at batch b, prefill, TTFT, the crossover
batch where decode turns compute-bound, the latency floor, the max-load throughput, and the steady
state of one replica at a batch (steady_point) with the largest batch an SLO allows (slo_batch):
the one analytic path that cost and budgets call."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vazao.bands import Band, deployment_band, within_physics
from vazao.errors import VazaoError
from vazao.physics.energy import board_power_w, electricity_usd_per_mtok, step_energy
from vazao.physics.memory import Fit, attention_ranks, fit
from vazao.physics.pipeline import microbatches
from vazao.physics.step import BatchShape, StepCost, step_cost
from vazao.resultfiles import from_document

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment

CROSSOVER_SEARCH_LIMIT = 1 << 20


@dataclass(frozen=True)
class EstimateRow:
    batch: int
    decode_step_s: float
    tokens_per_s_per_request: float
    tokens_per_s_total: float
    prefill_s: float
    ttft_s: float
    e2e_s: float
    bound: str
    prefill_bound: str
    fits: bool  # the batch's KV cache fits next to the weights
    decode: StepCost
    prefill: StepCost
    # 80% bands (low, high, note) from the engine profile's calibration; None when it has none
    tokens_per_s_band: tuple | None = None
    ttft_band: tuple | None = None
    # the same prediction's bands on the figures it is inverted or summed into (band_of_step, band_of_e2e)
    decode_step_band: tuple | None = None
    tokens_per_s_per_request_band: tuple | None = None
    e2e_band: tuple | None = None
    # one board's draw and the replica's joules per token of each step (physics/energy.py); None: no rating
    decode_power_w: float | None = None
    decode_j_per_token: float | None = None
    prefill_power_w: float | None = None
    prefill_j_per_token: float | None = None
    decode_electricity_usd_per_mtok: float | None = None  # the decode joules at the catalog's site

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["decode"] = self.decode.to_json()
        d["prefill"] = self.prefill.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping) -> EstimateRow:
        # the bands are stored as bands.Band: from_document reads a bare `tuple` as a plain tuple
        bands = {k: Band.from_json(d[k]) for k in ("tokens_per_s_band", "ttft_band", "decode_step_band",
                                                    "tokens_per_s_per_request_band", "e2e_band")
                 if d.get(k) is not None}
        return from_document(cls, d, **bands)


@dataclass(frozen=True)
class Estimate:
    deployment: str
    input_tokens: int
    output_tokens: int
    rows: tuple[EstimateRow, ...]
    crossover_batch: int | None  # at this scenario's mean context
    crossover_batch_weights_only: int | None  # context → 0: the pure weights/FLOPs ratio (seed 004)
    latency_floor_s: float
    max_batch: int  # sequences of input+output tokens the KV cache holds (all replicas)
    max_load_tokens_per_s: float
    fit: Fit
    format_status: str
    format_reason: str
    offloaded: bool
    max_load_band: tuple | None = None
    latency_floor_band: tuple | None = None  # the batch-1 decode rate's band, inverted
    # the engine's kernel paths that a newer release may not take (kernel_notes), one sentence each
    kernel_notes: tuple[str, ...] = ()
    physical_limit: bool = False  # the ideal profile's figures: a bound, with no band

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["rows"] = [r.to_json() for r in self.rows]
        d["fit"] = self.fit.to_json()
        return d

    @classmethod
    def from_json(cls, d: Mapping) -> Estimate:
        """An estimate from its JSON, or from `vazao estimate --json`'s document (demo.estimate_result:
        the deployment's keys beside it, ignored)."""
        bands = {k: Band.from_json(d[k]) for k in ("max_load_band", "latency_floor_band") if d.get(k) is not None}
        return from_document(cls, d, **bands)


def kernel_notes(dep: Deployment) -> tuple[str, ...]:
    """The calibrated builds' kernel paths this prediction charges that a user's newer build may not take
    (llama.cpp's profile describes its May 2024 builds): what each costs and the profile setting without it."""
    s, eng = dep.consts.shard, dep.engine
    notes = []
    if s.dequant_pass_tokens:
        notes.append(f"{eng.name}: a step of more than {s.dequant_pass_tokens} tokens first unpacks "
                     f"{dep.weight_format.name} into an F16 copy (the calibrated builds' CUDA path, dequantize then "
                     f"cuBLAS); builds that run MMQ at every batch (llama.cpp since 2024-06) do not: a --profile "
                     f"with dequant_pass_tokens: 0 predicts them")
    if s.score_bytes_per_pair_full or s.score_bytes_per_pair_window:
        notes.append(f"{eng.name}: attention without flash attention ({eng.attention_score_bytes:g} bytes of "
                     f"scores per query-key pair, head and layer, the calibrated builds' default); with flash "
                     f"attention on (-fa, the default since -fa auto) a --profile with attention_score_bytes: 0 "
                     f"predicts it")
    if dep.consts.eager_floor_s:
        moe, dense = s.moe_layers_per_stage, s.layers_per_stage - s.moe_layers_per_stage
        kinds = ((dense, "dense " if moe else "", eng.eager_step_layer_s), (moe, "MoE ", eng.eager_moe_layer_s))
        parts = [f"{n:g} {kind}layers × {v * 1e3:g} ms" for n, kind, v in kinds if n and v]
        notes.append(f"{eng.name}: a step with a prompt chunk lasts at least {dep.consts.eager_floor_s * 1e3:.3g} ms "
                     f"({' + '.join(parts)} of eager launches from Python, fitted on the serving rows of its PyTorch "
                     f"executor); a release that captures prompt steps in CUDA graphs too: a --profile with "
                     f"eager_step_layer_s: 0 and eager_moe_layer_s: 0 predicts it")
    if dep.consts.kv_limited and dep.consts.kv_fill_seqs:
        fill = dep.consts.kv_fill_seqs
        notes.append(f"{eng.name}: decode attention gives each sequence's KV head one thread block (no split-KV): "
                     f"below {math.ceil(fill):d} sequences the KV cache reads at sequences × {s.kv_heads:g} heads ÷ "
                     f"{dep.accelerator.sm_count} multiprocessors of its rate (one sequence: {1 / fill:.0%}); "
                     f"a kernel that splits a long cache over blocks: a --profile with split_kv: true predicts it")
    return tuple(notes)


def _check_lengths(**values: int) -> None:
    for name, v in values.items():
        if v is None or v <= 0:
            raise VazaoError(f"{name} must be a positive integer, got {v}")


def decode_cost(dep: Deployment, batch: int, context: int) -> StepCost:
    """One decode step for `batch` sequences of `context` cached tokens, on one replica."""
    return step_cost(dep, BatchShape.decode(batch, context))


def prefill_cost(dep: Deployment, batch: int, prompt: int) -> StepCost:
    return step_cost(dep, BatchShape.prefill(batch, prompt))


def crossover_batch(dep: Deployment, context: int) -> int | None:
    """Smallest batch at which a decode step's compute time reaches its memory time; None when the
    KV reads grow as fast as the FLOPs and decode stays memory-bound at every batch.

    For a dense model both times are linear in the batch (FLOPs, KV and activation bytes per sequence;
    the GEMM ramp b / (b + ramp) turns into FLOPs × (b + ramp)), so the answer is where two lines cross,
    read from batches 1 and 2 and checked on both sides. Where they are not lines (routed experts,
    per-tile dequantization, a pass that unpacks the weights past some batch), or the check fails, the batch is
    searched."""
    def compute_bound(b: int) -> bool:
        c = decode_cost(dep, b, context)
        return c.compute_s >= c.memory_s

    one, two = decode_cost(dep, 1, context), decode_cost(dep, 2, context)
    if one.compute_s >= one.memory_s:
        return 1
    gap1, gap2 = one.memory_s - one.compute_s, two.memory_s - two.compute_s
    shard = dep.consts.shard
    linear = not shard.num_experts and not shard.dequant_flops_per_weight and not shard.dequant_pass_bytes
    if linear and gap2 >= gap1:
        return None  # per sequence, the memory time grows at least as fast as the compute time
    # secant steps on the gap (exact in one step where it is a line), then a check on both sides
    a, ga, b, gb = 1, gap1, 2, gap2
    for _ in range(8):
        if gb >= ga:
            break
        nxt = min(CROSSOVER_SEARCH_LIMIT + 1, max(b + 1, b + math.ceil(gb * (b - a) / (ga - gb) - 1e-9)))
        c = decode_cost(dep, nxt, context)
        a, ga, b, gb = b, gb, nxt, c.memory_s - c.compute_s
        if gb <= 0:
            if nxt <= CROSSOVER_SEARCH_LIMIT and not compute_bound(nxt - 1):
                return nxt
            break
    return _search_crossover(compute_bound)


def _search_crossover(compute_bound) -> int | None:
    hi = 2
    while not compute_bound(hi):
        hi *= 2
        if hi > CROSSOVER_SEARCH_LIMIT:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if compute_bound(mid) else (mid, hi)
    return hi


def latency_floor_s(dep: Deployment) -> float:
    """The fastest a token can come: one sequence, empty cache, whole shard read once."""
    return decode_cost(dep, 1, 1).time_s


def _floor_band(dep: Deployment, step: StepCost, ideal: Deployment) -> Band | None:
    """The latency floor's band (`step`: latency_floor_s's step): its one sequence's rate band, in the step's
    regime, inverted; its fast edge at most the physical limit's rate (`ideal`: dep.idealized())."""
    rate = deployment_band(dep, step.bound, 1.0 / step.time_s)
    return band_of_step(within_physics(rate, 1.0 / decode_cost(ideal, 1, 1).time_s, rate=True), 1)[0]


def trtllm_bench_limits(kv_requests: float, input_tokens: int, output_tokens: int, pp: int) -> tuple[int, int]:
    """The max batch size and max num tokens trtllm-bench builds an engine with for a dataset of
    `input_tokens` / `output_tokens` requests (TensorRT-LLM tensorrt_llm/bench/build/tuning.py,
    finetune_setting): the requests the KV cache holds, capped at 4096 and divided by pp, rounded up
    to 32/128/256; tokens = batch × (1 + in/out), capped at 32768, at least 2048."""
    raw_bs = min(kv_requests, 4096) / pp
    raw_tok = min(raw_bs * (1 + input_tokens / output_tokens), 32768)
    return _ladder(raw_bs, 64, ((256, 32), (1024, 128)), 256), _ladder(raw_tok, 2048, ((4096, 256), (8192, 512)), 1024)


def _ladder(value: float, floor: int, steps: tuple[tuple[int, int], ...], last: int) -> int:
    """Round up to the step of the first band `value` is below (the first band also has a floor)."""
    for i, (below, step) in enumerate(steps):
        if value < below:
            up = step * math.ceil(value / step)
            return max(floor, up) if i == 0 else up
    return last * math.ceil(value / last)


def engine_limits(dep: Deployment, input_tokens: int, output_tokens: int) -> tuple[int, int]:
    """(sequences, tokens) one engine step may hold under the engine's sizing for this request shape."""
    eng = dep.engine
    if eng.sizing == "trtllm-bench":
        f = fit(dep, input_tokens + output_tokens)
        kv_requests = f.kv_capacity_tokens / (input_tokens + output_tokens)
        return trtllm_bench_limits(kv_requests, input_tokens, output_tokens, dep.pp)
    return eng.max_num_seqs, eng.max_num_batched_tokens


@dataclass(frozen=True)
class OfflinePoint:
    """All requests queued at once, uniform lengths: the engine runs waves of `batch` requests, each
    wave prefilled in chunks of the token budget, then decoded together (they finish together)."""

    output_tokens_per_s: float  # over all replicas
    batch: int  # requests per engine (micro-batch) wave
    engines: int  # replicas × pipeline micro-batches
    token_budget: int
    prefill_s: float  # per wave
    decode_step_s: float
    bound: str  # of the decode step
    kv_limited: bool  # the batch is what the KV cache holds, not the engine's sequence cap


def offline_point(dep: Deployment, input_tokens: int, output_tokens: int, requests: int | None = None) -> OfflinePoint:
    """requests: how many the run queues (None: enough to fill every engine); the engines share them, so
    none runs more than its share at once."""
    _check_lengths(input_tokens=input_tokens, output_tokens=output_tokens)
    ctx = input_tokens + output_tokens
    f = fit(dep, ctx)
    micro = microbatches(dep)
    cap, budget = engine_limits(dep, input_tokens, output_tokens)
    kv_batch = f.kv_capacity_tokens // micro // ctx if f.weights_fit else 0
    batch = min(cap, kv_batch)
    engines = dep.replicas * micro
    if requests is not None:
        batch = min(batch, -(-requests // engines))
    if batch < 1:
        return OfflinePoint(0.0, 0, engines, budget, math.inf, math.inf, "memory", True)
    chunk = min(budget, batch * input_tokens)
    if input_tokens <= chunk:
        seqs = max(1, chunk // input_tokens)
        t_chunk = prefill_cost(dep, seqs, input_tokens).time_s
        chunks = batch / seqs
    else:  # one long prompt in pieces of the budget; its later pieces read the earlier ones' KV
        pieces = math.ceil(input_tokens / chunk)
        mid = BatchShape.prefill(1, chunk, cached=(input_tokens - chunk) // 2)
        t_chunk = step_cost(dep, mid).time_s
        chunks = batch * pieces
    prefill_s = chunks * t_chunk
    dec = decode_cost(dep, batch, input_tokens + output_tokens // 2)
    wave_s = prefill_s + max(output_tokens - 1, 0) * dec.time_s
    return OfflinePoint(batch * output_tokens / wave_s * engines, batch, engines, budget, prefill_s, dec.time_s,
                        dec.bound, kv_batch <= cap)


def max_load_throughput(dep: Deployment, input_tokens: int, output_tokens: int) -> tuple[float, int]:
    """Output tokens/s of all replicas with every request queued at once (offline_point), and the
    sequences running at once over all replicas."""
    p = offline_point(dep, input_tokens, output_tokens)
    return p.output_tokens_per_s, p.batch * p.engines


@dataclass(frozen=True)
class SteadyPoint:
    """The analytic steady state of one replica serving `batch` sequences of one request shape."""

    batch: int
    ttft_s: float
    tpot_s: float
    e2e_s: float
    output_tokens_per_s: float  # all replicas
    input_time_share: float
    power_w: float | None = None  # one board's mean draw over the cycle (physics/energy.py); None: no rating

    def metric(self, name: str) -> float:
        return {"ttft": self.ttft_s, "tpot": self.tpot_s, "itl": self.tpot_s, "e2e": self.e2e_s}[name]

    def meets(self, limits: Mapping[str, float]) -> bool:
        """Every limit ('tpot_p95' -> seconds) met; a percentile limit is compared with the point value."""
        return all(self.metric(key.split("_", 1)[0]) <= limit for key, limit in limits.items())


def steady_batch_limit(dep: Deployment, input_tokens: int, output_tokens: int) -> int:
    """Sequences one replica holds: KV capacity and the engine's max_num_seqs; under attention data parallelism,
    each GPU's (its engine's) share."""
    f = fit(dep, input_tokens + output_tokens)
    ranks = attention_ranks(dep)
    return min(f.max_concurrent_sequences // max(1, dep.replicas) // ranks, dep.engine.max_num_seqs)


def steady_point(dep: Deployment, input_tokens: int, output_tokens: int, batch: int,
                 cached_tokens: int = 0) -> SteadyPoint:
    """Each request's cycle is output × (decode step at `batch`) plus `batch` prefills, each charged
    at its marginal time (its compute, or the memory time beyond one decode step's: the weights are
    read once for both) where the engine mixes prompts into decode steps, at a whole step of its own
    where it runs prompts first (EngineProfile.prefill_priority: the decoders wait through it, as
    sim.scheduler does); TPOT = cycle / output; TTFT = own prefill (of the uncached prompt tokens) +
    one decode step; E2E = TTFT + (output − 1) × TPOT. Under attention data parallelism `batch` is each GPU's,
    and the replica serves tp of them."""
    if input_tokens < 1 or output_tokens < 1 or batch < 1:
        raise VazaoError("input tokens, output tokens and batch must be positive")
    cached = min(cached_tokens, input_tokens - 1)
    pf = step_cost(dep, BatchShape.prefill(1, input_tokens - cached, cached))
    if dep.engine.prefill_priority:
        t_pf = pf.time_s
    else:
        t_pf = max(pf.compute_s, pf.memory_s - decode_cost(dep, 1, 0).memory_s, 0.0)
    dec = decode_cost(dep, batch, input_tokens + output_tokens // 2)
    t_dec = dec.time_s
    cycle = output_tokens * t_dec + batch * t_pf
    tpot = cycle / output_tokens
    ttft = pf.time_s + t_dec
    w_dec, w_pf = board_power_w(dep.accelerator, dec), board_power_w(dep.accelerator, pf)
    power = None if w_dec is None or w_pf is None else (output_tokens * t_dec * w_dec + batch * t_pf * w_pf) / cycle
    return SteadyPoint(batch, ttft, tpot, ttft + (output_tokens - 1) * tpot,
                       batch * output_tokens / cycle * dep.replicas * attention_ranks(dep),
                       batch * t_pf / cycle, power)


def slo_batch(dep: Deployment, input_tokens: int, output_tokens: int, limits: Mapping[str, float], top: int,
              cached_tokens: int = 0, holds: Callable[[SteadyPoint], bool] | None = None) -> SteadyPoint | None:
    """The steady point at the largest batch up to `top` that meets every limit (SteadyPoint.meets, or `holds`:
    e.g. each latency's band edge held to its limit); None when batch 1 misses one. TPOT and TTFT grow with the
    batch, so the batch is bisected."""
    ok = holds or (lambda p: p.meets(limits))
    if not ok(steady_point(dep, input_tokens, output_tokens, 1, cached_tokens)):
        return None
    lo, hi = 1, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(steady_point(dep, input_tokens, output_tokens, mid, cached_tokens)):
            lo = mid
        else:
            hi = mid - 1
    return steady_point(dep, input_tokens, output_tokens, lo, cached_tokens)


def max_load_limit(dep: Deployment, input_tokens: int, output_tokens: int, ideal: Deployment | None = None) -> float:
    """The most output tokens/s any run of this request shape could make on `dep`: the idealized deployment's
    (`ideal`, default dep.idealized(): no losses, its whole memory for KV) max-load point."""
    return offline_point(ideal or dep.idealized(), input_tokens, output_tokens).output_tokens_per_s


def max_load_band(dep: Deployment, regime: str, output_tokens_per_s: float, input_tokens: int, output_tokens: int,
                  ideal: Deployment | None = None) -> Band | None:
    """The band of the max-load output rate (offline_point's), its high edge at most max_load_limit."""
    limit = max_load_limit(dep, input_tokens, output_tokens, ideal)
    return within_physics(deployment_band(dep, regime, output_tokens_per_s), limit, rate=True)


def band_of_step(rate_band: Band | None, sequences: float) -> tuple[Band | None, Band | None]:
    """A decode step's band and one sequence's rate band from the band of the rate `sequences` sequences make
    (rate = sequences / step): the same prediction, inverted and divided, so the three always agree."""
    if rate_band is None or rate_band.low <= 0 or sequences <= 0:
        return None, None
    return (Band(sequences / rate_band.high, sequences / rate_band.low, rate_band.note),
            Band(rate_band.low / sequences, rate_band.high / sequences, rate_band.note))


def band_of_e2e(ttft: Band | None, step: Band | None, output_tokens: int) -> Band | None:
    """A request's end-to-end band: its TTFT then output_tokens − 1 steps, each edge summed with the same edge
    (the errors taken to move together: the wider, cautious reading)."""
    if ttft is None or step is None:
        return None
    notes = "; ".join(dict.fromkeys(n for n in (ttft.note, step.note) if n))
    return Band(ttft.low + (output_tokens - 1) * step.low, ttft.high + (output_tokens - 1) * step.high, notes)


def _row_bands(dep: Deployment, sequences: int, dec: StepCost, pre: StepCost, output_tokens: int,
               limits: tuple[float, float]) -> dict:
    """A row's bands, each held to the physical limit: `limits` = (the idealized deployment's decode step and
    prefill at the same batch and lengths, in seconds)."""
    rate = within_physics(deployment_band(dep, dec.bound, sequences / dec.time_s), sequences / limits[0], rate=True)
    ttft = within_physics(deployment_band(dep, pre.bound, pre.time_s + dep.engine.request_overhead_s,
                                          metric="ttft_ms"), limits[1], rate=False)
    step, per_request = band_of_step(rate, sequences)
    return {"tokens_per_s_band": rate, "ttft_band": ttft, "decode_step_band": step,
            "tokens_per_s_per_request_band": per_request, "e2e_band": band_of_e2e(ttft, step, output_tokens)}


def estimate(dep: Deployment, batches: list[int], input_tokens: int, output_tokens: int) -> Estimate:
    """Decode, prefill and TTFT at each batch size for prompts of `input_tokens` and answers of
    `output_tokens`; a batch's prefill runs as one step over all its prompts (static batch). Under attention
    data parallelism a batch is each GPU's: the replica runs tp of them, stepping together."""
    _check_lengths(input_tokens=input_tokens, output_tokens=output_tokens)
    for b in batches:
        _check_lengths(batch=b)
    context = input_tokens + output_tokens
    f = fit(dep, context)
    per_replica_cap = f.max_concurrent_sequences // max(1, dep.replicas)
    mean_ctx = input_tokens + output_tokens // 2
    rows = []
    gpus = dep.gpus_per_replica
    ranks = attention_ranks(dep)  # batches a replica's step runs at once
    ideal = dep.idealized()  # where the bands' optimistic edges stop
    for b in batches:
        dec = decode_cost(dep, b, mean_ctx)
        pre = prefill_cost(dep, b, input_tokens)
        limits = (decode_cost(ideal, b, mean_ctx).time_s, prefill_cost(ideal, b, input_tokens).time_s)
        e_dec = step_energy(dep.accelerator, gpus, dec, b * ranks)
        e_pre = step_energy(dep.accelerator, gpus, pre, b * ranks * input_tokens)
        rows.append(EstimateRow(
            batch=b,
            decode_step_s=dec.time_s,
            tokens_per_s_per_request=1.0 / dec.time_s,
            tokens_per_s_total=b * ranks / dec.time_s * dep.replicas,
            prefill_s=pre.time_s,
            ttft_s=pre.time_s + dep.engine.request_overhead_s,
            e2e_s=pre.time_s + dep.engine.request_overhead_s + (output_tokens - 1) * dec.time_s,
            bound=dec.bound,
            prefill_bound=pre.bound,
            fits=f.weights_fit and b * ranks <= per_replica_cap,
            decode=dec,
            prefill=pre,
            **_row_bands(dep, b * ranks * dep.replicas, dec, pre, output_tokens, limits),
            decode_power_w=e_dec.power_w if e_dec else None,
            decode_j_per_token=e_dec.joules_per_token if e_dec else None,
            prefill_power_w=e_pre.power_w if e_pre else None,
            prefill_j_per_token=e_pre.joules_per_token if e_pre else None,
            decode_electricity_usd_per_mtok=electricity_usd_per_mtok(e_dec.joules_per_token if e_dec else None),
        ))
    off = offline_point(dep, input_tokens, output_tokens)
    mlt, max_batch = off.output_tokens_per_s, off.batch * off.engines
    floor = decode_cost(dep, 1, 1)  # latency_floor_s's step, once for the floor and its band
    return Estimate(
        deployment=dep.label(),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        rows=tuple(rows),
        crossover_batch=crossover_batch(dep, mean_ctx),
        crossover_batch_weights_only=crossover_batch(dep, 0),
        latency_floor_s=floor.time_s,
        max_batch=max_batch,
        max_load_tokens_per_s=mlt,
        fit=f,
        format_status=dep.support.status,
        format_reason=dep.support.reason,
        offloaded=f.offload_bytes_per_gpu > 0,
        max_load_band=max_load_band(dep, off.bound, mlt, input_tokens, output_tokens, ideal) if mlt > 0 else None,
        latency_floor_band=_floor_band(dep, floor, ideal),
        kernel_notes=kernel_notes(dep),
        physical_limit=dep.engine.is_limit,
    )
