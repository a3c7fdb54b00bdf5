"""Native / emulated / unsupported per silicon generation, as seed 003_238014a8b1bd80f0.txt tabulates."""

from __future__ import annotations

import pytest

from vazao.catalog.formats import formats, get_format, support
from vazao.catalog.hardware import get_accelerator


def status(fmt: str, gpu: str, engine: str | None = None) -> str:
    return support(get_format(fmt), get_accelerator(gpu), engine).status


def test_rtx_3060_seed003():
    # seed 003: "RTX 3060, que é Ampere: FP16, BF16, INT8 e INT4 nativos, e nenhum FP8 em silício".
    for f in ("fp16", "bf16", "w8a8-int8", "int4-awq", "int4-gptq", "q4_k_m"):
        assert status(f, "rtx-3060") == "native", f
    assert status("fp8", "rtx-3060") == "emulated"
    assert status("fp4", "rtx-3060") == "unsupported"
    # vLLM still loads NVFP4 there, weight-only through the FP4 Marlin kernel (memory gain only)
    assert status("nvfp4", "rtx-3060", "vllm") == "emulated"
    assert status("nvfp4", "rtx-3060", "trtllm") == "unsupported"


def test_p40_has_no_tensor_cores_seed003():
    # seed 003: Pascal has no Tensor Cores; everything runs on CUDA cores.
    p40 = get_accelerator("p40")
    assert not p40.tensor_cores
    assert status("fp32", "p40") == "native"
    for f in ("fp16", "int4-awq", "q4_k_m", "fp8"):
        assert status(f, "p40") != "native", f


def test_generations_seed003():
    assert status("fp8", "h100-sxm") == "native"  # Ada/Hopper: FP8
    assert status("fp8", "l40s") == "native"
    assert status("fp8", "a100-sxm-80gb") == "emulated"  # memory gain only
    assert status("nvfp4", "b200") == "native"  # Blackwell: FP4
    assert status("nvfp4", "h100-sxm") == "unsupported"
    assert status("bf16", "t4") != "native"  # BF16 arrives with Ampere
    assert status("w8a8-int8", "t4") == "native"  # Turing added INT8
    assert status("fp16", "v100") == "native"  # Volta: FP16 tensor cores


def test_engine_rules():
    # vLLM refuses bfloat16 below compute capability 8.0 and FP8 Marlin below 8.0.
    assert status("bf16", "t4", "vllm") == "unsupported"
    assert "8.0" in support(get_format("bf16"), get_accelerator("t4"), "vllm").reason
    assert status("fp8", "a100-sxm-80gb", "vllm") == "emulated"
    assert status("fp8", "t4", "vllm") == "unsupported"
    assert status("fp8", "rtx-4090", "llama.cpp") == "unsupported"
    assert status("int4-awq", "rtx-4090", "llama.cpp") == "unsupported"
    assert status("q4_k_m", "h100-sxm", "trtllm") == "unsupported"


@pytest.mark.parametrize("name,bits", [("q8_0", 8.5), ("q4_0", 4.5), ("q6_k", 6.5625), ("q4_k_m", 4.84)])
def test_gguf_bits(name, bits):
    # ggml block layouts (Q8_0 34 B/32, Q4_0 18 B/32, Q6_K 210 B/256); llama.cpp quantize README (Q4_K_M).
    assert get_format(name).weight_bits == pytest.approx(bits)


def test_every_format_has_source():
    for f in formats().values():
        assert f.source and f.as_of


def test_an_engine_that_does_not_run_on_the_gpu_gives_one_answer_everywhere():
    """Issue 23: `formats --gpu mi300x --engine trtllm` listed every format native while `estimate` refused
    TensorRT-LLM on AMD. Both now take the engine's one rule (EngineProfile.refusal_on)."""
    import json

    from typer.testing import CliRunner

    from vazao.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["formats", "--gpu", "mi300x", "--engine", "trtllm", "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)["formats"]
    refused = runner.invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "mi300x", "--engine", "trtllm"])
    assert refused.exit_code == 2
    why = refused.stderr.strip().removeprefix("error: ")
    assert rows and all(r["status"] == "unsupported" and r["reason"] == why for r in rows), why
    ok = json.loads(runner.invoke(app, ["formats", "--gpu", "mi300x", "--engine", "vllm", "--json"]).stdout)
    assert any(r["status"] == "native" for r in ok["formats"])
