"""Convert litellm's price JSON (`model_prices_and_context_window_backup.json`, shipped inside the
litellm package) to vazao's prices.yaml format. The file is read as data: litellm is never imported.

litellm gives USD per token as JSON floats; each is turned into a Decimal from its shortest decimal
text (1.25e-06 → 0.00000125) and scaled to USD per million tokens, so no binary rounding survives."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml

from vazao import inputs
from vazao.catalog.prices import parse_table
from vazao.errors import VazaoError

LITELLM_FILE = "model_prices_and_context_window_backup.json"
TEXT_MODES = frozenset({"chat", "completion", "responses"})
_ABOVE = re.compile(r"^input_cost_per_token_above_(\d+)k_tokens$")


def litellm_path() -> Path:
    """Where an installed litellm keeps its price JSON (found without importing the package)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise VazaoError(f"litellm is not installed here; pass the path to its {LITELLM_FILE}")
    path = Path(next(iter(spec.submodule_search_locations))) / LITELLM_FILE
    if not path.is_file():
        raise VazaoError(f"no {LITELLM_FILE} in the installed litellm ({path.parent}); pass its path")
    return path


def _whole(v: Any) -> int | None:
    """A tier's lower bound: a non-negative whole number of tokens (litellm writes 0, 200000.0)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or v != int(v):
        return None
    return int(v)


def _per_mtok(v: Any) -> Decimal | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    d = Decimal(repr(v)) * 1_000_000
    return d.normalize() if d != d.to_integral_value() else d.to_integral_value()


def _rates(e: Mapping, suffix: str, anthropic: bool, fallback_output: Decimal | None = None) -> dict | None:
    """The rates block for one tier/endpoint: suffix '' (base), '_above_200k_tokens', '_batches', …;
    a tier that re-prices only input keeps `fallback_output`."""
    inp = _per_mtok(e.get(f"input_cost_per_token{suffix}"))
    out = _per_mtok(e.get(f"output_cost_per_token{suffix}"))
    if out is None:
        out = fallback_output
    if inp is None or out is None:
        return None
    r: dict[str, Any] = {"input": inp, "output": out}
    read = _per_mtok(e.get(f"cache_read_input_token_cost{suffix}"))
    if read is not None:
        r["cache_read"] = read
    writes = {}
    w = _per_mtok(e.get(f"cache_creation_input_token_cost{suffix}"))
    if w:  # 0 means the provider charges no write premium: writes are billed as input
        writes["5m" if anthropic else "default"] = w
    for ttl in ("1hr", "12hr"):
        w = _per_mtok(e.get(f"cache_creation_input_token_cost_above_{ttl}{suffix}"))
        if w:
            writes[ttl.removesuffix("r")] = w
    if writes:
        r["cache_write"] = writes
    reasoning = _per_mtok(e.get(f"output_cost_per_reasoning_token{suffix}"))
    if reasoning is not None and reasoning != out:
        r["reasoning"] = reasoning
    return r


def convert_entry(key: str, e: Mapping, as_of: str) -> dict | None:
    """One litellm entry → one prices.yaml entry (None: not a priced text model)."""
    if not isinstance(e, Mapping) or key == "sample_spec":
        return None
    if e.get("mode") is not None and e.get("mode") not in TEXT_MODES:
        return None
    provider = str(e.get("litellm_provider") or "unknown")
    anthropic = provider == "anthropic"
    tiered = [t for t in (e.get("tiered_pricing") if isinstance(e.get("tiered_pricing"), list) else ())
              if isinstance(t, Mapping) and isinstance(t.get("range"), list) and t["range"]
              and _whole(t["range"][0]) is not None]
    base = _rates(e, "", anthropic)
    for t in tiered:  # a tiered table's first range is the base price
        if _whole(t["range"][0]) == 0:
            base = _rates(t, "", anthropic) or base
    if base is None:
        return None
    entry: dict[str, Any] = {"id": key, "provider": provider, "name": key, "usd_per_mtok": base}
    batch = _rates(e, "_batches", anthropic)
    if batch is not None:
        entry["batch_usd_per_mtok"] = batch
    tiers = []
    for k in e:
        m = _ABOVE.match(k)
        if not m:
            continue
        n = int(m.group(1))
        suffix = f"_above_{n}k_tokens"
        rates = _rates(e, suffix, anthropic, base["output"])
        if rates is None:
            continue
        tier: dict[str, Any] = {"above_input_tokens": n * 1000, "usd_per_mtok": rates}
        tb = _rates(e, suffix + "_batches", anthropic, batch["output"] if batch else None)
        if tb is not None:
            tier["batch_usd_per_mtok"] = tb
        tiers.append(tier)
    for t in tiered:
        lo = _whole(t["range"][0])
        rates = _rates(t, "", anthropic, base["output"])
        if lo > 0 and rates is not None:
            tiers.append({"above_input_tokens": lo, "usd_per_mtok": rates})
    if tiers:
        entry["long_context"] = sorted(tiers, key=lambda t: t["above_input_tokens"])
    if isinstance(e.get("max_input_tokens"), int):
        entry["context_window"] = e["max_input_tokens"]
    src = e.get("source")
    entry["source"] = f"{src} (imported from litellm {LITELLM_FILE})" if src else f"litellm {LITELLM_FILE}"
    entry["as_of"] = as_of
    return entry


def convert(data: Any, as_of: str, providers: Iterable[str] = ()) -> tuple[list[dict], int]:
    """Every priced text model in a litellm price JSON; returns (entries, skipped count)."""
    if not isinstance(data, Mapping):
        raise VazaoError("the litellm price file must be a JSON object keyed by model name")
    wanted = {p.lower() for p in providers}
    out, skipped = [], 0
    for key, e in data.items():
        if wanted and (not isinstance(e, Mapping) or str(e.get("litellm_provider", "")).lower() not in wanted):
            continue
        entry = convert_entry(str(key), e, as_of)
        if entry is None:
            skipped += 1
            continue
        try:
            parse_table(entry, f"litellm:{key}")  # the same validation as the catalog
        except VazaoError:
            skipped += 1
            continue
        out.append(entry)
    return out, skipped


def read_litellm(path: str | Path | None) -> tuple[Any, Path]:
    p = Path(path).expanduser() if path else litellm_path()
    return inputs.read_json(inputs.input_stream(p, "litellm price file"), "litellm price file"), p


class _Dumper(yaml.SafeDumper):
    pass


def _decimal(dumper: yaml.SafeDumper, d: Decimal) -> yaml.ScalarNode:
    if d == d.to_integral_value():
        return dumper.represent_scalar("tag:yaml.org,2002:int", str(int(d)))
    return dumper.represent_scalar("tag:yaml.org,2002:float", format(d.normalize(), "f"))


_Dumper.add_representer(Decimal, _decimal)


def dump_prices(entries: list[dict], header: str = "") -> str:
    """YAML in the prices.yaml format; Decimal rates written as plain decimal numbers."""
    body = yaml.dump({"prices": entries}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
    return (header + "\n" if header else "") + body
