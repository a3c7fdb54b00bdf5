"""The plan's report: the launch command, the ranked candidates with each latency's band, the binding
constraint, why the other models and GPUs lost, the Pareto front over cost and the binding latency,
the latency–throughput curves of the top three, the cost against traffic with the API's break-even."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vazao.report import adapters as ad
from vazao.report.model import CurvePoint, ParetoPoint, Report, Table, reads_document
from vazao.report.reports import _ms, _num, _text
from vazao.resultfiles import json_document

_KEY = ("model", "format", "kv_format", "gpu", "count", "replicas", "tp", "pp", "engine", "max_batch")
COLUMNS = ("#", "model", "format", "KV", "GPUs", "replicas × tp × pp", "engine", "max batch", "$/Mtok",
           "$/month", "TTFT (ms)", "TPOT (ms)", "meets SLO", "binding")


def _key(c: Mapping[str, Any]) -> tuple:
    return tuple(c.get(k) for k in _KEY)


def _label(c: Mapping[str, Any]) -> str:
    split = c.get("disagg")
    layout = (f"{split['prefill']}P+{split['decode']}D" if isinstance(split, Mapping) else f"{c.get('replicas')}×") \
        + f"tp{c.get('tp')}×pp{c.get('pp')}"
    return f"{c.get('model')} {c.get('format')} on {c.get('count')}× {c.get('gpu')} ({layout}, {c.get('engine')})"


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


def _banded(c: Mapping[str, Any], metric: str) -> str:
    """The candidate's first SLO term on `metric` (else its summary's p95), with its 80% band."""
    check = next((k for k in c.get("checks") or [] if str(k.get("key", "")).startswith(metric + "_")), None)
    if check is None:
        return _ms(((c.get("summary") or {}).get(f"{metric}_s") or {}).get("p95"))
    band = (c.get("bands") or {}).get(check["key"])
    text = f"{_ms(check.get('value_s'))} {check['key'].split('_', 1)[1]}"
    if band:
        text += f" ({_ms(band.get('low_s'))}–{_ms(band.get('high_s'))})"
    return text


def _status(c: Mapping[str, Any]) -> str:
    if not c.get("checks"):
        return "not simulated"
    return "marginal" if c.get("marginal") else ("yes" if c.get("meets_slo") else "no")


def _row(rank: int, c: Mapping[str, Any], throughput: bool) -> tuple[str, ...]:
    per_gpu = (_num(c.get("tokens_per_s_per_gpu"), ",.0f"), _num(c.get("tokens_per_s_per_user"), ",.1f")) \
        if throughput else ()
    return (str(rank), _text(c.get("model")), _text(c.get("format")), _text(c.get("kv_format")),
            f"{c.get('count')}× {c.get('gpu')}", f"{c.get('replicas')} × {c.get('tp')} × {c.get('pp')}",
            _text(c.get("engine")), _text(c.get("max_batch")), *per_gpu, _num(c.get("usd_per_mtok"), ",.4f"),
            _num(c.get("usd_per_month"), ",.0f"), _banded(c, "ttft"), _banded(c, "tpot"), _status(c),
            _text(c.get("binding")))


def _worst(c: Mapping[str, Any]) -> tuple[str, float] | None:
    # judged_s: what the plan held to the limit (a document from before it had one: the band's edge)
    ratios = [(str(k.get("key")), float(k.get("judged_s", k.get("pessimistic_s")) or k.get("value_s") or 0)
               / float(k["limit_s"])) for k in c.get("checks") or [] if k.get("limit_s")]
    return max(ratios, key=lambda kv: kv[1]) if ratios else None


def why_lost(data: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """Per model × GPU the winner is not on: its best deployment and why it lost (dearer by how much, or
    the SLO term it missed and by how much), then each pruning reason with one example."""
    cands = data.get("candidates") or []
    win = data.get("winner")
    winner = cands[win] if isinstance(win, int) and 0 <= win < len(cands) else None
    throughput = (data.get("inputs") or {}).get("objective") == "throughput"
    best: dict[tuple, Mapping[str, Any]] = {}
    for c in cands:  # ranked: the first of each model × GPU is its best
        best.setdefault((c.get("model"), c.get("gpu")), c)
    rows = []
    for (model, gpu), c in best.items():
        if winner is not None and (model, gpu) == (winner.get("model"), winner.get("gpu")):
            continue
        worst = _worst(c)
        if c.get("meets_slo") and winner is not None and throughput:
            why = (f"{_num(c.get('tokens_per_s_per_gpu'), ',.0f')} tok/s per GPU against the winner's "
                   f"{_num(winner.get('tokens_per_s_per_gpu'), ',.0f')}")
        elif c.get("meets_slo") and winner is not None:
            a, b = c.get("usd_per_month"), winner.get("usd_per_month")
            why = (f"meets the SLO but costs ${a:,.0f}/month, ${a - b:,.0f} more than the winner"
                   if isinstance(a, (int, float)) and isinstance(b, (int, float)) else "meets the SLO; no price")
        elif worst is not None:
            judged = ("the prediction" if any(k.get("judged_by") == "prediction" for k in c.get("checks") or [])
                      else "pessimistic edge of its band")
            why = f"misses {worst[0]} by {worst[1] - 1:.0%} ({judged})" if worst[1] > 1 else \
                "marginal: met by the prediction, not by its band's pessimistic edge"
        else:
            why = "not simulated: a higher closed-form estimate than the simulated ones"
        rows.append((f"{model} on {gpu}", _label(c), why))
    examples: dict[str, Mapping[str, Any]] = {}
    for p in (data.get("pruned") or {}).get("examples") or []:
        examples.setdefault(str(p.get("reason")), p)
    counts = (data.get("pruned") or {}).get("by_reason") or {}
    for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        ex = examples.get(reason) or {}
        rows.append((f"pruned: {reason} ({n})", _text(ex.get("deployment")), _text(ex.get("detail"))))
    return rows


def launch_rows(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The winner's launch command (--emit's, else the candidate's own engine) and each flag's reason."""
    launch = data.get("launch")
    if launch:
        return [("command", str(launch.get("shell")))] + [
            (f"{f.get('flag')} {f.get('value')}".strip(), str(f.get("why"))) for f in launch.get("flags") or []] + [
            ("note", str(n)) for n in launch.get("notes") or []]
    cands, win = data.get("candidates") or [], data.get("winner")
    if isinstance(win, int) and 0 <= win < len(cands) and cands[win].get("command"):
        return [("command", str(cands[win]["command"]))]
    return []


def curve_points(data: Mapping[str, Any]) -> list[CurvePoint]:
    """The top deployments' latency–throughput curves (plan --curves), one series each."""
    out = []
    for curve in data.get("curves") or []:
        name = f"#{curve.get('rank')} {curve.get('label')}"
        for p in curve.get("points") or []:
            if isinstance(p.get("output_tokens_per_s"), (int, float)):
                out.append(CurvePoint(float(p.get("level") or 0), float(p["output_tokens_per_s"]),
                                         p.get("ttft_p95_s"), p.get("tpot_p95_s"), "predicted", name))
    return out


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


@reads_document("plan")
def plan_report(data: Any) -> Report:
    data = json_document(data)  # a typed result or its JSON (a file read back)
    cands = data.get("candidates") or []
    win = data.get("winner")
    throughput = (data.get("inputs") or {}).get("objective") == "throughput"
    miss = data.get("closest_miss") or {}
    headline = (f"No deployment meets the SLO; binding: {_text(data.get('binding_constraint'))}"
                + (f"; closest: {_label(miss)}" if miss else ""))
    if isinstance(win, int) and 0 <= win < len(cands):
        c = cands[win]
        what = (f"Most output tok/s per GPU within the SLO: {_label(c)}, "
                f"{_num(c.get('tokens_per_s_per_gpu'), ',.0f')} tok/s/GPU at "
                f"{_num(c.get('tokens_per_s_per_user'), ',.1f')} tok/s/user, " if throughput
                else f"Cheapest meeting the SLO: {_label(c)}, ")
        headline = (f"{what}{_num(c.get('usd_per_mtok'), ',.4f')} $/Mtok, {_num(c.get('usd_per_month'), ',.0f')} "
                    f"$/month; binding: {_text(data.get('binding_constraint'))}")
    pruned = (data.get("pruned") or {}).get("by_reason") or {}
    cost, be = plan_cost(data)
    inputs = data.get("inputs") or {}
    facts = ([(f"input: {k}", _text(v)) for k, v in inputs.items() if v not in (None, "", [], {})]
             + [(f"catalog: {k}", _text(v)) for k, v in (data.get("catalog_versions") or {}).items()]
             + [("backend", _text(data.get("backend"))), ("against API", _text(data.get("against_api")))])
    columns = COLUMNS if not throughput else (*COLUMNS[:8], "tok/s per GPU", "tok/s per user", *COLUMNS[8:])
    tables = [Table("Candidates, best first (latencies in ms with their 80% band)", columns,
                    tuple(_row(i, c, throughput) for i, c in enumerate(cands, start=1)))]
    launch = launch_rows(data)
    if launch:
        tables.insert(0, Table("Launch the winner", ("flag", "why"), tuple(launch)))
    lost = why_lost(data)
    if lost:
        tables.append(Table("Why the others lost", ("model × GPU", "best deployment", "why"), tuple(lost)))
    tables.append(Table("Pruned before simulation", ("reason", "deployments"),
                        tuple((str(k), _text(v)) for k, v in pruned.items())))
    if data.get("closest_miss"):
        tables.append(Table("Closest miss", ("field", "value"),
                            tuple((str(k), _text(v)) for k, v in dict(data["closest_miss"]).items()
                                  if k not in ("summary", "command"))))
    title = ("Plan: the most tok/s per GPU within the SLO" if throughput
             else "Plan: the cheapest deployment meeting the SLO")
    curve = curve_points(data)
    axis = next((str(c.get("axis")) for c in data.get("curves") or []), "rate")
    return Report(kind="plan", title=title, headline=headline,
                  tables=tuple(tables), facts=tuple(facts), pareto=tuple(pareto_points(data)),
                  cost=tuple(cost), breakeven_per_s=be, slo_s=ad.slo_seconds(data), curve=tuple(curve),
                  curve_axis=axis)
