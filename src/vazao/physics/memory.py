"""What fits: weight bytes per format, KV bytes per token and per sequence, runtime overhead,
fit across N GPUs with TP/PP, KV capacity as concurrent sequences, and the host-offload spill."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, overload

from vazao import limits
from vazao.catalog.arch import ModelArch
from vazao.catalog.formats import Format
from vazao.errors import VazaoError
from vazao.resultfiles import from_document

if TYPE_CHECKING:  # types only: numpy is imported where a grid sweep needs it
    import numpy as np
    from numpy.typing import NDArray

    from vazao.catalog.formats import KVFormat
    from vazao.catalog.hardware import Accelerator
    from vazao.physics.profiles import EngineProfile

ACT_BYTES = 2  # activations stay 16-bit in every format vazao models


class DeploymentShape(Protocol):
    """What memory accounting reads of a Deployment (physics/deployment.py): a Protocol, not the class,
    because deployment.py imports this module (and physics/step.py, which imports it too), so importing
    Deployment here, even for its type alone, would close an import loop (tests/test_layering.py).
    A Deployment is one; so is anything else with these attributes."""

    @property
    def model(self) -> ModelArch: ...
    @property
    def kv_format(self) -> KVFormat: ...
    @property
    def accelerator(self) -> Accelerator: ...
    @property
    def engine(self) -> EngineProfile: ...
    @property
    def count(self) -> int: ...
    @property
    def tp(self) -> int: ...
    @property
    def pp(self) -> int: ...
    @property
    def replicas(self) -> int: ...
    @property
    def gpus_per_replica(self) -> int: ...
    @property
    def weights_bytes(self) -> float: ...
    @property
    def weight_format(self) -> Format: ...
    @property
    def attention_dp(self) -> bool: ...


def weights_bytes(model: ModelArch, fmt: Format) -> float:
    """Stored weight bytes: transformer layers at the format's bits, embedding (and an untied
    lm_head) at the format's embedding bits."""
    embed = model.embedding_params * (1 if model.tie_word_embeddings else 2)
    body = model.total_params - embed
    return body * fmt.weight_bits / 8 + embed * fmt.embed_bits / 8


def kv_heads_per_rank(model: ModelArch, tp: int) -> float:
    """KV heads each TP rank keeps: heads split across ranks, replicated when tp > kv_heads;
    an MLA latent is replicated on every rank."""
    if model.is_mla:
        return 1.0
    return math.ceil(model.num_kv_heads / tp)


def kv_bytes_per_token_per_gpu(model: ModelArch, kv_bytes_per_element: float, tp: int, pp: int) -> float:
    """KV bytes one token adds on one GPU (layers split by pp, heads by tp)."""
    if model.is_mla:
        per_layer = model.kv_elements_per_token_per_layer * kv_bytes_per_element
    else:
        per_layer = 2 * kv_heads_per_rank(model, tp) * model.head_dim * kv_bytes_per_element
    return per_layer * model.num_layers / pp


def dense_tp(dep: DeploymentShape) -> int:
    """The tensor-parallel width everything but the routed experts is split over, the KV heads included: 1
    under attention data parallelism, where each GPU keeps all of it, every head of its own requests (and no
    head is replicated as tp > kv_heads does)."""
    return 1 if dep.attention_dp else dep.tp


def attention_ranks(dep: DeploymentShape) -> int:
    """GPUs of a replica that each serve their own requests with their own KV cache: the tp GPUs under
    attention data parallelism, else 1 (the tp GPUs share every request and every token)."""
    return dep.tp if dep.attention_dp else 1


def weights_bytes_per_gpu(dep: DeploymentShape) -> float:
    """Weight bytes each GPU of a replica holds: the model split over tp × pp, or, under attention data
    parallelism, only the routed experts split over tp (each GPU keeps its layers' attention, dense
    MLPs, shared experts, embedding and lm_head whole)."""
    w = dep.weights_bytes
    if not dep.attention_dp or dep.tp == 1:
        return w / dep.gpus_per_replica
    m, f = dep.model, dep.weight_format
    routed = m.routed_expert_params * f.weight_bits / 8 * (w / weights_bytes(m, f))
    return ((w - routed) + routed / dep.tp) / dep.pp


def activation_bytes_per_gpu(model: ModelArch, batched_tokens: int, tp: int) -> float:
    """Peak live activations of one forward pass over `batched_tokens` tokens (one layer's
    hidden states, QKV and MLP intermediates, plus the logits of up to 256 sequences)."""
    inter = model.moe_intermediate_size * model.experts_per_token if model.is_moe else model.intermediate_size
    per_token = (4 * model.hidden_size + 2 * inter / tp) * ACT_BYTES
    logits = min(batched_tokens, 256) * model.vocab_size / tp * 4
    return batched_tokens * per_token + logits


@dataclass(frozen=True)
class Fit:
    """Memory accounting of a deployment. Sizes are bytes; *_per_gpu figures are for one GPU."""

    weights_bytes: float
    weights_bytes_per_gpu: float
    memory_bytes_per_gpu: float
    usable_bytes_per_gpu: float  # after the engine's utilisation cap
    overhead_bytes_per_gpu: float  # reserved + activation workspace
    free_bytes_for_kv: float  # summed over all GPUs
    kv_bytes_per_token: float  # the model's logical figure at the KV format
    kv_bytes_per_token_per_gpu: float
    kv_bytes_per_sequence: float  # one sequence of `context` tokens (windows applied)
    kv_capacity_tokens: int  # per replica
    context: int
    max_concurrent_sequences: int  # over all replicas
    weights_fit: bool
    fits: bool
    offload_bytes_per_gpu: float  # weights that spill to host memory when they do not fit
    replicas: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Fit:
        """A fit from its JSON, or from `vazao fit --json`'s document (the deployment's keys beside it)."""
        return from_document(cls, d)


def overhead_bytes_per_gpu(dep: DeploymentShape) -> float:
    """Memory the engine holds besides weights and KV: its reserve plus the activation workspace."""
    eng = dep.engine
    act = (activation_bytes_per_gpu(dep.model, min(eng.max_num_batched_tokens, 16384), dep.tp)
           if eng.activation_workspace else 0.0)
    return eng.reserved_bytes + act


@overload
def free_bytes_per_gpu(dep: DeploymentShape, memory_bytes: None = None) -> float: ...
@overload
def free_bytes_per_gpu(dep: DeploymentShape, memory_bytes: NDArray[np.float64]) -> NDArray[np.float64]: ...


def free_bytes_per_gpu(dep: DeploymentShape,
                       memory_bytes: NDArray[np.float64] | None = None) -> float | NDArray[np.float64]:
    """What is left per GPU for the KV cache; negative when the weights themselves do not fit.
    `memory_bytes` may be an array over accelerators (grid sweeps); default: the deployment's GPU."""
    mem = dep.accelerator.memory_bytes if memory_bytes is None else memory_bytes
    weights = weights_bytes_per_gpu(dep)
    eng = dep.engine
    if eng.memory_basis == "free":  # TensorRT-LLM: kv_cache_free_gpu_mem_fraction of what is left
        left = mem - overhead_bytes_per_gpu(dep) - weights
        if type(left).__module__ == "numpy":  # a grid sweep: a shortfall stays the shortfall
            import numpy as np

            return np.where(left > 0, left * eng.gpu_memory_utilization, left)
        return left * eng.gpu_memory_utilization if left > 0 else left
    return mem * eng.gpu_memory_utilization - overhead_bytes_per_gpu(dep) - weights


def kv_bytes_per_sequence_per_gpu(dep: DeploymentShape, context: int) -> float:
    """One sequence's KV bytes on the GPU(s) holding it (layers split by pp, heads by tp unless attention
    is data-parallel, windows applied)."""
    model, kv_elt = dep.model, dep.kv_format.bytes_per_element
    per_gpu = kv_bytes_per_token_per_gpu(model, kv_elt, dense_tp(dep), dep.pp)
    return model.kv_bytes_per_sequence(context, kv_elt) * per_gpu / model.kv_bytes_per_token(kv_elt)


def fit(dep: DeploymentShape, context: int) -> Fit:
    """Fit a deployment for sequences of `context` tokens (prompt + output)."""
    if context <= 0:
        raise VazaoError(f"context must be a positive number of tokens, got {context}")
    if context > limits.MAX_MODEL_CONTEXT:
        raise VazaoError(f"context must be at most {limits.MAX_MODEL_CONTEXT:,} tokens, got {context:.3g}")
    model, eng = dep.model, dep.engine
    wbytes = dep.weights_bytes
    per_gpu_w = weights_bytes_per_gpu(dep)
    mem = dep.accelerator.memory_bytes
    usable = mem * eng.gpu_memory_utilization
    overhead = overhead_bytes_per_gpu(dep)
    free_per_gpu = free_bytes_per_gpu(dep)
    weights_fit = free_per_gpu >= 0
    kv_elt = dep.kv_format.bytes_per_element
    kv_tok_gpu = kv_bytes_per_token_per_gpu(model, kv_elt, dense_tp(dep), dep.pp)
    kv_tok = model.kv_bytes_per_token(kv_elt)
    kv_seq = model.kv_bytes_per_sequence(context, kv_elt)
    # Capacity of one replica: windowed layers make long sequences cheaper per token.
    kv_seq_gpu = kv_bytes_per_sequence_per_gpu(dep, context)
    free_pos = free_per_gpu if weights_fit else 0.0
    share = attention_ranks(dep)
    seqs = int(free_pos // kv_seq_gpu) * share * dep.replicas
    if not weights_fit:
        reason = (f"weights need {per_gpu_w / 1e9:.1f} GB per GPU but only "
                  f"{(usable - overhead) / 1e9:.1f} GB is usable")
    elif seqs < 1:
        reason = f"weights fit but not the KV cache of one {context}-token sequence"
    else:
        reason = ""
    return Fit(
        weights_bytes=wbytes,
        weights_bytes_per_gpu=per_gpu_w,
        memory_bytes_per_gpu=mem,
        usable_bytes_per_gpu=usable,
        overhead_bytes_per_gpu=overhead,
        free_bytes_for_kv=free_pos * dep.count,
        kv_bytes_per_token=kv_tok,
        kv_bytes_per_token_per_gpu=kv_tok_gpu,
        kv_bytes_per_sequence=kv_seq,
        kv_capacity_tokens=int(free_pos / kv_tok_gpu) * share,
        context=context,
        max_concurrent_sequences=seqs,
        weights_fit=weights_fit,
        fits=weights_fit and seqs >= 1,
        offload_bytes_per_gpu=-free_per_gpu if not weights_fit else 0.0,
        replicas=dep.replicas,
        reason=reason,
    )
