"""`vazao plan`: the cheapest deployment that meets the SLO for this traffic, and how to launch it.

    from vazao.plan import PlanInputs, Traffic, run_plan
    from vazao.results import SLO
    result = run_plan(PlanInputs(workload="chat", traffic=Traffic(rate=20), slo=SLO.parse("ttft_p95=500ms"),
                                 models=("llama-3.1-8b",), gpus=("l4", "h100-sxm"), formats=("bf16", "fp8")))
    result.winner
"""

from vazao.plan.evaluate import Candidate, Check, Pruned
from vazao.plan.search import PlanResult, run_plan
from vazao.plan.space import PlanInputs, Shape
from vazao.results import DEFAULT_SLO
from vazao.workload.traffic import Traffic

__all__ = ["DEFAULT_SLO", "Candidate", "Check", "PlanInputs", "PlanResult", "Pruned", "Shape", "Traffic", "run_plan"]
