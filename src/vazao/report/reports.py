"""One Report per kind of vazao result: simulation, bench run, comparison (measured against
predicted), validation, plan. Built from the result JSON through report.adapters."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vazao.report import adapters as ad
from vazao.report.model import LatencySample, Report, Table, reads_document
from vazao.report.summary import summary_rows
from vazao.resultfiles import json_document


def _ms(v: Any) -> str:
    return "–" if not isinstance(v, (int, float)) else f"{v * 1e3:,.1f}"


def _num(v: Any, fmt: str = ",.1f") -> str:
    return "–" if not isinstance(v, (int, float)) else format(v, fmt)


def _text(v: Any) -> str:
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(", ", ": "))
    return "–" if v is None else str(v)


def _facts(data: Mapping[str, Any], keys: Sequence[str], prefix: str = "") -> list[tuple[str, str]]:
    return [(prefix + k, _text(data[k])) for k in keys if data.get(k) not in (None, "", {}, [])]


def _sweep_table(data: Mapping[str, Any], title: str) -> list[Table]:
    points = data.get("points") or []
    if not points:
        return []
    axis = "concurrency" if "concurrency" in points[0] else "rate"
    rows = tuple((_text(p.get(axis)), _num(p["summary"].get("request_throughput_per_s"), ",.2f"),
                  _num(p["summary"].get("output_tokens_per_s")), _ms(p["summary"]["ttft_s"].get("p95")),
                  _ms(p["summary"]["tpot_s"].get("p95")), _num(p["summary"].get("errors"), ",d")) for p in points)
    return [Table(title, (axis, "requests/s", "output tok/s", "TTFT p95 (ms)", "TPOT p95 (ms)", "errors"), rows)]


def _headline(summary: Mapping[str, Any]) -> str:
    return (f"{_num(summary.get('output_tokens_per_s'), ',.0f')} output tok/s; TTFT p95 "
            f"{_ms(summary['ttft_s'].get('p95'))} ms; TPOT p95 {_ms(summary['tpot_s'].get('p95'))} ms; "
            f"{_num(summary.get('errors'), ',d')} errors")


_SIM_FACTS = ("model", "gpu", "count", "tp", "pp", "format", "kv_format", "engine", "workload",
              "workload_description", "config", "slo", "profile", "calibration", "catalog_versions")


@reads_document("simulation")
def simulation_report(data: Any) -> Report:
    data = json_document(data)  # a typed result or its JSON (a file read back)
    curve, axis = ad.curve_points(data)
    sim = data.get("sim") or {}
    stats = [(k, _text(sim.get(k))) for k in ("completed", "preemptions", "cache_hit_share", "mean_batch",
                                              "peak_running", "kv_capacity_tokens") if k in sim]
    facts = _facts(data, _SIM_FACTS)
    raw = _sim_bands(data)
    bands = _row_bands(data["summary"], raw)
    notes = sorted({str(b[2]) for b in raw.values() if len(b) > 2 and b[2]})
    summary = tuple((name, value, bands.get(name, ("–",))[0]) for name, value in summary_rows(data["summary"]))
    return Report(kind="simulation", title=str(data.get("deployment", "simulation")),
                  headline=f"Simulated: {_headline(data['summary'])}",
                  tables=(Table("Summary (the 80% band: the engine profile's calibration residuals"
                                + (f"; {'; '.join(notes)}" if notes else "") + ")",
                                ("metric", "value", "80% band"), summary),
                          *_sweep_table(data, "Sweep"), Table("Simulator", ("statistic", "value"), tuple(stats))),
                  facts=tuple(facts), curve=tuple(curve), curve_axis=axis, slo_s=ad.slo_seconds(data),
                  latencies=tuple(ad.summary_latencies(data["summary"])))


def run_latencies(data: Mapping[str, Any], base: Path | None) -> list[LatencySample]:
    """The run's own records (the last sweep level, as its summary) when its JSONL is at hand; else
    the summary's quantiles."""
    run = data.get("run") or {}
    name = run.get("records")
    for path in ([Path(name), (base or Path(".")) / Path(name).name] if name else []):
        if path.is_file():
            from vazao.loadgen.records import read_log

            log = read_log(path, run.get("run_id"))
            records = log.by_point[max(log.by_point)] if log.by_point else log.records
            if records:
                return ad.record_latencies(records)
    return ad.summary_latencies(data["summary"])


_RUN_FACTS = ("url", "model", "api", "workload", "workload_description", "workload_spec", "seed", "run_id",
              "records", "stopped")


@reads_document("bench run")
def bench_report(data: Any, base: Path | None = None) -> Report:
    data = json_document(data)  # a typed result or its JSON (a file read back)
    curve, axis = ad.curve_points(data)
    run = data.get("run") or {}
    server = data.get("server") or {}
    facts = (_facts(run, _RUN_FACTS) + [("server engine", _text(server.get("engine")))]
             + _facts(data, ("slo", "calibration", "warnings", "errors")))
    return Report(kind="bench run", title=f"{run.get('model', 'run')} at {run.get('url', '?')}",
                  headline=f"Measured: {_headline(data['summary'])}",
                  tables=(Table("Summary", ("metric", "value"), tuple(summary_rows(data["summary"]))),
                          *_sweep_table(data, "Sweep")),
                  facts=tuple(facts), curve=tuple(curve), curve_axis=axis, slo_s=ad.slo_seconds(data),
                  latencies=tuple(run_latencies(data, base)))


def _sim_bands(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A simulation document's 80% bands (`sim.bands`; a sweep's summary is its last point's, and so are its
    bands), the entries that hold two numbers."""
    sim = doc.get("sim") or ((doc.get("points") or [{}])[-1].get("sim") or {})
    return {k: b for k, b in (sim.get("bands") or {}).items()
            if isinstance(b, (list, tuple)) and len(b) >= 2 and all(isinstance(x, (int, float)) for x in b[:2])}


_ROW_NAME = {"output tok/s": "output tokens/s"}  # runs.compare's row label -> summary_rows' name


def _row_bands(predicted: Mapping[str, Any], bands: Mapping[str, Any],
               measured: Mapping[str, Any] | None = None) -> dict[str, tuple[str, str]]:
    """summary_rows' row name -> (the prediction's band as text, whether the measurement lies in it): the rows
    of runs.compare (its keys for the simulation's bands, its in-band test), in summary_rows' units."""
    from vazao.loadgen.runs import Column, compare
    from vazao.results import RunSummary

    columns = [] if measured is None else [Column("measured", RunSummary.from_json(measured))]
    columns.append(Column("predicted", RunSummary.from_json(predicted), {"bands": bands}))
    out: dict[str, tuple[str, str]] = {}
    for row in compare(columns).rows:
        band = row.bands[-1] if row.bands else None
        if band is None:
            continue
        name, fmt = (f"{row.label} (ms)", _ms) if row.unit == "s" else (_ROW_NAME.get(row.label, row.label), _num)
        inside = "–" if row.inside is None else "yes" if row.inside else "no"
        out[name] = (f"{fmt(band[0])}–{fmt(band[1])}", inside)
    return out


@reads_document("comparison")
def comparison_report(run: Any, sim: Any, base: Path | None = None) -> Report:
    """Measured and predicted side by side: one table, the same axes."""
    run = json_document(run)  # a typed result or its JSON (a file read back)
    sim = json_document(sim)  # a typed result or its JSON (a file read back)
    measured, predicted = bench_report(run, base), simulation_report(sim)
    m_rows, p_rows = summary_rows(run["summary"]), dict(summary_rows(sim["summary"]))
    bands = _row_bands(sim["summary"], _sim_bands(sim), run["summary"])
    table = Table("Measured and predicted (the prediction's 80% band where it has one)",
                  ("metric", "measured", "predicted", "predicted 80% band", "measured in band"),
                  tuple((name, value, p_rows.get(name, "–"), *bands.get(name, ("–", "–"))) for name, value in m_rows))
    return Report(kind="comparison", title=f"{measured.title} against {predicted.title}",
                  headline=f"{measured.headline}. {predicted.headline}.",
                  tables=(table, *measured.tables[1:2], *predicted.tables[1:]),
                  facts=tuple([(f"measured: {k}", v) for k, v in measured.facts]
                              + [(f"predicted: {k}", v) for k, v in predicted.facts]),
                  curve=measured.curve + predicted.curve, curve_axis=measured.curve_axis,
                  slo_s={**predicted.slo_s, **measured.slo_s}, latencies=measured.latencies + predicted.latencies)


def _slice_rows(by: Mapping[str, Any], slice_name: str) -> list[tuple[str, ...]]:
    return [(slice_name, str(k), _num(v.get("rows"), ",d"), _num(100 * v.get("median_ape", 0)),
             _num(100 * v.get("p90_ape", 0)), _num(100 * v.get("median_signed", 0), "+.1f"),
             _num(100 * (v.get("band_coverage") or 0), ".0f")) for k, v in by.items()]


@reads_document("validation")
def validation_report(data: Any) -> Report:
    data = json_document(data)  # a typed result or its JSON (a file read back)
    s = data["summary"]
    rows = [r for key, v in s.items() if key.startswith("by_") and isinstance(v, Mapping)
            for r in _slice_rows(v, key[3:].replace("_", " "))]
    skipped = tuple((_text(x.get("reason")), _num(x.get("rows"), ",d")) for x in s.get("skipped") or [])
    # what the rows were read with and what the comparison says of the measurements (files from before either
    # was written have neither)
    assumed_doc = s.get("assumed")
    assumed = tuple((_text(x.get("note")), _num(x.get("rows"), ",d"))
                    for x in (assumed_doc.get("notes") or [] if isinstance(assumed_doc, Mapping) else [])
                    if isinstance(x, Mapping))
    caveats = tuple((_text(x.get("note")), _num(x.get("rows"), ",d"))
                    for x in s.get("caveats") or [] if isinstance(x, Mapping))
    pct = {k: _num(100 * (s.get(k) or 0), ".1f") for k in ("coverage", "median_ape", "p90_ape", "band_coverage")}
    headline = (f"{_num(s.get('rows'), ',d')} rows, coverage {pct['coverage']} %: median error {pct['median_ape']} %, "
                f"p90 {pct['p90_ape']} %, {pct['band_coverage']} % of measurements inside their band")
    return Report(kind="validation", title="Predicted against measured", headline=headline,
                  tables=(Table("Errors by slice (%)", ("slice", "value", "rows", "median |error|", "p90 |error|",
                                                        "median signed", "inside band"), tuple(rows)),
                          *([Table("Skipped rows", ("reason", "rows"), skipped)] if skipped else []),
                          *([Table("Read with assumptions the rows do not state", ("assumption", "rows"), assumed)]
                            if assumed else []),
                          *([Table("Caveats on the measurements", ("caveat", "rows"), caveats)] if caveats else [])),
                  facts=tuple(_facts(data, ("file", "profile", "calibration", "catalog_versions"))),
                  validation=tuple(ad.validation_points(data["rows"])))
