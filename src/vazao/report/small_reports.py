"""Reports of the one-picture commands (fit: its memory; cost breakeven: $/Mtok against traffic, and with
a trend the break-even over time),
built from the JSON those commands print, as every other report is."""

from __future__ import annotations

from typing import Any

from vazao.report import adapters as ad
from vazao.report.model import Report, Table, reads_document
from vazao.resultfiles import json_document


@reads_document("fit")
def fit_report(data: Any) -> Report:
    """`vazao fit --json` → the memory per GPU as a stacked bar."""
    data = json_document(data)  # a typed result or its JSON (a file read back)
    label = str(data.get("deployment", "fit"))
    return Report(kind="fit", title=label, headline="fits" if data.get("fits") else "does not fit",
                  memory=(ad.memory_breakdown(data, label),))


@reads_document("breakeven")
def breakeven_report(data: Any) -> Report:
    """`vazao cost breakeven --json` → each GPU's self-hosted $/Mtok against traffic, the API's line."""
    data = json_document(data)  # a typed result or its JSON (a file read back)
    points, at = ad.breakeven_cost(data)
    return Report(kind="breakeven", title=f"{data.get('model')} against {data.get('api_price')}",
                  cost=tuple(points), breakeven_per_s=at)


def _usd(text: Any) -> str:
    return "–" if text is None else f"${float(text):,.6g}"


def _usd_band(text: Any, band: Any) -> str:
    """An amount and its 80% band ([low, high] as text), when the document has one."""
    if text is None or not isinstance(band, (list, tuple)) or len(band) != 2 or None in band:
        return _usd(text)
    return f"{_usd(text)} ({_usd(band[0])}–{_usd(band[1])})"


@reads_document("breakeven trend")
def breakeven_trend_report(data: Any) -> Report:
    """`vazao cost breakeven --horizon … --trend … --json` → the break-even over time under the named
    scenario (its citation and caveat in the headline and facts), each deployment's table month by month,
    and the break-even against traffic of month 0."""
    data = json_document(data)  # a typed result or its JSON (a file read back)
    trend = data["trend"]
    sc = trend["scenario"]
    points, at = ad.breakeven_cost(data)
    tables = []
    for p in trend["projections"]:
        rows = tuple((str(m["month"]), _usd(m["api_usd_per_mtok"]),
                      _usd_band(m["selfhost_usd_per_mtok"], m.get("selfhost_usd_per_mtok_band")),
                      "API at any load" if m["breakeven_requests_per_day"] is None
                      else f"{float(m['breakeven_requests_per_day']):,.0f}",
                      _usd(m.get("api_usd_per_month")), _usd(m.get("selfhost_usd_per_month")),
                      _usd(m.get("cumulative_selfhost_saving_usd")), str(m.get("cheaper") or "–"))
                     for m in p["months"])
        tables.append(Table(f"{p['deployment']}, month by month: {p['summary']}",
                            ("month", "API $/Mtok", "self-host $/Mtok", "break-even req/day", "API $/month",
                             "self-host $/month", "cumulative saved self-hosting", "cheaper at the traffic"), rows))
    facts = (("scenario", f"{sc['id']}: {sc['name']} (a scenario, not a forecast)"), ("citation", str(sc["citation"])),
             ("caveat", str(sc["caveat"])), ("seed", str(sc.get("seed") or "–")),
             ("API price fall per year", str(sc["api_price_fall_per_year"])),
             ("API price fall range per year", str(sc.get("api_price_fall_range") or "–")),
             ("GPU $/h fall per year", str(sc["gpu_price_fall_per_year"])),
             ("tokens per task growth per year", str(sc["tokens_per_task_growth_per_year"])),
             ("tokens per task multiplier", str(sc["tokens_per_task_multiplier"])),
             ("monthly factors (API, GPU, tokens)", f"{sc['api_monthly_factor']}, {sc['gpu_monthly_factor']}, "
                                                    f"{sc['tokens_monthly_factor']}"),
             ("horizon", f"{trend['horizon_months']} months"), ("model", str(data.get("model"))),
             ("API price", f"{data.get('api_price')} (as of {data.get('api_price_as_of')})"),
             ("traffic", "–" if data.get("traffic_requests_per_s") is None
              else f"{data['traffic_requests_per_s']:g} requests/s"))
    return Report(kind="breakeven trend", title=f"{data.get('model')} against {data.get('api_price')} over "
                                                 f"{trend['horizon_months']} months",
                  headline=str(trend["label"]) + f". Caveat: {sc['caveat']}", tables=tuple(tables), facts=facts,
                  cost=tuple(points), breakeven_per_s=at, trend=tuple(ad.trend_points(data)),
                  trend_label=str(trend["label"]))
