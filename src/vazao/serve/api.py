"""The page's API: one function per library call, each taking the request's JSON body (already bounded
by the server: size, depth, finite numbers) and returning the library's typed result as JSON. Every
field is read through vazao.inputs within vazao.limits; names are looked up in the catalogs (never
opened as paths: a page asks for `llama-3.1-70b`, not `/etc/…`); no figure is computed here."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.resultfiles import json_document

# The explorer's batches besides the one asked for: a ladder the roofline draws as a line of points.
BATCH_LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


# ---- reading a body ----------------------------------------------------------------------------


def text(body: Mapping[str, Any], key: str, default: str | None = None, *, required: bool = False,
         max_len: int = limits.MAX_LABEL) -> str | None:
    """A string field: absent or "" is `default` (an error when required), at most max_len characters."""
    v = body.get(key)
    if v is None or v == "":
        if required:
            raise VazaoError(f"{key}: required")
        return default
    if not isinstance(v, str):
        raise VazaoError(f"{key} must be a string, got {type(v).__name__}")
    if len(v) > max_len:
        raise VazaoError(f"{key} is {len(v):,} characters; at most {max_len:,}")
    return v.strip()


def integer(body: Mapping[str, Any], key: str, default: int | None, *, minimum: int = 1,
            maximum: float = limits.MAX_INT) -> int | None:
    v = body.get(key)
    if v is None or v == "":
        return default
    return int(inputs.number(v, key, minimum=minimum, maximum=maximum, integer=True))


def real(body: Mapping[str, Any], key: str, default: float | None, *, minimum: float = 0.0,
         maximum: float = 1e12) -> float | None:
    v = body.get(key)
    if v is None or v == "":
        return default
    return float(inputs.number(v, key, minimum=minimum, maximum=maximum))


def flag(body: Mapping[str, Any], key: str) -> bool:
    v = body.get(key, False)
    if v in (True, False, "true", "false", "1", "0", 1, 0, "on", ""):
        return v in (True, "true", "1", 1, "on")
    raise VazaoError(f"{key} must be true or false")


def mapping(body: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    v = body.get(key)
    if v is None:
        return None
    if not isinstance(v, Mapping):
        raise VazaoError(f"{key} must be a JSON object")
    return v


# ---- the catalog -------------------------------------------------------------------------------


def catalog(_body: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the page's pickers list: models, GPUs, formats, KV dtypes, engines, API prices, workloads."""
    from vazao.catalog.formats import formats, kv_formats
    from vazao.catalog.hardware import accelerators
    from vazao.catalog.models import models
    from vazao.catalog.prices import all_prices
    from vazao.physics.profiles import engines
    from vazao.workload.load import builtin_workloads

    return {
        "models": [{"id": k, "family": m.family} for k, m in models().items()],
        "gpus": [{"id": k, "name": a.name, "vendor": a.vendor, "memory_bytes": a.memory_bytes}
                 for k, a in accelerators().items()],
        "formats": list(formats()), "kv_formats": list(kv_formats()),
        "engines": [e for e in engines() if e != "ideal"],
        "prices": [p.id for p in all_prices()],
        "workloads": builtin_workloads(),
    }


# ---- an uploaded model file --------------------------------------------------------------------


def model_from_config(body: Mapping[str, Any]) -> dict[str, Any]:
    """A config.json the page read from a dropped file: its architecture (what the explorer sends back
    with each change; the server keeps nothing)."""
    from vazao.catalog.models import from_hf_config, hf_weight_format

    config = mapping(body, "config")
    if config is None:
        raise VazaoError("config: the config.json's content, a JSON object")
    name = text(body, "name", "uploaded", max_len=limits.MAX_NAME) or "uploaded"
    arch = from_hf_config(config, name=name, origin="config.json (uploaded)")
    return {"kind": "model", "arch": _arch_json(arch), "weight_format": hf_weight_format(config),
            "weights_bytes": None, "origin": "config.json (uploaded)"}


def model_from_gguf(data: bytes, name: str | None, size: int | str | None = None) -> dict[str, Any]:
    """A GGUF file's header: the page sends the file's first bytes (never its tensors) and the file's
    size. catalog.gguf checks that the tensors it lists end inside the file, so the header is read
    from a sparse file of that size in a temporary folder (no tensor byte written, deleted at once)."""
    import tempfile
    from pathlib import Path

    from vazao.catalog.gguf import gguf_to_arch, read_gguf

    shown = (name or "uploaded.gguf")[:limits.MAX_NAME]
    total = int(inputs.number(len(data) if size is None else size, "size (of the GGUF file)", minimum=len(data),
                              maximum=limits.MAX_CHECKPOINT_BYTES, integer=True))
    with tempfile.TemporaryDirectory(prefix="vazao-serve-") as tmp:
        path = Path(tmp) / "header.gguf"
        with path.open("wb") as fh:
            fh.write(data)
            fh.truncate(total)
        try:
            info = read_gguf(path)
        except VazaoError as exc:  # its messages name the temporary file: the page knows it by its name
            raise VazaoError(str(exc).replace(str(path), shown)) from None
    arch = gguf_to_arch(info)  # named by its general.name, as make_deployment names a GGUF path
    return {"kind": "model", "arch": _arch_json(arch), "weight_format": info.weight_format,
            "weights_bytes": info.weights_bytes, "origin": "gguf (uploaded)"}


def _arch_json(arch: Any) -> dict[str, Any]:
    return json_document(dataclasses.asdict(arch))


def _uploaded(up: Mapping[str, Any]) -> tuple[Any, str | None, float | None, str]:
    """(ModelArch, its file's format, its exact weight bytes, origin) from what model_from_* returned."""
    from vazao.catalog.arch import ModelArch
    from vazao.resultfiles import from_document

    arch = mapping(up, "arch")
    if arch is None:
        raise VazaoError("model_file.arch: the architecture /api/model returned")
    try:
        model = from_document(ModelArch, arch)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise VazaoError(f"model_file.arch: {str(exc)[:200]}") from None
    fmt = text(up, "weight_format")
    exact = real(up, "weights_bytes", None, maximum=limits.MAX_CHECKPOINT_BYTES)
    origin = text(up, "origin", "catalog") or "catalog"
    return model, fmt, exact, origin


# ---- the explorer --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ExploreQuery:
    """The explorer's controls: a deployment, a batch, request lengths and an API price."""

    model: str | None
    upload: Mapping[str, Any] | None
    gpu: str
    count: int
    fmt: str | None
    kv: str | None
    engine: str | None
    tp: int | None
    pp: int
    ideal: bool
    batch: int
    input_tokens: int
    output_tokens: int
    api_price: str | None

    @classmethod
    def read(cls, body: Mapping[str, Any]) -> ExploreQuery:
        upload = mapping(body, "model_file")
        model = text(body, "model", None if upload else "llama-3.1-70b", max_len=limits.MAX_NAME)
        return cls(model=None if upload else model, upload=upload,
                   gpu=text(body, "gpu", "h100-sxm") or "h100-sxm",
                   count=integer(body, "count", 1, maximum=limits.MAX_GPUS) or 1,
                   fmt=text(body, "format"), kv=text(body, "kv"), engine=text(body, "engine"),
                   tp=integer(body, "tp", None, maximum=limits.MAX_PARALLEL),
                   pp=integer(body, "pp", 1, maximum=limits.MAX_PARALLEL) or 1,
                   ideal=flag(body, "ideal"),
                   batch=integer(body, "batch", 1, maximum=limits.MAX_SEQS) or 1,
                   input_tokens=integer(body, "input", 1024, maximum=limits.MAX_CONTEXT) or 1024,
                   output_tokens=integer(body, "output", 256, maximum=limits.MAX_CONTEXT) or 256,
                   api_price=text(body, "api_price", "gpt-5-mini"))

    def deployment(self) -> Any:
        """make_deployment on a catalog name (looked up, never opened as a path) or an uploaded
        architecture (its file's format, exact bytes and natural engine, as make_deployment gives a file)."""
        from vazao.catalog.local import resolve_accelerator
        from vazao.catalog.models import get_model
        from vazao.physics.deployment import default_engine, make_deployment

        model: Any
        fmt: str | None
        engine: str | None
        if self.upload is not None:
            model, file_fmt, exact, origin = _uploaded(self.upload)
            fmt = self.fmt or file_fmt
            engine = self.engine or default_engine(resolve_accelerator(self.gpu), origin)
            exact = exact if fmt is not None and fmt == file_fmt else None
        else:
            model, fmt, engine, exact = get_model(self.model or ""), self.fmt, self.engine, None
        return make_deployment(model, self.gpu, fmt, self.kv, count=self.count, tp=self.tp, pp=self.pp,
                               engine=engine, ideal=self.ideal, strict=False, weights_bytes_override=exact)


def explore(body: Mapping[str, Any]) -> dict[str, Any]:
    """One explorer answer: the format's verdict, what fits, the roofline, TTFT/ITL/throughput with
    their bands at the chosen batch, the crossover batch, and $/Mtok with the break-even against an API."""
    from vazao.analytic import estimate
    from vazao.report.estimate_report import estimate_report

    q = ExploreQuery.read(body)
    dep = q.deployment()
    verdict = {"format": dep.weight_format.name, "status": dep.support.status, "reason": dep.support.reason,
               "compute_dtype": dep.support.compute_dtype, "gpu": dep.accelerator.id, "engine": dep.engine.name}
    out: dict[str, Any] = {"kind": "explore", "deployment": dep.label(), **dep.to_json(), "ideal": q.ideal,
                           "batch": q.batch, "verdict": verdict}
    if dep.support.status == "unsupported":
        out["refused"] = f"{dep.weight_format.name} on {dep.accelerator.name}: {dep.support.reason}"
        return out
    batches = sorted({*BATCH_LADDER, q.batch})
    est = estimate(dep, batches, q.input_tokens, q.output_tokens)
    result = {"kind": "estimate", **dep.to_json(), "ideal": q.ideal, **json_document(est)}
    report = estimate_report(result, dep.accelerator)
    out["estimate"] = result
    out["row"] = next(r for r in result["rows"] if r["batch"] == q.batch)
    out["roofline"] = json_document([dataclasses.asdict(p) for p in report.roofline])
    out["ceilings"] = json_document(dataclasses.asdict(report.ceilings)) if report.ceilings else None
    out["memory"] = json_document([dataclasses.asdict(m) for m in report.memory])
    out["cost"] = _cost(q, dep)
    return out


def _cost(q: ExploreQuery, dep: Any) -> dict[str, Any]:
    """cost.policy.breakeven on the analytic model for this GPU type, count, format and engine (the
    self-hosted side is the library's own deployment of those: it takes no tp/pp/kv), or the error line."""
    from vazao.catalog.prices import get_price
    from vazao.cost.policy import RequestShape, SelfHostQuery, breakeven, slo_choice

    if q.api_price is None:
        return {"error": "no API price chosen"}
    try:
        table = get_price(q.api_price)
        choice = slo_choice(None)
        model: Any = dep.model if q.upload is not None else q.model
        sq = SelfHostQuery(model, dep.accelerator.id, RequestShape(q.input_tokens, q.output_tokens), None,
                           count=dep.count, fmt=dep.weight_format.name, engine=q.engine, slo=choice.slo,
                           analytic=True)
        answer = breakeven(sq, [dep.accelerator.id], table, None, None, choice, None)
    except VazaoError as exc:
        return {"error": str(exc)}
    doc = answer.to_json()
    doc["model"] = dep.model.name
    doc["slo_note"] = choice.note
    return json_document(doc)


def explore_report_html(body: Mapping[str, Any]) -> str:
    """The explorer's state as `vazao report --estimate` writes it: one self-contained HTML page."""
    from vazao.analytic import estimate
    from vazao.report.estimate_report import estimate_report
    from vazao.report.html import render_report

    q = ExploreQuery.read(body)
    dep = q.deployment()
    if dep.support.status == "unsupported":
        raise VazaoError(f"{dep.weight_format.name} on {dep.accelerator.name}: {dep.support.reason}")
    est = estimate(dep, sorted({*BATCH_LADDER, q.batch}), q.input_tokens, q.output_tokens)
    result = {"kind": "estimate", **dep.to_json(), "ideal": q.ideal, **json_document(est)}
    return render_report(estimate_report(result, dep.accelerator))


# ---- reports of finished jobs and uploaded results ------------------------------------------------


def report_view(report: Any) -> dict[str, Any]:
    """A Report as the page draws it: title, headline, tables and every chart's Vega-Lite spec."""
    from vazao.report.plots import charts_for
    from vazao.report.vega import spec

    return {"kind": report.kind, "title": report.title, "headline": report.headline,
            "tables": [{"title": t.title, "columns": list(t.columns), "rows": [list(r) for r in t.rows]}
                       for t in report.tables],
            "charts": [{"title": title, "spec": spec(chart)} for title, chart in charts_for(report)]}


def measured_document(doc: Any) -> Any:
    """A `vazao bench` result as it is; a guidellm or `vllm bench serve` result read by loadgen.foreign
    into the bench-run shape the reports take (its last run: the highest level of a sweep)."""
    from vazao.loadgen import foreign
    from vazao.resultfiles import foreign_tool, kind_of

    if kind_of(doc) == "bench run":
        return doc
    if foreign_tool(doc) is None:
        raise VazaoError(f"measured: this file is {foreign.describe(doc)}; expected {foreign.EXPECTED}")
    run = foreign.read_foreign(doc, "measured")[-1]
    return {"kind": "bench run", "run": {"model": run.tool, "url": run.label or "uploaded result",
                                         "notes": list(run.notes)},
            "summary": json_document(run.summary)}


def compare_reports(measured: Any, predicted: Any) -> Any:
    """Measured against predicted (report.reports.comparison_report), or the measured run alone."""
    from vazao.report.reports import bench_report, comparison_report
    from vazao.resultfiles import kind_of

    m = measured_document(measured)
    if predicted is None:
        return bench_report(m)
    if kind_of(predicted) != "simulation":
        raise VazaoError("predicted: expected a simulation result (the JSON `vazao simulate` writes, or this page's)")
    return comparison_report(m, predicted)


def compare(body: Mapping[str, Any], predicted: Any | None) -> dict[str, Any]:
    """The Compare view: `measured` (a bench, guidellm or vLLM result) against `predicted` (a
    simulation: uploaded, or the page's last simulation, passed in by the server)."""
    measured = body.get("measured")
    if measured is None:
        raise VazaoError("measured: a bench, guidellm or vLLM result JSON")
    given = body.get("predicted")
    return report_view(compare_reports(measured, given if given is not None else predicted))


def compare_report_html(body: Mapping[str, Any], predicted: Any | None) -> str:
    from vazao.report.html import render_report

    measured = body.get("measured")
    if measured is None:
        raise VazaoError("measured: a bench, guidellm or vLLM result JSON")
    given = body.get("predicted")
    return render_report(compare_reports(measured, given if given is not None else predicted))
