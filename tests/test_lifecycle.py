"""Software lifecycle (catalog/data/engine_support.yaml, catalog/engine_support.py): which engine releases run on
a card, one answer in fit, estimate, formats and plan. Each expected fact names its source (the same as the data
row's); a row changing its facts has to change the test with it."""

from __future__ import annotations

import copy
import datetime
import json

import pytest
from typer.testing import CliRunner

from vazao.catalog._load import load_yaml
from vazao.catalog.engine_support import FILE, Lifecycle, check_table, lifecycle
from vazao.catalog.hardware import get_accelerator
from vazao.cli import app
from vazao.errors import VazaoError

runner = CliRunner()
ENGINES = ("vllm", "sglang", "trtllm", "llama.cpp")


def run_json(*args: str) -> dict:
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def life(engine: str, gpu: str) -> Lifecycle:
    return lifecycle(engine, get_accelerator(gpu))


# ---- the data file ----------------------------------------------------------------------------------------
def test_every_row_is_sourced_and_dated():
    raw = load_yaml(FILE)
    check_table(raw)  # the loader's own schema check
    rows = 0
    for engine, e in raw["engines"].items():
        if e.get("applies") is False:
            assert e["note"], engine  # why a profile has no releases
            continue
        for backend in ("cuda", "rocm", "vendor"):
            for row in e.get(backend) or []:
                rows += 1
                assert row["source"] and row["cite"] and row["as_of"], (engine, backend)
                assert "http" in row["source"] or "CMakeLists" in row["source"], (engine, row["source"][:60])
    for section in ("platforms", "amd_targets"):
        for name, p in raw[section].items():
            assert p["source"] and p["as_of"], name
    assert rows >= 7


def test_every_engine_profile_has_a_lifecycle_entry():
    assert set(load_yaml("engines.yaml")["engines"]) <= set(load_yaml(FILE)["engines"])


def test_a_row_without_a_source_is_refused():
    raw = copy.deepcopy(load_yaml(FILE))
    del raw["engines"]["vllm"]["cuda"][0]["source"]
    with pytest.raises(VazaoError, match="missing source"):
        check_table(raw)
    raw = copy.deepcopy(load_yaml(FILE))
    raw["engines"]["sglang"]["cuda"][0]["announced_end"] = {"date": "2027-01-01", "min_cc": "8.0"}
    with pytest.raises(VazaoError, match="announced_end"):
        check_table(raw)  # no source


# ---- the answers --------------------------------------------------------------------------------------------
def test_p40_under_vllm_is_refused_no_release_runs_it():
    # vLLM docs since v0.3.3: "GPU: compute capability 7.0 or higher"; vllm-project/vllm#774 (2023-08-17):
    # "vLLM currently does not support GPU architectures before Volta". The P40 is cc 6.1.
    lc = life("vllm", "p40")
    assert lc.status == "never" and lc.refuses
    assert "no release does" in lc.note and "cc 6.1" in lc.note and "7.0" in lc.note and "vllm#774" in lc.note
    from vazao.physics.deployment import default_engine, make_deployment

    with pytest.raises(VazaoError, match="no release does"):
        make_deployment("llama-3.1-8b", "p40", engine="vllm")
    # the card's natural engine is then one that runs on it: llama.cpp (ggml-cuda CMakeLists.txt builds 6.1
    # with CUDA 12), which says it needs a pre-CUDA-13 build (CUDA 13.0 dropped Pascal: cuFFT deprecation notes)
    assert default_engine(get_accelerator("p40")) == "llama.cpp"
    dep = make_deployment("llama-3.1-8b", "p40")
    assert dep.engine.name == "llama.cpp" and dep.lifecycle.status == "supported"
    assert "before CUDA 13.0" in dep.lifecycle.note


def test_v100_under_vllm_is_predicted_with_the_last_release_that_runs_it():
    # docs v0.14.0: "compute capability 7.0 or higher (e.g., V100 …)"; docs v0.21.0: "7.5 or higher (e.g., T4 …)"
    lc = life("vllm", "v100")
    assert lc.status == "old-release" and not lc.refuses
    assert (lc.last_release, lc.first_without) == ("0.14.0", "0.21.0")
    assert lc.note.startswith("vLLM ≥ 0.21.0 does not run on Tesla V100") and "0.14.0" in lc.note
    assert lc.ends_within(0, datetime.date(2026, 12, 5))  # already ended: any horizon excludes it


def test_t4_is_below_tensorrt_llms_ampere_floor_and_fine_for_vllm_and_sglang():
    # TensorRT-LLM support matrix 0.18.2 / Supported Hardware: Blackwell, Hopper, Ada Lovelace, Ampere (cc >= 8.0)
    lc = life("trtllm", "t4")
    assert lc.status == "not-current" and not lc.refuses and "older releases are not recorded" in lc.note
    # vLLM docs v0.31.0 "7.5 or higher (e.g., T4 …)"; SGLang quickstart "sm75 and above, e.g., T4"
    assert life("vllm", "t4").status == life("sglang", "t4").status == "supported"


def test_a_current_card_has_no_note():
    for engine in ENGINES:
        lc = life(engine, "h100-sxm")
        assert lc.status == "supported" and lc.note == "", engine


def test_profiles_without_releases_and_other_vendors_say_nothing():
    assert life("ideal", "p40").status == life("naive", "p40").status == "not-applicable"
    # TensorRT-LLM on AMD is the vendor rule's answer (EngineProfile.refusal_on), not a lifecycle note
    assert life("trtllm", "mi300x").status == "not-applicable" and life("trtllm", "mi300x").note == ""
    # vLLM docs v0.14.0: "MI300 (gfx942)"; AMD ROCm GPU specs: MI300X is gfx942
    assert life("vllm", "mi300x").status == "supported"
    # nothing sourced for SGLang's AMD targets: unknown, said so, never refused
    lc = life("sglang", "mi300x")
    assert lc.status == "unknown" and not lc.refuses and "no sourced record" in lc.note


def test_an_announced_end_counts_against_the_horizon():
    raw = copy.deepcopy(load_yaml(FILE))
    raw["engines"]["vllm"]["cuda"][-1]["announced_end"] = {
        "date": "2027-06-30", "min_cc": "8.0", "source": "a test's own announcement"}
    lc = lifecycle("vllm", get_accelerator("t4"), raw)
    assert lc.status == "supported" and lc.announced_end == "2027-06-30" and "2027-06-30" in lc.note
    today = datetime.date(2026, 12, 5)
    assert lc.ends_within(7, today) and not lc.ends_within(6, today)
    assert not lifecycle("vllm", get_accelerator("h100-sxm"), raw).ends_within(120, today)  # cc 9.0 ≥ 8.0


def test_a_lifecycle_reads_back():
    lc = life("vllm", "v100")
    assert Lifecycle.from_json(json.loads(json.dumps(lc.to_json()))) == lc
    with pytest.raises(VazaoError):
        Lifecycle.from_json({"engine": "vllm", "gpu": "v100", "status": "maybe"})


def test_months_are_read_by_the_input_layer():
    from vazao import inputs

    assert [inputs.months(x, "h") for x in ("24mo", "2y", "18", "0", "3 months")] == [24, 24, 18, 0, 3]
    for bad in ("-1", "abc", "11y", "1.5y", ""):
        with pytest.raises(VazaoError):
            inputs.months(bad, "--support-horizon")


# ---- one answer everywhere -----------------------------------------------------------------------------------
def test_the_same_note_in_formats_fit_estimate_and_plan():
    note = life("vllm", "v100").note
    formats = run_json("formats", "--gpu", "v100", "--engine", "vllm")
    fit = run_json("fit", "llama-3.1-8b", "--gpu", "v100", "--engine", "vllm", "--format", "fp16")
    est = run_json("estimate", "llama-3.1-8b", "--gpu", "v100", "--engine", "vllm", "--format", "fp16",
                   "--batch", "1")
    plan = runner.invoke(app, ["plan", "-m", "llama-3.1-8b", "-g", "v100", "-f", "fp16", "--max-gpus", "1",
                               "--requests", "30", "--simulate-top", "1", "--no-disagg", "--workers", "1",
                               "--curves", "0", "--json"])
    assert plan.exit_code in (0, 1), plan.output  # 1: nothing met the SLO; the document is written either way
    plan_doc = json.loads(plan.stdout)
    [plan_life] = [d for d in plan_doc["lifecycle"] if (d["engine"], d["gpu"]) == ("vllm", "v100")]
    assert formats["lifecycle"]["note"] == fit["lifecycle"]["note"] == est["lifecycle"]["note"] \
        == plan_life["note"] == note
    # and on the console, the same words
    res = runner.invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "v100", "--format", "fp16", "--batch", "1"])
    assert res.exit_code == 0 and "vLLM ≥ 0.21.0 does not run on Tesla V100" in " ".join(res.output.split())


def test_formats_refuses_every_format_where_no_release_runs():
    d = run_json("formats", "--gpu", "p40", "--engine", "vllm")
    assert d["lifecycle"]["status"] == "never"
    assert {r["status"] for r in d["formats"]} == {"unsupported"}
    assert all(r["reason"] == d["lifecycle"]["note"] for r in d["formats"])
    res = runner.invoke(app, ["estimate", "llama-3.1-8b", "--gpu", "p40", "--engine", "vllm"])
    assert res.exit_code == 2 and d["lifecycle"]["note"] in " ".join(res.output.split())


def test_plan_support_horizon_excludes_ended_support_with_its_reason():
    args = ["plan", "-m", "llama-3.1-8b", "-g", "v100,h100-sxm", "-f", "fp16", "--max-gpus", "1", "--traffic", "2/s",
            "--requests", "30", "--simulate-top", "2", "--no-disagg", "--workers", "1", "--curves", "0", "--json"]
    kept = json.loads(runner.invoke(app, args).stdout)
    assert "v100" in {c["gpu"] for c in kept["candidates"]}
    res = runner.invoke(app, [*args, "--support-horizon", "24mo"])
    assert res.exit_code in (0, 1), res.output
    d = json.loads(res.stdout)
    assert {c["gpu"] for c in d["candidates"]} == {"h100-sxm"}
    assert d["pruned"]["by_reason"] == {"support": 1}
    [ex] = d["pruned"]["examples"]
    assert ex["reason"] == "support" and ex["detail"] == life("vllm", "v100").note
    assert d["inputs"]["support_horizon_months"] == 24
    bad = runner.invoke(app, [*args, "--support-horizon", "11y"])
    assert bad.exit_code == 2 and "at most 120 months" in bad.output
