"""Speculative decoding (Leviathan, Kalman & Matias, ICML 2023, arXiv:2211.17192).

A draft proposes k tokens; the target scores all k + 1 positions in one pass and keeps the longest
accepted run plus one token of its own. With each draft token accepted independently with
probability α, the expected tokens per target pass is their equation (1):

    E[tokens] = (1 − α^(k+1)) / (1 − α)          (k + 1 when α = 1)

and, with a draft pass costing c target passes, the walltime improvement is
(1 − α^(k+1)) / ((1 − α)(k·c + 1)) (their Theorem 3.8) while the target pass stays memory-bound.
The simulator does not assume that bound: each step's verification is a BatchShape of k + 1 new
tokens per sequence through `step_cost`, so the gain shrinks by itself as the batch turns
compute-bound. The accepted length is applied as its expectation: every sequence advances by
⌊E·(s+1)⌋ − ⌊E·s⌋ tokens at step s, which averages exactly E and keeps the run deterministic.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from vazao.physics.memory import kv_bytes_per_token_per_gpu, weights_bytes
from vazao.physics.step import BatchShape, step_cost
from vazao.sim.config import SpecConfig

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment


def expected_tokens(alpha: float, k: int) -> float:
    """Expected tokens per target pass (Leviathan et al. eq. 1)."""
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


class SpecModel:
    """Per-engine speculative state: the deterministic accepted-length pattern and the draft's cost."""

    def __init__(self, spec: SpecConfig, dep: Deployment) -> None:
        self.k = spec.k
        self.tokens_per_pass = expected_tokens(spec.alpha, spec.k)
        self.ratio = spec.ratio
        self.dep = dep
        self.draft: Deployment | None = None
        if spec.draft_model is not None:
            self.draft = replace(dep, model=spec.draft_model, weights_bytes_override=None, support_info=None)
        self._progress = 0.0

    def advance(self) -> int:
        """Tokens every decoding sequence gains this step (≥ 1)."""
        before = self._progress
        self._progress = before + self.tokens_per_pass
        return max(1, math.floor(self._progress) - math.floor(before))

    def _pass_s(self, shape: BatchShape) -> float:
        """One draft forward: the draft model's roofline time (its passes run inside the target's
        engine step, so the per-step scheduling overhead is not paid again), else ratio × target."""
        if self.draft is not None:
            c = step_cost(self.draft, shape)
            return c.time_s - c.overhead_s
        return self.ratio * step_cost(self.dep, shape).time_s

    def draft_s(self, n_decode: int, ctx_sum: int, prefill: BatchShape | None) -> float:
        """Draft time of one step: k autoregressive passes over the decoding sequences, plus one
        pass over the prompt chunks so the draft's own KV cache keeps up."""
        t = 0.0
        if n_decode:
            if self.draft is None:  # ratio × a target decode step, k times
                t += self.k * self._pass_s(BatchShape(n_decode, n_decode, ctx_sum, ctx_sum + n_decode, n_decode,
                                                      ctx_sum + n_decode))
            else:
                for i in range(self.k):
                    ctx = ctx_sum + i * n_decode
                    t += self._pass_s(BatchShape(n_decode, n_decode, ctx, ctx + n_decode, n_decode, ctx + n_decode))
        if prefill is not None and prefill.new_tokens:
            t += self._pass_s(prefill)
        return t

    def memory(self) -> tuple[float, float]:
        """(draft weight bytes per GPU, draft KV bytes per token per GPU) taken from the KV budget."""
        if self.draft is None:
            return 0.0, 0.0
        d = self.draft
        w = weights_bytes(d.model, d.weight_format) / d.gpus_per_replica
        return w, kv_bytes_per_token_per_gpu(d.model, d.kv_format.bytes_per_element, d.tp, d.pp)
