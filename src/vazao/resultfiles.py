"""What a result document is, from its shape alone: one of vazao's own results (simulate, bench, validate,
plan, estimate, fit, cost breakeven …) or another tool's benchmark (guidellm, vllm bench serve).

json_document is the one JSON form of any typed result (what --json prints, what report builders read);
from_document rebuilds a typed result from it (each result type's from_json calls it).

Here, below both loadgen and report, because both must recognise a file: bench to read runs and to name a
wrong file in its error, report to pick an adapter. Neither may import the other for it."""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, TypeVar

T = TypeVar("T")


def without_timing(doc: Any) -> Any:
    """A result document without the fields that time this machine (`wall_s`): what stays equal
    between two runs of the same command, for comparing them."""
    if isinstance(doc, Mapping):
        return {k: without_timing(v) for k, v in doc.items() if k != "wall_s"}
    if isinstance(doc, list):
        return [without_timing(v) for v in doc]
    return doc


def json_document(obj: Any) -> Any:
    """The one JSON form of a result, as files hold it and reports read it: each typed result by its
    to_json(), tuples as lists, keys as strings, inf and nan as null (JSON has neither)."""
    if isinstance(obj, float):
        return None if (math.isinf(obj) or math.isnan(obj)) else obj
    if isinstance(obj, Mapping):
        return {str(k): json_document(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_document(v) for v in obj]
    if hasattr(obj, "to_json"):
        return json_document(obj.to_json())
    return obj


def from_document(cls: type[T], data: Mapping[str, Any], /, **given: Any) -> T:
    """The frozen dataclass `cls` rebuilt from its JSON (json_document's form), field by field, by the
    field's type: nested dataclasses (their own from_json when they have one, which is how a type whose
    JSON is not its fields takes part), tuple[X, ...], list, Mapping/dict, X | None, Decimal (JSON holds
    money as text), str-Enums, NamedTuples (a JSON list) and float (null: the inf or nan json_document
    wrote as null; the field's own float default when it has one, else inf). Keys that are not fields
    (derived figures to_json adds: a total, a verdict) are ignored; a field missing from `data` takes
    its default. `given` supplies fields the JSON holds elsewhere (a parent's summary) or not at all.

    Here, with no vazao imports, so every layer's result types can use it."""
    hints = _field_types(cls)
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]  # cls is a dataclass type
        if not f.init:
            continue
        if f.name in given:
            kw[f.name] = given[f.name]
        elif f.name in data:
            kw[f.name] = _value(hints.get(f.name, Any), data[f.name], f.default)
    return cls(**kw)


def _field_types(cls: type) -> dict[str, Any]:
    """The resolved types of cls's fields. A name imported only under TYPE_CHECKING cannot be resolved:
    get_type_hints then fails for the whole class, so such a field is read as Any (its JSON as is)."""
    try:
        return typing.get_type_hints(cls)
    except NameError:
        pass
    out: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        module = vars(sys.modules.get(klass.__module__, types.ModuleType("?")))
        for name, ann in vars(klass).get("__annotations__", {}).items():
            try:
                out[name] = eval(ann, module, dict(vars(klass))) if isinstance(ann, str) else ann  # noqa: S307
            except NameError:
                out[name] = Any
    return out


def _value(tp: Any, v: Any, default: Any = dataclasses.MISSING) -> Any:
    """One JSON value as the type `tp` holds it."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if v is None and type(None) in args:
            return None
        members = [a for a in args if a is not type(None)]
        return _value(members[0], v, default) if len(members) == 1 else v
    if v is None:
        if tp is float:  # json_document writes inf and nan as null; a float field's default says which
            return default if isinstance(default, float) else math.inf
        return None
    if tp is Any or isinstance(tp, TypeVar):
        return v
    if origin is not None:
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(_value(args[0], x) for x in v)
            if args and args != ((),):
                return tuple(_value(a, x) for a, x in zip(args, v, strict=True))
            return tuple(v)
        if origin is list:
            return [_value(args[0] if args else Any, x) for x in v]
        if isinstance(origin, type) and issubclass(origin, Mapping):
            key, val = args if len(args) == 2 else (Any, Any)
            return {_value(key, k): _value(val, x) for k, x in v.items()}
        if origin is Sequence:  # a Sequence field (RequestRecord.itl_s) holds a tuple
            return tuple(_value(args[0] if args else Any, x) for x in v)
        return v
    if not isinstance(tp, type):
        return v
    if hasattr(tp, "from_json"):
        return tp.from_json(v)
    if dataclasses.is_dataclass(tp):
        return from_document(tp, v)
    if issubclass(tp, enum.Enum):
        return tp(v)
    if issubclass(tp, tuple) and hasattr(tp, "_fields"):  # a NamedTuple: JSON writes it as a list
        hints = typing.get_type_hints(tp)
        return tp(*(_value(hints.get(n, Any), x) for n, x in zip(tp._fields, v, strict=False)))
    if tp is tuple:
        return tuple(v)
    if tp is Decimal:
        return Decimal(str(v))
    if tp is float:
        return float(v)
    if tp is int and isinstance(v, str):
        return int(v)
    return v


# what vazao's own documents declare in their "kind" key (files written before it are read by shape)
KINDS = ("simulation", "bench run", "validation", "plan", "estimate", "fit", "breakeven", "breakeven trend", "selfhost",
         "comparison", "budget", "demo", "quality")


def kind_of(data: Any) -> str:
    """What a vazao result file is: the kind it declares (KINDS), else, for a file written before documents
    declared it, from its shape: simulation | bench run | validation | plan | estimate | fit | breakeven |
    comparison | error | unknown."""
    if not isinstance(data, Mapping):
        return "unknown"
    declared = data.get("kind")
    if isinstance(declared, str) and declared in KINDS:
        return declared
    if "error" in data and len(data) == 1:
        return "error"
    if "candidates" in data and "pareto" in data:
        return "plan"
    summary = data.get("summary")
    if isinstance(summary, Mapping) and "run" in data:
        return "bench run"
    if isinstance(summary, Mapping) and ("sim" in data or summary.get("source") == "simulated"):
        return "simulation"
    if "runs" in data:
        return "comparison"
    rows = data.get("rows")
    if isinstance(rows, list) and isinstance(data.get("summary"), Mapping) and "by_metric" in data["summary"]:
        return "validation"
    if isinstance(rows, list) and "latency_floor_s" in data:
        return "estimate"
    if isinstance(rows, list) and "api_price" in data:
        return "breakeven"
    if "kv_capacity_tokens" in data and "weights_bytes_per_gpu" in data:
        return "fit"
    return "unknown"


def foreign_tool(data: Any) -> str | None:
    """'guidellm' | 'vllm' from the keys each tool writes; None for anything else."""
    if not isinstance(data, Mapping):
        return None
    benchmarks = data.get("benchmarks")
    if isinstance(benchmarks, list) and benchmarks and all(
            isinstance(b, Mapping) and isinstance(b.get("metrics"), Mapping)
            and "time_to_first_token_ms" in b["metrics"] for b in benchmarks):
        return "guidellm"
    if all(k in data for k in ("completed", "duration", "request_throughput")):
        return "vllm"
    return None
