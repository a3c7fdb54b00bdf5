"""API price tables: USD per million tokens as Decimal, per provider model, with cache, batch and
long-context tiers; each table with source and as_of.

Money is Decimal from the file to the bill: the YAML reader below turns every float literal into a
Decimal built from its text, so 0.10 is exactly one tenth."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

import yaml

from vazao import inputs, limits
from vazao.catalog._load import check_label, norm
from vazao.errors import NotFoundError, VazaoError

MTOK = Decimal(1_000_000)
RATE_KEYS = ("input", "output", "cache_read", "cache_write", "reasoning")
ENTRY_KEYS = frozenset({"id", "provider", "name", "aliases", "usd_per_mtok", "batch_discount",
                        "batch_usd_per_mtok", "long_context", "context_window", "source", "as_of", "notes"})
TIER_KEYS = frozenset({"above_input_tokens", "usd_per_mtok", "batch_usd_per_mtok"})


# ---- YAML with Decimal numbers and line numbers ------------------------------------------------
class LineDict(dict):
    """A YAML mapping that remembers the line of each key (1-based) and of itself."""

    line: int = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lines: dict[Any, int] = {}

    def line_of(self, key: Any) -> int:
        return self.lines.get(key, self.line)


class _DecimalLoader(inputs.GuardedLoader):
    pass


def _mapping(loader: _DecimalLoader, node: yaml.MappingNode) -> LineDict:
    loader.flatten_mapping(node)
    out = LineDict()
    out.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise VazaoError(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = key_node.start_mark.line + 1
    return out


def _decimal(loader: _DecimalLoader, node: yaml.ScalarNode) -> Decimal:
    text = loader.construct_scalar(node).replace("_", "")
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise VazaoError(f"line {node.start_mark.line + 1}: not a finite number: {text!r}") from None
    if not value.is_finite():
        raise VazaoError(f"line {node.start_mark.line + 1}: not a finite number: {text!r}")
    return value


_DecimalLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_DecimalLoader.add_constructor("tag:yaml.org,2002:float", _decimal)


def read_yaml(text: str, where: str = "") -> Any:
    """Parse YAML with Decimal floats and LineDict mappings, bounded like every user file (nesting
    depth, alias expansion: vazao.inputs); syntax errors name the line."""
    try:
        return inputs.loads_yaml(text, where or "YAML", loader=_DecimalLoader)
    except VazaoError as exc:
        m = re.match(r"line (\d+): (.*)", str(exc))  # raised by the constructors above, without the file
        if m and where:
            raise VazaoError(f"{where}:{m.group(1)}: {m.group(2)}") from None
        raise


# ---- money ------------------------------------------------------------------------------------
_MONEY = re.compile(r"\s*\$?\s*([0-9][0-9_,]*\.?[0-9]*|\.[0-9]+)\s*(?:usd)?\s*", re.IGNORECASE)


def money(value: Any, what: str = "amount") -> Decimal:
    """A non-negative USD amount from a Decimal, an int or a string ('0.50', '$1,500', '2 USD').
    Binary floats are refused: their value is not the decimal the user wrote."""
    if isinstance(value, bool):
        raise VazaoError(f"{what}: expected a number of dollars, got {value!r}")
    if isinstance(value, Decimal):
        out = value
    elif isinstance(value, int):
        out = Decimal(value)
    elif isinstance(value, str):
        m = _MONEY.fullmatch(value)
        if not m:
            raise VazaoError(f"{what}: cannot read dollars from {value!r}")
        out = Decimal(m.group(1).replace(",", "").replace("_", ""))
    elif isinstance(value, float):
        raise VazaoError(f"{what}: money must be given as a decimal string or Decimal, not a float")
    else:
        raise VazaoError(f"{what}: expected a number of dollars, got {value!r}")
    if not out.is_finite() or out < 0:
        raise VazaoError(f"{what}: must be a non-negative amount, got {value!r}")
    return out


def usd_str(amount: Decimal) -> str:
    """Exact decimal text without exponent: Decimal('1.5E+3') -> '1500', Decimal('0.15160') -> '0.1516'."""
    if amount == 0:
        return "0"
    text = format(amount.normalize(), "f")
    return text


def share_str(fraction: Decimal) -> str:
    """A ratio (not money) to six decimals."""
    return usd_str(fraction.quantize(Decimal("0.000001")))


# ---- types ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rates:
    """USD per million tokens for one tier and one endpoint (standard or batch)."""

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Mapping[str, Decimal] = field(default_factory=lambda: MappingProxyType({}))
    reasoning: Decimal | None = None  # None: billed as output

    @property
    def reasoning_rate(self) -> Decimal:
        return self.output if self.reasoning is None else self.reasoning

    @property
    def cache_ttls(self) -> tuple[str, ...]:
        return tuple(self.cache_write)

    def write_rate(self, ttl: str | None) -> Decimal:
        """The cache-write price for a TTL ('default' or None: the first one listed); a provider
        that caches automatically (no write price) charges writes as input."""
        if not self.cache_write:
            return self.input
        if ttl in (None, "default"):
            return next(iter(self.cache_write.values()))
        if ttl not in self.cache_write:
            raise VazaoError(f"no cache-write price for TTL {ttl!r}; this table has: {', '.join(self.cache_write)}")
        return self.cache_write[ttl]

    def scaled(self, factor: Decimal) -> Rates:
        return Rates(
            input=self.input * factor,
            output=self.output * factor,
            cache_read=None if self.cache_read is None else self.cache_read * factor,
            cache_write=MappingProxyType({k: v * factor for k, v in self.cache_write.items()}),
            reasoning=None if self.reasoning is None else self.reasoning * factor,
        )

    def to_json(self) -> dict:
        return {
            "input": usd_str(self.input),
            "output": usd_str(self.output),
            "cache_read": None if self.cache_read is None else usd_str(self.cache_read),
            "cache_write": {k: usd_str(v) for k, v in self.cache_write.items()},
            "reasoning": usd_str(self.reasoning_rate),
        }


@dataclass(frozen=True)
class Tier:
    """Rates that apply to a whole request whose prompt exceeds `above_input_tokens` (0: base tier)."""

    above_input_tokens: int
    rates: Rates
    batch: Rates | None


@dataclass(frozen=True)
class PriceTable:
    id: str
    provider: str
    name: str
    tiers: tuple[Tier, ...]  # ascending; tiers[0] is the base (above 0)
    source: str
    as_of: str
    context_window: int | None = None
    aliases: tuple[str, ...] = ()
    notes: str = ""

    @property
    def base(self) -> Rates:
        return self.tiers[0].rates

    @property
    def has_batch(self) -> bool:
        return self.tiers[0].batch is not None

    @property
    def batch_discount(self) -> Decimal | None:
        """Fraction off the input price on the batch endpoint (None: no batch endpoint)."""
        b = self.tiers[0].batch
        if b is None or self.base.input == 0:
            return None
        return 1 - b.input / self.base.input

    def tier_for(self, prompt_tokens: int) -> Tier:
        """The tier a request falls in: the highest whose threshold its prompt exceeds."""
        chosen = self.tiers[0]
        for t in self.tiers[1:]:
            if prompt_tokens > t.above_input_tokens:
                chosen = t
        return chosen

    def rates_for(self, prompt_tokens: int, batch: bool = False) -> Rates:
        tier = self.tier_for(prompt_tokens)
        if not batch:
            return tier.rates
        if tier.batch is None:
            raise VazaoError(f"{self.id} has no batch price")
        return tier.batch

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "provider": self.provider,
            "name": self.name,
            "usd_per_mtok": self.base.to_json(),
            "batch_usd_per_mtok": self.tiers[0].batch.to_json() if self.has_batch else None,
            "batch_discount": None if self.batch_discount is None else usd_str(self.batch_discount),
            "long_context": [
                {"above_input_tokens": t.above_input_tokens, "usd_per_mtok": t.rates.to_json(),
                 "batch_usd_per_mtok": t.batch.to_json() if t.batch else None}
                for t in self.tiers[1:]
            ],
            "context_window": self.context_window,
            "aliases": list(self.aliases),
            "source": self.source,
            "as_of": self.as_of,
        }


# ---- parsing ----------------------------------------------------------------------------------
def _where(d: Any, key: Any, origin: str) -> str:
    line = d.line_of(key) if isinstance(d, LineDict) else 0
    return f"{origin}:{line}" if line else origin


def known_entry(raw: Any, keys: frozenset, origin: str, noun: str, named: str, list_known: bool = False) -> dict:
    """One entry of a data file: a mapping of known fields only. `noun` names an entry in the "must be a
    mapping" refusal, `named` (with {id} for the entry's id) in the unknown-field one, which lists the
    known fields when `list_known`."""
    if not isinstance(raw, dict):
        raise VazaoError(f"{origin}: each {noun} must be a mapping")
    unknown = set(raw) - keys
    if unknown:
        key = sorted(unknown, key=str)[0]
        known = f" (known: {', '.join(sorted(keys))})" if list_known else ""
        raise VazaoError(f"{_where(raw, key, origin)}: unknown field {key!r} in "
                         f"{named.format(id=repr(raw.get('id', '?')))}{known}")
    return raw


def _rate(value: Any, what: str) -> Decimal:
    if isinstance(value, float):  # only when a caller passes plain-YAML data
        if not math.isfinite(value):
            raise VazaoError(f"{what}: must be a finite amount, got {value!r}")
        value = Decimal(repr(value))
    rate = money(value, what)
    if rate > limits.MAX_USD_PER_MTOK:
        raise VazaoError(f"{what}: ${usd_str(rate)[:30]} per million tokens is past any price (at most "
                         f"${limits.MAX_USD_PER_MTOK:,})")
    return rate


def _rates(raw: Any, what: str, origin: str) -> Rates:
    if not isinstance(raw, dict):
        raise VazaoError(f"{origin}: {what} must be a mapping of {', '.join(RATE_KEYS)}")
    unknown = set(raw) - set(RATE_KEYS)
    if unknown:
        key = sorted(unknown, key=str)[0]
        raise VazaoError(f"{_where(raw, key, origin)}: {what}: unknown field {key!r} "
                         f"(known: {', '.join(RATE_KEYS)})")
    for need in ("input", "output"):
        if need not in raw:
            raise VazaoError(f"{_where(raw, None, origin)}: {what}: missing {need!r}")
    cw = raw.get("cache_write") or {}
    if not isinstance(cw, dict):
        raise VazaoError(f"{_where(raw, 'cache_write', origin)}: {what}.cache_write must map a TTL "
                         "to a price, e.g. {{5m: 2.50, 1h: 4}}")
    return Rates(
        input=_rate(raw["input"], f"{what}.input"),
        output=_rate(raw["output"], f"{what}.output"),
        cache_read=None if raw.get("cache_read") is None else _rate(raw["cache_read"], f"{what}.cache_read"),
        cache_write=MappingProxyType({str(k): _rate(v, f"{what}.cache_write.{k}") for k, v in cw.items()}),
        reasoning=None if raw.get("reasoning") is None else _rate(raw["reasoning"], f"{what}.reasoning"),
    )


def parse_table(raw: Any, origin: str = "prices.yaml") -> PriceTable:
    """One entry of a prices file (already parsed YAML) to a PriceTable; unknown fields refused."""
    known_entry(raw, ENTRY_KEYS, origin, "price entry", "price entry {id}")
    for need in ("id", "provider", "usd_per_mtok", "source", "as_of"):
        if raw.get(need) in (None, ""):
            raise VazaoError(f"{_where(raw, None, origin)}: price entry {raw.get('id', '?')!r} lacks {need!r}")
    pid = str(raw["id"])
    base = _rates(raw["usd_per_mtok"], f"{pid}.usd_per_mtok", origin)
    discount = None
    if raw.get("batch_discount") is not None:
        discount = _rate(raw["batch_discount"], f"{pid}.batch_discount")
        if discount >= 1:
            raise VazaoError(f"{_where(raw, 'batch_discount', origin)}: batch_discount is a fraction off "
                             f"(0.5 = half price), got {discount}")

    def batch_of(entry: Any, rates: Rates, what: str) -> Rates | None:
        if entry.get("batch_usd_per_mtok") is not None:
            return _rates(entry["batch_usd_per_mtok"], f"{what}.batch_usd_per_mtok", origin)
        return None if discount is None else rates.scaled(1 - discount)

    tiers = [Tier(0, base, batch_of(raw, base, pid))]
    if not isinstance(raw.get("long_context") or [], list):
        raise VazaoError(f"{_where(raw, 'long_context', origin)}: long_context must be a list of tiers in {pid}")
    for t in raw.get("long_context") or ():
        if not isinstance(t, dict):
            raise VazaoError(f"{_where(raw, 'long_context', origin)}: long_context entries must be mappings")
        bad = set(t) - TIER_KEYS
        if bad:
            key = sorted(bad, key=str)[0]
            raise VazaoError(f"{_where(t, key, origin)}: unknown field {key!r} in a long_context tier of {pid}")
        above = t.get("above_input_tokens")
        if isinstance(above, bool) or not isinstance(above, int) or not 0 < above <= limits.MAX_TOKENS:
            raise VazaoError(f"{_where(t, 'above_input_tokens', origin)}: above_input_tokens must be a "
                             f"positive integer in {pid}")
        rates = _rates(t.get("usd_per_mtok"), f"{pid}.long_context.usd_per_mtok", origin)
        tiers.append(Tier(above, rates, batch_of(t, rates, f"{pid}.long_context")))
    tiers[1:] = sorted(tiers[1:], key=lambda x: x.above_input_tokens)
    cw = raw.get("context_window")
    if cw is not None:
        cw = int(inputs.number(cw, f"{_where(raw, 'context_window', origin)}: context_window of {pid}",
                               minimum=1, maximum=limits.MAX_TOKENS, integer=True))
    aliases = raw.get("aliases") or []
    if not isinstance(aliases, list) or not all(isinstance(a, (str, int, Decimal)) for a in aliases):
        raise VazaoError(f"{_where(raw, 'aliases', origin)}: aliases of {pid} must be a list of names")
    return PriceTable(
        id=pid,
        provider=str(raw["provider"]),
        name=str(raw.get("name") or pid),
        tiers=tuple(tiers),
        source=str(raw["source"]),
        as_of=str(raw["as_of"]),
        context_window=cw,
        aliases=tuple(str(a) for a in aliases),
        notes=str(raw.get("notes") or ""),
    )


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_HasId)


def entries_by_id(text: str, origin: str, key: str, most: int, parse: Callable[[Any, str], T], noun: str,
                  only_key: bool = False) -> dict[str, T]:
    """A data file whose top level is one list `key:` of entries with an `id`: each entry parsed by
    `parse`, at most `most` of them, ids unique (a repeated one named with its line). `only_key`:
    the file holds that list and nothing else."""
    data = read_yaml(text, origin)
    if not isinstance(data, dict) or not isinstance(data.get(key), list) or (only_key and set(data) != {key}):
        raise VazaoError(f"{origin}: expected a top-level '{key}:' list")
    if len(data[key]) > most:
        raise VazaoError(f"{origin}: {len(data[key]):,} {noun} entries; at most {most:,}")
    out: dict[str, T] = {}
    for entry in data[key]:
        item = parse(entry, origin)
        ident = item.id
        if ident in out:
            raise VazaoError(f"{_where(entry, 'id', origin)}: duplicate {noun} id {ident!r}")
        out[ident] = item
    return out


def parse_prices(text: str, origin: str) -> dict[str, PriceTable]:
    return entries_by_id(text, origin, "prices", limits.MAX_PRICES, parse_table, "price")


@cache
def price_tables() -> Mapping[str, PriceTable]:
    """The built-in catalog (catalog/data/prices.yaml)."""
    text = resources.files("vazao.catalog").joinpath("data", "prices.yaml").read_text(encoding="utf-8")
    return MappingProxyType(parse_prices(text, "prices.yaml"))


def load_prices(path: str | Path) -> dict[str, PriceTable]:
    """A user's prices file in the catalog format (e.g. written by `vazao prices import`)."""
    p = Path(path).expanduser()
    text = inputs.read_text(inputs.input_stream(p, "prices file"), "prices file")
    return parse_prices(text, f"prices file {inputs._show(p)}")


def _compact(label: str) -> str:
    return re.sub(r"[^a-z0-9]", "", label.lower())


def _labels(t: PriceTable) -> tuple[str, ...]:
    return (t.id, *t.aliases, f"{t.provider}/{t.id}")


def get_price(name: str, extra: Mapping[str, PriceTable] | None = None) -> PriceTable:
    """Resolve an id or alias ('sonnet-5.5', 'claude-sonnet-5-5', 'Claude Sonnet 5.5'); tables in
    `extra` (a user's file) take precedence over the catalog."""
    pools = [extra or {}, price_tables()]
    key = norm(check_label("price", name))
    for pool in pools:
        for t in pool.values():
            if key in {norm(label) for label in (*_labels(t), t.name)}:
                return t
    compact = _compact(name)
    for pool in pools:
        for t in pool.values():
            if compact in {_compact(label) for label in (*_labels(t), t.name)}:
                return t
    candidates = [label for pool in pools for t in pool.values() for label in (t.id, *t.aliases)]
    raise NotFoundError("price", name, candidates)


def all_prices(extra: Mapping[str, PriceTable] | None = None) -> list[PriceTable]:
    merged = dict(price_tables())
    merged.update(extra or {})
    return sorted(merged.values(), key=lambda t: (t.provider, t.base.input, t.id))


# ---- price history (catalog/data/price_history.yaml) -------------------------------------------
HISTORY_API_KEYS = frozenset({"model", "provider", "family", "as_of", "usd_per_mtok", "source", "notes"})
HISTORY_GPU_KEYS = frozenset({"gpu", "provider", "as_of", "usd_per_gpu_hour", "offer", "source", "notes"})
HISTORY_RATE_KEYS = ("input", "output", "cache_read", "cache_write_5m")
_AS_OF = re.compile(r"\d{4}-\d{2}(-\d{2})?")


@dataclass(frozen=True)
class ApiPricePoint:
    """One model's list price at one date: USD per million tokens, with where it came from."""

    model: str
    provider: str
    family: str
    as_of: str  # YYYY-MM or YYYY-MM-DD: when the price took effect or was read
    input: Decimal
    output: Decimal
    cache_read: Decimal | None
    cache_write_5m: Decimal | None
    source: str


@dataclass(frozen=True)
class GpuPricePoint:
    """One provider's rental price of one accelerator at one date: USD per GPU-hour."""

    gpu: str  # the accelerator catalog id
    provider: str
    as_of: str
    usd_per_gpu_hour: Decimal
    offer: str  # on-demand | marketplace | …
    source: str


@dataclass(frozen=True)
class PriceHistory:
    api: tuple[ApiPricePoint, ...]  # by as_of, then model
    gpu: tuple[GpuPricePoint, ...]

    def family(self, name: str) -> tuple[ApiPricePoint, ...]:
        return tuple(p for p in self.api if p.family == name)


def _history_row(raw: Any, keys: frozenset, need: tuple[str, ...], origin: str) -> dict:
    known_entry(raw, keys, origin, "price history row", "a price history row", list_known=True)
    for k in need:
        if raw.get(k) in (None, ""):
            raise VazaoError(f"{_where(raw, None, origin)}: price history row lacks {k!r}")
    if not _AS_OF.fullmatch(str(raw["as_of"])):
        raise VazaoError(f"{_where(raw, 'as_of', origin)}: as_of {raw['as_of']!r} is not YYYY-MM or YYYY-MM-DD")
    return raw


def parse_history(text: str, origin: str) -> PriceHistory:
    """A price history file: `api:` rows (USD per million tokens) and `gpu:` rows (USD per GPU-hour),
    every one with as_of and source; unknown fields refused."""
    data = read_yaml(text, origin)
    if not isinstance(data, dict) or set(data) - {"api", "gpu"}:
        raise VazaoError(f"{origin}: expected top-level 'api:' and 'gpu:' lists")
    api_rows, gpu_rows = data.get("api") or [], data.get("gpu") or []
    if not isinstance(api_rows, list) or not isinstance(gpu_rows, list):
        raise VazaoError(f"{origin}: 'api' and 'gpu' must be lists")
    if len(api_rows) + len(gpu_rows) > limits.MAX_PRICES:
        raise VazaoError(f"{origin}: more than {limits.MAX_PRICES:,} price history rows")
    api = []
    for raw in api_rows:
        row = _history_row(raw, HISTORY_API_KEYS, ("model", "provider", "as_of", "usd_per_mtok", "source"), origin)
        rates = row["usd_per_mtok"]
        what = f"{row['model']} ({row['as_of']})"
        if not isinstance(rates, dict) or set(rates) - set(HISTORY_RATE_KEYS) or not {"input", "output"} <= set(rates):
            raise VazaoError(f"{_where(row, 'usd_per_mtok', origin)}: usd_per_mtok of {what} takes input, output "
                             f"and optionally cache_read, cache_write_5m")
        opt = {k: None if rates.get(k) is None else _rate(rates[k], f"{what}.{k}")
               for k in ("cache_read", "cache_write_5m")}
        api.append(ApiPricePoint(str(row["model"]), str(row["provider"]), str(row.get("family") or row["model"]),
                                 str(row["as_of"]), _rate(rates["input"], f"{what}.input"),
                                 _rate(rates["output"], f"{what}.output"), opt["cache_read"], opt["cache_write_5m"],
                                 str(row["source"])))
    gpu = []
    for raw in gpu_rows:
        row = _history_row(raw, HISTORY_GPU_KEYS, ("gpu", "provider", "as_of", "usd_per_gpu_hour", "source"), origin)
        rate = money(row["usd_per_gpu_hour"], f"{row['gpu']} ({row['as_of']}).usd_per_gpu_hour")
        if rate <= 0 or rate > limits.MAX_USD_PER_HOUR:
            raise VazaoError(f"{_where(row, 'usd_per_gpu_hour', origin)}: usd_per_gpu_hour must be in "
                             f"(0, {limits.MAX_USD_PER_HOUR:,}]")
        gpu.append(GpuPricePoint(str(row["gpu"]), str(row["provider"]), str(row["as_of"]), rate,
                                 str(row.get("offer") or "on-demand"), str(row["source"])))
    return PriceHistory(tuple(sorted(api, key=lambda p: (p.as_of, p.model))),
                        tuple(sorted(gpu, key=lambda p: (p.as_of, p.gpu))))


@cache
def price_history() -> PriceHistory:
    """The built-in price history (catalog/data/price_history.yaml)."""
    text = resources.files("vazao.catalog").joinpath("data", "price_history.yaml").read_text(encoding="utf-8")
    return parse_history(text, "price_history.yaml")
