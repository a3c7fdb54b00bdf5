"""Training cost: 6·N·D over peak × MFU (seed 000_9652c48a9e6fbd49.txt: a 7B model on 1T tokens costs
$50k–$500k of H100 hours)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from vazao.catalog.hardware import get_accelerator
from vazao.cli import app
from vazao.cost.training import training_cost
from vazao.errors import VazaoError

runner = CliRunner()
H100 = get_accelerator("h100-sxm")


def test_flops_and_gpu_hours_by_hand():
    tc = training_cost(7e9, 1e12, H100, 0.4, "2.49")
    assert tc.flops == pytest.approx(6 * 7e9 * 1e12)
    peak = H100.peak("bf16")
    assert tc.peak_flops_per_gpu == peak
    assert tc.gpu_hours == pytest.approx(4.2e22 / (peak * 0.4) / 3600)
    assert tc.usd == (Decimal(repr(tc.gpu_hours)) * Decimal("2.49")).quantize(Decimal("0.01"))


def test_seed000_7b_on_1t_tokens_lands_in_50k_to_500k():
    """'Treinar um modelo de 7B em um corpus de 1 trilhão de tokens custa ... entre 50 mil e 500 mil
    dólares em horas de GPU H100.' At MFU 0.4 and the GPU catalog's H100 price."""
    tc = training_cost(7e9, 1e12, H100, 0.4)
    assert tc.usd_per_gpu_hour == Decimal(repr(H100.usd_per_hour))
    assert Decimal(50_000) <= tc.usd <= Decimal(500_000)
    # across plausible MFU (35–50%) and H100 rental ($2–3.5/GPU-h) it stays in the seed's range
    for mfu in (0.35, 0.4, 0.45):
        for rate in ("2.25", "2.49", "3.50"):
            assert Decimal(50_000) <= training_cost(7e9, 1e12, H100, mfu, rate).usd <= Decimal(500_000)


def test_lora_is_two_thirds_of_a_full_finetune():
    full = training_cost(7e9, 2e10, H100, 0.4, "2.49")
    lora = training_cost(7e9, 2e10, H100, 0.4, "2.49", lora=True)
    assert lora.flops == pytest.approx(full.flops * 2 / 3)
    assert lora.fraction_of_full == pytest.approx(2 / 3)
    # seed 000: a LoRA adaptation costs $1k–$50k; 20B tokens on a 7B model is at the low end
    assert Decimal(100) < lora.usd < Decimal(50_000)


def test_gpus_shorten_the_wall_clock_not_the_bill():
    one = training_cost(7e9, 1e12, H100, 0.4, "2")
    many = training_cost(7e9, 1e12, H100, 0.4, "2", gpus=512)
    assert many.usd == one.usd and many.wall_hours == pytest.approx(one.wall_hours / 512)


def test_bad_input():
    with pytest.raises(VazaoError, match=r"mfu is a fraction of peak"):
        training_cost(7e9, 1e12, H100, 1.5)
    with pytest.raises(VazaoError, match="positive"):
        training_cost(0, 1e12, H100, 0.4)
    with pytest.raises(VazaoError, match="float"):
        training_cost(7e9, 1e12, H100, 0.4, 2.49)  # money as a float is refused


def test_train_cli():
    res = runner.invoke(app, ["cost", "train", "--params", "7e9", "--tokens", "1e12", "--gpu", "h100-sxm",
                              "--mfu", "0.4", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["flops"] == pytest.approx(4.2e22)
    assert Decimal(50_000) <= Decimal(d["usd"]) <= Decimal(500_000)
    res = runner.invoke(app, ["cost", "train", "--params", "7B", "--tokens", "1T", "--gpu", "h100-sxm"])
    assert res.exit_code == 0 and "GPU-hours" in res.output
    res = runner.invoke(app, ["cost", "train", "--params", "7X", "--tokens", "1T", "--gpu", "h100-sxm"])
    assert res.exit_code == 2 and "count suffix" in res.output
    res = runner.invoke(app, ["cost", "train", "--params", "7B", "--tokens", "1T", "--gpu", "h1000"])
    assert res.exit_code == 2 and "unknown GPU" in res.output
