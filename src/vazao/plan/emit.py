"""A planned candidate as a launch spec: the settings the plan simulated, in an engine's terms."""

from __future__ import annotations

from vazao.plan.commands import EngineCommand, LaunchSpec, launch_command
from vazao.plan.evaluate import Candidate
from vazao.plan.space import Lengths


def spec_for(c: Candidate, lengths: Lengths, port: int = 8000) -> LaunchSpec:
    from vazao.catalog.models import load_model
    from vazao.physics.profiles import get_engine

    eng = get_engine(c.shape.engine)
    # the workload's longest request with its conversation history (a shorter --max-model-len answers
    # the longer requests with HTTP 400), as the plan simulated it
    max_len = c.context or lengths.context(load_model(c.shape.model).arch.max_context)
    return LaunchSpec(model=c.shape.model, fmt=c.shape.fmt, kv=c.kv_format, tp=c.shape.tp, pp=c.shape.pp,
                      replicas=c.replicas, max_model_len=max_len, max_num_seqs=c.max_batch,
                      max_num_batched_tokens=eng.max_num_batched_tokens,
                      gpu_memory_utilization=eng.gpu_memory_utilization, prefix_caching=eng.prefix_caching,
                      port=port)


def command_for(c: Candidate, lengths: Lengths, engine: str | None = None) -> EngineCommand:
    """The launch command of `c` for its own engine, or for `engine` (the same deployment elsewhere)."""
    return launch_command(engine or c.shape.engine, spec_for(c, lengths))
