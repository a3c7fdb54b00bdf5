"""Closed-form scenarios on top of step_cost: decode at batch b, prefill, TTFT, the crossover
batch where decode turns compute-bound, the latency floor and the max-load throughput."""

from __future__ import annotations

from dataclasses import dataclass

from vazao.errors import VazaoError
from vazao.physics.memory import Fit, fit
from vazao.physics.step import BatchShape, StepCost, step_cost

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

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["decode"] = self.decode.to_json()
        d["prefill"] = self.prefill.to_json()
        return d


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

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["rows"] = [r.to_json() for r in self.rows]
        d["fit"] = self.fit.to_json()
        return d


def _check_lengths(**values: int) -> None:
    for name, v in values.items():
        if v is None or v <= 0:
            raise VazaoError(f"{name} must be a positive integer, got {v}")


def decode_cost(dep, batch: int, context: int) -> StepCost:
    """One decode step for `batch` sequences of `context` cached tokens, on one replica."""
    return step_cost(dep, BatchShape.decode(batch, context))


def prefill_cost(dep, batch: int, prompt: int) -> StepCost:
    return step_cost(dep, BatchShape.prefill(batch, prompt))


def crossover_batch(dep, context: int) -> int | None:
    """Smallest batch at which a decode step's compute time reaches its memory time; None when the
    KV reads grow as fast as the FLOPs and decode stays memory-bound at every batch."""
    def compute_bound(b: int) -> bool:
        c = decode_cost(dep, b, context)
        return c.compute_s >= c.memory_s

    if compute_bound(1):
        return 1
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


def latency_floor_s(dep) -> float:
    """The fastest a token can come: one sequence, empty cache, whole shard read once."""
    return decode_cost(dep, 1, 1).time_s


def max_load_throughput(dep, input_tokens: int, output_tokens: int) -> tuple[float, int]:
    """Steady-state output tokens/s of all replicas when the batch is as large as KV memory and the
    engine's max_num_seqs allow; each request's prefill is charged at its compute time (the weights
    are already streamed by the decode step it rides with). Returns (tokens/s, batch)."""
    _check_lengths(input_tokens=input_tokens, output_tokens=output_tokens)
    f = fit(dep, input_tokens + output_tokens)
    per_replica = f.max_concurrent_sequences // dep.replicas
    batch = min(per_replica, dep.engine.max_num_seqs)
    if batch < 1:
        return 0.0, 0
    mean_ctx = input_tokens + output_tokens // 2
    t_decode = decode_cost(dep, batch, mean_ctx).time_s
    pf = prefill_cost(dep, 1, input_tokens)
    t_prefill_marginal = max(pf.compute_s, pf.memory_s - decode_cost(dep, 1, 0).memory_s, 0.0)
    cycle_s = output_tokens * t_decode + batch * t_prefill_marginal
    return batch * output_tokens / cycle_s * dep.replicas, batch * dep.replicas


def estimate(dep, batches: list[int], input_tokens: int, output_tokens: int) -> Estimate:
    """Decode, prefill and TTFT at each batch size for prompts of `input_tokens` and answers of
    `output_tokens`; a batch's prefill runs as one step over all its prompts (static batch)."""
    _check_lengths(input_tokens=input_tokens, output_tokens=output_tokens)
    for b in batches:
        _check_lengths(batch=b)
    context = input_tokens + output_tokens
    f = fit(dep, context)
    per_replica_cap = f.max_concurrent_sequences // max(1, dep.replicas)
    mean_ctx = input_tokens + output_tokens // 2
    rows = []
    for b in batches:
        dec = decode_cost(dep, b, mean_ctx)
        pre = prefill_cost(dep, b, input_tokens)
        rows.append(EstimateRow(
            batch=b,
            decode_step_s=dec.time_s,
            tokens_per_s_per_request=1.0 / dec.time_s,
            tokens_per_s_total=b / dec.time_s * dep.replicas,
            prefill_s=pre.time_s,
            ttft_s=pre.time_s,
            e2e_s=pre.time_s + (output_tokens - 1) * dec.time_s,
            bound=dec.bound,
            prefill_bound=pre.bound,
            fits=f.weights_fit and b <= per_replica_cap,
            decode=dec,
            prefill=pre,
        ))
    mlt, max_batch = max_load_throughput(dep, input_tokens, output_tokens)
    return Estimate(
        deployment=dep.label(),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        rows=tuple(rows),
        crossover_batch=crossover_batch(dep, mean_ctx),
        crossover_batch_weights_only=crossover_batch(dep, 0),
        latency_floor_s=latency_floor_s(dep),
        max_batch=max_batch,
        max_load_tokens_per_s=mlt,
        fit=f,
        format_status=dep.support.status,
        format_reason=dep.support.reason,
        offloaded=f.offload_bytes_per_gpu > 0,
    )
