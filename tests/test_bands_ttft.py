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


def test_a_speed_without_speed_residuals_takes_the_latency_it_is_the_inverse_of():
    # a profile fitted on serving latencies alone (vLLM, SGLang): a decode tok/s is 1 / TPOT, so its
    # log(measured / predicted) is the TPOT's with the sign changed — the band's low edge is the latency's
    # high one; a prefill tok/s is the TTFT's inverse
    res = {"serving ttft": _q(40, -0.6, 0.2), "serving latency": _q(40, -0.1, 0.3), "all": _q(80, -0.9, 0.9)}
    lo, hi, _ = band(_profile(res), "memory", 100.0)
    assert (lo, hi) == pytest.approx((100 * math.exp(-0.3), 100 * math.exp(0.1)))
    lo, hi, _ = band(_profile(res), "compute", 100.0)
    assert (lo, hi) == pytest.approx((100 * math.exp(-0.2), 100 * math.exp(0.6)))
    # a speed regime the fit has rows of keeps its own
    own = {**res, "memory": _q(40, -0.05, 0.05)}
    lo, _, _ = band(_profile(own), "memory", 100.0)
    assert lo == pytest.approx(100 * math.exp(-0.05))
