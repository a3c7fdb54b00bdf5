"""Reports of the one-picture commands (fit: its memory; cost breakeven: $/Mtok against traffic),
built from the JSON those commands print, as every other report is."""

from __future__ import annotations

from typing import Any

from vazao.report import adapters as ad
from vazao.report.model import Report, reads_document
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
