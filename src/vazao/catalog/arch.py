"""ModelArch: the numbers of a transformer that decide its memory and its FLOPs.

Parameter counts are written out per matrix so that each term can be checked against a
config.json by hand. Norms and biases are counted; rotary tables and buffers are not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

from vazao import limits

# Sane maxima for what a file may claim (the largest published models are far inside them): they keep
# a hostile config.json or GGUF header from asking for 10^400 parameters or a zero-sized head.

# (field, least, most): counts a ModelArch holds, whoever built it (catalog, config.json, GGUF).
_BOUNDS = (  # each field's range (vazao.limits: a model's architecture)
    ("num_layers", 1, limits.MAX_LAYERS), ("hidden_size", 1, limits.MAX_HIDDEN),
    ("num_heads", 1, limits.MAX_HEADS), ("num_kv_heads", 1, limits.MAX_HEADS),
    ("head_dim", 1, limits.MAX_HEAD_DIM), ("intermediate_size", 0, limits.MAX_INTERMEDIATE),
    ("vocab_size", 1, limits.MAX_VOCAB), ("max_context", 0, limits.MAX_MODEL_CONTEXT),
    ("num_experts", 0, limits.MAX_EXPERTS), ("experts_per_token", 0, limits.MAX_EXPERTS),
    ("num_shared_experts", 0, limits.MAX_EXPERTS), ("moe_intermediate_size", 0, limits.MAX_INTERMEDIATE),
    ("first_dense_layers", 0, limits.MAX_LAYERS), ("kv_lora_rank", 0, limits.MAX_RANK),
    ("q_lora_rank", 0, limits.MAX_RANK), ("qk_rope_head_dim", 0, limits.MAX_HEAD_DIM),
    ("qk_nope_head_dim", 0, limits.MAX_HEAD_DIM), ("v_head_dim", 0, limits.MAX_HEAD_DIM),
    ("sliding_window", 0, limits.MAX_MODEL_CONTEXT), ("sliding_window_layers", 0, limits.MAX_LAYERS),
)


def _short(v: int) -> str:
    text = f"{v:,}"
    return text if len(text) <= 30 else f"a {len(str(abs(v)))}-digit number"


@dataclass(frozen=True)
class ModelArch:
    name: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_context: int
    tie_word_embeddings: bool = False
    gated_mlp: bool = True  # SwiGLU/GeGLU: gate, up and down projections
    qkv_bias: bool = False
    # Mixture of experts (0 = dense). Layers below first_dense_layers use intermediate_size.
    num_experts: int = 0
    experts_per_token: int = 0
    num_shared_experts: int = 0
    moe_intermediate_size: int = 0
    first_dense_layers: int = 0
    # Multi-head latent attention (DeepSeek-V2/V3). kv_lora_rank > 0 switches it on.
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # Sliding-window attention: how many layers use a window, and its size in tokens.
    sliding_window: int = 0
    sliding_window_layers: int = 0
    family: str = ""
    source: str = ""
    as_of: str = ""
    aliases: tuple[str, ...] = field(default=(), compare=False)
    declared_params: float | None = field(default=None, compare=False)  # the publisher's own count

    def __post_init__(self) -> None:
        for name, lo, hi in _BOUNDS:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"{self.name}: {name} must be a whole number, got {v!r}"[:200])
            if not lo <= v <= hi:
                least = "at least" if v < lo else "at most"
                raise ValueError(f"{self.name}: {name} must be {least} {lo if v < lo else hi:,}, "
                                 f"got {_short(v)}")
        if self.num_kv_heads > self.num_heads:
            raise ValueError(f"{self.name}: num_kv_heads ({self.num_kv_heads}) exceeds num_heads ({self.num_heads})")
        if not self.is_mla and self.num_heads % self.num_kv_heads:
            raise ValueError(f"{self.name}: num_heads ({self.num_heads}) is not a multiple of num_kv_heads "
                             f"({self.num_kv_heads}): query heads share KV heads in equal groups")
        if self.num_experts and not (0 < self.experts_per_token <= self.num_experts):
            raise ValueError(f"{self.name}: experts_per_token must be in 1..num_experts")
        if self.num_experts and self.moe_intermediate_size < 1:
            raise ValueError(f"{self.name}: moe_intermediate_size must be at least 1 in a mixture of experts")
        if self.num_experts and self.first_dense_layers >= self.num_layers:
            raise ValueError(f"{self.name}: first_dense_layers ({self.first_dense_layers}) leaves no layer for "
                             f"the experts of a {self.num_layers}-layer model")
        if self.dense_mlp_layers and self.intermediate_size < 1:
            raise ValueError(f"{self.name}: intermediate_size must be at least 1 (dense MLP layers)")
        if self.sliding_window_layers > self.num_layers:
            raise ValueError(f"{self.name}: sliding_window_layers ({self.sliding_window_layers}) exceeds the "
                             f"{self.num_layers} layers")
        if self.declared_params is not None and not (math.isfinite(self.declared_params)
                                                      and 0 < self.declared_params <= limits.MAX_PARAMS):
            raise ValueError(f"{self.name}: declared_params must be a positive count, got {self.declared_params!r}")

    # ---- attention -------------------------------------------------------------------
    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def attention_kind(self) -> str:
        if self.is_mla:
            return "MLA"
        if self.num_kv_heads == 1:
            return "MQA"
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "GQA"

    @cached_property
    def kv_elements_per_token_per_layer(self) -> int:
        """K and V elements cached per token per layer (MLA: the compressed latent plus the rope key)."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim

    @cached_property
    def full_attention_layers(self) -> int:
        return self.num_layers - self.sliding_window_layers

    def kv_bytes_per_token(self, bytes_per_element: float = 2.0) -> float:
        """KV bytes one token adds while every layer still keeps it (context ≤ window).

        MHA/GQA/MQA: 2 (K and V) × layers × kv_heads × head_dim × bytes (seed 004: 327,680 for
        Llama 3.1 70B at 16 bits)."""
        return self.num_layers * self.kv_elements_per_token_per_layer * bytes_per_element

    def kv_bytes_per_sequence(self, context: int, bytes_per_element: float = 2.0) -> float:
        """KV bytes one sequence of `context` tokens holds; sliding-window layers keep only the window."""
        per_layer = self.kv_elements_per_token_per_layer * bytes_per_element
        windowed = min(context, self.sliding_window) if self.sliding_window_layers else context
        return per_layer * (self.full_attention_layers * context + self.sliding_window_layers * windowed)

    @cached_property
    def attention_flops_per_pair(self) -> float:
        """FLOPs per (query, key) pair per layer: QK^T and PV, 2 FLOPs per multiply-add."""
        if self.is_mla:
            return 2.0 * self.num_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim)
        return 4.0 * self.num_heads * self.head_dim

    @cached_property
    def decode_attention_flops_per_pair(self) -> float:
        """FLOPs per (query, key) pair per layer of a decoding query. MLA decodes in the latent space (the
        up-projections absorbed into the query and the output: DeepSeek-V2 paper §2.1.2, FlashMLA, vLLM's and
        SGLang's MLA decode backends): each head scores the kv_lora_rank + rope latent and sums the
        kv_lora_rank values, 2·heads·(2·kv_lora_rank + rope) FLOPs, 3.4× the prompt's per-head form for
        DeepSeek-V3 (278,528 against 81,920). Prompts keep that form (the latent expanded once per token).
        Every other attention: the same as a prompt's."""
        if self.is_mla:
            return 2.0 * self.num_heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)
        return self.attention_flops_per_pair

    # ---- parameters ---------------------------------------------------------------------
    @cached_property
    def attention_params_per_layer(self) -> int:
        h = self.hidden_size
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            q = (h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.num_heads * qk
                 if self.q_lora_rank else h * self.num_heads * qk)
            kv_a = h * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            kv_b = self.kv_lora_rank * self.num_heads * (self.qk_nope_head_dim + self.v_head_dim)
            o = self.num_heads * self.v_head_dim * h
            return q + kv_a + kv_b + o
        q = h * self.num_heads * self.head_dim
        kv = 2 * h * self.num_kv_heads * self.head_dim
        o = self.num_heads * self.head_dim * h
        bias = (self.num_heads + 2 * self.num_kv_heads) * self.head_dim if self.qkv_bias else 0
        return q + kv + o + bias

    def _mlp(self, inter: int) -> int:
        return (3 if self.gated_mlp else 2) * self.hidden_size * inter

    @cached_property
    def moe_layers(self) -> int:
        return self.num_layers - self.first_dense_layers if self.is_moe else 0

    @cached_property
    def dense_mlp_layers(self) -> int:
        return self.num_layers - self.moe_layers

    @cached_property
    def expert_params(self) -> int:
        """Parameters of one routed expert."""
        return self._mlp(self.moe_intermediate_size) if self.is_moe else 0

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        """The output projection; shares storage with the embedding when tied."""
        return self.vocab_size * self.hidden_size

    @cached_property
    def shared_layer_params(self) -> int:
        """Every parameter of the layers that is read on each token whatever the routing."""
        norms = 2 * self.hidden_size * self.num_layers + self.hidden_size
        attn = self.attention_params_per_layer * self.num_layers
        dense = self._mlp(self.intermediate_size) * self.dense_mlp_layers
        shared = self.moe_layers * self.num_shared_experts * self.expert_params
        router = self.moe_layers * self.num_experts * self.hidden_size
        return norms + attn + dense + shared + router

    @cached_property
    def routed_expert_params(self) -> int:
        return self.moe_layers * self.num_experts * self.expert_params

    @cached_property
    def total_params(self) -> int:
        """All stored parameters: untied lm_head counted once more."""
        head = 0 if self.tie_word_embeddings else self.lm_head_params
        return self.embedding_params + head + self.shared_layer_params + self.routed_expert_params

    @cached_property
    def active_params(self) -> int:
        """Parameters that touch one token (embedding row gathers are not counted as matmuls)."""
        routed = self.moe_layers * self.experts_per_token * self.expert_params
        return self.shared_layer_params + routed + self.lm_head_params

    def matmul_flops_per_token(self) -> float:
        """2 FLOPs per active matmul parameter (seed 004: ≈140 GFLOP per token for 70B)."""
        return 2.0 * self.active_params
