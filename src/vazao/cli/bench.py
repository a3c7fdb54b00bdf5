"""vazao bench | summarize | compare: measure a real OpenAI-compatible server with the workload the
simulator uses, rebuild a summary from a run's records, and set runs (or a prediction) side by side."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.markup import escape

from vazao import inputs, limits
from vazao.cli.app import JSON, QUIET, app, console, emit_json, err_console, error_text, fail, report_error
from vazao.errors import VazaoError
from vazao.resultfiles import json_document
from vazao.units import parse_duration

if TYPE_CHECKING:
    from vazao.cli.interrupt import Interrupts
    from vazao.loadgen.runs import Column
    from vazao.loadgen.session import BenchConfig, BenchResult
    from vazao.results import SLO



def _headers(items: list[str] | None) -> dict[str, str]:
    """-H 'Name: value' items, checked by the library (loadgen.client.parse_headers)."""
    from vazao.loadgen.client import parse_headers

    try:
        return parse_headers(items)
    except VazaoError as exc:
        raise VazaoError(f"--{exc}") from None  # "--header ...": the option the user gave


def _extra_body(text: str | None) -> dict:
    if not text:
        return {}
    obj = inputs.loads_json(text, "--extra-body")
    if not isinstance(obj, dict):
        raise VazaoError("--extra-body must be a JSON object, e.g. '{\"temperature\": 0}'")
    return obj


def _whole(text: str | None, what: str, *, minimum: int = 1, maximum: int = limits.MAX_BENCH_REQUESTS) -> int | None:
    if text is None:
        return None
    return int(inputs.number(text, what, minimum=minimum, maximum=maximum, integer=True))


def _duration(text: str | None, what: str) -> float | None:
    """A positive duration: 0 or less would silently mean "no limit" or "stop at once"."""
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except VazaoError as exc:
        raise VazaoError(f"{what}: {exc}") from None
    return float(inputs.positive(seconds, what, maximum=limits.MAX_BENCH_S))


def _paths(output: Path | None, records: Path | None, force: bool) -> tuple[Path | None, Path]:
    """The result and records paths, checked before any request: an existing file is refused
    unless --force (a run never appends to, or silently replaces, another run's file)."""
    if output is not None and output.suffix == ".jsonl" and records is None:
        output, records = None, output
    if records is None:  # next to -o, else a new file in the runs folder (named in the output), never ./
        from vazao.loadgen.records import default_records_path

        records = output.with_suffix(".jsonl") if output is not None else default_records_path()
    if output is not None and output.resolve() == records.resolve():
        raise VazaoError(f"-o {output} and --records name the same file; give them different names")
    if output is not None:
        inputs.output_file(output, "result file (-o)", force=force)
    inputs.output_file(records, "records file", force=force)
    return output, records


def _run(cfg: BenchConfig, result: BenchResult, sig: Interrupts) -> int | None:
    """Run the bench; the first SIGINT or SIGTERM cancels it, the requests in flight end as
    `cancelled` records and the summary is still made (see cli/interrupt.py for the second and
    third). Returns the signal that interrupted it, or None."""
    import asyncio

    from vazao.cli.interrupt import Interrupted
    from vazao.loadgen.loop import run as run_loop
    from vazao.loadgen.session import run_bench

    async def main() -> None:
        loop = asyncio.get_running_loop()
        sig.attach(asyncio.current_task())
        try:
            await run_bench(cfg, result)
        except asyncio.CancelledError:
            if not sig.got:
                raise
        finally:
            sig.detach(loop)

    sig.install()
    try:
        run_loop(main())  # uvloop when installed (the `fast` extra)
    except (Interrupted, KeyboardInterrupt) as exc:
        if not sig.got:
            sig.got.append(getattr(exc, "signum", signal.SIGINT))
        result.interrupted = True
    finally:
        sig.after_loop()
    return sig.first


def _say(text: str, *, err: bool = False, markup: str = "") -> None:
    """One line of output: secrets masked, and the text (server words in it) never read as markup."""
    from vazao.loadgen import redact

    (err_console if err else console).print(markup + escape(redact.redact(text)), highlight=False, soft_wrap=err)


@app.command("bench")
def bench_cmd(
    url: str = typer.Argument(..., help="API base URL of an OpenAI-compatible server, e.g. "
                              "http://127.0.0.1:8080/v1"),
    workload: str = typer.Option("chat", "--workload", "-w",
                                 help="Built-in (chat, rag, batch, agent, summarize, support) or a YAML file."),
    model: str = typer.Option(None, "--model", "-m", help="Model name to request (default: the server's first)."),
    api: str = typer.Option("chat", "--api", help="chat (/chat/completions) or completions (/completions)."),
    requests: str = typer.Option(None, "--requests", "-n",
                                 help="Requests per level (default: the workload's; at most "
                                      f"{limits.MAX_BENCH_REQUESTS:,})."),
    duration: str = typer.Option(None, "--duration", "-d", help="Time per level, e.g. 120s; dispatch stops then."),
    concurrency: str = typer.Option(None, "--concurrency", "-c", help="Closed loop; a list sweeps: 1,2,4,8."),
    rate: str = typer.Option(None, "--rate", "-r", help="Poisson arrivals per second; a list sweeps: 0.5,1,2."),
    find_max: bool = typer.Option(False, "--find-max", help="Search the highest rate (or concurrency) meeting --slo."),
    slo: str = typer.Option(None, "--slo", help="Limits, e.g. ttft_p95=1s,tpot_p95=100ms (goodput and find-max)."),
    warmup: str = typer.Option(None, "--warmup", help="Warm-up requests per level, left out of the summary."),
    seed: int = typer.Option(None, "--seed", help="Workload seed (default: the workload's)."),
    output: Path = typer.Option(None, "--output", "-o",
                                help="Write the result JSON here (records: the same name, .jsonl)."),
    records: Path = typer.Option(None, "--records",
                                 help="Records JSONL (default: next to --output, else a new vazao-bench-*.jsonl in "
                                      "$VAZAO_RUNS_DIR or ~/.local/state/vazao/bench, named in the output)."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing -o / --records files."),
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
    max_time: str = typer.Option("1h", "--max-time", help="Limit for the whole run, all levels, pre-flight included."),
    max_connections: str = typer.Option("1024", "--max-connections", help="Connection pool size."),
    probe: bool = typer.Option(True, "--probe/--no-probe", help="Probe and calibrate before the run."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Live progress bar on stderr."),
    outputs: str = typer.Option(None, "--outputs",
                                help="Report files to write after the run: json,csv,html (named as -o, "
                                     "else as the records)."),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Drive a real server with a workload; one RunSummary per level, every request kept in a JSONL.
    Ctrl-C or SIGTERM stops it: the requests in flight are recorded as cancelled and the summary
    of what was measured is printed and written (exit 130, or 143 for SIGTERM)."""
    from vazao.loadgen import redact

    hdrs: dict[str, str] = {}
    with contextlib.suppress(VazaoError):
        hdrs = _headers(header)
    key = os.environ.get(api_key_env) if api_key_env else None
    with redact.scope([key, *redact.header_secrets(hdrs), *redact.url_secrets(url)]):
        _bench(url, workload=workload, model=model, api=api, requests=requests, duration=duration,
               concurrency=concurrency, rate=rate, find_max=find_max, slo=slo, warmup=warmup, seed=seed,
               output=output, records=records, force=force, dataset=dataset, tokenizer=tokenizer,
               api_key_env=api_key_env, header=header, extra_body=extra_body, ignore_eos=ignore_eos, usage=usage,
               timeout=timeout, stall_timeout=stall_timeout, max_time=max_time, max_connections=max_connections,
               probe=probe, progress=progress and not quiet, outputs=outputs, json_out=json_out)


def _config(url: str, o: dict[str, Any]) -> tuple[BenchConfig, Path | None, dict[str, Path]]:
    from vazao.loadgen.client import Target
    from vazao.loadgen.session import BenchConfig
    from vazao.results import SLO

    out_path, records_path = _paths(o["output"], o["records"], o["force"])
    reports = _report_paths(o["outputs"], records_path, out_path, o["force"])
    out_path = reports.get("json", out_path)
    hdrs = _headers(o["header"])
    c, r = o["concurrency"], o["rate"]
    if c is not None and r is not None:
        raise VazaoError("give --concurrency or --rate, not both")
    if o["find_max"] and not o["slo"]:
        raise VazaoError("--find-max needs an --slo to meet, e.g. --slo ttft_p95=1s")
    cfg = BenchConfig(
        target=Target(url, model=o["model"], api=o["api"], api_key_env=o["api_key_env"] or None,
                      include_usage=o["usage"], ignore_eos=o["ignore_eos"], extra_body=_extra_body(o["extra_body"]),
                      headers=hdrs),
        workload=o["workload"], records_path=records_path, requests=_whole(o["requests"], "--requests"),
        duration_s=_duration(o["duration"], "--duration"), seed=o["seed"],
        concurrency=None if c is None else [int(v) for v in inputs.number_list(
            c, "--concurrency", integer=True, maximum=limits.MAX_BENCH_REQUESTS, max_items=limits.MAX_VARIANTS)],
        rate=None if r is None else [float(v) for v in inputs.number_list(
            r, "--rate", maximum=1e6, max_items=limits.MAX_VARIANTS)],
        find_max=o["find_max"], slo=SLO.parse(o["slo"]) if o["slo"] else None,
        warmup=_whole(o["warmup"], "--warmup", minimum=0),
        request_timeout_s=_duration(o["timeout"], "--timeout"),
        stall_timeout_s=_duration(o["stall_timeout"], "--stall-timeout"),
        max_time_s=_duration(o["max_time"], "--max-time"),
        max_connections=_whole(o["max_connections"], "--max-connections", maximum=65536),
        tokenizer=str(inputs.input_file(o["tokenizer"], "--tokenizer file")) if o["tokenizer"] else None,
        dataset=str(inputs.input_file(o["dataset"], "--dataset file")) if o["dataset"] else None,
        probe=o["probe"], progress=o["progress"] and err_console.is_terminal, overwrite=o["force"],
        meta={"header_names": sorted(hdrs), "api_key_env": o["api_key_env"], "concurrency": c, "rate": r,
              "find_max": o["find_max"], "slo": o["slo"]},
    )
    return cfg, out_path, {k: v for k, v in reports.items() if k != "json"}


def _report_paths(kinds: str | None, records: Path, result: Path | None, force: bool) -> dict[str, Path]:
    """--outputs: each report file's path, checked writable (and new, unless --force) before any request."""
    from vazao.loadgen.outputs import output_paths, parse_kinds

    try:
        paths = output_paths(parse_kinds(kinds), records, result)
    except VazaoError as exc:
        raise VazaoError(f"--outputs: {exc}") from None
    for kind, path in paths.items():
        if path == result:
            continue  # -o itself, checked with it
        if path.resolve() == records.resolve():
            raise VazaoError(f"--outputs {kind} would overwrite the records file {records}; give -o a name")
        inputs.output_file(path, f"{kind} report file", force=force)
    return paths


def _bench(url: str, *, json_out: bool, **o: Any) -> None:
    from vazao.cli.interrupt import Interrupts
    from vazao.loadgen import redact
    from vazao.loadgen.preflight import BenchRefused
    from vazao.loadgen.session import BenchResult

    try:
        cfg, out_path, reports = _config(url, o)
    except VazaoError as exc:
        fail(redact.redact(error_text(exc)))
    result = BenchResult(cfg, None)
    sig = Interrupts(say=lambda text: _say(text, err=True))
    try:
        try:
            signum = _run(cfg, result, sig)
        except BenchRefused as exc:
            kept = f" (records so far: {cfg.records_path})" if result.records_kept else ""
            fail(redact.redact(f"{exc}{kept}"))
        except VazaoError as exc:
            fail(redact.redact(error_text(exc)))
        _finish(cfg, result, out_path, signum, json_out=json_out, reports=reports)
    finally:
        sig.restore()


def _finish(cfg: BenchConfig, result: BenchResult, out_path: Path | None, signum: int | None, *,
            json_out: bool, reports: dict[str, Path] | None = None) -> None:
    from vazao.loadgen import redact

    result.stop_signal = signum
    verdict = result.verdict()
    if not result.records_kept and verdict.exit_code == 2:  # nothing reached the server: no files, the reason
        _report_verdict(verdict)
        raise typer.Exit(2)
    data = redact.redact_obj(json_document(result.to_json()))
    if out_path is not None:
        inputs.write_text(out_path, json.dumps(data, indent=2) + "\n", "result file (-o)")
    written = _write_reports(data, reports or {}, cfg.records_path)
    if signum is not None:
        name = signal.Signals(signum).name
        where = [str(p) for p in (cfg.records_path if result.records_kept else None, out_path) if p]
        _say(f"interrupted by {name}: the requests in flight were recorded as cancelled; "
             + (f"what was measured is in {' and '.join(where)}" if where else "nothing was measured"), err=True)
    if json_out:
        emit_json(data)
    else:
        _print_result(result, out_path)
        if written:
            _say("reports: " + ", ".join(str(p) for p in written))
    _report_verdict(verdict)
    if verdict.exit_code:
        raise typer.Exit(verdict.exit_code)


def _write_reports(data: dict[str, Any], reports: dict[str, Path], records: Path) -> list[Path]:
    """--outputs csv/html from the result JSON (the numbers the JSON holds); the html is the report
    `vazao report --run` makes."""
    if not reports:
        return []
    from vazao.loadgen.outputs import csv_text

    written = []
    for kind, path in reports.items():
        if kind == "csv" and (data.get("points") or data.get("summary")):
            text = csv_text(data)
        elif kind == "html" and data.get("summary"):
            from vazao.report.html import render_report
            from vazao.report.reports import bench_report

            text = render_report(bench_report(data, records.parent))
        else:
            _say(f"no {kind} report written: no level {'finished' if kind == 'csv' else 'to summarize'}", err=True)
            continue
        inputs.write_text(path, text, f"{kind} report file")
        written.append(path)
    return written


def _report_verdict(verdict) -> None:
    """A failed run's reason on stderr: one line (exit 2, bad input) as every command's errors."""
    from vazao.loadgen import redact
    from vazao.loadgen.session import Outcome

    if verdict.outcome is not Outcome.FAILED:
        return
    if verdict.exit_code == 2:
        report_error(redact.redact(verdict.reason))
    else:
        err_console.print(f"[bold red]error:[/] {escape(redact.redact(verdict.reason))}", highlight=False)


def _print_result(result: BenchResult, out_path: Path | None) -> None:
    from vazao.report.bench_console import result_view

    _show(result_view(result, out_path))


def _show(items: list) -> None:
    """Tables as they are; lines through _say (masked, never read as markup)."""
    from rich.table import Table

    for item in items:
        if isinstance(item, Table):
            console.print(item)
        else:
            markup, text = item
            _say(text, markup=markup)


# ---- summarize ---------------------------------------------------------------------------------


def _show_log(data: dict[str, Any], path: Path, slo: SLO | None, json_out: bool) -> None:
    from vazao.report.bench_console import log_view

    if json_out:
        emit_json(data)
        return
    _show(log_view(data, path, slo))


RUN_HELP = "The run to read, by its run id, when a records file holds several."


@app.command("summarize")
def summarize_cmd(
    records: Path = typer.Argument(..., help="A records JSONL written by vazao bench (complete or cut short)."),
    slo: str = typer.Option(None, "--slo", help="Limits for goodput, e.g. ttft_p95=1s."),
    run: str = typer.Option(None, "--run", help=RUN_HELP),
    json_out: bool = JSON,
) -> None:
    """Rebuild the summary from a run's records file (e.g. after Ctrl-C or a crash)."""
    from vazao.loadgen import runs as runs_mod
    from vazao.results import SLO

    limits = SLO.parse(slo) if slo else None
    inputs.input_file(records, "records file", allow_special=True)
    data = runs_mod.log_summary(records, limits, run)
    _show_log(data, records, limits, json_out)


# ---- compare -----------------------------------------------------------------------------------


@app.command("compare")
def compare_cmd(
    runs: list[Path] = typer.Argument(..., help="Bench results (run.json), records (run.jsonl), guidellm "
                                      "benchmarks.json or `vllm bench serve --save-result` JSON."),
    simulate: bool = typer.Option(False, "--simulate", help="Add the simulator's prediction for the same workload."),
    gpu: str = typer.Option(None, "--gpu", "-g", help="Accelerator for --simulate."),
    model: str = typer.Option(None, "--model", "-m", help="Model for --simulate (catalog name, config.json, .gguf)."),
    engine: str = typer.Option(None, "--engine", "-e", help="Engine profile for --simulate."),
    fmt: str = typer.Option(None, "--format", "-f", help="Weight format for --simulate."),
    count: int = typer.Option(1, "--count", "-n", help="Accelerators for --simulate."),
    slo: str = typer.Option(None, "--slo", help="Limits for goodput."),
    run: list[str] = typer.Option(None, "--run", help="Run ids to take from records files holding several "
                                  "(repeatable; each becomes a column)."),
    json_out: bool = JSON,
) -> None:
    """Measured runs side by side, or measured against predicted on the same workload. Reads vazao's
    results and records, guidellm's benchmarks.json (a column per benchmark) and the result JSON of
    `vllm bench serve --save-result`; what a file does not give shows as "-"."""
    from vazao.loadgen.runs import compare, load_columns, simulate_like
    from vazao.report.bench_console import compare_table
    from vazao.results import SLO

    limits = SLO.parse(slo) if slo else None
    cols: list[Column] = []
    for p in runs:
        cols.extend(load_columns(p, limits, list(run or [])))
    if simulate:
        if not gpu or not model:
            raise VazaoError("--simulate needs --gpu and --model (the deployment to predict for)")
        cols.append(simulate_like(cols[0].data, gpu=gpu, model=model, engine=engine, fmt=fmt,
                                  count=count, slo=limits))
    if json_out:
        emit_json({"kind": "comparison",
                   "runs": [{"name": c.name, "tool": c.data.get("tool", "vazao"), "summary": c.summary,
                             **({"level": c.data["level"], "notes": c.data["notes"]} if c.data.get("foreign")
                                else {}),
                             **({"bands": c.data["bands"]} if c.data.get("bands") else {})}
                            for c in cols]})
        return
    console.print(compare_table(compare(cols)))
    for line in _source_notes(cols):
        _say(line)


def _source_notes(cols: list[Column]) -> list[str]:
    """One line per other tool's file: which tool wrote the columns, and how its numbers differ."""
    lines: dict[str, str] = {}
    for c in cols:
        name, d = c.name, c.data
        if d.get("foreign"):
            file = name.split("#", 1)[0]
            lines.setdefault(file, f"{file}: {d['tool']}; " + "; ".join(d["notes"]))
    return list(lines.values())
