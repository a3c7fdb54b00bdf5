"""An agentic task: `agents` agents, each making `calls` LLM calls of `context` prompt tokens and
`reply` answer tokens (seed 000_9652c48a9e6fbd49.txt: 20 calls × (5,000 + 2,000) = 140,000 tokens per
agent; five agents ≈ 700,000 tokens per user request). Optionally the first `cached_context`
tokens of every call are a stable prefix: each agent's first call writes it, its later calls read it."""

from __future__ import annotations

from dataclasses import dataclass

from vazao import limits
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


# Anthropic's multipliers as seed 004 (004_9706bef9153e5571.txt, line 51) reports them: an agent uses about
# four times a chat's tokens, a multi-agent system about fifteen times.
SEED_MULTIPLIERS = {"agent": 4.0, "multi-agent": 15.0}


@dataclass(frozen=True)
class AgentLoop:
    """An agent as a loop, not a flat context: each call re-sends everything before it. Call k's prompt
    is the first prompt (`context`: system prompt, tools and task) plus every earlier call's reply,
    reasoning kept in the history (`history_reasoning`) and tool output (`tool`) — so the prompt grows
    by (reply + tool) tokens a call. `agents` run the loop side by side (sub-agents); with `merge_reply`
    > 0 an orchestrator's last call reads every agent's final reply and writes its own.

    With prompt caching, call k reads from the cache the prompt call k − 1 sent and writes what was
    appended since (the provider's incremental cache: a breakpoint at the end of each call's prompt);
    the first call writes its whole prompt."""

    calls: int
    context: int  # the first call's prompt tokens
    reply: int  # answer tokens per call
    tool: int = 0  # tool-output tokens appended to the history after each call
    agents: int = 1
    reasoning: int = 0  # thinking tokens per call, billed as output
    history_reasoning: bool = False  # whether the thinking is re-sent with the history
    merge_reply: int = 0  # the orchestrator's merge call's answer (0: no merge call)

    def __post_init__(self) -> None:
        for name in ("calls", "agents"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise VazaoError(f"{name} must be a positive integer, got {v!r}")
        if self.calls > limits.MAX_LOOP_CALLS:
            raise VazaoError(f"calls of a loop must be at most {limits.MAX_LOOP_CALLS:,} (each is its own bill "
                             f"line), got {self.calls:,}", parameter="calls")
        for name in ("context", "reply", "tool", "reasoning", "merge_reply"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 0:
                raise VazaoError(f"{name} must be a non-negative integer, got {v!r}")

    @property
    def growth(self) -> int:
        """Tokens the history grows by per call."""
        return self.reply + self.tool + (self.reasoning if self.history_reasoning else 0)

    def prompt(self, k: int) -> int:
        """Call k's prompt tokens (k from 1)."""
        return self.context + (k - 1) * self.growth

    @property
    def merge_prompt(self) -> int:
        return self.context + self.agents * self.reply if self.merge_reply else 0

    @property
    def tokens_per_agent(self) -> int:
        """Every token one agent's calls send and receive: Σ prompt_k + calls × (reply + reasoning)."""
        sent = self.calls * self.context + self.growth * self.calls * (self.calls - 1) // 2
        return sent + self.calls * (self.reply + self.reasoning)

    @property
    def tokens_per_task(self) -> int:
        return self.agents * self.tokens_per_agent + (self.merge_prompt + self.merge_reply if self.merge_reply else 0)

    @property
    def flat_tokens_per_task(self) -> int:
        """What the flat count (AgentTask: every call `context` + `reply`) says for the same calls."""
        return self.agents * self.calls * (self.context + self.reply + self.reasoning)

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
