"""A workload is arrivals (Poisson at a rate, a fixed concurrency in closed loop, bursts, a replayed
trace), prompt and output length distributions, shared prefixes (system prompts used by a share
of requests) and optional multi-turn conversations whose prompt repeats the previous turn's
prompt and reply. `Workload.specs()` turns it into RequestSpecs, deterministically for the seed.

Plan order: roots (a single request, or a conversation's first turn) in arrival order, each
followed at once by its later turns (`after` = the previous turn, `arrival_s` None). Roots of a
closed-loop workload have `arrival_s` None: send when one of the `concurrency` sessions is free.
With a `rate`, Poisson arrivals start sessions (a single request or a whole conversation).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator

import numpy as np

from vazao.workload.agent import AgentShape
from vazao.workload.types import RequestSpec, Workload

_BLOCK = 4096  # values drawn per numpy call; part of what makes a plan reproducible


def iter_specs(w: Workload) -> Iterator[RequestSpec]:
    """Every request of `w` in plan order, drawn as it is read (memory stays flat)."""
    seeds = np.random.SeedSequence(w.seed).spawn(8)  # the first 7 as spawn(7) gave them
    arrivals = _stream(np.random.default_rng(seeds[0]), _draw_gap(w))
    prompts = _stream(np.random.default_rng(seeds[1]), w.prompt.draw)
    user_dist = (w.conversation.user if w.conversation and w.conversation.user else w.prompt)
    users = _stream(np.random.default_rng(seeds[5]), user_dist.draw)
    outputs = _stream(np.random.default_rng(seeds[2]), w.output.draw)
    picks = _stream(np.random.default_rng(seeds[3]), lambda rng, n: rng.random(n))
    turns = (_stream(np.random.default_rng(seeds[4]), w.conversation.turns.draw)
             if w.conversation else None)
    thinks = (_stream(np.random.default_rng(seeds[6]), w.conversation.think.draw)
              if w.conversation else None)
    tools = (_stream(np.random.default_rng(seeds[7]), w.agent.tool_latency.draw) if w.agent else None)
    shares = list(itertools.accumulate(p.share for p in w.prefixes))
    a = w.arrival
    emitted = 0
    clock = 0.0
    session = 0
    while w.requests is None or emitted < w.requests:
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
        if start is not None and w.duration_s is not None and start >= w.duration_s:
            return
        # which prefix
        prefix = None
        if w.prefixes:
            u = next(picks)
            i = bisect.bisect_right(shares, u)
            prefix = w.prefixes[i] if i < len(w.prefixes) else None
        p_id, p_tok = (prefix.id, prefix.tokens) if prefix else (None, 0)
        traced = a.kind == "trace" and a.trace_prompt
        if w.agent is not None:
            assert tools is not None  # drawn for an agent workload
            for spec in _agent_task(w.agent.loop, session, emitted, start, tools):
                if w.requests is not None and emitted >= w.requests:
                    break  # `requests` cuts the plan as it cuts a conversation: the last task may be partial
                yield spec
                emitted += 1
        elif w.conversation is None:
            new = a.trace_prompt[session] if traced else next(prompts)
            out = a.trace_output[session] if (a.kind == "trace" and a.trace_output) else next(outputs)
            yield RequestSpec(str(emitted), start, p_tok + int(new), int(out), p_id, p_tok, None, 1, 0, None, 0.0)
            emitted += 1
        else:
            conv = f"c{session}"
            n_turns = next(turns)
            history, prev = 0, None
            for t in range(1, n_turns + 1):
                if w.requests is not None and emitted >= w.requests:
                    break
                user = next(users)
                out = next(outputs)
                head = history if t > 1 else p_tok
                rid = str(emitted)
                yield RequestSpec(rid, start if t == 1 else None, head + int(user), int(out), p_id, p_tok,
                                  conv, t, history, prev, next(thinks) if t > 1 else 0.0)
                history = head + int(user) + int(out)
                prev = rid
                emitted += 1
        session += 1


def _agent_task(loop: AgentShape, session: int, first: int, start: float | None,
                tools: Iterator[float]) -> Iterator[RequestSpec]:
    """One agent task's requests, in plan order: each agent's calls (call 1 a root released with the task,
    call k after call k − 1 and a tool latency, its prompt repeating call k − 1's prompt and reply), then
    the merge call after every agent's last call. The task's first prompt is its calls' shared prefix."""
    task = f"t{session}"
    n = first
    last: list[str] = []
    for a in range(1, loop.agents + 1):
        conv = f"{task}.a{a}"
        prev: str | None = None
        for k in range(1, loop.calls + 1):
            rid = str(n)
            kept = loop.reasoning if loop.history_reasoning else 0
            history = loop.prompt(k - 1) + loop.reply + kept if k > 1 else 0
            yield RequestSpec(rid, start if k == 1 else None, loop.prompt(k), loop.reply + loop.reasoning, task,
                              loop.context, conv, k, history, prev, next(tools) if k > 1 else 0.0, (), task)
            prev = rid
            n += 1
        assert prev is not None  # calls >= 1
        last.append(prev)
    if loop.merge_reply:
        yield RequestSpec(str(n), None, loop.merge_prompt, loop.merge_reply, task, loop.context, f"{task}.merge",
                          1, 0, last[0], 0.0, tuple(last[1:]), task)


def task_ids(specs: Iterable[RequestSpec]) -> dict[str, str]:
    """request_id → task_id of the requests that belong to a task (agent workloads): what
    results.summarize_tasks groups records by."""
    return {s.request_id: s.task_id for s in specs if s.task_id is not None}


def _draw_gap(w: Workload):
    rate = w.arrival.rate
    return lambda rng, n: rng.exponential(1.0 / rate, size=n)


def _stream(rng: np.random.Generator, draw) -> Iterator:
    """Values drawn from a numpy generator _BLOCK at a time and handed out one by one."""
    while True:
        yield from draw(rng, _BLOCK).tolist()


CONTEXT_SAMPLE = 20_000  # requests drawn to find a workload's longest (0.02 s; the lognormal tails are clipped)
CONTEXT_ROUND = 256  # tokens: llama.cpp's KV block, and a multiple of every paged engine's block


def sample_specs(w: Workload, at_least: int = CONTEXT_SAMPLE) -> list[RequestSpec]:
    """`w`'s own requests (its plan, drawn with its seed) to at least `at_least` of them; a trace's as it is."""
    n = max(at_least, w.requests or 0)
    plan = w.with_overrides(requests=n) if w.arrival.kind != "trace" else w
    return list(plan.iter_specs())


def request_tokens(w: Workload, at_least: int = CONTEXT_SAMPLE) -> list[int]:
    """The tokens each request of `w` holds at its end (prompt with its shared prefix and the conversation
    history it repeats, plus its answer), over sample_specs, ascending."""
    return sorted(r.prompt_tokens + r.output_tokens for r in sample_specs(w, at_least)) or [1]


def longest_request(w: Workload, at_least: int = CONTEXT_SAMPLE) -> int:
    """The most tokens one request of `w` holds at its end (request_tokens): what an engine's per-sequence
    context (vLLM --max-model-len, SGLang --context-length, a llama.cpp slot) must cover so that no request
    is refused."""
    return request_tokens(w, at_least)[-1]


def round_context(need: int, model_max: int) -> int:
    """A per-sequence context of `need` tokens as engines are set to it: rounded up to CONTEXT_ROUND, at most
    the model's own context."""
    return int(min(model_max, -(-max(1, need) // CONTEXT_ROUND) * CONTEXT_ROUND))


def context_for(w: Workload, model_max: int, at_least: int = CONTEXT_SAMPLE) -> int:
    """longest_request as round_context sets it."""
    return round_context(longest_request(w, at_least), model_max)
