"""vazao simulate: a model on N accelerators serving a workload, engine step by engine step.

JSON (--json, vazao.sim.SimRun.to_json): {"summary": RunSummary, "sim": {...}, "deployment", "workload", "config", ...};
with --compare also "variants": [{"name": "batching=static", "summary", "throughput_ratio", "sim"}]
and "summary" is the first variant's; with a --rate or --concurrency list, "points":
[{"rate" | "concurrency": x, "summary", "sim"}] and "summary" is the last point's (as vazao bench).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from vazao import limits
from vazao.cli.app import (
    JSON,
    QUIET,
    app,
    check_positive,
    console,
    emit_json,
    parse_float_list,
    parse_int_list,
    show_progress,
)
from vazao.cli.plotting import PLOT, check_plot, write_plot
from vazao.errors import VazaoError
from vazao.inputs import number, output_file

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment
    from vazao.sim import SimConfig, SpecConfig


def _spec(k: int | None, alpha: float | None, draft: str | None, ratio: float | None) -> SpecConfig | None:
    from vazao.catalog.models import load_model
    from vazao.sim import SpecConfig

    if k is None and alpha is None and draft is None and ratio is None:
        return None
    if k is None or alpha is None:
        raise VazaoError("speculative decoding needs both --spec-k and --spec-alpha")
    if draft is not None and ratio is not None:
        raise VazaoError("give --spec-draft (a draft model) or --spec-draft-ratio, not both")
    alpha = float(number(alpha, "--spec-alpha (acceptance rate)", minimum=0, maximum=1))
    if ratio is not None:
        ratio = float(number(ratio, "--spec-draft-ratio", minimum=0, maximum=100))
    return SpecConfig(k, alpha, load_model(draft).arch if draft is not None else None, ratio)


def _traffic(rate: str | None, concurrency: str | None) -> tuple[list[float], list[int]]:
    """The --rate / --concurrency levels ('' is an error, not "not given")."""
    rates = (parse_float_list(rate, "--rate", maximum=limits.MAX_RATE) if rate is not None else [])
    concs = (parse_int_list(concurrency, "--concurrency", maximum=limits.MAX_CONCURRENCY)
             if concurrency is not None else [])
    if rates and concs:
        raise VazaoError("give --rate or --concurrency, not both")
    if max(len(rates), len(concs)) > limits.MAX_VARIANTS:
        raise VazaoError(f"a sweep runs at most {limits.MAX_VARIANTS} levels")
    return rates, concs


def _write_records(path: Path, results) -> None:
    from vazao.results import write_jsonl

    write_jsonl(path, (rec for r in results for rec in r.records()), "--records file")


@app.command("simulate")
def simulate_cmd(
    model: str = typer.Argument(..., help="Catalog name (llama-3.1-8b), a config.json path, or a .gguf file."),
    gpu: str = typer.Option(..., "--gpu", "-g", help="Accelerator id or label (h100-sxm, a100-sxm-80gb…)."),
    count: int = typer.Option(1, "--count", "-n", help="Number of accelerators (replicas = count / (tp × pp))."),
    fmt: str = typer.Option(None, "--format", "-f", help="Weight format (default: the file's own, else bf16)."),
    kv: str = typer.Option(None, "--kv", help="KV-cache format (default: the engine's for the format)."),
    profile: str = typer.Option(None, "--profile", help="A calibrated profile file (vazao calibrate -o)."),
    tp: int = typer.Option(None, "--tp", help="Tensor-parallel degree (default: count / pp)."),
    pp: int = typer.Option(1, "--pp", help="Pipeline-parallel stages."),
    attention_dp: bool = typer.Option(False, "--attention-dp", help="Attention data parallelism (MoE models): "
                                      "each of the tp GPUs serves its own requests; only the experts are split."),
    ep: int = typer.Option(1, "--ep", help="Expert parallelism (MoE models): the experts split this many ways whole "
                           "(must divide tp)."),
    engine: str = typer.Option(None, "--engine", "-e", help="Engine preset: vllm, sglang, trtllm, llama.cpp, naive "
                                "(default: the GPU's own: vLLM on NVIDIA and AMD, llama.cpp on Apple, CPUs and GGUF)."),
    ideal: bool = typer.Option(False, "--ideal", help="Physical limit: efficiencies 1, no overheads."),
    workload: str = typer.Option("chat", "--workload", "-w",
                                 help="Built-in (chat, rag, batch, agent, summarize, support) or a YAML file."),
    requests: int = typer.Option(None, "--requests", help="Requests to simulate (overrides the workload)."),
    rate: str = typer.Option(None, "--rate", "-r", help="Poisson requests/s; a list (2,4,8) sweeps a curve."),
    concurrency: str = typer.Option(None, "--concurrency", "-c", help="Closed loop; a list (1,4,16) sweeps."),
    seed: int = typer.Option(None, "--seed", help="Random seed (overrides the workload)."),
    duration: str = typer.Option(None, "--duration", "-d", help="Stop sending after this long, e.g. 10m."),
    compare_axes: list[str] = typer.Option(None, "--compare", help="AXIS=V1,V2 (repeatable): batching, kv, prefix, "
                                           "chunked, engine, max_seqs, budget, block, max_context, spec, disagg."),
    slo: str = typer.Option(None, "--slo", help="Goodput SLO, e.g. ttft_p95=500ms,tpot_p95=50ms."),
    max_context: int = typer.Option(None, "--max-context", help="Tokens per sequence the engine allows "
                                    "(and reserves, under the reserved layout); default: the workload's longest "
                                    "request, at most the model's (what a plan's command sets; one such sequence "
                                    "must fit the KV cache, or the engine would not start)."),
    batching: str = typer.Option(None, "--batching", help="static | continuous (default: the engine's)."),
    kv_layout: str = typer.Option(None, "--kv-layout", help="paged | reserved (default: the engine's)."),
    max_seqs: int = typer.Option(None, "--max-seqs", help="Sequences per step (max_num_seqs)."),
    max_batched_tokens: int = typer.Option(None, "--max-batched-tokens", help="Token budget per step."),
    block_size: int = typer.Option(None, "--block-size", help="KV block size in tokens."),
    prefix_cache: bool = typer.Option(None, "--prefix-cache/--no-prefix-cache", help="Prefix caching."),
    chunked: bool = typer.Option(None, "--chunked-prefill/--no-chunked-prefill", help="Chunked prefill."),
    spec_k: int = typer.Option(None, "--spec-k", help="Speculative decoding: draft tokens per step."),
    spec_alpha: float = typer.Option(None, "--spec-alpha", help="Speculative decoding: acceptance rate α."),
    spec_draft: str = typer.Option(None, "--spec-draft", help="Draft model (catalog name or config.json)."),
    spec_draft_ratio: float = typer.Option(None, "--spec-draft-ratio",
                                           help="Draft pass cost / target decode step (default 0.05)."),
    disagg: str = typer.Option(None, "--disagg", help="Disaggregated PREFILL:DECODE replicas, e.g. 1:1."),
    kv_link: str = typer.Option(None, "--kv-link", help="KV transfer bandwidth per GPU (default: interconnect)."),
    client_reaction: str = typer.Option(None, "--client-reaction", help="A closed-loop client sends its next "
                                        "request up to this long after a completion, e.g. 2ms (default 1ms; 0: at "
                                        "once, so clients that finish together stay in step)."),
    max_queue: int = typer.Option(None, "--max-queue", help="Stop (with a warning) when this many requests wait "
                                  "on one replica: an arrival rate far above capacity (default 100,000)."),
    records: Path = typer.Option(None, "--records", help="Write every simulated RequestRecord to this JSONL file."),
    timeline: bool = typer.Option(False, "--timeline", help="Show KV use and preemptions over time."),
    plot: Path = PLOT,
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """Simulate serving: continuous vs static batching, paged vs reserved KV, prefix caching,
    speculative decoding, disaggregated prefill/decode — on your workload, timed by the cost model.
    --plot draws a sweep's latency against throughput (with the SLO lines), else the latency percentiles."""
    from vazao.physics.deployment import make_deployment
    from vazao.results import SLO
    from vazao.sim.config import parse_compare
    from vazao.units import parse_duration
    from vazao.workload import load_workload

    check_positive(count=count, tp=tp, pp=pp, ep=ep, requests=requests, max_context=max_context, max_seqs=max_seqs,
                   max_batched_tokens=max_batched_tokens, block_size=block_size, max_queue=max_queue, spec_k=spec_k)
    if seed is not None:
        number(seed, "--seed", minimum=0, maximum=limits.SEED_LIMIT - 1, integer=True)
    rates, concs = _traffic(rate, concurrency)
    axes = parse_compare(compare_axes or [])
    sweeping = len(rates) > 1 or len(concs) > 1
    if axes and sweeping:
        raise VazaoError("--compare runs one traffic level; give a single --rate/--concurrency with it")
    if records is not None:
        output_file(records, "--records file")
    check_plot(plot)
    slo_obj = SLO.parse(slo) if slo is not None else None
    w = load_workload(workload, requests=requests, seed=seed,
                      duration_s=parse_duration(duration) if duration is not None else None,
                      rate=rates[0] if len(rates) == 1 else None,
                      concurrency=concs[0] if len(concs) == 1 else None)
    dep = make_deployment(model, gpu, fmt, kv, count=count, tp=tp, pp=pp, engine=engine, ideal=ideal,
                         profile=profile, attention_dp=attention_dp, expert_parallel=ep)
    cfg = _sim_config(dep, kv_link, disagg, (spec_k, spec_alpha, spec_draft, spec_draft_ratio),
                      scheduler=batching, kv_layout=kv_layout, max_num_seqs=max_seqs,
                      max_num_batched_tokens=max_batched_tokens, block_size=block_size, prefix_caching=prefix_cache,
                      chunked_prefill=chunked, max_context=max_context, max_waiting=max_queue,
                      client_reaction_s=_reaction(client_reaction))
    from vazao.report.progress import progress_bar
    from vazao.sim import run_simulation

    label = "simulating variants" if axes else "simulating the sweep" if sweeping else "simulating"
    with progress_bar(label, enabled=show_progress(json_out, quiet)) as show:
        run = run_simulation(dep, w, cfg, slo_obj, axes=axes, rates=rates if sweeping else (),
                             concurrencies=concs if sweeping else (), progress=show)
    # The result goes to stdout first, the records file after: a failed write keeps the printed copy.
    if json_out:
        emit_json(run)
    else:
        _render(run, slo_obj, timeline)
    if records is not None:
        _write_records(records, [r for _, r in run.named])
    if plot is not None:
        from vazao.report.reports import simulation_report

        write_plot(simulation_report(run), plot, json_out=json_out, quiet=quiet)


def _reaction(text: str | None) -> float | None:
    """--client-reaction as seconds (None: the simulator's default), bounded as SimConfig bounds it."""
    if text is None:
        return None
    from vazao.units import parse_duration

    try:
        seconds = parse_duration(text)
        number(seconds, "client reaction time (s)", minimum=0, maximum=limits.MAX_CLIENT_REACTION_S)
    except VazaoError as exc:  # the library names the setting; the user typed the flag
        raise VazaoError(f"--client-reaction: {exc}") from None
    return seconds


def _sim_config(dep: Deployment, kv_link: str | None, disagg: str | None, spec_args: tuple, **overrides) -> SimConfig:
    """The engine preset's settings with the options given (None: the engine's own); `spec_args` are
    _spec's, read after the link so that the first bad option is reported first, as the flags are read."""
    from vazao.sim import DisaggConfig, SimConfig
    from vazao.units import parse_bandwidth

    link = None
    if kv_link is not None:
        link = parse_bandwidth(kv_link)
        if not link > 0:
            raise VazaoError(f"--kv-link must be a positive bandwidth, e.g. 50GB/s, got {kv_link!r}")
    spec = _spec(*spec_args)
    split = None
    if disagg is not None:
        try:
            split = DisaggConfig.parse(disagg, link)
        except VazaoError as exc:  # the library names the setting; the user typed the flag
            raise VazaoError(f"--disagg: {exc}") from None
    cfg = SimConfig.from_engine(dep.engine, spec=spec, disagg=split, **overrides)
    if link is not None and cfg.disagg is None:
        raise VazaoError("--kv-link is the link between disaggregated pools: give --disagg with it")
    return cfg


def _render(run, slo, timeline: bool) -> None:
    from vazao.report.sim_console import (
        header_lines,
        points_table,
        result_lines,
        summary_table,
        timeline_table,
        variants_table,
    )
    from vazao.sim.stats import thin

    head = run.head
    if run.variants or run.points:
        table = (variants_table(head, list(run.variants), slo is not None) if run.variants else
                 points_table(head, list(run.points), slo is not None))
        _print_many(head, table, run.named)
        return
    result = run.result
    for line in header_lines(head):
        console.print(line, highlight=False)
    console.print(summary_table(head, result.summary))
    for line in result_lines(result, slo):
        console.print(line, highlight=False)
    if timeline:
        console.print(timeline_table(thin(result.timeline, 16)))


def _print_many(head: dict, table, named_results: list) -> None:
    """A comparison or a sweep: the header, its table, then each run's warnings under its name."""
    from vazao.report.sim_console import header_lines

    for line in header_lines(head):
        console.print(line, highlight=False)
    console.print(table)
    for name, result in named_results:
        for line in result.warnings:
            console.print(f"[yellow]{name}: {line}[/]", highlight=False)
