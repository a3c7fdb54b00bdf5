"""The YAML edge: pydantic models of a workload file, each value bounded by the maxima in
workload.types, with one-line messages for what is wrong."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from vazao import limits
from vazao.workload.types import (
    ARRIVALS,
    DISTS,
    Delay,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


_Tokens = Annotated[int, Field(ge=0, le=limits.MAX_REQUEST_TOKENS)]
_TokensF = Annotated[float, Field(ge=0, le=limits.MAX_REQUEST_TOKENS, allow_inf_nan=False)]


class _DistModel(_Strict):
    dist: str
    value: _TokensF | None = None
    low: _Tokens | None = None
    high: _Tokens | None = None
    mean: _TokensF | None = None
    std: _TokensF | None = None
    median: _TokensF | None = None
    sigma: Annotated[float, Field(ge=0, le=limits.MAX_SIGMA, allow_inf_nan=False)] | None = None
    values: list[_Tokens] | None = Field(None, max_length=limits.MAX_REQUESTS)
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
    rate: Annotated[float, Field(le=limits.MAX_RATE)] | None = None
    concurrency: Annotated[int, Field(le=limits.MAX_CONCURRENCY)] | None = None
    size: Annotated[int, Field(le=limits.MAX_REQUESTS)] | None = None
    interval_s: Annotated[float, Field(le=limits.MAX_RUN_S, allow_inf_nan=False)] | None = None
    file: str | None = Field(None, max_length=4096)
    timestamps: list[float] | None = Field(None, max_length=limits.MAX_REQUESTS)

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
    tokens: Annotated[int, Field(le=limits.MAX_REQUEST_TOKENS)]
    share: float = 1.0

    @model_validator(mode="after")
    def _check(self) -> _PrefixModel:
        if self.tokens < 1:
            raise ValueError(f"prefix {self.id}: tokens must be positive, got {self.tokens}")
        if not 0 < self.share <= 1:
            raise ValueError(f"prefix {self.id}: share must be in (0, 1], got {self.share}")
        return self


_Seconds = Annotated[float, Field(le=limits.MAX_RUN_S)]


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


def _seconds_at_least_0(v, name: str):
    """A delay given as seconds (a distribution passes as is): finite and not negative."""
    if isinstance(v, float) and (v < 0 or not math.isfinite(v)):
        raise ValueError(f"{name} must be a non-negative number of seconds, got {v}")
    return v


class _ConversationModel(_Strict):
    turns: _DistModel | Annotated[int, Field(le=limits.MAX_REQUESTS)]
    user: _DistModel | Annotated[int, Field(le=limits.MAX_REQUEST_TOKENS)] | None = None
    think_time_s: _DelayModel | _Seconds = 0.0

    @field_validator("think_time_s")
    @classmethod
    def _think(cls, v):
        return _seconds_at_least_0(v, "think_time_s")


class _AgentModel(_Strict):
    """An agent task (vazao.workload.agent.AgentShape) and the latency of the tools between its calls."""

    calls: Annotated[int, Field(ge=1, le=limits.MAX_LOOP_CALLS)]
    context: Annotated[int, Field(ge=1, le=limits.MAX_REQUEST_TOKENS)]
    reply: Annotated[int, Field(ge=1, le=limits.MAX_REQUEST_TOKENS)]
    tool: _Tokens = 0
    agents: Annotated[int, Field(ge=1, le=limits.MAX_LOOP_CALLS)] = 1
    merge_reply: _Tokens = 0
    tool_latency_s: _DelayModel | _Seconds = 0.0
    tasks: Annotated[int, Field(ge=1, le=limits.MAX_REQUESTS)] | None = None

    @field_validator("tool_latency_s")
    @classmethod
    def _latency(cls, v):
        return _seconds_at_least_0(v, "tool_latency_s")


class _WorkloadModel(_Strict):
    name: str | None = Field(None, max_length=256)
    description: str = Field("", max_length=10_000)
    arrival: _ArrivalModel
    # required unless `agent` gives every call's lengths
    prompt: _DistModel | Annotated[int, Field(le=limits.MAX_REQUEST_TOKENS)] | None = None
    output: _DistModel | Annotated[int, Field(le=limits.MAX_REQUEST_TOKENS)] | None = None
    prefixes: list[_PrefixModel] = Field([], max_length=limits.MAX_PREFIXES)
    conversation: _ConversationModel | None = None
    agent: _AgentModel | None = None
    requests: Annotated[int, Field(le=limits.MAX_REQUESTS)] | None = None
    duration_s: Annotated[float, Field(le=limits.MAX_RUN_S, allow_inf_nan=False)] | None = None
    seed: Annotated[int, Field(ge=0, lt=limits.SEED_LIMIT)] = 0
    warmup: Annotated[int, Field(le=limits.MAX_REQUESTS)] = 0

    @model_validator(mode="after")
    def _check(self) -> _WorkloadModel:
        if self.agent is None:
            missing = [f"{n}: missing required field" for n in ("prompt", "output") if getattr(self, n) is None]
            if missing:
                raise ValueError("; ".join(missing))
        else:
            given = [n for n in ("prompt", "output", "conversation") if getattr(self, n) is not None]
            if self.prefixes:
                given.append("prefixes")
            if given:
                raise ValueError(f"agent: an agent workload's calls take their lengths from `agent`; drop "
                                 f"{', '.join(given)}")
            if self.agent.tasks is not None and self.requests is not None:
                raise ValueError("agent.tasks and requests both set: give one (requests counts calls)")
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
