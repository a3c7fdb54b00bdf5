"""Error bands: the 80% band of a prediction, from the residual quantiles a calibration stored in its
engine profile (vazao calibrate), per regime, latencies apart from speeds; widened, and said so,
where the profile was never fitted on the GPU generation, format or model family asked about."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from vazao.physics.profiles import EngineProfile

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment

LATENCY_METRICS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_ms")


class Band(NamedTuple):
    """The 80% band of one prediction, in the prediction's own unit: one chance in ten that a
    measurement falls below `low`, one in ten above `high`. `note` says why it is wider than the fit's
    own residuals (empty when it is not). A tuple, so JSON writes it as [low, high, note]."""

    low: float
    high: float
    note: str = ""

    def holds(self, value: float) -> bool:
        """Whether `value` falls inside the band (its edges included)."""
        return self.low <= value <= self.high

    def scaled(self, factor: float) -> Band:
        """The band of the same prediction in another unit (× factor, factor > 0)."""
        return Band(self.low * factor, self.high * factor, self.note)

    def to_json(self, unit: str = "s") -> dict[str, Any]:
        return {f"low_{unit}": self.low, f"high_{unit}": self.high, "note": self.note}

    @classmethod
    def from_json(cls, d: Any) -> Band:
        """A band from either JSON form: the list [low, high, note] a tuple is written as (a simulation's
        bands), or to_json's {low_<unit>, high_<unit>, note} (a plan's), whatever the unit."""
        if isinstance(d, Mapping):
            low = next(v for k, v in d.items() if k.startswith("low_"))
            high = next(v for k, v in d.items() if k.startswith("high_"))
            return cls(_edge(low, -math.inf), _edge(high, math.inf), d.get("note", ""))
        low, high, *note = d
        return cls(_edge(low, -math.inf), _edge(high, math.inf), *note)


def _edge(v: float | None, unbounded: float) -> float:
    """A band edge read back: null is the infinite edge json_document could not write."""
    return unbounded if v is None else float(v)


def band_key(regime: str, metric: str) -> str:
    """Residuals are kept per regime, latencies apart from speeds (they err in opposite directions), and the
    time to first token apart from the other latencies (it carries the queueing and scheduling the
    per-token gaps do not: on the serving file its spread is three times theirs)."""
    if metric == "ttft_ms":
        return f"{regime} ttft"
    return f"{regime} latency" if metric in LATENCY_METRICS else regime


def _flipped(r: Mapping[str, Any]) -> dict[str, Any]:
    """A latency's residual quantiles as those of its inverse, a speed: log(measured / predicted) changes sign,
    so the speed's q10 is the latency's −q90."""
    return {**r, "q10": -r["q90"], "q50": -r["q50"], "q90": -r["q10"]}


def _residuals_for(res: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The residual quantiles of `key`, else of its wider group (a TTFT's: the regime's latencies), else —
    for a speed of a regime the fit had no speeds of (a profile fitted on serving latencies alone) — the
    latency it is the inverse of (a prefill's tok/s: TTFT; any other: the per-token latencies), else all."""
    found = _residual_source(res, key)
    if found is None:
        return None
    k, flip = found
    return _flipped(res[k]) if flip else res[k]


def _residual_source(res: Mapping[str, Any], key: str) -> tuple[str, bool] | None:
    """(which residuals _residuals_for takes for `key`, whether it flips them)."""
    chain = [(key, False), (key.replace(" ttft", " latency"), False)]
    if not key.endswith((" ttft", " latency")):
        chain.append(("serving ttft" if key == "compute" else "serving latency", True))
    for k, flip in [*chain, ("all", False)]:
        r = res.get(k)
        if r and (r.get("n", 0) >= 10 or k == "all"):
            return k, flip
    return None


BAND_QUANTILES = ("q10", "q90")  # an 80% band
# log-width multiplier per thing the profile was not fitted on (generation, format, model family, engine
# release): each is its own source of error, so two unseen widen by 1 + 2 × 0.5 = 2×, four by 3×
WIDEN = 0.5


def release_key(release: object) -> tuple[int, ...]:
    """A calibration's release key or an entry's min_version ('1.0', '0.5.6') as numbers: (1, 0)."""
    return tuple(int(x) for x in str(release).split("."))


def of_release(version: tuple[int, ...] | None, key: tuple[int, ...]) -> bool:
    """Whether an engine version is of the release `key` names ((1, 1, 0) is of (1, 1); None is of none)."""
    return version is not None and tuple(version[:len(key)]) == key


def _calibration_at(profile: EngineProfile, version: tuple[int, ...] | None) -> tuple[Mapping[str, Any] | None, bool]:
    """(the calibration of this engine release, whether the release was fitted): the release's own
    entry when it was, else the base one (the newest release's), as at_version resolves values."""
    cal = profile.calibration
    if not cal:
        return None, False
    releases = cal.get("versions") or {}
    if version is not None:
        for v, entry in releases.items():
            if of_release(version, release_key(v)):
                return entry, True
    if "residuals" in cal:  # the base's own fit may name the releases it saw (bench/serving_fit.py --release base)
        seen = [release_key(v) for v in cal.get("releases") or ()]
        return cal, version is None or not releases or any(of_release(version, k) for k in seen)
    return None, False


def _has_own(res: Mapping[str, Any], key: str) -> bool:
    """Whether a fit's residuals speak for `key`: not only through all regimes pooled, and not a compute-bound
    speed read off TTFTs (a max-load throughput is bound by decode steps' compute, not by prefills)."""
    found = _residual_source(res, key)
    return found is not None and found[0] != "all" and not (key == "compute" and found[1])


def _release_with(cal: Mapping[str, Any], key: str, skip: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The calibration of the newest release entry (other than `skip`) whose fit has residuals of `key`."""
    releases = cal.get("versions") or {}
    for v in sorted(releases, key=release_key, reverse=True):
        entry = releases[v]
        if entry is not skip and _has_own(entry.get("residuals") or {}, key):
            return entry
    return None


def band(profile: EngineProfile, regime: str, value: float, *, version: tuple[int, ...] | None = None,
         generation: str | None = None,
         weight_format: str | None = None, model_family: str | None = None) -> Band | None:
    """The 80% band around `value` from the fit's residual quantiles of this regime
    (all regimes pooled where it has too few rows), widened where the fit never saw this generation,
    format or model family; None for an uncalibrated profile."""
    cal, fitted_release = _calibration_at(profile, version)
    if not cal:
        return None
    if not _has_own(cal.get("residuals") or {}, regime):
        # this fit had no rows of the regime (the base of a profile fitted on serving latencies of its newest
        # releases, asked a max-load throughput): a release entry whose fit had them, as another release
        other = _release_with(profile.calibration or {}, regime, cal)
        if other is not None:
            cal, fitted_release = other, False
    r = _residuals_for(cal.get("residuals") or {}, regime)
    if not r:
        return None
    lo, hi = r[BAND_QUANTILES[0]], r[BAND_QUANTILES[1]]
    seen = cal.get("fitted_on") or {}
    unseen = [what for what, have in (("generation", generation), ("format", weight_format),
                                      ("model family", model_family))
              if have and have not in (seen.get({"generation": "generations", "format": "formats",
                                                  "model family": "model_families"}[what]) or ())]
    if not fitted_release:
        unseen.append("engine release")
    note = ""
    if unseen:
        mid = (lo + hi) / 2
        k = 1.0 + WIDEN * len(unseen)
        lo, hi = mid + (lo - mid) * k, mid + (hi - mid) * k
        note = "widened: not fitted on this " + ", ".join(unseen)
    return Band(value * math.exp(lo), value * math.exp(hi), note)


def within_physics(b: Band | None, limit: float, *, rate: bool) -> Band | None:
    """`b` with its optimistic edge held to the physical limit `limit` (the same figure on the idealized profile:
    the roofline with no losses, physics/profiles.py EngineProfile.idealized): a rate's high edge at most the
    limit, a time's low edge at least it. The residuals are log errors around the prediction, so a wide band
    (one widened for what the fit never saw) can reach past what the hardware can do; no measurement can."""
    if b is None or not (0 < limit < math.inf):
        return b
    if rate and b.high > limit:
        return Band(min(b.low, limit), limit, b.note)
    if not rate and b.low < limit:
        return Band(limit, max(b.high, limit), b.note)
    return b


def deployment_band(dep: Deployment, regime: str, value: float, *, metric: str = "") -> Band | None:
    """band() for a prediction about a Deployment (its engine's calibration, generation, format, family);
    `metric` (ttft_ms, tpot_ms, …; empty for a speed) picks the residuals as band_key does."""
    key = band_key(regime, metric)
    return band(dep.engine, key, value, generation=dep.accelerator.generation,
                weight_format=dep.weight_format.name, model_family=dep.model.family)
