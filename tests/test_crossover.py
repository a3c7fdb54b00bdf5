"""The crossover batch in closed form (two decode steps and a check on each side for dense models)
is exactly the batch the step-by-step search finds, on dense, quantized and MoE deployments."""

import itertools

import pytest

import vazao.analytic as E
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment


def _searched(dep, context):
    def bound(b):
        c = E.decode_cost(dep, b, context)
        return c.compute_s >= c.memory_s

    return 1 if bound(1) else E._search_crossover(bound)


CASES = list(itertools.product(("llama-3.1-8b", "qwen2.5-32b", "mixtral-8x7b"), ("h100-sxm", "rtx-4090", "b200", "l4"),
                               ("bf16", "fp8", "int4-awq")))


@pytest.mark.parametrize("model,gpu,fmt", CASES)
def test_closed_form_equals_search(model, gpu, fmt):
    try:
        dep = make_deployment(model, gpu, fmt, count=1, engine="vllm")
    except VazaoError:
        pytest.skip("format not served there")
    for context in (1, 256, 2048, 16384):
        assert E.crossover_batch(dep, context) == _searched(dep, context), context


def test_some_cases_do_cross():
    deps = [make_deployment("llama-3.1-8b", "h100-sxm", "int4-awq", count=1, engine="vllm"),
            make_deployment("llama-3.1-8b", "a100-sxm-80gb", "bf16", count=1, engine="ideal")]
    assert any(E.crossover_batch(d, 1) not in (None, 1) for d in deps)
