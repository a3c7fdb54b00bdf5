"""The published-quality table behind `vazao plan --quality-floor` (catalog/data/quality.yaml): cited
figures only; a combination nobody published is unknown, and the planner flags it instead of guessing."""

from __future__ import annotations

from vazao.catalog._load import load_yaml
from vazao.plan import PlanInputs, Traffic, run_plan
from vazao.plan.quality import meets_floor, quality_of
from vazao.results import SLO


def test_every_row_cites_its_source():
    for row in load_yaml("quality.yaml")["quality"]:
        assert row["source"].startswith("https://") and row["as_of"] and 0.5 < row["recovery"] < 1.1


def test_lookups():
    # RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16 model card: 98.9% recovery on OpenLLM v1
    assert quality_of("llama", "int4-gptq").recovery == 0.989
    assert quality_of("llama", "bf16").recovery == 1.0
    assert quality_of("llama", "int4-awq") is None  # AWQ is another method: not the GPTQ figure
    assert meets_floor("llama", "int4-gptq", 0.99) == "not met"
    assert meets_floor("llama", "w8a8-int8", 0.99) == "met"
    assert meets_floor("qwen3", "int4-gptq", 0.9) == "unknown"


def test_the_floor_prunes_published_misses_and_unknowns():
    # issue 20, point 9: --quality-floor 0.99 used to prune GPTQ (published 0.989) and crown AWQ, whose
    # quality nobody published; an unknown quality never passes a floor, and the reason says it was unknown
    # an L4 streams 300 GB/s: 16-bit Llama-8B decodes at ~80 ms a token alone, so the limit leaves it room
    r = run_plan(PlanInputs(workload="chat", traffic=Traffic(rate=2), slo=SLO.parse("ttft_p95=2s,tpot_p95=150ms"),
                            models=("llama-3.1-8b",), gpus=("l4",), formats=("int4-gptq", "int4-awq", "bf16"),
                            max_gpus=2, requests=60, quality_floor=0.99, simulate_top=4), workers=1)
    assert any(p.reason == "quality" and p.shape.fmt == "int4-gptq" for p in r.pruned)
    assert not [c for c in r.candidates if c.shape.fmt == "int4-awq"]
    awq = [p for p in r.pruned if p.shape.fmt == "int4-awq"]
    assert awq and all(p.reason == "quality" and "quality unknown" in p.detail for p in awq)
    assert r.winner is not None and r.winner.shape.fmt == "bf16"
    assert all(c.quality == 1.0 for c in r.candidates if c.shape.fmt == "bf16")
