"""Disaggregated prefill/decode launch commands (plan/commands.py: LaunchSpec.role, router_command) and their
checks against the engines' flag data (catalog/data/engine_flags.yaml, catalog/engine_flags.py).

Expected values and where they come from (the releases engine_flags.yaml records):
- SGLang v0.5.23: --disaggregation-mode takes null|prefill|decode (python/sglang/srt/arg_groups/fields/disagg.py:55);
  --disaggregation-transfer-backend mooncake|nixl|ascend|fake|mori|mooncake_tcp, default mooncake
  (disagg.py:65-71, python/sglang/srt/arg_groups/choices.py:122); --disaggregation-bootstrap-port default 8998
  (disagg.py:81-83); a prefill server refuses the fake backend (arg_groups/pd_disaggregation_hook.py:146).
- SGLang's router, sglang-router 0.3.2 (the PyPI wheel): `python -m sglang_router.launch_router
  --pd-disaggregation --prefill URL [BOOTSTRAP_PORT] ... --decode URL ...` (sglang_router/router_args.py:346,
  351, 359; SGLang's own v0.5.23 tests start it so, sglang/test/server_fixtures/disaggregation_fixture.py:207).
- vLLM v0.34.0: --kv-transfer-config (vllm/engine/arg_utils.py:1912) is a JSON KVTransferConfig
  (vllm/config/kv_transfer.py:85), no other keys (vllm/config/utils.py:72); kv_role kv_producer|kv_consumer|kv_both
  (kv_transfer.py:11-13); a kv_connector needs a kv_role (kv_transfer.py:141); the NixlConnector guide starts the
  prefiller with kv_producer and the decoder with kv_consumer (docs/features/nixl_connector_usage.md:107, :122)
  and fronts them with the example tests/v1/kv_connector/nixl_integration/toy_proxy_server.py (same file, :130).
"""

from __future__ import annotations

import itertools
import json
import re

import pytest

from vazao.catalog.engine_flags import KINDS, check_argv, check_command, engine_flags, front_end_flags
from vazao.errors import VazaoError
from vazao.plan.commands import EngineCommand, LaunchSpec, launch_command, router_command

SGLANG_BOOTSTRAP_PORT = "8998"  # python/sglang/srt/arg_groups/fields/disagg.py:81-83
SGLANG_BACKEND = "mooncake"  # SGLang's default transfer backend, disagg.py:65-71
VLLM_ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}  # docs/features/nixl_connector_usage.md:107, :122
ROUTER_PROGRAM = ("python", "-m", "sglang_router.launch_router")  # docs: pd_disaggregation; fixture :210

# the flags (and how many values each takes) a role adds to an ordinary command
ROLE_FLAGS = {"sglang": {"--disaggregation-mode": 1, "--disaggregation-transfer-backend": 1,
                         "--disaggregation-bootstrap-port": 1},
              "vllm": {"--kv-transfer-config": 1}}

SPECS = [dict(fmt=fmt, tp=tp, compute_capability=cc)
         for fmt, tp, cc in itertools.product(("bf16", "fp8"), (1, 2, 4), ("8.0", "9.0"))]


def _value(argv, flag):
    assert argv.count(flag) == 1, (flag, argv)
    return argv[argv.index(flag) + 1]


def _without_role_flags(engine, argv):
    out, i = [], 0
    while i < len(argv):
        n = ROLE_FLAGS[engine].get(argv[i])
        if n is None:
            out.append(argv[i])
            i += 1
        else:
            i += 1 + n
    return tuple(out)


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
@pytest.mark.parametrize("role", ["prefill", "decode"])
@pytest.mark.parametrize("kw", SPECS, ids=lambda kw: f"{kw['fmt']}-tp{kw['tp']}-cc{kw['compute_capability']}")
def test_role_commands_parse_and_carry_the_role(engine, role, kw):
    spec = LaunchSpec(model="llama-3.1-8b", kv="fp8", role=role, max_model_len=4096, **kw)
    cmd = launch_command(engine, spec)  # launch_command checks it (check_command) before returning it
    argv = list(cmd.argv)
    assert check_argv(engine, argv, compute_capability=spec.compute_capability, implied=cmd.implied) == []
    flags = [t for t in argv[len(cmd.program):] if t.startswith("--")]
    assert flags == [f for f, _, _ in cmd.flags] and all(why for _, _, why in cmd.flags)
    # the role adds its flags and changes nothing else
    ordinary = launch_command(engine, LaunchSpec(model="llama-3.1-8b", kv="fp8", max_model_len=4096, **kw))
    assert _without_role_flags(engine, argv) == ordinary.argv
    if engine == "sglang":
        assert _value(argv, "--disaggregation-mode") == role
        assert _value(argv, "--disaggregation-transfer-backend") == SGLANG_BACKEND
        if role == "prefill":  # the prefill server's bootstrap server; decode servers learn it from the router
            assert _value(argv, "--disaggregation-bootstrap-port") == SGLANG_BOOTSTRAP_PORT
        else:
            assert "--disaggregation-bootstrap-port" not in argv
        assert any("mooncake-transfer-engine" in n for n in cmd.notes)
    else:
        cfg = json.loads(_value(argv, "--kv-transfer-config"))
        assert cfg == {"kv_connector": "NixlConnector", "kv_role": VLLM_ROLES[role]}
        assert any("VLLM_NIXL_SIDE_CHANNEL_PORT=5600" in n for n in cmd.notes)  # vllm/envs.py:242
        assert any("tests/v1/kv_connector/nixl_integration/toy_proxy_server.py" in n for n in cmd.notes)


def test_an_ordinary_instance_has_no_role_flags():
    for engine in ("sglang", "vllm"):
        argv = launch_command(engine, LaunchSpec(model="llama-3.1-8b", fmt="bf16", kv="fp16")).argv
        assert not set(ROLE_FLAGS[engine]) & set(argv), engine


def test_the_handshake_port():
    spec = LaunchSpec(model="llama-3.1-8b", fmt="bf16", kv="fp16", role="prefill", handshake_port=9100)
    assert _value(list(launch_command("sglang", spec).argv), "--disaggregation-bootstrap-port") == "9100"
    notes = launch_command("vllm", spec).notes
    assert any("VLLM_NIXL_SIDE_CHANNEL_PORT=9100" in n for n in notes)
    # with data parallelism each rank takes the next port (docs/features/nixl_connector_usage.md:144)
    dp = LaunchSpec(model="llama-3.1-8b", fmt="bf16", kv="fp16", role="decode", handshake_port=9100, replicas=2)
    assert any("9100…9101" in n for n in launch_command("vllm", dp).notes)


PREFILLS = ["http://10.0.0.1:30000", ("http://10.0.0.2:30000", 9000), ("http://10.0.0.2:30002", 9001)]
DECODES = ["http://10.0.0.3:30001", "http://10.0.0.4:30001"]


@pytest.mark.parametrize("engine", ["sglang", "SGLang"])
def test_the_sglang_router_lists_every_server_and_parses(engine):
    cmd = router_command(engine, PREFILLS, DECODES, port=8080)
    argv = list(cmd.argv)
    assert cmd.engine == "sglang-router" and cmd.program == ROUTER_PROGRAM and argv[:3] == list(ROUTER_PROGRAM)
    assert check_argv("sglang-router", argv) == []
    check_command(cmd)
    assert "--pd-disaggregation" in argv
    # --prefill URL BOOTSTRAP_PORT per prefill server (sglang_router/router_args.py:351, read at :976-1012);
    # a bare URL gets SGLang's default bootstrap port
    prefills = [tuple(argv[i + 1:i + 3]) for i, t in enumerate(argv) if t == "--prefill"]
    assert prefills == [("http://10.0.0.1:30000", SGLANG_BOOTSTRAP_PORT), ("http://10.0.0.2:30000", "9000"),
                        ("http://10.0.0.2:30002", "9001")]
    assert [argv[i + 1] for i, t in enumerate(argv) if t == "--decode"] == DECODES  # router_args.py:359
    assert _value(argv, "--port") == "8080" and _value(argv, "--host") == "0.0.0.0"
    flags = [t for t in argv[3:] if t.startswith("--")]
    assert flags == [f for f, _, _ in cmd.flags] and all(why for _, _, why in cmd.flags)
    assert "0.3.2" in cmd.source and "sglang_router/router_args.py" in cmd.source


def test_the_router_data_names_its_sources():
    fronts = front_end_flags()
    assert set(fronts) == {"sglang-router"} and not set(fronts) & set(engine_flags())
    e = fronts["sglang-router"]
    assert e.program == ROUTER_PROGRAM and e.parser == "argparse" and e.as_of == "2026-12"
    loc = re.compile(r"^[\w./-]+\.py:[1-9]\d*$")
    assert loc.match(e.parser_source)
    for f in e.flags:
        assert f.kind in KINDS and loc.match(f.source), f.names
        assert f.kind != "choice" or f.choices, f.names
    assert e.flag("--prefill").nargs == "+"


@pytest.mark.parametrize("engine,spec", [
    ("trtllm", dict(fmt="bf16", role="prefill")),
    ("trtllm", dict(fmt="fp8", role="decode")),
    ("llama.cpp", dict(fmt="q4_k_m", role="prefill")),
    ("llama.cpp", dict(fmt="q8_0", role="decode")),
    ("vllm", dict(fmt="bf16", role="both")),  # roles are prefill or decode
    ("sglang", dict(fmt="bf16", role="Prefill")),
])
def test_refusals_are_one_line(engine, spec):
    with pytest.raises(VazaoError) as exc:
        launch_command(engine, LaunchSpec(model="llama-3.1-8b", kv="fp16", **spec))
    assert "\n" not in str(exc.value)
    if engine == "trtllm":  # names the path TensorRT-LLM takes (tensorrt_llm/commands/serve.py, `disaggregated`)
        assert "trtllm-serve disaggregated -c CONFIG" in str(exc.value)


@pytest.mark.parametrize("engine,prefills,decodes,needle", [
    # vLLM v0.34.0 ships no router program: the refusal gives the example its docs use, with these servers
    ("vllm", ["http://p1:8100"], ["http://d1:8200", "http://d2:8200"],
     "toy_proxy_server.py --port 8000 --prefiller-hosts p1 --prefiller-ports 8100 --decoder-hosts d1 d2 "
     "--decoder-ports 8200 8200"),
    ("trtllm", ["http://p1:8100"], ["http://d1:8200"], "no disaggregated prefill/decode front end"),
    ("llama.cpp", ["http://p1:8100"], ["http://d1:8200"], "no disaggregated prefill/decode front end"),
    ("sglang", [], ["http://d1:8200"], "needs at least one prefill and one decode server"),
    ("sglang", ["http://p1:8100"], ["d1:8200"], "expected http://HOST:PORT"),
])
def test_router_refusals_are_one_line(engine, prefills, decodes, needle):
    with pytest.raises(VazaoError) as exc:
        router_command(engine, prefills, decodes, port=8000)
    assert "\n" not in str(exc.value) and needle in str(exc.value), str(exc.value)


PREFILL_JSON = '{"kv_connector":"NixlConnector","kv_role":"kv_producer"}'


@pytest.mark.parametrize("engine,argv,needle", [
    # a wrong role value, a misspelled flag, a transfer backend SGLang does not have, a pair it refuses
    ("sglang", ["--disaggregation-mode", "prefil"], "python/sglang/srt/arg_groups/fields/disagg.py:56"),
    ("sglang", ["--disaggregation-mode", "both"], "not one of null, prefill, decode"),
    ("sglang", ["--disagregation-mode", "prefill"], "--disagregation-mode: not a flag"),
    ("sglang", ["--disaggregation-mode", "decode", "--disaggregation-transfer-backend", "ucx"],
     "python/sglang/srt/arg_groups/choices.py:122"),
    ("sglang", ["--disaggregation-mode", "prefill", "--disaggregation-transfer-backend", "fake"],
     "pd_disaggregation_hook.py:146"),
    ("sglang", ["--disaggregation-bootstrap-port", "auto"], "not an integer"),
    # vLLM: the JSON's keys and values (vllm/config/kv_transfer.py), the flag's spelling
    ("vllm", ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_prefill"}'],
     "kv_role 'kv_prefill' is not one of kv_producer, kv_consumer, kv_both (vllm/config/kv_transfer.py:99"),
    ("vllm", ["--kv-transfer-config", '{"kv_connector":"NixlConnector"}'],
     "kv_connector needs kv_role (vllm/config/kv_transfer.py:141)"),
    ("vllm", ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_rol":"kv_producer"}'],
     "'kv_rol' is not one of its keys"),
    ("vllm", ["--kv-transfer-config", '{"kv_connector":"NixConnector","kv_role":"kv_both"}'],
     "kv_connector/factory.py:133"),
    ("vllm", ["--kv-transfer-config", "NixlConnector"], "not a JSON object (vllm/engine/arg_utils.py:371)"),
    ("vllm", ["--kv-transfer-config", '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_port":"p"}'],
     "kv_port 'p' is not of kind int (vllm/config/kv_transfer.py:104)"),
    ("vllm", ["--kv-transfer-cfg", PREFILL_JSON], "--kv-transfer-cfg: not a flag"),
    # the router
    ("sglang-router", ["--pd-disagregation", "--prefill", "http://p:1", "--decode", "http://d:2"],
     "--pd-disagregation: not a flag"),
    ("sglang-router", ["--pd-disaggregation", "--prefill", "--decode", "http://d:2"], "--prefill: expects a value"),
    ("sglang-router", ["--pd-disaggregation", "--policy", "fastest"], "sglang_router/router_args.py:246"),
])
def test_the_checker_refuses(engine, argv, needle):
    head = {"sglang": ["python", "-m", "sglang.launch_server", "--model-path", "m"], "vllm": ["vllm", "serve", "m"],
            "sglang-router": list(ROUTER_PROGRAM)}[engine]
    problems = check_argv(engine, head + argv)
    assert any(needle in p for p in problems), problems
    assert all("\n" not in p and re.search(r"\S+\.py:\d+", p) for p in problems)  # each names its source
    with pytest.raises(VazaoError, match=re.escape(needle)):
        check_command(EngineCommand(engine, (), tuple(head + argv), ()))


@pytest.mark.parametrize("cfg", [
    PREFILL_JSON,
    '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_load_failure_policy":"fail"}',  # docs' :107
    '{"kv_connector":"MyConnector","kv_role":"kv_both","kv_connector_module_path":"my.module"}',  # out of tree
    '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_port":"14579","enable_permute_local_kv":"yes"}',
    '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_port":15k}',  # vllm/engine/arg_utils.py:300
    '{"kv_role":null}',
])
def test_the_checker_accepts_what_vllm_takes(cfg):
    # pydantic's lax mode takes "14579" for an int and "yes" for a bool; 15k is expanded before the JSON is read
    assert check_argv("vllm", ["vllm", "serve", "m", "--kv_transfer_config", cfg]) == []


def test_a_built_command_with_a_wrong_role_value_is_refused():
    spec = LaunchSpec(model="llama-3.1-8b", fmt="bf16", kv="fp16", role="prefill")
    sg = list(launch_command("sglang", spec).argv)
    sg[sg.index("--disaggregation-mode") + 1] = "prefil"
    assert any("disagg.py:55" in p for p in check_argv("sglang", sg))
    vl = list(launch_command("vllm", spec).argv)
    i = vl.index("--kv-transfer-config") + 1
    vl[i] = vl[i].replace("kv_producer", "kv_prefill")
    assert any("vllm/config/kv_transfer.py:99" in p for p in check_argv("vllm", vl))
    rt = list(router_command("sglang", PREFILLS, DECODES).argv)
    rt[rt.index("--pd-disaggregation")] = "--pd-disaggregate"
    assert any("--pd-disaggregate: not a flag" in p for p in check_argv("sglang-router", rt))
