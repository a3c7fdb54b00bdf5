"""`vazao plan --emit-dir` (plan/artefacts.py): the winner as serve.sh, compose.yaml + nginx.conf, k8s.yaml and
bench.sh, for each engine. The manifests are validated offline, k8s.yaml against the Kubernetes API schemas
(kubernetes-validate) and compose.yaml against the compose-spec schema that check-jsonschema vendors; the
amounts in them are checked against the candidate and its command."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import replace
from importlib import resources
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml
from typer.testing import CliRunner

from vazao.cli import app
from vazao.errors import VazaoError
from vazao.inputs import OutputExists
from vazao.plan import PlanInputs, Traffic, run_plan
from vazao.plan.artefacts import FILES, IMAGES, artefacts, write_artefacts
from vazao.plan.commands import bench_command, launch_command
from vazao.plan.emit import spec_on
from vazao.results import SLO

K8S_VERSIONS = ("1.34.0", kubernetes_validate.latest_version())
SECRET = "hf_vazaoTestSentinelToken0123456789"


def _plan(gpu: str, fmt: str, rate: float, engines: tuple[str, ...] = (), model: str = "llama-3.1-8b"):
    inp = PlanInputs(workload="chat", traffic=Traffic(rate=rate), slo=SLO.parse("ttft_p95=1s,tpot_p95=50ms"),
                     models=(model,), gpus=(gpu,), formats=(fmt,), engines=engines, requests=80,
                     simulate_top=4, max_gpus=8)
    result = run_plan(inp, workers=1)
    assert result.winner is not None, result.pruned_by_reason()
    return result


@pytest.fixture(scope="module")
def plans():
    out = {
        "one": _plan("h100-sxm", "bf16", 4.0),  # 1 replica, 1 GPU
        "replicas": _plan("h100-sxm", "bf16", 90.0),  # several 1-GPU replicas
        "tp": _plan("h100-sxm", "fp8", 40.0, model="llama-3.1-70b"),  # several tensor-parallel replicas
        "gguf": _plan("rtx-4090", "q8_0", 4.0, engines=("llama.cpp",)),  # llama.cpp simulated, several replicas
    }
    assert out["one"].winner.replicas == 1
    for key in ("replicas", "tp", "gguf"):
        assert out[key].winner.replicas > 1, key
    assert out["tp"].winner.shape.gpus_per_replica > 1
    assert out["gguf"].winner.shape.engine == "llama.cpp"
    return out


# each plan on each engine that serves its format and parallelism
CASES = [(p, e) for p in ("one", "replicas", "tp") for e in ("vllm", "sglang", "trtllm")]
CASES += [("one", "llama.cpp"), ("replicas", "llama.cpp"), ("gguf", "llama.cpp")]


def _compose_schema() -> dict:
    path = resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _one_replica_spec(result, engine=None):
    # on another engine than the simulated one the batch cap is held to what that engine accepts (spec_on)
    return replace(spec_on(result.winner, result.lengths, engine)[0], replicas=1)


@pytest.mark.parametrize(("plan", "engine"), CASES)
def test_k8s_manifests_validate_and_carry_the_plan(plans, plan, engine):
    result = plans[plan]
    c = result.winner
    a = artefacts(result, engine)
    docs = list(yaml.safe_load_all(a.text("k8s.yaml")))
    assert [d["kind"] for d in docs] == ["Deployment", "Service", "PersistentVolumeClaim"]
    for doc in docs:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)  # raises on any schema error
    dep, svc, pvc = docs
    assert dep["spec"]["replicas"] == c.replicas
    pod = dep["spec"]["template"]
    (ctr,) = pod["spec"]["containers"]
    assert ctr["resources"]["limits"]["nvidia.com/gpu"] == c.shape.gpus_per_replica
    assert ctr["image"] == IMAGES[engine].image and ":" in ctr["image"] and not ctr["image"].endswith(":latest")
    # the container runs the one-replica command: its executable (where the image keeps it), then argv unchanged
    cmd = launch_command(engine, _one_replica_spec(result, engine))
    assert ctr["command"] == [IMAGES[engine].executable or cmd.argv[0]]
    assert ctr["args"] == [*cmd.argv[1:], *IMAGES[engine].host]
    assert not {"--data-parallel-size", "--dp-size"} & set(ctr["args"])
    assert str(_one_replica_spec(result, engine).max_num_seqs) in ctr["args"]  # the planned batch cap
    # one endpoint: the Service selects the pods, on the port the engine listens on
    port = int(cmd.argv[cmd.argv.index("--port") + 1])
    assert ctr["ports"] == [{"name": "http", "containerPort": port}]
    assert svc["spec"]["ports"][0]["port"] == port and svc["spec"]["ports"][0]["targetPort"] == "http"
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    assert ctr["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    # the model cache: the PVC in the manifest, mounted where the engine reads the model
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v]
    assert claims == [pvc["metadata"]["name"]]
    assert {"name": "model-cache", "mountPath": IMAGES[engine].cache} in ctr["volumeMounts"]
    shm = any(m["mountPath"] == "/dev/shm" for m in ctr["volumeMounts"])
    assert shm == (IMAGES[engine].shm and c.shape.gpus_per_replica > 1)


def test_k8s_validation_can_fail(plans):
    """The validator rejects what a typo would produce (so the test above can fail)."""
    dep = next(yaml.safe_load_all(artefacts(plans["tp"]).text("k8s.yaml")))
    dep["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSIONS[0], strict=True)
    dep["spec"]["replicas"] = 2
    dep["spec"]["template"]["spec"]["containers"][0]["gpus"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSIONS[0], strict=True)


@pytest.mark.parametrize(("plan", "engine"), CASES)
def test_compose_validates_with_one_service_per_replica(plans, plan, engine):
    result = plans[plan]
    c = result.winner
    a = artefacts(result, engine)
    doc = yaml.safe_load(a.text("compose.yaml"))
    jsonschema.validate(doc, _compose_schema())
    replicas = {k: v for k, v in doc["services"].items() if k != "endpoint"}
    assert len(replicas) == c.replicas
    cmd = launch_command(engine, _one_replica_spec(result, engine))
    gpus: list[str] = []
    for svc in replicas.values():
        assert svc["image"] == IMAGES[engine].image
        assert svc["entrypoint"] + svc["command"] == [IMAGES[engine].executable or cmd.argv[0], *cmd.argv[1:],
                                                      *IMAGES[engine].host]
        (dev,) = svc["deploy"]["resources"]["reservations"]["devices"]
        assert dev["driver"] == "nvidia" and dev["capabilities"] == ["gpu"]
        assert len(dev["device_ids"]) == c.shape.gpus_per_replica
        gpus += dev["device_ids"]
        assert svc["volumes"] == [f"model-cache:{IMAGES[engine].cache}"]
        assert svc["environment"] == ["HF_TOKEN", *(f"{k}={v}" for k, v in IMAGES[engine].env)]  # no token value
        assert (svc.get("ipc") == "host") == (IMAGES[engine].shm and c.shape.gpus_per_replica > 1)
    assert sorted(gpus, key=int) == [str(i) for i in range(c.count)]  # every GPU once, none shared
    # one endpoint in front: nginx over every replica, on the engine's port
    port = int(cmd.argv[cmd.argv.index("--port") + 1])
    ep = doc["services"]["endpoint"]
    assert ep["image"].startswith("nginx:") and ep["ports"] == [f"{port}:{port}"]
    assert sorted(ep["depends_on"]) == sorted(replicas)
    upstream = re.findall(r"^\s*server (\S+);", a.text("nginx.conf"), re.M)
    assert upstream == [f"{name}:{port}" for name in replicas]
    assert "proxy_buffering off;" in a.text("nginx.conf")


def test_compose_validation_can_fail(plans):
    doc = yaml.safe_load(artefacts(plans["tp"]).text("compose.yaml"))
    doc["services"]["replica-0"]["deploy"]["resources"]["reservations"]["devices"][0]["gpus"] = "all"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, _compose_schema())


ENGINE_PROGRAMS = ("vllm ", "python ", "llama-server ", "trtllm-serve ")


def _commands(serve_sh: str) -> list[tuple[str | None, str]]:
    """(CUDA_VISIBLE_DEVICES or None, command) of each engine process serve.sh starts (not its balancer)."""
    out = []
    for line in serve_sh.splitlines():
        m = re.fullmatch(r"(?:CUDA_VISIBLE_DEVICES=(\S+) )?(.+?)( &)?", line)
        if m and m.group(2).startswith(ENGINE_PROGRAMS):
            out.append((m.group(1), m.group(2)))
    return out


def _balancer_conf(serve_sh: str) -> str:
    """The nginx.conf serve.sh writes for its replicas (between its heredoc markers)."""
    return serve_sh.split("<<'NGINX'\n", 1)[1].split("\nNGINX\n", 1)[0] + "\n"


@pytest.mark.parametrize(("plan", "engine"), CASES)
def test_serve_sh_runs_the_one_replica_command(plans, plan, engine):
    result = plans[plan]
    c = result.winner
    a = artefacts(result, engine)
    text = a.text("serve.sh")
    spec = _one_replica_spec(result, engine)
    procs = _commands(text)
    if c.replicas == 1:
        assert procs == [(None, launch_command(engine, spec).shell)]
        assert procs[0][1] == a.command.shell
    else:
        # one process per GPU set, on consecutive ports after the endpoint's
        assert [cmd for _, cmd in procs] == [launch_command(engine, replace(spec, port=spec.port + 1 + i)).shell
                                             for i in range(c.replicas)]
        sets = [devices.split(",") for devices, _ in procs]
        assert all(len(s) == c.shape.gpus_per_replica for s in sets)
        assert sorted(sum(sets, []), key=int) == [str(i) for i in range(c.count)]
        # and nginx on the endpoint's port over exactly those ports, as bench.sh expects
        conf = _balancer_conf(text)
        assert re.findall(r"server 127\.0\.0\.1:(\d+);", conf) == [str(spec.port + 1 + i) for i in range(c.replicas)]
        assert f"listen {spec.port};" in conf
        assert f"127.0.0.1:{spec.port}/v1" in a.text("bench.sh")
        if shutil.which("nginx"):  # the real parser: nginx -t under the scratch prefix serve.sh gives it
            with tempfile.TemporaryDirectory() as lb:
                (Path(lb) / "logs").mkdir()
                (Path(lb) / "nginx.conf").write_text(conf)
                subprocess.run(["nginx", "-t", "-p", lb, "-c", "nginx.conf"], check=True, capture_output=True)
    assert all("--data-parallel-size" not in cmd and "--dp-size" not in cmd for _, cmd in procs)
    # the header names the deployment, the traffic, the SLO and the simulated engine profile
    assert c.shape.label() in text
    assert f"engine profile simulated: {c.shape.engine}" in text
    assert result.inputs.traffic.describe() in text and "ttft_p95 <= 1000 ms" in text
    if shutil.which("sh"):
        subprocess.run(["sh", "-n"], input=text, text=True, check=True)  # parses as a shell script


def test_another_engine_than_the_simulated_one_says_so(plans):
    result = plans["one"]
    assert result.winner.shape.engine == "vllm"
    assert "NOTE" not in artefacts(result).text("serve.sh")
    text = artefacts(result, "sglang").text("serve.sh")
    assert "NOTE: the plan simulated the vllm profile" in text and "on sglang" in text
    assert "NOTE: the plan simulated" in artefacts(result, "sglang").text("k8s.yaml")


def test_bench_sh_checks_the_planned_traffic_through_the_endpoint(plans):
    result = plans["tp"]
    a = artefacts(result)
    bench = [line for line in a.text("bench.sh").splitlines() if line.startswith("vazao bench")]
    assert bench == [bench_command("http://127.0.0.1:8000/v1", "chat", {"ttft_p95": 1.0, "tpot_p95": 0.05},
                                   rate=40.0)]
    svc = list(yaml.safe_load_all(a.text("k8s.yaml")))[1]
    assert f":{svc['spec']['ports'][0]['port']}/v1" in bench[0]


def test_formats_an_engine_does_not_serve_are_refused(plans):
    # llama.cpp has no tensor parallelism, and FP8 has no GGUF type: the plan is refused for one or the other
    with pytest.raises(VazaoError, match="tp|GGUF"):
        artefacts(plans["tp"], "llama.cpp")
    with pytest.raises(VazaoError, match="GGUF"):
        artefacts(plans["gguf"], "vllm")
    with pytest.raises(VazaoError):
        artefacts(plans["one"], "naive")  # a simulation profile, not a server


def test_llama_cpp_runs_the_images_server_on_the_model_folder(plans):
    a = artefacts(plans["gguf"])
    assert a.engine == "llama.cpp"
    svc = yaml.safe_load(a.text("compose.yaml"))["services"]["replica-0"]
    assert svc["entrypoint"] == ["/app/llama-server"] and svc["working_dir"] == "/models"
    # the catalog's GGUF release (-hf repo:QUANT, downloaded into the volume through LLAMA_CACHE), else a file there
    if "-hf" in svc["command"]:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+:[A-Z0-9_]+", svc["command"][svc["command"].index("-hf") + 1])
        assert "LLAMA_CACHE=/models" in svc["environment"]
    else:
        assert svc["command"][svc["command"].index("-m") + 1].endswith(".gguf")


def test_written_files_hold_no_secret(plans, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", SECRET)
    paths = write_artefacts(tmp_path / "out", plans["tp"])
    assert [p.name for p in paths] == list(FILES)
    for p in paths:
        text = p.read_text(encoding="utf-8")
        assert SECRET not in text
        assert not re.search(r"\bhf_[A-Za-z0-9]{20,}", text)
    dep = next(yaml.safe_load_all((tmp_path / "out" / "k8s.yaml").read_text()))
    (env,) = dep["spec"]["template"]["spec"]["containers"][0]["env"]
    assert "value" not in env and env["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
    assert os.access(tmp_path / "out" / "serve.sh", os.X_OK) and os.access(tmp_path / "out" / "bench.sh", os.X_OK)
    readme = (tmp_path / "out" / "README.md").read_text().splitlines()
    c = plans["tp"].winner
    assert 3 <= len(readme) <= 10
    assert readme[0] == (f"# vazao plan: {c.shape.label()} x {c.replicas} replicas ({c.count} GPUs, "
                         f"batch <= {c.max_batch})")


def test_overwriting_needs_force(plans, tmp_path):
    out = tmp_path / "deploy"
    write_artefacts(out, plans["one"])
    before = (out / "serve.sh").read_text()
    with pytest.raises(OutputExists):
        write_artefacts(out, plans["replicas"])
    assert (out / "serve.sh").read_text() == before  # nothing was touched
    write_artefacts(out, plans["replicas"], force=True)
    assert (out / "serve.sh").read_text() != before
    (tmp_path / "empty").mkdir()
    write_artefacts(tmp_path / "empty", plans["one"])  # an empty folder is fine
    (tmp_path / "file").write_text("x")
    with pytest.raises(VazaoError, match="is a file"):
        write_artefacts(tmp_path / "file", plans["one"], force=True)
    with pytest.raises(VazaoError, match="does not exist"):
        write_artefacts(tmp_path / "no" / "deploy", plans["one"])


def test_no_winner_writes_nothing(plans, tmp_path):
    result = plans["one"]
    missed = replace(result, candidates=tuple(replace(c, meets_slo=False) for c in result.candidates))
    assert missed.winner is None
    with pytest.raises(VazaoError, match="nothing to write"):
        write_artefacts(tmp_path / "out", missed)
    assert not (tmp_path / "out").exists()


PLAN_ARGS = ["plan", "--models", "llama-3.1-8b", "--gpus", "h100-sxm", "--formats", "bf16", "--traffic", "4/s",
             "--requests", "80", "--simulate-top", "2", "--workers", "1"]


def test_cli_emit_dir(tmp_path):
    out = tmp_path / "deploy"
    r = CliRunner().invoke(app, [*PLAN_ARGS, "--emit-dir", str(out), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)  # --json: one document on stdout, the written paths in it
    assert [os.path.basename(p) for p in doc["emitted"]] == list(FILES)
    assert all(os.path.isfile(p) for p in doc["emitted"])
    assert doc["candidates"][0]["command"] == _commands((out / "serve.sh").read_text())[0][1]

    # an existing, non-empty folder is refused before any simulation, naming the option that allows it
    r = CliRunner().invoke(app, [*PLAN_ARGS, "--emit-dir", str(out), "--json"])
    assert r.exit_code == 2
    assert list(json.loads(r.stdout)) == ["error"] and "pass --force" in json.loads(r.stdout)["error"]

    r = CliRunner().invoke(app, [*PLAN_ARGS, "--emit-dir", str(out), "--force", "--emit", "sglang"])
    assert r.exit_code == 0, r.output
    assert f"wrote {', '.join(FILES)} to {out}" in r.stdout
    assert shlex.split(_commands((out / "serve.sh").read_text())[0][1])[:3] == ["python", "-m",
                                                                                  "sglang.launch_server"]


def test_the_images_run_the_release_whose_flags_were_checked():
    # the command is checked against engine_flags.yaml's parser: the container must run that release
    from vazao.catalog.engine_flags import get_engine_flags

    for engine in ("vllm", "sglang"):
        assert IMAGES[engine].image.endswith(":" + get_engine_flags(engine).release), engine


def test_an_fp8_kv_cache_reaches_trtllm_through_its_options_file(tmp_path):
    """trtllm-serve has no KV-dtype flag (tensorrt_llm/commands/serve.py @ 4c05a74891e4 builds
    KvCacheConfig(free_gpu_memory_fraction=...) alone): KvCacheConfig.dtype ("auto" follows the checkpoint's
    kv_cache_quant_algo, which a 16-bit checkpoint does not set) is reached through --extra_llm_api_options, whose
    kv_cache_config replaces the one the flags build (tensorrt_llm/llmapi/llm_args.py,
    update_llm_args_with_extra_dict). A plan sized on an FP8 cache must set it, or the engine holds half the
    sequences the batch cap counts on."""
    inp = PlanInputs(workload="chat", traffic=Traffic(rate=4.0), slo=SLO.parse("ttft_p95=1s,tpot_p95=50ms"),
                     models=("llama-3.1-8b",), gpus=("h100-sxm",), formats=("bf16",), kv_formats=("fp8",),
                     engines=("trtllm",), requests=80, simulate_top=2, disagg=False)
    result = run_plan(inp, workers=1)
    assert result.winner is not None and result.winner.kv_format == "fp8"
    out = tmp_path / "out"
    paths = write_artefacts(out, result)
    assert [p.name for p in paths] == [*FILES, "trtllm-options.yaml"]
    opts = yaml.safe_load((out / "trtllm-options.yaml").read_text())
    assert opts == {"kv_cache_config": {"dtype": "fp8", "free_gpu_memory_fraction": 0.9}}
    serve = (out / "serve.sh").read_text()
    assert 'cd "$(dirname "$0")"' in serve  # the command names the file relative to the folder it runs in
    (cmd,) = [c for _, c in _commands(serve)]
    argv = shlex.split(cmd)
    assert argv[argv.index("--extra_llm_api_options") + 1] == "trtllm-options.yaml"
    compose = yaml.safe_load((out / "compose.yaml").read_text())
    svc = compose["services"]["replica-0"]
    assert "./trtllm-options.yaml:/vazao/trtllm-options.yaml:ro" in svc["volumes"] and svc["working_dir"] == "/vazao"
    jsonschema.validate(compose, _compose_schema())
    docs = list(yaml.safe_load_all((out / "k8s.yaml").read_text()))
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    assert yaml.safe_load(cm["data"]["trtllm-options.yaml"]) == opts
    pod = docs[0]["spec"]["template"]["spec"]
    assert {"name": "config", "configMap": {"name": cm["metadata"]["name"]}} in pod["volumes"]
    assert pod["containers"][0]["workingDir"] == "/vazao"
    assert {"name": "config", "mountPath": "/vazao", "readOnly": True} in pod["containers"][0]["volumeMounts"]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSIONS[0], strict=True)
    assert "trtllm-options.yaml" in (out / "README.md").read_text()
    # a 16-bit cache is the checkpoint's own: no file, no option
    plain = launch_command("trtllm", replace(_one_replica_spec(result), kv="fp16"))
    assert not plain.files and "--extra_llm_api_options" not in plain.argv


def test_emit_on_another_engine_keeps_its_refusals_and_its_memory(plans):
    """--emit ENGINE for a deployment planned on another engine: that engine's own refusals still hold (TensorRT-LLM
    runs no FP8 below compute capability 8.9: catalog/data/formats.yaml, from its support matrix), and its own memory
    plan caps the batch (llama.cpp allocates every slot's whole context up front, src/llama-kv-cache.cpp)."""
    from vazao.physics.deployment import make_deployment
    from vazao.physics.memory import fit
    from vazao.plan.emit import command_for

    result = plans["one"]  # vLLM, Llama-3.1-8B in bf16 on one H100
    c = result.winner
    cmd = command_for(c, result.lengths, "llama.cpp")
    slots = int(cmd.argv[cmd.argv.index("-np") + 1])
    per_slot = int(cmd.argv[cmd.argv.index("-c") + 1]) // slots
    held = fit(make_deployment(c.shape.model, c.shape.gpu, c.shape.fmt, c.kv_format, engine="llama.cpp"), per_slot)
    assert 1 <= slots <= held.max_concurrent_sequences < c.max_batch
    assert any("its memory holds" in n for n in cmd.notes)

    a100 = _plan("a100-sxm-80gb", "fp8", 4.0)  # vLLM runs FP8 there weight-only (Marlin)
    with pytest.raises(VazaoError, match="TensorRT-LLM FP8 needs compute capability 8.9"):
        command_for(a100.winner, a100.lengths, "trtllm")
    with pytest.raises(VazaoError, match="TensorRT-LLM FP8 needs compute capability 8.9"):
        artefacts(a100, "trtllm")


def test_several_replicas_get_the_readme_caveat_of_a_port_forward(plans):
    # kubectl port-forward to a Service forwards to one of its pods (kubectl docs): the whole planned rate would
    # land on one replica
    many = artefacts(plans["replicas"]).text("README.md")
    assert "a port-forward reaches one pod" in many
    assert "a port-forward reaches one pod" not in artefacts(plans["one"]).text("README.md")
