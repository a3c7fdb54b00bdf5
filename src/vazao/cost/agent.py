"""An agentic task: `agents` agents, each making `calls` LLM calls of `context` prompt tokens and
`reply` answer tokens (seed 000_9652c48a9e6fbd49.txt: 20 calls × (5,000 + 2,000) = 140,000 tokens per
agent; five agents ≈ 700,000 tokens per user request). Optionally the first `cached_context`
tokens of every call are a stable prefix: each agent's first call writes it, its later calls read it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from vazao.catalog.prices import PriceTable, usd_str
from vazao.cost.ledger import Bill, TokenLedger, line, make_bill
from vazao.cost.money import MICRO, to_decimal
from vazao.errors import VazaoError
from vazao.resultfiles import from_document
from vazao.results import TaskSummary
from vazao.workload.agent import AgentShape


@dataclass(frozen=True)
class AgentTask:
    calls: int
    context: int  # prompt tokens per call
    reply: int  # answer tokens per call
    agents: int = 1
    cached_context: int = 0  # leading prompt tokens identical across one agent's calls
    reasoning: int = 0  # thinking tokens per call, billed as output

    def __post_init__(self) -> None:
        for name in ("calls", "agents"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise VazaoError(f"{name} must be a positive integer, got {v!r}")
        for name in ("context", "reply", "cached_context", "reasoning"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                raise VazaoError(f"{name} must be a non-negative integer, got {v!r}")
        if self.cached_context > self.context:
            raise VazaoError(f"cached_context ({self.cached_context}) exceeds context ({self.context})")

    @property
    def tokens_per_agent(self) -> int:
        return self.calls * (self.context + self.reply + self.reasoning)

    @property
    def tokens_per_task(self) -> int:
        return self.agents * self.tokens_per_agent


def bill_agent(task: AgentTask, table: PriceTable, cache_ttl: str | None = None, batch: bool = False) -> Bill:
    """One task's bill. Caching applies only with cache_ttl and cached_context > 0."""
    cached = cache_ttl is not None and task.cached_context > 0
    if cached and table.base.cache_read is None:
        raise VazaoError(f"{table.id} lists no prompt-cache price; bill without prompt caching")
    n = task.agents
    if not cached:
        led = TokenLedger(new_input=task.context, output=task.reply, reasoning=task.reasoning)
        lines = [line(table, "agent call", led, n * task.calls, batch)]
    else:
        rest = task.context - task.cached_context
        first = TokenLedger(new_input=rest, cache_write=task.cached_context, output=task.reply,
                            reasoning=task.reasoning)
        later = TokenLedger(new_input=rest, cache_read=task.cached_context, output=task.reply,
                            reasoning=task.reasoning)
        lines = [line(table, "first call (cache write)", first, n, batch, cache_ttl)]
        if task.calls > 1:
            lines.append(line(table, "later calls (cache read)", later, n * (task.calls - 1), batch, cache_ttl))
    return make_bill(table, lines, batch, cache_ttl if cached else None)


# Anthropic's multipliers as seed 004 (004_9706bef9153e5571.txt, line 51) reports them: an agent uses about
# four times a chat's tokens, a multi-agent system about fifteen times.
SEED_MULTIPLIERS = {"agent": 4.0, "multi-agent": 15.0}


@dataclass(frozen=True)
class AgentLoop(AgentShape):
    """An agent as a loop, not a flat context: each call re-sends everything before it. Call k's prompt
    is the first prompt (`context`: system prompt, tools and task) plus every earlier call's reply,
    reasoning kept in the history (`history_reasoning`) and tool output (`tool`) — so the prompt grows
    by (reply + tool) tokens a call. `agents` run the loop side by side (sub-agents); with `merge_reply`
    > 0 an orchestrator's last call reads every agent's final reply and writes its own.

    The token arithmetic (fields, `prompt(k)`, `growth`, the totals) is vazao.workload.agent.AgentShape,
    which the simulator's `agent` workload draws its requests from: one description, two users.

    With prompt caching, call k reads from the cache the prompt call k − 1 sent and writes what was
    appended since (the provider's incremental cache: a breakpoint at the end of each call's prompt);
    the first call writes its whole prompt."""

    def multipliers(self) -> dict[str, float]:
        """What the loop implies, beside seed 004's multipliers. Seed 004 (Anthropic) puts an agent at ≈ 4×
        a chat's tokens and a multi-agent system at ≈ 15×: ≈ 3.75× one agent, a ratio the loop gives too
        (its task over one agent). The chat itself is not stated, so the 4× and 15× are not checked
        directly. `history` is the loop's own multiplier over the flat count (every call only the first
        prompt): what re-sending the history costs."""
        return {"history_over_flat": self.tokens_per_task / self.flat_tokens_per_task,
                "task_over_one_agent": self.tokens_per_task / self.tokens_per_agent,
                "seed_multi_agent_over_agent": SEED_MULTIPLIERS["multi-agent"] / SEED_MULTIPLIERS["agent"]}

    def ledgers(self, cached: bool) -> list[tuple[str, TokenLedger, int]]:
        """(label, one call's ledger, how many such calls in the task) per call of the loop, then the merge."""
        out = []
        for k in range(1, self.calls + 1):
            p = self.prompt(k)
            if cached:
                seen = self.prompt(k - 1) if k > 1 else 0
                led = TokenLedger(cache_read=seen, cache_write=p - seen, output=self.reply, reasoning=self.reasoning)
            else:
                led = TokenLedger(new_input=p, output=self.reply, reasoning=self.reasoning)
            out.append((f"call {k}", led, self.agents))
        if self.merge_reply:
            # the merge call's prompt: the shared first prompt (cached by then) and every agent's final reply
            led = (TokenLedger(cache_read=self.context, cache_write=self.merge_prompt - self.context,
                               output=self.merge_reply) if cached
                   else TokenLedger(new_input=self.merge_prompt, output=self.merge_reply))
            out.append(("merge", led, 1))
        return out


def bill_agent_loop(loop: AgentLoop, table: PriceTable, cache_ttl: str | None = None, batch: bool = False) -> Bill:
    """One task's bill, call by call (each call's prompt decides its own long-context tier). With
    cache_ttl the growing prefix is cached as AgentLoop describes."""
    cached = cache_ttl is not None
    if cached and table.base.cache_read is None:
        raise VazaoError(f"{table.id} lists no prompt-cache price; bill without prompt caching")
    lines = [line(table, label, led, n, batch, cache_ttl if cached else None) for label, led, n in loop.ledgers(cached)]
    return make_bill(table, lines, batch, cache_ttl if cached else None)


@dataclass(frozen=True)
class SelfHostedTask:
    """One agent task served on your own GPUs, from a simulated (or measured) run of the agent workload:
    its latency and tokens per task (results.TaskSummary) and what a task costs at the run's load: the
    deployment's $/h over the tasks it finished per hour (idle time between tasks included, as the run had it)."""

    deployment: str
    gpus: int
    usd_per_gpu_hour: Decimal
    usd_per_gpu_hour_source: str
    tasks: TaskSummary
    usd_per_task: Decimal | None  # None when no task finished

    def to_json(self) -> dict:
        return {"deployment": self.deployment, "gpus": self.gpus, "usd_per_gpu_hour": usd_str(self.usd_per_gpu_hour),
                "usd_per_gpu_hour_source": self.usd_per_gpu_hour_source, "tasks": self.tasks.to_json(),
                "usd_per_task": None if self.usd_per_task is None else usd_str(self.usd_per_task)}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SelfHostedTask:
        return from_document(cls, d)


def selfhosted_task(label: str, gpus: int, tasks: TaskSummary, usd_per_gpu_hour: Decimal,
                    rate_source: str) -> SelfHostedTask:
    """$ per task = GPUs × $/GPU-h × the run's duration / the tasks it finished."""
    if gpus < 1:
        raise VazaoError(f"gpus (the GPU count) must be positive, got {gpus}")
    per = None
    if tasks.tasks and tasks.duration_s > 0:
        hours = to_decimal(tasks.duration_s) / 3600
        per = (usd_per_gpu_hour * gpus * hours / tasks.tasks).quantize(MICRO / 1000, rounding=ROUND_HALF_UP)
    return SelfHostedTask(label, gpus, usd_per_gpu_hour, rate_source, tasks, per)
