"""Real result files of every kind `vazao report` reads, written by vazao's own commands (small
sizes), for the report tests."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from vazao.cli import app
from vazao.cli.report import register

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "published-measurements.csv"
runner = CliRunner()

if not any(c.name == "report" for c in app.registered_commands):  # until the CLI hooks it in itself
    register(app)


def invoke(*args: str):
    return runner.invoke(app, list(args))


def _json(path: Path, *args: str) -> Path:
    r = invoke(*args, "--json")
    assert r.exit_code == 0, r.output
    json.loads(r.stdout)
    path.write_text(r.stdout)
    return path


def simulation(folder: Path) -> Path:
    return _json(folder / "sim.json", "simulate", "llama-3.1-8b", "-g", "h100-sxm", "--requests", "60",
                 "--rate", "2,8,32", "--slo", "ttft_p95=500ms,tpot_p95=40ms")


def estimate(folder: Path) -> Path:
    return _json(folder / "estimate.json", "estimate", "llama-3.1-70b", "-g", "h100-sxm", "-n", "4", "-f", "fp8",
                 "-b", "1,8,64,256")


def plan(folder: Path) -> Path:
    return _json(folder / "plan.json", "plan", "-m", "llama-3.1-8b", "-g", "l4,h100-sxm", "-f", "bf16,fp8",
                 "--traffic", "5/s", "--requests", "100", "--simulate-top", "8", "--against-api", "sonnet-5.5")


def bench_run(folder: Path, url: str) -> Path:
    wl = folder / "small.yaml"
    wl.write_text("name: small\narrival: {kind: concurrency, concurrency: 2}\nprompt: 16\noutput: 8\nrequests: 8\n")
    out = folder / "run.json"
    r = invoke("bench", url, "-w", str(wl), "-c", "1,2", "-o", str(out), "--slo", "ttft_p95=1s", "--no-progress")
    assert r.exit_code == 0, r.output
    return out


def validation(folder: Path) -> Path:
    """`vazao validate` over a slice of the shared published file; a hand-written slice when the
    shared data is not beside this checkout."""
    sample = folder / "rows.csv"
    if SHARED.exists():
        lines = SHARED.read_text().splitlines(keepends=True)
        sample.write_text("".join(lines[:1] + lines[1:30] + lines[-12:]))
    else:
        sample.write_text(
            "id,source,engine,engine_version,model,params_b,precision_weights,precision_kv_or_compute,gpu,gpu_count,"
            "tp,pp,input_len,output_len,concurrency_or_batch,metric,value,notes\n"
            "r1,test,trtllm,0.17,Llama-3.1-8B,8.03,FP8,FP8,H100-SXM-80GB,1,1,1,128,128,max(offline),"
            "output_tok_s_total,28836.77,max load\n")
    return _json(folder / "validate.json", "validate", str(sample), "--workers", "1")
