"""step_cost: how long one engine step takes for a BatchShape on a Deployment.

The one cost model both the analytic estimates and the simulator call. A step is a roofline:
    time = max(FLOPs / (peak × compute_eff), bytes / (bandwidth × memory_eff)) + comm + overhead
computed per tensor-parallel rank. Pipeline stages run one after another for a step, so a step
over pp stages costs the same per-rank work plus (pp − 1) activation hand-offs.
"""

from __future__ import annotations

from dataclasses import dataclass

from vazao.physics.memory import ACT_BYTES, kv_bytes_per_token_per_gpu, weights_bytes

BOUNDS = ("compute", "memory", "communication", "overhead")
DEQUANT_TILE_TOKENS = 64  # weight-only kernels unpack each weight tile once per this many tokens
P2P_LATENCY_S = 5e-6


@dataclass(frozen=True, slots=True)
class BatchShape:
    """The tokens one engine step computes, as aggregates over its sequences.

    num_seqs: sequences in the step; new_tokens: tokens computed (sum over sequences);
    context_tokens: KV tokens already cached and read (sum over sequences);
    attention_pairs: query–key pairs scored (sum over sequences of new × (ctx + (new + 1)/2));
    logit_tokens: tokens whose logits are computed (one per sequence that emits a token)."""

    num_seqs: int
    new_tokens: int
    context_tokens: int
    attention_pairs: float
    logit_tokens: int

    @classmethod
    def decode(cls, batch: int, context: int) -> BatchShape:
        return cls(batch, batch, batch * context, batch * (context + 1.0), batch)

    @classmethod
    def prefill(cls, batch: int, prompt: int, cached: int = 0) -> BatchShape:
        pairs = prompt * cached + prompt * (prompt + 1) / 2.0
        return cls(batch, batch * prompt, batch * cached, batch * pairs, batch)

    @classmethod
    def from_sequences(cls, seqs) -> BatchShape:
        """seqs: iterable of (new_tokens, cached_context, emits_token)."""
        n = new = ctx = logits = 0
        pairs = 0.0
        for item in seqs:
            q, c = item[0], item[1]
            emits = item[2] if len(item) > 2 else True
            n += 1
            new += q
            ctx += c
            pairs += q * (c + (q + 1) / 2.0)
            logits += 1 if emits else 0
        return cls(n, new, ctx, pairs, logits)


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

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(frozen=True)
class StepConstants:
    """Everything step_cost needs that does not depend on the shape, per TP rank."""

    dense_weight_bytes: float  # read every step
    expert_bytes: float  # one routed expert across the MoE layers
    moe_layers: int
    num_experts: int
    experts_per_token: int
    dense_weights_read: float  # parameters read every step (for dequant work)
    dequant_flops_per_weight: float
    matmul_flops_per_token: float
    lm_head_flops_per_logit: float
    attn_flops_per_pair_full: float  # summed over full-attention layers
    attn_flops_per_pair_window: float  # summed over sliding-window layers
    window: int
    kv_bytes_per_token_full: float
    kv_bytes_per_token_window: float
    act_bytes_per_token: float
    matmul_peak: float
    attn_peak: float
    dequant_peak: float
    bandwidth: float
    compute_eff: float
    memory_eff: float
    allreduces_per_step: int
    allreduce_factor_s_per_byte: float
    allreduce_latency_s: float
    pp_hops: int
    p2p_s_per_byte: float
    p2p_latency_s: float
    hidden_bytes_per_token: float
    step_overhead_s: float
    per_sequence_overhead_s: float
    offload_s: float

    @classmethod
    def of(cls, dep) -> StepConstants:
        m, f, acc, eng = dep.model, dep.weight_format, dep.accelerator, dep.engine
        tp, pp = dep.tp, dep.pp
        total_w = dep.weights_bytes_override or weights_bytes(m, f)
        scale = total_w / weights_bytes(m, f)  # GGUF: exact bytes scale every term alike
        wb, eb = f.weight_bits / 8 * scale, f.embed_bits / 8 * scale
        head = m.lm_head_params * eb
        dense = (m.shared_layer_params * wb + head) / tp
        support = dep.support
        matmul_peak = acc.peak(f.compute_dtype) if support.status == "native" else acc.peak_16bit[1]
        attn_peak = acc.peak_16bit[1]
        kv_elt = dep.kv_format.bytes_per_element
        kv_tok = kv_bytes_per_token_per_gpu(m, kv_elt, tp, 1)  # all layers of this TP rank
        win_share = m.sliding_window_layers / m.num_layers
        per_pair = m.attention_flops_per_pair / tp
        act_inter = m.moe_intermediate_size * m.experts_per_token if m.is_moe else m.intermediate_size
        link = acc.interconnect_bytes_per_s
        from vazao.physics.memory import fit

        offload = fit(dep, 1).offload_bytes_per_gpu * dep.gpus_per_replica / tp
        return cls(
            dense_weight_bytes=dense,
            expert_bytes=m.expert_params * m.moe_layers * wb / tp,
            moe_layers=m.moe_layers,
            num_experts=m.num_experts,
            experts_per_token=m.experts_per_token,
            dense_weights_read=(m.shared_layer_params + m.lm_head_params) / tp,
            dequant_flops_per_weight=f.dequant_flops_per_weight if f.weight_only else 0.0,
            matmul_flops_per_token=2.0 * (m.active_params - m.lm_head_params) / tp,
            lm_head_flops_per_logit=2.0 * m.lm_head_params / tp,
            attn_flops_per_pair_full=per_pair * m.full_attention_layers,
            attn_flops_per_pair_window=per_pair * m.sliding_window_layers,
            window=m.sliding_window,
            kv_bytes_per_token_full=kv_tok * (1 - win_share),
            kv_bytes_per_token_window=kv_tok * win_share,
            # Activations round-trip memory between unfused kernels; the physical limit keeps them on chip.
            act_bytes_per_token=(ACT_BYTES * m.num_layers * (4 * m.hidden_size + 3 * act_inter / tp)
                                 if eng.activation_workspace else 0.0),
            matmul_peak=matmul_peak,
            attn_peak=attn_peak,
            dequant_peak=max(acc.peak("fp32"), acc.peak_16bit[1] / 16),
            bandwidth=acc.memory_bandwidth_bytes_per_s,
            compute_eff=eng.compute_efficiency,
            memory_eff=eng.memory_efficiency,
            allreduces_per_step=2 * m.num_layers if tp > 1 else 0,
            allreduce_factor_s_per_byte=(2 * (tp - 1) / tp / link) if tp > 1 else 0.0,
            allreduce_latency_s=eng.allreduce_latency_s,
            pp_hops=pp - 1,
            p2p_s_per_byte=1 / link if pp > 1 else 0.0,
            p2p_latency_s=P2P_LATENCY_S if (pp > 1 and not eng.is_ideal and eng.step_overhead_s) else 0.0,
            hidden_bytes_per_token=m.hidden_size * ACT_BYTES,
            step_overhead_s=eng.step_overhead_s,
            per_sequence_overhead_s=eng.per_sequence_overhead_s,
            offload_s=offload / acc.host_link_bytes_per_s,
        )


def experts_touched(num_experts: int, per_token: int, tokens: float) -> float:
    """Expected distinct experts a step's tokens route to, per MoE layer: E·(1 − (1 − k/E)^T)."""
    if num_experts == 0 or tokens <= 0:
        return 0.0
    return num_experts * (1.0 - (1.0 - per_token / num_experts) ** tokens)


def step_cost(dep, shape: BatchShape) -> StepCost:
    """Time of one engine step computing `shape` on `dep` (see the module docstring)."""
    c: StepConstants = dep.consts
    n, new, ctx = shape.num_seqs, shape.new_tokens, shape.context_tokens
    if new <= 0 or n <= 0:
        return StepCost(0.0, 0.0, 0.0, 0.0, 0.0, "overhead", 0.0, 0.0)
    # Sliding-window layers read at most `window` tokens per sequence (exact for equal contexts).
    if c.window and c.kv_bytes_per_token_window:
        avg_ctx = ctx / n
        win_ctx = n * min(avg_ctx, c.window)
        avg_new = new / n
        win_pairs = n * avg_new * min(avg_ctx + (avg_new + 1) / 2.0, c.window)
    else:
        win_ctx, win_pairs = ctx, shape.attention_pairs

    touched = experts_touched(c.num_experts, c.experts_per_token, new)
    weight_bytes = c.dense_weight_bytes + touched * c.expert_bytes
    kv_bytes = (c.kv_bytes_per_token_full * (ctx + new) + c.kv_bytes_per_token_window * (win_ctx + new))
    moved = weight_bytes + kv_bytes + c.act_bytes_per_token * new

    matmul = c.matmul_flops_per_token * new + c.lm_head_flops_per_logit * shape.logit_tokens
    attn = c.attn_flops_per_pair_full * shape.attention_pairs + c.attn_flops_per_pair_window * win_pairs
    dequant = c.dequant_flops_per_weight * c.dense_weights_read * -(-new // DEQUANT_TILE_TOKENS)

    compute_s = (matmul / c.matmul_peak + attn / c.attn_peak + dequant / c.dequant_peak) / c.compute_eff
    memory_s = moved / (c.bandwidth * c.memory_eff) + c.offload_s
    act = new * c.hidden_bytes_per_token
    comm_s = (c.allreduces_per_step * (act * c.allreduce_factor_s_per_byte + c.allreduce_latency_s)
              + c.pp_hops * (act * c.p2p_s_per_byte + c.p2p_latency_s))
    overhead_s = c.step_overhead_s + c.per_sequence_overhead_s * n
    time_s = max(compute_s, memory_s) + comm_s + overhead_s
    parts = (compute_s, memory_s, comm_s, overhead_s)
    bound = BOUNDS[parts.index(max(parts))]
    return StepCost(compute_s, memory_s, comm_s, overhead_s, time_s, bound, matmul + attn + dequant, moved)
