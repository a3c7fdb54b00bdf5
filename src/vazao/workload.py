"""Workload: who sends what, when. One YAML file drives both `vazao simulate` and `vazao bench`.

A workload is arrivals (Poisson at a rate, a fixed concurrency in closed loop, bursts, a replayed
trace), prompt and output length distributions, shared prefixes (system prompts used by a share
of requests) and optional multi-turn conversations whose prompt repeats the previous turn's
prompt and reply. `Workload.plan()` turns it into RequestSpecs, deterministically for the seed.

Plan order: roots (a single request, or a conversation's first turn) in arrival order, each
followed at once by its later turns (`after` = the previous turn, `arrival_s` None). Roots of a
closed-loop workload have `arrival_s` None: send when one of the `concurrency` sessions is free.
With a `rate`, Poisson arrivals start sessions (a single request or a whole conversation).
"""

from __future__ import annotations

import bisect
import csv
import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from vazao import inputs
from vazao.errors import VazaoError

DISTS = ("fixed", "uniform", "normal", "lognormal", "empirical")
ARRIVALS = ("poisson", "concurrency", "burst", "trace")
_BLOCK = 4096  # values drawn per numpy call; part of what makes a plan reproducible

# Sane maxima, checked before a plan is drawn: a workload cannot ask a simulation or a bench for
# 10^12 requests or 10^30-token prompts.
MAX_REQUESTS = 10_000_000
MAX_TOKENS = 2**24  # one prompt or answer (16.7M tokens: past every model's context)
MAX_RATE = 1e6  # sessions per second
MAX_CONCURRENCY = 1_000_000
MAX_DURATION_S = 1e7  # ~116 days
MAX_SEED = 2**63 - 1
MAX_SIGMA = 10.0  # of log(length): e^10 already spans four orders of magnitude either way
MAX_PREFIXES = 1_000
MAX_WORKLOAD_BYTES = 4 * 2**20  # a workload YAML is a few hundred bytes


# ---- core types ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Dist:
    """A token-length distribution. Samples are rounded to integers and clipped to [min, max]."""

    kind: str
    value: float | None = None  # fixed
    low: int | None = None  # uniform (inclusive)
    high: int | None = None
    mean: float | None = None  # normal; lognormal (alternative to median)
    std: float | None = None  # normal
    median: float | None = None  # lognormal
    sigma: float | None = None  # lognormal: std of log(length)
    values: tuple[int, ...] = ()  # empirical
    min: int = 1
    max: int | None = None

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "fixed":
            x = np.full(n, float(self.value))
        elif self.kind == "uniform":
            x = rng.integers(self.low, self.high + 1, size=n).astype(float)
        elif self.kind == "normal":
            x = rng.normal(self.mean, self.std, size=n)
        elif self.kind == "lognormal":
            mu = math.log(self.median) if self.median else math.log(self.mean) - self.sigma**2 / 2
            x = rng.lognormal(mu, self.sigma, size=n)
        else:
            x = rng.choice(np.asarray(self.values, dtype=float), size=n)
        hi = self.max if self.max is not None else MAX_TOKENS  # a lognormal tail stays inside int64
        return np.clip(np.rint(x), self.min, hi).astype(np.int64)

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{self.value:g}"
        if self.kind == "uniform":
            return f"uniform {self.low}–{self.high}"
        if self.kind == "normal":
            return f"normal {self.mean:g}±{self.std:g}"
        if self.kind == "lognormal":
            centre = f"median {self.median:g}" if self.median else f"mean {self.mean:g}"
            return f"lognormal {centre} σ {self.sigma:g}"
        return f"empirical ({len(self.values)} values)"


@dataclass(frozen=True)
class Arrival:
    kind: str  # poisson | concurrency | burst | trace
    rate: float | None = None  # poisson: sessions started per second
    concurrency: int | None = None  # concurrency: sessions in flight (closed loop)
    burst_size: int | None = None  # burst: sessions per burst (None: all at once)
    burst_interval_s: float | None = None
    timestamps: tuple[float, ...] = ()  # trace: session start times
    trace_prompt: tuple[int, ...] = ()  # trace: optional per-entry prompt tokens
    trace_output: tuple[int, ...] = ()  # trace: optional per-entry output tokens

    def describe(self) -> str:
        if self.kind == "poisson":
            return f"Poisson {self.rate:g}/s"
        if self.kind == "concurrency":
            return f"closed loop, concurrency {self.concurrency}"
        if self.kind == "burst":
            every = f" every {self.burst_interval_s:g} s" if self.burst_interval_s else ""
            return f"burst of {self.burst_size or 'all'}{every}"
        return f"trace of {len(self.timestamps)} arrivals"


@dataclass(frozen=True)
class Prefix:
    """A shared prompt head (system prompt, policy text, few-shot examples) used by `share` of sessions."""

    id: str
    tokens: int
    share: float


@dataclass(frozen=True)
class Delay:
    """A think time in seconds: fixed, exponential (memoryless users) or uniform."""

    kind: str = "fixed"  # fixed | exponential | uniform
    mean: float = 0.0  # fixed value, or the exponential's mean
    low: float = 0.0
    high: float = 0.0

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "exponential":
            return rng.exponential(self.mean, size=n) if self.mean > 0 else np.zeros(n)
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high, size=n)
        return np.full(n, float(self.mean))

    def describe(self) -> str:
        if self.kind == "exponential":
            return f"exponential mean {self.mean:g} s"
        if self.kind == "uniform":
            return f"uniform {self.low:g}–{self.high:g} s"
        return f"{self.mean:g} s"


@dataclass(frozen=True)
class Conversation:
    """Multi-turn sessions: turn t's prompt = prefix + every earlier user message and reply + the new
    user message (drawn from `user`, else from the workload's prompt distribution)."""

    turns: Dist
    user: Dist | None = None
    think: Delay = Delay()  # between a reply's last token and the next turn


@dataclass(frozen=True)
class RequestSpec:
    request_id: str
    arrival_s: float | None  # None: released by the closed loop or by `after`
    prompt_tokens: int  # total prompt: prefix + history + new tokens
    output_tokens: int
    prefix_id: str | None = None
    prefix_tokens: int = 0
    conversation_id: str | None = None
    turn: int = 1
    history_tokens: int = 0  # leading prompt tokens that repeat the previous turn's prompt + reply
    after: str | None = None  # request_id this one waits for (the previous turn)
    think_time_s: float = 0.0  # delay after `after` completes


_SPEC_FIELDS = tuple(RequestSpec.__dataclass_fields__)


def _spec(*values) -> RequestSpec:
    """RequestSpec(*values), every field given, built without the frozen dataclass's one
    object.__setattr__ per field: the same object (equal, same hash) at half the cost, which
    matters when a plan holds 100,000 requests."""
    obj = object.__new__(RequestSpec)
    obj.__dict__.update(zip(_SPEC_FIELDS, values, strict=True))
    return obj


@dataclass(frozen=True)
class Workload:
    name: str
    arrival: Arrival
    prompt: Dist
    output: Dist
    prefixes: tuple[Prefix, ...] = ()
    conversation: Conversation | None = None
    requests: int | None = None
    duration_s: float | None = None
    seed: int = 0
    warmup: int = 0  # the first `warmup` requests of the plan are left out of summaries
    description: str = ""

    @property
    def concurrency(self) -> int | None:
        return self.arrival.concurrency if self.arrival.kind == "concurrency" else None

    @property
    def closed_loop(self) -> bool:
        return self.arrival.kind == "concurrency"

    @property
    def bounded(self) -> bool:
        """Whether the plan is finite (a closed loop with only a duration runs until the clock says)."""
        if self.requests is not None or self.arrival.kind == "trace":
            return True
        # timed arrivals stop at the duration; a closed loop only stops when the clock says so
        return self.arrival.kind in ("poisson", "burst") and self.duration_s is not None

    def with_overrides(self, *, requests: int | None = None, rate: float | None = None,
                       concurrency: int | None = None, seed: int | None = None,
                       duration_s: float | None = None) -> Workload:
        """The same traffic shape with some knobs changed (validated like the file's own values)."""
        w = self
        if rate is not None and concurrency is not None:
            raise VazaoError("give either a rate (open loop) or a concurrency (closed loop), not both")
        if rate is not None:
            rate = inputs.positive(rate, "rate (requests per second)", maximum=MAX_RATE)
            w = replace(w, arrival=Arrival("poisson", rate=float(rate)))
        if concurrency is not None:
            concurrency = _positive_int(concurrency, "concurrency", MAX_CONCURRENCY)
            w = replace(w, arrival=Arrival("concurrency", concurrency=int(concurrency)))
        if requests is not None:
            w = replace(w, requests=_positive_int(requests, "requests", MAX_REQUESTS))
        if duration_s is not None:
            duration_s = inputs.positive(duration_s, "duration (seconds)", maximum=MAX_DURATION_S)
            w = replace(w, duration_s=float(duration_s))
        if seed is not None:
            w = replace(w, seed=int(inputs.number(seed, "seed", minimum=0, maximum=MAX_SEED, integer=True)))
        if w.arrival.kind == "trace" and w.requests is None:
            w = replace(w, requests=len(w.arrival.timestamps))
        _check_size(w)
        if not w.bounded and w.duration_s is None:
            raise VazaoError(f"workload {w.name}: set `requests` or `duration_s`")
        if (w.arrival.kind == "burst" and w.requests is None
                and not (w.arrival.burst_size and w.arrival.burst_interval_s)):
            raise VazaoError(f"workload {w.name}: a single burst needs `requests` (how many arrive at once)")
        if w.warmup and w.requests is not None and w.warmup >= w.requests:
            raise VazaoError(f"workload {w.name}: warmup ({w.warmup}) must be below requests ({w.requests})")
        return w

    def describe(self) -> str:
        parts = [self.arrival.describe(), f"prompt {self.prompt.describe()}", f"output {self.output.describe()}"]
        if self.prefixes:
            parts.append(", ".join(f"prefix {p.id} {p.tokens} tok × {p.share:.0%}" for p in self.prefixes))
        if self.conversation:
            parts.append(f"{self.conversation.turns.describe()} turns, think {self.conversation.think.describe()}")
        if self.requests:
            parts.append(f"{self.requests:,} requests")
        if self.duration_s:
            parts.append(f"{self.duration_s:g} s")
        return "; ".join(parts)

    # ---- the plan ----------------------------------------------------------------------------
    def plan(self) -> list[RequestSpec]:
        """Every request of the run, deterministic for the seed (see the module docstring)."""
        if not self.bounded:
            raise VazaoError(f"workload {self.name}: a closed loop with only a duration has no finite "
                             "plan; set `requests` (or iterate iter_plan())")
        return list(self.iter_plan())

    def iter_plan(self) -> Iterator[RequestSpec]:
        """The plan as a stream, so that memory stays flat."""
        return (_spec(*row) for row in self.iter_rows())

    def iter_rows(self) -> Iterator[tuple]:
        """The plan as plain tuples in RequestSpec's field order (the simulator's hot path reads these)."""
        seeds = np.random.SeedSequence(self.seed).spawn(7)
        arrivals = _stream(np.random.default_rng(seeds[0]), self._draw_gap)
        prompts = _stream(np.random.default_rng(seeds[1]), self.prompt.draw)
        user_dist = (self.conversation.user if self.conversation and self.conversation.user else self.prompt)
        users = _stream(np.random.default_rng(seeds[5]), user_dist.draw)
        outputs = _stream(np.random.default_rng(seeds[2]), self.output.draw)
        picks = _stream(np.random.default_rng(seeds[3]), lambda rng, n: rng.random(n))
        turns = (_stream(np.random.default_rng(seeds[4]), self.conversation.turns.draw)
                 if self.conversation else None)
        thinks = (_stream(np.random.default_rng(seeds[6]), self.conversation.think.draw)
                  if self.conversation else None)
        shares = list(itertools.accumulate(p.share for p in self.prefixes))
        a = self.arrival
        emitted = 0
        clock = 0.0
        session = 0
        while self.requests is None or emitted < self.requests:
            # when this session starts
            if a.kind == "poisson":
                clock += next(arrivals)
                start: float | None = clock
            elif a.kind == "burst":
                size = a.burst_size or 0
                start = (session // size) * (a.burst_interval_s or 0.0) if size else 0.0
            elif a.kind == "trace":
                if session >= len(a.timestamps):
                    return
                start = a.timestamps[session]
            else:
                start = None
            if start is not None and self.duration_s is not None and start >= self.duration_s:
                return
            # which prefix
            prefix = None
            if self.prefixes:
                u = next(picks)
                i = bisect.bisect_right(shares, u)
                prefix = self.prefixes[i] if i < len(self.prefixes) else None
            p_id, p_tok = (prefix.id, prefix.tokens) if prefix else (None, 0)
            traced = a.kind == "trace" and a.trace_prompt
            if self.conversation is None:
                new = a.trace_prompt[session] if traced else next(prompts)
                out = a.trace_output[session] if (a.kind == "trace" and a.trace_output) else next(outputs)
                yield (str(emitted), start, p_tok + int(new), int(out), p_id, p_tok, None, 1, 0, None, 0.0)
                emitted += 1
            else:
                conv = f"c{session}"
                n_turns = next(turns)
                history, prev = 0, None
                for t in range(1, n_turns + 1):
                    if self.requests is not None and emitted >= self.requests:
                        break
                    user = next(users)
                    out = next(outputs)
                    head = history if t > 1 else p_tok
                    rid = str(emitted)
                    yield (rid, start if t == 1 else None, head + int(user), int(out), p_id, p_tok,
                                      conv, t, history, prev, next(thinks) if t > 1 else 0.0)
                    history = head + int(user) + int(out)
                    prev = rid
                    emitted += 1
            session += 1

    def _draw_gap(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(1.0 / self.arrival.rate, size=n)


def _positive_int(value: Any, what: str, maximum: int) -> int:
    return int(inputs.number(value, what, minimum=1, maximum=maximum, integer=True))


def _check_size(w: Workload) -> None:
    """A plan bounded only by its duration must still stay under MAX_REQUESTS sessions."""
    if w.requests is not None or w.duration_s is None:
        return
    a = w.arrival
    if a.kind == "poisson":
        sessions = a.rate * w.duration_s
    elif a.kind == "burst" and a.burst_size and a.burst_interval_s:
        sessions = a.burst_size * (w.duration_s / a.burst_interval_s + 1)
    else:
        return
    if sessions > MAX_REQUESTS:
        raise VazaoError(f"workload {w.name}: {w.duration_s:g} s of {a.describe()} plans about {sessions:,.0f} "
                         f"sessions, more than {MAX_REQUESTS:,}; set `requests` or a shorter duration")


def _stream(rng: np.random.Generator, draw) -> Iterator:
    """Values drawn from a numpy generator _BLOCK at a time and handed out one by one."""
    while True:
        yield from draw(rng, _BLOCK).tolist()


# ---- the YAML edge (pydantic) --------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


_Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS)]
_TokensF = Annotated[float, Field(ge=0, le=MAX_TOKENS, allow_inf_nan=False)]


class _DistModel(_Strict):
    dist: str
    value: _TokensF | None = None
    low: _Tokens | None = None
    high: _Tokens | None = None
    mean: _TokensF | None = None
    std: _TokensF | None = None
    median: _TokensF | None = None
    sigma: Annotated[float, Field(ge=0, le=MAX_SIGMA, allow_inf_nan=False)] | None = None
    values: list[_Tokens] | None = Field(None, max_length=MAX_REQUESTS)
    file: str | None = Field(None, max_length=4096)
    column: str | None = None
    min: _Tokens = 1
    max: _Tokens | None = None

    @field_validator("dist")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in DISTS:
            raise ValueError(f"unknown distribution {v!r} (expected one of {', '.join(DISTS)})")
        return v

    @model_validator(mode="after")
    def _params(self) -> _DistModel:
        need = {"fixed": ("value",), "uniform": ("low", "high"), "normal": ("mean", "std"),
                "lognormal": ("sigma",), "empirical": ()}[self.dist]
        missing = [n for n in need if getattr(self, n) is None]
        if missing:
            raise ValueError(f"{self.dist} distribution needs {', '.join(missing)}")
        if self.dist == "lognormal" and (self.median is None) == (self.mean is None):
            raise ValueError("lognormal distribution needs exactly one of median or mean")
        if self.dist == "empirical" and not self.values and not self.file:
            raise ValueError("empirical distribution needs values (a list) or file (a path)")
        for n in ("value", "low", "high", "mean", "median", "sigma", "std"):
            v = getattr(self, n)
            if v is not None and (v < 0 or (n in ("value", "high", "mean", "median") and v <= 0)):
                raise ValueError(f"{n} must be positive, got {v}")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low ({self.low}) is above high ({self.high})")
        if self.min < 0 or (self.max is not None and self.max < max(self.min, 1)):
            raise ValueError(f"bad bounds min={self.min} max={self.max}")
        if self.values is not None and any(v <= 0 for v in self.values):
            raise ValueError("empirical values must be positive token counts")
        return self


class _ArrivalModel(_Strict):
    kind: str
    rate: Annotated[float, Field(le=MAX_RATE)] | None = None
    concurrency: Annotated[int, Field(le=MAX_CONCURRENCY)] | None = None
    size: Annotated[int, Field(le=MAX_REQUESTS)] | None = None
    interval_s: Annotated[float, Field(le=MAX_DURATION_S, allow_inf_nan=False)] | None = None
    file: str | None = Field(None, max_length=4096)
    timestamps: list[float] | None = Field(None, max_length=MAX_REQUESTS)

    @model_validator(mode="after")
    def _check(self) -> _ArrivalModel:
        if self.kind not in ARRIVALS:
            raise ValueError(f"unknown arrival kind {self.kind!r} (expected one of {', '.join(ARRIVALS)})")
        if self.kind == "poisson" and (self.rate is None or not self.rate > 0 or not math.isfinite(self.rate)):
            raise ValueError(f"poisson arrivals need a positive rate (requests/s), got {self.rate}")
        if self.kind == "concurrency" and (self.concurrency is None or self.concurrency < 1):
            raise ValueError(f"closed-loop arrivals need a positive concurrency, got {self.concurrency}")
        if self.kind == "burst":
            if self.size is not None and self.size < 1:
                raise ValueError(f"burst size must be positive, got {self.size}")
            if self.interval_s is not None and self.interval_s <= 0:
                raise ValueError(f"burst interval_s must be positive, got {self.interval_s}")
        if self.kind == "trace" and not self.file and self.timestamps is None:
            raise ValueError("trace arrivals need file (a path) or timestamps (a list of seconds)")
        return self


class _PrefixModel(_Strict):
    id: str = Field(max_length=256)
    tokens: Annotated[int, Field(le=MAX_TOKENS)]
    share: float = 1.0

    @model_validator(mode="after")
    def _check(self) -> _PrefixModel:
        if self.tokens < 1:
            raise ValueError(f"prefix {self.id}: tokens must be positive, got {self.tokens}")
        if not 0 < self.share <= 1:
            raise ValueError(f"prefix {self.id}: share must be in (0, 1], got {self.share}")
        return self


_Seconds = Annotated[float, Field(le=MAX_DURATION_S)]


class _DelayModel(_Strict):
    dist: str
    value: _Seconds | None = None
    mean: _Seconds | None = None
    low: _Seconds | None = None
    high: _Seconds | None = None

    @model_validator(mode="after")
    def _check(self) -> _DelayModel:
        kinds = ("fixed", "exponential", "uniform")
        if self.dist not in kinds:
            raise ValueError(f"unknown think-time distribution {self.dist!r} (expected one of {', '.join(kinds)})")
        need = {"fixed": ("value",), "exponential": ("mean",), "uniform": ("low", "high")}[self.dist]
        missing = [n for n in need if getattr(self, n) is None]
        if missing:
            raise ValueError(f"{self.dist} think time needs {', '.join(missing)}")
        for n in ("value", "mean", "low", "high"):
            v = getattr(self, n)
            if v is not None and (v < 0 or not math.isfinite(v)):
                raise ValueError(f"think time {n} must be a non-negative number of seconds, got {v}")
        if self.dist == "uniform" and self.low > self.high:
            raise ValueError(f"think time low ({self.low}) is above high ({self.high})")
        return self

    def build(self) -> Delay:
        if self.dist == "uniform":
            return Delay("uniform", low=self.low, high=self.high)
        return Delay(self.dist, mean=self.value if self.dist == "fixed" else self.mean)


class _ConversationModel(_Strict):
    turns: _DistModel | Annotated[int, Field(le=MAX_REQUESTS)]
    user: _DistModel | Annotated[int, Field(le=MAX_TOKENS)] | None = None
    think_time_s: _DelayModel | _Seconds = 0.0

    @field_validator("think_time_s")
    @classmethod
    def _think(cls, v):
        if isinstance(v, float) and (v < 0 or not math.isfinite(v)):
            raise ValueError(f"think_time_s must be a non-negative number of seconds, got {v}")
        return v


class _WorkloadModel(_Strict):
    name: str | None = Field(None, max_length=256)
    description: str = Field("", max_length=10_000)
    arrival: _ArrivalModel
    prompt: _DistModel | Annotated[int, Field(le=MAX_TOKENS)]
    output: _DistModel | Annotated[int, Field(le=MAX_TOKENS)]
    prefixes: list[_PrefixModel] = Field([], max_length=MAX_PREFIXES)
    conversation: _ConversationModel | None = None
    requests: Annotated[int, Field(le=MAX_REQUESTS)] | None = None
    duration_s: Annotated[float, Field(le=MAX_DURATION_S, allow_inf_nan=False)] | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    warmup: Annotated[int, Field(le=MAX_REQUESTS)] = 0

    @model_validator(mode="after")
    def _check(self) -> _WorkloadModel:
        if self.requests is not None and self.requests < 1:
            raise ValueError(f"requests must be a positive integer, got {self.requests}")
        if self.duration_s is not None and self.duration_s <= 0:
            raise ValueError(f"duration_s must be positive, got {self.duration_s}")
        if self.warmup < 0:
            raise ValueError(f"warmup must not be negative, got {self.warmup}")
        if sum(p.share for p in self.prefixes) > 1 + 1e-9:
            raise ValueError("prefix shares add up to more than 1")
        if len({p.id for p in self.prefixes}) != len(self.prefixes):
            raise ValueError("prefix ids must be unique")
        return self


def _dist(m: _DistModel | int, base: Path | None, where: str) -> Dist:
    if isinstance(m, int):
        if m < 1:
            raise VazaoError(f"{where}: a fixed length must be positive, got {m}")
        return Dist("fixed", value=float(m))
    values = tuple(m.values or ())
    if m.dist == "empirical" and m.file:
        values = tuple(_read_lengths(_resolve(m.file, base), m.column, where))
    return Dist(m.dist, value=m.value, low=m.low, high=m.high, mean=m.mean, std=m.std, median=m.median,
                sigma=m.sigma, values=values, min=m.min, max=m.max)


def _resolve(name: str, base: Path | None) -> Path:
    p = Path(name).expanduser()
    return p if p.is_absolute() or base is None else base / p


def _csv_rows(text: str, what: str) -> list[dict]:
    try:
        return list(csv.DictReader(text.splitlines()))
    except csv.Error as exc:  # a NUL byte, a field past csv's size limit
        raise VazaoError(f"{what} is not a readable CSV: {exc}") from None


def _read_lengths(path: Path, column: str | None, where: str) -> list[int]:
    """Lengths from a file: one integer per line, or a CSV column (header row)."""
    what = f"{where}: lengths file"
    text = inputs.read_text(inputs.input_stream(path, what), what)
    shown = inputs._show(path)
    out: list[int] = []
    if column:
        rows = _csv_rows(text, f"{what} {shown}")
        if rows and column not in rows[0]:
            names = ", ".join(str(c)[:40] for c in list(rows[0])[:20])
            raise VazaoError(f"{where}: {shown} has no column {column!r} (columns: {names})")
        cells = [(i + 2, r[column]) for i, r in enumerate(rows)]
    else:
        cells = [(i + 1, line.strip()) for i, line in enumerate(text.splitlines()) if line.strip()]
    if len(cells) > MAX_REQUESTS:
        raise VazaoError(f"{where}: {shown} holds {len(cells):,} lengths; at most {MAX_REQUESTS:,}")
    for line_no, cell in cells:
        out.append(int(inputs.number(cell, f"{where}: {shown} line {line_no}: token count", minimum=1,
                                     maximum=MAX_TOKENS, integer=True)))
    if not out:
        raise VazaoError(f"{where}: {shown} holds no lengths")
    return out


def _timestamp(cell: Any, at: str) -> float:
    try:
        return float(inputs.number(cell, f"{at}: timestamp", minimum=0))
    except VazaoError:
        if isinstance(cell, str) and cell.strip():
            try:
                float(cell.strip().replace("_", ""))
            except ValueError:
                raise VazaoError(f"{at}: {cell.strip()[:40]!r} is not a timestamp") from None
        raise


def _read_trace(path: Path) -> tuple[list[float], list[int], list[int]]:
    """A trace: one timestamp (seconds) per line, or a CSV with a header holding `timestamp` and,
    optionally, `prompt_tokens` and `output_tokens` columns."""
    shown = inputs._show(path)
    text = inputs.read_text(inputs.input_stream(path, "trace"), "trace")
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) > MAX_REQUESTS + 1:
        raise VazaoError(f"trace {shown}: {len(lines):,} lines; at most {MAX_REQUESTS:,} arrivals")
    ts: list[float] = []
    prompts: list[int] = []
    outputs: list[int] = []
    if lines and "timestamp" in lines[0]:
        rows = _csv_rows("\n".join(lines), f"trace {shown}")
        if rows and "timestamp" not in rows[0]:
            raise VazaoError(f"trace {shown}: the header has no `timestamp` column")
        for i, row in enumerate(rows, start=2):
            at = f"trace {shown} line {i}"
            ts.append(_timestamp(row.get("timestamp"), at))
            if row.get("prompt_tokens"):
                prompts.append(int(inputs.number(row["prompt_tokens"], f"{at}: prompt_tokens", minimum=1,
                                                 maximum=MAX_TOKENS, integer=True)))
            if row.get("output_tokens"):
                outputs.append(int(inputs.number(row["output_tokens"], f"{at}: output_tokens", minimum=1,
                                                 maximum=MAX_TOKENS, integer=True)))
        if prompts and len(prompts) != len(ts) or outputs and len(outputs) != len(ts):
            raise VazaoError(f"trace {shown}: prompt_tokens/output_tokens must be given on every line or none")
    else:
        for i, ln in enumerate(lines, start=1):
            ts.append(_timestamp(ln.split(",")[0], f"trace {shown} line {i}"))
    return ts, prompts, outputs


def _check_trace(ts: list[float], where: str) -> None:
    if not ts:
        raise VazaoError(f"{where}: the trace holds no timestamps")
    for i in range(len(ts)):
        if not math.isfinite(ts[i]) or ts[i] < 0:
            raise VazaoError(f"{where}: timestamp {i + 1} ({ts[i]}) must be a finite, non-negative second")
        if i and ts[i] < ts[i - 1]:
            raise VazaoError(f"{where}: timestamps are not monotonic: entry {i + 1} ({ts[i]:g} s) comes "
                             f"before entry {i} ({ts[i - 1]:g} s)")


def _arrival(m: _ArrivalModel, base: Path | None) -> Arrival:
    if m.kind == "trace":
        if m.file:
            path = _resolve(m.file, base)
            ts, prompts, outputs = _read_trace(path)
            _check_trace(ts, f"trace {path}")
        else:
            ts, prompts, outputs = list(m.timestamps or ()), [], []
            _check_trace(ts, "arrival.timestamps")
        if any(v <= 0 for v in prompts + outputs):
            raise VazaoError("trace token counts must be positive")
        t0 = ts[0]
        return Arrival("trace", timestamps=tuple(t - t0 for t in ts), trace_prompt=tuple(prompts),
                       trace_output=tuple(outputs))
    return Arrival(m.kind, rate=m.rate, concurrency=m.concurrency, burst_size=m.size,
                   burst_interval_s=m.interval_s)


def workload_from_dict(data: Mapping[str, Any], *, name: str = "custom", base: Path | None = None,
                       where: str = "workload") -> Workload:
    """Validate a parsed YAML mapping (clear one-line messages) and build the Workload."""
    if not isinstance(data, Mapping):
        raise VazaoError(f"{where}: expected a mapping of workload settings at the top level")
    try:
        m = _WorkloadModel.model_validate(dict(data))
    except ValidationError as exc:
        raise VazaoError(f"{where}: {_explain(exc)}") from None
    conv = None
    if m.conversation:
        turns = _dist(m.conversation.turns, base, f"{where}: conversation.turns")
        user = _dist(m.conversation.user, base, f"{where}: conversation.user") if m.conversation.user else None
        think = m.conversation.think_time_s
        delay = think.build() if isinstance(think, _DelayModel) else Delay("fixed", mean=float(think))
        conv = Conversation(turns, user, delay)
    w = Workload(
        name=m.name or name,
        arrival=_arrival(m.arrival, base),
        prompt=_dist(m.prompt, base, f"{where}: prompt"),
        output=_dist(m.output, base, f"{where}: output"),
        prefixes=tuple(Prefix(p.id, p.tokens, p.share) for p in m.prefixes),
        conversation=conv,
        requests=m.requests,
        duration_s=m.duration_s,
        seed=m.seed,
        warmup=m.warmup,
        description=m.description,
    )
    return w.with_overrides()


def _explain(exc: ValidationError) -> str:
    parts = []
    errors = exc.errors()
    for err in errors:
        loc = ".".join(str(x) for x in err["loc"] if not (isinstance(x, str) and x.startswith("function-")))
        # pydantic tries `int` before the distribution mapping: report the mapping's complaint
        # (a sibling error of the same union member, one level up)
        if err["type"] in ("int_type", "int_parsing") and len(err["loc"]) > 1 and any(
                e is not err and len(e["loc"]) >= len(err["loc"]) and e["loc"][:len(err["loc"]) - 1] == err["loc"][:-1]
                for e in errors):
            continue
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "missing":
            msg = "missing required field"
        elif err["type"] == "extra_forbidden":
            msg = "unknown field"
        elif err["type"] in ("model_type", "model_attributes_type", "dict_type"):
            msg = f"expected a mapping of settings (a length may also be a plain integer), got {err['input']!r}"
        loc = loc.replace("._DistModel", "").replace("_DistModel", "")
        parts.append(f"{loc}: {msg}" if loc else msg)
    if not parts:
        first = errors[0]
        parts.append(f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}")
    return "; ".join(dict.fromkeys(parts))[:500]


def _exists(path: Path) -> bool:
    try:
        path.stat()
    except (OSError, ValueError):  # absent, a name too long for the file system, a NUL byte
        return False
    return True


def builtin_workloads() -> list[str]:
    folder = resources.files("vazao.examples")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_workload(spec: str, *, requests: int | None = None, rate: float | None = None,
                  concurrency: int | None = None, seed: int | None = None,
                  duration_s: float | None = None) -> Workload:
    """A built-in name (chat, rag, batch, agent, summarize, support) or a YAML path, with overrides."""
    if not isinstance(spec, str) or not spec.strip():
        raise VazaoError("workload: give a built-in name or a YAML file")
    if len(spec) > 4096:
        raise VazaoError(f"workload {spec[:40]!r}… is {len(spec):,} characters: neither a built-in name nor a path")
    path = Path(spec).expanduser()
    if path.suffix in (".yaml", ".yml") or _exists(path) or "/" in spec:
        what = "workload file"
        text = inputs.read_text(inputs.input_stream(path, what), what, max_bytes=MAX_WORKLOAD_BYTES)
        where, name, base = f"workload {inputs._show(path.name)}", path.stem[:256], path.parent
    else:
        if spec not in builtin_workloads():
            from vazao.errors import NotFoundError

            if len(spec) > 256:
                raise VazaoError(f"unknown workload {spec[:40]!r}… ({len(spec):,} characters)")
            raise NotFoundError("workload", spec, builtin_workloads())
        text = resources.files("vazao.examples").joinpath(f"{spec}.yaml").read_text(encoding="utf-8")
        where, name, base = f"workload {spec}", spec, None
    data = inputs.loads_yaml(text, where)
    w = workload_from_dict(data or {}, name=name, base=base, where=where)
    return w.with_overrides(requests=requests, rate=rate, concurrency=concurrency, seed=seed,
                            duration_s=duration_s)
