"""How long an engine takes to prefill one prompt alone, the way it cuts the prompt into steps.

An engine that runs a prompt as one step (vLLM, TensorRT-LLM without chunking) costs one step_cost.
llama.cpp cuts it into batches of `prefill_batch_tokens` (its -b, 2048), each run as micro-batches of
`prefill_ubatch_tokens` (-ub, 512); every micro-batch is a step over the context so far. With the
model split by layer over several GPUs (its default), the micro-batches of one batch flow through the
GPUs as a pipeline (llama.cpp's pipeline parallelism, PR ggml-org/llama.cpp#6017, March 2024): m
micro-batches over S stages finish in (m + S − 1) stage-times instead of m·S. A 512-token prompt is one
micro-batch and gains nothing; a 4096-token prompt on 4 GPUs runs ~2.3× faster than passing the GPUs in turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vazao.physics.step import BatchShape, StepCost, step_cost

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment


@dataclass(frozen=True, slots=True)
class PromptCost:
    time_s: float
    bound: str  # the bound of the longest step
    steps: int


def prompt_prefill(dep: Deployment, prompt_tokens: int, cached_tokens: int = 0) -> PromptCost:
    eng = dep.engine
    ub = eng.prefill_ubatch_tokens
    if not ub or prompt_tokens <= ub:
        c = step_cost(dep, BatchShape.prefill(1, prompt_tokens, cached_tokens))
        return PromptCost(c.time_s, c.bound, 1)
    batch = max(eng.prefill_batch_tokens, ub)
    stages = dep.pp if eng.pipeline_ubatches else 1
    total, steps, done = 0.0, 0, 0
    worst: StepCost | None = None
    while done < prompt_tokens:
        b = min(batch, prompt_tokens - done)
        times: list[float] = []
        for start in range(0, b, ub):
            n = min(ub, b - start)
            c = step_cost(dep, BatchShape.prefill(1, n, cached_tokens + done + start))
            times.append(c.time_s)
            if worst is None or c.time_s > worst.time_s:
                worst = c
        if stages > 1 and len(times) > 1:
            # m micro-batches over S stages: the longest stage-time paces the m − 1 that follow, and each
            # extra stage idles `pipeline_bubble` of a stage-time (hand-offs, unequal stages)
            piped = sum(times) / stages + (stages - 1) * max(times) / stages
            total += min(sum(times), piped * (1.0 + eng.pipeline_bubble * (stages - 1) / stages))
        else:
            total += sum(times)
        steps += len(times)
        done += b
    assert worst is not None  # prompt_tokens > ub: at least one step ran
    return PromptCost(total, worst.bound, steps)
