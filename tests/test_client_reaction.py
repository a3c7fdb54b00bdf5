"""A closed-loop client's reaction time (SimConfig.client_reaction_s): it breaks the ties a deterministic
simulation would keep between clients, stays out of every latency, and is bounded like any other setting."""

from __future__ import annotations

from dataclasses import replace

import pytest

from vazao.analytic import estimate
from vazao.catalog.models import get_model
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.sim import SimConfig, simulate
from vazao.sim.config import CLIENT_REACTION_S
from vazao.workload import workload_from_dict


@pytest.fixture(scope="module")
def dep():
    return make_deployment(get_model("llama-3.1-8b"), "h100-sxm", "bf16")


def closed(concurrency: int, prompt: int, output: int, requests: int, seed: int = 0):
    return workload_from_dict({"arrival": {"kind": "concurrency", "concurrency": concurrency}, "prompt": prompt,
                               "output": output, "requests": requests, "seed": seed})


def config(dep, reaction_s: float) -> SimConfig:
    return replace(SimConfig.from_engine(dep.engine), client_reaction_s=reaction_s)


def by_arrival(res):
    return sorted(res.records(include_warmup=True), key=lambda r: (r.arrival_s, r.request_id))


@pytest.mark.parametrize("bad", [-0.001, 2.0, float("nan"), float("inf"), True, "soon"])
def test_a_reaction_time_out_of_bounds_is_refused_with_one_line(bad):
    with pytest.raises(VazaoError) as e:
        SimConfig(client_reaction_s=bad)
    assert "client reaction time" in str(e.value) and "\n" not in str(e.value)


def test_the_default_is_a_millisecond():
    assert CLIENT_REACTION_S == 0.001
    assert SimConfig().client_reaction_s == 0.001


def test_the_reaction_is_not_latency_and_comes_after_each_completion(dep):
    """One client: every request finds the engine idle, so each TTFT is the analytic single-request TTFT
    exactly (the reaction is not counted), and each request is sent within the reaction time of the last."""
    prompt, output = 1000, 50
    res = simulate(dep, closed(1, prompt, output, 5), config(dep, 0.004))
    recs = by_arrival(res)
    ttft = estimate(dep, [1], prompt, output).rows[0].ttft_s
    assert [r.ttft_s for r in recs] == pytest.approx([ttft] * 5, rel=1e-12)
    assert 0 <= recs[0].arrival_s <= 0.004
    gaps = [b.arrival_s - a.end_s for a, b in zip(recs, recs[1:], strict=False)]
    assert all(0 <= g <= 0.004 for g in gaps) and len(set(gaps)) > 1  # drawn, not fixed


def test_without_it_clients_sent_together_share_every_prompt_step(dep):
    """Four clients, uniform lengths, a step budget that holds all four prompts: with no reaction time the
    four are sent at one instant in every round and are prefilled in one step each time."""
    res = simulate(dep, closed(4, 512, 64, 16), config(dep, 0.0))
    first = {}
    for r in res.records(include_warmup=True):
        first.setdefault(r.arrival_s, set()).add(r.first_token_s)
    assert len(first) == 4 and all(len(v) == 1 for v in first.values())  # 4 rounds, one first-token time each


def test_with_it_the_first_client_starts_alone_and_rounds_drift_apart(dep):
    """The same run with clients that start and reply within a millisecond: the engine, idle at the start,
    begins on the first request alone (a real server does not wait for the others), and the rounds no longer
    arrive as one burst."""
    prompt, output = 512, 64
    res = simulate(dep, closed(4, prompt, output, 16), config(dep, 0.001))
    recs = by_arrival(res)
    alone = estimate(dep, [1], prompt, output).rows[0].ttft_s
    assert recs[0].ttft_s == pytest.approx(alone, rel=1e-12)
    assert len({r.arrival_s for r in recs}) == 16
    tied = simulate(dep, closed(4, prompt, output, 16), config(dep, 0.0))
    assert res.summary.ttft_s.mean < tied.summary.ttft_s.mean


def test_a_seed_gives_the_same_run_and_another_seed_another(dep):
    def arrivals(seed):
        return [r.arrival_s for r in by_arrival(simulate(dep, closed(3, 256, 16, 9, seed), config(dep, 0.001)))]

    assert arrivals(3) == arrivals(3)
    assert arrivals(3) != arrivals(4)


def test_the_cli_takes_a_reaction_time_and_refuses_a_bad_one_with_one_line():
    import json

    from typer.testing import CliRunner

    from vazao.cli import app

    runner = CliRunner()
    base = ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "chat", "--concurrency", "8",
            "--requests", "64", "--seed", "1", "--json"]
    ran = {}
    for value in ("0", "1ms", "20ms"):
        res = runner.invoke(app, [*base, "--client-reaction", value])
        assert res.exit_code == 0, res.output
        ran[value] = json.loads(res.stdout)
    assert "clients reply within 20 ms" in ran["20ms"]["config"]
    assert "clients reply" not in ran["1ms"]["config"]  # the default goes unsaid
    assert ran["0"]["summary"]["duration_s"] < ran["20ms"]["summary"]["duration_s"]  # the replies wait
    for bad in ("5s", "-1ms", "soon", "1e400"):
        res = runner.invoke(app, [*base, "--client-reaction", bad])
        assert res.exit_code == 2 and "--client-reaction" in res.stderr, (bad, res.output)
        assert len(res.stderr.strip().splitlines()) == 1  # one line (--json also puts it on stdout as JSON)
