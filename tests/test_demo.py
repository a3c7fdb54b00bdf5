"""`vazao demo` (make run's first screen): the seeds' headline answers come from the library functions
and match the seeds' worked numbers; only fitting rows, sorted by $/Mtok; 100 columns; --json is the
same object; --report writes a self-contained HTML report; the next commands parse.

Seeds (../shared/seeds/): 004_9706bef9153e5571.txt (the 70B node, the support conversation, the
crossover batch), 003_238014a8b1bd80f0.txt (FP8 on Ampere vs Hopper)."""

from __future__ import annotations

import json
import re
import shlex
from decimal import Decimal

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from vazao import demo as D
from vazao.analytic import crossover_batch, estimate, latency_floor_s
from vazao.catalog.formats import get_format
from vazao.catalog.models import get_model
from vazao.catalog.prices import get_price
from vazao.cli import app
from vazao.cost.conversation import Conversation, bill_conversation
from vazao.cost.selfhost import analytic_throughput, gpu_rate, selfhost_cost
from vazao.physics.deployment import make_deployment
from vazao.physics.memory import fit, weights_bytes
from vazao.plan.alternatives import what_fits
from vazao.report.demo_console import headline_lines, print_demo
from vazao.resultfiles import json_document

runner = CliRunner()
IN, OUT = 1024, 256


@pytest.fixture(scope="module")
def built():
    return D.build_demo(IN, OUT)


@pytest.fixture(scope="module")
def demo(built):
    return built[0]


def render(demo, width: int) -> list[str]:
    c = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    print_demo(c, demo)
    return [line.rstrip() for line in c.export_text().splitlines()]


# ---- the headline answers ------------------------------------------------------------------------
def test_latency_floor_is_the_library_and_seed004(demo):
    f = demo.headlines.floor
    ideal = make_deployment("llama-3.1-70b", "h100-sxm", "bf16", count=8, engine="vllm", ideal=True)
    real = make_deployment("llama-3.1-70b", "h100-sxm", "bf16", count=8, engine="vllm")
    assert (ideal.tp, f.count, f.gpu) == (8, 8, "h100-sxm")
    assert f.ideal_floor_s == latency_floor_s(ideal)
    assert f.floor_s == latency_floor_s(real)
    assert f.tokens_per_s_b1 == estimate(real, [1], IN, OUT).rows[0].tokens_per_s_total
    assert f.ideal_tokens_per_s_b1 == estimate(ideal, [1], IN, OUT).rows[0].tokens_per_s_total
    # seed 004: "um nó de oito GPUs com 17,5 GB de pesos por placa ... cerca de 5 milissegundos a 3,35 TB/s"
    assert f.ideal_floor_s == pytest.approx(5e-3, rel=0.06)
    assert f.floor_s > f.ideal_floor_s and f.tokens_per_s_b1 < f.ideal_tokens_per_s_b1
    # the engine's figure carries its 80% band (the physical limit is a limit, not a prediction)
    band = estimate(real, [1], IN, OUT).rows[0].tokens_per_s_band
    assert f.tokens_per_s_b1_band == (band.low, band.high) and band.low < f.tokens_per_s_b1 < band.high


def test_support_conversation_is_the_library_and_seed004(demo):
    c = demo.headlines.cache
    table, conv = get_price("sonnet-5.5"), Conversation(system=6000, turns=8, user=300, reply=250)
    assert c.uncached_usd == bill_conversation(conv, table).total_usd
    assert c.cached_usd == bill_conversation(conv, table, "5m").total_usd
    # seed 004: "uma conversa custa cerca de US$ 0,152" and, with the prefix cached, "cerca de US$ 0,075"
    assert (c.uncached_usd, c.cached_usd) == (Decimal("0.1516"), Decimal("0.0748"))
    assert c.saving_share == 1 - c.cached_usd / c.uncached_usd
    text = dict(headline_lines(demo.headlines))["Prompt caching"]
    assert "$0.152" in text and "$0.075" in text and "(−51%)" in text  # the seed's rounding


def test_fp8_emulated_on_ampere_native_on_hopper_seed003(demo):
    a = demo.headlines.fp8
    arch = get_model("llama-3.1-8b")
    assert a.weights_bytes == weights_bytes(arch, get_format("fp8"))
    assert a.weights_bytes_16bit == weights_bytes(arch, get_format("bf16"))
    # seed 003: "um modelo de 8 bilhões ocupa 16 GB" at 16 bits
    assert round(a.weights_bytes_16bit / 1e9) == 16
    old, new = a.gpus
    # seed 003: the RTX 3060 is Ampere, "nenhum FP8 em silício": emulated, memory gain only, no faster math
    assert (old.gpu, old.status) == ("rtx-3060", "emulated")
    assert old.compute_speedup == pytest.approx(1.0, abs=0.05)
    # seed 003: Ada/Hopper "Transformer Engine com FP8 nativo, dobrando a vazão em relação a FP16"
    assert (new.gpu, new.status) == ("h100-sxm", "native")
    assert 1.8 <= new.compute_speedup <= 2.05


def test_crossover_is_the_library_and_seed004(demo):
    x = demo.headlines.crossover
    ideal = make_deployment("llama-3.1-70b", "h100-sxm", "bf16", count=8, engine="vllm", ideal=True)
    real = make_deployment("llama-3.1-70b", "h100-sxm", "bf16", count=8, engine="vllm")
    assert x.weights_only_batch == crossover_batch(ideal, 0)
    assert x.batch_at_context == estimate(real, [1], IN, OUT).crossover_batch
    # seed 004: "O ponto de equilíbrio fica perto de 300 sequências simultâneas"; splitting over GPUs
    # "deixa a razão como está"
    assert x.weights_only_batch == pytest.approx(300, abs=10)
    assert "batch ≈300 (weights only" in dict(headline_lines(demo.headlines))["Compute-bound"]


# ---- the rows ------------------------------------------------------------------------------------
def _combos():
    return [(m, g, f) for m in D.MODELS for g in D.GPUS for f in D.FORMATS]


def test_rows_are_exactly_the_fitting_configurations(demo):
    shown = {(r.model, r.gpu, r.format) for r in demo.rows}
    for m, g, f in _combos():
        fits = fit(make_deployment(m, g, f, engine="vllm"), IN + OUT).fits
        assert ((m, g, f) in shown) == fits, (m, g, f)
    missing = {(m.model, m.format, gpu) for m in demo.misfits for gpu, _ in m.needs}
    assert missing == {(m, f, g) for m, g, f in _combos() if (m, g, f) not in shown}


def test_rows_sorted_by_cost_then_speed_and_costed_by_the_library(demo):
    keys = [(r.usd_per_mtok, -r.tokens_per_s_max) for r in demo.rows]
    assert keys == sorted(keys) and all(r.usd_per_mtok is not None for r in demo.rows)
    for r in demo.rows:
        assert 1 <= r.max_batch <= r.max_seqs  # no throughput at a batch that does not fit
        dep = make_deployment(r.model, r.gpu, r.format, engine="vllm")
        rate, src = gpu_rate(dep.accelerator, None)
        cost = selfhost_cost(dep.label(), 1, rate, src, analytic_throughput(dep, IN, OUT))
        assert (r.usd_per_gpu_hour, r.usd_per_mtok) == (rate, cost.usd_per_mtok_output)
        assert r.tokens_per_s_max == pytest.approx(cost.throughput.output_tokens_per_s)


def test_misfits_name_the_fewest_gpus_that_fit(demo):
    for m in demo.misfits:
        for gpu, count in m.needs:
            same = [a for a in what_fits(m.model, gpu, m.format, IN + OUT, engine="vllm") if a.fmt == m.format]
            assert count == (same[0].count if same else None)
            assert count is None or fit(make_deployment(m.model, gpu, m.format, count=count), IN + OUT).fits
    seventy = next(m for m in demo.misfits if (m.model, m.format) == ("llama-3.1-70b", "bf16"))
    # 141.1 GB of BF16 weights split tp2 is 70.6 GB a GPU, inside an H100's 80 GiB = 85.9 GB (nvidia-smi 81559 MiB:
    # NVIDIA/nccl issue #1264) less vLLM's 10 % reserve and runtime overhead, so two H100s hold it, not four
    assert dict(seventy.needs)["h100-sxm"] == 2


# ---- the screen ------------------------------------------------------------------------------------
def test_screen_fits_100_columns_without_wrapping(demo):
    narrow, wide = render(demo, 100), render(demo, 300)
    assert max(len(line) for line in narrow) <= 100
    assert narrow == wide  # nothing had to wrap or be cut to fit
    text = "\n".join(narrow)
    assert all(f"{r.model}" in text for r in demo.rows)
    for misfit in demo.misfits:
        assert f"{misfit.model} {misfit.format}: needs " in text
    assert " no " not in text and "@32" not in text


def test_throughput_headers_say_their_batch(demo):
    lines = render(demo, 100)
    top = next(i for i, line in enumerate(lines) if line.startswith("model "))
    header = lines[top - 1] + "\n" + lines[top]
    assert header.count("tok/s") == 2 and header.count("@b1") == 2 and header.count("@max b") == 2
    assert lines[top - 1].split()[-2:] == ["$/Mtok", "80%"] and lines[top].split()[-1] == "band"


def test_the_cheapest_row_comes_first_on_screen(demo):
    lines = render(demo, 100)
    first = next(line for line in lines if line.startswith(demo.rows[0].model + " "))
    assert demo.rows[0].gpu in first and f"${demo.rows[0].usd_per_mtok:.3f}" in first


# ---- CLI, JSON, next commands, report ------------------------------------------------------------
def test_json_is_the_same_object(demo):
    res = runner.invoke(app, ["demo", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d == json.loads(json.dumps(json_document(demo.to_json())))
    assert set(d) == {"kind", "input_tokens", "output_tokens", "engine", "headlines", "rows", "misfits",
                      "next_commands", "report_scenario"}
    assert set(d["headlines"]) == {"floor", "cache", "fp8", "crossover"}
    assert d["headlines"]["cache"]["uncached_usd"] == "0.1516"  # money as decimal text
    assert set(d["rows"][0]) >= {"model", "gpu", "format", "max_seqs", "tokens_per_s_b1", "max_batch",
                                 "tokens_per_s_max", "usd_per_mtok"}


def _parse(argv: list[str]) -> None:
    """Resolve `vazao <argv>` down to its command and parse its options, without running it."""
    cmd = typer.main.get_command(app)
    ctx = cmd.make_context("vazao", list(argv))
    while hasattr(cmd, "get_command"):
        # a group keeps the command name apart from the rest (click's _protected_args)
        name, *args = [*getattr(ctx, "_protected_args", getattr(ctx, "protected_args", [])), *ctx.args]
        sub = cmd.get_command(ctx, name)
        assert sub is not None, f"no command {name!r} in {argv}"
        cmd, ctx = sub, sub.make_context(name, args, parent=ctx)


def test_next_commands_are_real_commands(demo):
    assert len(demo.next_commands) == 4
    for c in demo.next_commands:
        argv = shlex.split(c.command)
        assert argv[0] == "vazao" and c.purpose
        _parse(argv[1:])
    cost = shlex.split(demo.next_commands[0].command)[1:]
    res = runner.invoke(app, cost)  # the analytic one is quick: run it
    assert res.exit_code == 0, res.output
    assert f"{demo.rows[0].model} {demo.rows[0].format} on 1× {demo.rows[0].gpu}" in res.output


def test_parse_refuses_an_unknown_option():
    with pytest.raises(Exception, match="no-such"):
        _parse(["estimate", "llama-3.1-8b", "-g", "h100-sxm", "--no-such"])
    with pytest.raises(AssertionError, match="no command 'estimat'"):
        _parse(["estimat", "llama-3.1-8b"])


def test_report_is_written_and_self_contained(tmp_path, built):
    pytest.importorskip("altair", reason="the report extra (altair) is not installed")
    pytest.importorskip("vl_convert", reason="the report extra (vl-convert-python) is not installed")
    out = tmp_path / "report.html"
    res = runner.invoke(app, ["demo", "--report", str(out)])
    assert res.exit_code == 0, res.output
    assert f"wrote {out}" in res.output
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!") and "llama-3.1-70b bf16 on 8× h100-sxm tp8" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)
    assert "<script src" not in html and "<link" not in html and "@import" not in html
    # the same report `vazao estimate --json | vazao report --estimate` makes of the node
    from vazao.report.estimate_report import estimate_report

    est_json = runner.invoke(app, ["estimate", "llama-3.1-70b", "-g", "h100-sxm", "-n", "8", "-f", "bf16", "-e",
                                   "vllm", "-b", ",".join(map(str, D.REPORT_BATCHES)), "--json"])
    assert est_json.exit_code == 0, est_json.output
    mine = estimate_report(json_document(D.estimate_result(built[1])))
    assert mine == estimate_report(json.loads(est_json.stdout))


def test_report_to_an_unwritable_path_fails_first(tmp_path):
    res = runner.invoke(app, ["demo", "--report", str(tmp_path / "no-such-folder" / "r.html")])
    assert res.exit_code == 2
    assert "does not exist" in res.output and "seeds" not in res.output  # before any work


@pytest.mark.parametrize("args", [["--input", "0"], ["--output", "-1"], ["--input", "1e12"]])
def test_bad_lengths_exit_2(args):
    res = runner.invoke(app, ["demo", *args])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_the_first_screens_max_load_is_what_the_simulator_sustains():
    # Issue 20: an answer vazao's own simulator contradicts is a bug. The demo's "tok/s @max b" (the analytic
    # max-load of 1,024-token prompts and 256-token answers) set against a closed loop of that many users on the
    # simulator, warm-up left out and its work in the window counted (results.Background): the simulated rate
    # lies inside the max-load figure's 80% band, 5-11% above it on the first eight rows (2026-12-08). The
    # analytic waves prefill every chunk before the decodes; the simulator's chunked steps carry the decodes of
    # the prompts already in, their memory time hidden under the chunk's compute (docs/accuracy.md, "Bands").
    import dataclasses

    from vazao.analytic import estimate
    from vazao.demo import build_demo
    from vazao.physics.deployment import make_deployment
    from vazao.sim import SimConfig, simulate
    from vazao.workload import load_workload

    demo, _ = build_demo()
    for row in demo.rows[:4]:
        dep = make_deployment(row.model, row.gpu, row.format, engine="vllm")
        w = load_workload("fixed:1024/256", concurrency=row.max_batch, requests=row.max_batch * 5)
        res = simulate(dep, dataclasses.replace(w, warmup=row.max_batch),
                       SimConfig.from_engine(dep.engine, max_num_seqs=row.max_batch))
        sustained = res.summary.output_tokens_per_s
        assert estimate(dep, [1], 1024, 256).max_load_band.holds(sustained), row
        assert sustained == pytest.approx(row.tokens_per_s_max, rel=0.12), row
