"""Rich tables for the catalogs, fit and estimate results."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from vazao.report.fitted import FittedTable
from vazao.units import fmt_bytes, fmt_rate, fmt_seconds

STATUS_STYLE = {"native": "green", "emulated": "yellow", "unsupported": "red"}


def models_table(rows: list[dict]) -> Table:
    t = FittedTable(title=f"Models ({len(rows)}) by family (--family NAME for one)",
                    title_justify="left")
    t.add_column("name")
    t.add_column("family", keep=6)
    t.add_column("params", justify="right", keep=9)
    t.add_column("active", justify="right", keep=7)
    t.add_column("layers", justify="right", keep=3)
    t.add_column("attention", short="attn", keep=4)
    t.add_column("kv/token (16-bit)", short="kv/token", justify="right", keep=8)
    t.add_column("context", justify="right", keep=5)
    t.add_column("source", prose=True, min_width=30, keep=1)
    for r in rows:
        t.add_row(r["name"], r["family"], f"{r['params'] / 1e9:.1f}B", f"{r['active_params'] / 1e9:.1f}B",
                  str(r["layers"]), r["attention"], fmt_bytes(r["kv_bytes_per_token"]), f"{r['max_context']:,}",
                  r["source"])
    return t


def _tflops(x: float) -> str:
    return "-" if not x else f"{x / 1e12:,.0f}" if x >= 10e12 else f"{x / 1e12:.2g}"


def _memory(r: dict) -> str:
    """A capacity in the unit the catalog states it in: '80 GiB' for an H100, not '85.9 GB'."""
    return fmt_bytes(r["memory_bytes"], binary=r.get("memory_unit") == "GiB")


def gpus_table(rows: list[dict]) -> Table:
    t = FittedTable(title="Accelerators: dense TFLOP/s, memory bandwidth GB/s, on-demand $ per GPU-hour",
                    title_justify="left")
    t.add_column("id")
    t.add_column("gen", keep=5)
    t.add_column("cc", keep=2)
    t.add_column("memory", justify="right")
    t.add_column("GB/s", justify="right", keep=9)
    t.add_column("bf16/fp16", short="16-bit", justify="right", keep=8)
    t.add_column("fp8", justify="right", keep=7)
    t.add_column("fp4", justify="right", keep=6)
    t.add_column("$/h", justify="right", keep=9)
    t.add_column("link", keep=3)
    t.add_column("name", prose=True, keep=1)
    for r in rows:
        t.add_row(r["id"], r["generation"], r["compute_capability"] or "-", _memory(r),
                  f"{r['memory_bandwidth_bytes_per_s'] / 1e9:,.0f}", _tflops(r["peak_16bit"]),
                  _tflops(r["peak_fp8"]), _tflops(r["peak_fp4"]),
                  f"{r['usd_per_hour']:.2f}" if r["usd_per_hour"] else "-", r["interconnect"], r["name"])
    return t


def formats_table(rows: list[dict], gpu: str | None) -> Table:
    title = f"Formats on {gpu}" if gpu else "Formats"
    t = Table(title=title, title_justify="left")
    cols = ["name", "kind", "bits/weight", "computes in"] + (["status", "why"] if gpu else ["description"])
    for col in cols:
        t.add_column(col, overflow="fold")
    for r in rows:
        base = [r["name"], r["kind"], f"{r['weight_bits']:g}", r.get("runs_as") or r["compute_dtype"]]
        if gpu:
            style = STATUS_STYLE.get(r["status"], "")
            base += [f"[{style}]{r['status']}[/]", r.get("reason", "")]
        else:
            base += [r["description"]]
        t.add_row(*base)
    return t


def fit_lines(label: str, f) -> list[str]:
    verdict = "[green]fits[/]" if f.fits else f"[red]does not fit[/]: {f.reason}"
    lines = [
        f"[bold]{label}[/]: {verdict}",
        f"  weights            {fmt_bytes(f.weights_bytes)} ({fmt_bytes(f.weights_bytes_per_gpu)} per GPU "
        f"of {fmt_bytes(f.memory_bytes_per_gpu)} = {fmt_bytes(f.memory_bytes_per_gpu, binary=True)})",
        f"  runtime overhead   {fmt_bytes(f.overhead_bytes_per_gpu)} per GPU",
        f"  KV per token       {f.kv_bytes_per_token:,.0f} B ({fmt_bytes(f.kv_bytes_per_token)}; "
        f"{fmt_bytes(f.kv_bytes_per_token_per_gpu)} per GPU)",
        f"  KV per sequence    {fmt_bytes(f.kv_bytes_per_sequence)} at {f.context:,} tokens "
        f"({fmt_bytes(f.kv_bytes_per_sequence, binary=True)})",
        f"  free for KV        {fmt_bytes(f.free_bytes_for_kv)} over all GPUs",
        f"  concurrent seqs    {f.max_concurrent_sequences:,} of {f.context:,} tokens",
    ]
    if f.offload_bytes_per_gpu > 0:
        lines.append(f"  [yellow]spills {fmt_bytes(f.offload_bytes_per_gpu)} per GPU to host memory[/]")
    return lines


def with_band(text: str, band, fmt) -> str:
    """'2.41k (2.15k–2.69k)': a figure and its 80% band, when the profile is calibrated."""
    return f"{text} ({fmt(band.low)}–{fmt(band.high)})" if band else text


def estimate_table(est) -> Table:
    t = FittedTable(title=f"{est.deployment}: prompt {est.input_tokens:,}, answer {est.output_tokens:,} tokens",
                    title_justify="left")
    # narrow terminals leave out the lowest keep first: energy, then the bounds, the per-request rate, E2E
    for col, keep, short in (("batch", None, None), ("decode step", 10, "step"), ("tok/s per request", 5, "tok/s req"),
                             ("tok/s total", 11, "tok/s all"), ("TTFT (batch prefill)", 9, "TTFT"), ("E2E", 6, None),
                             ("decode bound", 4, "decode"), ("prefill bound", 3, "prefill"), ("KV fits", 8, "KV"),
                             ("decode W/GPU", 2, "W/GPU"), ("J/token", 1, "J/tok"), ("power $/M", 0, "power")):
        t.add_column(col, justify="right", keep=keep, short=short)
    for r in est.rows:
        watts = "?" if r.decode_power_w is None else f"{r.decode_power_w:.0f}"
        joules = "?" if r.decode_j_per_token is None else f"{r.decode_j_per_token:.3g}"
        usd = r.decode_electricity_usd_per_mtok
        power_usd = "?" if usd is None else f"${usd:.3g}"
        t.add_row(str(r.batch), with_band(fmt_seconds(r.decode_step_s), r.decode_step_band, fmt_seconds),
                  with_band(fmt_rate(r.tokens_per_s_per_request), r.tokens_per_s_per_request_band, fmt_rate),
                  with_band(fmt_rate(r.tokens_per_s_total), r.tokens_per_s_band, fmt_rate),
                  with_band(fmt_seconds(r.ttft_s), r.ttft_band, fmt_seconds),
                  with_band(fmt_seconds(r.e2e_s), r.e2e_band, fmt_seconds),
                  r.bound, r.prefill_bound, "yes" if r.fits else "[red]no[/]", watts, joules, power_usd)
    return t


def estimate_footer(est) -> list[str]:
    cross = f"{est.crossover_batch:,}" if est.crossover_batch else "never (KV reads grow with the batch)"
    cross0 = f"{est.crossover_batch_weights_only:,}" if est.crossover_batch_weights_only else "never"
    lines = [
        f"latency floor      {with_band(fmt_seconds(est.latency_floor_s), est.latency_floor_band, fmt_seconds)} per "
        f"token ({fmt_rate(1 / est.latency_floor_s)} tok/s)",
        f"compute-bound from batch {cross} at this context; {cross0} with an empty cache",
        f"max load           {with_band(fmt_rate(est.max_load_tokens_per_s), est.max_load_band, fmt_rate)} "
        f"output tok/s at batch {est.max_batch:,}",
    ]
    bands = [b for r in est.rows for b in (r.tokens_per_s_band, r.ttft_band) if b] + (
        [est.max_load_band] if est.max_load_band else [])
    if bands:
        notes = sorted({b.note for b in bands if b.note})
        lines.append("(low–high): the 80% band from the engine profile's calibration residuals"
                     + (f"; [yellow]{'; '.join(notes)}[/] (band widened)" if notes else ""))
    elif getattr(est, "physical_limit", False):
        lines.append("no band: the physical limit (efficiencies 1, no overheads) is a bound no engine beats, not a "
                     "prediction; every band's fast edge stops at it")
    else:
        lines.append("no band: this engine profile is not calibrated (vazao calibrate)")
    if est.format_status != "native":
        lines.append(f"[yellow]format {est.format_status}[/]: {est.format_reason}")
    if est.offloaded:
        lines.append(f"[yellow]weights spill to host memory[/]: {est.fit.reason}; each step streams "
                     f"{fmt_bytes(est.fit.offload_bytes_per_gpu)} per GPU over the host link")
    from rich.markup import escape

    lines.extend(f"[yellow]kernels[/]: {escape(n)}" for n in est.kernel_notes)
    return lines


def lifecycle_lines(docs: list[dict]) -> list[str]:
    """The software-lifecycle notes of deployments (Lifecycle.to_json documents), one line each, repeats
    dropped: the same words in fit, estimate, formats and plan."""
    from rich.markup import escape

    seen: list[str] = []
    for d in docs:
        note = (d or {}).get("note") or ""
        if note and note not in seen:
            seen.append(note)
    return [f"[yellow]engine support[/]: {escape(n)}" for n in seen]


def print_lines(console: Console, lines: list[str]) -> None:
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)
