"""An agent loop's shape, the pure token arithmetic both its users share: the API bill
(vazao.cost.agent.AgentLoop, which adds the ledgers) and the simulator/bench workload (an `agent`
block of a workload file, workload.specs). Here, below both, so that neither imports the other.

Call k of one agent sends the first prompt (`context`) plus every earlier reply, thinking kept in the
history and tool output: context + (k − 1) × growth. `agents` run the loop side by side; with
`merge_reply` > 0 an orchestrator's last call reads the first prompt and every agent's final reply."""

from __future__ import annotations

from dataclasses import dataclass

from vazao import limits
from vazao.errors import VazaoError


@dataclass(frozen=True)
class AgentShape:
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

    @property
    def requests_per_task(self) -> int:
        """LLM calls of one task: every agent's calls, and the merge."""
        return self.agents * self.calls + (1 if self.merge_reply else 0)
