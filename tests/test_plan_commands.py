"""Launch commands for a planned deployment (plan/commands.py): exact argv per engine, a reason for every
flag, refusals for formats an engine does not serve, and `vazao plan --emit`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.errors import VazaoError
from vazao.plan.commands import LaunchSpec, bench_command, launch_command, model_id

SPEC = LaunchSpec(model="llama-3.1-70b", fmt="fp8", kv="fp8", tp=4, replicas=2, max_model_len=4096,
                  max_num_seqs=160, max_num_batched_tokens=8192, gpu_memory_utilization=0.9)


def test_vllm_argv():
    # Issue 20: the instruct checkpoint, and for FP8 its published FP8 release (no --quantization: the
    # checkpoint's config names the method); catalog/data/checkpoints.yaml cites the model card
    c = launch_command("vllm", SPEC)
    assert c.argv == ("vllm", "serve", "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8", "--dtype", "bfloat16",
                      "--tensor-parallel-size", "4", "--data-parallel-size", "2", "--kv-cache-dtype", "fp8",
                      "--max-model-len", "4096", "--max-num-seqs", "160", "--max-num-batched-tokens", "8192",
                      "--gpu-memory-utilization", "0.9", "--enable-prefix-caching", "--port", "8000")


def test_every_engine_explains_every_flag_and_names_its_source():
    for engine in ("vllm", "sglang", "trtllm", "llama.cpp"):
        spec = SPEC if engine != "llama.cpp" else LaunchSpec(model="llama-3.1-8b", fmt="q4_k_m", kv="fp16", pp=2)
        c = launch_command(engine, spec)
        assert c.source and all(why for _, _, why in c.flags)
        flags = [f for f in c.argv[len(c.program):] if f.startswith("-")]
        assert flags == [f for f, _, _ in c.flags]  # nothing on the command line goes unexplained
    sg = launch_command("sglang", SPEC).argv
    assert sg[:5] == ("python", "-m", "sglang.launch_server", "--model-path",
                      "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8")
    assert "--max-running-requests" in sg and "--dp-size" in sg
    trt = launch_command("trtllm", SPEC).argv
    assert trt[:3] == ("trtllm-serve", "serve", "nvidia/Llama-3.1-70B-Instruct-FP8")  # the ModelOpt release
    assert "--kv_cache_free_gpu_memory_fraction" in trt
    lc = launch_command("llama.cpp", LaunchSpec(model="llama-3.1-8b", fmt="q4_k_m", kv="fp16", pp=2,
                                                max_model_len=4096, max_num_seqs=4))
    assert lc.argv[lc.argv.index("-c") + 1] == "16384"  # llama-server's -c is shared by its slots
    assert "--split-mode" in lc.argv


@pytest.mark.parametrize("engine,fmt,tp", [("llama.cpp", "int4-awq", 1), ("vllm", "q4_k_m", 1),
                                           ("trtllm", "q4_k_m", 1), ("llama.cpp", "q4_k_m", 2)])
def test_refusals_are_one_line(engine, fmt, tp):
    with pytest.raises(VazaoError):
        launch_command(engine, LaunchSpec(model="llama-3.1-8b", fmt=fmt, kv="fp16", tp=tp))


def test_model_ids_and_the_bench_command():
    assert model_id("llama-3.1-8b") == "meta-llama/Llama-3.1-8B"
    assert model_id("./my-model") == "./my-model"
    assert bench_command("http://h:8000/v1", "chat", {"ttft_p95": 0.5}, rate=20) == (
        "vazao bench http://h:8000/v1 --workload chat --requests 500 --rate 20 --slo ttft_p95=500ms")


def test_plan_emit_prints_the_winners_command():
    r = CliRunner().invoke(app, ["plan", "--models", "llama-3.1-8b", "--gpus", "h100-sxm", "--formats", "fp8",
                                 "--traffic", "4/s", "--requests", "80", "--workers", "1", "--emit", "sglang",
                                 "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["launch"]["engine"] == "sglang" and d["launch"]["shell"].startswith("python -m sglang.launch_server")
    assert d["bench_command"].startswith("vazao bench ") and "--rate 4" in d["bench_command"]
    assert d["candidates"][0]["command"].startswith("vllm serve ")


def test_plan_emit_on_the_console_does_not_ask_for_emit_again():
    args = ["plan", "--models", "llama-3.1-8b", "--gpus", "h100-sxm", "--formats", "fp8", "--traffic", "4/s",
            "--requests", "80", "--workers", "1", "-q"]
    plain = CliRunner().invoke(app, args)
    emitted = CliRunner().invoke(app, [*args, "--emit", "vllm"])
    assert plain.exit_code == 0 and emitted.exit_code == 0, (plain.output, emitted.output)
    assert "add --emit" in plain.stdout  # without it, the hint names the flag
    assert "add --emit" not in emitted.stdout and "next: --json for every candidate" in emitted.stdout
    assert "vllm serve " in emitted.stdout


def test_a_t4_gets_half_and_a_quantized_v_cache_gets_flash_attention_on():
    """vLLM refuses --dtype bfloat16 below compute capability 8.0 (a T4 is 7.5; vllm/platforms/cuda.py:681), and
    llama.cpp's -fa takes on|off|auto (a bare -fa swallowed --port): checked in tests/test_engine_flags.py."""
    t4 = LaunchSpec(model="llama-3.1-8b", fmt="int4-awq", kv="fp16", compute_capability="7.5")
    assert launch_command("vllm", t4).argv[3:] == (
        "--dtype", "half", "--max-model-len", "8192", "--max-num-seqs", "256", "--max-num-batched-tokens", "8192",
        "--gpu-memory-utilization", "0.9", "--enable-prefix-caching", "--port", "8000")
    lc = launch_command("llama.cpp", LaunchSpec(model="llama-3.1-8b", fmt="q4_k_m", kv="fp8", max_num_seqs=4))
    assert lc.argv[-8:] == ("-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on", "--port", "8000")


def test_llama_cpp_refuses_tensor_parallelism_and_formats_without_a_gguf_type():
    # llama-server splits a model over GPUs by layer only (--split-mode layer, the planner's pp for it)
    with pytest.raises(VazaoError, match="tp 2 has no equivalent"):
        launch_command("llama.cpp", LaunchSpec(model="llama-3.1-8b", fmt="q8_0", kv="fp16", tp=2))
    with pytest.raises(VazaoError, match="fp8 has no GGUF type"):
        launch_command("llama.cpp", LaunchSpec(model="llama-3.1-8b", fmt="fp8", kv="fp16"))


def test_llama_cpp_command_says_its_figures_are_the_calibrated_builds():
    """The llama.cpp profile is calibrated on May 2024 llama-bench runs (unfused attention; on NVIDIA, quantized
    weights unpacked to F16 before batched GEMMs); the command launches a current llama-server. It says so,
    naming the unpacking only where the weights are quantized."""
    q4 = launch_command("llama.cpp", LaunchSpec(model="llama-3.1-8b", fmt="q4_k_m", kv="fp16"))
    f16 = launch_command("llama.cpp", LaunchSpec(model="llama-3.1-8b", fmt="fp16", kv="fp16"))
    (n4,) = [n for n in q4.notes if "calibrated llama.cpp builds" in n]
    (n16,) = [n for n in f16.notes if "calibrated llama.cpp builds" in n]
    assert "unpack quantized weights" in n4 and "unpack" not in n16 and "vazao bench" in n16


def test_trtllm_chunks_prompts_longer_than_its_step_budget():
    """TensorRT-LLM's PyTorch backend refuses a prompt longer than --max_num_tokens unless chunked prefill is on
    (tensorrt_llm/llmapi/llm.py, LLM._check_arguments; off by default, LlmArgs.enable_chunked_prefill), and the
    trtllm profile vazao predicts with chunks prompts: a 16k context over an 8,192-token step budget must say so."""
    from vazao.catalog.engine_flags import check_command
    from vazao.physics.profiles import get_engine

    assert get_engine("trtllm").chunked_prefill  # what the prediction assumes, and so what the command must set
    spec = LaunchSpec(model="llama-3.1-8b", fmt="bf16", kv="fp16", max_model_len=16384, max_num_batched_tokens=8192)
    c = launch_command("trtllm", spec)
    argv = c.argv
    assert int(argv[argv.index("--max_seq_len") + 1]) > int(argv[argv.index("--max_num_tokens") + 1])
    assert "--enable_chunked_prefill" in argv and argv[argv.index("--enable_chunked_prefill") + 1].startswith("--")
    check_command(c, "9.0")  # a flag trtllm-serve defines, taking no value


@pytest.mark.parametrize("engine, flag", [("vllm", "--trust-remote-code"), ("sglang", "--trust-remote-code"),
                                          ("trtllm", "--trust_remote_code")])
def test_a_checkpoint_with_its_own_code_is_trusted(engine, flag):
    """moonshotai/Kimi-K2-Instruct's tokenizer is its own code (tokenization_kimi.py in auto_map): vLLM, SGLang and
    trtllm-serve refuse to load it unless told to trust it. A checkpoint transformers reads natively gets no flag."""
    from vazao.catalog.engine_flags import check_command

    spec = LaunchSpec(model="kimi-k2", fmt="fp8", kv="fp16", tp=8, max_model_len=8192, max_num_seqs=64,
                      max_num_batched_tokens=8192)
    c = launch_command(engine, spec)
    assert "moonshotai/Kimi-K2-Instruct" in c.argv and flag in c.argv
    check_command(c, "9.0")  # the engine defines the flag, and it takes no value
    glm = launch_command(engine, LaunchSpec(model="glm-4.5", fmt="fp8", kv="fp16", tp=8, max_model_len=8192,
                                            max_num_seqs=64, max_num_batched_tokens=8192))
    assert flag not in glm.argv


def test_a_local_quantization_of_a_checkpoint_with_its_own_code_is_trusted_too():
    """No NVFP4 Kimi K2 is listed: the command names a folder to quantize the original into, which carries the
    original's tokenizer code, so trtllm-serve still needs --trust_remote_code."""
    c = launch_command("trtllm", LaunchSpec(model="kimi-k2", fmt="nvfp4", kv="fp8", tp=8, max_model_len=8192,
                                             max_num_seqs=64, max_num_batched_tokens=8192))
    assert c.argv[2].startswith("./") and "--trust_remote_code" in c.argv


# Qwen/Qwen3-235B-A22B-FP8's config.json: quantization_config weight_block_size [128, 128]; moe_intermediate_size 1536.
# Split 8 ways an expert is 192 wide, not a whole number of 128-wide blocks, and vLLM and SGLang stop at load
# ("The output_size of gate's and up's weight = 192 is not divisible by weight quantization block_n = 128":
# vllm-project/vllm#54178 for the same failure, sgl-project/sglang#10852). The serving file agrees: SGLang's
# Qwen3-235B FP8 rows ran the experts 2 and 4 ways only, TensorRT-LLM's at tp 8 with moe_ep=8.
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_block_fp8_checkpoint_split_into_partial_blocks_is_refused(engine):
    spec = LaunchSpec(model="qwen3-235b-a22b", fmt="fp8", kv="fp16", tp=8)
    with pytest.raises(VazaoError, match="192 weights a GPU.*128-wide"):
        launch_command(engine, spec)
    assert launch_command(engine, LaunchSpec(model="qwen3-235b-a22b", fmt="fp8", kv="fp16", tp=4)).argv
    # DeepSeek-V3's 2,048-wide experts split 8 ways are 256 = 2 blocks: it loads
    assert launch_command(engine, LaunchSpec(model="deepseek-v3", fmt="fp8", kv="fp16", tp=8)).argv
    # the 16-bit release has no scale blocks at all
    assert launch_command(engine, LaunchSpec(model="qwen3-235b-a22b", fmt="bf16", kv="fp16", tp=8)).argv


def test_plan_prunes_what_the_engine_would_refuse():
    runner = CliRunner()
    res = runner.invoke(app, ["plan", "-m", "qwen3-235b-a22b", "-g", "h200", "-f", "fp8", "--traffic", "2/s",
                              "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    refused = [e for e in doc["pruned"]["examples"] if e["reason"] == "refused"]
    assert refused and "tp8" in refused[0]["deployment"] and "128-wide" in refused[0]["detail"]
    assert all(c["tp"] < 8 for c in doc["candidates"])  # no candidate names a command that would not start


def test_a_16bit_plan_of_a_model_with_no_listed_checkpoint_serves_its_own_repository():
    """meta-llama/Meta-Llama-3-8B (the repository the catalog reads Llama 3 8B's config.json from) holds its bf16
    weights: a bf16 command names it, not a local folder to 'quantize' into that would not exist. A model the
    catalog lists only quantized (DeepSeek-V3 in FP8) still needs its weights converted first, and says so."""
    for engine in ("vllm", "sglang", "trtllm"):
        c = launch_command(engine, LaunchSpec(model="llama-3-8b", fmt="bf16", kv="fp16", max_model_len=8192))
        assert "meta-llama/Meta-Llama-3-8B" in c.argv and not any(a.startswith("./") for a in c.argv), engine
        assert not any("quantize" in n for n in c.notes), engine
    ds = launch_command("vllm", LaunchSpec(model="deepseek-v3", fmt="bf16", kv="fp16", tp=8, max_model_len=8192))
    assert ds.argv[2] == "./DeepSeek-V3-bf16"
    assert any("deepseek-ai/DeepSeek-V3 is fp8): convert its weights to bf16" in n for n in ds.notes)


def test_a_command_that_reads_a_file_is_one_snippet_with_it():
    import subprocess
    import tempfile

    c = launch_command("trtllm", LaunchSpec(model="llama-3.1-8b", fmt="bf16", kv="fp8", max_model_len=8192))
    ((name, text),) = c.files
    assert c.script.endswith(c.shell) and c.script != c.shell
    with tempfile.TemporaryDirectory() as d:  # the snippet's here-document writes the file exactly
        subprocess.run(["sh", "-c", c.script.rsplit("\n", 1)[0]], cwd=d, check=True)
        with open(f"{d}/{name}", encoding="utf-8") as fh:
            assert fh.read() == text
    assert launch_command("vllm", SPEC).script == launch_command("vllm", SPEC).shell
