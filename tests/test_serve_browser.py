"""`vazao serve` in headless Chromium, driven as a user drives it: real clicks, key presses and typed
text, files picked in a file input. Each view's figures are checked against the library's answer for
the same inputs, the page asks nothing of the network, logs no console error, and leaves a screenshot
per view in tests/artifacts/serve/ (git-ignored). Skipped, with the reason, only where Chromium or the
report extra is missing (`make test` installs Chromium where it can)."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("altair", reason="the report extra (altair) is not installed")
pytest.importorskip("vl_convert", reason="the report extra (vl-convert-python) is not installed")

from _cdp import find_chromium  # noqa: E402
from _jobs import ended  # noqa: E402
from _serve_browser import Browser  # noqa: E402

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on PATH (apt-get install -y chromium)")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "serve"
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="module")
def server():
    from vazao.serve.server import make_server, url_of

    srv = make_server(0)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    yield srv, url_of(srv)
    srv.shutdown()
    srv.app.jobs.close()
    srv.server_close()


@pytest.fixture(scope="module")
def page(server, tmp_path_factory):
    b = Browser(CHROMIUM, tmp_path_factory.mktemp("chromium"))
    yield b
    b.close()


@pytest.fixture
def fresh(page, server):
    """The page opened anew at the server's root, its logs emptied; after the test, no console error
    and no request that left 127.0.0.1."""
    _, url = server
    page.clear_events()
    page.goto(url)
    yield page
    assert page.console_errors() == []
    port = url.rsplit(":", 1)[1]
    outside = [u for u in page.requests() if not u.startswith((f"http://127.0.0.1:{port}", "blob:", "data:"))]
    assert outside == []


def _value(page, selector: str) -> str:
    return page.js(f"document.querySelector({json.dumps(selector)}).dataset.value")


def _library_explore(**kw):
    from vazao.analytic import estimate
    from vazao.physics.deployment import make_deployment

    dep = make_deployment(kw["model"], kw["gpu"], kw.get("fmt"), count=kw["count"], ideal=kw.get("ideal", False),
                          strict=False)
    est = estimate(dep, [kw["batch"]], kw["input"], kw["output"])
    return dep, est


def test_explorer_batch_slider_crosses_to_compute_bound(fresh):
    """Llama 3.1 70B on 8× H100 at the physical limit with a near-empty cache: the slider walks decode
    across the crossover batch the library computes (≈ 300, seed 004), and every figure is the library's."""
    from vazao.analytic import crossover_batch

    page = fresh
    assert page.js("document.querySelector('#model').value") == "llama-3.1-70b"
    assert page.js("document.querySelector('#gpu').value") == "h100-sxm"
    assert page.js("document.querySelector('#count').value") == "8"
    n = page.answered()
    page.click("#ideal")
    page.after_answer(n)
    for field, text in (("#input", "1"), ("#output", "1")):
        n = page.answered()
        page.type_into(field, text)
        page.after_answer(n)
    dep, _ = _library_explore(model="llama-3.1-70b", gpu="h100-sxm", count=8, ideal=True, batch=1, input=1, output=1)
    cross = crossover_batch(dep, 1)
    assert cross is not None and 250 <= cross <= 350  # seed 004's ≈ 300 at the ideal limit
    n = page.answered()
    page.type_into("#batch", str(cross - 1))
    page.after_answer(n)
    assert page.js("document.querySelector('#m-bound').dataset.value") == "memory"
    assert page.js("document.querySelector('#crossover').dataset.crossover") == str(cross)
    n = page.answered()
    page.js("document.querySelector('#batch-range').focus()")
    page.key("ArrowRight")  # the slider, by keyboard: one batch up
    page.after_answer(n)
    assert page.js("document.querySelector('#batch').value") == str(cross)
    assert page.js("document.querySelector('#m-bound').dataset.value") == "compute"
    _, est = _library_explore(model="llama-3.1-70b", gpu="h100-sxm", count=8, ideal=True, batch=cross, input=1,
                              output=1)
    row = est.rows[0]
    assert row.bound == "compute"
    for sel, want in (("#m-ttft", row.ttft_s), ("#m-itl", row.decode_step_s), ("#m-tps", row.tokens_per_s_total),
                      ("#m-floor", est.latency_floor_s), ("#m-maxload", est.max_load_tokens_per_s),
                      ("#m-power", row.decode_power_w), ("#m-joules", row.decode_j_per_token)):
        assert float(_value(page, sel)) == pytest.approx(want, rel=1e-9), sel
    point = page.js("(() => { const p = document.querySelector('circle[data-chosen][data-phase=decode]'); "
                    "return [+p.dataset.batch, +p.dataset.intensity, +p.dataset.flops]; })()")
    assert point[0] == cross
    assert point[1] == pytest.approx(row.decode.flops / row.decode.bytes, rel=1e-9)
    assert point[2] == pytest.approx(row.decode.flops / row.decode.time_s, rel=1e-9)
    weights = page.js("+document.querySelector('rect[data-part=weights]').dataset.bytes")
    assert weights == pytest.approx(est.fit.weights_bytes_per_gpu, rel=1e-9)
    assert page.js("document.querySelector('#verdict').dataset.status") == "native"
    assert "compute-bound" in page.js("document.querySelector('#crossover').textContent")
    page.screenshot(ARTIFACTS / "explore.png")


def test_explorer_cost_is_the_librarys_break_even(fresh):
    from vazao.catalog.prices import get_price
    from vazao.cost.policy import RequestShape, SelfHostQuery, breakeven, slo_choice

    page = fresh
    n = page.answered()
    page.choose("#api-price", "gpt-5")
    page.after_answer(n)
    choice = slo_choice(None)
    q = SelfHostQuery("llama-3.1-70b", "h100-sxm", RequestShape(1024, 256), None, count=8, slo=choice.slo,
                      analytic=True)
    doc = breakeven(q, ["h100-sxm"], get_price("gpt-5"), None, None, choice, None).to_json()
    row = doc["rows"][0]
    assert _value(page, "#c-mtok") == row["selfhost"]["usd_per_mtok_blended"]
    # every amount with its 80% band, the library's edges
    lo, hi = row["selfhost"]["usd_per_mtok_blended_band"]
    shown = page.js("document.querySelector('#c-mtok').textContent")
    edges = re.fullmatch(r"\$[\d.]+ \(\$([\d.]+)–\$([\d.]+)\)", shown)
    assert edges is not None, shown
    assert [float(x) for x in edges.groups()] == pytest.approx([float(lo), float(hi)], rel=1e-3)
    assert "–" in page.js("document.querySelector('#c-mtok-out').textContent")
    assert _value(page, "#c-api-req") == doc["api_usd_per_request"]
    assert float(_value(page, "#c-breakeven")) == pytest.approx(row["breakeven_requests_per_day"])


def test_switching_the_gpu_marks_fp8_emulated_with_its_reason(fresh):
    """Seed 003: FP8 on an RTX 3060 (Ampere, no FP8 units) is emulated, with the library's reason."""
    from vazao.catalog.formats import get_format
    from vazao.catalog.hardware import get_accelerator
    from vazao.physics.deployment import format_support
    from vazao.physics.profiles import get_engine

    page = fresh
    n = page.answered()
    page.choose("#format", "fp8")
    page.after_answer(n)
    assert page.js("document.querySelector('#verdict').dataset.status") == "native"
    n = page.answered()
    page.choose("#gpu", "rtx-3060")
    page.after_answer(n)
    want = format_support(get_format("fp8"), get_accelerator("rtx-3060"), get_engine("vllm"))
    assert want.status == "emulated"
    assert page.js("document.querySelector('#verdict').dataset.status") == "emulated"
    assert want.reason in page.js("document.querySelector('#verdict').textContent")
    _, est = _library_explore(model="llama-3.1-70b", gpu="rtx-3060", fmt="fp8", count=8, batch=32, input=1024,
                              output=256)
    assert page.js("document.querySelector('#fit-line').dataset.fits") == str(est.fit.fits).lower()
    assert float(_value(page, "#m-ttft")) == pytest.approx(est.rows[0].ttft_s, rel=1e-9)
    page.screenshot(ARTIFACTS / "explore-rtx3060-fp8.png")


def test_an_uploaded_gguf_header_is_explored(fresh, gemma_gguf):
    """A dropped GGUF: the page sends its first bytes only; the model is the library's reading of them."""
    from vazao.physics.deployment import make_deployment

    page = fresh
    n = page.answered()
    page.type_into("#count", "1")  # its 4 attention heads split over at most 4 GPUs
    page.after_answer(n)
    n = page.answered()
    page.set_files("#model-file", [gemma_gguf])
    page.after_answer(n, timeout=120)
    dep = make_deployment(str(gemma_gguf), "h100-sxm", count=1)
    assert page.js("document.querySelector('#model').disabled") is True
    shown = page.js("window.__vazao.lastExplore")
    assert shown["deployment"] == dep.label()
    assert shown["estimate"]["fit"]["weights_bytes"] == pytest.approx(dep.weights_bytes, rel=1e-9)


def test_simulate_draws_the_curve_then_a_long_one_is_cancelled(fresh, server):
    from vazao.physics.deployment import make_deployment
    from vazao.report.reports import simulation_report
    from vazao.results import SLO
    from vazao.sim import run_simulation
    from vazao.workload import load_workload

    page = fresh
    page.click("#tab-simulate")
    assert page.js("document.querySelector('#view-simulate').hidden") is False
    page.type_into("#sim-rates", "10,20")
    page.click("#sim-run")
    page.wait("document.querySelector('#sim-result').dataset.state === 'done'", timeout=240)
    page.wait("document.querySelector('#sim-result').dataset.chartsDone === '2'", timeout=60)
    charts = page.js("[...document.querySelectorAll('#sim-result figure.chart')].map(f => "
                     "[f.dataset.drawn, f.querySelectorAll('svg path, svg line, svg circle, svg rect').length])")
    assert charts and all(d == "1" and marks > 10 for d, marks in charts), charts
    dep = make_deployment("llama-3.1-70b", "h100-sxm", count=8)
    run = run_simulation(dep, load_workload("chat"), None, SLO.parse("ttft_p95=1s,tpot_p95=50ms"), rates=[10, 20])
    headline = simulation_report(run).headline
    assert page.js("document.querySelector('#sim-result .headline').textContent") == headline
    page.screenshot(ARTIFACTS / "simulate.png")
    href = page.js("document.querySelector('#sim-export').href")
    html = page.js(f"fetch({json.dumps(href)}).then(r => r.text())")
    assert "simulation report" in html and "<script" in html

    page.type_into("#sim-requests", "3000000")
    page.type_into("#sim-rates", "20")
    page.click("#sim-run")
    page.wait("document.querySelector('#sim-result').dataset.state === 'running' && "
              "+document.querySelector('#sim-result').dataset.progress.split('/')[0] > 0", timeout=240)
    job = page.js("document.querySelector('#sim-result').dataset.job")
    page.click("#sim-cancel")
    page.wait("document.querySelector('#sim-result').dataset.state === 'cancelled'", timeout=60)
    srv, _ = server
    j = srv.app.jobs.get(job)
    assert j.state == "cancelled" and ended(j.proc)
    assert page.js("document.querySelector('#sim-run').disabled") is False


def test_plan_ranks_and_copies_the_winners_command(fresh, tmp_path):
    from vazao.plan import PlanInputs, Traffic, run_plan
    from vazao.plan.emit import launch_for
    from vazao.results import SLO

    page = fresh
    page.click("#tab-plan")
    page.type_into("#plan-models", "llama-3.1-8b")
    page.type_into("#plan-gpus", "h100-sxm,l4")
    page.type_into("#plan-formats", "bf16,fp8")
    page.type_into("#plan-top", "6")
    page.type_into("#plan-requests", "100")
    page.click("#plan-run")
    page.wait("document.querySelector('#plan-result').dataset.state === 'done'", timeout=400)
    page.wait("document.querySelector('#plan-result').dataset.chartsDone", timeout=60)
    inp = PlanInputs(workload="chat", traffic=Traffic.parse("20/s"), slo=SLO.parse("ttft_p95=1s,tpot_p95=50ms"),
                     models=("llama-3.1-8b",), gpus=("h100-sxm", "l4"), formats=("bf16", "fp8"), max_gpus=8,
                     requests=100, simulate_top=6, slo_is_default=False, curves=3)  # its own seed, as the page
    result = run_plan(inp, workers=1)
    assert result.winner is not None
    command = launch_for(result.winner, result.lengths).shell
    assert page.js("document.querySelector('#plan-command').textContent") == command
    assert page.js("document.querySelector('#plan-command-box').hidden") is False
    headline = page.js("document.querySelector('#plan-result .headline').textContent")
    assert f"binding: {result.binding_constraint}" in headline
    page.browser_call("Browser.grantPermissions", permissions=["clipboardReadWrite", "clipboardSanitizedWrite"])
    page.click("#plan-copy")
    page.wait("document.querySelector('#plan-copied').dataset.copied === '1'")
    page.screenshot(ARTIFACTS / "plan.png")


def test_compare_a_vllm_result_against_the_last_simulation(fresh):
    page = fresh
    page.click("#tab-compare")
    page.set_files("#cmp-measured", [DATA / "vllm-bench-serve.json"])
    page.click("#cmp-run")
    page.wait("['done', 'error'].includes(document.querySelector('#cmp-result').dataset.state)", timeout=120)
    assert page.js("document.querySelector('#cmp-result').dataset.state") == "done", \
        page.js("document.querySelector('#cmp-result').textContent")
    title = page.js("document.querySelector('#cmp-result h2').textContent")
    assert "against" in title  # measured against the simulation the earlier test left on the server
    page.wait("document.querySelector('#cmp-result').dataset.chartsDone", timeout=60)
    page.screenshot(ARTIFACTS / "compare.png")


def test_the_permalink_reopens_the_same_view(fresh, server):
    page = fresh
    n = page.answered()
    page.type_into("#batch", "64")
    page.after_answer(n)
    n = page.answered()
    page.choose("#gpu", "a100-sxm-80gb")
    page.after_answer(n)
    page.click("#tab-plan")
    page.click("#tab-explore")
    link = page.js("location.href")
    assert "gpu=a100-sxm-80gb" in link and "batch=64" in link and "view=explore" in link
    before = page.js("window.__vazao.lastExplore.row")
    page.goto(link)
    assert page.js("document.querySelector('#gpu').value") == "a100-sxm-80gb"
    assert page.js("window.__vazao.lastExplore.row") == before


def test_keyboard_tabs_and_a_phone_screen(fresh):
    page = fresh
    page.js("document.querySelector('#tab-explore').focus()")
    page.key("ArrowRight")
    assert page.js("document.activeElement.id") == "tab-simulate"
    assert page.js("document.querySelector('#view-simulate').hidden") is False
    page.key("ArrowLeft")
    page.send("Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=2, mobile=True)
    try:
        assert page.js("document.documentElement.scrollWidth <= window.innerWidth + 1")
        page.screenshot(ARTIFACTS / "explore-phone.png")
    finally:
        page.send("Emulation.clearDeviceMetricsOverride")


def test_the_explorer_report_is_exported(fresh, tmp_path):
    page = fresh
    page.browser_call("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(tmp_path))
    page.click("#explore-export")
    page.wait("document.body.dataset.exported", timeout=60)
    out = tmp_path / "vazao-explorer-report.html"
    deadline = time.monotonic() + 30
    while not out.is_file() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert out.is_file()
    assert "estimate report" in out.read_text(encoding="utf-8")
