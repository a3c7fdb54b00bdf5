"""step_cost: how long one engine step takes for a BatchShape on a Deployment.

The one cost model both the analytic estimates and the simulator call. A step is a roofline:
    time = max(FLOPs / (peak × compute_eff), bytes / (bandwidth × memory_eff)) + comm + overhead
computed per tensor-parallel rank. Efficiencies are the engine profile's: a GEMM over n tokens reaches
n / (n + compute_ramp_tokens) of its large-GEMM efficiency (short prompts, and experts that see few
tokens each, never reach the peak), 8- and 4-bit tensor cores reach narrow_compute_efficiency of it,
grouped expert GEMMs moe_efficiency (c / (c + moe_width_ramp_cols) of it where tensor parallelism leaves
each expert c intermediate columns per rank; and stream routed experts' weights at moe_memory_efficiency of
the dense rate), KV-cache reads attention_efficiency of the streaming bandwidth
and all-reduces comm_efficiency of the link. Pipeline stages run one after another for a step, so a step
over pp stages costs the same per-rank work plus (pp − 1) activation hand-offs. An engine that launches a
prompt step's kernels from Python (eager_step_layer_s a dense layer, eager_moe_layer_s a MoE layer) holds a step
with a prompt chunk to at least its layers' launch time. An engine whose decode attention runs one thread block
per sequence and KV head (EngineProfile.split_kv False) reads the KV cache at the share of the bandwidth those
blocks cover of the accelerator's multiprocessors (kv_occupancy).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, overload

from vazao.physics.memory import (
    ACT_BYTES,
    DeploymentShape,
    attention_ranks,
    dense_tp,
    free_bytes_per_gpu,
    kv_bytes_per_token_per_gpu,
    kv_heads_per_rank,
    weights_bytes,
)

if TYPE_CHECKING:  # types only: numpy is imported where a grid sweep needs it
    from typing import TypeAlias

    import numpy as np
    from numpy.typing import NDArray
    from typing_extensions import TypeIs, TypeVar

    from vazao.catalog.formats import Format, Support
    from vazao.physics.profiles import EngineProfile

    # A constant of the hardware side: a float (a Deployment's, the simulator's) or an array over accelerators
    # (a grid sweep's, physics/grid.py). The default is what a bare `StepConstants` means: a Deployment's.
    Num = TypeVar("Num", float, NDArray[np.float64], default=float)
    _D = TypeVar("_D", bound=np.generic)
    # StepTimer's terms of a decode step of n sequences (_decode_terms), then n·j for j = 0, 1, … (_terms)
    DecodeTerms: TypeAlias = tuple[float, tuple[float, ...], float, tuple[float, ...], float, float]
    Terms: TypeAlias = tuple[float, tuple[float, ...], float, tuple[float, ...], float, float, NDArray[np.float64]]
else:
    from typing import TypeVar

    Num = TypeVar("Num")

BOUNDS = ("compute", "memory", "communication", "overhead")
DEQUANT_TILE_TOKENS = 64  # weight-only kernels unpack each weight tile once per this many tokens
UNPACKED_BYTES = 2.0  # a weight unpacked for a 16-bit GEMM (ShardConstants.dequant_pass_bytes)
P2P_LATENCY_S = 5e-6
# One network step between nodes: NCCL's own model (src/graph/tuning.cc, hwLatencies[NET][Ring], 2.7 / 4.0 / 14 us
# for its LL / LL128 / Simple protocols; LL128 taken, the one it picks for the KB-to-MB messages of decode and
# chunked prefill). A ring all-reduce over n nodes makes 2(n - 1) such steps (nInterSteps there).
INTER_NODE_LATENCY_S = 4e-6
# One hop of a ring inside a node, in the same model (hwLat[NVLINK][Ring], 0.47 / 1.9 / 3.4 us for LL / LL128 /
# Simple; PCIe's LL128 2.5 us): an all-reduce over n GPUs of one node makes 2(n - 1) of them (nsteps there), so
# its latency grows with the tensor-parallel width on top of the engine's fixed cost (allreduce_latency_s).
INTRA_NODE_HOP_LATENCY_S = 1.9e-6
# An engine's own all-reduce inside an NVLink domain (vLLM csrc/custom_all_reduce.cuh, which SGLang reuses;
# TensorRT-LLM cpp/tensorrt_llm/kernels/customAllReduceKernels.cu) reads every peer's buffer over P2P in one
# stage (two for larger messages: vLLM switches at 256 KB on 8 GPUs, 512 KB on 4) between flag barriers, so
# its latency is two barrier hops at any width up to the engine's `custom_allreduce_gpus`. The bandwidth term
# is the ring's 2(n - 1)/n of the message, except where the engine's kernel goes one-shot (EngineProfile.
# oneshot_allreduce_bytes / _tokens): each GPU then reads its n - 1 peers' whole messages, n/2 times the ring's
# bytes, which a decode step of a hundred sequences on 8 GPUs feels (1-2 MB a message, 160 all-reduces a step
# for a 70B model).
CUSTOM_ALLREDUCE_HOPS = 2
NARROW_DTYPES = frozenset({"fp8", "int8", "fp6", "fp4", "int4"})
# A sequence computing at most this many tokens in a step attends as a decode (MLA in its latent space): vLLM's
# FlashMLA backend takes query lengths up to its speculative width as decodes, SGLang's target_verify likewise.
DECODE_QUERY_TOKENS = 8


class StepDeployment(DeploymentShape, Protocol):
    """What the cost model reads of a Deployment (physics/deployment.py): a Protocol, not the class, because
    deployment.py imports this module, so importing Deployment here, even for its type alone, would close an
    import loop (tests/test_layering.py). A Deployment is one."""

    @property
    def weight_format(self) -> Format: ...
    @property
    def support(self) -> Support: ...
    @property
    def consts(self) -> StepConstants: ...
    @property
    def expert_parallel(self) -> int: ...


@dataclass(frozen=True, slots=True)
class BatchShape:
    """The tokens one engine step computes, as aggregates over its sequences.

    num_seqs: sequences in the step; new_tokens: tokens computed (sum over sequences);
    context_tokens: KV tokens already cached and read (sum over sequences);
    attention_pairs: query–key pairs scored (sum over sequences of new × (ctx + (new + 1)/2));
    logit_tokens: tokens whose logits are computed (one per sequence that emits a token);
    decode_pairs: of attention_pairs, those of sequences that decode (at most DECODE_QUERY_TOKENS new tokens:
    a token, or a speculative verification), which MLA scores in its latent space (decode_attention_flops)."""

    num_seqs: int
    new_tokens: int
    context_tokens: int
    attention_pairs: float
    logit_tokens: int
    decode_pairs: float = 0.0

    @classmethod
    def decode(cls, batch: int, context: int) -> BatchShape:
        pairs = batch * (context + 1.0)
        return cls(batch, batch, batch * context, pairs, batch, pairs)

    @classmethod
    def prefill(cls, batch: int, prompt: int, cached: int = 0) -> BatchShape:
        pairs = prompt * cached + prompt * (prompt + 1) / 2.0
        return cls(batch, batch * prompt, batch * cached, batch * pairs, batch,
                   batch * pairs if prompt <= DECODE_QUERY_TOKENS else 0.0)

    @classmethod
    def from_sequences(cls, seqs: Iterable[tuple[int, int] | tuple[int, int, bool]]) -> BatchShape:
        """seqs: iterable of (new_tokens, cached_context, emits_token)."""
        n = new = ctx = logits = 0
        pairs = dec = 0.0
        for item in seqs:
            q, c = item[0], item[1]
            emits = item[2] if len(item) > 2 else True
            n += 1
            new += q
            ctx += c
            p = q * (c + (q + 1) / 2.0)
            pairs += p
            if q <= DECODE_QUERY_TOKENS:
                dec += p
            logits += 1 if emits else 0
        return cls(n, new, ctx, pairs, logits, dec)


@dataclass(frozen=True, slots=True)
class StepCost:
    compute_s: float
    memory_s: float
    comm_s: float
    overhead_s: float
    time_s: float
    bound: str
    flops: float  # per TP rank
    bytes: float  # per TP rank

    def to_json(self) -> dict[str, float | str]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class ShardConstants:
    """The model side of the cost model for one TP rank: model × format × KV format × tp × pp.
    Independent of the accelerator, so a sweep over GPUs computes it once."""

    dense_weight_bytes: float  # read every step
    expert_bytes: float  # one routed expert across the MoE layers
    num_experts: int
    experts_per_token: int
    dense_weights_read: float  # parameters read every step (for dequant work)
    dequant_flops_per_weight: float
    matmul_flops_per_token: float  # dense layers and attention projections (shared experts included)
    expert_flops_per_token: float  # the routed experts a token goes through
    lm_head_flops_per_logit: float
    attn_flops_per_pair_full: float  # summed over full-attention layers
    attn_flops_per_pair_window: float  # summed over sliding-window layers
    window: int
    kv_bytes_per_token_full: float
    kv_bytes_per_token_window: float
    act_bytes_per_token: float
    allreduces_per_step: int
    pp_hops: int
    hidden_bytes_per_token: float
    expert_shard_cols: float = 0.0  # one routed expert's intermediate columns on this rank (0: no experts)
    # Under attention data parallelism a GPU's step of n tokens meets the routed experts with the n tokens of
    # each of the tp GPUs (they step together): tp, else 1.
    expert_token_mult: int = 1
    # what a decoding query's pair costs beyond a prompt's (MLA's latent-space attention), summed over layers
    attn_flops_per_decode_pair_extra: float = 0.0
    # bytes of materialized attention scores per pair (an unfused engine's: EngineProfile.attention_score_bytes)
    score_bytes_per_pair_full: float = 0.0
    score_bytes_per_pair_window: float = 0.0
    # An engine whose GEMMs over more than dequant_pass_tokens tokens first unpack a weight-only format into a
    # 16-bit copy (EngineProfile.dequant_pass_tokens; 0: never): the pass reads the packed layer weights and
    # writes the copy (dequant_pass_bytes), one kernel after another, then the GEMMs read the copy
    # (dequant_pass_gemm_extra_bytes more than the packed weights).
    dequant_pass_tokens: int = 0
    dequant_pass_bytes: float = 0.0
    dequant_pass_gemm_extra_bytes: float = 0.0
    layers_per_stage: float = 0.0  # the layers one GPU runs (the model's over pp), for an eager step's floor
    moe_layers_per_stage: float = 0.0  # of them, the MoE layers (their floor is EngineProfile.eager_moe_layer_s)
    kv_heads: float = 0.0  # KV heads this rank keeps (an MLA latent: 1): a decode attention kernel's blocks a sequence

    @classmethod
    def of(cls, dep: StepDeployment) -> ShardConstants:
        """The constants of `dep`, shared by every deployment with the same inputs (a sweep over GPUs
        builds them once). The key is the value of everything `_build` reads, so equal inputs give
        the same constants whichever objects carry them."""
        f = dep.weight_format
        key = (dep.model, f.weight_bits, f.embed_bits, f.weight_only, f.dequant_flops_per_weight,
               dep.kv_format.bytes_per_element, dep.tp, dep.pp, dep.weights_bytes, dep.engine.activation_workspace,
               dep.attention_dp, dep.engine.pipeline_microbatches, dep.expert_parallel,
               dep.engine.attention_score_bytes, dep.engine.dequant_pass_tokens)
        hit = _SHARD_CACHE.get(key)
        if hit is None:
            if len(_SHARD_CACHE) >= _SHARD_CACHE_SIZE:
                _SHARD_CACHE.clear()
            hit = _SHARD_CACHE[key] = cls._build(dep)
        return hit

    @classmethod
    def _build(cls, dep: StepDeployment) -> ShardConstants:
        m, f, tp = dep.model, dep.weight_format, dep.tp
        # Attention data parallelism: a GPU runs everything but the routed experts whole, on its own tokens;
        # its share of the experts' work is its own tokens' worth (tp GPUs × n tokens over tp GPUs), and the
        # tokens meet the experts through a gather and a scatter of the tp GPUs' hidden states per MoE layer
        # (one all-reduce's volume).
        ranks = attention_ranks(dep)
        dtp = dense_tp(dep)  # the split of everything but the routed experts
        scale = dep.weights_bytes / weights_bytes(m, f)  # GGUF: exact bytes scale every term alike
        wb, eb = f.weight_bits / 8 * scale, f.embed_bits / 8 * scale
        kv_tok = kv_bytes_per_token_per_gpu(m, dep.kv_format.bytes_per_element, dtp, 1)  # all layers, one rank
        win_share = m.sliding_window_layers / m.num_layers
        per_pair = m.attention_flops_per_pair / dtp
        routed = m.expert_params * m.moe_layers * m.experts_per_token if m.is_moe else 0.0
        act_inter = m.moe_intermediate_size * m.experts_per_token if m.is_moe else m.intermediate_size
        # Pipelined micro-batches go at the pace of the slowest stage, the last, which holds the lm_head besides
        # its share of the layers: a micro-batch's step (pp stages of the last one's length) costs the layers
        # once and the lm_head pp times.
        head = dep.pp if (dep.pp > 1 and dep.engine.pipeline_microbatches) else 1
        # The unpacked copy covers the transformer layers' weights: a prompt's lm_head multiplies one token's
        # hidden state (the last), below any pass threshold, and the routed experts go through their own kernels.
        unpacks = dep.engine.dequant_pass_tokens > 0 and f.weight_only and f.weight_bits < 16
        layer_params = m.shared_layer_params / dtp if unpacks else 0.0
        out = cls(
            dense_weight_bytes=(m.shared_layer_params * wb + m.lm_head_params * eb * head) / dtp,
            expert_bytes=m.expert_params * m.moe_layers * wb / tp,
            num_experts=m.num_experts,
            experts_per_token=m.experts_per_token,
            dense_weights_read=(m.shared_layer_params + m.lm_head_params * head) / dtp,
            dequant_flops_per_weight=f.dequant_flops_per_weight if f.weight_only else 0.0,
            matmul_flops_per_token=2.0 * (m.active_params - m.lm_head_params - routed) / dtp,
            expert_flops_per_token=2.0 * routed / dtp,
            lm_head_flops_per_logit=2.0 * m.lm_head_params * head / dtp,
            attn_flops_per_pair_full=per_pair * m.full_attention_layers,
            attn_flops_per_pair_window=per_pair * m.sliding_window_layers,
            window=m.sliding_window,
            kv_bytes_per_token_full=kv_tok * (1 - win_share),
            kv_bytes_per_token_window=kv_tok * win_share,
            # Activations round-trip memory between unfused kernels; the physical limit keeps them on chip.
            act_bytes_per_token=(ACT_BYTES * m.num_layers * (4 * m.hidden_size + 3 * act_inter / dtp)
                                 if dep.engine.activation_workspace else 0.0),
            allreduces_per_step=(m.moe_layers if ranks > 1 else 2 * m.num_layers) if tp > 1 else 0,
            pp_hops=dep.pp - 1,
            # the bytes a collective moves per token of this GPU's step: all tp GPUs' tokens under attention DP
            hidden_bytes_per_token=m.hidden_size * ACT_BYTES * ranks,
            # each expert's columns are split over the tp / ep GPUs that share it
            expert_shard_cols=m.moe_intermediate_size * dep.expert_parallel / tp if m.is_moe else 0.0,
            expert_token_mult=ranks,
            attn_flops_per_decode_pair_extra=((m.decode_attention_flops_per_pair - m.attention_flops_per_pair)
                                              / dtp * m.full_attention_layers),
            score_bytes_per_pair_full=dep.engine.attention_score_bytes * m.num_heads / dtp * m.full_attention_layers,
            score_bytes_per_pair_window=(dep.engine.attention_score_bytes * m.num_heads / dtp
                                         * m.sliding_window_layers),
            dequant_pass_tokens=dep.engine.dequant_pass_tokens if unpacks else 0,
            dequant_pass_bytes=layer_params * (wb + UNPACKED_BYTES),
            dequant_pass_gemm_extra_bytes=layer_params * (UNPACKED_BYTES - wb),
            layers_per_stage=m.num_layers / dep.pp,
            moe_layers_per_stage=m.moe_layers / dep.pp,
            kv_heads=kv_heads_per_rank(m, dtp),
        )
        return out


_SHARD_CACHE_SIZE = 4096  # distinct model × format × parallelism inputs kept; a planner sweep needs far fewer
_SHARD_CACHE: dict[tuple[Hashable, ...], ShardConstants] = {}


def _is_array(x: object) -> TypeIs[NDArray[np.generic]]:
    """A numpy array (a grid sweep's), without importing numpy for the scalar path every command takes."""
    return type(x).__module__ == "numpy"


def _where(cond: NDArray[np.generic], a: float | NDArray[np.float64],
           b: float | NDArray[np.float64]) -> NDArray[np.float64]:
    import numpy as np

    return np.where(cond, a, b)


@overload
def _max2(a: float, b: float) -> float: ...
@overload
def _max2(a: NDArray[np.float64], b: float | NDArray[np.float64]) -> NDArray[np.float64]: ...
@overload
def _max2(a: float, b: NDArray[np.float64]) -> NDArray[np.float64]: ...


def _max2(a: float | NDArray[np.float64], b: float | NDArray[np.float64]) -> float | NDArray[np.float64]:
    """max() that also works elementwise on numpy arrays (the grid sweep evaluates many GPUs at once)."""
    if _is_array(a) or _is_array(b):
        import numpy as np

        return np.maximum(a, b)
    return a if a >= b else b


@overload
def _min2(a: int, b: int) -> int: ...
@overload
def _min2(a: float, b: float) -> float: ...
@overload
def _min2(a: NDArray[_D], b: float | NDArray[_D]) -> NDArray[_D]: ...
@overload
def _min2(a: float, b: NDArray[_D]) -> NDArray[_D]: ...


def _min2(a: float | NDArray[_D], b: float | NDArray[_D]) -> float | NDArray[_D]:
    if _is_array(a) or _is_array(b):
        import numpy as np

        return np.minimum(a, b)
    return a if a <= b else b


@overload
def _pick(cond: bool, a: Num, b: Num) -> Num: ...
@overload
def _pick(cond: NDArray[np.bool_], a: float | NDArray[np.float64],
          b: float | NDArray[np.float64]) -> NDArray[np.float64]: ...


def _pick(cond: bool | NDArray[np.bool_], a: float | NDArray[np.float64],
          b: float | NDArray[np.float64]) -> float | NDArray[np.float64]:
    """a where cond else b, for a bool or elementwise for numpy arrays."""
    if _is_array(cond):
        return _where(cond, a, b)
    return a if cond else b


def _node_links(tp: int, pp: int, g: Num, inter: Num, link: Num) -> tuple[Num, Num, Num, Num]:
    """(all-reduce link, network steps per all-reduce, stage hand-off link across nodes, hand-offs that cross)
    for one replica of tp × pp GPUs laid out consecutively over nodes of g GPUs (a replica starts a node).

    A tensor-parallel group spans ceil(tp / g) nodes. Its ring all-reduce runs at the pace of its slowest hop,
    the one leaving a node: NCCL runs one ring channel per NIC, so that hop carries the ranks the node holds,
    r, times one GPU's network share (NCCL's busBw = nChannels × per-channel speed), never more than the link
    inside the node: min(link, r × inter). r is the least-filled node's share (tp − (nodes − 1)·g; g when g
    divides tp). Each all-reduce also makes 2(nodes − 1) network steps (NCCL's nInterSteps).
    Pipeline stages sit one after another: of the pp − 1 hand-offs, min(pp − 1, ceil(tp·pp / g) − 1) cross a
    node boundary (exact when g divides tp or tp divides g); such a hand-off goes out over the NICs of the
    stage's GPUs on that node, min(tp, g) of them (vLLM's send_tensor_dict(all_gather_group=tp group): each rank
    sends its slice, the next stage all-gathers), again never faster than the link.
    g, and the counts returned, are whole numbers typed as the links are: ints, or int arrays over accelerators."""
    nodes = -(-tp // g)
    spans = nodes > 1
    ranks = tp - (nodes - 1) * g
    ar_link = _pick(spans, _min2(link, ranks * inter), link)
    net_steps = 2 * (nodes - 1)
    crossings = _min2(pp - 1, -(-(tp * pp) // g) - 1)
    cross_link = _min2(link, _min2(tp, g) * inter)
    return ar_link, net_steps, cross_link, crossings


class StepConstants(Generic[Num]):
    """The hardware and engine side of the cost model for one deployment. Every field may be a float
    or, for grid sweeps (physics/grid.py), a numpy array over accelerators: StepConstants[float] (a bare
    StepConstants: a Deployment's) or StepConstants[NDArray[np.float64]] (a grid's). The engine's own
    numbers stay floats either way."""

    __slots__ = ("shard", "matmul_peak", "attn_peak", "dequant_peak", "bandwidth", "compute_eff", "memory_eff",
                 "kv_memory_eff", "expert_memory_eff", "matmul_eff", "expert_eff", "ramp_tokens", "dequant_factor",
                 "attn_eff",
                 "bubble", "unhidden",
                 "allreduce_factor_s_per_byte", "allreduce_latency_s", "oneshot_mult", "oneshot_max_bytes",
                 "oneshot_max_tokens", "nccl_latency_s", "p2p_s_per_byte", "p2p_latency_s",
                 "step_overhead_s", "per_sequence_overhead_s", "host_overlap", "offload_s", "eager_floor_s",
                 "kv_limited", "kv_fill_seqs")

    shard: ShardConstants
    matmul_peak: Num
    attn_peak: Num
    dequant_peak: Num
    bandwidth: Num
    compute_eff: float
    memory_eff: float | Num
    kv_memory_eff: float | Num
    expert_memory_eff: float | Num
    matmul_eff: float | Num
    expert_eff: float | Num
    ramp_tokens: float
    dequant_factor: float
    attn_eff: float
    bubble: float
    unhidden: float
    allreduce_factor_s_per_byte: float | Num
    allreduce_latency_s: float | Num
    oneshot_mult: float | Num
    oneshot_max_bytes: float
    oneshot_max_tokens: float
    nccl_latency_s: float | Num
    p2p_s_per_byte: float | Num
    p2p_latency_s: float | Num
    step_overhead_s: float
    per_sequence_overhead_s: float
    host_overlap: float
    offload_s: Num
    eager_floor_s: float
    kv_limited: bool
    kv_fill_seqs: float | Num

    def __init__(self, shard: ShardConstants, eng: EngineProfile, tp: int, pp: int, gpus_per_replica: int,
                 free_bytes_per_gpu: Num, matmul_peak: Num, peak16: Num, peak_fp32: Num, bandwidth: Num, link: Num,
                 host_link: Num, narrow: bool | Num = False,
                 gpus_per_node: Num | None = None, inter_node_link: Num | None = None,
                 nvlink: float | Num = 0.0, sm_count: float | Num | None = None) -> None:
        """`narrow` (a bool, or a bool array) and `gpus_per_node` (an int, or an int array) are typed as the
        numbers are: arrays exactly when they are (a grid sweep's). `nvlink` (a number, or an array): the
        GPUs of a node share an NVLink domain (1.0, else 0.0), where an engine's own peer-to-peer all-reduce runs.
        `sm_count` (a number, an array with 0 where unknown, or None): the accelerator's multiprocessors."""
        self.shard = shard
        self.matmul_peak = matmul_peak
        self.attn_peak = peak16
        self.dequant_peak = _max2(peak_fp32, peak16 / 16)
        self.bandwidth = bandwidth
        self.compute_eff = eng.compute_efficiency
        self.memory_eff = eng.memory_efficiency
        ceiling = eng.stream_ceiling_bytes_per_s
        if ceiling:  # achieved stream rate: 1 / (1 / (peak × eff) + 1 / ceiling), as a share of the peak
            self.memory_eff = 1.0 / (1.0 / eng.memory_efficiency + bandwidth / ceiling)
        self.kv_memory_eff = self.memory_eff * eng.attention_efficiency
        self.expert_memory_eff = self.memory_eff * eng.moe_memory_efficiency
        # `narrow`: the matmuls run on 8- or 4-bit tensor cores (a bool, or an array over accelerators)
        narrow_f = _where(narrow, eng.narrow_compute_efficiency, 1.0) if _is_array(narrow) else (
            eng.narrow_compute_efficiency if narrow else 1.0)
        self.matmul_eff = eng.compute_efficiency * narrow_f
        if eng.compute_ceiling_flops:  # achieved = 1 / (1 / (peak × eff) + 1 / ceiling), as a share of the peak
            self.matmul_eff = 1.0 / (1.0 / self.matmul_eff + matmul_peak / eng.compute_ceiling_flops)
        self.attn_eff = eng.compute_efficiency * eng.attention_compute_efficiency
        self.bubble = eng.pipeline_bubble * (pp - 1) / pp if (pp > 1 and eng.pipeline_microbatches) else 0.0
        self.expert_eff = self.matmul_eff * eng.moe_efficiency
        if eng.moe_width_ramp_cols and shard.expert_shard_cols:  # narrower expert shards, less of the peak
            cols = shard.expert_shard_cols
            self.expert_eff = self.expert_eff * cols / (cols + eng.moe_width_ramp_cols)
        self.unhidden = 1.0 - eng.roofline_overlap
        self.ramp_tokens = eng.compute_ramp_tokens
        self.dequant_factor = eng.dequant_factor
        link = link * eng.comm_efficiency
        # Past one node the network sets the pace (_node_links); inside one nothing changes.
        ar_link: Num
        ar_net_steps: int | Num
        cross_link: Num
        crossings: int | Num
        ar_link, ar_net_steps, cross_link, crossings = link, 0, link, 0
        if gpus_per_node is not None:
            assert inter_node_link is not None  # a node comes with its network (catalog/hardware.py: `node`)
            ar_link, ar_net_steps, cross_link, crossings = _node_links(tp, pp, gpus_per_node,
                                                                       inter_node_link * eng.comm_efficiency, link)
        self.allreduce_factor_s_per_byte = (2 * (tp - 1) / tp / ar_link) if tp > 1 else 0.0
        # a group inside one NVLink node all-reduces with the engine's own kernel: 1 where it runs, 0 where NCCL's
        # ring does (no NVLink, or past one node)
        custom = 1 < tp <= eng.custom_allreduce_gpus
        own = nvlink * _pick(ar_net_steps > 0, 0.0, 1.0) if custom else 0.0
        # the engine's one-shot kernel (EngineProfile.oneshot_allreduce_bytes / _tokens): where it runs, each GPU
        # reads (n - 1) × the message, n/2 times the ring's bytes; the message sizes or step tokens it takes
        self.oneshot_mult: float | Num = 1.0
        self.oneshot_max_bytes = 0.0
        self.oneshot_max_tokens = 0.0
        # (under attention data parallelism the MoE layers gather and scatter every rank's tokens instead: the ring's
        # bytes, ShardConstants.expert_token_mult > 1)
        if (custom and tp > 2 and (eng.oneshot_allreduce_bytes or eng.oneshot_allreduce_tokens)
                and shard.expert_token_mult == 1):
            self.oneshot_mult = 1.0 + own * (tp / 2 - 1)
            self.oneshot_max_tokens = float(eng.oneshot_allreduce_tokens)
            self.oneshot_max_bytes = eng.oneshot_allreduce_bytes * (2 if tp <= 4 else 1)
        self.allreduce_latency_s = eng.allreduce_latency_s
        self.nccl_latency_s = eng.allreduce_latency_s
        if eng.allreduce_latency_s:  # the physical limit (--ideal) has no latencies at all
            intra_steps = 2.0 * (tp - 1) - ar_net_steps if tp > 1 else 0.0
            # NCCL's ring: its hops; the engine's own kernel (below) replaces them where it takes the message
            self.nccl_latency_s = (eng.allreduce_latency_s + ar_net_steps * INTER_NODE_LATENCY_S
                                   + intra_steps * INTRA_NODE_HOP_LATENCY_S)
            if custom:  # the engine's own kernel: two barrier hops in place of the ring's
                intra_steps = intra_steps - own * (intra_steps - CUSTOM_ALLREDUCE_HOPS)
            self.allreduce_latency_s = (eng.allreduce_latency_s + ar_net_steps * INTER_NODE_LATENCY_S
                                        + intra_steps * INTRA_NODE_HOP_LATENCY_S)
        # roofline charges pp_hops × these: the per-hop mean of the hops inside a node and those across nodes
        hops = pp - 1
        # a hand-off carries this GPU's own tokens; a step's activation bytes count all tp GPUs' tokens under
        # attention data parallelism (ShardConstants.hidden_bytes_per_token), hence the division
        self.p2p_s_per_byte = (_pick(crossings > 0, ((hops - crossings) / link + crossings / cross_link) / hops,
                                     1 / link) / shard.expert_token_mult if pp > 1 else 0.0)
        self.p2p_latency_s = (P2P_LATENCY_S + crossings / hops * INTER_NODE_LATENCY_S
                              if (pp > 1 and eng.allreduce_latency_s) else 0.0)
        # the step's fixed time: the engine's, and each MoE layer's short kernels (EngineProfile.moe_layer_overhead_s)
        self.step_overhead_s = eng.step_overhead_s + eng.moe_layer_overhead_s * shard.moe_layers_per_stage
        self.per_sequence_overhead_s = eng.per_sequence_overhead_s
        self.host_overlap = eng.host_overlap
        # a step that carries a prompt chunk runs eagerly (not from a CUDA graph): it lasts at least its layers'
        # kernel launches from the host (EngineProfile.eager_step_layer_s a dense layer, eager_moe_layer_s a MoE
        # layer), which the GPU's work overlaps
        self.eager_floor_s = (eng.eager_step_layer_s * (shard.layers_per_stage - shard.moe_layers_per_stage)
                              + eng.eager_moe_layer_s * shard.moe_layers_per_stage)
        # Decode attention with one thread block per sequence and KV head (no split-KV): the decode sequences that
        # give every multiprocessor a block; fewer read the KV cache at n / kv_fill_seqs of its rate (kv_occupancy).
        # 0 (or 0 in a grid's array): the multiprocessors are not known, and no such limit is charged.
        self.kv_limited = not eng.split_kv and sm_count is not None
        self.kv_fill_seqs = 0.0
        if sm_count is not None and self.kv_limited and shard.kv_heads:
            self.kv_fill_seqs = sm_count / shard.kv_heads
        # Weights that do not fit stream from host memory over the host link on every step.
        self.offload_s = _max2(-free_bytes_per_gpu, 0.0) * (gpus_per_replica / tp) / host_link

    @classmethod
    def of(cls, dep: StepDeployment) -> StepConstants[float]:
        acc = dep.accelerator
        peak16 = acc.peak_16bit[1] * (acc.fp16_accumulate_speedup if dep.engine.fp16_accumulate else 1.0)
        native = dep.support.status == "native"
        dtype = dep.weight_format.compute_dtype
        # StepConstants, not cls: the class is generic, and `of` builds the scalar kind (there are no subclasses)
        return StepConstants(ShardConstants.of(dep), dep.engine, dep.tp, dep.pp, dep.gpus_per_replica,
                             free_bytes_per_gpu(dep),
                             (acc.peak(dtype) if native and dtype not in ("fp16", "bf16") else peak16),
                             peak16, acc.peak("fp32"), acc.memory_bandwidth_bytes_per_s, acc.interconnect_bytes_per_s,
                             acc.host_link_bytes_per_s,
                             narrow=native and dep.weight_format.compute_dtype in NARROW_DTYPES,
                             gpus_per_node=acc.gpus_per_node, inter_node_link=acc.inter_node_bytes_per_s,
                             nvlink=1.0 if acc.nvlink else 0.0, sm_count=acc.sm_count)


def kv_occupancy(c: StepConstants[Num], seqs: float) -> float | Num:
    """The share of its bandwidth a decode step of `seqs` sequences reads the KV cache at, for an engine whose
    attention kernel gives each sequence's KV head one thread block (EngineProfile.split_kv False): a block runs on
    one multiprocessor and streams at about that multiprocessor's share of the bandwidth, so sequences × KV heads
    blocks on S multiprocessors cover min(1, blocks / S) of it. A lent H200 (132 SMs) read one sequence's 8 KV
    heads of Llama-3.1-8B at 0.2 TB/s and 16 sequences' at 3.2 TB/s through PyTorch's attention (docs/accuracy.md):
    8/132 and 128/132 of the 3.2 TB/s the cache's reads reach at full occupancy give 0.19 and 3.1 TB/s."""
    full = c.kv_fill_seqs
    if _is_array(full):
        import numpy as np

        return np.where(full > 0, np.minimum(1.0, seqs / np.maximum(full, 1e-30)), 1.0)
    return 1.0 if (not full or seqs >= full) else seqs / full


def experts_touched(num_experts: int, per_token: int, tokens: float) -> float:
    """Expected distinct experts a step's tokens route to, per MoE layer: E·(1 − (1 − k/E)^T)."""
    if num_experts == 0 or tokens <= 0:
        return 0.0
    untouched: float = (1.0 - per_token / num_experts) ** tokens  # float ** float is typed Any (a negative base)
    return num_experts * (1.0 - untouched)


@dataclass(frozen=True, slots=True)
class StepWork:
    """What a step computes and moves on one TP rank, before any hardware is involved."""

    num_seqs: int
    new_tokens: int
    matmul_flops: float  # dense (and lm_head)
    expert_flops: float  # routed experts
    expert_tokens: float  # tokens each touched expert computes, on average
    attn_flops: float
    dequant_flops: float
    bytes: float  # weights and activations
    kv_bytes: float
    expert_bytes: float  # of `bytes`: the routed experts' weights the step reads
    collective_bytes: float  # activation bytes per all-reduce / pipeline hand-off
    serial_bytes: float = 0.0  # moved by a pass before the GEMMs can start (unpacking weights): not overlapped
    # a sequence computes a prompt chunk (more than DECODE_QUERY_TOKENS tokens): the step cannot be replayed from
    # a decode-step CUDA graph (a speculative verification of a few tokens a sequence can)
    prompt: bool = False

    @property
    def flops(self) -> float:
        return self.matmul_flops + self.expert_flops + self.attn_flops + self.dequant_flops


def _windowed(s: ShardConstants, n: int, new: int, ctx: float, pairs: float) -> tuple[float, float]:
    """(context tokens, attention pairs) of the sliding-window layers: each reads at most `window` tokens
    per sequence (exact for equal contexts); the full ones where the model has no windows."""
    if s.window and s.kv_bytes_per_token_window:
        avg_ctx = ctx / n
        avg_new = new / n
        return n * min(avg_ctx, s.window), n * avg_new * min(avg_ctx + (avg_new + 1) / 2.0, s.window)
    return ctx, pairs


def _attn_flops(s: ShardConstants, pairs: float, win_pairs: float, decode_pairs: float) -> float:
    """Attention FLOPs of a step's pairs (step_work and StepTimer.time): a decoding pair's extra after the rest."""
    flops = s.attn_flops_per_pair_full * pairs + s.attn_flops_per_pair_window * win_pairs
    if s.attn_flops_per_decode_pair_extra:
        flops = flops + s.attn_flops_per_decode_pair_extra * decode_pairs
    return flops


def _kv_bytes(s: ShardConstants, ctx: float, new: int, win_ctx: float, pairs: float, win_pairs: float) -> float:
    """A step's attention traffic (step_work and StepTimer.time): the KV cache read and written, then the
    scores an unfused engine materializes."""
    kv = s.kv_bytes_per_token_full * (ctx + new) + s.kv_bytes_per_token_window * (win_ctx + new)
    if s.score_bytes_per_pair_full:
        kv = kv + s.score_bytes_per_pair_full * pairs
    if s.score_bytes_per_pair_window:  # a model whose every layer is windowed has only these
        kv = kv + s.score_bytes_per_pair_window * win_pairs
    return kv


def _unpacks(s: ShardConstants, new: int) -> bool:
    """Whether a step of `new` tokens unpacks the weights into a 16-bit copy first (dequant_pass_tokens)."""
    return 0 < s.dequant_pass_tokens < new


def _dense_bytes(s: ShardConstants, new: int) -> float:
    """The dense weights a step's GEMMs read: the unpacked copy where the step unpacks one."""
    return s.dense_weight_bytes + s.dequant_pass_gemm_extra_bytes if _unpacks(s, new) else s.dense_weight_bytes


def _dequant_flops(s: ShardConstants, new: int) -> float:
    """Unpacking work inside weight-only GEMM kernels (none where a pass unpacked the weights already)."""
    if _unpacks(s, new):
        return 0.0
    return s.dequant_flops_per_weight * s.dense_weights_read * -(-new // DEQUANT_TILE_TOKENS)


def step_work(s: ShardConstants, shape: BatchShape) -> StepWork:
    n, new, ctx = shape.num_seqs, shape.new_tokens, shape.context_tokens
    win_ctx, win_pairs = _windowed(s, n, new, ctx, shape.attention_pairs)
    touched = experts_touched(s.num_experts, s.experts_per_token, new * s.expert_token_mult)
    weight_bytes = _dense_bytes(s, new) + touched * s.expert_bytes
    kv_bytes = _kv_bytes(s, ctx, new, win_ctx, shape.attention_pairs, win_pairs)
    return StepWork(
        num_seqs=n,
        new_tokens=new,
        matmul_flops=s.matmul_flops_per_token * new + s.lm_head_flops_per_logit * shape.logit_tokens,
        expert_flops=s.expert_flops_per_token * new,
        expert_tokens=new * s.expert_token_mult * s.experts_per_token / touched if touched else 0.0,
        attn_flops=_attn_flops(s, shape.attention_pairs, win_pairs, shape.decode_pairs),
        dequant_flops=_dequant_flops(s, new),
        bytes=weight_bytes + s.act_bytes_per_token * new,
        kv_bytes=kv_bytes,
        expert_bytes=touched * s.expert_bytes,
        collective_bytes=new * s.hidden_bytes_per_token,
        serial_bytes=s.dequant_pass_bytes if _unpacks(s, new) else 0.0,
        prompt=shape.attention_pairs > shape.decode_pairs,
    )


def roofline(w: StepWork, c: StepConstants[Num]) -> tuple[Num, Num, float | Num, float | Num, Num]:
    """(compute_s, memory_s, comm_s, overhead_s, time_s) of a step's work on the hardware `c`;
    elementwise when `c` holds arrays."""
    s = c.shard
    ramp = c.ramp_tokens
    dense_eff = c.matmul_eff * (w.new_tokens / (w.new_tokens + ramp) if ramp else 1.0)
    compute_s = (w.matmul_flops / (c.matmul_peak * dense_eff) + w.attn_flops / (c.attn_peak * c.attn_eff)
                 + w.dequant_flops * c.dequant_factor / c.dequant_peak / c.compute_eff)
    if s.expert_flops_per_token:  # not w.expert_flops: the simulator's decode runs pass arrays of batches
        expert_eff = c.expert_eff * (w.expert_tokens / (w.expert_tokens + ramp) if ramp else 1.0)
        compute_s = compute_s + w.expert_flops / (c.matmul_peak * expert_eff)
    kv_div = c.bandwidth * c.kv_memory_eff
    if c.kv_limited and not w.prompt:  # one block per sequence and KV head: a few sequences leave SMs idle
        kv_div = kv_div * kv_occupancy(c, w.num_seqs)
    memory_s = ((w.bytes - w.expert_bytes) / (c.bandwidth * c.memory_eff) + w.kv_bytes / kv_div
                + w.expert_bytes / (c.bandwidth * c.expert_memory_eff) + c.offload_s)
    comm_s = _comm_s(c, w.collective_bytes)
    overhead_s = c.step_overhead_s + c.per_sequence_overhead_s * w.num_seqs
    if w.serial_bytes:  # a pass that runs before the GEMMs, after the previous step: serial like comm
        pass_s = w.serial_bytes / (c.bandwidth * c.memory_eff)
        comm_s, time_s = _settle(c, compute_s, memory_s, comm_s + pass_s, overhead_s)
        comm_s = comm_s - pass_s  # the pass is reported as memory time
        memory_s = memory_s + pass_s
    else:
        comm_s, time_s = _settle(c, compute_s, memory_s, comm_s, overhead_s)
    if c.eager_floor_s and w.prompt:  # an eager step: the host's launches, reported as overhead
        floor_s = _max2(time_s, c.eager_floor_s)
        return compute_s, memory_s, comm_s, overhead_s + (floor_s - time_s), floor_s
    return compute_s, memory_s, comm_s, overhead_s, time_s


def _comm_s(c: StepConstants[Num], act: float) -> float | Num:
    """A step's all-reduces and pipeline hand-offs for `act` activation bytes (roofline and StepTimer)."""
    s = c.shard
    factor = c.allreduce_factor_s_per_byte
    latency = c.allreduce_latency_s
    if c.oneshot_max_tokens:  # the engine chooses by the step's tokens: its one-shot kernel, else NCCL's ring
        if act <= c.oneshot_max_tokens * s.hidden_bytes_per_token:
            factor = factor * c.oneshot_mult
        else:
            latency = c.nccl_latency_s
    elif act < c.oneshot_max_bytes:  # by the message's bytes: one-shot below one size, two-shot above
        factor = factor * c.oneshot_mult
    return (s.allreduces_per_step * (act * factor + latency)
            + s.pp_hops * (act * c.p2p_s_per_byte + c.p2p_latency_s))


def _settle(c: StepConstants[Num], compute_s: Num, memory_s: Num, comm_s: float | Num,
            overhead_s: float) -> tuple[float | Num, Num]:
    """(comm_s, time_s) from a step's parts as the profile overlaps them: the larger of compute and
    memory (plus the share of the smaller one the engine does not hide), the pipeline bubble, then the
    host's per-step work, partly overlapped with the device's. One place for roofline and StepTimer."""
    work_s = _max2(compute_s, memory_s)
    if c.unhidden:
        work_s = work_s + c.unhidden * (compute_s + memory_s - work_s)
    if c.bubble:
        comm_s = comm_s + work_s * c.bubble
    device_s = work_s + comm_s
    time_s = device_s + overhead_s
    if c.host_overlap:
        time_s = time_s - c.host_overlap * _min2(device_s, overhead_s)
    return comm_s, time_s


def step_cost(dep: StepDeployment, shape: BatchShape) -> StepCost:
    """Time of one engine step computing `shape` on `dep` (see the module docstring)."""
    if shape.new_tokens <= 0 or shape.num_seqs <= 0:
        return StepCost(0.0, 0.0, 0.0, 0.0, 0.0, "overhead", 0.0, 0.0)
    c: StepConstants = dep.consts
    w = step_work(c.shard, shape)
    compute_s, memory_s, comm_s, overhead_s, time_s = roofline(w, c)
    parts = (compute_s, memory_s, comm_s, overhead_s)
    bound = BOUNDS[parts.index(max(parts))]
    return StepCost(compute_s, memory_s, comm_s, overhead_s, time_s, bound, w.flops, w.bytes + w.kv_bytes)


def _per_cn(first: float, extra: float, cn: float) -> float:
    """first·cn [+ extra·cn], in the order _attn_flops and _kv_bytes add them: a decode step's attention FLOPs
    (and MLA's decoding extra) or its KV bytes (and an unfused engine's scores), its pairs and tokens both cn."""
    x = first * cn
    if extra:
        x = x + extra * cn
    return x


SHORT_RUN = 32  # decode steps up to which StepTimer.decode_list costs them one by one


def _decode_side(cn: NDArray[np.float64], full: float, window: float, div: float, pre: float,
                 post: tuple[float, ...], extra: float = 0.0) -> NDArray[np.float64]:
    """One side of a run of decode steps' roofline, elementwise over the steps' ctx + n (`cn`): pre +
    (cn·full [+ cn·window] [+ cn·extra]) / div + each post term, in roofline's order (StepTimer.decode_times;
    `extra`: a decoding pair's FLOPs, _attn_flops, or a pair's materialized score bytes, _kv_bytes)."""
    import numpy as np

    side = np.multiply(cn, full)
    if window:
        side += cn * window
    if extra:
        side += cn * extra
    side /= div
    np.add(pre, side, out=side)
    for x in post:
        side += x
    return side


class StepTimer:
    """`step_cost(dep, shape).time_s` for one deployment with scalar constants (the simulator's), and
    the times of a run of decode steps as an array, without building a BatchShape, StepWork and
    StepCost per step: the simulator costs a step per scheduler decision, millions per run.

    Exactly step_work then roofline: the same operations in the same order on the same doubles (a
    product or quotient of two constants is computed once, as roofline computes it each call; a term
    that only depends on the batch size is computed once per batch size). A term that is exactly 0.0
    is left out of an addition rather than added: every sum here is of non-negative times, for which
    x + 0.0 == x."""

    __slots__ = ("c", "s", "_attn_div", "_mem_div", "_kv_div", "_exp_div", "_per_n", "_plain")

    def __init__(self, c: StepConstants) -> None:
        self.c = c
        self.s = c.shard
        self._attn_div = c.attn_peak * c.attn_eff
        self._mem_div = c.bandwidth * c.memory_eff
        self._kv_div = c.bandwidth * c.kv_memory_eff
        self._exp_div = c.bandwidth * c.expert_memory_eff
        self._per_n: dict[int, Terms] = {}  # batch size → its decode terms (_decode_terms) and n·j
        # nothing after max(compute, memory) but comm and overhead, and no sliding windows
        self._plain = not (c.unhidden or c.bubble or c.host_overlap or c.shard.attn_flops_per_pair_window
                           or c.shard.kv_bytes_per_token_window)

    @staticmethod
    def usable(c: StepConstants) -> bool:
        """Scalar constants only: a grid sweep's hold numpy arrays over accelerators. Not where the KV reads
        depend on the step's sequence count (kv_occupancy): step_cost times those steps."""
        return not c.kv_limited and not any(_is_array(getattr(c, k)) for k in StepConstants.__slots__ if k != "shard")

    def time(self, n: int, new: int, ctx: int, pairs: float, logits: int, decode_pairs: float = 0.0) -> float:
        """step_cost(dep, BatchShape(n, new, ctx, pairs, logits, decode_pairs)).time_s."""
        if new <= 0 or n <= 0:
            return 0.0
        s, c = self.s, self.c
        # step_work
        win_ctx, win_pairs = _windowed(s, n, new, ctx, pairs)
        touched, weight_bytes, matmul_flops, dequant_flops, expert_bytes, act, dense_eff = self._weights(new, logits)
        kv_bytes = _kv_bytes(s, ctx, new, win_ctx, pairs, win_pairs)
        attn_flops = _attn_flops(s, pairs, win_pairs, decode_pairs)
        # roofline
        ramp = c.ramp_tokens
        compute_s = (matmul_flops / (c.matmul_peak * dense_eff) + attn_flops / self._attn_div
                     + dequant_flops * c.dequant_factor / c.dequant_peak / c.compute_eff)
        if s.expert_flops_per_token:
            expert_tokens = new * s.expert_token_mult * s.experts_per_token / touched if touched else 0.0
            expert_eff = c.expert_eff * (expert_tokens / (expert_tokens + ramp) if ramp else 1.0)
            compute_s = compute_s + s.expert_flops_per_token * new / (c.matmul_peak * expert_eff)
        memory_s = ((weight_bytes + s.act_bytes_per_token * new - expert_bytes) / self._mem_div
                    + kv_bytes / self._kv_div + expert_bytes / self._exp_div + c.offload_s)
        overhead_s = c.step_overhead_s + c.per_sequence_overhead_s * n
        time_s = _settle(c, compute_s, memory_s, self._serial_comm(new, act), overhead_s)[1]
        if c.eager_floor_s and pairs > decode_pairs:  # an eager step: a prompt chunk (StepWork.prompt)
            return time_s if time_s >= c.eager_floor_s else c.eager_floor_s
        return time_s

    def _serial_comm(self, new: int, act: float) -> float:
        """A step's comm time, and an unpacking pass's time after it where the step has one (as roofline)."""
        comm_s = _comm_s(self.c, act)
        if _unpacks(self.s, new):
            comm_s = comm_s + self.s.dequant_pass_bytes / self._mem_div
        return comm_s

    def decode_time(self, n: int, ctx: int) -> float:
        """time(n, n, ctx, ctx + n + 0.0, n, ctx + n + 0.0): one decode step of n sequences holding ctx tokens."""
        terms = self._per_n.get(n)
        if terms is None:
            if n <= 0:
                return 0.0
            terms = self._terms(n, 0)
        compute_pre, compute_post, memory_pre, memory_post, comm_s, overhead_s, _ = terms
        s = self.s
        if s.attn_flops_per_pair_window or s.kv_bytes_per_token_window:  # sliding windows: time()'s helpers
            pairs = ctx + n + 0.0
            win_ctx, win_pairs = _windowed(s, n, n, ctx, pairs)
            compute_s = compute_pre + _attn_flops(s, pairs, win_pairs, pairs) / self._attn_div
            memory_s = memory_pre + _kv_bytes(s, ctx, n, win_ctx, pairs, win_pairs) / self._kv_div
        else:
            cn = ctx + n
            compute_s = compute_pre + self._decode_attn(cn) / self._attn_div
            memory_s = memory_pre + self._decode_kv(cn) / self._kv_div
            if self._plain and not (compute_post or memory_post or comm_s):
                return (compute_s if compute_s >= memory_s else memory_s) + overhead_s
        # time()'s terms in its order, the batch-size ones from _decode_terms (tensor parallelism, experts, …)
        for x in compute_post:
            compute_s = compute_s + x
        for x in memory_post:
            memory_s = memory_s + x
        return _settle(self.c, compute_s, memory_s, comm_s, overhead_s)[1]

    def _decode_kv(self, cn: float) -> float:
        """_kv_bytes of a decode step whose KV tokens and pairs (all full-attention) are both cn."""
        return _per_cn(self.s.kv_bytes_per_token_full, self.s.score_bytes_per_pair_full, cn)

    def _kv_in_place(self, cn: NDArray[np.float64]) -> None:
        """_decode_kv elementwise, in place: cn·kv [+ cn·score]."""
        s = self.s
        if s.score_bytes_per_pair_full:
            score = cn * s.score_bytes_per_pair_full
            cn *= s.kv_bytes_per_token_full
            cn += score
        else:
            cn *= s.kv_bytes_per_token_full

    def _decode_attn(self, cn: float) -> float:
        """_attn_flops of a decode step whose pairs (all decoding) are cn: the same operations."""
        return _per_cn(self.s.attn_flops_per_pair_full, self.s.attn_flops_per_decode_pair_extra, cn)

    def _weights(self, new: int, logits: int) -> tuple[float, float, float, float, float, float, float]:
        """What a step of `new` tokens (`logits` of them emitting) reads and computes of the weights, as
        step_work and roofline compute it: (experts touched, weight bytes, matmul FLOPs, dequant FLOPs,
        routed-expert bytes, activation bytes, dense GEMM efficiency). Shared by time and _decode_terms."""
        s, c = self.s, self.c
        touched = experts_touched(s.num_experts, s.experts_per_token, new * s.expert_token_mult)  # 0.0: dense
        ramp = c.ramp_tokens
        return (touched, _dense_bytes(s, new) + touched * s.expert_bytes,
                s.matmul_flops_per_token * new + s.lm_head_flops_per_logit * logits,
                _dequant_flops(s, new),
                touched * s.expert_bytes, new * s.hidden_bytes_per_token,
                c.matmul_eff * (new / (new + ramp) if ramp else 1.0))

    def _decode_terms(self, n: int) -> DecodeTerms:
        """The terms of a decode step of n sequences (BatchShape(n, n, ctx, ctx + n + 0.0, n)) that do
        not depend on its context: (compute before attention, compute after it, memory before the KV
        reads, memory after them, comm, overhead), each as step_work and roofline compute it."""
        s, c = self.s, self.c
        touched, weight_bytes, matmul_flops, dequant_flops, expert_bytes, act, dense_eff = self._weights(n, n)
        ramp = c.ramp_tokens
        compute_pre = matmul_flops / (c.matmul_peak * dense_eff)
        compute_post = [dequant_flops * c.dequant_factor / c.dequant_peak / c.compute_eff]
        if s.expert_flops_per_token:
            expert_tokens = n * s.expert_token_mult * s.experts_per_token / touched if touched else 0.0
            expert_eff = c.expert_eff * (expert_tokens / (expert_tokens + ramp) if ramp else 1.0)
            compute_post.append(s.expert_flops_per_token * n / (c.matmul_peak * expert_eff))
        memory_pre = (weight_bytes + s.act_bytes_per_token * n - expert_bytes) / self._mem_div
        memory_post = [expert_bytes / self._exp_div, c.offload_s]
        comm_s = self._serial_comm(n, act)
        overhead_s = c.step_overhead_s + c.per_sequence_overhead_s * n
        return (compute_pre, tuple(x for x in compute_post if x != 0.0), memory_pre,
                tuple(x for x in memory_post if x != 0.0), comm_s, overhead_s)

    def _terms(self, n: int, m: int) -> Terms:
        """_decode_terms(n), then n·j for j = 0 … m − 1 (at least) as doubles: kept per batch size (a
        run sees a few hundred at most)."""
        terms = self._per_n.get(n)
        if terms is None or len(terms[-1]) < m:
            import numpy as np

            steps = np.arange(max(m, 64, 2 * len(terms[-1]) if terms else 0), dtype=np.float64) * n
            terms = self._per_n[n] = (*(terms[:-1] if terms else self._decode_terms(n)), steps)
        return terms

    def _memory_bound(self, terms: Terms, n: int, c0: int, m: int) -> bool:
        """Whether all m decode steps from context + n = c0 on take the memory term of max(): both terms
        grow with the context (each operation is monotonic), so it is enough that the last step's compute
        term is below the first one's (the scalar values are exactly those of the steps' own)."""
        s = self.s
        if self.c.unhidden or s.attn_flops_per_pair_window or s.kv_bytes_per_token_window:
            return False
        compute_pre, compute_post, memory_pre, memory_post = terms[:4]
        compute_last = compute_pre + self._decode_attn(c0 + n * (m - 1)) / self._attn_div
        for x in compute_post:
            compute_last += x
        memory_first = memory_pre + self._decode_kv(c0) / self._kv_div
        for x in memory_post:
            memory_first += x
        return compute_last < memory_first

    def decode_list(self, n: int, c0: int, m: int) -> list[float]:
        """decode_times as a list, for m steps (full-attention models only, as decode_times; the fast path
        leaves sliding windows to the scalar path). A short run of a dense model's memory-bound decode on
        one GPU takes the scalar operations (cheaper than numpy's per-call cost on a few values): the
        memory branch of max() without its zero terms, on the same doubles."""
        terms = self._per_n.get(n)
        if terms is None or len(terms[-1]) < m:
            terms = self._terms(n, m)
        compute_pre, compute_post, memory_pre, memory_post, comm_s, overhead_s, _ = terms
        if m <= SHORT_RUN and self._plain and not (compute_post or memory_post or comm_s):
            kv, kv_div = self._decode_kv, self._kv_div
            if compute_pre + self._decode_attn(c0 + n * (m - 1)) / self._attn_div < (
                    memory_pre + kv(c0) / kv_div):  # _memory_bound
                return [memory_pre + kv(cn) / kv_div + overhead_s for cn in range(c0, c0 + n * m, n)]
        import numpy as np

        out = np.empty(m)
        self.decode_times(n, c0, out)
        times: list[float] = out.tolist()
        return times

    def decode_times(self, n: int, c0: int, out: NDArray[np.float64]) -> None:
        """Times of len(out) decode steps of n sequences into `out` (float64), the first step's context
        + n being c0 and each next one n more (every member one token longer): BatchShape(n, n, ctx,
        ctx + n + 0.0, n). The contexts are integers below 2**53, so c0 + n·j is exact as a double and the
        products below are those of the int arrays that step_work converts. A model with sliding windows:
        _windowed_times."""
        import numpy as np

        m = len(out)
        terms = self._per_n.get(n)
        if terms is None or len(terms[-1]) < m:
            terms = self._terms(n, m)
        s = self.s
        if s.window and s.kv_bytes_per_token_window:
            self._windowed_times(n, c0, out, terms)
            return
        compute_pre, compute_post, memory_pre, memory_post, comm_s, overhead_s, steps = terms
        cn = np.add(steps[:m], c0, out=out)
        if self._plain and not (compute_post or memory_post or comm_s):  # as in decode_list
            # a dense model's decode on one GPU: _memory_bound and the memory branch without its zero terms
            if (compute_pre + self._decode_attn(c0 + n * (m - 1)) / self._attn_div
                    < memory_pre + self._decode_kv(c0) / self._kv_div):
                self._kv_in_place(cn)
                cn /= self._kv_div
                cn += memory_pre
                cn += overhead_s
                return
        elif self._memory_bound(terms, n, c0, m):
            self._kv_in_place(cn)
            cn /= self._kv_div
            np.add(memory_pre, cn, out=cn)
            for x in memory_post:
                cn += x
            self._finish_times(cn, comm_s, overhead_s, out)
            return
        # compute_s = matmul + attention (+ dequant + experts); attention over pairs = ctx + n
        compute = _decode_side(cn, s.attn_flops_per_pair_full, s.attn_flops_per_pair_window, self._attn_div,
                               compute_pre, compute_post, s.attn_flops_per_decode_pair_extra)
        # memory_s = weights and activations + KV of ctx + new tokens (+ experts + offload)
        memory = _decode_side(cn, s.kv_bytes_per_token_full, s.kv_bytes_per_token_window, self._kv_div,
                              memory_pre, memory_post, s.score_bytes_per_pair_full)
        self._settle_times(compute, memory, comm_s, overhead_s, out)

    def _windowed_times(self, n: int, c0: int, out: NDArray[np.float64], terms: Terms) -> None:
        """decode_times for a model with sliding-window layers. A step whose members' mean context is under
        the window reads a window share that grows with it (_windowed's min()): those steps, the first ones,
        take decode_time. From the step where the mean context reaches the window every member reads the
        whole window, so the windowed layers' FLOPs and bytes are the same double every step (_windowed's
        n·window and n·1.0·window), and the rest of the run is the full-attention terms over the array plus
        those constants, added in _attn_flops' and _kv_bytes' order."""
        import numpy as np

        s, m = self.s, len(out)
        j = 0
        while j < m and (c0 - n + j * n) / n < s.window:  # ctx / n, the mean context _windowed compares
            out[j] = self.decode_time(n, c0 - n + j * n)
            j += 1
        if j == m:
            return
        compute_pre, compute_post, memory_pre, memory_post, comm_s, overhead_s, steps = terms
        win_ctx, win_pairs = _windowed(s, n, n, c0 - n + j * n, 0.0)  # the whole window, every step from j on
        cn = np.add(steps[: m - j], c0 + j * n)  # ctx + n of steps j … m − 1
        # _attn_flops: full·pairs + window·win_pairs [+ extra·pairs]; pairs = ctx + n
        compute = cn * s.attn_flops_per_pair_full
        compute += s.attn_flops_per_pair_window * win_pairs
        if s.attn_flops_per_decode_pair_extra:
            compute += cn * s.attn_flops_per_decode_pair_extra
        compute /= self._attn_div
        np.add(compute_pre, compute, out=compute)
        for x in compute_post:
            compute += x
        # _kv_bytes: full·(ctx + n) + window·(win_ctx + n) [+ score·pairs] [+ window score·win_pairs]
        memory = cn * s.kv_bytes_per_token_full
        memory += s.kv_bytes_per_token_window * (win_ctx + n)
        if s.score_bytes_per_pair_full:
            memory += cn * s.score_bytes_per_pair_full
        if s.score_bytes_per_pair_window:
            memory += s.score_bytes_per_pair_window * win_pairs
        memory /= self._kv_div
        np.add(memory_pre, memory, out=memory)
        for x in memory_post:
            memory += x
        self._settle_times(compute, memory, comm_s, overhead_s, out[j:])

    def _settle_times(self, compute: NDArray[np.float64], memory: NDArray[np.float64], comm_s: float,
                      overhead_s: float, out: NDArray[np.float64]) -> None:
        """_settle over arrays of steps into `out`: the larger of compute and memory, plus the share of the
        smaller one the engine does not hide, then _finish_times. `compute` is overwritten."""
        import numpy as np

        c = self.c
        if c.unhidden:
            work = np.maximum(compute, memory)
            compute += memory  # compute_s + memory_s - work_s, as roofline groups it
            compute -= work
            compute *= c.unhidden
            work += compute
        else:
            work = np.maximum(compute, memory, out=compute)
        self._finish_times(work, comm_s, overhead_s, out)

    def _finish_times(self, work: NDArray[np.float64], comm_s: float, overhead_s: float,
                      out: NDArray[np.float64]) -> None:
        """roofline after max(compute, memory): the pipeline bubble, comm, overhead, host overlap."""
        import numpy as np

        c = self.c
        if c.bubble:
            comm = work * c.bubble
            np.add(comm_s, comm, out=comm)
            work += comm
        elif comm_s != 0.0:
            work += comm_s
        device = work  # device_s
        if c.host_overlap:
            overlap = np.minimum(device, overhead_s)
            overlap *= c.host_overlap
            np.add(device, overhead_s, out=out)
            out -= overlap
        else:
            np.add(device, overhead_s, out=out)
