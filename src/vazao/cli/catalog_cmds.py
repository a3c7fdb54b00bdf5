"""vazao models | gpus | formats: browse the catalogs."""

from __future__ import annotations

import typer

from vazao.cli.app import JSON, app, console, emit_json


def _families(wanted: str, known: set[str]) -> set[str]:
    """'qwen' names qwen2, qwen3 and qwen3_moe; 'llama,gemma3' two families. Unknown: one line, the list."""
    from vazao.catalog._load import check_label, norm
    from vazao.errors import VazaoError

    picked: set[str] = set()
    for part in check_label("model family", wanted).split(","):
        key = norm(part).replace("-", "_")
        match = {f for f in known if f == key or f.startswith(key)} if key else set()
        if not match:
            raise VazaoError(f"no model family {part.strip()[:40]!r} (families: {', '.join(sorted(known))})")
        picked |= match
    return picked


@app.command("models")
def models_cmd(
    family: str = typer.Option(None, "--family", "-f",
                               help="Only these families, comma-separated; a prefix matches (qwen: qwen2, qwen3…)."),
    json_out: bool = JSON,
) -> None:
    """The model architectures vazao knows (read from their config.json numbers), grouped by family."""
    from vazao.catalog.models import models
    from vazao.report.console import models_table

    ms = sorted(models().values(), key=lambda m: (m.family, m.total_params, m.name))
    if family is not None:
        keep = _families(family, {m.family for m in ms})
        ms = [m for m in ms if m.family in keep]
    rows = [
        {
            "name": m.name, "family": m.family, "params": m.total_params, "active_params": m.active_params,
            "layers": m.num_layers, "hidden_size": m.hidden_size, "heads": m.num_heads,
            "kv_heads": m.num_kv_heads, "attention": m.attention_kind, "moe": m.is_moe,
            "kv_bytes_per_token": m.kv_bytes_per_token(2.0), "max_context": m.max_context,
            "sliding_window": m.sliding_window, "aliases": list(m.aliases), "source": m.source, "as_of": m.as_of,
        }
        for m in ms
    ]
    if json_out:
        emit_json({"models": rows})
    else:
        console.print(models_table(rows))


@app.command("gpus")
def gpus_cmd(json_out: bool = JSON) -> None:
    """The accelerators vazao knows: memory, bandwidth, dense peaks, links, rental price."""
    from vazao.catalog.hardware import accelerators
    from vazao.report.console import gpus_table

    rows = [
        {
            "id": a.id, "name": a.name, "vendor": a.vendor, "generation": a.generation,
            "compute_capability": a.compute_capability, "tensor_cores": a.tensor_cores,
            "memory_bytes": a.memory_bytes, "memory_unit": a.memory_unit, "memory_source": a.memory_source,
            "memory_as_of": a.memory_as_of, "memory_bandwidth_bytes_per_s": a.memory_bandwidth_bytes_per_s,
            "peak_flops": dict(a.peak_flops), "peak_16bit": a.peak_16bit[1], "peak_fp8": a.peak("fp8"),
            "peak_fp4": a.peak("fp4"), "interconnect": a.interconnect,
            "interconnect_bytes_per_s": a.interconnect_bytes_per_s, "usd_per_hour": a.usd_per_hour,
            "aliases": list(a.aliases), "source": a.source, "as_of": a.as_of,
            "price_source": a.price_source, "price_as_of": a.price_as_of,
            "sm_count": a.sm_count, "sm_source": a.sm_source, "sm_as_of": a.sm_as_of,
        }
        for a in accelerators().values()
    ]
    if json_out:
        emit_json({"gpus": rows})
    else:
        console.print(gpus_table(rows))


@app.command("formats")
def formats_cmd(
    gpu: str = typer.Option(None, "--gpu", help="Show native/emulated/unsupported on this accelerator."),
    engine: str = typer.Option(None, "--engine", help="Apply this engine's kernel rules (vllm, trtllm, llama.cpp…)."),
    json_out: bool = JSON,
) -> None:
    """Execution formats: bits per weight, weight-only vs weight+activation, and native support."""
    from vazao.catalog.engine_support import lifecycle
    from vazao.catalog.formats import formats
    from vazao.catalog.local import resolve_accelerator
    from vazao.physics.deployment import format_support
    from vazao.physics.profiles import get_engine
    from vazao.report.console import formats_table, lifecycle_lines, print_lines

    acc = resolve_accelerator(gpu) if gpu is not None else None
    profile = get_engine(engine) if engine is not None else None
    engine = profile.name if profile is not None else None
    rows = []
    for f in formats().values():
        row = {"name": f.name, "kind": f.kind, "weight_bits": f.weight_bits, "embed_bits": f.embed_bits,
               "compute_dtype": f.compute_dtype, "family": f.family, "description": f.description,
               "source": f.source, "as_of": f.as_of}
        if acc:
            s = format_support(f, acc, profile)
            row.update(status=s.status, runs_as=s.compute_dtype, reason=s.reason)
        rows.append(row)
    # the engine's software lifecycle on the card: the same Lifecycle fit, estimate and plan report
    life = lifecycle(profile.name, acc).to_json() if acc and profile is not None else None
    if json_out:
        out = {"formats": rows}
        if acc:
            out.update(gpu=acc.id, generation=acc.generation, tensor_cores=acc.tensor_cores, engine=engine,
                       lifecycle=life)
        emit_json(out)
    else:
        if acc and not acc.tensor_cores:
            console.print(f"[yellow]{acc.name} has no tensor cores[/]: {acc.gen.note}", highlight=False)
        console.print(formats_table(rows, acc.name if acc else None))
        print_lines(console, lifecycle_lines([life] if life else []))
