"""One way to build a deployment (issue 22): make_deployment, from names or objects, is what every command
and library path calls, so the same arguments give the same deployment and the same step time everywhere;
engine=None is the GPU's natural engine in every command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vazao
from vazao.catalog.hardware import get_accelerator
from vazao.catalog.models import get_model
from vazao.cli import app
from vazao.cost.policy import SelfHostQuery, selfhost_for
from vazao.physics.deployment import default_engine, make_deployment
from vazao.physics.step import BatchShape, step_cost

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def _cli_json(*argv: str) -> dict:
    """One command's --json document; the command must succeed."""
    res = runner.invoke(app, [*argv, "--json"])
    assert res.exit_code == 0, res.output
    doc: dict = json.loads(res.stdout)
    return doc


def test_names_and_objects_give_the_same_deployment():
    by_name = make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=4, engine="trtllm")
    by_object = make_deployment(get_model("llama-3.1-70b"), get_accelerator("h100-sxm"), "fp8", count=4,
                                engine=vazao.get_engine("trtllm"))
    # TensorRT-LLM's FP8 checkpoints run an FP8 KV cache (engines.yaml kv_dtype) whichever way it is asked
    assert by_name.kv_format.name == by_object.kv_format.name == "fp8"
    shape = BatchShape.decode(64, 2048)
    assert step_cost(by_name, shape).time_s == step_cost(by_object, shape).time_s


def test_the_cli_and_the_library_price_the_same_step():
    doc = _cli_json("estimate", "llama-3.1-70b", "--gpu", "h100-sxm", "--format", "fp8", "--engine", "trtllm",
                    "--count", "4", "--batch", "1,32", "--input", "1024", "--output", "256")
    dep = make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=4, engine="trtllm")
    est = vazao.estimate(dep, [1, 32], 1024, 256)
    assert doc["kv_format"] == dep.kv_format.name
    assert [r["decode_step_s"] for r in doc["rows"]] == [r.decode_step_s for r in est.rows]


@pytest.mark.parametrize("gpu", ["m2-ultra", "h100-sxm"])
def test_no_engine_means_the_gpus_own_in_every_command(gpu):
    own = default_engine(get_accelerator(gpu))
    assert own == ("llama.cpp" if gpu == "m2-ultra" else "vllm")
    est = _cli_json("estimate", "llama-3.1-8b", "--gpu", gpu)
    sim = _cli_json("simulate", "llama-3.1-8b", "--gpu", gpu, "--requests", "20")
    cost = _cli_json("cost", "selfhost", "llama-3.1-8b", "--gpu", gpu, "--input", "500", "--output", "100",
                     "--usd-per-hour", "1", "--count", "1")
    assert est["engine"] == own and f"({own})" in cost["deployment"]
    assert f"({own})" in json.dumps(sim)
    lib = selfhost_for(SelfHostQuery("llama-3.1-8b", gpu, vazao.RequestShape(500, 100),
                                     count=1, usd_per_hour="1", analytic=True))
    assert f"({own})" in lib.deployment


def test_a_model_file_brings_its_format_and_bytes(gemma_gguf):
    path = gemma_gguf
    dep = make_deployment(str(path), "m2-ultra")
    assert dep.engine.name == "llama.cpp" and dep.weight_format.name.startswith("q4")
    assert dep.weights_bytes == pytest.approx(path.stat().st_size, rel=0.1)


def test_the_shipped_workloads_have_one_copy():
    """examples/ links the built-in workloads to the package's copies (src/vazao/examples) instead of
    holding a second copy that nothing keeps equal."""
    shipped = sorted(p.name for p in (ROOT / "src" / "vazao" / "examples").glob("*.yaml"))
    assert shipped
    for name in shipped:
        link = ROOT / "examples" / name
        assert link.is_symlink() and link.resolve() == (ROOT / "src" / "vazao" / "examples" / name).resolve()
