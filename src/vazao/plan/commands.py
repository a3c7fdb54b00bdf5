"""The command that launches a planned deployment, flag by flag with why, for vLLM, SGLang, llama.cpp's
llama-server and TensorRT-LLM's trtllm-serve; and the `vazao bench` command that checks it.

Every command is checked before it is returned against the engine's own argument definitions and start-up
rules (catalog/data/engine_flags.yaml, read from these files; catalog/engine_flags.py parses the argv the way
the engine does), so a command the engine would refuse is refused here, in one line:
| engine | command | file read | commit |
|---|---|---|---|
| vLLM | `vllm serve` | vllm-project/vllm vllm/engine/arg_utils.py | 62d4bc3c7 (v0.34.0) |
| SGLang | `python -m sglang.launch_server` | sgl-project/sglang python/sglang/srt/server_args.py | tag v0.5.23 |
| llama.cpp | `llama-server` | ggml-org/llama.cpp common/arg.cpp | 0c1e57098bba (llama-cpp-python 0.3.36) |
| TensorRT-LLM | `trtllm-serve serve` | NVIDIA/TensorRT-LLM tensorrt_llm/commands/serve.py | 4c05a74891e4 |

A format an engine takes only as a pre-quantized checkpoint is said so in the flag list (the command
cannot quantize it); a format an engine does not run is refused with one line.

Disaggregated prefill/decode (LaunchSpec.role "prefill" or "decode": P prefill and D decode instances of one
model/format/tp, each prompt's KV cache moved from a prefill to a decode instance, one endpoint in front):
- SGLang: --disaggregation-mode, --disaggregation-transfer-backend mooncake, --disaggregation-bootstrap-port
  (prefill); the front end is router_command's `python -m sglang_router.launch_router --pd-disaggregation`
  (sglang-router 0.3.2).
- vLLM: --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}' (kv_consumer on decode);
  it ships no front end: the notes name the example proxy script its docs use.
- TensorRT-LLM and llama.cpp: refused in one line.
The router's flags are checked like an engine's (engine_flags.yaml `front_ends`)."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

from vazao.catalog.engine_flags import cc_tuple, check_command, get_engine_flags
from vazao.errors import VazaoError

# The file and commit each engine's flags were read from (EngineFlags.cite; a test keeps the two equal)
SOURCES = {
    "vllm": "vllm-project/vllm vllm/engine/arg_utils.py @ 62d4bc3c7 (v0.34.0)",
    "sglang": "sgl-project/sglang python/sglang/srt/server_args.py @ v0.5.23",
    "llama.cpp": "ggml-org/llama.cpp common/arg.cpp @ 0c1e57098bba (llama-cpp-python 0.3.36 vendor/llama.cpp)",
    "trtllm": "NVIDIA/TensorRT-LLM tensorrt_llm/commands/serve.py @ 4c05a74891e4",
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
    compute_capability: str | None = None  # the GPU's ("7.5" for a T4): picks --dtype and checks start-up rules
    role: str | None = None  # None: an ordinary instance; "prefill" / "decode": one of a disaggregated deployment
    # the port of this instance's KV handshake, unique per instance on a host: SGLang's prefill bootstrap server
    # (--disaggregation-bootstrap-port, default 8998; a decode instance ignores it), vLLM's NIXL side channel
    # (the VLLM_NIXL_SIDE_CHANNEL_PORT environment variable, default 5600, said in the notes)
    handshake_port: int | None = None


@dataclass(frozen=True)
class EngineCommand:
    engine: str
    program: tuple[str, ...]  # the executable and its subcommand; the flags follow
    argv: tuple[str, ...]
    flags: tuple[tuple[str, str, str], ...]  # (flag, value, why)
    notes: tuple[str, ...] = field(default=())
    source: str = ""
    # (flag, value) the checkpoint sets itself (a pre-quantized checkpoint's config.json names its method):
    # checked against the engine's start-up rules as if given
    implied: tuple[tuple[str, str], ...] = ()
    # (name, text) of the files the command reads, named relative to the folder it runs in (TensorRT-LLM's
    # --extra_llm_api_options YAML): written beside it by --emit-dir, printed with it by --emit
    files: tuple[tuple[str, str], ...] = ()

    @property
    def shell(self) -> str:
        return shlex.join(self.argv)

    @property
    def script(self) -> str:
        """The command as one copy-and-paste shell snippet: the files it reads written first (here-documents),
        then the command itself."""
        heredocs = [f"cat > {shlex.quote(name)} <<'VAZAO_EOF'\n{text.rstrip(chr(10))}\nVAZAO_EOF"
                    for name, text in self.files]
        return "\n".join([*heredocs, self.shell])

    def to_json(self) -> dict:
        return {"engine": self.engine, "argv": list(self.argv), "shell": self.shell,
                "flags": [{"flag": f, "value": v, "why": w} for f, v, w in self.flags], "notes": list(self.notes),
                "source": self.source, "files": [{"name": n, "text": t} for n, t in self.files]}


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
    """The Hugging Face repository a catalog model's architecture comes from (its config.json's), else the
    name as given. What a command serves is checkpoint(): the instruct release in the planned format."""
    return _aliases().get(model, model)


# how to make a pre-quantized checkpoint the catalog does not list (the command then names a local folder)
QUANTIZERS = {
    "int4-awq": "AutoAWQ or llm-compressor (W4A16, AWQ)", "int4-gptq": "llm-compressor or GPTQModel (W4A16, GPTQ)",
    "w8a8-int8": "llm-compressor (W8A8 INT8)", "fp8": "llm-compressor (FP8) or NVIDIA ModelOpt",
    "nvfp4": "NVIDIA ModelOpt (NVFP4)", "mxfp4": "NVIDIA ModelOpt (MXFP4)", "int8-wo": "llm-compressor (W8A16)",
}


@dataclass(frozen=True)
class ModelRef:
    """What a command names as its model, from the checkpoint catalog (catalog/data/checkpoints.yaml)."""

    ref: str  # a Hugging Face repository, or a local path the user makes
    prequantized: bool  # its weights are already in the planned format (no quantize-at-load flag)
    hf_gguf: str | None = None  # llama.cpp: `repo:QUANT` for -hf
    note: str | None = None
    remote_code: bool = False  # the repository's own tokenizer/model code: the engine must be told to trust it
    weight_block: int | None = None  # its block-wise FP8 scale block (checkpoints.yaml weight_block)


def checkpoint(model: str, fmt: str, engine: str) -> ModelRef:
    """The checkpoint a deployment of `model` in `fmt` on `engine` serves: the catalog's instruct release in
    that format; for FP8 on vLLM/SGLang without one, the 16-bit release quantized at load; else a local
    folder to quantize into, named with how. A model that is not a catalog name is served as given."""
    from vazao.catalog.checkpoints import checkpoint_for, checkpoints_of

    if model not in _aliases():
        return ModelRef(model, fmt not in ("bf16", "fp16"))
    c = checkpoint_for(model, fmt, engine)
    if c is not None and (c.fmt == fmt or (fmt == "fp16" and c.fmt == "bf16")):
        hf = f"{c.repo}:{fmt.upper()}" if engine == "llama.cpp" else None
        return ModelRef(c.repo, fmt not in ("bf16", "fp16"), hf, remote_code=c.remote_code,
                        weight_block=c.weight_block)
    # a 16-bit release quantized at load, or a folder a quantizer writes (it copies the tokenizer and config,
    # auto_map included), runs the same code as the model's published checkpoints
    own_code = any(p.remote_code for p in checkpoints_of(model))
    base = checkpoint_for(model, "bf16", None if engine == "llama.cpp" else engine)
    base_repo = base.repo if base is not None else model_id(model)
    published = {p.repo: p.fmt for p in checkpoints_of(model)}
    if fmt in ("bf16", "fp16") and engine != "llama.cpp" and published.get(base_repo, "bf16") in ("bf16", "fp16"):
        # the repository the catalog reads the architecture from holds the 16-bit weights themselves (it lists
        # no other format for it): nothing to quantize, and a local folder named for it would not exist
        return ModelRef(base_repo, False, remote_code=own_code)
    if fmt == "fp8" and engine in ("vllm", "sglang"):
        return ModelRef(base_repo, False, remote_code=own_code)
    if engine == "llama.cpp":
        local = f"{base_repo.split('/')[-1]}-{fmt.upper()}.gguf"
        return ModelRef(local, True, None, f"no published {fmt} GGUF of {model} in the catalog: convert {base_repo} "
                                           "with convert_hf_to_gguf.py, then llama-quantize, into " + local)
    local = f"./{base_repo.split('/')[-1]}-{fmt}"
    if fmt in ("bf16", "fp16"):  # published only quantized (DeepSeek-V3 in FP8, gpt-oss in MXFP4)
        return ModelRef(local, False, None, f"no published {fmt} checkpoint of {model} in the catalog "
                                            f"({base_repo} is {published.get(base_repo, 'quantized')}): convert its "
                                            f"weights to {fmt} into {local}", remote_code=own_code)
    how = QUANTIZERS.get(fmt, "a quantizer for this format")
    return ModelRef(local, True, None, f"no published {fmt} checkpoint of {model} for {engine} in the catalog: "
                                       f"quantize {base_repo} with {how} into {local}", remote_code=own_code)


_REMOTE_CODE_WHY = "the checkpoint's tokenizer or model is its own code: without this the engine refuses to load it"


def _partial_blocks(m: ModelRef, model: str, tp: int) -> str | None:
    """Why the checkpoint `m` of `model` would not load split `tp` ways (its shards not whole scale blocks)."""
    from vazao.catalog.checkpoints import shard_refusal as refusal

    why = refusal(model, tp, m.weight_block) if m.weight_block else None
    return f"{m.ref} at tp {tp}: {why}" if why else None


def shard_refusal(model: str, fmt: str, engine: str, tp: int) -> str | None:
    """Why `engine` would refuse the checkpoint a command names for `model` in `fmt` split `tp` ways (a
    block-quantized checkpoint whose shards are not whole scale blocks), or None. plan prunes such shapes."""
    from vazao.catalog.checkpoints import SAFETENSORS_ENGINES

    if engine not in SAFETENSORS_ENGINES:
        return None
    return _partial_blocks(checkpoint(model, fmt, engine), model, tp)


class _Args:
    def __init__(self, *head: str) -> None:
        self.program = tuple(head)
        self.argv = list(head)
        self.flags: list[tuple[str, str, str]] = []
        self.notes: list[str] = []
        self.implied: list[tuple[str, str]] = []
        self.files: list[tuple[str, str]] = []

    def add(self, flag: str, value: object | None, why: str) -> None:
        self.argv.append(flag)
        if value is not None:
            self.argv.append(str(value))
        self.flags.append((flag, "" if value is None else str(value), why))

    def add_values(self, flag: str, values: Sequence[object], why: str) -> None:
        """A flag that takes several values (the router's `--prefill URL BOOTSTRAP_PORT`)."""
        self.argv.append(flag)
        self.argv.extend(str(v) for v in values)
        self.flags.append((flag, " ".join(str(v) for v in values), why))


ROLES = ("prefill", "decode")


def _role(engine: str, s: LaunchSpec) -> str | None:
    if s.role is not None and s.role not in ROLES:
        raise VazaoError(f"{engine}: role {s.role!r}: expected prefill or decode (or none for an ordinary instance)")
    return s.role


GGUF = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k")


def _bf16_floor(engine: str, s: LaunchSpec) -> str | None:
    """The compute capability `engine` needs for bfloat16 when the GPU is below it, else None. Below it vLLM
    refuses --dtype bfloat16 and SGLang serves float16 whatever it is told (engine_flags.yaml's rules)."""
    floor = get_engine_flags(engine).min_cc("--dtype", "bfloat16")
    if s.compute_capability and floor and cc_tuple(s.compute_capability) < cc_tuple(floor):
        return floor
    return None


def _parallel(a: _Args, s: LaunchSpec, tp_flag: str, pp_flag: str, dp_flag: str | None) -> None:
    if s.tp > 1:
        a.add(tp_flag, s.tp, "GPUs each layer is split over (tensor parallel)")
    if s.pp > 1:
        a.add(pp_flag, s.pp, "pipeline stages (layers split over GPUs)")
    if s.replicas > 1 and dp_flag:
        a.add(dp_flag, s.replicas, "data-parallel replicas behind one endpoint")


def _vllm(s: LaunchSpec) -> _Args:
    if s.fmt in GGUF:
        raise VazaoError(f"vLLM: {s.fmt} is a GGUF quant; serve it with llama.cpp, or pick int4-awq / int4-gptq")
    m = checkpoint(s.model, s.fmt, "vllm")
    refused = _partial_blocks(m, s.model, s.tp)
    if refused:
        raise VazaoError(f"vLLM: {refused}")
    a = _Args("vllm", "serve", m.ref)
    if m.note:
        a.notes.append(m.note)
    if m.remote_code:
        a.add("--trust-remote-code", None, _REMOTE_CODE_WHY)
    floor = _bf16_floor("vllm", s)
    if floor:
        # what vLLM's own refusal suggests; it casts a bf16 checkpoint to float16 at load (with a warning), and
        # AWQ/GPTQ/FP8 kernels take float16 activations
        a.add("--dtype", "half", f"no bfloat16 below compute capability {floor}: activations in float16")
        if s.fmt == "bf16":
            a.notes.append(f"bf16 checkpoint served in float16 (cast at load): the GPU's compute capability "
                           f"{s.compute_capability} has no bfloat16")
    else:
        dtype = {"fp16": "float16"}.get(s.fmt, "bfloat16")
        a.add("--dtype", dtype, "activations and unquantized weights in this 16-bit type")
    if s.fmt == "fp8" and not m.prequantized:
        a.add("--quantization", "fp8", "FP8 weights quantized at load from the 16-bit checkpoint")
    elif s.fmt == "fp8":
        a.implied.append(("--quantization", "fp8"))
    _parallel(a, s, "--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size")
    if s.kv == "fp8":
        a.add("--kv-cache-dtype", "fp8", "KV cache in FP8: twice the sequences in the same memory")
    a.add("--max-model-len", s.max_model_len, "longest prompt + answer a request may have")
    a.add("--max-num-seqs", s.max_num_seqs, "most sequences per step: the batch that meets the TPOT limit")
    a.add("--max-num-batched-tokens", s.max_num_batched_tokens, "tokens per step (chunked prefill's budget)")
    a.add("--gpu-memory-utilization", s.gpu_memory_utilization, "share of each GPU's memory vLLM may use")
    if s.prefix_caching:
        a.add("--enable-prefix-caching", None, "reuse the KV of shared prompt prefixes")
    _vllm_role(a, s)
    a.add("--port", s.port, "HTTP port of the OpenAI-compatible server")
    return a


# vLLM v0.34.0's NixlConnector guide (docs/features/nixl_connector_usage.md:107, :122) starts the prefiller with
# kv_role kv_producer and the decoder with kv_consumer (KVRole, vllm/config/kv_transfer.py:11-13); NIXL moves
# the KV over UCX: NVLink (cuda_ipc) within a host, RDMA across hosts (same guide, lines 24-32 and 91)
VLLM_KV_CONNECTOR = "NixlConnector"
VLLM_KV_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}
VLLM_NIXL_SIDE_CHANNEL_PORT = 5600  # vllm/envs.py:242
VLLM_PROXY = "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py"  # in vLLM's source, not its wheel


def _vllm_role(a: _Args, s: LaunchSpec) -> None:
    role = _role("vLLM", s)
    if role is None:
        return
    cfg = json.dumps({"kv_connector": VLLM_KV_CONNECTOR, "kv_role": VLLM_KV_ROLES[role]}, separators=(",", ":"))
    what = "produces KV caches (prefill instance)" if role == "prefill" else "consumes KV caches (decode instance)"
    a.add("--kv-transfer-config", cfg, f"disaggregated {role}: NIXL moves each prompt's KV cache; this instance "
                                       f"{what}")
    port = s.handshake_port or VLLM_NIXL_SIDE_CHANNEL_PORT
    ports = f"ports {port}…{port + s.replicas - 1}, one per data-parallel rank" if s.replicas > 1 else "port"
    a.notes.append(f"{role} instance: start it with VLLM_NIXL_SIDE_CHANNEL_PORT={port} (its NIXL handshake {ports}, "
                   "unique per instance on a host; default 5600, vllm/envs.py:242) and, when prefill and decode run "
                   "on different hosts, VLLM_NIXL_SIDE_CHANNEL_HOST=<this host's address> (docs/features/"
                   "nixl_connector_usage.md:140-150); needs the nixl package (pip install nixl); prefill and decode "
                   "must use the same model, dtype and KV cache dtype (docs/features/nixl_connector_compatibility.md)")
    a.notes.append(f"front end: vLLM v0.34.0 ships no router program for prefill/decode; its guide "
                   f"(docs/features/nixl_connector_usage.md:127) uses the example script {VLLM_PROXY} from a vLLM "
                   f"source checkout: python {VLLM_PROXY} --port PORT --prefiller-hosts HOST... --prefiller-ports "
                   "PORT... --decoder-hosts HOST... --decoder-ports PORT... (not checked: an example, not a release)")


def _sglang(s: LaunchSpec) -> _Args:
    if s.fmt in GGUF:
        raise VazaoError(f"SGLang: {s.fmt} is a GGUF quant; serve it with llama.cpp")
    m = checkpoint(s.model, s.fmt, "sglang")
    refused = _partial_blocks(m, s.model, s.tp)
    if refused:
        raise VazaoError(f"SGLang: {refused}")
    a = _Args("python", "-m", "sglang.launch_server")
    a.add("--model-path", m.ref, "the checkpoint (Hugging Face id or local path); a pre-quantized one names "
                                 "its method in its config.json")
    if m.note:
        a.notes.append(m.note)
    if m.remote_code:
        a.add("--trust-remote-code", None, _REMOTE_CODE_WHY)
    if s.fmt == "fp8" and not m.prequantized:
        a.add("--quantization", "fp8", "FP8 weights quantized at load from the 16-bit checkpoint")
    elif s.fmt == "fp8":
        a.implied.append(("--quantization", "fp8"))
    floor = _bf16_floor("sglang", s)
    if floor:  # SGLang would switch to float16 itself here; saying so keeps the command what runs
        a.add("--dtype", "half", f"no bfloat16 below compute capability {floor}: activations in float16")
    _parallel(a, s, "--tp-size", "--pp-size", "--dp-size")
    if s.kv == "fp8":
        a.add("--kv-cache-dtype", "fp8_e4m3", "KV cache in FP8")
    a.add("--context-length", s.max_model_len, "longest prompt + answer")
    a.add("--max-running-requests", s.max_num_seqs, "most sequences in a batch: the one that meets the TPOT limit")
    a.add("--chunked-prefill-size", s.max_num_batched_tokens, "prompt tokens per step")
    a.add("--mem-fraction-static", s.gpu_memory_utilization, "share of GPU memory for weights and KV")
    if not s.prefix_caching:
        a.add("--disable-radix-cache", None, "no prefix reuse (on by default)")
    _sglang_role(a, s)
    a.add("--port", s.port, "HTTP port")
    return a


# SGLang's transfer backend default, Mooncake (python/sglang/srt/arg_groups/fields/disagg.py:65-71): RDMA between
# hosts, NVLink within one (its PD guide's NVLink settings); the prefill server's bootstrap port, 8998 (same
# file, :81-83), which the router is told per prefill server
SGLANG_TRANSFER_BACKEND = "mooncake"
SGLANG_BOOTSTRAP_PORT = 8998


def _sglang_role(a: _Args, s: LaunchSpec) -> None:
    role = _role("SGLang", s)
    if role is None:
        return
    a.add("--disaggregation-mode", role, f"disaggregated {role}: this server only runs {role}, the KV cache moves "
                                         "between prefill and decode servers")
    a.add("--disaggregation-transfer-backend", SGLANG_TRANSFER_BACKEND,
          "KV transfer over Mooncake: RDMA between hosts, NVLink within one (SGLang's default, said explicitly)")
    if role == "prefill":
        a.add("--disaggregation-bootstrap-port", s.handshake_port or SGLANG_BOOTSTRAP_PORT,
              "the bootstrap server decode servers reach this prefill server's KV through (unique per host)")
    else:
        a.notes.append("decode server: SGLang turns its radix (prefix) cache off unless "
                       "--disaggregation-decode-enable-radix-cache (python/sglang/srt/arg_groups/"
                       "pd_disaggregation_hook.py:121-127)")
    a.notes.append(f"{role} server: needs the Mooncake transfer engine (pip install mooncake-transfer-engine); it "
                   "picks the RDMA devices itself unless --disaggregation-ib-device names them; on one node, KV over "
                   "NVLink with SGLANG_MOONCAKE_CUSTOM_MEM_POOL=INTRA_NODE_NVLINK and MC_INTRANODE_NVLINK=true "
                   "(SGLang's PD disaggregation guide)")


def _llama_cpp(s: LaunchSpec) -> _Args:
    if _role("llama.cpp", s):
        raise VazaoError(f"llama.cpp: llama-server has no disaggregated prefill/decode serving (role {s.role}); "
                         "plan it as ordinary replicas, or prefill/decode on vLLM or SGLang")
    if s.fmt not in GGUF and s.fmt not in ("fp16", "bf16"):
        raise VazaoError(f"llama.cpp serves GGUF files: {s.fmt} has no GGUF type; use q8_0 or q4_k_m")
    if s.tp > 1:
        raise VazaoError(f"llama.cpp: tp {s.tp} has no equivalent here; it splits a model over GPUs by layer "
                         "(pp), which is what the planner searches for it")
    limit = get_engine_flags("llama.cpp").rule("n-seq-max")
    if s.max_num_seqs > limit.max:
        raise VazaoError(f"llama.cpp: {s.max_num_seqs} parallel slots (-np) is above {limit.constant} = {limit.max} "
                         f"({limit.defined}, checked at {limit.source}); plan at most {limit.max} sequences per "
                         "llama-server, or more replicas")
    m = checkpoint(s.model, s.fmt, "llama.cpp")
    a = _Args("llama-server")
    if m.hf_gguf:
        a.add("-hf", m.hf_gguf, "the GGUF of this quant from Hugging Face (downloaded to the cache on first start)")
    else:
        a.add("-m", m.ref, "a GGUF file of the model in this format")
    if m.note:
        a.notes.append(m.note)
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
        # -fa takes a value (on|off|auto): a bare -fa would swallow the flag after it
        a.add("-fa", "on", "flash attention (required for a quantized V cache)")
    a.add("--port", s.port, "HTTP port")
    # The llama.cpp profile is calibrated on May 2024 builds (docs/accuracy.md); the server launched is current.
    unpack = " and, on NVIDIA GPUs, prompts that unpack quantized weights to F16 first" if s.fmt in GGUF else ""
    a.notes.append(f"the figures above charge the calibrated llama.cpp builds' kernels (May 2024: attention without "
                   f"flash attention{unpack}); a current llama-server (MMQ, -fa auto) likely runs prompts faster: "
                   f"`vazao bench` measures it and `vazao calibrate` fits a profile to it")
    if s.replicas > 1:
        a.notes.append(f"{s.replicas} replicas: run one llama-server per GPU set (CUDA_VISIBLE_DEVICES) on ports "
                       f"{s.port + 1}…{s.port + s.replicas}, behind a load balancer on {s.port} (--emit-dir writes "
                       "serve.sh and compose.yaml that do)")
    return a


def _trtllm(s: LaunchSpec) -> _Args:
    if _role("TensorRT-LLM", s):
        raise VazaoError(f"TensorRT-LLM: disaggregated serving (role {s.role}) runs as `trtllm-serve disaggregated -c "
                         "CONFIG` (tensorrt_llm/commands/serve.py @ 4c05a74891e4) over context and generation "
                         "servers described in YAML files that vazao does not write; plan prefill/decode on vLLM or "
                         "SGLang")
    if s.fmt in GGUF:
        raise VazaoError(f"TensorRT-LLM: {s.fmt} is a GGUF quant; serve it with llama.cpp")
    m = checkpoint(s.model, s.fmt, "trtllm")
    refused = _partial_blocks(m, s.model, s.tp)
    if refused:
        raise VazaoError(f"TensorRT-LLM: {refused}")
    a = _Args("trtllm-serve", "serve", m.ref)
    if m.note:
        a.notes.append(m.note)
    if m.remote_code:
        a.add("--trust_remote_code", None, _REMOTE_CODE_WHY)
    a.add("--backend", "pytorch", "the PyTorch flow (no engine build)")
    _parallel(a, s, "--tp_size", "--pp_size", None)
    a.add("--max_batch_size", s.max_num_seqs, "most sequences per step: the batch that meets the TPOT limit")
    a.add("--max_num_tokens", s.max_num_batched_tokens, "tokens per step")
    # off by default (LlmArgs.enable_chunked_prefill); without it the PyTorch backend refuses any prompt longer
    # than --max_num_tokens (tensorrt_llm/llmapi/llm.py, LLM._check_arguments: "The sum of prompt length ...
    # should not exceed max_num_tokens"), and vazao's trtllm profile predicts with chunked prefill
    a.add("--enable_chunked_prefill", None, "prompts longer than --max_num_tokens go in chunks, as predicted; "
                                            "without it trtllm-serve refuses them")
    a.add("--max_seq_len", s.max_model_len, "longest prompt + answer")
    a.add("--kv_cache_free_gpu_memory_fraction", s.gpu_memory_utilization,
          "share of the memory left after the weights for the KV cache")
    if s.kv == "fp8":
        # trtllm-serve has no KV dtype flag: KvCacheConfig.dtype ("auto" follows the checkpoint's
        # kv_cache_quant_algo, which a 16-bit checkpoint does not set) is reached through the LLM API options
        # file, whose kv_cache_config replaces the one the flags build (llmapi/llm_args.py,
        # update_llm_args_with_extra_dict: llm_args | the file's), so it repeats the memory share
        a.add("--extra_llm_api_options", TRTLLM_OPTIONS, "LLM API options no flag reaches: the KV cache in FP8, "
                                                         "as the plan sized the batch")
        a.files.append((TRTLLM_OPTIONS, "# the KV cache in FP8 (KvCacheConfig.dtype; \"auto\" would follow the "
                                        "checkpoint), with the flags' memory share\n"
                                        "kv_cache_config:\n  dtype: fp8\n"
                                        f"  free_gpu_memory_fraction: {s.gpu_memory_utilization:g}\n"))
    a.add("--port", s.port, "HTTP port")
    if s.replicas > 1:
        a.notes.append(f"{s.replicas} replicas: one trtllm-serve per GPU set (CUDA_VISIBLE_DEVICES), ports "
                       f"{s.port + 1}…{s.port + s.replicas}, behind a load balancer on {s.port} (--emit-dir writes "
                       "serve.sh and compose.yaml that do)")
    return a


TRTLLM_OPTIONS = "trtllm-options.yaml"  # the --extra_llm_api_options file, beside the command
BUILDERS = {"vllm": _vllm, "sglang": _sglang, "llama.cpp": _llama_cpp, "trtllm": _trtllm}


def launch_command(engine: str, spec: LaunchSpec) -> EngineCommand:
    from vazao.physics.profiles import engine_key

    key = engine_key(engine)
    if key not in BUILDERS:
        raise VazaoError(f"no launch command for engine {engine!r} (known: {', '.join(BUILDERS)})")
    a = BUILDERS[key](spec)
    cmd = EngineCommand(key, a.program, tuple(a.argv), tuple(a.flags), tuple(a.notes), get_engine_flags(key).cite,
                        tuple(a.implied), tuple(a.files))
    # no command leaves here that the engine's own parser or start-up checks would refuse (on this GPU)
    check_command(cmd, spec.compute_capability)
    return cmd


ROUTER = "sglang-router"  # engine_flags.yaml front_ends


def _url(engine: str, url: str) -> tuple[str, int]:
    from urllib.parse import urlsplit

    try:
        u = urlsplit(url)
        scheme, host, port = u.scheme, u.hostname, u.port
    except ValueError:  # a port that is not a number, an unclosed IPv6 bracket
        scheme = host = port = None
    if scheme not in ("http", "https") or not host or port is None:
        raise VazaoError(f"{engine} router: {url!r}: expected http://HOST:PORT")
    return host, port


def router_command(engine: str, prefill_urls: Sequence[str | tuple[str, int]], decode_urls: Sequence[str],
                   port: int = 8000) -> EngineCommand:
    """The one endpoint in front of a disaggregated deployment: it sends each request to a prefill and a decode
    server. `prefill_urls`: each prefill server's URL, or (URL, its --disaggregation-bootstrap-port) where not
    SGLang's default. SGLang: its router, checked against its flags (engine_flags.yaml front_ends); vLLM v0.34.0
    ships none (refused in one line naming the example proxy its docs use); others have no disaggregation."""
    from vazao.physics.profiles import engine_key

    key = engine_key(engine)
    if not prefill_urls or not decode_urls:
        raise VazaoError(f"{engine} router: needs at least one prefill and one decode server "
                         f"(got {len(prefill_urls)} and {len(decode_urls)})")
    pairs = [(u, SGLANG_BOOTSTRAP_PORT) if isinstance(u, str) else (u[0], int(u[1])) for u in prefill_urls]
    if key == "vllm":
        ph = [_url("vLLM", u) for u, _ in pairs]
        dh = [_url("vLLM", u) for u in decode_urls]
        example = shlex.join(["python", VLLM_PROXY, "--port", str(port),
                              "--prefiller-hosts", *[h for h, _ in ph], "--prefiller-ports", *[str(p) for _, p in ph],
                              "--decoder-hosts", *[h for h, _ in dh], "--decoder-ports", *[str(p) for _, p in dh]])
        raise VazaoError("vLLM v0.34.0 ships no router program for prefill/decode: front it with the example proxy "
                         "its NixlConnector guide uses (docs/features/nixl_connector_usage.md:127), from a vLLM source "
                         f"checkout: {example}")
    if key != "sglang":
        raise VazaoError(f"{engine}: no disaggregated prefill/decode front end (SGLang's router or vLLM's example "
                         "proxy only)")
    for u, _ in pairs:
        _url("SGLang", u)
    for u in decode_urls:
        _url("SGLang", u)
    a = _Args(*get_engine_flags(ROUTER).program)
    a.add("--pd-disaggregation", None, "prefill/decode mode: each request goes to a prefill and a decode server")
    for u, bootstrap in pairs:
        a.add_values("--prefill", (u, bootstrap), "a prefill server and its bootstrap port "
                                                  "(its --disaggregation-bootstrap-port)")
    for u in decode_urls:
        a.add("--decode", u, "a decode server")
    a.add("--host", "0.0.0.0", "listen on every interface: the deployment's one endpoint")
    a.add("--port", port, "HTTP port of the endpoint (OpenAI-compatible)")
    a.notes.append("pip install sglang-router (0.3.2: the release these flags were read from; its successor, the smg "
                   "package, runs as python -m smg.launch_router)")
    cmd = EngineCommand(ROUTER, a.program, tuple(a.argv), tuple(a.flags), tuple(a.notes),
                        get_engine_flags(ROUTER).cite)
    check_command(cmd)
    return cmd


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
