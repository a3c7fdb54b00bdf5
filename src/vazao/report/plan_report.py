"""The plan's report: the ranked candidates, the Pareto front over cost and the binding latency,
the cost against traffic with the API's break-even, what was pruned and why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vazao.report import adapters as ad
from vazao.report.model import ParetoPoint, Report, Table
from vazao.report.reports import _ms, _num, _text

_KEY = ("model", "format", "kv_format", "gpu", "count", "replicas", "tp", "pp", "engine", "max_batch")
COLUMNS = ("#", "model", "format", "KV", "GPUs", "replicas × tp × pp", "engine", "max batch", "$/Mtok",
           "$/month", "TTFT p95 (ms)", "TPOT p95 (ms)", "meets SLO", "binding")


def _key(c: Mapping[str, Any]) -> tuple:
    return tuple(c.get(k) for k in _KEY)


def _label(c: Mapping[str, Any]) -> str:
    return (f"{c.get('model')} {c.get('format')} on {c.get('count')}× {c.get('gpu')} "
            f"({c.get('replicas')}×tp{c.get('tp')}×pp{c.get('pp')}, {c.get('engine')})")


def _binding_latency(c: Mapping[str, Any]) -> float | None:
    checks = {ch.get("key"): ch for ch in c.get("checks") or []}
    check = checks.get(c.get("binding")) or next(iter(checks.values()), None)
    if check and isinstance(check.get("value_s"), (int, float)):
        return float(check["value_s"])
    return (c.get("summary") or {}).get("tpot_s", {}).get("p95")


def pareto_points(data: Mapping[str, Any]) -> list[ParetoPoint]:
    front = {_key(c) for c in data.get("pareto") or []}
    out = []
    for rank, c in enumerate(data.get("candidates") or [], start=1):
        lat, usd = _binding_latency(c), c.get("usd_per_mtok")
        if isinstance(lat, (int, float)) and isinstance(usd, (int, float)) and lat > 0 and usd > 0:
            out.append(ParetoPoint(_label(c), float(usd), float(lat), bool(c.get("meets_slo")), _key(c) in front, rank))
    return out


def _row(rank: int, c: Mapping[str, Any]) -> tuple[str, ...]:
    s = c.get("summary") or {}
    meets = "marginal" if c.get("marginal") else ("yes" if c.get("meets_slo") else "no")
    if not c.get("checks"):
        meets = "not simulated"
    return (str(rank), _text(c.get("model")), _text(c.get("format")), _text(c.get("kv_format")),
            f"{c.get('count')}× {c.get('gpu')}", f"{c.get('replicas')} × {c.get('tp')} × {c.get('pp')}",
            _text(c.get("engine")), _text(c.get("max_batch")), _num(c.get("usd_per_mtok"), ",.4f"),
            _num(c.get("usd_per_month"), ",.0f"), _ms((s.get("ttft_s") or {}).get("p95")),
            _ms((s.get("tpot_s") or {}).get("p95")), meets, _text(c.get("binding")))


def plan_cost(data: Mapping[str, Any]):
    """The winner's $/Mtok from the break-even up to the planned traffic, against the API's."""
    api = data.get("against_api") or {}
    cands = data.get("candidates") or []
    win = data.get("winner")
    traffic = ((data.get("inputs") or {}).get("traffic") or {}).get("rate_per_s")
    lengths = data.get("lengths") or {}
    if not (api and isinstance(win, int) and 0 <= win < len(cands) and traffic and lengths):
        return [], None
    c = cands[win]
    tokens = float(lengths["prompt_mean"]) + float(lengths["output_mean"])
    be = api.get("breakeven_requests_per_s")
    lo = min(float(traffic), float(be or traffic)) / 10
    points = ad.cost_curve(float(c["usd_per_hour"]), tokens, None, float(api["api_usd_per_request"]),
                           f"self-hosted: {_label(c)}", f"API: {api.get('price_id')}", (lo, float(traffic)))
    return points, be


def plan_report(data: Mapping[str, Any]) -> Report:
    cands = data.get("candidates") or []
    win = data.get("winner")
    headline = f"No deployment meets the SLO; binding: {_text(data.get('binding_constraint'))}"
    if isinstance(win, int) and 0 <= win < len(cands):
        c = cands[win]
        headline = (f"Cheapest meeting the SLO: {_label(c)}, {_num(c.get('usd_per_mtok'), ',.4f')} $/Mtok, "
                    f"{_num(c.get('usd_per_month'), ',.0f')} $/month; binding: {_text(data.get('binding_constraint'))}")
    pruned = (data.get("pruned") or {}).get("by_reason") or {}
    cost, be = plan_cost(data)
    inputs = data.get("inputs") or {}
    facts = ([(f"input: {k}", _text(v)) for k, v in inputs.items() if v not in (None, "", [], {})]
             + [(f"catalog: {k}", _text(v)) for k, v in (data.get("catalog_versions") or {}).items()]
             + [("backend", _text(data.get("backend"))), ("against API", _text(data.get("against_api")))])
    tables = [Table("Candidates, best first", COLUMNS, tuple(_row(i, c) for i, c in enumerate(cands, start=1))),
              Table("Pruned before simulation", ("reason", "deployments"),
                    tuple((str(k), _text(v)) for k, v in pruned.items()))]
    if data.get("closest_miss"):
        tables.append(Table("Closest miss", ("field", "value"),
                            tuple((str(k), _text(v)) for k, v in dict(data["closest_miss"]).items()
                                  if k not in ("summary", "command"))))
    return Report(kind="plan", title="Plan: the cheapest deployment meeting the SLO", headline=headline,
                  tables=tuple(tables), facts=tuple(facts), pareto=tuple(pareto_points(data)),
                  cost=tuple(cost), breakeven_per_s=be, slo_s=ad.slo_seconds(data))
