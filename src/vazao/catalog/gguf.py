"""A reader of GGUF headers: metadata, tensor shapes and types; never the tensor data.

Layout (ggml docs/gguf.md, versions 2 and 3, little endian): magic 'GGUF', u32 version,
u64 tensor_count, u64 kv_count, the typed key/value pairs, then per tensor: name, u32 n_dims,
u64 dims[n_dims] (innermost first), u32 ggml type, u64 offset into the aligned data section.
The file is memory-mapped, so a multi-gigabyte model costs only the pages of its header.
"""

from __future__ import annotations

import math
import mmap
import os
import struct
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vazao import inputs, limits
from vazao.catalog.arch import ModelArch
from vazao.errors import VazaoError

MAGIC = b"GGUF"
# Bounds on what a header may claim; real files hold ~50 keys, ~10^3 tensors, chat templates of
# ~10^4 bytes. A corrupt or hostile header is refused before it costs more than these.

# ggml_type -> (name, elements per block, bytes per block), from ggml.h / ggml.c type_traits.
GGML_TYPES: Mapping[int, tuple[str, int, int]] = MappingProxyType({
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
})


def bits_per_weight(type_name: str) -> float:
    """Stored bits per element of a ggml type, block scales included (Q4_K: 4.5)."""
    for name, elems, nbytes in GGML_TYPES.values():
        if name == type_name:
            return 8.0 * nbytes / elems
    raise KeyError(type_name)


# llama.cpp LLAMA_FTYPE (general.file_type) -> vazao format name. The "mostly" types mean the
# bulk of the matrices; llama.cpp keeps some tensors wider, which weights_bytes counts exactly.
FILE_TYPES: Mapping[int, str] = MappingProxyType({
    0: "fp32", 1: "fp16", 2: "q4_0", 7: "q8_0", 10: "q2_k", 12: "q3_k_m", 15: "q4_k_m",
    17: "q5_k_m", 18: "q6_k", 32: "bf16", 38: "mxfp4",  # 38: MOSTLY_MXFP4_MOE (gpt-oss)
})

# GGUF metadata value types -> struct code (8 string and 9 array are handled apart).
_SCALARS: Mapping[int, str] = MappingProxyType({
    0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d",
})
_TYPE_NAMES = {0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32",
               7: "bool", 8: "string", 9: "array", 10: "uint64", 11: "int64", 12: "float64"}
_MAX_DECODED_NUMBERS = 4096  # per-layer arrays (head counts, window flags) stay decoded
_MAX_DECODED_STRINGS = 64  # vocabularies and merges do not
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


@dataclass(frozen=True)
class GGUFArray:
    """A metadata array left undecoded (a vocabulary, scores): its element type and length."""

    item_type: str
    length: int

    def __len__(self) -> int:
        return self.length


@dataclass(frozen=True)
class GGUFInfo:
    architecture: str
    metadata: Mapping[str, Any]
    tensors: tuple[tuple[str, tuple[int, ...], str], ...]  # (name, dims innermost first, ggml type)
    file_type: int | None
    weights_bytes: float
    tensor_type_counts: Mapping[str, int]
    version: int = 3
    data_offset: int = 0

    @property
    def weight_format(self) -> str | None:
        return FILE_TYPES.get(self.file_type) if self.file_type is not None else None

    def tensor(self, name: str) -> tuple[int, ...] | None:
        for n, shape, _ in self.tensors:
            if n == name:
                return shape
        return None


class _Reader:
    def __init__(self, buf: mmap.mmap | bytes, where: str):
        self.buf = buf
        self.size = len(buf)
        self.off = 0
        self.where = where

    def _need(self, n: int) -> int:
        start = self.off
        if n < 0 or start + n > self.size:
            raise VazaoError(f"{self.where}: truncated GGUF header at offset {start}")
        self.off = start + n
        return start

    def u32(self) -> int:
        return _U32.unpack_from(self.buf, self._need(4))[0]

    def u64(self) -> int:
        return _U64.unpack_from(self.buf, self._need(8))[0]

    def string(self, limit: int = limits.MAX_GGUF_STRING_BYTES) -> str:
        at = self.off
        n = self.u64()
        if n > limit:
            raise VazaoError(f"{self.where}: a string of {n:,} bytes at offset {at} (at most {limit:,}): "
                             "corrupt GGUF header")
        start = self._need(n)
        return bytes(self.buf[start:start + n]).decode("utf-8", errors="replace")

    def skip_strings(self, count: int) -> None:
        # a vocabulary holds ~10^5 strings: walk the lengths without building them
        buf, size, off, unpack = self.buf, self.size, self.off, _U64.unpack_from
        for _ in range(count):
            if off + 8 > size:
                break
            off += 8 + unpack(buf, off)[0]
        else:
            if off <= size:
                self.off = off
                return
        raise VazaoError(f"{self.where}: truncated GGUF header at offset {min(off, size)}")

    def value(self, vtype: int) -> Any:
        code = _SCALARS.get(vtype)
        if code is not None:
            fmt = "<" + code
            return struct.unpack_from(fmt, self.buf, self._need(struct.calcsize(fmt)))[0]
        if vtype == 8:
            return self.string()
        if vtype == 9:
            return self.array()
        raise VazaoError(f"{self.where}: unknown GGUF value type {vtype} at offset {self.off - 4}")

    def array(self, depth: int = 1) -> Any:
        if depth > limits.MAX_GGUF_ARRAY_DEPTH:
            raise VazaoError(f"{self.where}: arrays nested deeper than {limits.MAX_GGUF_ARRAY_DEPTH} at offset "
                             f"{self.off}: corrupt GGUF header")
        item = self.u32()
        count = self.u64()
        code = _SCALARS.get(item)
        if code is not None:
            width = struct.calcsize("<" + code)
            if count * width > self.size - self.off:
                raise VazaoError(f"{self.where}: truncated GGUF header at offset {self.off}")
            start = self._need(count * width)
            if count <= _MAX_DECODED_NUMBERS:
                return struct.unpack_from(f"<{count}{code}", self.buf, start)
            return GGUFArray(_TYPE_NAMES[item], count)
        if item == 8:
            if count <= _MAX_DECODED_STRINGS:
                return tuple(self.string() for _ in range(count))
            self.skip_strings(count)
            return GGUFArray("string", count)
        if item == 9:
            if count * 12 > self.size - self.off:  # each inner array has at least its type and length
                raise VazaoError(f"{self.where}: truncated GGUF header at offset {self.off}")
            for _ in range(count):
                self.array(depth + 1)
            return GGUFArray("array", count)
        raise VazaoError(f"{self.where}: unknown GGUF array type {item} at offset {self.off - 12}")


def _tensor_bytes(dims: tuple[int, ...], ggml_type: int) -> int | None:
    """Exact bytes, in integers: u64 dimensions multiply past any float."""
    spec = GGML_TYPES.get(ggml_type)
    if spec is None:
        return None
    _, elems, nbytes = spec
    return -(-math.prod(dims) * nbytes // elems)


def _parse(buf: mmap.mmap | bytes, where: str) -> GGUFInfo:
    r = _Reader(buf, where)
    if r.size < 4 or bytes(buf[:4]) != MAGIC:
        raise VazaoError(f"{where}: not a GGUF file (magic {bytes(buf[:4])!r})")
    r.off = 4
    version = r.u32()
    if version not in (2, 3):
        if int.from_bytes(version.to_bytes(4, "little"), "big") in (2, 3):
            raise VazaoError(f"{where}: big-endian GGUF files are not supported")
        raise VazaoError(f"{where}: unsupported GGUF version {version} (2 and 3 are read)")
    n_tensors = r.u64()
    n_kv = r.u64()
    if n_kv > limits.MAX_GGUF_KEYS or n_tensors > limits.MAX_GGUF_TENSORS:
        raise VazaoError(f"{where}: header claims {n_kv:,} metadata keys and {n_tensors:,} tensors (at most "
                         f"{limits.MAX_GGUF_KEYS:,} and {limits.MAX_GGUF_TENSORS:,}): corrupt GGUF header")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = r.string(limits.MAX_GGUF_KEY_BYTES)
        metadata[key] = r.value(r.u32())
    tensors = []
    for _ in range(n_tensors):
        name = r.string(limits.MAX_GGUF_KEY_BYTES)
        n_dims = r.u32()
        if n_dims > 8:
            raise VazaoError(f"{where}: tensor {name!r} claims {n_dims} dimensions: corrupt GGUF header")
        dims = tuple(r.u64() for _ in range(n_dims))
        ggml_type = r.u32()
        offset = r.u64()
        tensors.append((name, dims, ggml_type, offset))
    alignment = metadata.get("general.alignment", 32)
    if not isinstance(alignment, int) or alignment <= 0:
        alignment = 32
    data_offset = -(-r.off // alignment) * alignment

    sizes = [_tensor_bytes(dims, t) for _, dims, t, _ in tensors]
    if all(s is not None for s in sizes):
        ends = (data_offset + off + s for (_, _, _, off), s in zip(tensors, sizes, strict=True))
        end = max(ends, default=data_offset)
        if end > r.size:
            shown = f"{end:,}" if end < 10**30 else "beyond any disk"
            raise VazaoError(f"{where}: truncated GGUF: tensor data ends at byte {shown}, file has {r.size}"
                             " bytes")
        weights = float(sum(sizes))  # type: ignore[arg-type]
    else:
        weights = float(max(r.size - data_offset, 0))  # a type newer than this table: the data section
    names = [GGML_TYPES.get(t, (f"TYPE_{t}",))[0] for _, _, t, _ in tensors]
    file_type = metadata.get("general.file_type")
    return GGUFInfo(
        architecture=str(metadata.get("general.architecture", "")),
        metadata=MappingProxyType(metadata),
        tensors=tuple((n, dims, tn) for (n, dims, _, _), tn in zip(tensors, names, strict=True)),
        file_type=int(file_type) if isinstance(file_type, int) else None,
        weights_bytes=weights,
        tensor_type_counts=MappingProxyType(dict(Counter(names))),
        version=version,
        data_offset=data_offset,
    )


def read_gguf(path: str | Path) -> GGUFInfo:
    """Parse the header of a .gguf file; the tensor data is never read."""
    p = inputs.input_file(path, "GGUF file")
    shown = inputs._show(p)
    try:
        with p.open("rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                raise VazaoError(f"{shown}: not a GGUF file (empty)")
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return _parse(mm, shown)
    except OSError as exc:
        raise VazaoError(f"GGUF file {shown} cannot be read: {exc.strerror or exc}") from None


def parse_gguf_bytes(data: bytes, where: str = "<bytes>") -> GGUFInfo:
    """Parse a GGUF header held in memory (tests, or a header fetched on its own)."""
    return _parse(data, where)


# ---- GGUF metadata -> ModelArch ----------------------------------------------------------------
def _num(md: Mapping[str, Any], key: str, default: int | None = None) -> int | None:
    v = md.get(key, default)
    if isinstance(v, tuple):  # per-layer values (OpenELM, hybrids): size for the widest layer
        v = max((x for x in v if isinstance(x, (int, float)) and not isinstance(x, bool)), default=default)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return default
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        raise VazaoError(f"GGUF metadata '{key}' must be a whole number, got {v!r}")
    return int(v)


def _sliding_layers(md: Mapping[str, Any], arch: str, layers: int) -> int:
    pattern = md.get(f"{arch}.attention.sliding_window_pattern")
    if isinstance(pattern, tuple):
        return sum(1 for x in pattern if x)
    if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 0:
        return layers - layers // pattern
    if arch.startswith("gemma3"):
        return layers - layers // 6  # five local layers for each global one
    if arch in ("gemma2", "gpt-oss"):
        return (layers + 1) // 2  # every other layer, from layer 0
    return layers


@dataclass(frozen=True)
class _Keys:
    """One header's metadata read under its architecture's prefix ('llama.block_count')."""

    md: Mapping[str, Any]
    arch: str
    where: str

    def num(self, key: str) -> int | None:
        return _num(self.md, f"{self.arch}.{key}")

    def need(self, key: str) -> int:
        v = self.num(key)
        if v is None:
            raise VazaoError(f"{self.where}: GGUF metadata lacks '{self.arch}.{key}'")
        if v < 1:
            raise VazaoError(f"{self.where}: GGUF metadata '{self.arch}.{key}' must be at least 1, got {v}")
        return v


def _vocab(info: GGUFInfo, k: _Keys) -> int:
    """The embedding table's rows, else the declared vocabulary size, else the tokenizer's length."""
    embd = info.tensor("token_embd.weight")
    tokens = k.md.get("tokenizer.ggml.tokens", ())
    vocab = (
        (embd[1] if embd and len(embd) >= 2 else None)
        or k.num("vocab_size")
        or (len(tokens) if isinstance(tokens, (tuple, GGUFArray)) else 0)
    )
    if not vocab:
        raise VazaoError(f"{k.where}: no token_embd.weight tensor and no vocabulary in the GGUF metadata")
    return int(vocab)


def _mla_fields(k: _Keys, kv_lora: int, key_len: int | None) -> dict[str, int]:
    """DeepSeek's multi-head latent attention, present when the header gives a KV LoRA rank."""
    rope_dim = k.num("rope.dimension_count") or 0
    if not kv_lora:
        return {}
    v_len = k.num("attention.value_length_mla") or k.num("attention.value_length") or 0
    return {
        "kv_lora_rank": kv_lora,
        "q_lora_rank": k.num("attention.q_lora_rank") or 0,
        "qk_rope_head_dim": rope_dim,
        "qk_nope_head_dim": (key_len or 0) - rope_dim,
        "v_head_dim": v_len,
    }


def _moe_fields(k: _Keys, experts: int, ffn: int) -> dict[str, int]:
    if not experts:
        return {}
    return {
        "num_experts": experts,
        "experts_per_token": k.num("expert_used_count") or 1,
        "num_shared_experts": k.num("expert_shared_count") or 0,
        "moe_intermediate_size": k.num("expert_feed_forward_length") or ffn,
        "first_dense_layers": k.num("leading_dense_block_count") or 0,
    }


def _window(k: _Keys, layers: int, context: int) -> tuple[int, int]:
    """(sliding window, layers using it); a window as long as the context is no window."""
    window = k.num("attention.sliding_window") or 0
    if window and context and window >= context:
        window = 0
    window_layers = _sliding_layers(k.md, k.arch, layers) if window else 0
    return (window if window_layers else 0), window_layers


def _tensor_flags(names: set[str]) -> dict[str, bool]:
    """What the tensor names say: a separate output head, a gated MLP, biases on q/k/v."""
    has_gate = any(".ffn_gate" in n for n in names)
    has_up = any(".ffn_up" in n for n in names)
    return {
        "tie_word_embeddings": "output.weight" not in names,
        "gated_mlp": has_gate or not has_up,
        "qkv_bias": "blk.0.attn_q.bias" in names or "blk.0.attn_qkv.bias" in names,
    }


def gguf_to_arch(info: GGUFInfo, path: str | Path | None = None, name: str | None = None) -> ModelArch:
    """The architecture a GGUF header describes ({arch}.block_count, .embedding_length, …)."""
    md, arch = info.metadata, info.architecture
    where = inputs._show(path) if path else "GGUF"
    if not arch:
        raise VazaoError(f"{where}: GGUF metadata lacks 'general.architecture'")
    k = _Keys(md, arch, where)
    # read in this order, so a header with several faults always reports the same one first
    layers, hidden, heads = k.need("block_count"), k.need("embedding_length"), k.need("attention.head_count")
    kv_heads = k.num("attention.head_count_kv") or heads
    context = k.num("context_length") or 0
    vocab = _vocab(info, k)
    kv_lora = k.num("attention.kv_lora_rank") or 0
    key_len = k.num("attention.key_length_mla") or k.num("attention.key_length")
    mla = _mla_fields(k, kv_lora, key_len)
    experts = k.num("expert_count") or 0
    ffn = k.num("feed_forward_length") or 0
    moe = _moe_fields(k, experts, ffn)
    window, window_layers = _window(k, layers, context)
    label = (name or str(md.get("general.name") or (Path(path).stem if path else arch)))[:limits.MAX_NAME]
    try:
        return ModelArch(
            name=label, num_layers=layers, hidden_size=hidden, num_heads=heads, num_kv_heads=kv_heads,
            head_dim=key_len or hidden // heads, intermediate_size=ffn, vocab_size=vocab, max_context=context,
            sliding_window=window, sliding_window_layers=window_layers, family=arch,
            source=f"GGUF header of {Path(path).name}" if path else "GGUF header",
            **_tensor_flags({t[0] for t in info.tensors}), **moe, **mla,
        )
    except ValueError as exc:
        raise VazaoError(f"{where}: {exc}") from None
