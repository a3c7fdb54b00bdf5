"""From what a user types (a model name, a config.json, a GGUF file; a GPU label) to a Deployment."""

from __future__ import annotations

from vazao import limits
from vazao.catalog.formats import get_format
from vazao.catalog.local import resolve_accelerator
from vazao.catalog.models import load_model
from vazao.inputs import number
from vazao.physics.deployment import Deployment, make_deployment
from vazao.physics.profiles import EngineProfile, get_engine


def default_format(acc) -> str:
    """bf16 where the silicon runs it, else fp16 (Volta/Turing, Pascal, older engines)."""
    return "bf16" if acc.native("bf16") else "fp16"


def default_engine(acc, origin: str = "catalog") -> str:
    """llama.cpp for GGUF files and for hardware vLLM does not run on (Apple, CPUs); vLLM otherwise."""
    if origin.startswith("gguf") or acc.vendor not in ("nvidia", "amd"):
        return "llama.cpp"
    return "vllm"


def load_profiles(path: str):
    from vazao.calibrate import load_profiles as load

    return load(path)


def deployment_for(
    model: str,
    gpu: str,
    fmt: str | None = None,
    kv: str | None = None,
    count: int = 1,
    tp: int | None = None,
    pp: int = 1,
    engine: str | EngineProfile | None = None,
    ideal: bool = False,
    strict: bool = True,
    profile: str | None = None,
) -> Deployment:
    """The deployment a CLI command describes. A GGUF file brings its own format and exact weight
    bytes; a config.json with a quantization_config brings its format. `engine` is a profile name or
    an EngineProfile (a calibrated or hand-made one). Counts are checked (whole, positive, within
    vazao.limits) before anything is loaded."""
    count = int(number(count, "count (accelerators)", minimum=1, maximum=limits.MAX_GPUS, integer=True))
    if tp is not None:
        tp = int(number(tp, "tp", minimum=1, maximum=limits.MAX_PARALLEL, integer=True))
    pp = int(number(pp, "pp", minimum=1, maximum=limits.MAX_PARALLEL, integer=True))
    loaded = load_model(model)
    acc = resolve_accelerator(gpu)
    chosen = fmt if fmt is not None else (loaded.weight_format or default_format(acc))
    exact = loaded.weights_bytes if (loaded.weights_bytes and (fmt is None or fmt == loaded.weight_format)) else None
    if engine is None:
        engine = default_engine(acc, loaded.origin)
    eng = engine if isinstance(engine, EngineProfile) else get_engine(
        engine, load_profiles(profile) if profile else None)
    if kv is None:  # the engine's own KV dtype for this checkpoint format (TensorRT-LLM: FP8 for FP8)
        kv = eng.kv_format_for(get_format(chosen).name)
    return make_deployment(loaded.arch, acc, chosen, kv, count=count, tp=tp, pp=pp, engine=eng,
                           ideal=ideal, weights_bytes_override=exact, strict=strict)
