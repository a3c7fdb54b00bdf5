"""The workload's types: length and think-time distributions, arrivals, shared prefixes,
conversations, one planned request (RequestSpec) and the Workload itself, with the sane maxima
every workload is checked against. Workload.specs() draws the requests (workload.plan)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.workload.agent import AgentShape

DISTS = ("fixed", "uniform", "normal", "lognormal", "empirical")
ARRIVALS = ("poisson", "concurrency", "burst", "trace")

# Sane maxima, checked before a plan is drawn: a workload cannot ask a simulation or a bench for
# 10^12 requests or 10^30-token prompts.


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
        hi = self.max if self.max is not None else limits.MAX_REQUEST_TOKENS  # a lognormal tail stays inside int64
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
class MultiTurn:
    """Multi-turn sessions: turn t's prompt = prefix + every earlier user message and reply + the new
    user message (drawn from `user`, else from the workload's prompt distribution)."""

    turns: Dist
    user: Dist | None = None
    think: Delay = Delay()  # between a reply's last token and the next turn


@dataclass(frozen=True)
class AgentTasks:
    """Agent tasks as traffic: each arrival is one task of `loop.agents` agents running `loop.calls`
    dependent calls side by side (call k after call k − 1 and `tool_latency`, its prompt the growing
    history: vazao.workload.agent.AgentShape), then, with `loop.merge_reply`, a merge call after every
    agent's last call. The task's first prompt (`loop.context`) is a prefix shared by its calls."""

    loop: AgentShape
    tool_latency: Delay = Delay()  # between a call's last token and the next call of its agent

    def __post_init__(self) -> None:
        lp = self.loop
        if lp.context < 1:
            raise VazaoError(f"an agent task's context must be positive, got {lp.context}")
        if lp.reply < 1:
            raise VazaoError(f"an agent call's reply must be positive, got {lp.reply}")
        if lp.reasoning and not lp.history_reasoning:
            # a later call's prompt would not repeat the previous call's output: the simulator's prefix cache
            # keys a conversation's blocks by position, so the history must be the previous prompt and output
            raise VazaoError("an agent workload re-sends its thinking (history_reasoning) or has none")
        longest = lp.prompt(lp.calls) + lp.reply + lp.reasoning
        if max(longest, lp.merge_prompt + lp.merge_reply) > limits.MAX_REQUEST_TOKENS:
            raise VazaoError(f"an agent task's last call holds {longest:,} tokens, more than "
                             f"{limits.MAX_REQUEST_TOKENS:,}")
        if lp.requests_per_task > limits.MAX_REQUESTS:
            raise VazaoError(f"an agent task of {lp.requests_per_task:,} calls is more than "
                             f"{limits.MAX_REQUESTS:,} requests")

    def describe(self) -> str:
        lp = self.loop
        merge = f", merge reply {lp.merge_reply}" if lp.merge_reply else ""
        return (f"agent tasks: {lp.agents} × {lp.calls} calls, context {lp.context} + {lp.growth}/call "
                f"(reply {lp.reply}, tool {lp.tool}){merge}, tool latency {self.tool_latency.describe()}")


class RequestSpec(NamedTuple):
    """One planned request. A NamedTuple: built and read at tuple speed in the simulator's hot path,
    every field read by name (a new field cannot shift the others)."""

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
    think_time_s: float = 0.0  # delay after `after` (and every `join`) completes
    join: tuple[str, ...] = ()  # further request_ids this one waits for besides `after` (a merge of agents)
    task_id: str | None = None  # the task it belongs to: a task's roots start together, a closed-loop slot is a task


@dataclass(frozen=True)
class Workload:
    name: str
    arrival: Arrival
    prompt: Dist
    output: Dist
    prefixes: tuple[Prefix, ...] = ()
    conversation: MultiTurn | None = None
    requests: int | None = None  # with `agent`: `agent.tasks` in a file sets whole tasks; this may cut the last
    duration_s: float | None = None
    seed: int = 0
    warmup: int = 0  # the first `warmup` requests of the plan are left out of summaries
    description: str = ""
    agent: AgentTasks | None = None  # agent tasks instead of lone requests or conversations

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
            rate = inputs.positive(rate, "rate (requests per second)", maximum=limits.MAX_RATE)
            w = replace(w, arrival=Arrival("poisson", rate=float(rate)))
        if concurrency is not None:
            concurrency = _positive_int(concurrency, "concurrency", limits.MAX_CONCURRENCY)
            w = replace(w, arrival=Arrival("concurrency", concurrency=int(concurrency)))
        if requests is not None:
            w = replace(w, requests=_positive_int(requests, "requests", limits.MAX_REQUESTS))
        if duration_s is not None:
            duration_s = inputs.positive(duration_s, "duration (seconds)", maximum=limits.MAX_RUN_S)
            w = replace(w, duration_s=float(duration_s))
        if seed is not None:
            seed = inputs.number(seed, "seed", minimum=0, maximum=limits.SEED_LIMIT - 1, integer=True)
            w = replace(w, seed=int(seed))
        if w.arrival.kind == "trace" and w.requests is None:
            w = replace(w, requests=len(w.arrival.timestamps) * (w.agent.loop.requests_per_task if w.agent else 1))
        _check_size(w)
        if not w.bounded and w.duration_s is None:
            raise VazaoError(f"workload {w.name}: set `requests` or `duration_s`")
        if (w.arrival.kind == "burst" and w.requests is None
                and not (w.arrival.burst_size and w.arrival.burst_interval_s)):
            raise VazaoError(f"workload {w.name}: a single burst needs `requests` (how many arrive at once)")
        if w.warmup and w.requests is not None and w.warmup >= w.requests:
            raise VazaoError(f"workload {w.name}: warmup ({w.warmup}) must be below requests ({w.requests})")
        return w

    def describe(self, arrival: str | None = None) -> str:
        """One line of what is run; `arrival` replaces the file's own (a sweep runs others)."""
        parts = [arrival or self.arrival.describe(), f"prompt {self.prompt.describe()}",
                 f"output {self.output.describe()}"]
        if self.prefixes:
            parts.append(", ".join(f"prefix {p.id} {p.tokens} tok × {p.share:.0%}" for p in self.prefixes))
        if self.agent:
            parts[1:3] = [self.agent.describe()]
        if self.conversation:
            parts.append(f"{self.conversation.turns.describe()} turns, think {self.conversation.think.describe()}")
        if self.requests:
            parts.append(f"{self.requests:,} requests")
        if self.duration_s:
            parts.append(f"{self.duration_s:g} s")
        return "; ".join(parts)

    def specs(self) -> list[RequestSpec]:
        """Every request of the run, deterministic for the seed (see vazao.workload.specs)."""
        if not self.bounded:
            raise VazaoError(f"workload {self.name}: a closed loop with only a duration has no finite "
                             "plan; set `requests` (or iterate iter_specs())")
        return list(self.iter_specs())

    def iter_specs(self) -> Iterator[RequestSpec]:
        """The plan as a stream, so that memory stays flat."""
        from vazao.workload.specs import iter_specs

        return iter_specs(self)


def _positive_int(value: Any, what: str, maximum: int) -> int:
    return int(inputs.number(value, what, minimum=1, maximum=maximum, integer=True))


def _check_size(w: Workload) -> None:
    """A plan bounded only by its duration must still stay under limits.MAX_REQUESTS sessions."""
    if w.requests is not None or w.duration_s is None:
        return
    a = w.arrival
    if a.kind == "poisson":
        sessions = a.rate * w.duration_s * (w.agent.loop.requests_per_task if w.agent else 1)
    elif a.kind == "burst" and a.burst_size and a.burst_interval_s:
        sessions = a.burst_size * (w.duration_s / a.burst_interval_s + 1)
    else:
        return
    if sessions > limits.MAX_REQUESTS:
        raise VazaoError(f"workload {w.name}: {w.duration_s:g} s of {a.describe()} plans about {sessions:,.0f} "
                         f"sessions, more than {limits.MAX_REQUESTS:,}; set `requests` or a shorter duration")

