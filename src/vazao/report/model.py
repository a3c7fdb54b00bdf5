"""The typed inputs of every plot and HTML report: plain frozen records, base units (seconds, bytes,
FLOP/s, requests/s, USD). Adapters (report.adapters) fill them from vazao's results; the chart
builders (report.plots) and writers (report.html) only draw them."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, ParamSpec, TypeVar

from vazao.errors import VazaoError

Source = Literal["measured", "predicted"]
KINDS = ("simulation", "bench run", "comparison", "validation", "plan", "estimate")

_P = ParamSpec("_P")
_R = TypeVar("_R")


def reads_document(kind: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A report builder reads a result file a user hands in: a document of the right kind with a field
    missing or of the wrong type is one VazaoError line, not a traceback from deep in the builder."""
    def wrap(build: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(build)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return build(*args, **kwargs)
            except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
                raise VazaoError(f"this {kind} result lacks a field vazao writes or has one of the wrong "
                                 f"type ({type(exc).__name__}: {str(exc)[:80]})") from None
        return checked
    return wrap


@dataclass(frozen=True)
class RooflinePoint:
    label: str  # e.g. "decode b=8"
    phase: str  # decode | prefill
    batch: int
    intensity: float  # FLOP per byte moved
    flops_per_s: float  # achieved FLOP/s of the step


@dataclass(frozen=True)
class Ceilings:
    """One accelerator's roofline: memory bandwidth and the dense compute peak per dtype."""

    gpu: str
    bandwidth_bytes_per_s: float
    peak_flops: tuple[tuple[str, float], ...]  # (dtype, FLOP/s)


@dataclass(frozen=True)
class MemorySegment:
    part: str  # weights | activations & reserve | KV cache | beyond the memory cap …
    bytes: float


@dataclass(frozen=True)
class MemoryBreakdown:
    deployment: str
    segments: tuple[MemorySegment, ...]  # per GPU; they sum to the GPU's memory


@dataclass(frozen=True)
class CurvePoint:
    """One level of a rate or concurrency sweep."""

    level: float  # the rate (requests/s) or concurrency that was asked
    throughput: float  # output tokens/s
    ttft_p95_s: float | None
    tpot_p95_s: float | None
    source: Source
    series: str = ""  # which deployment, where one chart draws several (a plan's top three)


@dataclass(frozen=True)
class LatencySample:
    """One latency observation (a record's TTFT or an ITL gap) or one quantile of a summary."""

    metric: str  # ttft | itl
    seconds: float
    source: Source
    quantile: float | None = None  # set when the value is a summary's quantile, not a raw sample


@dataclass(frozen=True)
class CostPoint:
    traffic_per_s: float  # requests/s
    usd_per_mtok: float
    series: str  # "self-hosted: …" | "API: …"


@dataclass(frozen=True)
class TrendPoint:
    """One month of a break-even projected under a price-trend scenario (cost.trends)."""

    month: int
    value: float
    series: str  # "break-even: h100-sxm" | "capacity: h100-sxm" | "API" | "self-hosted: h100-sxm"
    metric: str  # "requests_per_day" | "usd_per_mtok"


@dataclass(frozen=True)
class ParetoPoint:
    label: str
    usd_per_mtok: float
    latency_s: float  # the p95 the SLO binds on (TPOT or TTFT)
    meets_slo: bool
    on_front: bool
    rank: int


@dataclass(frozen=True)
class ValidationPoint:
    measured: float
    predicted: float
    band_lo: float | None
    band_hi: float | None
    metric: str
    label: str = ""


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Report:
    """One report: what every writer (HTML, plots) reads. `facts` are the inputs, engine profile,
    calibration and catalog versions that produced it, as (name, value) pairs."""

    kind: str
    title: str
    headline: str = ""
    tables: tuple[Table, ...] = ()
    facts: tuple[tuple[str, str], ...] = ()
    roofline: tuple[RooflinePoint, ...] = ()
    ceilings: Ceilings | None = None
    memory: tuple[MemoryBreakdown, ...] = ()
    curve: tuple[CurvePoint, ...] = ()
    curve_axis: str = "rate"  # rate | concurrency
    slo_s: dict[str, float] = field(default_factory=dict)  # ttft_p95, tpot_p95 …
    latencies: tuple[LatencySample, ...] = ()
    cost: tuple[CostPoint, ...] = ()
    breakeven_per_s: float | None = None
    trend: tuple[TrendPoint, ...] = ()  # the break-even over time, under the scenario trend_label names
    trend_label: str = ""  # the scenario: id, name and citation (drawn under the chart's title)
    pareto: tuple[ParetoPoint, ...] = ()
    validation: tuple[ValidationPoint, ...] = ()
