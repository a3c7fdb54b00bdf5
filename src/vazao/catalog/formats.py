"""Execution formats (weights, activations) and KV-cache formats, and where each runs natively.

A format's status on an accelerator, optionally for one engine:
- native: the matrix units run its compute dtype in silicon;
- emulated: it runs, but computes in 16 bits after unpacking (memory and bandwidth gain only);
- unsupported: the engine refuses it, with the engine's reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType

from vazao.catalog._load import check_label, load_yaml, norm
from vazao.catalog.hardware import Accelerator
from vazao.errors import NotFoundError, VazaoError

KINDS = ("baseline", "weight_only", "weight_and_activation")


@dataclass(frozen=True)
class EngineRule:
    """How one engine treats a format: whether it loads at all, from which compute capability."""

    loads: bool = True
    min_cc: str | None = None
    fallback: str | None = None  # status when the silicon lacks the dtype: emulated | unsupported
    reason: str = ""


@dataclass(frozen=True)
class Format:
    name: str
    kind: str
    weight_bits: float  # effective bits per weight, scales and zero points included
    embed_bits: float  # bits of the embedding table and lm_head
    compute_dtype: str  # dtype of the GEMM where the silicon runs it natively
    family: str
    description: str
    fallback: str  # status on silicon lacking compute_dtype when no engine rule says otherwise
    fallback_reason: str
    source: str
    as_of: str
    aliases: tuple[str, ...] = ()
    dequant_flops_per_weight: float = 0.0  # unpacking work per weight per token in weight-only kernels
    engines: Mapping[str, EngineRule] = field(default_factory=dict)

    @property
    def weight_only(self) -> bool:
        return self.kind == "weight_only"


@dataclass(frozen=True)
class KVFormat:
    name: str
    bits: float
    description: str
    source: str
    as_of: str
    aliases: tuple[str, ...] = ()

    @property
    def bytes_per_element(self) -> float:
        return self.bits / 8


@dataclass(frozen=True)
class Support:
    format: str
    status: str
    compute_dtype: str  # the dtype the GEMM actually runs in on this silicon
    reason: str


def _cc(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")) if text else ()


@cache
def formats() -> Mapping[str, Format]:
    raw = load_yaml("formats.yaml")
    out: dict[str, Format] = {}
    for f in raw["formats"]:
        if f["kind"] not in KINDS:
            raise VazaoError(f"format {f['name']}: kind must be one of {KINDS}")
        rules = {eng: EngineRule(**rule) for eng, rule in (f.get("engines") or {}).items()}
        out[f["name"]] = Format(
            name=f["name"],
            kind=f["kind"],
            weight_bits=float(f["weight_bits"]),
            embed_bits=float(f.get("embed_bits", f["weight_bits"])),
            compute_dtype=f["compute_dtype"],
            family=f["family"],
            description=f["description"],
            fallback=f.get("fallback", "emulated"),
            fallback_reason=f.get("fallback_reason", ""),
            source=f["source"],
            as_of=str(f["as_of"]),
            aliases=tuple(f.get("aliases", ())),
            dequant_flops_per_weight=float(f.get("dequant_flops_per_weight", 0.0)),
            engines=MappingProxyType(rules),
        )
    return MappingProxyType(out)


@cache
def kv_formats() -> Mapping[str, KVFormat]:
    raw = load_yaml("formats.yaml")
    return MappingProxyType({
        k["name"]: KVFormat(
            name=k["name"], bits=float(k["bits"]), description=k["description"],
            source=k["source"], as_of=str(k["as_of"]), aliases=tuple(k.get("aliases", ())),
        )
        for k in raw["kv_formats"]
    })


def _lookup(kind: str, table: Mapping, name: str):
    key = norm(check_label(kind, name))
    labels = {}
    for item in table.values():
        for label in (item.name, *item.aliases):
            labels[norm(label)] = item
    if key in labels:
        return labels[key]
    raise NotFoundError(kind, name, labels.keys())


def get_format(name: str) -> Format:
    return _lookup("format", formats(), name)


def get_kv_format(name: str) -> KVFormat:
    return _lookup("KV-cache format", kv_formats(), name)


def support(fmt: Format, acc: Accelerator, engine: str | None = None) -> Support:
    """Whether `fmt` runs natively, emulated or not at all on `acc` (under `engine` if given)."""
    rule = fmt.engines.get(engine) if engine else None
    if engine and fmt.engines and rule is None:
        rule = fmt.engines.get("*")
    if engine and rule is not None and not rule.loads:
        return Support(fmt.name, "unsupported", "-", rule.reason or f"{engine} cannot load {fmt.name}")
    if rule and rule.min_cc and acc.compute_capability and _cc(acc.compute_capability) < _cc(rule.min_cc):
        why = rule.reason or f"{engine} needs compute capability >= {rule.min_cc} for {fmt.name}"
        return Support(fmt.name, "unsupported", "-", why)
    if acc.native(fmt.compute_dtype) and acc.peak(fmt.compute_dtype) > 0:
        return Support(fmt.name, "native", fmt.compute_dtype, "")
    fallback_dtype = acc.peak_16bit[0]
    status = (rule.fallback if rule and rule.fallback else None) or fmt.fallback
    reason = (rule.reason if rule and rule.fallback else "") or fmt.fallback_reason
    if not acc.tensor_cores and fmt.compute_dtype != "fp32":
        reason = reason or f"{acc.name} has no tensor cores; computes in {fallback_dtype}"
    if status == "unsupported":
        return Support(fmt.name, "unsupported", "-", reason or f"{acc.name} has no {fmt.compute_dtype} units")
    return Support(fmt.name, "emulated", fallback_dtype,
                   reason or f"no {fmt.compute_dtype} in {acc.generation} silicon: unpacked to {fallback_dtype}")
