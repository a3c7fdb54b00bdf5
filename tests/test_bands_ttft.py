"""Issue 21: a TTFT's band comes from TTFT residuals. On the serving file the TTFT residuals spread about
three times as wide as TPOT's (bench/results/serving_fit.json), so pooling them made TPOT bands too wide
and TTFT bands too narrow. A calibration without TTFT residuals of its own falls back to the regime's
latencies, then to all rows."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from vazao.bands import band, band_key
from vazao.physics.profiles import get_engine


def _q(n, lo, hi):
    return {"n": n, "q10": lo, "q50": 0.0, "q90": hi}


def _profile(residuals):
    return replace(get_engine("vllm"), calibration={"residuals": residuals, "fitted_on": {}})


def test_keys():
    assert band_key("serving", "ttft_ms") == "serving ttft"
    assert band_key("serving", "tpot_ms") == "serving latency"
    assert band_key("memory", "output_tok_s_total") == "memory"


def test_ttft_has_its_own_band_and_falls_back():
    res = {"serving ttft": _q(40, -0.5, 0.5), "serving latency": _q(40, -0.1, 0.1), "all": _q(80, -0.3, 0.3)}
    lo, hi, _ = band(_profile(res), "serving ttft", 100.0)
    assert (lo, hi) == pytest.approx((100 * math.exp(-0.5), 100 * math.exp(0.5)))
    lo, hi, _ = band(_profile(res), "serving latency", 100.0)
    assert (lo, hi) == pytest.approx((100 * math.exp(-0.1), 100 * math.exp(0.1)))
    few = {**res, "serving ttft": _q(5, -0.5, 0.5)}  # too few TTFT rows: the regime's latencies
    lo, _, _ = band(_profile(few), "serving ttft", 100.0)
    assert lo == pytest.approx(100 * math.exp(-0.1))
    only_all = {"all": _q(80, -0.3, 0.3)}
    lo, _, _ = band(_profile(only_all), "serving ttft", 100.0)
    assert lo == pytest.approx(100 * math.exp(-0.3))
