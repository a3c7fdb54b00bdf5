"""The command that launches a planned deployment, flag by flag with why, for vLLM, SGLang, llama.cpp's
llama-server and TensorRT-LLM's trtllm-serve; and the `vazao bench` command that checks it.

Flag names were checked against each engine's own documentation:
| engine | command | source |
|---|---|---|
| vLLM | `vllm serve` | docs.vllm.ai "Engine Arguments" (vllm/engine/arg_utils.py), v0.10 |
| SGLang | `python -m sglang.launch_server` | sgl-project/sglang python/sglang/srt/server_args.py, v0.4 |
| llama.cpp | `llama-server` | ggml-org/llama.cpp tools/server/README.md (b5xxx, 2025) |
| TensorRT-LLM | `trtllm-serve serve` | nvidia.github.io/TensorRT-LLM commands/trtllm-serve (v1.0) |

A format an engine takes only as a pre-quantized checkpoint is said so in the flag list (the command
cannot quantize it); a format an engine does not run is refused with one line."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from functools import cache

from vazao.errors import VazaoError

SOURCES = {
    "vllm": "docs.vllm.ai Engine Arguments (vllm/engine/arg_utils.py), v0.10",
    "sglang": "sgl-project/sglang python/sglang/srt/server_args.py, v0.4",
    "llama.cpp": "ggml-org/llama.cpp tools/server/README.md, 2025",
    "trtllm": "TensorRT-LLM docs, commands/trtllm-serve, v1.0",
}


@dataclass(frozen=True)
class LaunchSpec:
    model: str  # catalog name, HF id or local path
    fmt: str  # vazao format name
    kv: str  # vazao KV format name
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    max_model_len: int = 8192
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    gpu_memory_utilization: float = 0.9
    prefix_caching: bool = True
    port: int = 8000


@dataclass(frozen=True)
class EngineCommand:
    engine: str
    program: tuple[str, ...]  # the executable and its subcommand; the flags follow
    argv: tuple[str, ...]
    flags: tuple[tuple[str, str, str], ...]  # (flag, value, why)
    notes: tuple[str, ...] = field(default=())
    source: str = ""

    @property
    def shell(self) -> str:
        return shlex.join(self.argv)

    def to_json(self) -> dict:
        return {"engine": self.engine, "argv": list(self.argv), "shell": self.shell,
                "flags": [{"flag": f, "value": v, "why": w} for f, v, w in self.flags], "notes": list(self.notes),
                "source": self.source}


@cache
def _aliases() -> dict[str, str]:
    from vazao.catalog._load import load_yaml

    out = {}
    for m in load_yaml("models.yaml")["models"]:
        repo = next((a for a in m.get("aliases") or () if "/" in a), None)
        if repo:
            out[m["name"]] = repo
    return out


def model_id(model: str) -> str:
    """The Hugging Face repository a catalog model comes from (its config.json's), else the name as given."""
    return _aliases().get(model, model)


class _Args:
    def __init__(self, *head: str) -> None:
        self.program = tuple(head)
        self.argv = list(head)
        self.flags: list[tuple[str, str, str]] = []
        self.notes: list[str] = []

    def add(self, flag: str, value: object | None, why: str) -> None:
        self.argv.append(flag)
        if value is not None:
            self.argv.append(str(value))
        self.flags.append((flag, "" if value is None else str(value), why))


GGUF = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k")


def _parallel(a: _Args, s: LaunchSpec, tp_flag: str, pp_flag: str, dp_flag: str | None) -> None:
    if s.tp > 1:
        a.add(tp_flag, s.tp, "GPUs each layer is split over (tensor parallel)")
    if s.pp > 1:
        a.add(pp_flag, s.pp, "pipeline stages (layers split over GPUs)")
    if s.replicas > 1 and dp_flag:
        a.add(dp_flag, s.replicas, "data-parallel replicas behind one endpoint")


def _vllm(s: LaunchSpec) -> _Args:
    a = _Args("vllm", "serve", model_id(s.model))
    if s.fmt in GGUF:
        raise VazaoError(f"vLLM: {s.fmt} is a GGUF quant; serve it with llama.cpp, or pick int4-awq / int4-gptq")
    dtype = {"fp16": "float16"}.get(s.fmt, "bfloat16")
    a.add("--dtype", dtype, "activations and unquantized weights in this 16-bit type")
    if s.fmt == "fp8":
        a.add("--quantization", "fp8", "FP8 weights quantized at load from the 16-bit checkpoint (omit for an "
                                       "FP8 checkpoint: its config says so)")
    elif s.fmt in ("int4-awq", "int4-gptq", "w8a8-int8", "nvfp4", "mxfp4", "int8-wo"):
        a.notes.append(f"{s.fmt}: point the model at a pre-quantized {s.fmt} checkpoint; vLLM reads the method "
                       "from its config.json")
    _parallel(a, s, "--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size")
    if s.kv == "fp8":
        a.add("--kv-cache-dtype", "fp8", "KV cache in FP8: twice the sequences in the same memory")
    a.add("--max-model-len", s.max_model_len, "longest prompt + answer a request may have")
    a.add("--max-num-seqs", s.max_num_seqs, "most sequences per step: the batch that meets the TPOT limit")
    a.add("--max-num-batched-tokens", s.max_num_batched_tokens, "tokens per step (chunked prefill's budget)")
    a.add("--gpu-memory-utilization", s.gpu_memory_utilization, "share of each GPU's memory vLLM may use")
    if s.prefix_caching:
        a.add("--enable-prefix-caching", None, "reuse the KV of shared prompt prefixes")
    a.add("--port", s.port, "HTTP port of the OpenAI-compatible server")
    return a


def _sglang(s: LaunchSpec) -> _Args:
    a = _Args("python", "-m", "sglang.launch_server")
    a.add("--model-path", model_id(s.model), "the checkpoint (Hugging Face id or local path)")
    if s.fmt in GGUF:
        raise VazaoError(f"SGLang: {s.fmt} is a GGUF quant; serve it with llama.cpp")
    if s.fmt == "fp8":
        a.add("--quantization", "fp8", "FP8 weights quantized at load (omit for an FP8 checkpoint)")
    elif s.fmt not in ("bf16", "fp16"):
        a.notes.append(f"{s.fmt}: use a pre-quantized checkpoint; SGLang reads the method from its config.json")
    _parallel(a, s, "--tp-size", "--pp-size", "--dp-size")
    if s.kv == "fp8":
        a.add("--kv-cache-dtype", "fp8_e4m3", "KV cache in FP8")
    a.add("--context-length", s.max_model_len, "longest prompt + answer")
    a.add("--max-running-requests", s.max_num_seqs, "most sequences in a batch: the one that meets the TPOT limit")
    a.add("--chunked-prefill-size", s.max_num_batched_tokens, "prompt tokens per step")
    a.add("--mem-fraction-static", s.gpu_memory_utilization, "share of GPU memory for weights and KV")
    if not s.prefix_caching:
        a.add("--disable-radix-cache", None, "no prefix reuse (on by default)")
    a.add("--port", s.port, "HTTP port")
    return a


def _llama_cpp(s: LaunchSpec) -> _Args:
    if s.fmt not in GGUF and s.fmt not in ("fp16", "bf16"):
        raise VazaoError(f"llama.cpp serves GGUF files: {s.fmt} has no GGUF type; use q8_0 or q4_k_m")
    if s.tp > 1:
        raise VazaoError(f"llama.cpp: tp {s.tp} has no equivalent here; it splits a model over GPUs by layer "
                         "(pp), which is what the planner searches for it")
    a = _Args("llama-server")
    a.add("-m", f"{model_id(s.model).split('/')[-1]}-{s.fmt.upper()}.gguf",
          "a GGUF file of the model in this format (convert_hf_to_gguf.py, then llama-quantize)")
    a.add("-ngl", 999, "every layer on the GPU(s)")
    a.add("-c", s.max_model_len * s.max_num_seqs, "context for all slots together: per-slot length × slots")
    a.add("-np", s.max_num_seqs, "parallel slots (sequences decoded together)")
    a.add("-b", 2048, "logical batch: prompt tokens per call")
    a.add("-ub", 512, "physical batch: prompt tokens per step")
    if s.pp > 1:
        a.add("--split-mode", "layer", f"layers split over {s.pp} GPUs (a pipeline of micro-batches)")
    if s.kv in ("fp8", "q8_0", "int8"):
        a.add("-ctk", "q8_0", "K cache in 8 bits")
        a.add("-ctv", "q8_0", "V cache in 8 bits (needs flash attention)")
        a.add("-fa", None, "flash attention (required for a quantized V cache)")
    a.add("--port", s.port, "HTTP port")
    if s.replicas > 1:
        a.notes.append(f"{s.replicas} replicas: run one llama-server per GPU set (CUDA_VISIBLE_DEVICES) on ports "
                       f"{s.port}…{s.port + s.replicas - 1}, behind a load balancer")
    return a


def _trtllm(s: LaunchSpec) -> _Args:
    if s.fmt in GGUF:
        raise VazaoError(f"TensorRT-LLM: {s.fmt} is a GGUF quant; serve it with llama.cpp")
    a = _Args("trtllm-serve", "serve", model_id(s.model))
    if s.fmt not in ("bf16", "fp16"):
        a.notes.append(f"{s.fmt}: use a ModelOpt {s.fmt.upper()} checkpoint (e.g. nvidia/<model>-{s.fmt.upper()}); "
                       "its KV cache follows the checkpoint (FP8 for FP8/NVFP4)")
    a.add("--backend", "pytorch", "the PyTorch flow (no engine build)")
    _parallel(a, s, "--tp_size", "--pp_size", None)
    a.add("--max_batch_size", s.max_num_seqs, "most sequences per step: the batch that meets the TPOT limit")
    a.add("--max_num_tokens", s.max_num_batched_tokens, "tokens per step")
    a.add("--max_seq_len", s.max_model_len, "longest prompt + answer")
    a.add("--kv_cache_free_gpu_memory_fraction", s.gpu_memory_utilization,
          "share of the memory left after the weights for the KV cache")
    a.add("--port", s.port, "HTTP port")
    if s.replicas > 1:
        a.notes.append(f"{s.replicas} replicas: one trtllm-serve per GPU set (CUDA_VISIBLE_DEVICES), ports "
                       f"{s.port}…{s.port + s.replicas - 1}")
    return a


BUILDERS = {"vllm": _vllm, "sglang": _sglang, "llama.cpp": _llama_cpp, "trtllm": _trtllm}


def launch_command(engine: str, spec: LaunchSpec) -> EngineCommand:
    from vazao.physics.profiles import engine_key

    key = engine_key(engine)
    if key not in BUILDERS:
        raise VazaoError(f"no launch command for engine {engine!r} (known: {', '.join(BUILDERS)})")
    a = BUILDERS[key](spec)
    return EngineCommand(key, a.program, tuple(a.argv), tuple(a.flags), tuple(a.notes), SOURCES[key])


def bench_command(url: str, workload: str, slo: dict, *, rate: float | None = None,
                  concurrency: int | None = None, requests: int = 500) -> str:
    """`vazao bench` on the running deployment, at the planned traffic and SLO."""
    argv = ["vazao", "bench", url, "--workload", workload, "--requests", str(requests)]
    if rate is not None:
        argv += ["--rate", f"{rate:g}"]
    if concurrency is not None:
        argv += ["--concurrency", str(concurrency)]
    if slo:
        argv += ["--slo", ",".join(f"{k}={v * 1e3:g}ms" for k, v in slo.items())]
    return shlex.join(argv)
