"""Training cost: FLOPs = k · N · D (k = 6 for full training: forward 2, backward 4), over the
achieved FLOP/s = peak × MFU, in GPU-hours and dollars.

A LoRA fine-tune keeps the base weights frozen: the backward pass still propagates activation
gradients through every layer (2 · N · D) but computes no weight gradients for them, so k ≈ 4 —
two thirds of a full fine-tune on the same tokens; the adapter's own FLOPs are negligible. Seed
000_9652c48a9e6fbd49.txt puts a 7B model on 1T tokens at $50k–$500k of H100 hours."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

from vazao.catalog.hardware import Accelerator
from vazao.catalog.prices import usd_str
from vazao.cost.rates import gpu_rate
from vazao.errors import VazaoError
from vazao.resultfiles import from_document

FULL_FLOPS_PER_PARAM_TOKEN = 6
LORA_FLOPS_PER_PARAM_TOKEN = 4
CENT = Decimal("0.01")
USD_CEILING = Decimal(10) ** 20  # dollars to the cent fit Decimal's 28 digits; every real run costs far less


@dataclass(frozen=True)
class TrainingCost:
    params: float
    tokens: float
    lora: bool
    flops_per_param_token: int
    flops: float
    gpu: str
    dtype: str
    peak_flops_per_gpu: float
    mfu: float
    gpus: int
    achieved_flops_per_s: float  # all GPUs
    gpu_hours: float
    wall_hours: float
    usd_per_gpu_hour: Decimal
    usd_per_gpu_hour_source: str
    usd: Decimal  # to the cent

    @property
    def fraction_of_full(self) -> float:
        """This run's FLOPs over a full-parameter run on the same tokens."""
        return self.flops_per_param_token / FULL_FLOPS_PER_PARAM_TOKEN

    def to_json(self) -> dict:
        d = dict(self.__dict__)
        d["usd_per_gpu_hour"] = usd_str(self.usd_per_gpu_hour)
        d["usd"] = usd_str(self.usd)
        d["fraction_of_full"] = self.fraction_of_full
        return d

    @classmethod
    def from_json(cls, d: Mapping) -> TrainingCost:
        return from_document(cls, d)  # fraction_of_full is derived


def training_cost(params: float, tokens: float, acc: Accelerator, mfu: float,
                  usd_per_hour: Decimal | str | None = None, gpus: int = 1, lora: bool = False,
                  dtype: str | None = None) -> TrainingCost:
    if params <= 0 or tokens <= 0:
        raise VazaoError(f"params and tokens must be positive, got params={params:g}, tokens={tokens:g}")
    if not 0 < mfu <= 1:
        raise VazaoError(f"mfu is a fraction of peak in (0, 1], got {mfu}")
    if gpus < 1:
        raise VazaoError(f"gpus must be a positive integer, got {gpus}")
    if dtype is None:
        dtype, peak = acc.peak_16bit
    else:
        peak = acc.peak(dtype)
    if peak <= 0:
        raise VazaoError(f"{acc.name} lists no {dtype} peak")
    rate, rate_source = gpu_rate(acc, usd_per_hour)
    k = LORA_FLOPS_PER_PARAM_TOKEN if lora else FULL_FLOPS_PER_PARAM_TOKEN
    flops = k * params * tokens
    achieved_per_gpu = peak * mfu
    gpu_hours = flops / achieved_per_gpu / 3600.0
    if not gpu_hours * float(rate) < float(USD_CEILING):
        raise VazaoError(f"{params:g} parameters on {tokens:g} tokens at MFU {mfu:g} costs more than "
                         f"${float(USD_CEILING):g}: check params, tokens and mfu")
    usd = (Decimal(repr(gpu_hours)) * rate).quantize(CENT, rounding=ROUND_HALF_UP)
    return TrainingCost(
        params=float(params), tokens=float(tokens), lora=lora, flops_per_param_token=k, flops=flops,
        gpu=acc.id, dtype=dtype, peak_flops_per_gpu=peak, mfu=mfu, gpus=gpus,
        achieved_flops_per_s=achieved_per_gpu * gpus, gpu_hours=gpu_hours, wall_hours=gpu_hours / gpus,
        usd_per_gpu_hour=rate, usd_per_gpu_hour_source=rate_source, usd=usd,
    )
