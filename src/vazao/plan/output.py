"""The plan as the JSON other tools rely on (issue 12's schema), and the catalog versions behind it."""

from __future__ import annotations

import hashlib
from importlib import resources

from vazao.plan.evaluate import Candidate, shape_lifecycles
from vazao.plan.search import PlanResult

CATALOGS = ("hardware.yaml", "formats.yaml", "models.yaml", "engines.yaml", "calibration.yaml", "prices.yaml",
            "generations.yaml")


def catalog_versions() -> dict:
    """vazao's version and a short content hash of each shipped catalog file."""
    from vazao import __version__

    out = {"vazao": __version__}
    data = resources.files("vazao.catalog").joinpath("data")
    for name in CATALOGS:
        f = data.joinpath(name)
        if f.is_file():
            out[name] = hashlib.sha256(f.read_bytes()).hexdigest()[:12]
    return out


def _num(x) -> float | None:
    return None if x is None else float(x)


def candidate_json(c: Candidate, command: str | None = None) -> dict:
    s = c.shape
    return {
        "model": s.model, "format": s.fmt, "kv_format": c.kv_format, "gpu": s.gpu, "count": c.count,
        "replicas": c.replicas, "tp": s.tp, "pp": s.pp, "engine": s.engine, "max_batch": c.max_batch,
        # JSON numbers (issue 12's schema); the amounts are exact Decimals inside (cost.money)
        "usd_per_hour": _num(c.usd_per_hour), "usd_per_mtok": _num(c.usd_per_mtok),
        "usd_per_month": _num(c.usd_per_month),
        "meets_slo": c.meets_slo, "marginal": c.marginal, "source": c.source,
        "summary": c.summary.to_json() if c.summary is not None else None,
        "checks": [k.to_json() for k in c.checks], "binding": c.binding,
        "bands": {k: b.to_json() for k, b in c.bands.items()},
        "quality": c.quality, "quality_source": c.quality_source or None, "detail": c.detail,
        "context_tokens": c.context or None, "capacity_req_s": c.capacity_req_s,
        "disagg": {"prefill": c.disagg[0], "decode": c.disagg[1]} if c.disagg else None,
        "tokens_per_s_per_gpu": c.tokens_per_s_per_gpu, "tokens_per_s_per_user": c.tokens_per_s_per_user,
        "power_w_per_gpu": c.power_w_per_gpu, "j_per_output_token": c.j_per_output_token,
        "electricity_usd_per_mtok": c.electricity_usd_per_mtok,
        "command": command,
    }


def plan_json(r: PlanResult, commands: dict | None = None, api: dict | None = None) -> dict:
    commands = commands or {}
    out = {
        "kind": "plan",
        "candidates": [candidate_json(c, commands.get(id(c))) for c in r.candidates],
        "pareto": [candidate_json(c, commands.get(id(c))) for c in r.pareto],
        "binding_constraint": r.binding_constraint,
        "winner": 0 if r.winner is not None else None,
        "closest_miss": candidate_json(r.closest_miss) if r.closest_miss is not None else None,
        "pruned": {"by_reason": r.pruned_by_reason(),
                   "examples": [{"deployment": p.shape.label(), "reason": p.reason, "detail": p.detail}
                                for p in r.pruned[:50]]},
        "lengths": {"prompt_mean": r.lengths.prompt_mean, "output_mean": r.lengths.output_mean,
                    "context_p99": r.lengths.context_p99, "longest": r.lengths.longest},
        "inputs": r.inputs.to_json(),
        "backend": r.backend,
        "catalog_versions": catalog_versions(),
        "lifecycle": shape_lifecycles([c.shape for c in r.candidates] + [p.shape for p in r.pruned]),
    }
    if r.curves:
        out["curves"] = [c.to_json() for c in r.curves]
    if api is not None:
        out["against_api"] = api
    return out
