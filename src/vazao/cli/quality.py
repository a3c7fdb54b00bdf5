"""`vazao quality REFERENCE_URL CANDIDATE_URL --prompts FILE`: parse → quality.measure_quality → render."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from vazao import inputs
from vazao.cli.app import JSON, QUIET, app, console, emit_json, error_text, fail
from vazao.errors import VazaoError


@app.command("quality")
def quality_cmd(
    reference_url: str = typer.Argument(..., help="Base URL of the reference server, e.g. http://host:8000/v1."),
    candidate_url: str = typer.Argument(..., help="Base URL of the candidate (the format under test)."),
    prompts: Path = typer.Option(..., "--prompts", "-p", help="Prompts: one per line, or JSONL with "
                                 "{\"prompt\": …} or {\"messages\": […]}."),
    fmt: str = typer.Option(..., "--format", "-f", help="The candidate's format (vazao formats), e.g. q4_0."),
    reference_format: str = typer.Option("bf16", "--reference-format",
                                         help="The reference's format (default bf16)."),
    model: str | None = typer.Option(None, "--model", "-m", help="The catalog model both serve (gives the family)."),
    family: str | None = typer.Option(None, "--family", help="The model family, when the model is not in the "
                                                             "catalog (e.g. gemma3)."),
    reference_model: str | None = typer.Option(None, "--reference-model", help="Model name to request from the "
                                               "reference (default: the one it serves)."),
    candidate_model: str | None = typer.Option(None, "--candidate-model", help="Model name to request from the "
                                               "candidate (default: the one it serves)."),
    api: str = typer.Option("completions", "--api", help="completions (/completions) or chat (/chat/completions)."),
    metric: str = typer.Option("exact", "--metric", help="The row's recovery: exact (share of identical answers) "
                                                         "or agreement (share of tokens repeated)."),
    max_tokens: int = typer.Option(64, "--max-tokens", help="Tokens per answer."),
    top_logprobs: int = typer.Option(5, "--top-logprobs", help="Alternatives per position asked for (0: none)."),
    timeout: str = typer.Option("120s", "--timeout", help="Per-request limit."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env",
                                    help="Environment variable holding the API key (both servers)."),
    header: list[str] = typer.Option(None, "--header", "-H", help="Extra request header 'Name: value' "
                                                                  "(repeatable; both servers)."),
    extra_body: str | None = typer.Option(None, "--extra-body", help="JSON merged into every request body."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Write the quality row file (for plan "
                                                                    "--quality)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing -o file."),
    quiet: bool = QUIET,
    json_out: bool = JSON,
) -> None:
    """What a format costs on your task: the same prompts to a reference and a candidate server, greedy;
    exact match, token agreement, log-probability divergence; a row for plan --quality. Where the servers
    return no log-probabilities, the divergence is left out."""
    from vazao.loadgen import redact
    from vazao.loadgen.client import parse_headers

    try:
        hdrs = parse_headers(header)
    except VazaoError as exc:
        fail(f"--{exc}")
    key = os.environ.get(api_key_env) if api_key_env else None
    with redact.scope([key, *redact.header_secrets(hdrs), *redact.url_secrets(reference_url),
                       *redact.url_secrets(candidate_url)]):
        try:
            _quality(reference_url, candidate_url, prompts=prompts, fmt=fmt, reference_format=reference_format,
                     model=model, family=family, reference_model=reference_model, candidate_model=candidate_model,
                     api=api, metric=metric, max_tokens=max_tokens, top_logprobs=top_logprobs, timeout=timeout,
                     api_key_env=api_key_env, hdrs=hdrs, extra_body=extra_body, output=output, force=force,
                     quiet=quiet, json_out=json_out)
        except VazaoError as exc:
            fail(redact.redact(error_text(exc)))


def _quality(reference_url: str, candidate_url: str, *, prompts: Path, fmt: str, reference_format: str,
             model: str | None, family: str | None, reference_model: str | None, candidate_model: str | None,
             api: str, metric: str, max_tokens: int, top_logprobs: int, timeout: str, api_key_env: str,
             hdrs: dict[str, str], extra_body: str | None, output: Path | None, force: bool, quiet: bool,
             json_out: bool) -> None:
    from vazao.loadgen import redact
    from vazao.loadgen.client import Target
    from vazao.plan.quality import rows_document
    from vazao.quality.measure import measure_quality
    from vazao.quality.prompts import read_prompts
    from vazao.units import parse_duration

    if model and family:
        raise VazaoError("give --model or --family, not both")
    if model:
        from vazao.catalog.models import load_model

        family = load_model(model).arch.family
    if not family:
        raise VazaoError("give --model (a catalog model) or --family: the row is for a model family")
    extra = inputs.loads_json(extra_body, "--extra-body") if extra_body else {}
    if not isinstance(extra, dict):
        raise VazaoError("--extra-body must be a JSON object")
    timeout_s = parse_duration(timeout)
    if output is not None:
        inputs.output_file(output, "quality row file (-o)", force=force)
    items = read_prompts(prompts)
    ref = Target(reference_url, model=reference_model, api=api, api_key_env=api_key_env or None, headers=hdrs,
                 extra_body=extra)
    cand = Target(candidate_url, model=candidate_model, api=api, api_key_env=api_key_env or None, headers=hdrs,
                  extra_body=extra)
    m = measure_quality(ref, cand, items, family=family, fmt=fmt, reference_format=reference_format, metric=metric,
                        max_tokens=max_tokens, top_logprobs=top_logprobs, timeout_s=timeout_s,
                        prompts_name=str(prompts))
    if output is not None:
        text = inputs.dump_yaml(redact.redact_obj(rows_document([m.row()])), sort_keys=False, allow_unicode=True)
        inputs.write_text(output, text, "quality row file (-o)")
    if json_out:
        emit_json(redact.redact_obj(json.loads(json.dumps(m.to_json()))))
        return
    _render(m)
    if output is not None:
        console.print(f"wrote the quality row to {escape(str(output))} (vazao plan --quality {escape(str(output))})",
                      highlight=False)


def _render(m) -> None:
    from vazao.loadgen import redact

    t = Table(title=redact.redact(f"{m.format} vs {m.reference_format} on {m.family}: {len(m.prompts)} prompts "
                                  f"({m.candidate_url} vs {m.reference_url})"), title_justify="left")
    t.add_column("figure")
    t.add_column("value", justify="right")
    t.add_column("what it is")
    t.add_row("exact match", f"{m.exact_matches}/{len(m.prompts)} ({m.exact_rate:.1%})",
              "answers identical to the reference's")
    t.add_row(f"{m.unit} agreement", f"{m.agreeing_units}/{m.reference_units} ({m.agreement:.1%})",
              f"reference {m.unit} repeated before the answers part")
    if m.positions:
        t.add_row("top-k overlap", f"{m.top_overlap:.1%}", f"of the top {m.top_logprobs} alternatives, over "
                  f"{m.positions} positions with a shared context")
        t.add_row("KL estimate", f"{m.kl_nats:.4f} nats", "per position, over the reference's top-k (truncated)")
    else:
        t.add_row("log-probabilities", "–", "not returned by both servers")
    row = m.row()
    t.add_row("row recovery", f"{row.recovery:.1%}", row.metric)
    console.print(t)
