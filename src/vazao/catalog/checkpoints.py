"""Published checkpoints (data/checkpoints.yaml): which Hugging Face repository a launch command names.

A plan picks a model and a weight format; the command that serves it must name weights in that format,
the instruction-tuned release people serve, not the base model the architecture came from. Nothing here
reaches the network: the repositories are catalog data, each with the model card it was checked on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

from vazao.catalog._load import check_label, load_yaml, norm
from vazao.catalog.formats import formats, get_format, kv_formats
from vazao.catalog.models import get_model, models
from vazao.errors import NotFoundError, VazaoError

# owner/name as the Hub spells it: no scheme, no third segment, no spaces
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_KEYS = frozenset({"repo", "model", "format", "instruct", "engines", "file", "kv_format", "variant", "remote_code",
                   "weight_block", "source", "as_of"})
# The engines that read a Hugging Face safetensors folder; llama.cpp reads GGUF files only, so a
# checkpoint with no `engines` is offered to these and never to llama.cpp.
SAFETENSORS_ENGINES = ("vllm", "sglang", "trtllm")
# Both are 16-bit checkpoints an engine casts on load (--dtype half / bfloat16): a plan in one is served
# from the other when only that one is published.
_SIXTEEN = {"fp16": "bf16", "bf16": "fp16"}


@dataclass(frozen=True)
class Checkpoint:
    repo: str
    model: str  # catalog name
    fmt: str  # vazao weight format
    instruct: bool
    engines: tuple[str, ...]  # () = any engine that loads safetensors
    file: str | None  # GGUF file of that quant
    kv_format: str | None  # KV-cache dtype the checkpoint fixes, else the engine's default
    source: str
    as_of: str
    variant: str | None = None  # a fine-tune on the model's architecture, served only when asked for by name
    # the repository ships its own tokenizer or model code (config.json auto_map): an engine loads it only
    # when told to trust it (--trust-remote-code), and refuses to start otherwise
    remote_code: bool = False
    # the block of its block-wise FP8 scales (weight_block_size): a tensor-parallel shard of a quantized weight
    # must be a whole number of blocks, or the engines refuse to load it (shard_refusal)
    weight_block: int | None = None

    def serves(self, engine: str | None) -> bool:
        """Whether `engine` loads this checkpoint (None: any engine)."""
        if engine is None:
            return True
        return engine in (self.engines or SAFETENSORS_ENGINES)


def _entry(raw: object, index: int, engines: frozenset[str]) -> Checkpoint:
    if not isinstance(raw, dict):
        raise VazaoError(f"checkpoints.yaml entry {index}: not a mapping")
    label = f"checkpoints.yaml {raw.get('repo', f'entry {index}')!s}"
    unknown = set(raw) - _KEYS
    if unknown:
        raise VazaoError(f"{label}: unknown keys {sorted(unknown)}")
    for key in ("repo", "model", "format", "source", "as_of"):
        if not raw.get(key):
            raise VazaoError(f"{label}: {key} is missing")
    repo, model, fmt = str(raw["repo"]), str(raw["model"]), str(raw["format"])
    if not _REPO.match(repo):
        raise VazaoError(f"{label}: repo must be a Hugging Face id owner/name")
    if model not in models():
        raise VazaoError(f"{label}: model {model!r} is not in models.yaml")
    if fmt not in formats():
        raise VazaoError(f"{label}: format {fmt!r} is not in formats.yaml")
    if not isinstance(raw.get("instruct"), bool):
        raise VazaoError(f"{label}: instruct must be true or false")
    listed = raw.get("engines") or []
    if not isinstance(listed, list) or not all(isinstance(e, str) for e in listed):
        raise VazaoError(f"{label}: engines must be a list of engine names")
    strange = [e for e in listed if e not in engines]
    if strange:
        raise VazaoError(f"{label}: engines {strange} are not in engines.yaml")
    gguf = formats()[fmt].family == "gguf"
    file = raw.get("file")
    if gguf and not file:
        raise VazaoError(f"{label}: a GGUF quant names its file")
    if file is not None and not str(file).endswith(".gguf"):
        raise VazaoError(f"{label}: file must be a .gguf file")
    if file is not None and "llama.cpp" not in listed:
        raise VazaoError(f"{label}: a GGUF file is meant for llama.cpp: list it under engines")
    kv = raw.get("kv_format")
    if kv is not None and kv not in kv_formats():
        raise VazaoError(f"{label}: kv_format {kv!r} is not in formats.yaml")
    source = str(raw["source"])
    if not source.startswith("https://"):
        raise VazaoError(f"{label}: source must be the model card URL")
    remote = raw.get("remote_code", False)
    if not isinstance(remote, bool):
        raise VazaoError(f"{label}: remote_code must be true or false")
    block = raw.get("weight_block")
    if block is not None and (isinstance(block, bool) or not isinstance(block, int) or not 1 <= block <= 4096):
        raise VazaoError(f"{label}: weight_block must be a whole number of weights from 1 to 4096")
    variant = raw.get("variant")
    if variant is not None and norm(str(variant)) in {norm(m) for m in models()}:
        raise VazaoError(f"{label}: variant {variant!r} would shadow a catalog model")
    return Checkpoint(
        repo=repo, model=model, fmt=fmt, instruct=raw["instruct"], engines=tuple(listed),
        file=str(file) if file is not None else None, kv_format=kv, source=source, as_of=str(raw["as_of"]),
        variant=norm(str(variant)) if variant is not None else None, remote_code=remote, weight_block=block,
    )


def parse(raw: object) -> tuple[Checkpoint, ...]:
    """Validate the parsed YAML document; a bad entry raises VazaoError naming it."""
    if not isinstance(raw, dict) or not isinstance(raw.get("checkpoints"), list):
        raise VazaoError("checkpoints.yaml: expected a `checkpoints:` list")
    engines = frozenset(load_yaml("engines.yaml")["engines"])
    out = tuple(_entry(item, i, engines) for i, item in enumerate(raw["checkpoints"]))
    seen: set[tuple] = set()
    for c in out:
        key = (c.repo, c.fmt, c.file)
        if key in seen:
            raise VazaoError(f"checkpoints.yaml {c.repo}: listed twice for {c.fmt}")
        seen.add(key)
    return out


@cache
def checkpoints() -> tuple[Checkpoint, ...]:
    return parse(load_yaml("checkpoints.yaml"))


@cache
def _by_model() -> Mapping[str, tuple[Checkpoint, ...]]:
    grouped: dict[str, list[Checkpoint]] = {}
    for c in checkpoints():
        grouped.setdefault(c.model, []).append(c)
    return MappingProxyType({m: tuple(cs) for m, cs in grouped.items()})


def _resolve(model: str) -> tuple[str, str | None] | None:
    """(catalog model, variant) a name asks for; None when neither the catalog nor a variant knows it."""
    key = norm(check_label("model", model).strip().rstrip("/").rsplit("/", 1)[-1])
    for c in checkpoints():
        if c.variant == key:
            return c.model, c.variant
    try:
        return get_model(model).name, None
    except NotFoundError:
        return None


def checkpoints_of(model: str) -> tuple[Checkpoint, ...]:
    """Every listed checkpoint of a catalog model (aliases resolve), variants included; () if none."""
    found = _resolve(model)
    return _by_model().get(found[0], ()) if found else ()


def checkpoint_for(model: str, fmt: str, engine: str | None = None) -> Checkpoint | None:
    """The instruct checkpoint of `model` in `fmt` that `engine` loads, the first listed winning.

    None when the catalog lists none (a model outside the catalog included): the caller says so rather
    than naming weights in another format. A DeepSeek-R1 or Qwen3 2507 checkpoint comes only when asked
    for by that name, never for the base architecture. A format name outside formats.yaml raises.
    """
    wanted = get_format(fmt).name
    found = _resolve(model)
    if found is None:
        return None
    name, variant = found
    pool = [c for c in _by_model().get(name, ()) if c.instruct and c.variant == variant and c.serves(engine)]
    for f in (wanted, _SIXTEEN.get(wanted)):
        for c in pool:
            if c.fmt == f:
                return c
    return None


def shard_refusal(model: str, tp: int, block: int | None) -> str | None:
    """Why an engine refuses to load a block-quantized checkpoint of `model` split `tp` ways, or None.

    Tensor parallelism splits the attention heads, the dense MLP's intermediate width and, with the experts
    sharded rather than placed whole (no expert parallelism), each expert's intermediate width; a shard that
    is not a whole number of scale blocks has no scales of its own (vLLM and SGLang: "output_size of gate's and
    up's weight = 192 is not divisible by weight quantization block_n = 128" for Qwen3-235B-A22B-FP8 at tp 8)."""
    if not block or tp <= 1:
        return None
    m = get_model(model)
    widths = [("attention heads", m.num_heads * m.head_dim)]
    if m.is_moe:
        widths.append(("an expert's intermediate width", m.moe_intermediate_size))
        if m.num_shared_experts:
            widths.append(("the shared expert's intermediate width", m.moe_intermediate_size * m.num_shared_experts))
    if not m.is_moe or m.first_dense_layers:
        widths.append(("the MLP's intermediate width", m.intermediate_size))
    for what, width in widths:
        if width % tp or (width // tp) % block:
            return (f"{what} {width:,} split {tp} ways is {width / tp:g} weights a GPU, not a whole number of its "
                    f"{block}-wide FP8 scale blocks: the engines refuse to load the checkpoint (fewer GPUs a "
                    f"replica, or expert parallelism, which vazao does not plan)")
    return None
