"""Engine profiles: efficiencies and overheads (calibratable) plus the scheduler settings of each engine.

A profile is read from engines.yaml (or a calibrated profile file, `--profile`: load_profiles): the efficiencies a
fit may change are CALIBRATED; everything else describes how the engine schedules and sizes
itself. A profile may carry `versions`: a list of {min_version, …overrides} for engine releases
whose measured speed steps away from the base (e.g. TensorRT-LLM 0.10 → 0.17)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from vazao import inputs, limits
from vazao.catalog._load import load_yaml, norm
from vazao.errors import NotFoundError, VazaoError

if TYPE_CHECKING:
    from vazao.catalog.hardware import Accelerator

# name: (lowest, highest) value a fit or a profile file may give it
CALIBRATED: dict[str, tuple[float, float]] = {
    "compute_efficiency": (0.02, 1.0),
    "memory_efficiency": (0.05, 1.0),
    "attention_efficiency": (0.05, 1.0),  # of memory_efficiency, on KV-cache reads
    "narrow_compute_efficiency": (0.05, 1.0),  # of compute_efficiency, on 8- and 4-bit tensor cores
    "moe_efficiency": (0.02, 1.0),  # of compute_efficiency, on grouped expert GEMMs
    # of memory_efficiency, on routed experts' weights: a decode step's grouped expert GEMMs see a token or
    # two per expert, and stream their weights slower than one dense GEMM streams the same bytes
    "moe_memory_efficiency": (0.05, 1.0),
    "comm_efficiency": (0.02, 1.0),  # achieved share of the link bandwidth in all-reduce
    "compute_ramp_tokens": (0.0, 8192.0),  # tokens in a GEMM at which it reaches half its efficiency
    # columns of an expert's shard (its intermediate size over the TP ranks) at which a grouped expert GEMM
    # reaches half of moe_efficiency: tensor parallelism cuts every expert into narrower GEMMs (Qwen3-235B's
    # 1,536 columns are 192 at tp 8), with fewer tiles per expert and the same fixed cost per tile
    "moe_width_ramp_cols": (0.0, 8192.0),
    # the streaming rate an engine's kernels saturate at whatever the memory (Little's law: bytes in flight
    # over latency); combined harmonically with memory_efficiency × peak. 0: no ceiling
    "stream_ceiling_bytes_per_s": (0.0, 1e14),
    # the same for GEMMs: the FLOP/s an engine's kernels top out at on any GPU (tile shapes, no Hopper wgmma …)
    "compute_ceiling_flops": (0.0, 1e17),
    "attention_compute_efficiency": (0.02, 1.0),
    # share of the shorter of a step's compute and memory times hidden under the longer: 1 is the ideal
    # roofline max(compute, memory); below it, a step near the ridge pays part of both (kernels that
    # neither saturate the tensor cores nor stream at full rate while the other works)
    "roofline_overlap": (0.0, 1.0),
    # pipelined micro-batches: stages idle this share of a stage's time per extra stage (imbalance, hand-off
    # waits): a micro-batch step costs (1 + bubble × (pp − 1) / pp) of its work
    "pipeline_bubble": (0.0, 4.0),  # of compute_efficiency, on the attention score/value FLOPs
    # weight-only unpacking work, as a multiple of the format's dequant FLOPs per weight (0: the kernels fuse it
    # into integer dot products, as llama.cpp's CPU path does)
    "dequant_factor": (0.0, 8.0),
    "step_overhead_s": (0.0, 0.2),
    "per_sequence_overhead_s": (0.0, 0.01),
    "request_overhead_s": (0.0, 2.0),  # HTTP, tokenization, detokenization: added to every TTFT
    # an all-reduce's fixed cost on top of its hops (launch, flag barriers, the release's choice of kernel):
    # 100 us is ten times NCCL's own base latency for one node (src/graph/tuning.cc)
    "allreduce_latency_s": (0.0, 1e-4),
    # share of the shorter of a step's host work (scheduling, sampling, bookkeeping: the overheads above) and
    # device work hidden under the longer: an engine that schedules step n+1 while the GPU runs step n
    # (TensorRT-LLM's overlap scheduler, vLLM's async scheduling) pays max(host, device), not their sum
    "host_overlap": (0.0, 1.0),
    # host time per layer of a step that runs eagerly, not replayed from a CUDA graph: a step that carries
    # prompt tokens lasts at least (layers on the GPU) × this while the host issues its kernels one by one
    # (TensorRT-LLM's PyTorch executor captures decode-only steps in graphs and launches the rest from Python);
    # 10 ms a layer is far above any launch cost. Per dense layer; a MoE layer has its own (eager_moe_layer_s):
    # its router, top-k, token permutation, expert GEMMs and finalize are several launches more, and the serving
    # file's rows ask for different values (bench/eager_floor_scan.py, docs/accuracy.md)
    "eager_step_layer_s": (0.0, 0.01),
    "eager_moe_layer_s": (0.0, 0.01),
    # a MoE layer's fixed time in every step, charged with the step's overhead: its router, top-k, token
    # permutation, grouped expert GEMMs and finalize are a dozen short kernels, each with its own latency, that a
    # step's few tokens per expert do not hide (a CUDA graph removes the host's launches, not the kernels' own
    # time); a dense layer's few large GEMMs hide theirs under the weights' reads. 1 ms a layer is far above them
    "moe_layer_overhead_s": (0.0, 1e-3),
}
ADMISSIONS = ("optimistic", "guaranteed")
SIZINGS = ("fixed", "trtllm-bench")
MEMORY_BASES = ("total", "free")


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
    attention_efficiency: float = 1.0
    narrow_compute_efficiency: float = 1.0
    moe_efficiency: float = 1.0
    moe_memory_efficiency: float = 1.0
    comm_efficiency: float = 1.0
    compute_ramp_tokens: float = 0.0
    moe_width_ramp_cols: float = 0.0
    stream_ceiling_bytes_per_s: float = 0.0
    compute_ceiling_flops: float = 0.0
    attention_compute_efficiency: float = 1.0
    # Bytes of attention scores an engine's kernels write and read back per (query, key) pair per head per
    # layer: 0 where attention is one fused kernel (FlashAttention, FlashInfer, TensorRT-LLM's FMHA); an
    # unfused graph materializes the score matrix (llama.cpp without -fa: ggml's KQ product writes it in F32,
    # soft_max reads and rewrites it, the KQV product reads it: 4 × 4 bytes). Charged as attention traffic.
    attention_score_bytes: float = 0.0
    # Decode attention splits one sequence's KV cache over several thread blocks when its KV heads alone
    # cannot fill the GPU (split-KV, "flash decoding": FlashAttention's and FlashInfer's decode kernels,
    # TensorRT-LLM's multi-block mode, llama.cpp's parallel blocks, FlashMLA). False: one block per sequence
    # and KV head (PyTorch's SDPA, unfused matmuls), so a step's KV reads go at the share of the bandwidth its
    # sequences × KV heads cover of the accelerator's multiprocessors (physics/step.py kv_occupancy).
    split_kv: bool = True
    # A GEMM over more tokens than this unpacks a weight-only format into a 16-bit copy first, in a kernel of its
    # own, and multiplies the copy (llama.cpp's CUDA backend before MMQ became its default in mid-2024: batches
    # above MMQ_MAX_BATCH_SIZE = 32 went to cuBLAS through a dequantize-to-F16 pass). 0: the kernels unpack as
    # they go (MMQ, Marlin, Metal's mul_mm, the CPU's integer dot products).
    dequant_pass_tokens: int = 0
    # the hardware generations whose backend has that pass (llama.cpp's CUDA tensor-core path): on any other
    # (and on every one when the list is empty) the kernels unpack as they go
    dequant_pass_generations: tuple[str, ...] = ()
    roofline_overlap: float = 1.0
    pipeline_bubble: float = 0.0
    dequant_factor: float = 1.0
    fp16_accumulate: bool = False  # 16-bit GEMMs accumulate in FP16 (llama.cpp's cuBLAS path): 2× on GeForce
    request_overhead_s: float = 0.0
    host_overlap: float = 0.0
    eager_step_layer_s: float = 0.0  # CALIBRATED["eager_step_layer_s"]: a prompt step's floor per dense layer
    eager_moe_layer_s: float = 0.0  # CALIBRATED["eager_moe_layer_s"]: the same per MoE layer
    moe_layer_overhead_s: float = 0.0  # CALIBRATED["moe_layer_overhead_s"]: a MoE layer's fixed time per step
    # the first release whose executor runs prompt steps eagerly (TensorRT-LLM 1.0 made its PyTorch executor the
    # default; 0.x ran compiled TensorRT engines from C++): an older release has no such floor, whatever a fit
    # or the base says. Empty: every release.
    eager_since_version: tuple[int, ...] = ()
    # The widest tensor-parallel group the engine all-reduces with its own one-shot / two-shot peer-to-peer
    # kernels inside one NVLink domain (vLLM's and SGLang's custom all-reduce, TensorRT-LLM's ONESHOT/TWOSHOT):
    # a fixed two-barrier latency whatever the width, not NCCL's 2(n - 1) ring hops. 0: NCCL's ring alone.
    custom_allreduce_gpus: int = 0
    # Which of those kernels a message takes. One-shot, every GPU reads each peer's whole message ((n - 1) × its
    # bytes over its links); two-shot, a reduce-scatter and an all-gather, the ring's 2(n - 1)/n × its bytes. At
    # 2 GPUs the two are the same traffic. oneshot_allreduce_bytes: one-shot below this many bytes on 5-8 GPUs
    # and below twice it on 3-4 (vLLM's csrc/custom_all_reduce.cuh: 256 KiB on 8, 512 KiB on 4; TensorRT-LLM's
    # plugin before its PyTorch executor: 500 KB and 1 MB). oneshot_allreduce_tokens: one-shot for a step of at
    # most this many tokens whatever its bytes, else NCCL's ring (TensorRT-LLM's PyTorch executor: its AUTO
    # strategy takes MIN_LATENCY, a one-shot kernel, up to 128 tokens, and NCCL above, paying its ring's hops),
    # from eager_since_version on. 0: none.
    oneshot_allreduce_bytes: float = 0.0
    oneshot_allreduce_tokens: int = 0
    # gpu_memory_utilization is a share of the whole GPU (vLLM) or of what the weights leave (TensorRT-LLM)
    memory_basis: str = "total"
    # guaranteed: a request is admitted only when the KV of its whole prompt + output is free (TensorRT-LLM's
    # GUARANTEED_NO_EVICT); optimistic: when its prompt fits, preempting later if the cache runs out (vLLM)
    admission: str = "optimistic"
    # how the engine sizes max batch and token budget for an all-at-once benchmark (`max(offline)`)
    sizing: str = "fixed"
    pipeline_microbatches: bool = True  # pp stages each work on a different micro-batch (llama.cpp: no)
    # the most sequences a plan may set (max_num_seqs is the engine's default, not its ceiling); 0: the default
    max_num_seqs_limit: int = 0
    # a lone prompt runs in batches of prefill_batch_tokens cut into steps of prefill_ubatch_tokens (0: one
    # step); pipeline_ubatches: a batch's micro-batches flow through layer-split stages as a pipeline
    prefill_batch_tokens: int = 0
    prefill_ubatch_tokens: int = 0
    pipeline_ubatches: bool = False
    # a step with prompts to prefill runs them alone and the decoders wait (SGLang's scheduler: a new prefill
    # batch, when one can be formed, runs before the running decode batch; mixed chunks are off by default)
    prefill_priority: bool = False
    kv_dtype: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({"*": "fp16"}))
    versions: tuple[Mapping[str, Any], ...] = ()
    # per hardware generation: {generation: {calibrated parameter: value}} (e.g. llama.cpp on CPUs)
    generations: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: MappingProxyType({}))
    calibration: Mapping[str, Any] | None = None  # fit provenance and residual quantiles (vazao calibrate)
    physical_limit: bool = False  # set by idealized(): the bound no engine beats, which has no band

    def __post_init__(self) -> None:
        for f in ("compute_efficiency", "memory_efficiency", "gpu_memory_utilization"):
            v = getattr(self, f)
            if not 0 < v <= 1:
                raise VazaoError(f"engine {self.name}: {f} must be in (0, 1], got {v}")
        for f, (lo, hi) in CALIBRATED.items():
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
                raise VazaoError(f"engine {self.name}: {f} must be from {lo:g} to {hi:g}, got {v!r}")
        # a profile file's numbers the cost model compares or multiplies (whole: a count; else any number), bounded
        for f, whole, top in _BOUNDED:
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int if whole else (int, float)) or not 0 <= v <= top:
                kind = "a whole number from" if whole else "from"
                raise VazaoError(f"engine {self.name}: {f} must be {kind} 0 to {top if whole else f'{top:g}'}, "
                                 f"got {v!r}")
        for f in _FLAGS:  # a profile file's "no" would otherwise be a true flag
            if not isinstance(getattr(self, f), bool):
                raise VazaoError(f"engine {self.name}: {f} must be true or false, got {getattr(self, f)!r}")
        if self.scheduler not in ("static", "continuous"):
            raise VazaoError(f"engine {self.name}: scheduler must be static or continuous")
        if self.kv_layout not in ("paged", "reserved"):
            raise VazaoError(f"engine {self.name}: kv_layout must be paged or reserved")
        for f, allowed in (("admission", ADMISSIONS), ("sizing", SIZINGS), ("memory_basis", MEMORY_BASES)):
            if getattr(self, f) not in allowed:
                raise VazaoError(f"engine {self.name}: {f} must be one of {', '.join(allowed)}, "
                                 f"got {getattr(self, f)!r}")

    @property
    def seq_ceiling(self) -> int:
        """The most sequences per step a deployment of this engine may be configured for."""
        return self.max_num_seqs_limit or self.max_num_seqs

    @property
    def is_ideal(self) -> bool:
        return self.name == "ideal"

    @property
    def is_limit(self) -> bool:
        """The physical limit (the ideal profile, or any profile idealized): a bound, not a prediction."""
        return self.is_ideal or self.physical_limit

    def refusal_on(self, acc: Accelerator) -> str | None:
        """Why this engine does not run on `acc` at all (its vendor, or no release ever ran on the card), or
        None: the one rule that make_deployment, a simulated engine swap and `vazao formats --engine` apply."""
        if not self.is_ideal and acc.vendor not in self.vendors:
            return f"engine {self.name} does not run on {acc.vendor} hardware ({acc.name})"
        if not self.is_ideal:
            # no release of the engine ever ran on the card (catalog/engine_support.py's one answer)
            from vazao.catalog.engine_support import lifecycle

            lc = lifecycle(self.name, acc)
            if lc.refuses:
                return lc.note
        return None

    def kv_format_for(self, weight_format: str) -> str:
        """The KV-cache dtype this engine uses by default for a checkpoint in `weight_format`."""
        return self.kv_dtype.get(weight_format, self.kv_dtype.get("*", "fp16"))

    def at_version(self, version: tuple[int, ...] | None) -> EngineProfile:
        """The profile of one engine release: the base with every `versions` entry whose min_version
        the release reaches applied in order. Unknown version: the base (the newest documented)."""
        out = self
        if version is None:
            return out
        for entry in self.versions:
            if tuple(entry["min_version"]) <= tuple(version) and (
                    "max_version" not in entry or tuple(version) <= tuple(entry["max_version"])):
                out = replace(out, **{k: v for k, v in entry.items() if k not in ("min_version", "max_version")})
        if self.eager_since_version and tuple(version) < self.eager_since_version:
            # the release before the PyTorch executor: no eager prompt floor, and the plugin's all-reduce
            # choice by bytes, not the PyTorch flow's by tokens
            if out.eager_step_layer_s or out.eager_moe_layer_s:
                out = replace(out, eager_step_layer_s=0.0, eager_moe_layer_s=0.0)
            if out.oneshot_allreduce_tokens:
                out = replace(out, oneshot_allreduce_tokens=0)
        return out

    def key(self) -> tuple[tuple[str, Any], ...]:
        """A hashable identity of every setting that changes a prediction."""
        return tuple((f.name, getattr(self, f.name)) for f in fields(self)
                     if f.name not in ("kv_dtype", "versions", "calibration", "description", "source", "vendors",
                                       "generations"))

    def on_generation(self, generation: str) -> EngineProfile:
        """The profile on one hardware generation: its overrides, if the profile has any."""
        over: dict[str, Any] = dict(self.generations.get(generation) or {})
        if self.dequant_pass_tokens and generation not in self.dequant_pass_generations:
            over["dequant_pass_tokens"] = 0  # this generation's kernels unpack as they go
        return replace(self, **over) if over else self

    def overridden(self, **values: float) -> EngineProfile:
        """These values on every release: taken out of the `versions` entries too, so that a release's
        shipped values (applied by at_version) never silently replace a value being tried in a fit."""
        versions = tuple(MappingProxyType({k: v for k, v in e.items() if k not in values}) for e in self.versions)
        changes: dict[str, Any] = dict(values)
        return replace(self, versions=versions, **changes)

    def idealized(self) -> EngineProfile:
        """Same scheduler, physical-limit costs: efficiencies 1, no overheads (--ideal)."""
        return replace(
            self, compute_efficiency=1.0, memory_efficiency=1.0, step_overhead_s=0.0,
            per_sequence_overhead_s=0.0, allreduce_latency_s=0.0, gpu_memory_utilization=1.0,
            reserved_bytes=0.0, activation_workspace=False, attention_efficiency=1.0,
            narrow_compute_efficiency=1.0, moe_efficiency=1.0, moe_memory_efficiency=1.0, comm_efficiency=1.0,
            compute_ramp_tokens=0.0, moe_width_ramp_cols=0.0,
            stream_ceiling_bytes_per_s=0.0, compute_ceiling_flops=0.0, attention_compute_efficiency=1.0,
            attention_score_bytes=0.0, dequant_pass_tokens=0, pipeline_bubble=0.0,
            request_overhead_s=0.0, eager_step_layer_s=0.0, eager_moe_layer_s=0.0, moe_layer_overhead_s=0.0,
            memory_basis="total", split_kv=True,
            # compute and memory overlap whole (the roofline's max, not a sum); the format's unpacking work is
            # charged whole at the peak, as the step counts it in its FLOPs (no step beats its FLOPs at the peak:
            # tests/test_physics_properties.py), whatever an engine's kernels leave uncharged
            roofline_overlap=1.0, dequant_factor=1.0, host_overlap=0.0,
            # no generation's overrides either: they are measured losses (applied before this, see make_deployment)
            generations=MappingProxyType({}), versions=(),
            # the limit itself has no error band: the residuals are the losses' (bands.band reads None as none)
            calibration=None, physical_limit=True,
        )


# (field, whole number?, most): custom_allreduce_gpus against a tensor-parallel width (at most one NVL72 domain), the
# one-shot all-reduce thresholds against a message's bytes and a step's tokens, attention_score_bytes multiplied into
# every step's attention traffic, dequant_pass_tokens against every step's token count
_BOUNDED = (("custom_allreduce_gpus", True, limits.MAX_CUSTOM_ALLREDUCE_GPUS),
            ("oneshot_allreduce_bytes", False, limits.MAX_ONESHOT_ALLREDUCE_BYTES),
            ("oneshot_allreduce_tokens", True, limits.MAX_ONESHOT_ALLREDUCE_TOKENS),
            ("attention_score_bytes", False, limits.MAX_ATTENTION_SCORE_BYTES),
            ("dequant_pass_tokens", True, limits.MAX_DEQUANT_PASS_TOKENS))
_FIELDS = {f.name for f in fields(EngineProfile)}
_FLAGS = tuple(f.name for f in fields(EngineProfile) if f.type == "bool")  # the fields that take true or false
_VERSIONED = set(CALIBRATED) | {"max_num_seqs", "max_num_batched_tokens", "reserved_bytes", "gpu_memory_utilization",
                                 "dequant_pass_tokens"}


def _version(text: Any, where: str) -> tuple[int, ...]:
    if isinstance(text, tuple) and all(isinstance(x, int) for x in text):
        return text
    parts = str(text).strip().lstrip("v").split(".")
    if not all(p.isdigit() for p in parts) or len(parts) > 4:
        raise VazaoError(f"{where}: a version is numbers joined by dots, e.g. 0.17, got {str(text)[:30]!r}")
    return tuple(int(p) for p in parts)


def profile_from_dict(name: str, e: Mapping[str, Any], where: str = "engine profile") -> EngineProfile:
    """Build a profile from a mapping (engines.yaml entry or a calibrated profile file), naming the
    first unknown key or out-of-range value."""
    if not isinstance(e, Mapping):
        raise VazaoError(f"{where}: engine {name}: expected a mapping of settings")
    e = dict(e)
    for key in e:
        if key not in _FIELDS or key == "name":
            raise VazaoError(f"{where}: engine {name}: unknown key {str(key)[:40]!r}")
    e.pop("physical_limit", None)  # written back with a profile, but only idealized() makes a bound (no band)
    try:
        e["vendors"] = tuple(e["vendors"])
        e["as_of"] = str(e["as_of"])
        e["reserved_bytes"] = float(e["reserved_bytes"])
    except (KeyError, TypeError, ValueError) as exc:
        raise VazaoError(f"{where}: engine {name}: missing or bad vendors/as_of/reserved_bytes ({exc})") from None
    if "dequant_pass_generations" in e:
        gens_ = e["dequant_pass_generations"]
        if isinstance(gens_, str) or not isinstance(gens_, (list, tuple)) or not all(
                isinstance(g, str) and 0 < len(g) <= 40 for g in gens_) or len(gens_) > 64:
            raise VazaoError(f"{where}: engine {name}: dequant_pass_generations must be a list of hardware "
                             f"generation names, got {str(gens_)[:60]!r}")
        e["dequant_pass_generations"] = tuple(gens_)
        for g in gens_:
            _known_generation(g, f"{where}: engine {name}: dequant_pass_generations")
    if "eager_since_version" in e:
        e["eager_since_version"] = _version(e["eager_since_version"], f"{where}: engine {name}: eager_since_version")
    if "kv_dtype" in e:
        if not isinstance(e["kv_dtype"], Mapping):
            raise VazaoError(f"{where}: engine {name}: kv_dtype maps weight formats to KV formats")
        e["kv_dtype"] = MappingProxyType({str(k): str(v) for k, v in e["kv_dtype"].items()})
    versions = []
    for i, entry in enumerate(e.get("versions") or ()):
        if not isinstance(entry, Mapping) or "min_version" not in entry:
            raise VazaoError(f"{where}: engine {name}: versions[{i}] needs a min_version")
        out = {}
        for k, v in entry.items():
            if k in ("min_version", "max_version"):
                out[k] = _version(v, f"{where}: engine {name}: versions[{i}].{k}")
            elif k in _VERSIONED:
                out[k] = v
            else:
                raise VazaoError(f"{where}: engine {name}: versions[{i}]: unknown or fixed key {str(k)[:40]!r}")
        versions.append(MappingProxyType(out))
    e["versions"] = tuple(versions)
    gens = e.get("generations") or {}
    if not isinstance(gens, Mapping):
        raise VazaoError(f"{where}: engine {name}: generations maps a hardware generation to overrides")
    for g, over in gens.items():
        _known_generation(g, f"{where}: engine {name}: generations")
        if not isinstance(over, Mapping):
            raise VazaoError(f"{where}: engine {name}: generations.{g}: expected a mapping of overrides")
        for k in over:
            if k not in CALIBRATED:
                raise VazaoError(f"{where}: engine {name}: generations.{g}: unknown or fixed key {str(k)[:40]!r}")
    e["generations"] = MappingProxyType({str(g): MappingProxyType(dict(o)) for g, o in gens.items()})
    for k, v in e.items():
        if k in CALIBRATED and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise VazaoError(f"{where}: engine {name}: {k} must be a number, got {v!r}")
    try:
        prof = EngineProfile(name=name, **e)
    except TypeError as exc:
        raise VazaoError(f"{where}: engine {name}: {exc}") from None
    for g in prof.generations:
        prof.on_generation(g)  # raises on an out-of-range value
    for entry in prof.versions:  # every release's values are in range too
        try:
            prof.at_version(entry["min_version"])
        except VazaoError as exc:
            raise VazaoError(f"{where}: {exc} (versions from {'.'.join(map(str, entry['min_version']))})") from None
    return prof


def _known_generation(name: Any, where: str) -> None:
    """A profile names hardware generations the catalog has: a misspelt one would silently never match."""
    from vazao.catalog.hardware import generations

    known = generations()
    if not isinstance(name, str) or name not in known:
        raise VazaoError(f"{where}: unknown hardware generation {str(name)[:40]!r} (known: {', '.join(sorted(known))})")


@cache
def engines() -> Mapping[str, EngineProfile]:
    raw = load_yaml("engines.yaml")["engines"]
    fitted = load_yaml("calibration.yaml")["engines"]  # vazao calibrate's output, over the first guesses
    return MappingProxyType({name: profile_from_dict(name, {**e, **(fitted.get(name) or {})}, "engines.yaml")
                             for name, e in raw.items()})


def engine_key(name: str) -> str:
    key = norm(name).replace("llamacpp", "llama.cpp").replace("llama-cpp", "llama.cpp")
    return {"tensorrt-llm": "trtllm", "trt-llm": "trtllm", "hf": "naive", "transformers": "naive"}.get(key, key)


def get_engine(name: str, profiles: Mapping[str, EngineProfile] | None = None) -> EngineProfile:
    """A shipped profile by name, or one from `profiles` (a calibrated profile file) when it has it."""
    key = engine_key(name)
    if profiles and key in profiles:
        return profiles[key]
    table = engines()
    if key in table:
        return table[key]
    raise NotFoundError("engine", name, table.keys())


def load_profiles(path: str | Path) -> Mapping[str, EngineProfile]:
    """A profile file: {engines: {name: {settings}}}; a name the shipped catalog has may give only
    the keys it changes, the rest coming from engines.yaml."""
    data = inputs.read_yaml(path, "profile file")
    if not isinstance(data, Mapping) or not isinstance(data.get("engines"), Mapping):
        raise VazaoError(f"profile file {path}: expected a mapping with an `engines` mapping")
    shipped = engines()
    out = dict(shipped)
    for name, e in data["engines"].items():
        base = {}
        if name in shipped:
            base = {f.name: getattr(shipped[name], f.name) for f in fields(EngineProfile) if f.name != "name"}
            base["versions"] = [dict(v) for v in base["versions"]]
            base["generations"] = {g: dict(o) for g, o in base["generations"].items()}
            base["kv_dtype"] = dict(base["kv_dtype"])
        if not isinstance(e, Mapping):
            raise VazaoError(f"profile file {path}: engine {name}: expected a mapping of settings")
        out[str(name)] = profile_from_dict(str(name), {**base, **e}, f"profile file {path}")
    return out
