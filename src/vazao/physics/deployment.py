"""Deployment: a model in a format on N accelerators with a parallel layout and an engine profile."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from vazao import limits
from vazao.catalog.arch import ModelArch
from vazao.catalog.formats import Format, KVFormat, Support, get_format, get_kv_format, support
from vazao.catalog.hardware import Accelerator
from vazao.catalog.local import resolve_accelerator
from vazao.errors import VazaoError
from vazao.physics.profiles import EngineProfile, get_engine

if TYPE_CHECKING:  # physics/step imports this module
    from vazao.catalog.engine_support import Lifecycle
    from vazao.physics.step import StepConstants



def check_tp(model: ModelArch, tp: int) -> None:
    """vLLM's rule for sharding attention (ColumnParallelLinear / QKVParallelLinear): the query heads
    split evenly across the tp ranks, and the KV heads either split evenly too or, when there are
    fewer KV heads than ranks, are replicated: tp a multiple of the KV heads. An MLA latent is
    replicated on every rank, so only the query heads need to divide."""
    if tp == 1:
        return
    heads, kv = model.num_heads, model.num_kv_heads
    if heads % tp:
        raise VazaoError(f"tp={tp} does not divide the {heads} attention heads of {model.name}: "
                         "each tensor-parallel rank needs the same number of heads")
    if not model.is_mla and kv % tp and tp % kv:
        raise VazaoError(f"tp={tp} does not fit the {kv} KV heads of {model.name} ({heads} attention heads): "
                         "KV heads must divide evenly across the ranks, or tp be a multiple of them")


@dataclass(frozen=True, eq=False)
class Deployment:
    model: ModelArch
    weight_format: Format
    kv_format: KVFormat
    accelerator: Accelerator
    engine: EngineProfile
    count: int = 1
    tp: int = 1
    pp: int = 1
    # Attention data parallelism (TensorRT-LLM enable_attention_dp, SGLang --enable-dp-attention, vLLM
    # --data-parallel-size with expert parallelism): each of the tp GPUs runs attention, the dense layers and
    # the lm_head whole for its own requests and KV, and only the routed experts are split across the tp GPUs.
    attention_dp: bool = False
    # Expert parallelism: the routed experts split `expert_parallel` ways as whole experts (each of the tp / ep
    # groups splitting its experts' columns), TensorRT-LLM moe_ep / --ep, vLLM --enable-expert-parallel.
    expert_parallel: int = 1
    # Exact weight bytes when known (a GGUF file's tensors); otherwise derived from the format.
    weights_bytes_override: float | None = None
    support_info: Support | None = field(default=None)

    def __post_init__(self) -> None:
        for name in ("count", "tp", "pp"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise VazaoError(f"{name} must be a positive integer, got {v!r}")
            if int(v) > limits.MAX_GPUS:
                shown = f"{v:,}" if v < 10**30 else f"a {len(str(v))}-digit number"
                raise VazaoError(f"{name} must be at most {limits.MAX_GPUS:,} accelerators, got {shown}")
        if self.count % (self.tp * self.pp):
            raise VazaoError(f"{self.count} GPUs cannot be split into replicas of tp × pp = {self.tp * self.pp}: "
                             "the GPU count must be a multiple of it")
        if self.pp > self.model.num_layers:
            raise VazaoError(f"pp={self.pp} exceeds the model's {self.model.num_layers} layers")
        check_tp(self.model, self.tp)
        ep = self.expert_parallel
        if isinstance(ep, bool) or not isinstance(ep, numbers.Integral) or ep < 1:
            raise VazaoError(f"expert parallelism must be a positive integer, got {ep!r}")
        if ep > 1 and not self.model.is_moe:
            raise VazaoError(f"expert parallelism needs a mixture-of-experts model; {self.model.name} is dense")
        if ep > 1 and (self.tp % ep or ep > self.model.num_experts):
            raise VazaoError(f"expert parallelism {ep} must divide tp={self.tp} (the experts are split over the "
                             f"tensor-parallel GPUs) and be at most the {self.model.num_experts} experts")
        if self.attention_dp and not self.model.is_moe:
            raise VazaoError(f"attention data parallelism needs a mixture-of-experts model; {self.model.name} is "
                             "dense (every layer would be a whole copy on each GPU: that is replicas, not tp)")

    @property
    def replicas(self) -> int:
        """Data-parallel copies of the model (count / (tp × pp))."""
        return self.count // (self.tp * self.pp)

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    # Values derived once per deployment, filled on first use (a sweep builds thousands of
    # deployments and reads few of them). Declared fields written with object.__setattr__, the
    # dataclasses idiom for a frozen class: named, excluded from init/repr/eq, reset by replace().
    # Not functools.cached_property: in Python 3.11 it takes a lock on every first access.
    _support: Support | None = field(default=None, init=False, repr=False, compare=False)
    _weights_bytes: float | None = field(default=None, init=False, repr=False, compare=False)
    _consts: StepConstants | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def support(self) -> Support:
        if self.support_info is not None:
            return self.support_info
        s = self._support
        if s is None:
            engine = None if self.engine.is_ideal else self.engine.name
            s = support(self.weight_format, self.accelerator, engine)
            object.__setattr__(self, "_support", s)
        return s

    @property
    def weights_bytes(self) -> float:
        """Stored weight bytes of one copy of the model."""
        w = self._weights_bytes
        if w is None:
            from vazao.physics.memory import weights_bytes

            w = self.weights_bytes_override or weights_bytes(self.model, self.weight_format)
            object.__setattr__(self, "_weights_bytes", w)
        return w

    @property
    def consts(self) -> StepConstants:
        """Per-deployment constants of the cost model, computed once (physics/step.py). On the hot
        path of every simulated step, hence no import unless it is missing."""
        c = self._consts
        if c is None:
            from vazao.physics.step import StepConstants

            c = StepConstants.of(self)
            object.__setattr__(self, "_consts", c)
        return c

    @property
    def lifecycle(self) -> Lifecycle:
        """The engine's software lifecycle on this accelerator (catalog/engine_support.py): the one note fit,
        estimate, formats and plan print."""
        from vazao.catalog.engine_support import lifecycle

        return lifecycle(self.engine.name, self.accelerator)

    def to_json(self) -> dict[str, Any]:
        """What the deployment is, as `vazao fit/estimate --json` name it (ids and names, no objects)."""
        return {"model": self.model.name, "gpu": self.accelerator.id, "count": self.count, "tp": self.tp,
                "pp": self.pp, "format": self.weight_format.name, "kv_format": self.kv_format.name,
                "engine": self.engine.name, **({"attention_dp": True} if self.attention_dp else {}),
                **({"expert_parallel": self.expert_parallel} if self.expert_parallel > 1 else {})}

    def idealized(self) -> Deployment:
        """The same deployment at the physical limit (EngineProfile.idealized: efficiencies 1, no overheads):
        what no engine beats, and so where every band's optimistic edge stops (bands.within_physics)."""
        return replace(self, engine=self.engine.idealized())

    def label(self) -> str:
        par = f" tp{self.tp}" if self.tp > 1 else ""
        par += f" pp{self.pp}" if self.pp > 1 else ""
        par += f" ep{self.expert_parallel}" if self.expert_parallel > 1 else ""
        par += " attention-dp" if self.attention_dp and self.tp > 1 else ""
        return (f"{self.model.name} {self.weight_format.name} on {self.count}× {self.accelerator.id}"
                f"{par} ({self.engine.name})")


def format_support(fmt: Format, acc: Accelerator, engine: EngineProfile | None = None) -> Support:
    """What `fmt` is on `acc` under `engine`: the silicon's and the engine's kernels (catalog.formats.support),
    and unsupported for every format where the engine does not run on the accelerator at all, with the
    reason make_deployment refuses it: one answer in `formats`, `estimate` and `plan`."""
    refused = engine.refusal_on(acc) if engine is not None else None
    if refused:
        return Support(fmt.name, "unsupported", fmt.compute_dtype, refused)
    return support(fmt, acc, engine.name if engine is not None else None)


def default_format(acc: Accelerator) -> str:
    """bf16 where the silicon runs it, else fp16 (Volta/Turing, Pascal, older engines)."""
    return "bf16" if acc.native("bf16") else "fp16"


def default_engine(acc: Accelerator, origin: str = "catalog") -> str:
    """The GPU's natural engine: llama.cpp for GGUF files and for hardware vLLM does not run on
    (Apple, CPUs, and NVIDIA cards no vLLM release ran on: cc below 7.0, catalog/engine_support.py); vLLM
    otherwise."""
    if origin.startswith("gguf") or acc.vendor not in ("nvidia", "amd"):
        return "llama.cpp"
    from vazao.catalog.engine_support import lifecycle

    return "llama.cpp" if lifecycle("vllm", acc).refuses else "vllm"


def _count(value: object, what: str, maximum: int) -> int:
    from vazao.inputs import number

    return int(number(value, what, minimum=1, maximum=maximum, integer=True))


def make_deployment(
    model: str | ModelArch,
    gpu: str | Accelerator,
    fmt: str | Format | None = None,
    kv: str | KVFormat | None = None,
    count: int = 1,
    tp: int | None = None,
    pp: int = 1,
    engine: str | EngineProfile | None = None,
    ideal: bool = False,
    strict: bool = True,
    profile: str | None = None,
    weights_bytes_override: float | None = None,
    attention_dp: bool = False,
    expert_parallel: int = 1,
) -> Deployment:
    """The one way to build a Deployment, from names or objects; every command and library path
    calls it, so the same arguments give the same deployment everywhere.

    model: a ModelArch, or a catalog name, a config.json (or its folder) or a .gguf path; a file brings
    its own format (GGUF, a quantization_config) and, in that format, its exact weight bytes.
    fmt: None means the model file's format, else the GPU's natural 16-bit format (bf16, or fp16
    before Ampere). kv: None means the engine's own KV dtype for that format (TensorRT-LLM: FP8 for FP8).
    engine: a profile name or an EngineProfile; None means the GPU's natural engine (default_engine).
    profile: a calibrated profile file (vazao calibrate -o) to look the engine name up in.
    tp defaults to count / pp. Counts are checked (whole, positive, within vazao.limits) before
    anything is loaded. strict: refuse formats the engine cannot run (status 'unsupported') with the
    engine's reason. attention_dp: the tp GPUs split only the routed experts and each runs the rest for its
    own requests (Deployment.attention_dp). expert_parallel: the routed experts split that many ways whole."""
    count = _count(count, "count (accelerators)", limits.MAX_GPUS)
    if tp is not None:
        tp = _count(tp, "tp", limits.MAX_PARALLEL)
    pp = _count(pp, "pp", limits.MAX_PARALLEL)
    file_format, exact, origin = None, None, "catalog"
    if isinstance(model, str):
        from vazao.catalog.models import load_model

        loaded = load_model(model)
        model, file_format, origin = loaded.arch, loaded.weight_format, loaded.origin
        exact = loaded.weights_bytes
    acc = gpu if isinstance(gpu, Accelerator) else resolve_accelerator(gpu)
    if fmt is None:
        fmt = file_format or default_format(acc)
    f = fmt if isinstance(fmt, Format) else get_format(fmt)
    if weights_bytes_override is None and exact and f.name == file_format:
        weights_bytes_override = exact  # the file's own bytes count only in the file's own format
    if engine is None:
        engine = default_engine(acc, origin)
    if isinstance(engine, EngineProfile):
        eng = engine
    else:
        from vazao.physics.profiles import load_profiles

        eng = get_engine(engine, load_profiles(profile) if profile else None)
    k = kv if isinstance(kv, KVFormat) else get_kv_format(kv if kv is not None else eng.kv_format_for(f.name))
    # the generation's overrides first: they are losses, which the ideal then takes away
    eng = eng.on_generation(acc.generation)
    if ideal or eng.is_ideal:  # the ideal profile too: every loss off, whatever the data file leaves at its default
        eng = eng.idealized()
    if tp is None:
        tp = max(1, count // pp)
    refused = eng.refusal_on(acc)
    if refused:
        raise VazaoError(refused)
    dep = Deployment(model=model, weight_format=f, kv_format=k, accelerator=acc, engine=eng,
                     count=count, tp=tp, pp=pp, weights_bytes_override=weights_bytes_override,
                     attention_dp=bool(attention_dp),
                     expert_parallel=_count(expert_parallel, "expert parallelism", limits.MAX_PARALLEL))
    if strict and dep.support.status == "unsupported":
        raise VazaoError(f"{f.name} on {acc.name}: {dep.support.reason}")
    return dep


# The name the library's examples used before make_deployment became the one constructor; the same
# function, kept so scripts written against it keep working.
deployment_for = make_deployment
