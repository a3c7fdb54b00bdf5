"""Every figure `vazao estimate` shows carries its 80% band: the decode step and a request's rate are the total
rate's prediction inverted and divided (one band, three figures that always agree), E2E the TTFT and the steps
summed edge by edge, the latency floor the batch-1 rate's band inverted; and the table, narrowed to the
terminal, leaves columns out rather than cut a number."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from vazao.analytic import Estimate, band_of_e2e, band_of_step, estimate, latency_floor_s
from vazao.bands import Band, deployment_band
from vazao.physics.deployment import make_deployment
from vazao.report.console import estimate_table, with_band
from vazao.units import fmt_seconds


@pytest.fixture(scope="module")
def est():
    dep = make_deployment("llama-3.1-70b", "h100-sxm", "bf16", count=8)
    return dep, estimate(dep, [1, 32, 256], 2048, 500)


def test_step_and_request_rate_bands_are_the_total_rates_inverted(est):
    dep, e = est
    for r in e.rows:
        seqs = r.tokens_per_s_total * r.decode_step_s  # batch × ranks × replicas
        assert r.decode_step_band.low == pytest.approx(seqs / r.tokens_per_s_band.high)
        assert r.decode_step_band.high == pytest.approx(seqs / r.tokens_per_s_band.low)
        assert r.tokens_per_s_per_request_band.low == pytest.approx(r.tokens_per_s_band.low / seqs)
        assert r.decode_step_band.low < r.decode_step_s < r.decode_step_band.high
        assert r.tokens_per_s_per_request_band.low < r.tokens_per_s_per_request < r.tokens_per_s_per_request_band.high


def test_e2e_band_sums_the_edges(est):
    _, e = est
    for r in e.rows:
        assert r.e2e_band.low == pytest.approx(r.ttft_band.low + 499 * r.decode_step_band.low)
        assert r.e2e_band.high == pytest.approx(r.ttft_band.high + 499 * r.decode_step_band.high)
        assert r.e2e_band.low < r.e2e_s < r.e2e_band.high
    assert band_of_e2e(Band(1.0, 2.0, "a"), Band(0.1, 0.2, "a"), 11) == Band(2.0, 4.0, "a")
    assert band_of_e2e(None, Band(0.1, 0.2), 11) is None
    assert band_of_step(Band(0.0, 5.0), 1) == (None, None)  # an edge serving nothing has no inverse


def test_latency_floor_band_is_the_batch_one_rate_inverted(est):
    dep, e = est
    floor = latency_floor_s(dep)
    rate = deployment_band(dep, "memory", 1 / floor)  # a one-sequence decode is memory-bound (its row says so)
    assert e.rows[0].bound == "memory"
    assert e.latency_floor_band.low == pytest.approx(1 / rate.high)
    assert e.latency_floor_band.high == pytest.approx(1 / rate.low)


def test_bands_read_back_from_json(est):
    _, e = est
    back = Estimate.from_json(json.loads(json.dumps(e.to_json())))
    assert back.latency_floor_band == e.latency_floor_band
    assert [r.e2e_band for r in back.rows] == [r.e2e_band for r in e.rows]
    assert isinstance(back.rows[0].decode_step_band, Band)


@pytest.mark.parametrize("width", [80, 100, 140, 250])
def test_the_table_leaves_columns_out_rather_than_cut_a_number(est, width):
    _, e = est
    c = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    c.print(estimate_table(e))
    text = c.export_text()
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    last = e.rows[-1]  # the batch-256 step and its band, whole
    assert with_band(fmt_seconds(last.decode_step_s), last.decode_step_band, fmt_seconds) in text
    if width >= 250:
        assert "not shown" not in text
    else:
        assert "not shown at" in text
