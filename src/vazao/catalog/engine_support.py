"""Software lifecycle: whether an engine's releases run on an accelerator, and since when they no longer do.

One answer for `fit`, `estimate`, `formats` and `plan`, read from catalog/data/engine_support.yaml (every row
sourced). `lifecycle(engine, acc)` gives a Lifecycle: its status, a one-line note naming the source, the last
release seen to run the card and the first seen without it. The decision what to do with it lives here too:

- supported: the current release runs the card (no note, or a build caveat such as "CUDA 12 builds only");
- old-release: only older releases do; predicted as asked, with the note ("vLLM 0.21.0 and later need …");
- not-current: the current release does not, older ones are not recorded; predicted, with the note;
- never: no release ever did (the source covers the first release); refused like a vendor the engine does not
  run on (`refuses`, applied by EngineProfile.refusal_on for make_deployment, format_support and the simulator);
- unknown: no sourced row covers the card; predicted, and the note says nothing is recorded;
- not-applicable: not a software release (the ideal and naive profiles)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from vazao.catalog._load import load_yaml
from vazao.errors import VazaoError

if TYPE_CHECKING:
    from vazao.catalog.hardware import Accelerator

FILE = "engine_support.yaml"
STATUSES = ("supported", "old-release", "not-current", "never", "unknown", "not-applicable")
# statuses whose support has already ended for this card: a plan with a support horizon excludes them
ENDED = ("old-release", "not-current", "never")


@dataclass(frozen=True)
class Lifecycle:
    """An engine's software lifecycle on one accelerator (see the module docstring for the statuses)."""

    engine: str
    gpu: str
    status: str
    note: str  # one line naming the source; "" when there is nothing to say
    arch: str | None = None  # what the rows compare: "cc 7.0", "gfx942", a vendor
    last_release: str | None = None  # the newest release seen to run the card
    first_without: str | None = None  # the oldest release seen not to
    ended: str | None = None  # YYYY-MM-DD support ended (the first release without it), where a source dates it
    announced_end: str | None = None  # YYYY-MM-DD an announced future end falls on
    source: str = ""
    as_of: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise VazaoError(f"lifecycle status {self.status!r}: one of {', '.join(STATUSES)}")

    @property
    def refuses(self) -> bool:
        """No release of the engine ever ran on the card: refused, as a vendor it does not run on is."""
        return self.status == "never"

    def ends_within(self, months: int, today: _dt.date) -> bool:
        """Support by the engine has ended, or is announced to end within `months` of `today`."""
        if self.status in ENDED:
            return True
        if self.announced_end is None:
            return False
        return _dt.date.fromisoformat(self.announced_end) <= _add_months(today, months)

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "gpu": self.gpu, "status": self.status, "note": self.note,
                "arch": self.arch, "last_release": self.last_release, "first_without": self.first_without,
                "ended": self.ended, "announced_end": self.announced_end, "source": self.source,
                "as_of": self.as_of}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Lifecycle:
        if not isinstance(doc, Mapping) or "status" not in doc:
            raise VazaoError("a lifecycle document needs engine, gpu and status")
        return cls(engine=str(doc["engine"]), gpu=str(doc["gpu"]), status=str(doc["status"]),
                   note=str(doc.get("note") or ""), arch=doc.get("arch"), last_release=doc.get("last_release"),
                   first_without=doc.get("first_without"), ended=doc.get("ended"),
                   announced_end=doc.get("announced_end"), source=str(doc.get("source") or ""),
                   as_of=str(doc.get("as_of") or ""))


def _add_months(d: _dt.date, months: int) -> _dt.date:
    y, m = divmod(d.month - 1 + months, 12)
    year, month = d.year + y, m + 1
    last = (_dt.date(year + (month == 12), month % 12 + 1, 1) - _dt.timedelta(days=1)).day
    return _dt.date(year, month, min(d.day, last))


def _cc(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in str(text).split("."))
    except ValueError:
        raise VazaoError(f"{FILE}: compute capability {str(text)[:20]!r} is not numbers joined by dots") from None


def _date(value: Any, where: str) -> str | None:
    if value is None:
        return None
    try:
        return _dt.date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise VazaoError(f"{FILE}: {where}: {str(value)[:30]!r} is not a YYYY-MM-DD date") from None


def check_table(raw: Any) -> dict[str, Any]:
    """The file's schema: every row sourced, dated (as_of), with a floor it can be compared on."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("engines"), Mapping):
        raise VazaoError(f"{FILE}: expected a mapping with 'engines'")
    for name, t in (raw.get("amd_targets") or {}).items():
        if not (isinstance(t, Mapping) and t.get("gfx") and t.get("source") and t.get("as_of")):
            raise VazaoError(f"{FILE}: amd_targets.{name}: needs gfx, source and as_of")
    platforms = raw.get("platforms") or {}
    for name, p in platforms.items():
        if not (isinstance(p, Mapping) and p.get("min_cc") and p.get("source") and p.get("as_of")):
            raise VazaoError(f"{FILE}: platforms.{name}: needs min_cc, source and as_of")
        _cc(p["min_cc"])
        _date(p.get("ended"), f"platforms.{name}.ended")
    for engine, e in raw["engines"].items():
        if not isinstance(e, Mapping):
            raise VazaoError(f"{FILE}: engines.{engine}: expected a mapping")
        if e.get("applies") is False:
            continue
        for backend in ("cuda", "rocm", "vendor"):
            rows = e.get(backend) or []
            for i, row in enumerate(rows):
                where = f"engines.{engine}.{backend}[{i}]"
                missing = [k for k in ("from", "to", "source", "as_of", "cite") if not row.get(k)]
                if missing:
                    raise VazaoError(f"{FILE}: {where}: missing {', '.join(missing)}")
                need = {"cuda": "min_cc", "rocm": "targets", "vendor": "vendors"}[backend]
                if not row.get(need):
                    raise VazaoError(f"{FILE}: {where}: needs {need}")
                for k in ("min_cc", "max_cc"):
                    if row.get(k):
                        _cc(row[k])
                if row.get("platform") and row["platform"] not in platforms:
                    raise VazaoError(f"{FILE}: {where}: unknown platform {row['platform']!r}")
                _date(row.get("date"), f"{where}.date")
                end = row.get("announced_end")
                if end is not None:
                    if i != len(rows) - 1 or not (isinstance(end, Mapping) and end.get("source")
                                                  and end.get("min_cc")):
                        raise VazaoError(f"{FILE}: {where}: announced_end belongs on the newest row, with "
                                         "date, min_cc and source")
                    if _date(end.get("date"), f"{where}.announced_end") is None:
                        raise VazaoError(f"{FILE}: {where}: announced_end needs a date")
    return dict(raw)


@cache
def table() -> dict[str, Any]:
    return check_table(load_yaml(FILE))


def lifecycle(engine: str, acc: Accelerator, data: Mapping[str, Any] | None = None) -> Lifecycle:
    """The lifecycle of `engine` (a profile name) on `acc`. `data`: another table (tests); else the shipped one."""
    if data is None:
        return _cached(engine, acc.id, acc.name, acc.vendor, acc.compute_capability)
    return _lifecycle(engine, acc.id, acc.name, acc.vendor, acc.compute_capability, check_table(data))


@cache
def _cached(engine: str, gpu: str, name: str, vendor: str, cc: str | None) -> Lifecycle:
    return _lifecycle(engine, gpu, name, vendor, cc, table())


def _short(name: str) -> str:
    """'NVIDIA Tesla P40 24GB' → 'Tesla P40': the card as a note names it."""
    words = [w for w in name.split() if w not in ("NVIDIA", "AMD", "Instinct", "GeForce") and not w.endswith("GB")]
    return " ".join(words) or name


def _lifecycle(engine: str, gpu: str, name: str, vendor: str, cc: str | None, data: Mapping[str, Any]) -> Lifecycle:
    as_of = str(data.get("as_of", ""))
    e = data["engines"].get(engine)
    if e is None:
        return Lifecycle(engine, gpu, "unknown", f"{engine}: no lifecycle record in {FILE}", as_of=as_of)
    if e.get("applies") is False:
        return Lifecycle(engine, gpu, "not-applicable", "", source=str(e.get("note", "")), as_of=as_of)
    label = str(e.get("label", engine))
    card = _short(name)
    profile = (load_yaml("engines.yaml").get("engines") or {}).get(engine) or {}
    if vendor not in (profile.get("vendors") or (vendor,)):
        # the engine does not run on this vendor at all: EngineProfile.refusal_on's vendor rule answers
        return Lifecycle(engine, gpu, "not-applicable", "", arch=vendor, as_of=as_of)
    if vendor == "nvidia":
        if cc is None:
            return Lifecycle(engine, gpu, "unknown", f"{label} on {card}: no compute capability known, so no "
                             "release can be matched", as_of=as_of)
        arch = f"cc {cc}"
        rows = list(e.get("cuda") or [])

        def ok(r: Mapping[str, Any]) -> bool:
            return bool(_cc(r["min_cc"]) <= _cc(cc) and (not r.get("max_cc") or _cc(cc) <= _cc(r["max_cc"])))

        def needs(r: Mapping[str, Any]) -> str:
            return f"cc ≥ {r['min_cc']}" + (f" and ≤ {r['max_cc']}" if r.get("max_cc") else "")
    elif vendor == "amd":
        target = (data.get("amd_targets") or {}).get(gpu)
        if target is None:
            return Lifecycle(engine, gpu, "unknown", f"{label} on {card}: its gfx target is not recorded in {FILE}",
                             as_of=as_of)
        arch = str(target["gfx"])
        rows = list(e.get("rocm") or [])

        def ok(r: Mapping[str, Any]) -> bool:
            return arch in r["targets"]

        def needs(r: Mapping[str, Any]) -> str:
            return "one of " + ", ".join(r["targets"])
    else:
        arch = vendor
        rows = [r for r in e.get("vendor") or [] if vendor in r["vendors"]]

        def ok(r: Mapping[str, Any]) -> bool:
            return vendor in r["vendors"]

        def needs(r: Mapping[str, Any]) -> str:
            return vendor
    if not rows:
        return Lifecycle(engine, gpu, "unknown", f"{label} on {card} ({arch}): no sourced record of which releases "
                         f"run it ({FILE}); predicted as asked", arch=arch, as_of=as_of)
    newest = rows[-1]
    platforms = data.get("platforms") or {}
    where = f"{card} ({arch})"
    if ok(newest):
        note, announced = "", None
        plat = platforms.get(newest.get("platform") or "")
        if vendor == "nvidia" and plat and _cc(cc or "0") < _cc(plat["min_cc"]):
            note = (f"{label} runs on {where} only when built with a toolkit before {plat['label']} (which needs "
                    f"cc ≥ {plat['min_cc']}) ({newest['cite']})")
        end = newest.get("announced_end")
        if end is not None and vendor == "nvidia" and _cc(cc or "0") < _cc(end["min_cc"]):
            announced = _date(end["date"], "announced_end")
            note = (note + "; " if note else "") + (f"{label} support for {where} is announced to end on "
                                                     f"{announced} ({end['source']})")
        return Lifecycle(engine, gpu, "supported", note, arch=arch, last_release=str(newest["to"]),
                         announced_end=announced, source=str(newest["source"]), as_of=str(newest["as_of"]))
    supporting = [i for i, r in enumerate(rows) if ok(r)]
    if supporting:
        i = supporting[-1]
        last, after = rows[i], rows[i + 1]
        note = (f"{label} ≥ {after['from']} does not run on {card} ({arch}; needs {needs(after)}); the last release "
                f"documented to run it is {last['to']} ({last['cite']}; {after['cite']})")
        return Lifecycle(engine, gpu, "old-release", note, arch=arch, last_release=str(last["to"]),
                         first_without=str(after["from"]), ended=_date(after.get("date"), "date"),
                         source=f"{last['source']} | {after['source']}", as_of=str(after["as_of"]))
    first = rows[0]
    if first.get("from_first_release"):
        note = f"{label} does not run on {card} ({arch}; needs {needs(first)}); no release does ({first['cite']})"
        return Lifecycle(engine, gpu, "never", note, arch=arch, first_without=str(first["from"]),
                         source=str(first["source"]), as_of=str(first["as_of"]))
    which = f"(current at {first['as_of']})" if first["from"] == "current" else f"≥ {first['from']}"
    plat = platforms.get(first.get("platform") or "")
    on = f", on {plat['label']}" if plat and vendor == "nvidia" else ""
    note = (f"{label} {which} does not run on {card} ({arch}; needs {needs(first)}{on}); older releases are not "
            f"recorded ({first['cite']})")
    return Lifecycle(engine, gpu, "not-current", note, arch=arch, first_without=str(first["from"]),
                     source=str(first["source"]), as_of=str(first["as_of"]))
