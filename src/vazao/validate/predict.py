"""One measured row, predicted under its stated conditions with vazao's cost model.

batch-1 decode and prompt processing (llama-bench tg/pp): the closed-form step costs; max load (all
requests queued at once, uniform lengths): estimate.offline_point; a static batch: estimate rows;
a request rate or a fixed concurrency: the simulator on that workload."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from vazao import limits
from vazao.analytic import decode_cost, estimate, offline_point
from vazao.catalog.formats import get_format, get_kv_format
from vazao.catalog.local import resolve_accelerator
from vazao.catalog.models import get_model, load_model
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.physics.profiles import EngineProfile, get_engine
from vazao.physics.prompt import prompt_prefill
from vazao.validate.rows import GEMM_MODE, MeasuredRow

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment

SIM_REQUESTS = 500  # TensorRT-LLM's online-serving table: 500 requests per rate
# A fixed-concurrency benchmark sends a few requests per client (genai-perf and aiperf scripts use
# --request-count = concurrency × a small multiple), every client starting at once: the first round
# arrives as one burst, and with uniform lengths the rounds after it stay more or less in step. The
# serving file does not state its count. 4 was chosen among 2–16 on 200 random configurations of it as the
# compromise between TensorRT-LLM's TTFT (best at 2–3) and vLLM's (best at 10–16); after each engine's
# releases were fitted apart, attention and expert parallelism modelled (2026-12-06), 4, 6, 8, 10 and 12 were
# compared again on the whole file and 8 chosen by the serving fit's fitting half (median 18.3% → 16.3%; on
# the held-out half 16.6% → 16.5%, p90 66.9% → 55.5%: docs/accuracy.md).
CLOSED_LOOP_ROUNDS = 8
VALIDATE_TIMELINE_POINTS = 8  # the least Stats keeps
_KV_NAMES = {"fp8": "fp8", "fp8 kv": "fp8", "int8": "int8", "bf16": "fp16", "fp16": "fp16", "f16": "fp16",
             "float16": "fp16", "bfloat16": "fp16", "fp4": "fp4", "nvfp4": "fp4"}


@dataclass(frozen=True)
class Prediction:
    value: float  # in the row's own unit
    regime: str  # memory | compute | communication | overhead | queueing
    detail: str
    kv: str  # the KV format used


def kv_format_name(row: MeasuredRow, eng: EngineProfile, weight_format: str) -> str:
    """The row's KV dtype when stated; the engine's default for the checkpoint's format otherwise. The serving
    file's 'gemm=X moe=Y' names the GEMM and MoE quantization, not the KV dtype: the engine's default."""
    text = row.kv.lower().strip()
    if "not stated" in text or not text or GEMM_MODE.search(text):
        return eng.kv_format_for(weight_format)
    head = text.split("(")[0].strip()
    for key, name in _KV_NAMES.items():
        if head == key or head.startswith(key + " ") or head.startswith(key + "kv"):
            return name
    raise VazaoError(f"unknown KV/compute precision {row.kv[:40]!r}")


@lru_cache(maxsize=64)
def _model_file(spec: str):
    return load_model(spec)


def row_model(row: MeasuredRow):
    """(ModelArch, weight format name, exact weight bytes or None) of the row's model."""
    if row.model.lower().endswith((".gguf", ".json")) or "/" in row.model:
        loaded = _model_file(row.model)
        weights = row.weights or loaded.weight_format or "bf16"
        exact = loaded.weights_bytes if loaded.weights_bytes and weights == loaded.weight_format else None
        return loaded.arch, weights, exact
    return get_model(row.model), row.weights or "bf16", None


def row_deployment(row: MeasuredRow, profiles: Mapping[str, EngineProfile] | None = None):
    """The row's deployment. A model given as a file (a user's bench runs of a GGUF or config.json) brings
    its own format and exact weight bytes when the row names no format."""
    eng = get_engine(row.family, profiles).at_version(row.version)
    model, weights, exact = row_model(row)
    fmt = get_format(weights)
    kv = get_kv_format(kv_format_name(row, eng, fmt.name))
    acc = resolve_accelerator(row.gpu)
    # attention data parallelism over the tp GPUs where the row's layout (or its source's recipe) names it
    adp = (row.attention_dp or 0) > 1 and row.tp > 1 and model.is_moe
    # the experts split whole over moe_ep GPUs where the layout names it (and it divides tp)
    ep = row.moe_ep or 1
    ep = ep if ep > 1 and model.is_moe and row.tp % ep == 0 and ep <= model.num_experts else 1
    return make_deployment(model, acc, fmt, kv, count=row.gpu_count, tp=row.tp, pp=row.pp, engine=eng,
                           weights_bytes_override=exact, attention_dp=adp, expert_parallel=ep)


def in_step_floor_ms(row: MeasuredRow, profiles: Mapping[str, EngineProfile] | None = None) -> float | None:
    """The least mean TTFT (ms) a closed loop's round could give if its clients all sent at once: every one of
    its (clients per replica) prompts computed at the GPUs' dense peak for the format (the idealized profile's
    compute time, t1), one after another, finishes at t1, 2·t1, … c·t1, a mean of (c + 1) / 2 × t1; batching
    them only finishes some later. The simulator's closed loops start that way, and with uniform lengths their
    rounds stay close to it, so a run measured below it had clients out of step (varied lengths, a warm-up
    left out, clients that drift) or prompts served from a cache, which the simulation does not model.
    None where the bound does not hold as stated: not a closed loop's mean TTFT, lengths that are a run's means
    (varied prompts, shortest first, average less), pipeline stages (they overlap prompts), attention data
    parallelism (the ranks share the experts' work)."""
    if (row.condition.kind != "concurrency" or row.metric != "ttft_ms" or row.median or not row.input_len
            or not row.uniform_lengths or row.pp != 1 or (row.attention_dp or 0) > 1):
        return None
    from vazao.physics.step import BatchShape, step_cost

    dep = row_deployment(row, profiles)
    ideal = dep.idealized()
    t1_s = step_cost(ideal, BatchShape.prefill(1, row.input_len)).compute_s
    clients = row.condition.value / dep.replicas
    return (clients + 1) / 2 * t1_s * 1e3


def _from_throughput(row: MeasuredRow, output_tok_s: float) -> float:
    if row.metric == "output_tok_s_total":
        return output_tok_s
    if row.metric == "output_tok_s_per_gpu":
        return output_tok_s / row.gpu_count
    if row.metric == "total_tok_s":
        return output_tok_s * (row.input_len + row.output_len) / row.output_len
    raise VazaoError(f"metric {row.metric} is not a throughput")


def _need(row: MeasuredRow, **lengths: int) -> None:
    for name, v in lengths.items():
        if v <= 0:
            raise VazaoError(f"{row.metric} at {row.condition.describe()} needs {name} > 0")


def predict(row: MeasuredRow, profiles: Mapping[str, EngineProfile] | None = None,
            sim_requests: int = SIM_REQUESTS) -> Prediction:
    dep = row_deployment(row, profiles)
    kv = dep.kv_format.name
    cond = row.condition
    if row.metric == "tg_tok_s_batch1":
        _need(row, output_len=row.output_len)
        c = decode_cost(dep, 1, row.input_len + row.output_len // 2)
        return Prediction(1.0 / c.time_s, c.bound, f"decode step {c.time_s * 1e3:.3g} ms", kv)
    if row.metric == "pp_tok_s":
        _need(row, input_len=row.input_len)
        c = prompt_prefill(dep, row.input_len)
        return Prediction(row.input_len / c.time_s, c.bound, f"prefill {c.time_s * 1e3:.3g} ms in {c.steps} step(s)",
                          kv)
    _need(row, output_len=row.output_len, input_len=row.input_len)
    if cond.kind == "max":
        p = offline_point(dep, row.input_len, row.output_len, row.requests)
        if p.batch < 1:
            raise VazaoError("the KV cache holds no request of this length")
        if row.metric in ("tpot_ms", "itl_ms"):
            return Prediction(p.decode_step_s * 1e3, p.bound, f"batch {p.batch}", kv)
        if row.metric not in ("output_tok_s_total", "output_tok_s_per_gpu", "total_tok_s"):
            raise VazaoError(f"{row.metric} at max load is queueing of the whole request set; not predicted")
        return Prediction(_from_throughput(row, p.output_tokens_per_s), p.bound,
                          f"batch {p.batch} × {p.engines} engine(s), budget {p.token_budget}", kv)
    if cond.kind == "batch":
        b = int(cond.value)
        e = estimate(dep, [b], row.input_len, row.output_len).rows[0]
        value = {"ttft_ms": e.ttft_s * 1e3, "tpot_ms": e.decode_step_s * 1e3, "itl_ms": e.decode_step_s * 1e3,
                 "e2e_latency_ms": e.e2e_s * 1e3}.get(row.metric)
        if value is None:
            value = _from_throughput(row, b * row.output_len / e.e2e_s * dep.replicas)
        return Prediction(value, e.bound if row.metric != "ttft_ms" else e.prefill_bound, f"static batch {b}", kv)
    return _simulated(row, dep, kv, sim_requests)


_SIM_CACHE: dict[tuple, tuple] = {}


def _sim_key(row: MeasuredRow, dep: Deployment, requests: int) -> tuple:
    return (dep.engine.key(), row.family, row.version, row.model, row.weights, dep.kv_format.name, row.gpu,
            row.gpu_count, row.tp, row.pp, row.input_len, row.output_len, row.condition, row.step_tokens,
            row.step_tokens_cap, row.mixed_chunks, dep.attention_dp, dep.expert_parallel, requests)


def sim_request_count(row: MeasuredRow, default: int = SIM_REQUESTS) -> int:
    """The requests to simulate for a serving row: a closed loop's stated count (num_requests=N: at least one
    round, at most limits.MAX_STATED_ROUNDS), else CLOSED_LOOP_ROUNDS rounds of its clients; an offered rate's stated
    count (at most limits.MAX_STATED_RATE_REQUESTS), else `default`."""
    if row.condition.kind == "concurrency":
        clients = int(row.condition.value)
        if row.requests:
            return min(max(row.requests, clients), limits.MAX_STATED_ROUNDS * clients)
        return CLOSED_LOOP_ROUNDS * clients
    if row.condition.kind == "rate" and not math.isinf(row.condition.value) and row.requests:
        return min(row.requests, limits.MAX_STATED_RATE_REQUESTS)
    return default


def _simulated(row: MeasuredRow, dep: Deployment, kv: str, requests: int = SIM_REQUESTS) -> Prediction:
    """Rows of one configuration (its TTFT, ITL and throughput) share one simulation."""
    requests = sim_request_count(row, requests)
    key = _sim_key(row, dep, requests)
    hit = _SIM_CACHE.get(key)
    if hit is None:
        if len(_SIM_CACHE) > 256:
            _SIM_CACHE.clear()
        hit = _SIM_CACHE[key] = _simulate(row, dep, requests)
    s, completed, mean_batch = hit
    pick = "p50" if row.median else "mean"
    lat = {"ttft_ms": s.ttft_s, "tpot_ms": s.tpot_s, "itl_ms": s.itl_s, "e2e_latency_ms": s.e2e_s}.get(row.metric)
    if lat is not None:
        v = getattr(lat, pick)
        if v is None:
            raise VazaoError("the simulation produced no such latency")
        value = v * 1e3
    else:
        value = _from_throughput(row, s.output_tokens_per_s)
    # all requests at once is queueing; an offered rate or a closed loop below saturation is serving
    regime = "queueing" if math.isinf(row.condition.value) else "serving"
    return Prediction(value, regime, f"simulated {completed} requests, mean batch {mean_batch:.0f}", kv)


def _simulate(row: MeasuredRow, dep: Deployment, requests: int) -> tuple:
    from vazao.sim import SimConfig, simulate
    from vazao.workload import workload_from_dict

    cond = row.condition
    if cond.kind == "rate" and math.isinf(cond.value):
        arrival = {"kind": "burst"}
    elif cond.kind == "rate":
        arrival = {"kind": "poisson", "rate": cond.value}
    else:
        arrival = {"kind": "concurrency", "concurrency": int(cond.value)}
    w = workload_from_dict({"name": row.id, "arrival": arrival, "prompt": row.input_len, "output": row.output_len,
                            "requests": requests, "seed": 1}, where=f"row {row.id}")
    # the row needs the summary only: a short KV timeline, whose samples are what ends a stretch of decode steps
    # the simulator costs at once (sim/fastpath.py), so a long run's stretches stay long
    cfg = SimConfig.from_engine(dep.engine, max_context=row.input_len + row.output_len + 1,
                                timeline_points=VALIDATE_TIMELINE_POINTS)
    if row.step_tokens and cfg.chunked_prefill:  # the budget the deployment ran with (rows.py: _step_budget)
        budget = min(cfg.max_num_batched_tokens, row.step_tokens) if row.step_tokens_cap else row.step_tokens
        cfg = replace(cfg, max_num_batched_tokens=budget)
    if row.mixed_chunks:  # prompts ride in the decodes' step, within the same budget (rows.py: _mixed_chunks)
        cfg = replace(cfg, prefill_priority=False)
    res = simulate(dep, w, cfg)
    return res.summary, res.completed, res.mean_batch
