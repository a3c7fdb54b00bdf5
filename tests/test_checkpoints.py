"""The published checkpoints a launch command names: instruct by default, the quantized repository per format."""

from __future__ import annotations

import copy

import pytest

from vazao.catalog._load import load_yaml
from vazao.catalog.checkpoints import Checkpoint, checkpoint_for, checkpoints, checkpoints_of, parse
from vazao.catalog.formats import formats, get_format, kv_formats
from vazao.catalog.models import models
from vazao.errors import VazaoError


def repo(model: str, fmt: str, engine: str | None = None) -> str | None:
    found = checkpoint_for(model, fmt, engine)
    return found.repo if found else None


def test_instruct_is_the_default_not_the_base_model():
    # The catalog's alias for llama-3.1-8b is the base repository; the data lists it first, on purpose.
    listed = [c for c in checkpoints_of("llama-3.1-8b") if c.fmt == "bf16" and not c.engines]
    assert listed[0].repo == "meta-llama/Llama-3.1-8B" and not listed[0].instruct
    found = checkpoint_for("llama-3.1-8b", "bf16")
    assert found is not None and found.instruct
    assert found.repo == "meta-llama/Llama-3.1-8B-Instruct"


def test_aliases_resolve_like_the_catalog():
    assert repo("meta-llama/Llama-3.1-8B-Instruct", "bf16") == "meta-llama/Llama-3.1-8B-Instruct"
    assert repo("Meta-Llama-3.1-70B", "bf16") == "meta-llama/Llama-3.1-70B-Instruct"
    assert repo("google/gemma-3-27b-it", "bf16") == "google/gemma-3-27b-it"


@pytest.mark.parametrize("model,fmt,expected", [
    ("llama-3.1-8b", "int4-awq", "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"),
    ("llama-3.1-70b", "awq", "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"),  # format alias
    ("llama-3.1-70b", "int4-gptq", "hugging-quants/Meta-Llama-3.1-70B-Instruct-GPTQ-INT4"),
    ("llama-3.1-8b", "fp8", "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8"),
    ("llama-3.1-8b", "w8a8-int8", "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8"),
    ("qwen2.5-72b", "int4-awq", "Qwen/Qwen2.5-72B-Instruct-AWQ"),
    ("qwen3-32b", "fp8", "Qwen/Qwen3-32B-FP8"),
    ("llama-3.3-70b", "nvfp4", "nvidia/Llama-3.3-70B-Instruct-FP4"),
    ("gpt-oss-120b", "mxfp4", "openai/gpt-oss-120b"),
])
def test_quantized_repository_per_format(model, fmt, expected):
    found = checkpoint_for(model, fmt)
    assert found is not None and found.repo == expected
    assert found.fmt == get_format(fmt).name  # never the 16-bit repository under another format's name


def test_trtllm_prefers_the_modelopt_fp8_checkpoint():
    assert repo("llama-3.1-8b", "fp8", "trtllm") == "nvidia/Llama-3.1-8B-Instruct-FP8"
    assert repo("llama-3.3-70b", "fp8", "trtllm") == "nvidia/Llama-3.3-70B-Instruct-FP8"
    # vLLM keeps the first listed one (compressed-tensors), which TensorRT-LLM is not offered
    assert repo("llama-3.1-8b", "fp8", "vllm") == "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8"
    assert not checkpoint_for("llama-3.1-8b", "fp8", "vllm").serves("trtllm")


def test_engines_that_cannot_load_a_checkpoint_get_none():
    assert checkpoint_for("llama-3.1-8b", "q4_k_m", "vllm") is None  # GGUF is llama.cpp's
    assert checkpoint_for("llama-3.1-8b", "int4-awq", "trtllm") is None  # AutoAWQ: vllm / sglang
    assert checkpoint_for("llama-3.3-70b", "nvfp4", "vllm") is None  # its card names TensorRT-LLM only


def test_gguf_entries_carry_a_file_for_llama_cpp():
    found = checkpoint_for("llama-3.1-8b", "q4_k_m", "llama.cpp")
    assert found is not None
    assert found.repo == "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"
    assert found.file == "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    gguf = [c for c in checkpoints() if formats()[c.fmt].family == "gguf"]
    assert len(gguf) >= 10
    for c in gguf:
        assert c.file and c.file.endswith(".gguf") and c.engines == ("llama.cpp",), c.repo
    # llama.cpp never gets a safetensors folder, even in 16 bits
    sixteen = checkpoint_for("llama-3.1-8b", "bf16", "llama.cpp")
    assert sixteen is not None and sixteen.file == "Meta-Llama-3.1-8B-Instruct-bf16.gguf"
    assert checkpoint_for("qwen2.5-14b", "bf16", "llama.cpp") is None


def test_fp16_plan_is_served_from_the_bf16_checkpoint():
    found = checkpoint_for("llama-3.1-8b", "fp16")
    assert found is not None and found.repo == "meta-llama/Llama-3.1-8B-Instruct" and found.fmt == "bf16"
    exact = checkpoint_for("gemma-3-4b", "fp16", "llama.cpp")
    assert exact is not None and exact.fmt == "fp16"


def test_variants_only_when_asked_for():
    # DeepSeek-R1 shares deepseek-v3's architecture; a deepseek-v3 plan still names DeepSeek-V3
    assert repo("deepseek-v3", "fp8") == "deepseek-ai/DeepSeek-V3-0324"
    assert repo("deepseek-r1", "fp8") == "deepseek-ai/DeepSeek-R1"
    assert repo("deepseek-ai/DeepSeek-R1", "nvfp4", "trtllm") == "nvidia/DeepSeek-R1-FP4"
    assert repo("qwen3-30b-a3b", "bf16") == "Qwen/Qwen3-30B-A3B"
    assert repo("Qwen/Qwen3-30B-A3B-Instruct-2507", "fp8") == "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8"
    assert any(c.variant == "deepseek-r1" for c in checkpoints_of("deepseek-r1"))


def test_unknown_model_or_format_pair_is_none():
    assert checkpoint_for("llama-2-7b", "nvfp4") is None  # catalog model, no repository listed
    assert checkpoint_for("gpt-oss-20b", "bf16") is None  # published in MXFP4 only
    assert checkpoint_for("deepseek-v3", "bf16") is None  # published in FP8 only
    assert checkpoint_for("no-such-model-9000", "bf16") is None
    assert checkpoints_of("no-such-model-9000") == ()
    with pytest.raises(VazaoError):
        checkpoint_for("llama-3.1-8b", "fp7")


def test_every_entry_resolves_and_is_sourced():
    engines = set(load_yaml("engines.yaml")["engines"])
    entries = checkpoints()
    assert len(entries) >= 100
    for c in entries:
        assert isinstance(c, Checkpoint)
        assert c.model in models(), c.repo
        assert c.fmt in formats(), c.repo
        assert c.kv_format is None or c.kv_format in kv_formats(), c.repo
        assert set(c.engines) <= engines, c.repo
        assert c.source == f"https://huggingface.co/{c.repo}", c.repo
        assert c.as_of == "2026-12", c.repo
        assert c.repo.count("/") == 1, c.repo


def test_required_coverage():
    # the models the issue names, each in its instruct 16-bit (or native) form and at least one quantized one
    native = {"deepseek-v3": "fp8", "gpt-oss-20b": "mxfp4", "gpt-oss-120b": "mxfp4"}
    required = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b", "llama-3.2-1b", "llama-3.2-3b",
                "mixtral-8x7b", "mistral-7b", "deepseek-v3", "gpt-oss-20b", "gpt-oss-120b"]
    required += [m for m, a in models().items() if a.family in ("qwen2", "qwen3", "qwen3_moe") or "gemma" in m]
    for m in required:
        assert checkpoint_for(m, native.get(m, "bf16")) is not None, m
    for m in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b", "qwen2.5-7b", "mixtral-8x7b"):
        quantized = {c.fmt for c in checkpoints_of(m)} - {"bf16", "fp16"}
        assert len(quantized) >= 2, m


def _doc(**override):
    entry = {"repo": "meta-llama/Llama-3.1-8B-Instruct", "model": "llama-3.1-8b", "format": "bf16",
             "instruct": True, "source": "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct",
             "as_of": "2026-12"}
    entry.update(override)
    return {"checkpoints": [{k: v for k, v in entry.items() if v is not None}]}


def test_the_shipped_data_parses_with_parse():
    assert parse(copy.deepcopy(load_yaml("checkpoints.yaml"))) == checkpoints()
    assert parse(_doc())[0].repo == "meta-llama/Llama-3.1-8B-Instruct"


@pytest.mark.parametrize("override,message", [
    ({"model": "llama-9-8b"}, "llama-9-8b"),
    ({"format": "int3-magic"}, "int3-magic"),
    ({"repo": "https://huggingface.co/meta-llama/Llama-3.1-8B"}, "owner/name"),
    ({"repo": "Llama-3.1-8B-Instruct"}, "owner/name"),
    ({"source": None}, "source"),
    ({"as_of": None}, "as_of"),
    ({"instruct": "yes"}, "instruct"),
    ({"engines": ["tgi"]}, "tgi"),
    ({"format": "q4_k_m", "engines": ["llama.cpp"]}, "file"),
    ({"kv_format": "fp6"}, "fp6"),
    ({"variant": "llama-3.1-70b"}, "shadow"),
    ({"remote_code": "yes"}, "remote_code"),
    ({"weight_block": "128"}, "weight_block"),
    ({"weight_block": 0}, "weight_block"),
    ({"colour": "blue"}, "colour"),
])
def test_bad_entries_raise_naming_them(override, message):
    with pytest.raises(VazaoError) as err:
        parse(_doc(**override))
    text = str(err.value)
    assert message in text and "\n" not in text
    assert text.startswith("checkpoints.yaml")


def test_duplicates_raise():
    doc = _doc()
    doc["checkpoints"].append(dict(doc["checkpoints"][0]))
    with pytest.raises(VazaoError, match="twice"):
        parse(doc)
