"""The schema of a config.json's language-model keys, in pydantic. Apart from catalog/models.py so
that a catalog look-up never builds it: creating the model class costs 20-40 ms of start-up (pydantic
also scans the installed packages for plugins), a tenth of a one-shot command."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from vazao import limits
from vazao.errors import VazaoError


def _no_bool(v: Any) -> Any:
    if isinstance(v, bool):
        raise ValueError("must be a whole number, not true/false")
    return v


def _count(lo: int, hi: int) -> Any:
    """A whole number in [lo, hi] (true/false refused: JSON booleans are not counts)."""
    return Annotated[int, BeforeValidator(_no_bool), Field(ge=lo, le=hi)]


_Layers = _count(1, limits.MAX_LAYERS)
_Heads = _count(1, limits.MAX_HEADS)
_Width = _count(1, limits.MAX_INTERMEDIATE)
_Rank = _count(0, limits.MAX_RANK)
_Experts = _count(0, limits.MAX_EXPERTS)
_Window = _count(0, limits.MAX_MODEL_CONTEXT)


class HFConfig(BaseModel):
    """The keys of a config.json that decide memory and FLOPs; the rest is ignored. Counts are
    bounded by the sane maxima of catalog/arch.py, so no file can ask for 10^400 parameters."""

    model_config = ConfigDict(extra="ignore")

    model_type: str = Field("", max_length=200)
    name_or_path: str = Field("", alias="_name_or_path", max_length=4096)
    hidden_size: _count(1, limits.MAX_HIDDEN)
    num_hidden_layers: _Layers
    num_attention_heads: _Heads
    num_key_value_heads: _Heads | None = None
    head_dim: _count(1, limits.MAX_HEAD_DIM) | None = None
    intermediate_size: _Width
    vocab_size: _count(1, limits.MAX_VOCAB)
    max_position_embeddings: _count(1, limits.MAX_MODEL_CONTEXT)
    tie_word_embeddings: bool | None = None
    attention_bias: bool | None = None
    # mixture of experts
    num_local_experts: _Experts | None = None  # Mixtral, gpt-oss
    n_routed_experts: _Experts | None = None  # DeepSeek
    num_experts: _Experts | None = None  # Qwen-MoE
    num_experts_per_tok: _Experts | None = None
    experts_per_token: _Experts | None = None  # gpt-oss
    n_shared_experts: _Experts | None = None
    shared_expert_intermediate_size: _count(0, limits.MAX_INTERMEDIATE) | None = None  # Qwen2-MoE: one wide expert
    moe_intermediate_size: _Width | None = None
    first_k_dense_replace: _count(0, limits.MAX_LAYERS) | None = None
    # multi-head latent attention
    kv_lora_rank: _Rank | None = None
    q_lora_rank: _Rank | None = None
    qk_rope_head_dim: _count(0, limits.MAX_HEAD_DIM) | None = None
    qk_nope_head_dim: _count(0, limits.MAX_HEAD_DIM) | None = None
    v_head_dim: _count(0, limits.MAX_HEAD_DIM) | None = None
    # sliding window
    sliding_window: _Window | None = None
    use_sliding_window: bool | None = None
    max_window_layers: _count(0, limits.MAX_LAYERS) | None = None
    layer_types: list[Annotated[str, Field(max_length=64)]] | None = Field(None, max_length=limits.MAX_LAYERS)
    sliding_window_pattern: _count(1, limits.MAX_LAYERS) | None = None
    sliding_window_pattern_private: _count(1, limits.MAX_LAYERS) | None = Field(None, alias="_sliding_window_pattern")
    quantization_config: dict[str, Any] | None = None


def validate(lm: Mapping[str, Any], where: str) -> HFConfig:
    """The language model's keys checked against the schema; a fault is one VazaoError naming `where`."""
    try:
        return HFConfig.model_validate(lm)
    except ValidationError as exc:
        missing = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "missing"]
        if missing:
            names = ", ".join(f"'{m}'" for m in missing)
            raise VazaoError(f"{where}: missing field{'s' if len(missing) > 1 else ''} {names}") from None
        raise VazaoError(f"{where}: {_field_error(exc.errors()[0])}") from None


def _field_error(err: Mapping[str, Any]) -> str:
    """One pydantic error as 'num_attention_heads must be at least 1, got 0'."""
    loc = ".".join(str(p) for p in err["loc"])
    got = repr(err.get("input"))
    got = got if len(got) <= 40 else f"{got[:20]}… ({len(got)} characters)"
    ctx = err.get("ctx") or {}
    if err["type"] == "greater_than_equal":
        return f"{loc} must be at least {ctx.get('ge')}, got {got}"
    if err["type"] == "less_than_equal":
        return f"{loc} must be at most {ctx.get('le'):,}, got {got}"
    return f"field '{loc}': {err['msg'].removeprefix('Value error, ')} (got {got})"
