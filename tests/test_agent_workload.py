"""The agent loop as a simulator and bench workload (issue 23, "the same loop as a simulator workload"):
one description (vazao.workload.agent.AgentShape, which cost.agent.AgentLoop bills) drawn as dependent
requests — each call after its agent's previous one and a tool latency, its prompt the growing history
whose head the prefix cache keeps, sub-agents side by side, a merge call after every agent — and the
per-task latency, tokens and self-hosted cost of one task.

Seed 000 (000_9652c48a9e6fbd49.txt, line 113): "Um agente que faz 20 chamadas de LLM, cada uma com 5 mil
tokens de contexto e 2 mil tokens de resposta [...] consome 140 mil tokens. Em um sistema multi-agente com
5 agentes cooperando, cada requisição de usuário pode custar 1 milhão de tokens ou mais": the built-in
`agent-loop` workload."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.cost.agent import AgentLoop, SelfHostedTask, selfhosted_task
from vazao.cost.rates import gpu_rate
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.results import RequestRecord, summarize_tasks
from vazao.sim.run import SimResult, simulate
from vazao.workload import load_workload, workload_from_dict
from vazao.workload.specs import task_ids

runner = CliRunner()

# small numbers: 3 agents × 4 calls, 3,000-token first prompt, 300 reply + 200 tool output a call, a merge
SMALL = {"calls": 4, "context": 3000, "reply": 300, "tool": 200, "agents": 3, "merge_reply": 400,
         "tool_latency_s": 0.5}
LOOP = AgentLoop(calls=4, context=3000, reply=300, tool=200, agents=3, merge_reply=400)


def small(**over):
    agent = {**SMALL, **over.pop("agent", {})}
    return workload_from_dict({"arrival": {"kind": "poisson", "rate": 0.05}, "agent": {**agent, "tasks": 5},
                               "seed": 2, **over})


@pytest.fixture(scope="module")
def dep():
    return make_deployment("llama-3.1-8b", "h100-sxm")


def test_the_plan_is_the_loop_agentloop_bills():
    w = small()
    specs = w.specs()
    assert w.requests == len(specs) == 5 * LOOP.requests_per_task == 5 * 13
    task = [s for s in specs if s.task_id == "t0"]
    # every call's prompt is AgentLoop.prompt(k); the task's tokens are AgentLoop's tokens_per_task
    calls = [s for s in task if s.join == () and s.conversation_id != "t0.merge"]
    assert [s.prompt_tokens for s in calls if s.conversation_id == "t0.a1"] == [LOOP.prompt(k) for k in range(1, 5)]
    assert sum(s.prompt_tokens + s.output_tokens for s in task) == LOOP.tokens_per_task == 52_900
    # call k repeats call k − 1's prompt and reply (the history), after it and a tool latency
    a1 = [s for s in task if s.conversation_id == "t0.a1"]
    assert [s.history_tokens for s in a1] == [0] + [p.prompt_tokens + p.output_tokens for p in a1[:-1]]
    assert [s.after for s in a1] == [None] + [p.request_id for p in a1[:-1]]
    assert [s.think_time_s for s in a1] == [0.0, 0.5, 0.5, 0.5]
    # the first prompt is the task's shared prefix; the agents start together; the merge waits for all three
    assert {(s.prefix_id, s.prefix_tokens) for s in task} == {("t0", 3000)}
    roots = [s for s in task if s.after is None]
    assert len(roots) == 3 and len({s.arrival_s for s in roots}) == 1
    merge = task[-1]
    lasts = [s.request_id for s in task if s.turn == 4]
    assert (merge.after, *merge.join) == tuple(lasts)
    assert merge.prompt_tokens == LOOP.merge_prompt and merge.output_tokens == 400


def test_the_seed_000_workload_is_built_in():
    w = load_workload("agent-loop")
    loop = w.agent.loop
    assert (loop.calls, loop.context, loop.reply, loop.agents) == (20, 5_000, 2_000, 5)  # seed 000, line 113
    task = [s for s in w.specs() if s.task_id == "t0"]
    seed = AgentLoop(calls=20, context=5_000, reply=2_000, agents=5)
    assert sum(s.prompt_tokens + s.output_tokens for s in task) == seed.tokens_per_task == 2_600_000
    assert w.requests % seed.requests_per_task == 0


def test_whole_tasks_and_clear_errors():
    # `requests` cuts the plan as it cuts conversations: the last task is partial, and counted incomplete
    cut = small().with_overrides(requests=30)
    assert len(cut.specs()) == 30 and {s.task_id for s in cut.specs()} == {"t0", "t1", "t2"}
    for bad, said in (({"prompt": 100}, "drop prompt"), ({"agent": {"calls": 0}}, "agent.calls"),
                      ({"agent": {"tool_latency_s": -1}}, "tool_latency_s")):
        with pytest.raises(VazaoError, match=said) as e:
            small(**bad)
        assert "\n" not in str(e.value)


def test_the_simulation_keeps_the_dependencies(dep):
    w = small()
    r = simulate(dep, w)
    assert r.completed == w.requests and r.errors == 0 and r.kv_blocks_in_use_at_end == 0
    recs = {x.request_id: x for x in r.records()}
    for s in w.specs():
        x = recs[s.request_id]
        # no call starts before its predecessors end plus the tool latency; a merge after every agent
        for before in ((s.after,) if s.after else ()) + s.join:
            assert x.arrival_s >= recs[before].end_s + s.think_time_s - 1e-9
        if s.join:
            assert x.arrival_s >= max(recs[b].end_s for b in (s.after, *s.join)) - 1e-9
    # the simulated tokens are AgentLoop's
    assert r.prompt_tokens + r.summary.output_tokens == 5 * LOOP.tokens_per_task
    # the history is served by the prefix cache: a later call computes only what was appended
    a1 = [s for s in w.specs() if s.conversation_id == "t0.a1"]
    cached = [recs[s.request_id].cached_prompt_tokens for s in a1]
    assert cached[0] == 0 and all(c >= s.history_tokens - r.block_size for c, s in zip(cached[1:], a1[1:], strict=True))
    merge = next(s for s in w.specs() if s.task_id == "t0" and s.join)
    assert recs[merge.request_id].cached_prompt_tokens >= 3000 - r.block_size  # the shared first prompt
    # and that makes the run cheaper than the same calls without a prefix cache
    from vazao.sim.config import SimConfig

    off = simulate(dep, w, config=SimConfig.from_engine(dep.engine, prefix_caching=False))
    assert off.prefill_tokens > 3 * r.prefill_tokens
    assert off.tasks.e2e_s.p50 > r.tasks.e2e_s.p50


def test_per_task_latency_tokens_and_cost(dep):
    w = small()
    r = simulate(dep, w)
    t = r.tasks
    assert t.tasks == 5 and t.incomplete == 0 and t.requests_per_task == 13
    assert t.prompt_tokens_per_task + t.output_tokens_per_task == LOOP.tokens_per_task
    # a task lasts at least its agent's chain: 4 calls and 3 tool latencies, then the merge
    recs = r.records()
    by_hand = summarize_tasks(recs, task_ids(w.specs()))
    assert by_hand.e2e_s == t.e2e_s and t.e2e_s.p50 > 3 * 0.5
    rate, source = gpu_rate(dep.accelerator, None)
    cost = selfhosted_task(dep.label(), dep.count, t, rate, source)
    assert cost.usd_per_task == (rate * dep.count * Decimal(t.duration_s) / 3600 / 5).quantize(cost.usd_per_task)
    d = json.loads(json.dumps(r.to_json()))
    assert d["tasks"]["tasks"] == 5 and SimResult.from_json(d, r.summary).tasks == t
    assert SelfHostedTask.from_json(json.loads(json.dumps(cost.to_json()))) == cost


def test_a_cut_task_is_incomplete(dep):
    r = simulate(dep, small().with_overrides(requests=30))
    assert (r.tasks.tasks, r.tasks.incomplete) == (2, 1) and r.completed == 30


def test_a_closed_loop_holds_tasks_not_requests(dep):
    w = small(arrival={"kind": "concurrency", "concurrency": 1})
    r = simulate(dep, w)
    recs = {x.request_id: x for x in r.records()}
    spans = {}
    for s in w.specs():
        a, e = spans.get(s.task_id, (float("inf"), 0.0))
        spans[s.task_id] = (min(a, recs[s.request_id].arrival_s), max(e, recs[s.request_id].end_s))
    ordered = sorted(spans.values())
    # one task at a time: the next starts when the previous one's merge ends, its three agents together
    assert all(nxt[0] >= prev[1] - 1e-9 for prev, nxt in zip(ordered, ordered[1:], strict=False))
    assert r.tasks.tasks == 5


def test_summarize_tasks_marks_a_failed_or_missing_request():
    ok = RequestRecord("0", "measured", 0.0, 10, 5, 0.1, 1.0)
    bad = RequestRecord("1", "measured", 1.0, 10, 5, error="boom")
    other = RequestRecord("2", "measured", 0.5, 10, 5, 0.6, 3.0)
    s = summarize_tasks([ok, bad, other], {"0": "a", "1": "a", "2": "b"}, {"a": 2, "b": 2})
    assert (s.tasks, s.incomplete) == (0, 2)
    s = summarize_tasks([ok, other], {"0": "a", "2": "a"})
    assert s.tasks == 1 and s.e2e_s.p50 == 3.0 and s.prompt_tokens_per_task == 20


def test_cli_simulates_the_seeds_agent_loop():
    res = runner.invoke(app, ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "agent-loop",
                              "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    tasks = d["sim"]["tasks"]
    assert tasks["tasks"] == 8 and tasks["incomplete"] == 0
    assert tasks["prompt_tokens_per_task"] + tasks["output_tokens_per_task"] == 2_600_000
    assert d["sim"]["cache_hit_share"] > 0.9  # every call re-sends a history the previous call left in the cache
    res = runner.invoke(app, ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "agent-loop"])
    assert res.exit_code == 0 and "agent tasks: 5 × 20 calls" in res.output.replace("\n", " ")


def test_bench_runs_the_same_workload(fake_llm, tmp_path):
    p = tmp_path / "agents.yaml"
    p.write_text("name: agents\narrival: {kind: concurrency, concurrency: 2}\n"
                 "agent: {calls: 3, context: 40, reply: 6, tool: 5, agents: 2, merge_reply: 4, tool_latency_s: 0.01,"
                 " tasks: 2}\n")
    out = tmp_path / "run.json"
    res = runner.invoke(app, ["bench", fake_llm.url, "-w", str(p), "--json", "-o", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["summary"]["requests"] == 2 * 7
    recs = [json.loads(x) for x in (tmp_path / "run.jsonl").read_text().splitlines()]
    recs = {r["request_id"]: r for r in recs if r.get("kind", "record") == "record" and "request_id" in r}
    w = load_workload(str(p))
    for s in w.specs():
        x = recs[s.request_id]
        assert x["extra"]["task_id"] == s.task_id and x["error"] is None
        for before in ((s.after,) if s.after else ()) + s.join:
            assert x["arrival_s"] >= recs[before]["end_s"] + s.think_time_s - 1e-3
