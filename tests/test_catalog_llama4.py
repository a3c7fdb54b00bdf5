"""Llama 4 in the catalog: parameter counts from the config.json figures against the model cards."""

from __future__ import annotations

import pytest

from vazao.catalog.models import get_model


@pytest.mark.parametrize("name, total_b, active_b, moe_layers", [
    # meta-llama/Llama-4-Scout-17B-16E model card: 109B total, 17B active; every layer MoE
    ("Llama-4-Scout-17B-16E", 109, 17, 48),
    # meta-llama/Llama-4-Maverick-17B-128E model card: 400B total, 17B active; MoE every other layer
    ("Llama-4-Maverick-17B-128E", 400, 17, 24),
])
def test_llama4_parameters(name, total_b, active_b, moe_layers):
    m = get_model(name)
    assert m.total_params / 1e9 == pytest.approx(total_b, rel=0.03)
    assert m.active_params / 1e9 == pytest.approx(active_b, rel=0.06)  # the card rounds 16.1B up to 17B
    assert m.moe_layers == moe_layers and m.experts_per_token == 1 and m.num_shared_experts == 1
    assert m.sliding_window == 8192 and m.sliding_window_layers == 36  # chunked attention on 3 of 4 layers
