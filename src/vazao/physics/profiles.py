"""Engine profiles: efficiencies and overheads (calibratable) plus the scheduler settings of each engine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from types import MappingProxyType

from vazao.catalog._load import load_yaml, norm
from vazao.errors import NotFoundError, VazaoError


@dataclass(frozen=True)
class EngineProfile:
    name: str
    description: str
    compute_efficiency: float
    memory_efficiency: float
    step_overhead_s: float
    per_sequence_overhead_s: float
    allreduce_latency_s: float
    gpu_memory_utilization: float
    reserved_bytes: float
    activation_workspace: bool  # activation workspace held and activations round-tripping HBM
    vendors: tuple[str, ...]
    scheduler: str  # static | continuous
    kv_layout: str  # paged | reserved
    block_size: int
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    prefix_caching: bool
    source: str
    as_of: str

    def __post_init__(self) -> None:
        for f in ("compute_efficiency", "memory_efficiency", "gpu_memory_utilization"):
            v = getattr(self, f)
            if not 0 < v <= 1:
                raise VazaoError(f"engine {self.name}: {f} must be in (0, 1], got {v}")
        if self.scheduler not in ("static", "continuous"):
            raise VazaoError(f"engine {self.name}: scheduler must be static or continuous")
        if self.kv_layout not in ("paged", "reserved"):
            raise VazaoError(f"engine {self.name}: kv_layout must be paged or reserved")

    @property
    def is_ideal(self) -> bool:
        return self.name == "ideal"

    def idealized(self) -> EngineProfile:
        """Same scheduler, physical-limit costs: efficiencies 1, no overheads (--ideal)."""
        return replace(
            self, compute_efficiency=1.0, memory_efficiency=1.0, step_overhead_s=0.0,
            per_sequence_overhead_s=0.0, allreduce_latency_s=0.0, gpu_memory_utilization=1.0,
            reserved_bytes=0.0, activation_workspace=False,
        )


@cache
def engines() -> Mapping[str, EngineProfile]:
    raw = load_yaml("engines.yaml")["engines"]
    out = {}
    for name, e in raw.items():
        e = dict(e)
        e["vendors"] = tuple(e["vendors"])
        e["as_of"] = str(e["as_of"])
        e["reserved_bytes"] = float(e["reserved_bytes"])
        out[name] = EngineProfile(name=name, **e)
    return MappingProxyType(out)


def get_engine(name: str) -> EngineProfile:
    table = engines()
    key = norm(name).replace("llamacpp", "llama.cpp").replace("llama-cpp", "llama.cpp")
    key = {"tensorrt-llm": "trtllm", "trt-llm": "trtllm", "hf": "naive", "transformers": "naive"}.get(key, key)
    if key in table:
        return table[key]
    raise NotFoundError("engine", name, table.keys())
