"""Simulator settings: the scheduler and KV settings of an engine preset (engines.yaml), plus the
optional speculative decoding and disaggregated prefill/decode, and the axes a comparison varies."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from vazao import limits
from vazao.catalog.arch import ModelArch
from vazao.errors import VazaoError
from vazao.inputs import number, split_list
from vazao.physics.profiles import EngineProfile, get_engine

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment

DEFAULT_DRAFT_RATIO = 0.05  # a draft pass costs 5% of a target decode step unless a draft model is given
DEFAULT_MAX_WAITING = 100_000  # overload bound: stop when this many requests wait on one replica
# A client that answers a completion (a closed-loop slot freeing, a conversation's next turn) sends its next
# request U(0, this) later: its event loop, connection handling and the benchmark's bookkeeping never take
# exactly as long twice. Not latency (the clock starts when the request is sent). It matters through the ties it
# breaks: in a closed loop with uniform lengths, requests that finish in one step would otherwise be sent at one
# instant and share every prefill step for ever, where a real server's step boundaries fall between some of them
# and the clients drift apart. 1, 2 and 4 ms predict the serving file alike (docs/accuracy.md); 0 keeps the ties.
CLIENT_REACTION_S = 0.001


@dataclass(frozen=True)
class SpecConfig:
    """Speculative decoding: a draft proposes k tokens, the target verifies them in one pass and keeps
    each with probability alpha (Leviathan et al., ICML 2023). The draft's cost is a ratio of a target
    decode step, or the cost-model time of a draft model on the same accelerators."""

    k: int
    alpha: float
    draft_model: ModelArch | None = None
    draft_ratio: float | None = None

    def __post_init__(self) -> None:
        number(self.k, "speculative k (draft tokens)", minimum=1, maximum=limits.MAX_SPEC_K, integer=True)
        if not (isinstance(self.alpha, (int, float)) and 0 <= self.alpha <= 1):
            raise VazaoError(f"speculative alpha (acceptance rate) must be in [0, 1], got {self.alpha}")
        if self.draft_ratio is not None:
            number(self.draft_ratio, "draft cost ratio", minimum=0, maximum=100)

    def label(self) -> str:
        draft = self.draft_model.name if self.draft_model else f"ratio {self.ratio:g}"
        return f"k={self.k} α={self.alpha:g} draft {draft}"

    @property
    def ratio(self) -> float:
        return DEFAULT_DRAFT_RATIO if self.draft_ratio is None else self.draft_ratio


@dataclass(frozen=True)
class DisaggConfig:
    """Disaggregated serving: `prefill` replicas compute prompts, `decode` replicas generate; each
    prompt's KV cache crosses the link (bytes/s per GPU, default the accelerator's interconnect, or its
    inter-node network when the deployment spans more than one node: sim/disagg.py)."""

    prefill: int
    decode: int
    link_bytes_per_s: float | None = None
    link_latency_s: float = 0.0

    def __post_init__(self) -> None:
        if self.prefill < 1 or self.decode < 1:
            raise VazaoError(f"disaggregated pools need at least one replica each, got {self.prefill}:{self.decode}")
        if self.link_bytes_per_s is not None:
            number(self.link_bytes_per_s, "KV link bandwidth (bytes/s)", minimum=0, exclusive_min=True, maximum=1e18)

    @classmethod
    def parse(cls, text: str, link_bytes_per_s: float | None = None) -> DisaggConfig:
        parts = str(text).split(":")
        if len(parts) != 2 or not all(x.strip().isdigit() for x in parts):
            raise VazaoError(f"disaggregation takes PREFILL:DECODE replica counts, e.g. 1:1, got {str(text)[:60]!r}")
        p, d = (int(number(x, "disaggregated replicas", minimum=1, maximum=limits.MAX_SIM_REPLICAS, integer=True))
                for x in parts)
        return cls(p, d, link_bytes_per_s)


_BOUNDS = {"block_size": limits.MAX_BLOCK, "max_num_seqs": limits.MAX_SEQS,
           "max_num_batched_tokens": limits.MAX_BATCHED_TOKENS, "max_waiting": limits.MAX_QUEUE}


@dataclass(frozen=True)
class SimConfig:
    scheduler: str = "continuous"  # static | continuous
    kv_layout: str = "paged"  # paged | reserved
    block_size: int = 16
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = True
    prefix_caching: bool = True
    admission: str = "optimistic"  # optimistic | guaranteed (engines.yaml)
    prefill_priority: bool = False  # prompt steps run alone, the decoders waiting (engines.yaml)
    max_context: int | None = None  # tokens per sequence (engine max_model_len); None: the model's
    spec: SpecConfig | None = None
    disagg: DisaggConfig | None = None
    max_waiting: int = DEFAULT_MAX_WAITING
    timeline_points: int = 256
    client_reaction_s: float = CLIENT_REACTION_S  # the spread of a client's reply to a completion (seconds)

    def __post_init__(self) -> None:
        if self.scheduler not in ("static", "continuous"):
            raise VazaoError(f"scheduler must be static or continuous, got {self.scheduler!r}")
        if self.kv_layout not in ("paged", "reserved"):
            raise VazaoError(f"KV layout must be paged or reserved, got {self.kv_layout!r}")
        if self.admission not in ("optimistic", "guaranteed"):
            raise VazaoError(f"admission must be optimistic or guaranteed, got {self.admission!r}")
        for name, top in _BOUNDS.items():
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= top:
                raise VazaoError(f"{name} must be an integer from 1 to {top:,}, got {v}")
        if self.max_context is not None:
            number(self.max_context, "max context", minimum=2, maximum=limits.MAX_CONTEXT, integer=True)
        number(self.client_reaction_s, "client reaction time (s)", minimum=0, maximum=limits.MAX_CLIENT_REACTION_S)

    @classmethod
    def from_engine(cls, eng: EngineProfile, **overrides: Any) -> SimConfig:
        base = cls(scheduler=eng.scheduler, kv_layout=eng.kv_layout, block_size=eng.block_size,
                   max_num_seqs=eng.max_num_seqs, max_num_batched_tokens=eng.max_num_batched_tokens,
                   chunked_prefill=eng.chunked_prefill, prefix_caching=eng.prefix_caching,
                   admission=eng.admission, prefill_priority=eng.prefill_priority)
        return replace(base, **{k: v for k, v in overrides.items() if v is not None})

    def describe(self) -> str:
        kv = f"{self.kv_layout} KV (block {self.block_size}"
        if self.max_context is not None:
            kv += f", {self.max_context:,} tokens per sequence" if self.kv_layout == "reserved" else \
                f", max context {self.max_context:,}"
        parts = [f"{self.scheduler} batching", kv + ")",
                 f"max {self.max_num_seqs} seqs", f"{self.max_num_batched_tokens:,} tokens/step"]
        parts.append("chunked prefill" if self.chunked_prefill else "whole prefills")
        if self.prefill_priority:
            parts.append("prefill first")
        parts.append("prefix cache" if self.prefix_caching and self.kv_layout == "paged" else "no prefix cache")
        if self.spec:
            parts.append(f"speculative {self.spec.label()}")
        if self.disagg:
            parts.append(f"disaggregated {self.disagg.prefill}:{self.disagg.decode}")
        if self.client_reaction_s != CLIENT_REACTION_S:  # the default goes unsaid (docs/simulator.md)
            parts.append(f"clients reply within {self.client_reaction_s * 1e3:g} ms")
        return ", ".join(parts)


# ---- comparison axes ------------------------------------------------------------------------------
def _flag(value: str, axis: str) -> bool:
    v = value.strip().lower()
    if v in ("on", "true", "yes", "1"):
        return True
    if v in ("off", "false", "no", "0"):
        return False
    raise VazaoError(f"compare axis {axis!r} takes on|off, got {value!r}")


_AXIS_MAX = {"max_seqs": limits.MAX_SEQS, "budget": limits.MAX_BATCHED_TOKENS, "block": limits.MAX_BLOCK,
             "max_context": limits.MAX_CONTEXT}


def _int(value: str, axis: str) -> int:
    return int(number(value, f"compare axis {axis!r}", minimum=2 if axis == "max_context" else 1,
                      maximum=_AXIS_MAX[axis], integer=True))


def _spec(value: str, current: SpecConfig | None) -> SpecConfig | None:
    """off | K@ALPHA (e.g. 4@0.8), keeping the current draft."""
    if value.strip().lower() == "off":
        return None
    parts = value.split("@")
    if len(parts) != 2:
        raise VazaoError(f"compare axis 'spec' takes off or K@ALPHA (e.g. 4@0.8), got {value[:60]!r}")
    k_i = int(number(parts[0], "compare axis 'spec' K", minimum=1, maximum=limits.MAX_SPEC_K, integer=True))
    a_f = float(number(parts[1], "compare axis 'spec' ALPHA", minimum=0, maximum=1))
    draft = current.draft_model if current else None
    ratio = current.draft_ratio if current else None
    return SpecConfig(k_i, a_f, draft, ratio)


AXES = {
    "batching": "static | continuous",
    "kv": "reserved | paged",
    "prefix": "on | off (prefix caching)",
    "chunked": "on | off (chunked prefill)",
    "engine": "an engine preset: vllm, sglang, trtllm, llama.cpp, naive",
    "max_seqs": "sequences per step",
    "budget": "tokens per step (max_num_batched_tokens)",
    "block": "KV block size in tokens",
    "max_context": "tokens reserved/allowed per sequence",
    "spec": "off | K@ALPHA",
    "disagg": "off | PREFILL:DECODE",
}


def apply_axis(cfg: SimConfig, dep: Deployment, axis: str, value: str) -> tuple[SimConfig, Deployment]:
    """One comparison axis=value applied to (config, deployment); returns the new pair."""
    if axis == "batching":
        if value not in ("static", "continuous"):
            raise VazaoError(f"compare axis 'batching' takes static|continuous, got {value!r}")
        return replace(cfg, scheduler=value), dep
    if axis == "kv":
        if value not in ("reserved", "paged"):
            raise VazaoError(f"compare axis 'kv' takes reserved|paged, got {value!r}")
        return replace(cfg, kv_layout=value), dep
    if axis == "prefix":
        return replace(cfg, prefix_caching=_flag(value, axis)), dep
    if axis == "chunked":
        return replace(cfg, chunked_prefill=_flag(value, axis)), dep
    if axis == "engine":
        eng = get_engine(value)
        refused = None if dep.engine.is_ideal else eng.refusal_on(dep.accelerator)
        if refused:
            raise VazaoError(refused)
        new = replace(cfg, scheduler=eng.scheduler, kv_layout=eng.kv_layout, block_size=eng.block_size,
                      max_num_seqs=eng.max_num_seqs, max_num_batched_tokens=eng.max_num_batched_tokens,
                      chunked_prefill=eng.chunked_prefill, prefix_caching=eng.prefix_caching,
                      admission=eng.admission, prefill_priority=eng.prefill_priority)
        return new, replace(dep, engine=eng)
    if axis == "max_seqs":
        return replace(cfg, max_num_seqs=_int(value, axis)), dep
    if axis == "budget":
        return replace(cfg, max_num_batched_tokens=_int(value, axis)), dep
    if axis == "block":
        return replace(cfg, block_size=_int(value, axis)), dep
    if axis == "max_context":
        return replace(cfg, max_context=_int(value, axis)), dep
    if axis == "spec":
        return replace(cfg, spec=_spec(value, cfg.spec)), dep
    if axis == "disagg":
        if value.strip().lower() == "off":
            return replace(cfg, disagg=None), dep
        link = cfg.disagg.link_bytes_per_s if cfg.disagg else None
        return replace(cfg, disagg=DisaggConfig.parse(value, link)), dep
    raise VazaoError(f"unknown compare axis {axis!r} (axes: {', '.join(AXES)})")


def parse_compare(texts: list[str]) -> list[tuple[str, list[str]]]:
    """['batching=static,continuous', 'kv=reserved,paged'] → [(axis, values), …]."""
    out: list[tuple[str, list[str]]] = []
    variants = 1
    for text in texts:
        if "=" not in text:
            raise VazaoError(f"a comparison takes AXIS=V1,V2 (e.g. batching=static,continuous), got {text[:60]!r}")
        axis, _, vals = text.partition("=")
        axis = axis.strip().replace("-", "_")
        if axis not in AXES:
            raise VazaoError(f"unknown compare axis {axis[:60]!r} (axes: {', '.join(AXES)})")
        if not vals.strip():
            raise VazaoError(f"compare axis {axis!r} needs at least one value")
        values = split_list(vals, f"compare axis {axis!r}", max_items=limits.MAX_VARIANTS)
        variants *= len(values)
        if variants > limits.MAX_VARIANTS:
            raise VazaoError(f"a comparison asks for {variants:,} or more runs; at most {limits.MAX_VARIANTS}")
        out.append((axis, values))
    return out
