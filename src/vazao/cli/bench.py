"""vazao bench | summarize | compare: measure a real OpenAI-compatible server with the workload the
simulator uses, rebuild a summary from a run's records, and set runs (or a prediction) side by side."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import typer

from vazao.bench.client import Target, error_kind
from vazao.bench.loop import run as run_loop
from vazao.bench.preflight import BenchRefused
from vazao.bench.records import read_log
from vazao.bench.render import compare_table, summary_lines, summary_table, sweep_table
from vazao.bench.session import DEFINITIONS, BenchConfig, BenchResult, run_bench
from vazao.cli.app import JSON, _clean, app, console, emit_json, err_console, fail, parse_float_list, parse_int_list
from vazao.errors import VazaoError
from vazao.results import SLO, RunSummary, summarize
from vazao.units import parse_duration

FATAL_KINDS = ("http_401", "http_403", "http_404", "http_405", "not_streaming", "ignored_max_tokens")




def _headers(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        name, sep, value = item.partition(":")
        if not sep or not name.strip():
            raise VazaoError(f"--header must look like 'Name: value', got {item.split(':')[0]!r}…")
        out[name.strip()] = value.strip()
    return out


def _extra_body(text: str | None) -> dict:
    if not text:
        return {}
    try:
        obj = json.loads(text)
    except ValueError:
        raise VazaoError("--extra-body must be a JSON object, e.g. '{\"temperature\": 0}'") from None
    if not isinstance(obj, dict):
        raise VazaoError("--extra-body must be a JSON object")
    return obj


def _paths(output: Path | None, records: Path | None) -> tuple[Path | None, Path]:
    if output is not None and output.suffix == ".jsonl" and records is None:
        return None, output
    if records is None:
        records = (output.with_suffix(".jsonl") if output is not None
                   else Path(time.strftime("vazao-bench-%Y%m%d-%H%M%S.jsonl")))
    return output, records


@app.command("bench")
def bench_cmd(
    url: str = typer.Argument(..., help="API base URL of an OpenAI-compatible server, e.g. "
                              "http://127.0.0.1:8080/v1"),
    workload: str = typer.Option("chat", "--workload", "-w",
                                 help="Built-in (chat, rag, batch, agent, summarize, support) or a YAML file."),
    model: str = typer.Option(None, "--model", "-m", help="Model name to request (default: the server's first)."),
    api: str = typer.Option("chat", "--api", help="chat (/chat/completions) or completions (/completions)."),
    requests: int = typer.Option(None, "--requests", "-n", help="Requests per level (default: the workload's)."),
    duration: str = typer.Option(None, "--duration", "-d", help="Time per level, e.g. 120s; dispatch stops then."),
    concurrency: str = typer.Option(None, "--concurrency", "-c", help="Closed loop; a list sweeps: 1,2,4,8."),
    rate: str = typer.Option(None, "--rate", "-r", help="Poisson arrivals per second; a list sweeps: 0.5,1,2."),
    find_max: bool = typer.Option(False, "--find-max", help="Search the highest rate (or concurrency) meeting --slo."),
    slo: str = typer.Option(None, "--slo", help="Limits, e.g. ttft_p95=1s,tpot_p95=100ms (goodput and find-max)."),
    warmup: int = typer.Option(None, "--warmup", help="Warm-up requests per level, left out of the summary."),
    seed: int = typer.Option(None, "--seed", help="Workload seed (default: the workload's)."),
    output: Path = typer.Option(None, "--output", "-o",
                                help="Write the result JSON here (records: the same name, .jsonl)."),
    records: Path = typer.Option(None, "--records",
                                 help="Records JSONL (default: next to --output, else ./vazao-bench-*.jsonl)."),
    dataset: Path = typer.Option(None, "--dataset",
                                 help="Real prompts: JSONL of {\"prompt\": ...} or {\"messages\": [...]}."),
    tokenizer: Path = typer.Option(None, "--tokenizer", help="tokenizer.json for exact prompt sizes and token counts."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env",
                                    help="Environment variable holding the API key (never written anywhere)."),
    header: list[str] = typer.Option(None, "--header", "-H", help="Extra request header 'Name: value' (repeatable)."),
    extra_body: str = typer.Option(None, "--extra-body", help="JSON merged into every request body."),
    ignore_eos: bool = typer.Option(False, "--ignore-eos",
                                    help="Ask the server to ignore end-of-sequence (vLLM, llama.cpp)."),
    usage: bool = typer.Option(True, "--usage/--no-usage", help="Ask for usage in the stream (stream_options)."),
    timeout: str = typer.Option("300s", "--timeout", help="Per-request limit."),
    stall_timeout: str = typer.Option("60s", "--stall-timeout", help="Longest silence within a stream."),
    max_time: str = typer.Option("1h", "--max-time", help="Limit for the whole run, all levels."),
    max_connections: int = typer.Option(1024, "--max-connections", help="Connection pool size."),
    probe: bool = typer.Option(True, "--probe/--no-probe", help="Probe and calibrate before the run."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Live progress bar on stderr."),
    json_out: bool = JSON,
) -> None:
    """Drive a real server with a workload; one RunSummary per level, every request kept in a JSONL."""
    try:
        out_path, records_path = _paths(output, records)
        cfg = BenchConfig(
            target=Target(url, model=model, api=api, api_key_env=api_key_env or None, include_usage=usage,
                          ignore_eos=ignore_eos, extra_body=_extra_body(extra_body), headers=_headers(header)),
            workload=workload, records_path=records_path, requests=requests,
            duration_s=parse_duration(duration) if duration else None, seed=seed,
            concurrency=parse_int_list(concurrency, "--concurrency") if concurrency else None,
            rate=parse_float_list(rate, "--rate") if rate else None, find_max=find_max,
            slo=SLO.parse(slo) if slo else None, warmup=warmup,
            request_timeout_s=parse_duration(timeout), stall_timeout_s=parse_duration(stall_timeout),
            max_time_s=parse_duration(max_time), max_connections=max_connections,
            tokenizer=str(tokenizer) if tokenizer else None, dataset=str(dataset) if dataset else None,
            probe=probe, progress=progress and err_console.is_terminal,
            meta={"header_names": sorted(_headers(header)), "api_key_env": api_key_env,
                  "concurrency": concurrency, "rate": rate, "find_max": find_max, "slo": slo},
        )
        if max_connections < 1:
            raise VazaoError("--max-connections must be positive")
        if warmup is not None and warmup < 0:
            raise VazaoError("--warmup must not be negative")
    except VazaoError as exc:
        fail(str(exc))
    result = BenchResult(cfg, None)
    try:
        run_loop(run_bench(cfg, result))  # uvloop when installed (the `fast` extra)
    except KeyboardInterrupt:
        err_console.print(f"interrupted: what was measured is in {records_path}")
        _show_log(records_path, cfg.slo, json_out)
        raise typer.Exit(130) from None
    except BenchRefused as exc:
        fail(f"{exc} (records so far: {records_path})")
    except VazaoError as exc:
        fail(str(exc))
    data = result.to_json()
    if out_path is not None:
        out_path.write_text(json.dumps(_clean(data), indent=2) + "\n", encoding="utf-8")
    if json_out:
        emit_json(data)
    else:
        _print_result(result, out_path)
    code = _exit_code(result)
    if code:
        raise typer.Exit(code)


def _exit_code(result: BenchResult) -> int:
    errors = {k: v for lv in result.levels for k, v in lv.errors.items()}
    fatal = [k for k in errors if k in FATAL_KINDS]
    if fatal:
        err_console.print(f"[bold red]error:[/] requests failed in ways a rerun will not fix: {', '.join(fatal)}",
                          highlight=False)
        return 1
    recs = result.all_records()
    if recs and not any(r.ok for r in recs):
        err_console.print("[bold red]error:[/] every measured request failed", highlight=False)
        return 1
    return 0


def _print_result(result: BenchResult, out_path: Path | None) -> None:
    cfg = result.config
    pre = result.preflight
    head = f"[bold]{cfg.target.safe_url}[/]  model {pre.model if pre else cfg.target.model}  "
    head += f"workload {result.workload.name}: {result.workload.describe()}"
    console.print(head, highlight=False)
    if result.sweep:
        slo = cfg.slo
        console.print(sweep_table([(lv.level, lv.summary, slo.met_by(lv.summary) if slo else None)
                                   for lv in result.levels]))
        if result.search:
            best = result.best
            console.print(f"highest {result.search} meeting the SLO: "
                          f"{best.level[result.search] if best else 'none of the levels tried'}", highlight=False)
    if result.summary is not None:
        title = "measured" if not result.sweep else (
            f"best level ({result.best.level})" if result.best else f"last level ({result.levels[-1].level})")
        console.print(summary_table(result.summary, title))
        for line in summary_lines(result.summary):
            console.print(line, highlight=False)
    data = result.to_json()
    client = data["client"]
    if client:
        per = f", {client['us_per_chunk']:.0f} µs per chunk" if client.get("us_per_chunk") else ""
        console.print(f"client CPU: {client['share_of_core']:.0%} of a core (peak {client['peak_share_of_core']:.0%})"
                      f"{per}", highlight=False)
    srcs = data["tokens"]
    console.print(f"token counts from: output {_fmt_counts(srcs['output'])}; prompt {_fmt_counts(srcs['prompt'])}",
                  highlight=False)
    srv = data["server"]
    if srv.get("engine") or srv.get("server_vs_client"):
        line = f"server: {srv.get('engine') or 'unknown engine'}"
        for name, v in (srv.get("server_vs_client") or {}).items():
            line += f"; {name}: server {v['server']:,.0f} vs client {v['client']:,}"
        console.print(line, highlight=False)
    for w in result.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    console.print(f"records: {cfg.records_path}" + (f"; result: {out_path}" if out_path else ""), highlight=False)


def _fmt_counts(c: dict[str, int]) -> str:
    return ", ".join(f"{k} ({v})" for k, v in c.items()) or "-"


# ---- summarize ---------------------------------------------------------------------------------


def log_summary(path: Path, slo: SLO | None) -> dict[str, Any]:
    log = read_log(path)
    levels = {int(p.get("index", i)): {k: v for k, v in p.items() if k in ("concurrency", "rate")}
              for i, p in enumerate(log.points)}
    points = []
    if len(log.by_point) > 1 or log.points:
        for idx in sorted(log.by_point):
            recs = log.by_point[idx]
            points.append({**levels.get(idx, {}), "summary": summarize(recs, slo)})
    summary = points[-1]["summary"] if points else summarize(log.records, slo)
    errors: dict[str, int] = {}
    for r in log.records:
        if r.error:
            k = error_kind(r.error)
            errors[k] = errors.get(k, 0) + 1
    out: dict[str, Any] = {"summary": summary, "errors": errors, "records": len(log.records),
                           "warmup_excluded": len(log.warmup), "malformed_lines": log.malformed,
                           "complete": bool(log.notes.get("end")),
                           "run": {k: log.meta.get(k) for k in ("url", "api", "workload", "started") if k in log.meta},
                           "definitions": DEFINITIONS}
    if points:
        out["points"] = points
    return out


def _show_log(path: Path, slo: SLO | None, json_out: bool) -> None:
    try:
        data = log_summary(path, slo)
    except VazaoError as exc:
        err_console.print(str(exc))
        return
    if json_out:
        emit_json(data)
        return
    if data.get("points"):
        console.print(sweep_table([(p, p["summary"], slo.met_by(p["summary"]) if slo else None)
                                   for p in data["points"]]))
    s: RunSummary = data["summary"]
    console.print(summary_table(s, f"{path}"))
    for line in summary_lines(s):
        console.print(line, highlight=False)
    if data["errors"]:
        console.print("errors: " + ", ".join(f"{k} ×{v}" for k, v in data["errors"].items()), highlight=False)
    notes = []
    if data["warmup_excluded"]:
        notes.append(f"{data['warmup_excluded']} warm-up requests excluded")
    if data["malformed_lines"]:
        notes.append(f"{data['malformed_lines']} unreadable lines skipped (a run cut short mid-line)")
    if not data["complete"]:
        notes.append("the run did not finish (no end line): this summary covers what was recorded")
    for n in notes:
        console.print(n, highlight=False)


@app.command("summarize")
def summarize_cmd(
    records: Path = typer.Argument(..., help="A records JSONL written by vazao bench (complete or cut short)."),
    slo: str = typer.Option(None, "--slo", help="Limits for goodput, e.g. ttft_p95=1s."),
    json_out: bool = JSON,
) -> None:
    """Rebuild the summary from a run's records file (e.g. after Ctrl-C or a crash)."""
    try:
        limits = SLO.parse(slo) if slo else None
        if not records.is_file():
            raise VazaoError(f"{records} does not exist")
        _show_log(records, limits, json_out)
    except VazaoError as exc:
        fail(str(exc))


# ---- compare -----------------------------------------------------------------------------------


def _load_summary(path: Path, slo: SLO | None) -> tuple[RunSummary, dict]:
    if not path.is_file():
        raise VazaoError(f"{path} does not exist")
    if path.suffix == ".jsonl":
        data = log_summary(path, slo)
        return data["summary"], data
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise VazaoError(f"{path} is not a vazao bench JSON result") from None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
        raise VazaoError(f"{path} has no summary (is it a `vazao bench -o` result?)")
    return RunSummary.from_json(data["summary"]), data


@app.command("compare")
def compare_cmd(
    runs: list[Path] = typer.Argument(..., help="Bench results (run.json) or records (run.jsonl)."),
    simulate: bool = typer.Option(False, "--simulate", help="Add the simulator's prediction for the same workload."),
    gpu: str = typer.Option(None, "--gpu", "-g", help="Accelerator for --simulate."),
    model: str = typer.Option(None, "--model", "-m", help="Model for --simulate (catalog name, config.json, .gguf)."),
    engine: str = typer.Option(None, "--engine", "-e", help="Engine profile for --simulate."),
    fmt: str = typer.Option(None, "--format", "-f", help="Weight format for --simulate."),
    count: int = typer.Option(1, "--count", "-n", help="Accelerators for --simulate."),
    slo: str = typer.Option(None, "--slo", help="Limits for goodput."),
    json_out: bool = JSON,
) -> None:
    """Measured runs side by side, or measured against predicted on the same workload."""
    try:
        limits = SLO.parse(slo) if slo else None
        names, summaries, datas = [], [], []
        for p in runs:
            s, data = _load_summary(p, limits)
            names.append(p.name)
            summaries.append(s)
            datas.append(data)
        if simulate:
            name, predicted = _simulate_like(datas[0], gpu=gpu, model=model, engine=engine, fmt=fmt, count=count,
                                             slo=limits)
            names.append(name)
            summaries.append(predicted)
    except VazaoError as exc:
        fail(str(exc))
    if json_out:
        emit_json({"runs": [{"name": n, "summary": s} for n, s in zip(names, summaries, strict=True)]})
        return
    console.print(compare_table(names, summaries))


def _simulate_like(data: dict, *, gpu: str | None, model: str | None, engine: str | None,
                   fmt: str | None, count: int = 1, slo: SLO | None = None) -> tuple[str, RunSummary]:
    """The simulator's RunSummary for the workload and load level a bench result ran."""
    if not gpu or not model:
        raise VazaoError("--simulate needs --gpu and --model (the deployment to predict for)")
    from vazao.scenario import deployment_for
    from vazao.sim.config import SimConfig
    from vazao.sim.run import simulate
    from vazao.workload import load_workload

    run = data.get("run") or {}
    spec = run.get("workload_spec") or run.get("workload")
    if not spec:
        raise VazaoError("the result does not name its workload (compare a `vazao bench -o` JSON result)")
    level = {k: run[k] for k in ("concurrency", "rate") if run.get(k) is not None}
    if data.get("points"):  # a sweep: its summary is the last level's
        level = {k: v for k, v in data["points"][-1].items() if k in ("concurrency", "rate")}
    w = load_workload(spec, requests=run.get("requests"), seed=run.get("seed"), duration_s=run.get("duration_s"),
                      **level)
    dep = deployment_for(model, gpu, fmt, count=count, engine=engine)
    result = simulate(dep, w, SimConfig.from_engine(dep.engine), slo)
    return f"simulated {dep.label()}", result.summary
