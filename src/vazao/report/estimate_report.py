"""The estimate's report: each batch's decode and prefill step on the GPU's roofline, and the memory
per GPU (weights, reserve, KV cache, what the engine's cap leaves)."""

from __future__ import annotations

from typing import Any

from vazao.report import adapters as ad
from vazao.report.model import Report, Table, reads_document
from vazao.report.reports import _ms, _num, _text
from vazao.resultfiles import json_document

_FACTS = ("model", "gpu", "count", "tp", "pp", "format", "kv_format", "engine", "ideal", "input_tokens",
          "output_tokens", "format_status", "profile", "catalog_versions")


@reads_document("estimate")
def estimate_report(data: Any, accelerator: Any | None = None) -> Report:
    """`accelerator` is the catalog entry of data['gpu'] (looked up when not given): the roofline's
    ceilings are its bandwidth and dense peaks."""
    data = json_document(data)  # a typed result or its JSON (a file read back)
    if accelerator is None:
        from vazao.catalog.hardware import get_accelerator

        accelerator = get_accelerator(str(data["gpu"]))
    rows = tuple((_text(r.get("batch")), _num(r.get("tokens_per_s_total")), _ms(r.get("decode_step_s")),
                  _text(r.get("bound")), _ms(r.get("ttft_s")), _text(r.get("prefill_bound")),
                  "yes" if r.get("fits") else "no") for r in data.get("rows") or [])
    fit = data.get("fit")
    memory = (ad.memory_breakdown({**fit, "count": data.get("count", 1)}, str(data.get("deployment"))),) if fit else ()
    headline = (f"Latency floor {_ms(data.get('latency_floor_s'))} ms/token; max load "
                f"{_num(data.get('max_load_tokens_per_s'), ',.0f')} tok/s at batch {_text(data.get('max_batch'))}; "
                f"decode turns compute-bound at batch {_text(data.get('crossover_batch'))}")
    return Report(kind="estimate", title=str(data.get("deployment", "estimate")), headline=headline,
                  tables=(Table("Per batch", ("batch", "tok/s total", "decode step (ms)", "decode bound",
                                              "TTFT (ms)", "prefill bound", "fits"), rows),),
                  facts=tuple((k, _text(data[k])) for k in _FACTS if data.get(k) not in (None, "", {})),
                  roofline=tuple(ad.roofline_points(data)), ceilings=ad.ceilings(accelerator), memory=memory)
