"""Accelerators: memory, bandwidth, dense peaks per compute dtype, generation, links, node, rental price."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType

from vazao import limits
from vazao.catalog._load import check_label, load_yaml, norm
from vazao.errors import NotFoundError, VazaoError
from vazao.units import GB, TFLOPS, GiB

# Compute dtypes an accelerator may list a dense peak for.
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4", "fp6", "fp4")


@dataclass(frozen=True)
class Generation:
    """What a silicon generation's matrix units understand (seed 003_*.txt's table)."""

    name: str
    vendor: str
    tensor_cores: bool
    native_dtypes: frozenset[str]
    note: str
    source: str
    as_of: str


@dataclass(frozen=True)
class Accelerator:
    id: str
    name: str
    vendor: str
    kind: str  # gpu | apple | cpu
    generation: str
    compute_capability: str | None
    memory_bytes: float
    memory_bandwidth_bytes_per_s: float
    peak_flops: Mapping[str, float]  # dense FLOP/s (or OP/s) per compute dtype
    interconnect: str
    interconnect_bytes_per_s: float  # per GPU, one direction, to its peers
    host_link_bytes_per_s: float  # to host memory (PCIe / C2C), one direction
    usd_per_hour: float | None
    source: str
    as_of: str
    price_source: str | None = None
    price_as_of: str | None = None
    memory_unit: str = "B"  # how the catalog states memory_bytes: GiB (2**30), GB (1e9), or B where measured
    memory_source: str | None = None
    memory_as_of: str | None = None
    # The node: the server whose GPUs share interconnect_bytes_per_s (an NVLink / Infinity Fabric domain, a PCIe
    # box). Past it, traffic crosses the network at inter_node_bytes_per_s (per GPU, one direction: the node's NICs
    # divided among its GPUs). None: no node is known (this host, measured), and no boundary is charged.
    gpus_per_node: int | None = None
    inter_node_bytes_per_s: float | None = None
    node_source: str | None = None
    node_as_of: str | None = None
    aliases: tuple[str, ...] = ()
    notes: str = ""
    # GeForce cards list FP32-accumulate tensor rates; GEMMs that accumulate in FP16 run this much faster
    fp16_accumulate_speedup: float = 1.0
    # streaming multiprocessors (NVIDIA) or compute units (AMD): the thread blocks a kernel runs at once, one per
    # unit; a decode attention kernel with fewer blocks than units reads the KV cache at that share of the
    # bandwidth (physics/step.py kv_occupancy). None: not stated, and no such limit is charged.
    sm_count: int | None = None
    sm_source: str | None = None
    sm_as_of: str | None = None
    gen: Generation | None = field(default=None, compare=False, repr=False)

    @property
    def tensor_cores(self) -> bool:
        return bool(self.gen and self.gen.tensor_cores)

    @property
    def nvlink(self) -> bool:
        """The GPUs of a node share an NVLink domain: peer-to-peer reads an engine's own all-reduce relies on."""
        return self.interconnect.startswith("nvlink")

    def native(self, dtype: str) -> bool:
        """True when the matrix units run this dtype in silicon."""
        if dtype == "fp32":
            return True
        return bool(self.gen and dtype in self.gen.native_dtypes)

    def peak(self, dtype: str) -> float:
        """Dense peak for a compute dtype; 0 when the chip has no figure for it."""
        return self.peak_flops.get(dtype, 0.0)

    @property
    def peak_16bit(self) -> tuple[str, float]:
        """The 16-bit (or fallback fp32) path a weight-only or emulated format computes in."""
        for dt in ("bf16", "fp16"):
            if self.native(dt) and self.peak(dt) > 0:
                return dt, self.peak(dt)
        best = max(("fp16", "bf16", "fp32"), key=self.peak)
        return best, self.peak(best)


@cache
def generations() -> Mapping[str, Generation]:
    raw = load_yaml("generations.yaml")
    out = {}
    for name, g in raw["generations"].items():
        out[name] = Generation(
            name=name,
            vendor=g["vendor"],
            tensor_cores=bool(g["tensor_cores"]),
            native_dtypes=frozenset(g["native_dtypes"]),
            note=g.get("note", ""),
            source=g["source"],
            as_of=str(g["as_of"]),
        )
    return MappingProxyType(out)


def _speedup(entry: dict) -> float:
    v = entry.get("fp16_accumulate_speedup", 1)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 1 <= v <= 4:
        raise VazaoError(f"accelerator {entry['id']}: fp16_accumulate_speedup must be a number from 1 to 4, got {v!r}")
    return float(v)


# The catalog's memory keys: one per unit, never a bare number whose unit is a guess.
MEMORY_KEYS = {"memory_gib": ("GiB", GiB), "memory_gb": ("GB", GB)}


def _memory(entry: dict) -> tuple[float, str]:
    """memory_bytes and its stated unit from exactly one of memory_gib / memory_gb, with its own source."""
    keys = [k for k in MEMORY_KEYS if k in entry]
    if len(keys) != 1:
        raise VazaoError(f"accelerator {entry['id']}: give exactly one of memory_gib (2**30 bytes) or memory_gb "
                         f"(1e9 bytes), got {keys or 'neither'}")
    value = entry[keys[0]]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e6:
        raise VazaoError(f"accelerator {entry['id']}: {keys[0]} must be a positive number, got {value!r}")
    if not entry.get("memory_source") or not entry.get("memory_as_of"):
        raise VazaoError(f"accelerator {entry['id']}: {keys[0]} needs a memory_source and a memory_as_of")
    unit, size = MEMORY_KEYS[keys[0]]
    return float(value) * size, unit


# No server in the catalog comes near this (GB200 NVL72: 72 GPUs in one NVLink domain); a typo would.
# An entry without `node` gets the convention of its kind, or, for a GPU on a PCIe link, the PCIe server's
# (hardware.yaml's header says why). An NVLink / Infinity Fabric part has no default: its system must be named.
NODE_DEFAULT_BY_KIND = {"apple": "single-device", "cpu": "dual-socket-100gbe"}
NODE_DEFAULT_PCIE = "pcie-server-100gbe"


@cache
def node_conventions() -> Mapping[str, Mapping]:
    """hardware.yaml's named node conventions, for parts sold in no published system."""
    raw = load_yaml("hardware.yaml").get("node_conventions") or {}
    return MappingProxyType({k: MappingProxyType(v) for k, v in raw.items()})


def _node(entry: dict) -> tuple[int, float, str, str]:
    """(gpus_per_node, inter_node_bytes_per_s, source, as_of) from the entry's `node`: a mapping, the name of a
    convention, or absent (the default of its kind or link)."""
    spec = entry.get("node")
    if spec is None:
        kind = entry.get("kind", "gpu")
        if kind in NODE_DEFAULT_BY_KIND:
            spec = NODE_DEFAULT_BY_KIND[kind]
        elif str(entry.get("interconnect", "")).startswith("pcie"):
            spec = NODE_DEFAULT_PCIE
        else:
            raise VazaoError(f"accelerator {entry['id']}: give a node (gpus_per_node, inter_node_gb_s, source, as_of) "
                             f"or a node convention: {entry.get('interconnect')!r} parts have no default system")
    if isinstance(spec, str):
        conventions = node_conventions()
        if spec not in conventions:
            raise VazaoError(f"accelerator {entry['id']}: unknown node convention {spec!r} "
                             f"(known: {', '.join(sorted(conventions))})")
        spec = conventions[spec]
    if not isinstance(spec, Mapping):
        raise VazaoError(f"accelerator {entry['id']}: node must be a mapping or a convention name, got {spec!r}")
    g = _count(entry, "gpus_per_node", spec.get("gpus_per_node"), limits.MAX_GPUS_PER_NODE)
    inter = spec.get("inter_node_gb_s")
    if inter is None and g == 1:
        # A device alone in its box (a Mac, a DGX Spark): its peer link is the link to the other boxes.
        inter = entry["interconnect_gb_s"]
    if isinstance(inter, bool) or not isinstance(inter, (int, float)) or not 0 < inter < 1e6:
        raise VazaoError(f"accelerator {entry['id']}: inter_node_gb_s must be a positive number (decimal GB/s per "
                         f"GPU), got {inter!r}")
    source, as_of = _cited(entry, "node", spec)
    return g, float(inter) * GB, source, as_of


def _count(entry: dict, what: str, n: object, most: int) -> int:
    """A whole number from 1 to `most` in an accelerator's entry, or the one-line refusal naming it."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= most:
        raise VazaoError(f"accelerator {entry['id']}: {what} must be a whole number from 1 to {most}, got {n!r}")
    return n


def _cited(entry: dict, what: str, spec: Mapping) -> tuple[str, str]:
    """(source, as_of) of a figure of an accelerator's entry: both are required."""
    if not spec.get("source") or not spec.get("as_of"):
        raise VazaoError(f"accelerator {entry['id']}: its {what} needs a source and an as_of")
    return str(spec["source"]), str(spec["as_of"])


def _sm(entry: dict) -> tuple[int | None, str | None, str | None]:
    """(count, source, as_of) from the entry's `sm` mapping {count, source, as_of}; all None where absent."""
    spec = entry.get("sm")
    if spec is None:
        return None, None, None
    if not isinstance(spec, Mapping):
        raise VazaoError(f"accelerator {entry['id']}: sm must be a mapping (count, source, as_of), got {spec!r}")
    n = _count(entry, "sm count", spec.get("count"), limits.MAX_SM_COUNT)
    return (n, *_cited(entry, "sm count", spec))


def _accelerator(entry: dict) -> Accelerator:
    gens = generations()
    gen_name = entry["generation"]
    if gen_name not in gens:
        raise VazaoError(f"accelerator {entry['id']}: unknown generation {gen_name!r}")
    peaks = {dt: float(v) * TFLOPS for dt, v in entry["peak_tflops"].items() if v}
    bad = set(peaks) - set(DTYPES)
    if bad:
        raise VazaoError(f"accelerator {entry['id']}: unknown dtypes {sorted(bad)}")
    price = entry.get("rental") or {}
    memory_bytes, memory_unit = _memory(entry)
    gpus_per_node, inter_node, node_source, node_as_of = _node(entry)
    sm_count, sm_source, sm_as_of = _sm(entry)
    return Accelerator(
        id=entry["id"],
        name=entry["name"],
        vendor=entry["vendor"],
        kind=entry.get("kind", "gpu"),
        generation=gen_name,
        compute_capability=(str(entry["compute_capability"]) if entry.get("compute_capability") else None),
        memory_bytes=memory_bytes,
        memory_unit=memory_unit,
        memory_source=entry["memory_source"],
        memory_as_of=str(entry["memory_as_of"]),
        memory_bandwidth_bytes_per_s=float(entry["bandwidth_gb_s"]) * GB,
        peak_flops=MappingProxyType(peaks),
        interconnect=entry["interconnect"],
        interconnect_bytes_per_s=float(entry["interconnect_gb_s"]) * GB,
        host_link_bytes_per_s=float(entry["host_link_gb_s"]) * GB,
        gpus_per_node=gpus_per_node,
        inter_node_bytes_per_s=inter_node,
        node_source=node_source,
        node_as_of=node_as_of,
        usd_per_hour=(float(price["usd_per_hour"]) if price.get("usd_per_hour") is not None else None),
        price_source=price.get("source"),
        price_as_of=(str(price["as_of"]) if price.get("as_of") else None),
        source=entry["source"],
        as_of=str(entry["as_of"]),
        aliases=tuple(entry.get("aliases", ())),
        notes=entry.get("notes", ""),
        fp16_accumulate_speedup=_speedup(entry),
        sm_count=sm_count,
        sm_source=sm_source,
        sm_as_of=sm_as_of,
        gen=gens[gen_name],
    )


@cache
def accelerators() -> Mapping[str, Accelerator]:
    raw = load_yaml("hardware.yaml")
    out: dict[str, Accelerator] = {}
    for entry in raw["accelerators"]:
        acc = _accelerator(entry)
        if acc.id in out:
            raise VazaoError(f"duplicate accelerator id {acc.id}")
        out[acc.id] = acc
    return MappingProxyType(out)


@cache
def _index() -> Mapping[str, str]:
    idx: dict[str, str] = {}
    for acc in accelerators().values():
        for label in (acc.id, acc.name, *acc.aliases):
            idx.setdefault(norm(label), acc.id)
    return MappingProxyType(idx)


LOCAL_NAMES = ("local", "localhost", "host")


def get_accelerator(name: str) -> Accelerator:
    """Resolve a catalog id, name or alias ('H100-SXM-80GB', 'h100', 'RTX-4090'). This host ('local') is
    not a catalog entry: it is measured where a deployment is made (catalog.local.resolve_accelerator)."""
    key = norm(check_label("GPU", name))
    idx = _index()
    if key in idx:
        return accelerators()[idx[key]]
    if key in LOCAL_NAMES:
        raise VazaoError("'local' is this host, not a catalog entry: it is measured where a deployment is made "
                         "(vazao.catalog.local.resolve_accelerator)")
    raise NotFoundError("GPU", name, [*idx.keys(), "local"])
