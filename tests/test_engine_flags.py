"""Engine flags as data (catalog/data/engine_flags.yaml) and the checker (catalog/engine_flags.py): every command
the builders emit parses the way its engine parses it, and the three commands that used to fail are caught.

Numbers below come from the sources engine_flags.yaml names: LLAMA_MAX_SEQ = 256 (llama.cpp
src/llama-cparams.h:8, checked at src/llama-context.cpp:101); vLLM's bfloat16 floor 8.0
(vllm/platforms/cuda.py:681) and its fp8 quantization floor 7.5 (model_executor/layers/quantization/fp8.py:144);
SGLang's sm75 floor (model_runner_components/load_model_utils.py:90) and its fp8 floor 8.0
(layers/quantization/fp8.py:339)."""

from __future__ import annotations

import itertools
import re

import pytest

from vazao.catalog.engine_flags import KINDS, check_argv, check_command, engine_flags, get_engine_flags
from vazao.errors import VazaoError
from vazao.plan.commands import BUILDERS, SOURCES, EngineCommand, LaunchSpec, launch_command

LLAMA_MAX_SEQ = 256  # llama.cpp src/llama-cparams.h:8

FORMATS = ("bf16", "fp16", "fp8", "int4-awq", "int4-gptq", "q4_k_m", "q8_0")
CCS = ("7.0", "7.5", "8.0", "8.9", "9.0")  # V100, T4, A100, L4/L40S, H100


def _grid(engine):
    for fmt, tp, pp, replicas, kv, cc, seqs in itertools.product(FORMATS, (1, 2, 4), (1, 2, 4), (1, 3),
                                                                 ("fp16", "fp8"), CCS, (1, LLAMA_MAX_SEQ)):
        yield LaunchSpec(model="llama-3.1-8b", fmt=fmt, kv=kv, tp=tp, pp=pp, replicas=replicas,
                         max_model_len=4096, max_num_seqs=seqs, compute_capability=cc)


# The GPU rules a command may still break: the engine cannot run the format on that GPU at all, so the command is
# refused. A rule the builder can meet by choosing a flag (--dtype half below vLLM's bfloat16 floor) is not here.
UNAVOIDABLE = {"vllm": ("fp8-quantization-needs-cc-7.5",),
               "sglang": ("needs-sm75", "fp8-quantization-needs-cc-8.0")}


def _unavoidable(engine: str, problem: str) -> bool:
    e = get_engine_flags(engine)
    return any(f"({e.rule(rid).source})" in problem for rid in UNAVOIDABLE.get(engine, ()))


@pytest.mark.parametrize("engine", sorted(BUILDERS))
def test_every_built_command_parses_and_only_gpu_rules_refuse(engine):
    built = refused_by_builder = refused_by_gpu = 0
    for spec in _grid(engine):
        try:
            a = BUILDERS[engine](spec)
        except VazaoError as exc:  # the builder's own refusals: a format or layout the engine does not serve
            assert "\n" not in str(exc)
            refused_by_builder += 1
            continue
        built += 1
        # whatever the GPU, the argv parses: known flags, values of the right kind, within the choices and bounds
        assert check_argv(engine, a.argv) == [], (spec, a.argv)
        # a pre-quantized checkpoint's method (its config.json) meets the same start-up rules as the flag would
        problems = check_argv(engine, a.argv, compute_capability=spec.compute_capability, implied=a.implied)
        assert all(_unavoidable(engine, p) for p in problems), (spec, problems)
        if problems:  # launch_command refuses exactly these, in one line
            refused_by_gpu += 1
            with pytest.raises(VazaoError) as exc:
                launch_command(engine, spec)
            assert "\n" not in str(exc.value)
        else:
            cmd = launch_command(engine, spec)
            check_command(cmd, spec.compute_capability)
            assert cmd.argv == tuple(a.argv)
    assert built > 0 and refused_by_builder > 0  # the grid reaches both sides
    if engine in ("vllm", "sglang"):
        assert refused_by_gpu > 0  # fp8 on a V100 for vLLM; anything below sm75 for SGLang


def test_the_three_old_bugs_are_caught():
    # llama.cpp's -fa takes on|off|auto: a bare -fa swallows --port, and 8000 is left as a stray argument
    problems = check_argv("llama.cpp", ["llama-server", "-m", "x.gguf", "-fa", "--port", "8000"])
    assert any(p.startswith("-fa '--port'") and "common/arg.cpp:1754" in p for p in problems), problems
    assert check_argv("llama.cpp", ["llama-server", "-m", "x.gguf", "-fa", "on", "--port", "8000"]) == []
    # vLLM refuses bfloat16 below compute capability 8.0 (a T4 is 7.5)
    argv = ["vllm", "serve", "m", "--dtype", "bfloat16"]
    problems = check_argv("vllm", argv, compute_capability="7.5")
    assert len(problems) == 1 and "vllm/platforms/cuda.py:681" in problems[0] and "8.0" in problems[0]
    assert check_argv("vllm", argv, compute_capability="8.0") == []
    assert check_argv("vllm", ["vllm", "serve", "m", "--dtype=half"], compute_capability="7.5") == []
    # llama.cpp refuses n_seq_max above LLAMA_MAX_SEQ
    problems = check_argv("llama.cpp", ["llama-server", "-m", "x.gguf", "-np", "300"])
    assert len(problems) == 1 and "LLAMA_MAX_SEQ = 256" in problems[0] and "src/llama-context.cpp:101" in problems[0]
    assert check_argv("llama.cpp", ["llama-server", "-m", "x.gguf", "-np", str(LLAMA_MAX_SEQ)]) == []


@pytest.mark.parametrize("engine,argv,needle", [
    # unknown flags (vLLM's parser does not guess; click and llama.cpp match names exactly)
    ("vllm", "vllm serve m --max-num-seq 8", "--max-num-seq: not a flag"),
    ("trtllm", "trtllm-serve serve m --tp-size 2", "--tp-size: not a flag"),
    ("llama.cpp", "llama-server -m x.gguf --port=8000", "takes no --flag=value"),
    # values not among the choices
    ("vllm", "vllm serve m --kv-cache-dtype fp9", "vllm/config/cache.py:44"),
    ("sglang", "python -m sglang.launch_server --model-path m --kv-cache-dtype fp8", "fp8_e4m3"),
    ("llama.cpp", "llama-server -m x.gguf -ctk q8", "common/arg.cpp:304"),
    ("trtllm", "trtllm-serve serve m --backend onnx", "tensorrt_llm/commands/serve.py:232"),
    # not an integer for an int flag
    ("vllm", "vllm serve m --max-num-seqs 16.5", "--max-num-seqs '16.5': not an integer"),
    ("trtllm", "trtllm-serve serve m --max_batch_size many", "not an integer"),
    ("llama.cpp", "llama-server -m x.gguf -c 8k", "-c '8k': not an integer"),
    # out of the engine's bounds
    ("vllm", "vllm serve m --gpu-memory-utilization 1.2", "vllm/config/cache.py:216"),
    ("vllm", "vllm serve m -tp 0", "vllm/config/parallel.py:150"),
    ("llama.cpp", "llama-server -m x.gguf -np 0", "common/arg.cpp:2547"),
    # a switch given a value, a value missing
    ("sglang", "python -m sglang.launch_server --model-path m --disable-radix-cache=true", "takes no value"),
    ("vllm", "vllm serve m --port", "--port: expects a value"),
    ("llama.cpp", "llama-server -m", "-m: expects a value"),
    # arguments the parser has no place for
    ("trtllm", "trtllm-serve serve --port 8000", "needs the model"),
    ("sglang", "python -m sglang.launch_server --port 30000", "--model-path: required"),
    ("vllm", "vllm serve a b", "takes one positional argument"),
    # rules outside the parser
    ("llama.cpp", "llama-server -m x.gguf -ctv q8_0 -fa off", "src/llama-context.cpp:3846"),
    ("vllm", "vllm serve m --quantization fp8 --cc 7.0", "fp8.py:144"),
    ("sglang", "python -m sglang.launch_server --model-path m --cc 7.0", "load_model_utils.py:90"),
    ("sglang", "python -m sglang.launch_server --model-path m --quantization fp8 --cc 7.5", "fp8.py:339"),
])
def test_the_checker_refuses(engine, argv, needle):
    args = argv.split()
    cc = None
    if "--cc" in args:  # the GPU, not part of the command
        cc = args.pop(args.index("--cc") + 1)
        args.remove("--cc")
    problems = check_argv(engine, args, compute_capability=cc)
    assert any(needle in p for p in problems), problems
    assert all("\n" not in p and re.search(r"\S+\.(py|cpp|h):\d+", p) for p in problems)  # each names its source
    with pytest.raises(VazaoError, match=re.escape(needle)):
        check_command(EngineCommand(engine, (), tuple(args), ()), cc)


@pytest.mark.parametrize("engine,argv", [
    ("vllm", "vllm serve m --max_num_seqs 8 --max-model-len 32k --max-num-batched-tokens=8K -tp 2"),  # '_' read as '-'
    ("vllm", "vllm serve m --disable-prefix-caching --served-model-name a b --port 8000"),
    ("sglang", "python -m sglang.launch_server --model m --chunked-prefill-size -1 --dtype bfloat16 --cc 7.5"),
    ("llama.cpp", "llama-server -hf org/m-GGUF:Q4_K_M -ngl all -fa auto -ctv q8_0 --n_gpu_layers 99"),
    ("trtllm", "trtllm-serve serve m --backend trt --trust_remote_code --kv_cache_free_gpu_memory_fraction=0.8"),
])
def test_the_checker_accepts_what_the_engine_takes(engine, argv):
    args = argv.split()
    cc = None
    if "--cc" in args:  # SGLang serves float16 below sm80 whatever --dtype says (load_model_utils.py:81)
        cc = args.pop(args.index("--cc") + 1)
        args.remove("--cc")
    assert check_argv(engine, args, compute_capability=cc) == []


def test_builders_emit_what_starts():
    kv8 = LaunchSpec(model="llama-3.1-8b", fmt="q4_k_m", kv="fp8", max_num_seqs=LLAMA_MAX_SEQ)
    argv = launch_command("llama.cpp", kv8).argv
    assert argv[argv.index("-fa") + 1] == "on"
    with pytest.raises(VazaoError, match=r"257 parallel slots .* LLAMA_MAX_SEQ = 256 \(src/llama-cparams.h:8"):
        launch_command("llama.cpp", LaunchSpec(model="llama-3.1-8b", fmt="q4_k_m", kv="fp16", max_num_seqs=257))
    assert get_engine_flags("vllm").min_cc("--dtype", "bfloat16") == "8.0"  # vllm/platforms/cuda.py:681
    for engine, cc, dtype in (("vllm", "7.5", "half"), ("vllm", "8.0", "bfloat16"), ("sglang", "7.5", "half")):
        spec = LaunchSpec(model="llama-3.1-8b", fmt="int4-awq", kv="fp16", compute_capability=cc)
        argv = launch_command(engine, spec).argv
        assert argv[argv.index("--dtype") + 1] == dtype, (engine, cc)
    assert "--dtype" not in launch_command("sglang", LaunchSpec(model="llama-3.1-8b", fmt="bf16", kv="fp16",
                                                                compute_capability="9.0")).argv
    with pytest.raises(VazaoError, match="fp8.py:144"):  # vLLM's fp8 needs 7.5; a V100 is 7.0
        launch_command("vllm", LaunchSpec(model="llama-3.1-8b", fmt="fp8", kv="fp16", compute_capability="7.0"))


def test_the_data_names_its_sources():
    table = engine_flags()
    assert set(table) == set(BUILDERS)
    loc = re.compile(r"^[\w./-]+\.(py|cpp|h):[1-9]\d*$")
    for key, e in table.items():
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", e.repo) and e.path and e.commit and e.as_of == "2026-12", key
        assert e.program and e.parser_source, key
        assert SOURCES[key] == e.cite and e.path in e.cite and e.commit[:9] in e.cite, key
        names = [n for f in e.flags for n in (*f.names, *f.negations)]
        assert len(names) == len(set(names)), key  # one flag per name
        for f in e.flags:
            assert f.kind in KINDS and loc.match(f.source), (key, f.names, f.source)
            assert f.kind != "choice" or f.choices, (key, f.names)
            for extra in (f.choices_source, f.bounds_source):
                assert not extra or loc.match(extra), (key, f.names, extra)
        for r in e.rules:
            assert loc.match(r.source) and (not r.flag or e.flag(r.flag)), (key, r.id)
            assert not r.defined or loc.match(r.defined), (key, r.id)
    # YAML 1.1 reads a bare on/off as a boolean: the choices must stay the words llama.cpp compares against
    assert {"on", "off", "auto"} <= set(get_engine_flags("llama.cpp").flag("-fa").choices)
    assert get_engine_flags("llama.cpp").rule("n-seq-max").max == LLAMA_MAX_SEQ
