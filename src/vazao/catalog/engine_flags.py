"""Each engine's server flags (catalog/data/engine_flags.yaml, read from the engine's own source) and a checker
that parses a launch command the way that engine parses it.

`check_argv` returns the problems that would stop the server: an unknown flag, a missing value, a value of the
wrong type, not among the choices or out of the engine's bounds, a switch given a value, a rule outside the
parser broken (bf16 below compute capability 8.0 on vLLM, more than LLAMA_MAX_SEQ slots on llama.cpp, …).
Each problem is one line naming the flag and the source line it was checked against.

A flag whose value is a JSON config (vLLM's --kv-transfer-config) is read as the engine reads it: a `json` rule
lists its keys and their kinds. The programs in front of the servers (SGLang's router for disaggregated
prefill/decode) are the YAML's `front_ends` (front_end_flags), checked the same way.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING

from vazao.catalog._load import load_yaml
from vazao.errors import VazaoError

if TYPE_CHECKING:
    from vazao.plan.commands import EngineCommand

KINDS = ("none", "int", "float", "str", "choice", "optional")
PARSERS = ("argparse", "click", "llama")
RULE_KINDS = ("min_cc", "max", "conflict", "json")
JSON_KINDS = ("str", "int", "float", "bool", "object", "list", "choice")


@dataclass(frozen=True)
class Flag:
    names: tuple[str, ...]
    kind: str
    source: str
    negations: tuple[str, ...] = ()  # names that turn a switch off (--no-x, --disable-x)
    choices: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()  # words accepted besides a number or a choice (-ngl all, --max-model-len auto)
    human: bool = False  # takes the engine's human-readable integers (8k)
    nargs: str = ""  # "+": one or more values
    min: float | None = None
    max: float | None = None
    gt: float | None = None  # exclusive minimum
    exclude: tuple[float, ...] = ()
    required: bool = False
    choices_source: str = ""
    bounds_source: str = ""

    @property
    def name(self) -> str:
        return self.names[0]

    @property
    def takes_value(self) -> bool:
        return self.kind != "none"


@dataclass(frozen=True)
class JsonField:
    """One key of a flag whose value is a JSON object (vLLM's --kv-transfer-config: a KVTransferConfig)."""

    name: str
    kind: str  # str | int | float | bool | object | list | choice
    source: str
    choices: tuple[str, ...] = ()
    choices_source: str = ""
    nullable: bool = False  # JSON null accepted (an Optional field)
    unless: str = ""  # a key whose presence lifts the choices (an out-of-tree module that brings its own)


@dataclass(frozen=True)
class Rule:
    """A condition outside the argument parser under which the server refuses to start (or overrides a value)."""

    id: str
    kind: str  # min_cc | max | conflict
    source: str
    effect: str = "refuses"  # refuses | overrides (the engine substitutes `to` and starts)
    flag: str | None = None
    values: tuple[str, ...] = ()  # the flag's values the rule is about (any value when empty)
    min_cc: str | None = None
    max: int | None = None
    constant: str = ""  # the engine's name for the limit
    defined: str = ""  # where that constant is defined
    with_flag: str | None = None
    with_values: tuple[str, ...] = ()
    to: str = ""
    also: str = ""
    fields: tuple[JsonField, ...] = ()  # json: the object's keys (no other key is accepted)
    requires: tuple[tuple[str, str], ...] = ()  # json: (a, b): a set (not null) needs b set
    requires_source: str = ""


@dataclass(frozen=True)
class EngineFlags:
    engine: str
    program: tuple[str, ...]
    repo: str
    path: str
    commit: str
    release: str | None
    versions: str
    as_of: str
    parser: str
    parser_source: str
    underscores: bool  # '_' in a '--' flag's name read as '-'
    flags: tuple[Flag, ...]
    rules: tuple[Rule, ...]
    positional: str | None = None  # the one positional argument (the model) where the engine takes one
    positional_required: bool = False
    positional_source: str = ""
    human_suffixes: Mapping[str, int] = field(default_factory=dict, compare=False)
    human_integer_only: tuple[str, ...] = ()
    human_source: str = ""
    by_name: Mapping[str, Flag] = field(default_factory=dict, compare=False, repr=False)  # every name, negations too

    def flag(self, name: str) -> Flag | None:
        return self.by_name.get(name)

    def rule(self, rule_id: str) -> Rule:
        for r in self.rules:
            if r.id == rule_id:
                return r
        raise VazaoError(f"{self.engine}: no rule {rule_id!r} in engine_flags.yaml")

    def min_cc(self, flag: str, value: str) -> str | None:
        """The compute capability below which `flag value` does not run as given (refused or overridden)."""
        f = self.flag(flag)
        for r in self.rules:
            if r.kind == "min_cc" and r.flag and self.flag(r.flag) is f and value in r.values:
                return r.min_cc
        return None

    @property
    def cite(self) -> str:
        rel = f" ({self.release})" if self.release and self.release != self.commit else ""
        return f"{self.repo} {self.path} @ {self.commit[:12]}{rel}"


def cc_tuple(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in str(text).split("."))
    except ValueError:
        raise VazaoError(f"compute capability {text!r}: expected MAJOR.MINOR, e.g. 8.0") from None


# ---------------------------------------------------------------------------------------------------- loading


def _strs(raw: dict, key: str) -> tuple[str, ...]:
    return tuple(str(v) for v in raw.get(key) or ())


def _flag(raw: dict) -> Flag:
    if raw["kind"] not in KINDS:
        raise VazaoError(f"engine_flags.yaml: {raw['names']}: kind must be one of {KINDS}")
    return Flag(names=tuple(raw["names"]), kind=raw["kind"], source=raw["source"], negations=_strs(raw, "negations"),
                choices=_strs(raw, "choices"), extra=_strs(raw, "extra"), human=bool(raw.get("human", False)),
                nargs=str(raw.get("nargs", "")), min=raw.get("min"), max=raw.get("max"), gt=raw.get("gt"),
                exclude=tuple(raw.get("exclude") or ()), required=bool(raw.get("required", False)),
                choices_source=raw.get("choices_source", ""), bounds_source=raw.get("bounds_source", ""))


def _json_field(rule: str, raw: dict) -> JsonField:
    if raw["kind"] not in JSON_KINDS:
        raise VazaoError(f"engine_flags.yaml: rule {rule}: field {raw['name']}: kind must be one of {JSON_KINDS}")
    return JsonField(name=str(raw["name"]), kind=raw["kind"], source=raw["source"], choices=_strs(raw, "choices"),
                     choices_source=raw.get("choices_source", ""), nullable=bool(raw.get("nullable", False)),
                     unless=raw.get("unless", ""))


def _rule(raw: dict) -> Rule:
    if raw["kind"] not in RULE_KINDS:
        raise VazaoError(f"engine_flags.yaml: rule {raw['id']}: kind must be one of {RULE_KINDS}")
    return Rule(id=raw["id"], kind=raw["kind"], source=raw["source"], effect=raw.get("effect", "refuses"),
                flag=raw.get("flag"), values=_strs(raw, "values"),
                min_cc=raw.get("min_cc"), max=raw.get("max"), constant=raw.get("constant", ""),
                defined=raw.get("defined", ""), with_flag=raw.get("with_flag"),
                with_values=_strs(raw, "with_values"), to=raw.get("to", ""),
                also=raw.get("also", ""),
                fields=tuple(_json_field(raw["id"], f) for f in raw.get("fields") or ()),
                requires=tuple((str(a), str(b)) for a, b in raw.get("requires") or ()),
                requires_source=raw.get("requires_source", ""))


@cache
def engine_flags() -> Mapping[str, EngineFlags]:
    """The engines' servers (the `engines` section)."""
    return _section("engines")


@cache
def front_end_flags() -> Mapping[str, EngineFlags]:
    """The programs in front of the servers (the `front_ends` section: SGLang's PD router), checked the same way."""
    return _section("front_ends")


def _section(name: str) -> Mapping[str, EngineFlags]:
    out = {}
    for key, e in (load_yaml("engine_flags.yaml").get(name) or {}).items():
        if e["parser"] not in PARSERS:
            raise VazaoError(f"engine_flags.yaml: {key}: parser must be one of {PARSERS}")
        pos = e.get("positional") or {}
        human = e.get("human_int") or {}
        flags = tuple(_flag(f) for f in e["flags"])
        out[key] = EngineFlags(
            engine=key, program=tuple(e["program"]), repo=e["repo"], path=e["path"], commit=str(e["commit"]),
            release=e.get("release"), versions=e.get("versions", ""), as_of=str(e["as_of"]), parser=e["parser"],
            parser_source=e.get("parser_source", ""), underscores=bool(e.get("underscores", False)),
            flags=flags, rules=tuple(_rule(r) for r in e.get("rules") or ()),
            positional=pos.get("name"), positional_required=bool(pos.get("required", False)),
            positional_source=pos.get("source", ""),
            human_suffixes=MappingProxyType(dict(human.get("suffixes") or {})),
            human_integer_only=tuple(human.get("integer_only") or ()), human_source=human.get("source", ""),
            by_name=MappingProxyType({n: f for f in flags for n in (*f.names, *f.negations)}))
    return MappingProxyType(out)


def get_engine_flags(engine: str) -> EngineFlags:
    """An engine's flag data, or a front end's (the router of a disaggregated deployment)."""
    table = {**engine_flags(), **front_end_flags()}
    if engine not in table:
        raise VazaoError(f"no flag data for engine {engine!r} (known: {', '.join(table)})")
    return table[engine]


# ---------------------------------------------------------------------------------------------------- parsing


@dataclass
class _Parsed:
    values: dict[Flag, tuple[str, ...] | None] = field(default_factory=dict)  # last given wins; None = a switch
    used: dict[Flag, str] = field(default_factory=dict)  # the name it was given under
    positionals: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    implied: dict[Flag, str] = field(default_factory=dict)  # set by the checkpoint, not the command line


# argparse treats '-5' or '-.5' as a value, not a flag, when no flag of the parser looks like a number
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _looks_like_flag(e: EngineFlags, tok: str) -> bool:
    if e.parser == "argparse":
        return tok.startswith("-") and tok != "-" and not _NEGATIVE.match(tok)
    return tok.startswith("-") and len(tok) > 1


def _split(e: EngineFlags, tok: str) -> tuple[str, str | None]:
    """A flag token as (name, value given with '=' or None), in the engine's own spelling rules."""
    name, value = tok, None
    if e.parser in ("argparse", "click") and "=" in tok:  # llama.cpp has no --flag=value
        name, value = tok.split("=", 1)
    if e.underscores and name.startswith("--"):
        name = name.replace("_", "-")
    return name, value


def _parse(e: EngineFlags, args: Sequence[str]) -> _Parsed:
    p = _Parsed()
    i, n = 0, len(args)
    while i < n:
        tok = args[i]
        i += 1
        if e.parser == "argparse" and tok == "--":  # the rest are positional
            p.positionals.extend(args[i:])
            break
        if not _looks_like_flag(e, tok):
            p.positionals.append(tok)
            continue
        name, given = _split(e, tok)
        f = e.flag(name)
        if f is None:
            hint = "; it takes no --flag=value" if e.parser == "llama" and "=" in name else ""
            p.problems.append(f"{name}: not a flag of {' '.join(e.program)}{hint} (not among the {len(e.flags)} "
                              f"recorded from {e.cite}; parser {e.parser_source})")
            continue
        p.used[f] = name
        if not f.takes_value or name in f.negations:
            if given is not None:
                p.problems.append(f"{name}={given}: {name} is a switch and takes no value ({f.source})")
            p.values[f] = None
            continue
        if given is not None:
            p.values[f] = (given,)
            continue
        # llama.cpp and click give a value flag the next element whatever it is (so a bare `-fa` followed by
        # `--port` reads '--port' as its value); argparse takes only one that does not look like a flag
        greedy = e.parser in ("llama", "click")
        if f.kind == "optional":
            take = 1 if i < n and not _looks_like_flag(e, args[i]) else 0
        elif f.nargs == "+":
            take = 0
            while i + take < n and not _looks_like_flag(e, args[i + take]):
                take += 1
        else:
            take = 1 if i < n and (greedy or not _looks_like_flag(e, args[i])) else 0
        if take == 0 and f.kind != "optional":
            p.problems.append(f"{name}: expects a value, none follows ({f.source})")
            continue
        p.values[f] = tuple(args[i:i + take])
        i += take
    return p


# ---------------------------------------------------------------------------------------------------- values


def _number(e: EngineFlags, f: Flag, text: str) -> float | None:
    """The value as the engine reads it, or None where the engine would refuse it."""
    if f.kind == "float":
        try:
            v = float(text)
        except ValueError:
            return None
        return v if math.isfinite(v) else None
    s = text.strip() if e.parser != "llama" else text
    if f.human and e.human_suffixes:
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]+)", s)
        if m and m.group(2) in e.human_suffixes:
            if "." in m.group(1) and m.group(2) in e.human_integer_only:
                return None
            return int(float(m.group(1)) * e.human_suffixes[m.group(2)])
    if e.parser == "llama":  # std::stoi; stricter here: the whole element must be the number
        return int(s) if re.fullmatch(r"[+-]?\d+", s) else None
    try:
        return int(s)  # Python's int(), as argparse's and click's int types
    except ValueError:
        return None


def _check_value(e: EngineFlags, f: Flag, name: str, text: str) -> str | None:
    if text in f.extra:
        return None
    if f.kind == "choice":
        if text in f.choices:
            return None
        src = f"{f.source}; choices {f.choices_source}" if f.choices_source else f.source
        return f"{name} {text!r}: not one of {', '.join(f.choices)} ({src})"
    if f.kind not in ("int", "float"):
        return None
    v = _number(e, f, text)
    if v is None:
        kind = "an integer" if f.kind == "int" else "a number"
        return f"{name} {text!r}: not {kind} ({f.source})"
    bsrc = f.bounds_source or f.source
    if f.min is not None and v < f.min:
        return f"{name} {text}: below the minimum {f.min:g} ({bsrc})"
    if f.gt is not None and v <= f.gt:
        return f"{name} {text}: must be above {f.gt:g} ({bsrc})"
    if f.max is not None and v > f.max:
        return f"{name} {text}: above the maximum {f.max:g} ({bsrc})"
    if v in f.exclude:
        return f"{name} {text}: {text} is refused ({bsrc})"
    return None


# ---------------------------------------------------------------------------------------------------- rules


def _given(e: EngineFlags, p: _Parsed, flag: str | None) -> tuple[Flag | None, str | None]:
    f = e.flag(flag) if flag else None
    vals = p.values.get(f) if f else None
    if not vals and f is not None and f in p.implied:  # what the checkpoint's own config sets
        return f, p.implied[f]
    return f, (vals[-1] if vals else None)


def _check_rule(e: EngineFlags, r: Rule, p: _Parsed, cc: tuple[int, ...] | None) -> str | None:
    if r.effect != "refuses":
        return None
    f, value = _given(e, p, r.flag)
    if r.flag and (value is None or (r.values and value not in r.values)):
        return None  # the flag is absent (the engine's default applies) or set to a value the rule leaves alone
    what = f"{p.used.get(f, f.name + ' (from the checkpoint)')} {value}" if f else " ".join(e.program)
    if r.kind == "min_cc":
        if cc is None or cc >= cc_tuple(r.min_cc):
            return None
        got = ".".join(map(str, cc))
        return f"{what}: needs compute capability >= {r.min_cc}, the GPU has {got} ({r.source})"
    if r.kind == "max":
        v = _number(e, f, value) if f else None
        if v is None or v <= r.max:
            return None
        limit = f"{r.constant} = {r.max}" if r.constant else str(r.max)
        defined = f", defined at {r.defined}" if r.defined else ""
        return f"{what}: above {limit}{defined} ({r.source})"
    if r.kind == "conflict":
        g, other = _given(e, p, r.with_flag)
        if other is None or other not in r.with_values:
            return None
        return f"{what} with {p.used[g]} {other}: the engine refuses the pair ({r.source})"
    if r.kind == "json" and f is not None:
        problems = _check_json(e, r, p.used.get(f, f.name), value)
        return "; ".join(problems) if problems else None
    return None


# a number with a human-readable suffix outside a JSON string (vLLM expands these before parsing the JSON)
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_JSON_HUMAN = re.compile(r"\b(\d+(?:\.\d+)?)([A-Za-z]+)\b")


def _expand_human(e: EngineFlags, text: str) -> str:
    if not e.human_suffixes:
        return text

    def number(m: re.Match) -> str:
        mult = e.human_suffixes.get(m.group(2))
        if mult is None or ("." in m.group(1) and m.group(2) in e.human_integer_only):
            return m.group(0)
        return str(int(float(m.group(1)) * mult))

    out, last = [], 0
    for s in _JSON_STRING.finditer(text):
        out.append(_JSON_HUMAN.sub(number, text[last:s.start()]))
        out.append(s.group(0))
        last = s.end()
    out.append(_JSON_HUMAN.sub(number, text[last:]))
    return "".join(out)


_BOOL_WORDS = ("true", "false", "1", "0", "yes", "no", "on", "off", "t", "f", "y", "n")  # pydantic's lax bool


def _json_value_ok(field: JsonField, v: object, obj: dict) -> bool:
    if v is None:
        return field.nullable
    if field.kind == "str":
        return isinstance(v, str)
    if field.kind == "int":  # pydantic's lax int: an integral number, or a string of digits
        if isinstance(v, float):
            return v.is_integer()
        return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, str) and v.strip().isdigit())
    if field.kind == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if field.kind == "bool":
        return isinstance(v, bool) or v in (0, 1) or (isinstance(v, str) and v.lower() in _BOOL_WORDS)
    if field.kind == "object":
        return isinstance(v, dict)
    if field.kind == "list":
        return isinstance(v, list)
    if field.kind == "choice":
        return (field.unless and obj.get(field.unless)) or (isinstance(v, str) and v in field.choices)
    return True


def _check_json(e: EngineFlags, r: Rule, name: str, text: str) -> list[str]:
    """`text` as the engine reads a JSON config: an object of the recorded keys, each of its kind."""
    try:
        obj = json.loads(_expand_human(e, text))
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        return [f"{name} {text!r}: not a JSON object ({r.source})"]
    known = {fl.name: fl for fl in r.fields}
    problems = []
    for key, v in obj.items():
        fl = known.get(key)
        if fl is None:
            also = f"; {r.also}" if r.also else ""
            problems.append(f"{name}: {key!r} is not one of its keys ({', '.join(known)}) ({r.source}{also})")
        elif not _json_value_ok(fl, v, obj):
            if fl.kind == "choice":
                src = f"{fl.source}; choices {fl.choices_source}" if fl.choices_source else fl.source
                problems.append(f"{name}: {key} {v!r} is not one of {', '.join(fl.choices)} ({src})")
            else:
                problems.append(f"{name}: {key} {v!r} is not of kind {fl.kind} ({fl.source})")
    for a, b in r.requires:
        if obj.get(a) is not None and obj.get(b) is None:
            problems.append(f"{name}: {a} needs {b} ({r.requires_source or r.source})")
    return problems


# ---------------------------------------------------------------------------------------------------- checking


def check_argv(engine: str, argv: Sequence[str], *, compute_capability: str | None = None,
               implied: Sequence[tuple[str, str]] = ()) -> list[str]:
    """The problems that stop `argv` (program included) from starting `engine`'s server; [] when none.
    `implied`: (flag, value) pairs the checkpoint sets itself (a pre-quantized checkpoint's config.json names
    its quantization method), held to the same start-up rules as if they were on the command line."""
    e = get_engine_flags(engine)
    prog = tuple(argv[:len(e.program)])
    if prog != e.program:
        return [f"{' '.join(prog) or '(empty)'}: not {' '.join(e.program)} ({e.cite})"]
    p = _parse(e, argv[len(e.program):])
    for name, value in implied:
        if e.flag(name) is not None:
            p.implied[e.flag(name)] = value
    problems = list(p.problems)
    for f, vals in p.values.items():
        for text in vals or ():
            bad = _check_value(e, f, p.used[f], text)
            if bad:
                problems.append(bad)
    allowed = 1 if e.positional else 0
    if len(p.positionals) > allowed:
        extra = p.positionals[allowed:]
        what = f"takes one positional argument, the {e.positional}" if e.positional else "takes no positional arguments"
        problems.append(f"{' '.join(extra)}: {' '.join(e.program)} {what} ({e.positional_source or e.parser_source})")
    if e.positional_required and not p.positionals:
        problems.append(f"{e.positional}: {' '.join(e.program)} needs the {e.positional} ({e.positional_source})")
    for f in e.flags:
        if f.required and f not in p.values:
            problems.append(f"{f.name}: required by {' '.join(e.program)} ({f.source})")
    cc = cc_tuple(compute_capability) if compute_capability else None
    for r in e.rules:
        bad = _check_rule(e, r, p, cc)
        if bad:
            problems.append(bad)
    return problems


def check_command(cmd: EngineCommand, compute_capability: str | None = None) -> None:
    """Raise a one-line VazaoError when `cmd` would not start its engine's server."""
    problems = check_argv(cmd.engine, cmd.argv, compute_capability=compute_capability,
                          implied=getattr(cmd, "implied", ()))
    if problems:
        raise VazaoError(f"{cmd.engine}: the command would not start: " + "; ".join(problems))
