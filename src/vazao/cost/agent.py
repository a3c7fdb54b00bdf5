"""An agentic task: `agents` agents, each making `calls` LLM calls of `context` prompt tokens and
`reply` answer tokens (seed 000_9652c48a9e6fbd49.txt: 20 calls × (5,000 + 2,000) = 140,000 tokens per
agent; five agents ≈ 700,000 tokens per user request). Optionally the first `cached_context`
tokens of every call are a stable prefix: each agent's first call writes it, its later calls read it."""

from __future__ import annotations

from dataclasses import dataclass

from vazao.catalog.prices import PriceTable
from vazao.cost.ledger import Bill, TokenLedger, line, make_bill
from vazao.errors import VazaoError


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
