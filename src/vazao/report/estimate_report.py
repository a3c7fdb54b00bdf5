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


def _banded(d: Any, key: str, band_key: str, fmt: Any) -> str:
    """A figure and its 80% band (the document's [low, high, note]) in the figure's format."""
    band = d.get(band_key)
    text = fmt(d.get(key))
    if isinstance(band, (list, tuple)) and len(band) >= 2 and all(isinstance(x, (int, float)) for x in band[:2]):
        return f"{text} ({fmt(band[0])}–{fmt(band[1])})"
    return text


@reads_document("estimate")
def estimate_report(data: Any, accelerator: Any | None = None) -> Report:
    """`accelerator` is the catalog entry of data['gpu'] (looked up when not given): the roofline's
    ceilings are its bandwidth and dense peaks."""
    data = json_document(data)  # a typed result or its JSON (a file read back)
    if accelerator is None:
        from vazao.catalog.hardware import get_accelerator

        accelerator = get_accelerator(str(data["gpu"]))
    rows = tuple((_text(r.get("batch")), _banded(r, "tokens_per_s_total", "tokens_per_s_band", _num),
                  _banded(r, "decode_step_s", "decode_step_band", _ms), _text(r.get("bound")),
                  _banded(r, "ttft_s", "ttft_band", _ms), _banded(r, "e2e_s", "e2e_band", _ms),
                  _text(r.get("prefill_bound")), "yes" if r.get("fits") else "no") for r in data.get("rows") or [])
    fit = data.get("fit")
    memory = (ad.memory_breakdown({**fit, "count": data.get("count", 1)}, str(data.get("deployment"))),) if fit else ()
    whole = lambda v: _num(v, ",.0f")  # noqa: E731
    headline = (f"Latency floor {_banded(data, 'latency_floor_s', 'latency_floor_band', _ms)} ms/token; max load "
                f"{_banded(data, 'max_load_tokens_per_s', 'max_load_band', whole)} tok/s at batch "
                f"{_text(data.get('max_batch'))}; decode turns compute-bound at batch "
                f"{_text(data.get('crossover_batch'))} (low–high: 80% bands)")
    return Report(kind="estimate", title=str(data.get("deployment", "estimate")), headline=headline,
                  tables=(Table("Per batch (low–high: the 80% band from the engine profile's calibration residuals)",
                                ("batch", "tok/s total", "decode step (ms)", "decode bound", "TTFT (ms)", "E2E (ms)",
                                 "prefill bound", "fits"), rows),),
                  facts=tuple((k, _text(data[k])) for k in _FACTS if data.get(k) not in (None, "", {})),
                  roofline=tuple(ad.roofline_points(data)), ceilings=ad.ceilings(accelerator), memory=memory)
