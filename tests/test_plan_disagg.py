"""Issue 20: the plan searches disaggregated prefill/decode pools (P:D ratios, the simulator's DisaggConfig)
and emits what runs them: each server's command, the router in front, compose and Kubernetes files.

A long-prompt workload with a tight TPOT limit is where taking prefill out of the decode steps pays: rag's
4,000-token median prompts (examples/rag.yaml) on H100s at TPOT p95 <= 15 ms."""

from __future__ import annotations

import dataclasses
import json
from importlib import resources

import jsonschema
import kubernetes_validate
import pytest
import yaml

from vazao.catalog.engine_flags import check_command
from vazao.catalog.local import resolve_accelerator
from vazao.cost.money import to_decimal
from vazao.plan import PlanInputs, Traffic, run_plan
from vazao.plan.artefacts import IMAGES, artefacts
from vazao.plan.emit import disagg_launch
from vazao.plan.evaluate import _deployment, decode_cap, disagg_splits
from vazao.results import SLO

SLO_RAG = SLO.parse("ttft_p95=2s,tpot_p95=15ms")


@pytest.fixture(scope="module")
def planned():
    inp = PlanInputs(workload="rag", traffic=Traffic(rate=8.0), slo=SLO_RAG, models=("llama-3.1-8b",),
                     gpus=("h100-sxm",), formats=("fp8",), engines=("sglang",), requests=200, simulate_top=6)
    return inp, run_plan(inp, workers=1)


def _split(r):
    return next(c for c in r.candidates if c.disagg and c.meets_slo)


def test_the_plan_tries_prefill_decode_splits_and_judges_them_whole(planned):
    inp, r = planned
    split = [c for c in r.candidates if c.disagg]
    assert split, [c.layout() for c in r.candidates]
    for c in split:
        p, d = c.disagg
        assert c.replicas == p + d and c.count == (p + d) * c.shape.gpus_per_replica
        assert c.source == "simulated" and "disaggregated" in c.detail
        price = to_decimal(resolve_accelerator("h100-sxm").usd_per_hour)
        assert c.usd_per_month == price * c.count * 730  # every GPU of both pools, 730 h a month (cost.money)
    # the ranking holds them to the same rule as the colocated ones: the cheapest month that meets comes first
    met = [c for c in r.candidates if c.meets_slo]
    assert all(r.winner.usd_per_month <= c.usd_per_month for c in met)


def test_a_decode_pool_holds_more_sequences_than_a_mixed_replica(planned):
    # no prompt is prefilled in a decode server's steps, so its batch cap is set by the decode step alone
    inp, r = planned
    c = _split(r)
    mixed = next(x for x in r.candidates if not x.disagg and x.shape == c.shape)
    assert c.max_batch >= mixed.max_batch
    dep = _deployment(c.shape, inp.profile)
    assert decode_cap(dep, inp, 1) == 1 and decode_cap(dep, inp, 10_000) >= c.max_batch  # bounded by its cap


def test_splits_never_cost_more_replicas_than_the_colocated_answer(planned):
    inp, r = planned
    for c in r.candidates:
        if c.disagg is None and c.source == "simulated":
            for p, d in disagg_splits(c, inp):
                assert p >= 1 and d >= 1 and p + d <= max(2, c.replicas)


def test_only_engines_with_a_whole_launch_are_split():
    # vLLM's servers take a role, but v0.34 ships no router program: the planner does not propose it
    inp = PlanInputs(workload="rag", traffic=Traffic(rate=8.0), slo=SLO_RAG, models=("llama-3.1-8b",),
                     gpus=("h100-sxm",), formats=("fp8",), engines=("vllm",), requests=120, simulate_top=3)
    assert not [c for c in run_plan(inp, workers=1).candidates if c.disagg]
    off = dataclasses.replace(inp, engines=("sglang",), disagg=False)
    assert not [c for c in run_plan(off, workers=1).candidates if c.disagg]


def test_the_launch_is_every_server_and_the_router_each_checked(planned):
    _, r = planned
    c = _split(r)
    launch = disagg_launch(c, r.lengths)
    p, d = c.disagg
    roles = [i.role for i in launch.instances]
    assert roles == ["prefill"] * p + ["decode"] * d
    for i in launch.instances:
        argv = i.command.argv
        assert argv[argv.index("--disaggregation-mode") + 1] == i.role  # SGLang fields/disagg.py:55
        assert argv[argv.index("--port") + 1] == str(i.port)
        assert argv[argv.index("--max-running-requests") + 1] == str(c.max_batch)
        check_command(i.command, "9.0")
    ports = [i.port for i in launch.instances]
    assert len(set(ports)) == len(ports) and 8000 not in ports  # the endpoint's port is the router's
    router = launch.router.argv
    assert router[:3] == ("python", "-m", "sglang_router.launch_router") and "--pd-disaggregation" in router
    assert router.count("--prefill") == p and router.count("--decode") == d
    check_command(launch.router)


def test_the_files_run_it_and_validate(planned):
    inp, r = planned
    c = _split(r)
    a = artefacts(dataclasses.replace(r, candidates=(c, *[x for x in r.candidates if x is not c])))
    p, d = c.disagg
    compose = yaml.safe_load(a.text("compose.yaml"))
    schema = json.loads((resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json")
                        .read_text(encoding="utf-8"))
    jsonschema.validate(compose, schema)
    servers = {k: v for k, v in compose["services"].items() if k != "router"}
    assert sorted(servers) == sorted([f"prefill-{i}" for i in range(p)] + [f"decode-{i}" for i in range(d)])
    gpus = [g for v in servers.values() for g in v["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"]]
    assert sorted(gpus, key=int) == [str(i) for i in range(c.count)]  # every GPU once
    routed = compose["services"]["router"]["command"]
    assert all(f"http://{name}:" in " ".join(routed) for name in servers)  # the router names each server
    docs = list(yaml.safe_load_all(a.text("k8s.yaml")))
    for doc in docs:
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
    deps = [x for x in docs if x["kind"] == "Deployment"]
    assert len(deps) == p + d + 1  # a Deployment per server and the router's
    gpu_pods = [x for x in deps if x["spec"]["template"]["spec"]["containers"][0].get("resources")]
    assert all(x["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
               == c.shape.gpus_per_replica for x in gpu_pods) and len(gpu_pods) == p + d
    assert all(x["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGES["sglang"].image for x in deps)
    serve = a.text("serve.sh")
    launch = disagg_launch(c, r.lengths)
    assert all(i.command.shell in serve for i in launch.instances) and launch.router.shell in serve
    assert "vazao bench http://127.0.0.1:8000/v1" in a.text("bench.sh")
