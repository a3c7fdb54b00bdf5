"""Model architectures: the catalog (data/models.yaml), Hugging Face config.json files, GGUF files.

`load_model(spec)` is the one entry point a command needs: a catalog name, a config.json (or a
folder holding one) or a .gguf file. Nothing here reaches the network or runs remote code.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from vazao import inputs, limits
from vazao.catalog._load import check_label, load_yaml, norm
from vazao.catalog.arch import ModelArch
from vazao.errors import NotFoundError, VazaoError

if TYPE_CHECKING:  # built on first use of a config.json (catalog/hf_schema.py)
    from vazao.catalog.hf_schema import HFConfig


_ARCH_FIELDS = frozenset(f.name for f in fields(ModelArch))
_ENTRY_EXTRA = frozenset({"aliases", "declared_params"})


# ---- catalog ---------------------------------------------------------------------------------
def _entry(raw: dict) -> ModelArch:
    name = raw.get("name", "?")
    unknown = set(raw) - _ARCH_FIELDS - _ENTRY_EXTRA
    if unknown:
        raise VazaoError(f"models.yaml {name}: unknown keys {sorted(unknown)}")
    values = dict(raw)
    values["as_of"] = str(values.get("as_of", ""))
    values["aliases"] = tuple(values.get("aliases", ()))
    if values.get("declared_params") is not None:
        values["declared_params"] = float(values["declared_params"])
    try:
        return ModelArch(**values)
    except (TypeError, ValueError) as exc:
        raise VazaoError(f"models.yaml {name}: {exc}") from exc


@cache
def models() -> Mapping[str, ModelArch]:
    out: dict[str, ModelArch] = {}
    for raw in load_yaml("models.yaml")["models"]:
        arch = _entry(raw)
        if arch.name in out:
            raise VazaoError(f"duplicate model {arch.name}")
        out[arch.name] = arch
    return MappingProxyType(out)


def _compact(key: str) -> str:
    # "llama3.1-8b" and "llama-3.1-8b" differ only by hyphens; dots stay, so 3.1-8b ≠ 3-18b.
    return key.replace("-", "")


@cache
def _index() -> tuple[Mapping[str, str], Mapping[str, str]]:
    exact: dict[str, str] = {}
    loose: dict[str, str] = {}
    for arch in models().values():
        for label in (arch.name, *arch.aliases):
            for key in {norm(label), norm(_strip_org(label))}:
                if exact.setdefault(key, arch.name) != arch.name:
                    raise VazaoError(f"models.yaml: label {label!r} names both {exact[key]} and {arch.name}")
                if loose.setdefault(_compact(key), arch.name) != arch.name:
                    raise VazaoError(f"models.yaml: {label!r} is ambiguous with {loose[_compact(key)]}")
    return MappingProxyType(exact), MappingProxyType(loose)


def _strip_org(name: str) -> str:
    return name.strip().rstrip("/").rsplit("/", 1)[-1]


# Release tags that name a fine-tune or a packaging of the same architecture. Whole tags only,
# tried longest first, and only after the name as given found nothing. A dated re-release (-2507,
# -0528, -20240307: four, six or eight digits) is the same architecture too.
_TAGS = ("instruct-2507", "thinking-2507", "instruct", "chat", "hf", "it", "base", "v0.1")
_DATE = r"\d{8}|\d{6}|\d{4}"
_TAG_RE = re.compile(r"-(?:" + "|".join(re.escape(t) for t in _TAGS) + "|" + _DATE + r")(?=-|$)")


def _candidates(name: str) -> list[str]:
    key = norm(_strip_org(name))
    keys = [norm(name), key]
    if key.startswith("meta-llama"):  # Meta-Llama-3.1-8B: the org repeated in the file name
        keys.append(key[len("meta-"):])
    for k in list(keys[1:]):
        stripped = k
        while True:
            shorter = _TAG_RE.sub("", stripped, count=1)
            if shorter == stripped:
                break
            stripped = shorter
            keys.append(stripped)
    return keys


def get_model(name: str) -> ModelArch:
    """Resolve a name tolerantly: 'meta-llama/Llama-3.1-70B-Instruct', 'Meta-Llama-3.1-8B', 'llama3.1-8b'."""
    exact, loose = _index()
    keys = _candidates(check_label("model", name))
    for key in keys:
        if key in exact:
            return models()[exact[key]]
    for key in keys:
        if _compact(key) in loose:
            return models()[loose[_compact(key)]]
    raise NotFoundError("model", name, models().keys())


# ---- Hugging Face config.json -----------------------------------------------------------------
# Keys some config.json files leave out because transformers' config class supplies them
# (Gemma 3 4B+ text_config lists only what differs from Gemma3TextConfig).
_GEMMA3_TEXT = MappingProxyType({
    "vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "max_position_embeddings": 131072, "sliding_window": 4096, "sliding_window_pattern": 6,
})
# "gemma3" too: a text_config without its own model_type inherits the wrapper's
_TYPE_DEFAULTS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "gemma3_text": _GEMMA3_TEXT, "gemma3": _GEMMA3_TEXT,
})
_NON_GATED = frozenset({
    "gpt2", "gpt_neox", "gptj", "phi", "opt", "falcon", "gpt_bigcode", "starcoder2", "bloom",
})
_QKV_BIAS = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})
_TIED_BY_DEFAULT = ("gemma",)  # gemma, gemma2, gemma3, gemma3_text
_QUANT_FORMATS = MappingProxyType({"gptq": "int4-gptq", "awq": "int4-awq", "fp8": "fp8", "mxfp4": "mxfp4"})


def _language_model(config: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The dict that describes the language model, and where it was found (for messages)."""
    text = config.get("text_config")
    if isinstance(text, Mapping):
        # Multimodal wrappers (Gemma 3, Llama 4, Qwen-VL, Mistral 3) keep the LM in text_config;
        # a few put shared keys such as quantization_config or _name_or_path at the top level.
        merged = {k: v for k, v in config.items() if k in ("_name_or_path", "quantization_config")}
        merged.update(text)
        if "model_type" not in text and "model_type" in config:
            merged["model_type"] = config["model_type"]
        return merged, "config.json text_config"
    return dict(config), "config.json"


def _validate(config: Mapping[str, Any], origin: str = "config.json") -> tuple[HFConfig, str]:
    if not isinstance(config, Mapping):
        raise VazaoError(f"{origin}: expected a JSON object, got {type(config).__name__}")
    lm, where = _language_model(config)
    where = where.replace("config.json", origin, 1)
    defaults = _TYPE_DEFAULTS.get(str(lm.get("model_type", "")), {})
    lm = {**defaults, **lm}
    from vazao.catalog.hf_schema import validate

    return validate(lm, where), where


def _sliding(c: HFConfig, layers: int) -> tuple[int, int]:
    """(window, layers that use it) as the config describes them."""
    window = c.sliding_window or 0
    if window <= 0 or c.use_sliding_window is False or window >= c.max_position_embeddings:
        return 0, 0  # Qwen2 states a window it does not use; Phi-3 128k's window exceeds its context
    if c.layer_types:
        n = sum(1 for t in c.layer_types if t == "sliding_attention")
    elif c.model_type == "gemma2" or c.model_type == "gpt_oss":
        n = (layers + 1) // 2  # even-numbered layers are local
    elif c.sliding_window_pattern or c.sliding_window_pattern_private or c.model_type.startswith("gemma3"):
        pattern = c.sliding_window_pattern or c.sliding_window_pattern_private or 6
        n = layers - layers // pattern  # every pattern-th layer is global
    elif c.use_sliding_window and c.max_window_layers is not None:
        n = max(0, layers - c.max_window_layers)  # Qwen2: layers from max_window_layers on
    else:
        n = layers  # Mistral v0.1, Phi-3 4k: one window for every layer
    return (window, n) if n else (0, 0)


def from_hf_config(config: Mapping[str, Any], name: str = "custom", origin: str = "config.json") -> ModelArch:
    """Map a Hugging Face config.json (already parsed) to a ModelArch; `origin` names it in errors."""
    c, where = _validate(config, origin)
    layers = c.num_hidden_layers
    is_mla = bool(c.kv_lora_rank)
    if c.head_dim:
        head_dim = c.head_dim
    elif is_mla:
        head_dim = (c.qk_nope_head_dim or 0) + (c.qk_rope_head_dim or 0)  # the q/k head
    else:
        head_dim = c.hidden_size // c.num_attention_heads
    experts = c.num_local_experts or c.n_routed_experts or c.num_experts or 0
    moe_inter = c.moe_intermediate_size or (c.intermediate_size if experts else 0)
    shared = c.n_shared_experts or 0
    if experts and not shared and c.shared_expert_intermediate_size and moe_inter:
        # ModelArch counts shared experts in units of a routed expert's width
        shared = round(c.shared_expert_intermediate_size / moe_inter)
    tied = c.tie_word_embeddings
    if tied is None:
        # LlamaConfig, MistralConfig, Qwen2Config… default to untied; Gemma's to tied. Untied is
        # the safe guess elsewhere: it can only overstate memory.
        tied = c.model_type.startswith(_TIED_BY_DEFAULT)
    window, window_layers = _sliding(c, layers)
    try:
        return ModelArch(
            name=name,
            num_layers=layers,
            hidden_size=c.hidden_size,
            num_heads=c.num_attention_heads,
            num_kv_heads=c.num_key_value_heads or c.num_attention_heads,
            head_dim=head_dim,
            intermediate_size=c.intermediate_size,
            vocab_size=c.vocab_size,
            max_context=c.max_position_embeddings,
            tie_word_embeddings=tied,
            gated_mlp=c.model_type not in _NON_GATED,
            qkv_bias=bool(c.attention_bias) if c.attention_bias is not None else c.model_type in _QKV_BIAS,
            num_experts=experts,
            experts_per_token=(c.num_experts_per_tok or c.experts_per_token or 0) if experts else 0,
            num_shared_experts=shared if experts else 0,
            moe_intermediate_size=moe_inter if experts else 0,
            first_dense_layers=(c.first_k_dense_replace or 0) if experts else 0,
            kv_lora_rank=c.kv_lora_rank or 0,
            q_lora_rank=(c.q_lora_rank or 0) if is_mla else 0,
            qk_rope_head_dim=(c.qk_rope_head_dim or 0) if is_mla else 0,
            qk_nope_head_dim=(c.qk_nope_head_dim or 0) if is_mla else 0,
            v_head_dim=(c.v_head_dim or 0) if is_mla else 0,
            sliding_window=window,
            sliding_window_layers=window_layers,
            family=c.model_type,
            source=f"{where} ({c.name_or_path})" if c.name_or_path else where,
        )
    except ValueError as exc:
        raise VazaoError(f"{where}: {exc}") from None


def hf_weight_format(config: Mapping[str, Any]) -> str | None:
    """The vazao format of a pre-quantized checkpoint, from its quantization_config."""
    if not isinstance(config, Mapping):
        return None
    q = config.get("quantization_config")
    if not isinstance(q, Mapping) and isinstance(config.get("text_config"), Mapping):
        q = config["text_config"].get("quantization_config")
    if not isinstance(q, Mapping):
        return None
    method = str(q.get("quant_method", "")).lower()
    if method in ("gptq", "awq") and q.get("bits", 4) != 4:
        return None  # 8-bit and 3-bit GPTQ/AWQ have no vazao format of their own
    return _QUANT_FORMATS.get(method)


def _read_json(path: Path) -> Any:
    return inputs.read_json(inputs.input_stream(path, "config.json"), "config.json", max_bytes=limits.MAX_CONFIG_BYTES)


_SNAPSHOT = re.compile(r"[0-9a-f]{40}")


def _name_for(path: Path, config: Any) -> str:
    if isinstance(config, Mapping) and str(config.get("_name_or_path") or "").strip():
        return _strip_org(str(config["_name_or_path"]))[:limits.MAX_NAME]
    folder = path.parent
    if _SNAPSHOT.fullmatch(folder.name) and folder.parent.name == "snapshots":
        # the Hugging Face cache: models--org--name/snapshots/<commit>/config.json
        return folder.parent.parent.name.split("--")[-1]
    return folder.name or "custom"


def _config_path(path: Path) -> Path:
    return path / "config.json" if _kind(path) == "folder" else path


def read_hf_config(path: str | Path) -> ModelArch:
    """Read a config.json (or a folder holding one); the name comes from _name_or_path or the folder."""
    p = _config_path(Path(path))
    config = _read_json(p)
    return from_hf_config(config, name=_name_for(p, config), origin=f"config.json {inputs._show(p)}")


# ---- one entry point ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LoadedModel:
    arch: ModelArch
    weight_format: str | None  # a vazao format name when the files fix it (GGUF, pre-quantized)
    weights_bytes: float | None  # bytes of the weights on disk, when known
    origin: str


def _safetensors_bytes(folder: Path) -> float | None:
    """Tensor bytes of a local checkpoint: the index's total_size, else the shard sizes."""
    index = folder / "model.safetensors.index.json"
    if _kind(index) == "file":
        what = "safetensors index"
        data = inputs.read_json(inputs.input_stream(index, what), what, max_bytes=limits.MAX_CONFIG_BYTES)
        meta = data.get("metadata") if isinstance(data, Mapping) else None
        total = meta.get("total_size") if isinstance(meta, Mapping) else None
        if total is not None:
            return float(inputs.number(total, f"{what} {inputs._show(index)}: metadata.total_size", minimum=1,
                                       maximum=limits.MAX_CHECKPOINT_BYTES, integer=True))
    try:
        shards = [s for s in folder.glob("*.safetensors") if s.is_file()]
        return float(sum(s.stat().st_size for s in shards)) if shards else None
    except OSError:
        return None  # an unreadable shard only costs the exact size; the config still describes the model


def _kind(path: Path) -> str | None:
    """'file', 'folder', 'special' (a device, a pipe) or None when nothing can be found there."""
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):  # absent, a name too long, a NUL byte
        return None
    if stat.S_ISDIR(mode):
        return "folder"
    return "file" if stat.S_ISREG(mode) else "special"


def _load_config(p: Path) -> LoadedModel:
    config = _read_json(p)
    arch = from_hf_config(config, name=_name_for(p, config), origin=f"config.json {inputs._show(p)}")
    return LoadedModel(arch, hf_weight_format(config), _safetensors_bytes(p.parent), f"config.json {p}")


def _load_gguf(path: Path) -> LoadedModel:
    from vazao.catalog.gguf import gguf_to_arch, read_gguf

    info = read_gguf(path)
    return LoadedModel(gguf_to_arch(info, path), info.weight_format, info.weights_bytes, f"gguf {path}")


def _sniff_gguf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"GGUF"
    except OSError:
        return False


def load_model(spec: str) -> LoadedModel:
    """A catalog name, a config.json path (or its folder), or a .gguf path. A path that exists is
    read as a file whatever its name (a GGUF by its magic bytes, else a config.json); a folder must
    hold a config.json; anything else is looked up in the catalog."""
    if not isinstance(spec, str) or not spec.strip():
        raise VazaoError("model: give a catalog name, a config.json or a .gguf file")
    if len(spec) > limits.MAX_PATH:
        raise VazaoError(f"model {spec[:40]!r}… is {len(spec):,} characters: neither a catalog name nor a path")
    path = Path(spec).expanduser()
    kind = _kind(path)
    low = spec.lower()
    if low.endswith(".gguf"):
        return _load_gguf(path)
    if low.endswith(".json"):
        return _load_config(path)
    if kind == "folder":
        if _kind(path / "config.json") is not None:
            return _load_config(path / "config.json")
        try:
            return LoadedModel(get_model(spec), None, None, "catalog")
        except NotFoundError:
            raise VazaoError(f"model {inputs._show(path)} is a folder with no config.json in it") from None
    if kind == "special":
        inputs.input_file(path, "model file")  # raises: not a regular file
    if kind == "file":
        return _load_gguf(path) if _sniff_gguf(path) else _load_config(path)
    if len(spec) > limits.MAX_NAME:
        raise VazaoError(f"unknown model {spec[:40]!r}… ({len(spec):,} characters): no catalog name is that "
                         "long, and no file has that name")
    return LoadedModel(get_model(spec), None, None, "catalog")
