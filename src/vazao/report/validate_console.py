"""Console tables for `vazao validate` and `vazao calibrate` (from typed results only)."""

from __future__ import annotations

from rich.table import Table

from vazao.validate.run import Slice, ValidationReport


def _pct(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v * 100:+.0f}%" if signed else f"{v * 100:.0f}%"


def _slices(title: str, slices: dict[str, Slice]) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("", "rows", "median |err|", "p90 |err|", "median signed", "in 80% band"):
        t.add_column(col, justify="left" if not col else "right")
    for name, s in slices.items():
        t.add_row(name, str(s.rows), _pct(s.median_ape), _pct(s.p90_ape), _pct(s.median_signed, True),
                  _pct(s.band_coverage))
    return t


def render_validation(console, rep: ValidationReport, worst: int = 10) -> None:
    o = rep.overall
    console.print(f"[bold]{rep.predicted:,} of {rep.total:,} rows predicted[/] (coverage {_pct(rep.coverage)}): "
                  f"median |error| {_pct(o.median_ape)}, p90 {_pct(o.p90_ape)}, median signed "
                  f"{_pct(o.median_signed, True)}, measured inside the 80% band {_pct(o.band_coverage)}")
    for key, title in (("metric", "by metric"), ("engine", "by engine"), ("generation", "by GPU generation"),
                       ("model_family", "by model family"), ("regime", "by regime")):
        console.print(_slices(title, dict(rep.by.get(key, {}))))
    ranked = sorted((r for r in rep.results if r.ape is not None), key=lambda r: -r.ape)[:worst]
    if ranked:
        t = Table(title=f"worst {len(ranked)} rows", title_justify="left")
        for col in ("id", "metric", "condition", "measured", "predicted", "error", "regime", "detail"):
            t.add_column(col)
        for r in ranked:
            t.add_row(r.row.id, r.row.metric, r.row.condition.describe(), f"{r.row.value:,.4g}",
                      f"{r.predicted:,.4g}", _pct(r.signed, True), r.regime, r.detail)
        console.print(t)
    reasons = rep.skip_reasons()
    if reasons:
        console.print(f"[bold]skipped {sum(n for _, n in reasons):,} rows[/]:")
        for reason, n in reasons:
            console.print(f"  {n:5,}  {reason}", highlight=False)
