"""`vazao demo` on the console, in 100 columns: the seeds' headline answers one line each, the
configurations that fit one GPU (cheapest first), what the others need, and four next commands.
Renders a vazao.demo.Demo; computes nothing (figures are only rounded for reading)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from vazao.demo import Demo, FitRow, Headlines, Misfit, NextCommand
from vazao.units import GB

EMULATED = "†"


def _sig(x: float | None, digits: int = 2) -> str:
    """An estimate to the precision it deserves (and the seeds quote): 5.197 → 5.2, 296 → 300."""
    if x is None:
        return "never"
    rounded = float(f"{x:.{digits}g}")
    return f"{rounded:,.0f}" if rounded >= 10 ** (digits - 1) else f"{rounded:g}"


def _approx(x: float | None) -> str:
    return "never" if x is None else f"≈{_sig(x)}"


def _rate(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else _sig(x)


def _cents(d: Decimal) -> str:
    """The seed's rounding for a conversation's bill: $0.1516 → $0.152."""
    return f"${d.quantize(Decimal('0.001'), rounding=ROUND_HALF_UP)}"


def _per_mtok(d: Decimal | None) -> str:
    if d is None:
        return "–"
    return f"${d:.3f}" if d < 1 else f"${d:,.2f}"


def headline_lines(h: Headlines) -> list[tuple[str, str]]:
    """(question, answer) per seed question; at the default lengths each fits one 100-column line."""
    f, c, x, q = h.floor, h.cache, h.crossover, h.fp8
    old, new = q.gpus[0], q.gpus[-1]
    saving = int((c.saving_share * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    band = "" if f.tokens_per_s_b1_band is None else \
        f" ({_sig(f.tokens_per_s_b1_band[0])}–{_sig(f.tokens_per_s_b1_band[1])})"
    floor = (f"{f.model}, {f.count}× {f.gpu}: {_sig(f.ideal_floor_s * 1e3)} ms/token = "
             f"{_sig(f.ideal_tokens_per_s_b1)} tok/s @b1 ideal, {_sig(f.tokens_per_s_b1)}{band} on {f.engine}")
    cache = (f"support chat on {c.price}: {_cents(c.uncached_usd)}, {_cents(c.cached_usd)} with "
             f"{c.system_tokens:,} tokens cached (−{saving}%)")
    fmt = (f"{q.model} {_sig(q.weights_bytes_16bit / GB)}→{_sig(q.weights_bytes / GB)} GB; math at "
           f"{old.compute_speedup:.1f}× {q.baseline} on {old.gpu} ({old.status}), "
           f"{new.compute_speedup:.1f}× on {new.gpu} ({new.status})")
    cross = (f"{x.count}× {x.gpu} decode from batch {_approx(x.weights_only_batch)} (weights only, ideal), "
             f"{_approx(x.batch_at_context)} with KV reads ({x.engine})")
    return [("Latency floor", floor), ("Prompt caching", cache), (q.format.upper(), fmt), ("Compute-bound", cross)]


def headline_text(h: Headlines) -> Text:
    out = Text()
    for i, (question, answer) in enumerate(headline_lines(h)):
        out.append(("\n" if i else "") + question + ": ", style="bold")
        out.append(answer)
    return out


def _row_cells(r: FitRow) -> tuple[str, ...]:
    fmt = r.format + (EMULATED if r.status == "emulated" else "")
    return (r.model, r.gpu, fmt, f"{r.max_seqs:,}", _rate(r.tokens_per_s_b1), f"{r.ttft_s_b1 * 1e3:,.0f}",
            f"{r.max_batch:,}", _rate(r.tokens_per_s_max), f"${r.usd_per_gpu_hour:.2f}", _per_mtok(r.usd_per_mtok),
            _band(r.usd_per_mtok_band))


def _band(b: tuple[Decimal, Decimal] | None) -> str:
    """'.063–.1': a $/Mtok band's edges in dollars, to two figures and without a leading zero (100 columns)."""
    def edge(d: Decimal) -> str:
        text = f"{float(d):.2g}"
        return text[1:] if text.startswith("0.") else text

    return "–" if b is None else f"{edge(b[0])}–{edge(b[1])}"


COLUMNS = (("model", "left"), ("gpu", "left"), ("format", "left"), ("max\nseqs", "right"),
           ("tok/s\n@b1", "right"), ("TTFT\nms @b1", "right"), ("max b", "right"), ("tok/s\n@max b", "right"),
           ("$/GPU\nhour", "right"), ("$/Mtok\n@max b", "right"), ("80%\nband", "right"))


def rows_table(demo: Demo) -> Table:
    t = Table(box=box.SIMPLE_HEAD, padding=(0, 0, 0, 1), pad_edge=False, show_edge=False)
    for name, justify in COLUMNS:
        t.add_column(name, justify=justify, no_wrap=True)
    for r in demo.rows:
        t.add_row(*_row_cells(r))
    return t


def misfit_line(m: Misfit) -> str:
    needs = ", ".join(f"{n}× {gpu}" if n else f"more than {m.max_gpus}× {gpu}" for gpu, n in m.needs)
    refused = f"unsupported on {', '.join(m.unsupported)}" if m.unsupported else ""
    return f"{m.model} {m.format}: " + "; ".join(p for p in (f"needs {needs}" if needs else "", refused) if p)


def _commands(cmds: tuple[NextCommand, ...]) -> Group:
    lines: list[RenderableType] = [Text("Next", style="bold")]
    for c in cmds:
        lines += [Text(f"  # {c.purpose}", style="dim"), Text(f"  {c.command}")]
    return Group(*lines)


def demo_screen(demo: Demo) -> Group:
    """The whole first screen, top to bottom."""
    parts: list[RenderableType] = [Text("The seeds' questions", style="bold"), headline_text(demo.headlines),
                                   Text("")]
    parts.append(Text(f"What fits one GPU, cheapest first ({demo.engine}; {demo.input_tokens:,}-token prompts, "
                      f"{demo.output_tokens:,}-token answers)", style="bold"))
    parts.append(rows_table(demo) if demo.rows else Text("  nothing, at these lengths"))
    notes = [f"{EMULATED} emulated: memory gain only, the math runs in 16 bits. max b: max load's batch, at most "
             "max seqs.", "$/Mtok: catalog $/GPU-h over output tok/s @max b (no latency limit).",
             "80% band: $/Mtok at the edges of that throughput's band (the engine profile's residuals, widened",
             "where the profile was not fitted on the GPU generation, format or model family)."]
    parts += [Text(n, style="dim") for n in notes]
    if demo.misfits:
        parts += [Text(""), Text("Too big for one GPU (fewest GPUs of each kind, same format)", style="bold")]
        parts += [Text(f"  {misfit_line(m)}") for m in demo.misfits]
    parts += [Text(""), _commands(demo.next_commands)]
    return Group(*parts)


def print_demo(console: Console, demo: Demo) -> None:
    console.print(demo_screen(demo), highlight=False)
