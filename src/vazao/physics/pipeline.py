"""Pipeline parallelism as the serving layers see it: how many engines a replica behaves as.

Here, not in analytic.py, because the closed-form estimate and the simulator both count a replica's
micro-batches the same way, and the simulator must not import the estimator to do so."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vazao.physics.memory import attention_ranks

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment


def microbatches(dep: Deployment) -> int:
    """Engines a replica behaves as: pp stages each on its own micro-batch when the engine pipelines, and
    under attention data parallelism each of the tp GPUs with its own requests and KV cache (its scheduler
    batches them; the GPUs step together through the expert layers, which this counts as one step each)."""
    micro = dep.pp if dep.engine.pipeline_microbatches else 1
    return micro * attention_ranks(dep)
