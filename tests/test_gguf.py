"""The GGUF header reader: a synthetic file built here, and the real Gemma 3 270M Q4_K_M."""

from __future__ import annotations

import shutil
import struct
import time
from pathlib import Path

import pytest

from vazao.catalog.gguf import (
    GGUFArray,
    bits_per_weight,
    gguf_to_arch,
    parse_gguf_bytes,
    read_gguf,
)
from vazao.catalog.models import get_model, load_model
from vazao.errors import VazaoError

# ---- a GGUF writer just big enough for the tests (ggml docs/gguf.md) -----------------------------
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_CODES = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?", U64: "Q", I64: "q",
          F64: "d"}
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144),
        "Q6_K": (14, 256, 210)}


def gstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gvalue(vtype: int, value) -> bytes:
    if vtype == STRING:
        return gstr(value)
    if vtype == ARRAY:
        item, items = value
        body = b"".join(gvalue(item, v) for v in items)
        return struct.pack("<IQ", item, len(items)) + body
    return struct.pack("<" + _CODES[vtype], value)


def build_gguf(kvs: list[tuple[str, int, object]], tensors: list[tuple[str, tuple[int, ...], str]],
               version: int = 3, alignment: int = 32) -> bytes:
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)))
    for key, vtype, value in kvs:
        out += gstr(key) + struct.pack("<I", vtype) + gvalue(vtype, value)
    offset = 0
    sizes = []
    for name, dims, tname in tensors:
        code, elems, nbytes = GGML[tname]
        n = 1
        for d in dims:
            n *= d
        size = n // elems * nbytes
        out += gstr(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", code, offset)
        sizes.append(size)
        offset += -(-size // alignment) * alignment
    out += b"\0" * (-len(out) % alignment)
    for size in sizes:
        out += b"\x11" * size + b"\0" * (-size % alignment)
    return bytes(out)


HIDDEN, FFN, VOCAB, LAYERS = 256, 512, 300, 2


def tiny_llama(**overrides) -> tuple[bytes, float]:
    """A 2-layer llama-style GGUF and the weight bytes its tensor types imply."""
    kvs = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "tiny-llama"),
        ("general.file_type", U32, 7),
        ("general.tags", ARRAY, (STRING, ["a", "b"])),
        ("llama.block_count", U32, LAYERS),
        ("llama.context_length", U32, 4096),
        ("llama.embedding_length", U32, HIDDEN),
        ("llama.feed_forward_length", U32, FFN),
        ("llama.attention.head_count", U32, 8),
        ("llama.attention.head_count_kv", U32, 2),
        ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("llama.rope.freq_base", F64, 500000.0),
        ("tokenizer.ggml.add_bos_token", BOOL, True),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, [f"tok{i}" for i in range(VOCAB)])),
        ("tokenizer.ggml.scores", ARRAY, (F32, [0.0] * VOCAB)),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [1] * VOCAB)),
        ("tokenizer.ggml.merges", ARRAY, (ARRAY, [])),
        ("general.quantization_version", U32, 2),
    ]
    kvs = [(k, t, overrides.get(k, v)) for k, t, v in kvs]
    tensors = [("token_embd.weight", (HIDDEN, VOCAB), "Q8_0"), ("output_norm.weight", (HIDDEN,), "F32"),
               ("output.weight", (HIDDEN, VOCAB), "Q6_K")]
    for i in range(LAYERS):
        tensors += [
            (f"blk.{i}.attn_norm.weight", (HIDDEN,), "F32"),
            (f"blk.{i}.attn_q.weight", (HIDDEN, HIDDEN), "Q4_K"),
            (f"blk.{i}.attn_k.weight", (HIDDEN, 64), "Q4_K"),
            (f"blk.{i}.attn_v.weight", (HIDDEN, 64), "Q8_0"),
            (f"blk.{i}.attn_output.weight", (HIDDEN, HIDDEN), "Q4_K"),
            (f"blk.{i}.ffn_norm.weight", (HIDDEN,), "F32"),
            (f"blk.{i}.ffn_gate.weight", (HIDDEN, FFN), "Q4_K"),
            (f"blk.{i}.ffn_up.weight", (HIDDEN, FFN), "Q4_K"),
            (f"blk.{i}.ffn_down.weight", (FFN, HIDDEN), "Q6_K"),
        ]
    expected = 0.0
    for _, dims, tname in tensors:
        n = 1
        for d in dims:
            n *= d
        expected += n * bits_per_weight(tname) / 8
    return build_gguf(kvs, tensors), expected


# ---- synthetic --------------------------------------------------------------------------------
def test_bits_per_weight_table():
    expected = {"F32": 32, "F16": 16, "BF16": 16, "Q4_0": 4.5, "Q4_1": 5, "Q5_0": 5.5, "Q5_1": 6, "Q8_0": 8.5,
                "Q2_K": 2.625, "Q3_K": 3.4375, "Q4_K": 4.5, "Q5_K": 5.5, "Q6_K": 6.5625, "Q8_K": 9.125,
                "IQ4_XS": 4.25, "IQ4_NL": 4.5, "IQ2_XXS": 2.0625, "MXFP4": 4.25}
    for name, bits in expected.items():
        assert bits_per_weight(name) == bits, name


def test_synthetic_gguf_parses():
    data, expected_bytes = tiny_llama()
    info = parse_gguf_bytes(data)
    assert info.architecture == "llama" and info.version == 3
    assert info.file_type == 7 and info.weight_format == "q8_0"
    assert info.weights_bytes == expected_bytes
    assert len(info.tensors) == 3 + 9 * LAYERS
    assert info.tensor("token_embd.weight") == (HIDDEN, VOCAB)
    assert info.tensor_type_counts == {"Q8_0": 3, "F32": 5, "Q6_K": 3, "Q4_K": 10}
    md = info.metadata
    assert md["general.tags"] == ("a", "b")  # short string arrays are decoded
    assert md["tokenizer.ggml.tokens"] == GGUFArray("string", VOCAB)  # vocabularies are skipped
    assert len(md["tokenizer.ggml.scores"]) == VOCAB
    assert md["llama.rope.freq_base"] == 500000.0 and md["tokenizer.ggml.add_bos_token"] is True

    arch = gguf_to_arch(info)
    assert arch.name == "tiny-llama" and arch.family == "llama"
    assert (arch.num_layers, arch.hidden_size, arch.num_heads, arch.num_kv_heads) == (LAYERS, HIDDEN, 8, 2)
    assert (arch.head_dim, arch.intermediate_size) == (32, FFN)
    assert (arch.vocab_size, arch.max_context) == (VOCAB, 4096)
    assert arch.tie_word_embeddings is False  # output.weight is present
    assert arch.gated_mlp and not arch.qkv_bias and not arch.is_moe
    assert arch.sliding_window_layers == 0


def test_synthetic_gguf_from_file_and_load_model(tmp_path):
    data, expected_bytes = tiny_llama()
    p = tmp_path / "tiny.gguf"
    p.write_bytes(data)
    loaded = load_model(str(p))
    assert loaded.weight_format == "q8_0"
    assert loaded.weights_bytes == expected_bytes
    assert loaded.arch.num_layers == LAYERS and loaded.origin.startswith("gguf")


def test_unknown_file_type_maps_to_none():
    info = parse_gguf_bytes(tiny_llama(**{"general.file_type": 14})[0])  # Q4_K_S: no vazao format
    assert info.file_type == 14 and info.weight_format is None


def test_every_truncation_of_the_header_raises():
    data, _ = tiny_llama()
    header_end = parse_gguf_bytes(data).data_offset
    for cut in range(0, header_end, 37):
        with pytest.raises(VazaoError, match="GGUF"):
            parse_gguf_bytes(data[:cut])


def test_truncated_tensor_data_raises():
    data, _ = tiny_llama()
    with pytest.raises(VazaoError, match="tensor data ends"):
        parse_gguf_bytes(data[:-1000])


def test_bad_magic_and_versions():
    data, _ = tiny_llama()
    with pytest.raises(VazaoError, match=r"not a GGUF file \(magic b'GGML'\)"):
        parse_gguf_bytes(b"GGML" + data[4:])
    v1 = data[:4] + struct.pack("<I", 1) + data[8:]
    with pytest.raises(VazaoError, match="unsupported GGUF version 1"):
        parse_gguf_bytes(v1)
    big_endian = data[:4] + struct.pack(">I", 3) + data[8:]
    with pytest.raises(VazaoError, match="big-endian"):
        parse_gguf_bytes(big_endian)


def test_missing_architecture_keys_are_named():
    data = build_gguf([("general.architecture", STRING, "llama"), ("llama.embedding_length", U32, 64)],
                      [("token_embd.weight", (64, 10), "F32")])
    with pytest.raises(VazaoError, match="llama.block_count"):
        gguf_to_arch(parse_gguf_bytes(data))


def test_file_errors(tmp_path):
    with pytest.raises(VazaoError, match="does not exist"):
        read_gguf(tmp_path / "absent.gguf")
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(VazaoError, match="not a GGUF file"):
        read_gguf(empty)


# ---- the real Gemma 3 270M Q4_K_M ----------------------------------------------------------------
def _fastest(path: Path, n: int = 3) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        read_gguf(path)
        times.append(time.perf_counter() - start)
    return min(times)


def test_real_gemma_gguf_parses(gemma_gguf: Path, tmp_path: Path):
    info = read_gguf(gemma_gguf)
    # The header only, shown without a clock limit: the same file with its tensor data replaced by a
    # hole (zeros, no disk) reads the same, and one 40 times as large (all of it a hole) reads in about
    # the same time, where touching the data would cost ~40× the real file's read.
    head = gemma_gguf.open("rb").read(info.data_offset)
    hollow, huge = tmp_path / "hollow.gguf", tmp_path / "huge.gguf"
    for path, size in ((hollow, gemma_gguf.stat().st_size), (huge, 40 * gemma_gguf.stat().st_size)):
        with path.open("wb") as f:
            f.write(head)
            f.truncate(size)
    assert read_gguf(hollow) == info and read_gguf(huge).tensors == info.tensors
    real_s, huge_s = _fastest(gemma_gguf), _fastest(huge)
    print(f"read_gguf({gemma_gguf.name}): {real_s * 1e3:.0f} ms; 40× as large: {huge_s * 1e3:.0f} ms")
    assert huge_s < 8 * real_s + 0.05  # both the same header's parse; 0.05 s: timer and page-fault noise
    assert info.architecture == "gemma3"
    assert info.file_type == 15 and info.weight_format == "q4_k_m"
    size = gemma_gguf.stat().st_size
    assert info.weights_bytes == pytest.approx(size, rel=0.05)
    assert info.weights_bytes < size
    assert info.tensor_type_counts["Q4_K"] > 0
    assert len(info.metadata["tokenizer.ggml.tokens"]) == 262144

    arch = gguf_to_arch(info, gemma_gguf)
    assert (arch.num_layers, arch.hidden_size) == (18, 640)
    catalog = get_model("gemma-3-270m")
    for field in ("num_heads", "num_kv_heads", "head_dim", "intermediate_size", "vocab_size", "max_context",
                  "tie_word_embeddings", "sliding_window", "sliding_window_layers"):
        assert getattr(arch, field) == getattr(catalog, field), field
    assert arch.total_params == catalog.total_params


def test_real_gemma_gguf_through_load_model(gemma_gguf: Path):
    loaded = load_model(str(gemma_gguf))
    assert loaded.weight_format == "q4_k_m"
    assert loaded.arch.family == "gemma3"
    assert loaded.weights_bytes == pytest.approx(gemma_gguf.stat().st_size, rel=0.05)


def test_truncated_real_gguf_raises(gemma_gguf: Path, tmp_path):
    cut = tmp_path / "cut.gguf"
    with gemma_gguf.open("rb") as f:
        cut.write_bytes(f.read(1000))
    with pytest.raises(VazaoError, match="truncated GGUF header at offset"):
        read_gguf(cut)


def test_non_gguf_file_raises(tmp_path):
    other = tmp_path / "model.gguf"
    shutil.copyfile(__file__, other)
    with pytest.raises(VazaoError, match="not a GGUF file"):
        read_gguf(other)


def test_moe_and_sliding_window_metadata_map_to_arch():
    # gpt-oss-style keys: experts, a 128-token window on every other layer, no output.weight (tied)
    kvs = [
        ("general.architecture", STRING, "gpt-oss"),
        ("general.file_type", U32, 38),
        ("gpt-oss.block_count", U32, 4),
        ("gpt-oss.context_length", U32, 131072),
        ("gpt-oss.embedding_length", U32, 64),
        ("gpt-oss.feed_forward_length", U32, 64),
        ("gpt-oss.expert_feed_forward_length", U32, 32),
        ("gpt-oss.expert_count", U32, 8),
        ("gpt-oss.expert_used_count", U32, 2),
        ("gpt-oss.attention.head_count", U32, 4),
        ("gpt-oss.attention.head_count_kv", U32, 1),
        ("gpt-oss.attention.key_length", U32, 16),
        ("gpt-oss.attention.sliding_window", U32, 128),
    ]
    tensors = [("token_embd.weight", (64, 50), "F32"), ("blk.0.attn_q.bias", (64,), "F32"),
               ("blk.0.ffn_gate_exps.weight", (64, 32, 8), "F32"), ("blk.0.ffn_up_exps.weight", (64, 32, 8), "F32")]
    info = parse_gguf_bytes(build_gguf(kvs, tensors))
    assert info.weight_format == "mxfp4"
    arch = gguf_to_arch(info, name="tiny-oss")
    assert (arch.num_experts, arch.experts_per_token, arch.moe_intermediate_size) == (8, 2, 32)
    assert (arch.sliding_window, arch.sliding_window_layers) == (128, 2)
    assert arch.tie_word_embeddings and arch.qkv_bias and arch.gated_mlp
    assert (arch.head_dim, arch.num_kv_heads, arch.vocab_size) == (16, 1, 50)
