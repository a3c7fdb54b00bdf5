"""A workload whose requests are longer than a model's own context: no setting of any engine serves them (vLLM
answers HTTP 400 past --max-model-len, vllm/entrypoints/openai/serving_engine.py, OpenAIServing._validate_input;
SGLang past --context-length), so `vazao plan` prunes such a model with the share it would refuse, instead of
capping the command's context at the model's and calling the deployment one that meets the SLO."""

from __future__ import annotations

from vazao.plan import PlanInputs, Traffic, run_plan
from vazao.plan.emit import spec_for
from vazao.plan.space import Lengths
from vazao.results import SLO

SLO_ = SLO.parse("ttft_p95=2s,tpot_p95=80ms")


def _rag(models: tuple[str, ...]):
    inp = PlanInputs(workload="rag", traffic=Traffic(rate=1.0), slo=SLO_, models=models, gpus=("h100-sxm",),
                     formats=("bf16",), requests=80, simulate_top=2, disagg=False)
    return run_plan(inp, workers=1)


def test_refused_share_counts_the_requests_past_the_context():
    lengths = Lengths(1.0, 1.0, 10, longest=40, requests=(10, 20, 30, 40))
    assert lengths.refused_share(40) == 0.0
    assert lengths.refused_share(30) == 0.25
    assert lengths.refused_share(9) == 1.0
    assert Lengths(1.0, 1.0, 10, longest=40).refused_share(30) == 1.0  # nothing drawn: all of it unknown


def test_an_8k_model_is_pruned_from_a_rag_plan_with_the_share_it_refuses():
    r = _rag(("llama-3-8b", "llama-3.1-8b"))  # Meta-Llama-3-8B's max_position_embeddings 8,192; 3.1's 131,072
    share = r.lengths.refused_share(8192)
    assert 0.05 < share < 0.2  # rag's retrieved documents: 10.6% of its requests pass 8,192 tokens
    pruned = [p for p in r.pruned if p.reason == "context"]
    assert pruned and {p.shape.model for p in pruned} == {"llama-3-8b"}
    assert f"{share:.1%} of the workload's requests" in pruned[0].detail and "8,192-token context" in pruned[0].detail
    assert r.winner is not None and r.winner.shape.model == "llama-3.1-8b"
    assert spec_for(r.winner, r.lengths).max_model_len >= r.lengths.longest  # it takes every request


def test_a_simulated_run_that_refuses_requests_does_not_meet(monkeypatch):
    # without the prune the command's context is the model's and the simulator refuses what is longer: such a run
    # is not one that meets the SLO, whatever its latencies
    monkeypatch.setattr(Lengths, "refused_share", lambda self, model_max: 0.0)
    r = _rag(("llama-3-8b",))
    simulated = [c for c in r.candidates if c.source == "simulated"]
    assert simulated and r.winner is None
    assert all(not c.meets_slo and not c.marginal and "requests refused" in c.detail for c in simulated)
    assert "exceeds the max context of 8,192" in simulated[0].detail
