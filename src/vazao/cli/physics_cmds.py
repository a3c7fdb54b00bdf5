"""vazao fit | estimate | demo: what fits, and how fast it runs."""

from __future__ import annotations

from pathlib import Path

import typer

from vazao.cli.app import JSON, QUIET, app, check_positive, console, emit_json, parse_int_list
from vazao.cli.plotting import PLOT, check_plot, write_plot

MODEL = typer.Argument(..., help="Catalog name (llama-3.1-70b), a config.json path, or a .gguf file.")
GPU = typer.Option(..., "--gpu", "-g", help="Accelerator id or label (h100-sxm, A100-SXM4-80GB, rtx-4090).")
COUNT = typer.Option(1, "--count", "-n", help="Number of accelerators.")
FMT = typer.Option(None, "--format", "-f", help="Weight format (bf16, fp8, int4-awq, q4_k_m…); "
                   "default: the file's own, else bf16 (fp16 before Ampere).")
KV = typer.Option(None, "--kv", help="KV-cache format (fp16, bf16, fp8, int8, q4); default: the engine's for "
                  "the format (TensorRT-LLM runs FP8 KV for FP8 checkpoints, the others FP16).")
PROFILE = typer.Option(None, "--profile", help="A calibrated profile file (vazao calibrate -o).")
TP = typer.Option(None, "--tp", help="Tensor-parallel degree (default: count / pp).")
PP = typer.Option(1, "--pp", help="Pipeline-parallel stages.")
ENGINE = typer.Option(None, "--engine", "-e",
                      help="Engine profile: vllm, sglang, trtllm, llama.cpp, naive, ideal "
                      "(default: llama.cpp for GGUF files, Apple and CPUs; vllm otherwise).")
ADP = typer.Option(False, "--attention-dp", help="Attention data parallelism (MoE models): each of the tp GPUs "
                   "runs attention and the dense layers whole for its own requests and KV; only the routed "
                   "experts are split (TensorRT-LLM enable_attention_dp, SGLang --enable-dp-attention).")
EP = typer.Option(1, "--ep", help="Expert parallelism (MoE models): the routed experts split this many ways "
                  "as whole experts over the tp GPUs (must divide tp; TensorRT-LLM --ep, vLLM "
                  "--enable-expert-parallel).")
IDEAL = typer.Option(False, "--ideal", help="The physical limit: efficiencies 1, no overheads, all memory usable.")


@app.command("fit")
def fit_cmd(
    model: str = MODEL, gpu: str = GPU, count: int = COUNT, fmt: str = FMT, kv: str = KV,
    context: int = typer.Option(8192, "--context", "-c", help="Tokens per sequence (prompt + answer)."),
    tp: int = TP, pp: int = PP, engine: str = ENGINE, ideal: bool = IDEAL, plot: Path = PLOT,
    quiet: bool = QUIET, json_out: bool = JSON, attention_dp: bool = ADP, ep: int = EP,
) -> None:
    """Does it fit? Weights, KV per token and per sequence, and how many sequences fit. --plot draws
    the memory per GPU: weights, runtime reserve, KV cache, what the engine's cap leaves."""
    from vazao.physics.deployment import make_deployment
    from vazao.physics.memory import fit
    from vazao.report.console import fit_lines, lifecycle_lines, print_lines

    check_positive(count=count, context=context, tp=tp, pp=pp, ep=ep)
    check_plot(plot)
    dep = make_deployment(model, gpu, fmt, kv, count=count, tp=tp, pp=pp, engine=engine, ideal=ideal,
                          attention_dp=attention_dp, expert_parallel=ep)
    f = fit(dep, context)
    alternatives = []
    if not f.fits and not ideal:
        from vazao.plan.alternatives import what_fits

        alternatives = what_fits(model, gpu, dep.weight_format.name, context, engine=dep.engine.name)
    result = {"kind": "fit", "deployment": dep.label(), **dep.to_json(), "ideal": ideal,
              "format_status": dep.support.status, **f.to_json(),
              **({"fits_instead": [a.to_json() for a in alternatives]} if not f.fits else {}),
              "lifecycle": dep.lifecycle.to_json()}
    if json_out:
        emit_json(result)
    else:
        print_lines(console, fit_lines(dep.label(), f) + lifecycle_lines([result["lifecycle"]]))
        if not f.fits:
            console.print("would fit: " + (", or ".join(a.describe() for a in alternatives) if alternatives else
                                           "nothing up to 8 GPUs of this kind, in this format or a narrower one"),
                          highlight=False)
    if plot is not None:
        from vazao.report.small_reports import fit_report

        write_plot(fit_report(result), plot, json_out=json_out, quiet=quiet)


@app.command("estimate")
def estimate_cmd(
    model: str = MODEL, gpu: str = GPU, count: int = COUNT, fmt: str = FMT, kv: str = KV,
    batch: str = typer.Option("1,8,32", "--batch", "-b", help="Comma-separated batch sizes."),
    input_tokens: int = typer.Option(1024, "--input", "-i", help="Prompt tokens."),
    output_tokens: int = typer.Option(256, "--output", "-o", help="Answer tokens."),
    tp: int = TP, pp: int = PP, engine: str = ENGINE, ideal: bool = IDEAL, profile: str = PROFILE,
    plot: Path = PLOT,
    quiet: bool = QUIET,
    json_out: bool = JSON,
    attention_dp: bool = ADP,
    ep: int = EP,
) -> None:
    """How fast: decode and prefill per batch size, TTFT, tokens/s, crossover batch, latency floor.
    --plot draws each batch's decode and prefill step on the GPU's roofline."""
    from vazao.analytic import estimate
    from vazao.physics.deployment import make_deployment
    from vazao.report.console import estimate_footer, estimate_table, lifecycle_lines, print_lines

    check_positive(count=count, input=input_tokens, output=output_tokens, tp=tp, pp=pp, ep=ep)
    batches = parse_int_list(batch, "--batch")
    check_plot(plot)
    dep = make_deployment(model, gpu, fmt, kv, count=count, tp=tp, pp=pp, engine=engine, ideal=ideal,
                         profile=profile, attention_dp=attention_dp, expert_parallel=ep)
    est = estimate(dep, batches, input_tokens, output_tokens)
    result = {"kind": "estimate", **dep.to_json(), "ideal": ideal, **est.to_json(),
              "lifecycle": dep.lifecycle.to_json()}
    if json_out:
        emit_json(result)
    else:
        console.print(estimate_table(est))
        print_lines(console, estimate_footer(est) + lifecycle_lines([result["lifecycle"]]))
    if plot is not None:
        from vazao.report.estimate_report import estimate_report

        write_plot(estimate_report(result, dep.accelerator), plot, json_out=json_out, quiet=quiet)


@app.command("demo")
def demo_cmd(
    input_tokens: int = typer.Option(1024, "--input", "-i", help="Prompt tokens per request."),
    output_tokens: int = typer.Option(256, "--output", "-o", help="Answer tokens per request."),
    report: Path = typer.Option(None, "--report", help="Also write the default scenario's HTML report here "
                                "(llama-3.1-70b on 8× h100-sxm: roofline, memory)."),
    json_out: bool = JSON,
) -> None:
    """The first screen: the seeds' answers, what fits one GPU (cheapest first, $/Mtok), what to run next."""
    from vazao import inputs
    from vazao.demo import build_demo

    check_positive(input=input_tokens, output=output_tokens)
    if report is not None:
        inputs.output_file(report, "--report")  # an unwritable path fails before any work
        from vazao.report.export import vl_convert
        from vazao.report.plots import altair

        altair(), vl_convert()  # so does a missing report extra
    demo, est = build_demo(input_tokens, output_tokens)
    if json_out:
        emit_json(demo)
    else:
        from vazao.report.demo_console import print_demo

        print_demo(console, demo)
    if report is not None:
        _write_demo_report(report, est, json_out)


def _write_demo_report(path: Path, est, quiet: bool) -> None:
    from vazao import inputs
    from vazao.cli.app import err_console
    from vazao.demo import estimate_result
    from vazao.report.estimate_report import estimate_report
    from vazao.report.html import render_report

    rep = estimate_report(estimate_result(est))  # the JSON `vazao estimate --json` prints
    inputs.write_text(path, render_report(rep), "--report")
    (err_console if quiet else console).print(f"\nwrote {path}: the HTML report of {rep.title} (opens offline)",
                                             highlight=False)
