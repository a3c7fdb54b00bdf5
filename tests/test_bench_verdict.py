"""What a bench run's outcome is, decided in the library (BenchResult.verdict) so a library caller
gets the exit code and reason `vazao bench` uses; where records go when no path is given; headers
checked by the library; a server that answers /props with anything at all."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.errors import VazaoError
from vazao.loadgen import records as records_mod
from vazao.loadgen.client import Target, parse_headers
from vazao.loadgen.session import BenchConfig, BenchResult, Outcome, Verdict, run_bench

runner = CliRunner()
CLOSED = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there on a test machine


@pytest.fixture()
def wl(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text("name: small\narrival: {kind: concurrency, concurrency: 2}\nprompt: 8\noutput: 4\nrequests: 4\n")
    return str(p)



def run(url: str, wl: str, tmp_path, **kw) -> BenchResult:
    cfg = BenchConfig(Target(url), workload=wl, records_path=tmp_path / "r.jsonl", progress=False, **kw)
    return asyncio.run(run_bench(cfg))


# ---- verdict -------------------------------------------------------------------------------------


def test_a_clean_run_is_ok(fake_llm, wl, tmp_path):
    v = run(fake_llm.url, wl, tmp_path).verdict()
    assert v == Verdict(Outcome.OK, "", 0) and v.ok
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.exit_code = 1  # type: ignore[misc]


def test_some_failed_requests_are_partial_with_exit_0(fake_llm, wl, tmp_path):
    res = run(fake_llm.configured("error_every=2"), wl, tmp_path, probe=False)
    v = res.verdict()
    bad = sum(1 for r in res.all_records() if not r.ok)
    assert 0 < bad < len(res.all_records())
    assert v.outcome is Outcome.PARTIAL and v.exit_code == 0 and not v.ok
    assert f"{bad} of {len(res.all_records())} measured requests failed" in v.reason and "http_500" in v.reason


@pytest.mark.parametrize("overrides,outcome,code,needle", [
    ("api_key=sekrit", Outcome.FAILED, 1, "a rerun will not fix: http_401"),
    ("no_stream=1", Outcome.FAILED, 1, "not_streaming"),
    ("error_every=1", Outcome.FAILED, 1, "every measured request failed"),  # 500s: a rerun may work
])
def test_failures_the_server_causes(fake_llm, wl, tmp_path, monkeypatch, overrides, outcome, code, needle):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    v = run(fake_llm.configured(overrides), wl, tmp_path, probe=False).verdict()
    assert (v.outcome, v.exit_code) == (outcome, code) and needle in v.reason, v


def test_an_unreachable_server_is_bad_input_and_leaves_no_records(wl, tmp_path):
    res = run(CLOSED, wl, tmp_path, probe=False, connect_timeout_s=2)
    v = res.verdict()
    assert v.outcome is Outcome.FAILED and v.exit_code == 2 and v.reason.startswith(f"cannot reach {CLOSED}")
    assert not res.records_kept and not (tmp_path / "r.jsonl").exists()
    assert res.to_json()["run"]["records"] is None


def test_an_interrupted_run_is_partial_with_the_signal_exit_code(fake_llm, wl, tmp_path):
    res = run(fake_llm.url, wl, tmp_path)
    res.interrupted, res.stop_signal = True, signal.SIGTERM
    assert res.verdict() == Verdict(Outcome.PARTIAL, "interrupted: the requests in flight were recorded as cancelled",
                                    143)
    res.stop_signal = None  # cancelled without a signal the caller caught: as Ctrl-C
    assert res.verdict().exit_code == 130


def test_a_run_that_measured_nothing_is_partial(tmp_path, wl):
    res = BenchResult(BenchConfig(Target(CLOSED), workload=wl), None)
    assert res.verdict().outcome is Outcome.PARTIAL and res.verdict().exit_code == 0


# ---- where records go ----------------------------------------------------------------------------


def test_default_records_go_to_the_runs_folder_not_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(records_mod.RUNS_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert records_mod.runs_dir() == tmp_path / "state" / "vazao" / "bench"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/state")  # invalid under XDG: ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert records_mod.runs_dir() == tmp_path / "home" / ".local" / "state" / "vazao" / "bench"
    monkeypatch.setenv(records_mod.RUNS_DIR_ENV, str(tmp_path / "runs"))
    p = records_mod.default_records_path()
    assert p.parent == tmp_path / "runs" and p.parent.is_dir() and p.name.startswith("vazao-bench-")


def test_a_failed_connect_leaves_nothing_in_the_working_directory(monkeypatch, tmp_path, wl):
    cwd, runs = tmp_path / "cwd", tmp_path / "runs"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv(records_mod.RUNS_DIR_ENV, str(runs))
    for extra in ([], ["--no-probe"], ["--no-probe", "--json"]):
        r = runner.invoke(app, ["bench", CLOSED, "-w", wl, "--no-progress", *extra])
        assert r.exit_code == 2, r.output
        assert f"cannot reach {CLOSED}" in r.stderr and "records so far" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert os.listdir(cwd) == []
    assert list(runs.glob("*.jsonl")) == []  # no empty records file left behind either


def test_a_run_names_its_records_in_the_runs_folder(fake_llm, monkeypatch, tmp_path, wl):
    cwd, runs = tmp_path / "cwd", tmp_path / "runs"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv(records_mod.RUNS_DIR_ENV, str(runs))
    r = runner.invoke(app, ["bench", fake_llm.url, "-w", wl, "--no-progress"])
    assert r.exit_code == 0, r.output
    (written,) = runs.glob("vazao-bench-*.jsonl")
    assert f"records: {written}" in " ".join(r.stdout.split())  # named in the output (wrapped lines joined)
    assert os.listdir(cwd) == []


# ---- headers: checked by the library --------------------------------------------------------------


@pytest.mark.parametrize("headers,message", [
    ({"X-A": "b\r\nInjected: 1"}, "control character"),
    ({"X A": "b"}, "not a valid HTTP header name"),
    ({"": "b"}, "not a valid HTTP header name"),
    ({"X-A": 3}, "must be text"),
])
def test_target_refuses_bad_headers(headers, message):
    with pytest.raises(VazaoError, match=message):
        Target("http://127.0.0.1:8080/v1", headers=headers)


def test_parse_headers():
    assert parse_headers(["X-A: b:c", " X-B :\td "]) == {"X-A": "b:c", "X-B": "d"}
    with pytest.raises(VazaoError, match="must look like 'Name: value'"):
        parse_headers(["no-colon"])
    with pytest.raises(VazaoError, match="control character"):
        parse_headers(["X-A: b\x07c"])


# ---- /props from any server ----------------------------------------------------------------------

PROPS = [
    ({"error": {"code": 404, "message": "not found"}}, None),  # a catch-all route's JSON answer
    ({}, None),
    ([1, 2], None),
    ({"default_generation_settings": "x", "total_slots": "4"}, None),
    ({"default_generation_settings": {"n_ctx": "big"}, "total_slots": True, "chat_template": 7}, None),
    ({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 4, "chat_template": "t" * 500,
      "build_info": "b1", "model_path": "/m.gguf", "extra": 1},
     {"n_ctx": 4096, "total_slots": 4, "chat_template": "t" * 200, "build_info": "b1", "model_path": "/m.gguf"}),
]


@pytest.mark.parametrize("body,kept", PROPS)
def test_props_of_any_shape_are_read_defensively(body, kept):
    from vazao.loadgen.server_facts import summarize_props

    assert summarize_props(body) == kept


@pytest.mark.parametrize("body,kept", [PROPS[0], PROPS[3], PROPS[-1]])
def test_a_bench_against_a_server_answering_props_with_anything(wl, tmp_path, body, kept):
    """The fake server with a /props route: a catch-all answer must neither stop the run nor make the
    server look like llama.cpp."""
    from aiohttp import web

    from vazao.testing.fake_server import FakeConfig, FakeServer

    class PropsServer(FakeServer):
        def app(self) -> web.Application:
            a = super().app()

            async def props(request: web.Request) -> web.Response:
                return web.json_response(body)

            a.router.add_get("/props", props)
            return a

    async def go() -> BenchResult:
        server = PropsServer(FakeConfig(ttft=0.001, itl=0.001))
        url = await server.start()
        try:
            cfg = BenchConfig(Target(url), workload=wl, records_path=tmp_path / "r.jsonl", progress=False)
            return await run_bench(cfg)
        finally:
            await server.stop()

    res = asyncio.run(go())
    assert res.verdict().ok, res.verdict()
    server = res.to_json()["server"]
    assert server.get("props") == kept
    if kept is None:  # (the fake server's metrics name vllm, which wins when the props are real)
        assert server.get("engine") != "llama.cpp"
