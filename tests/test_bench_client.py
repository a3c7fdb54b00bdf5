"""The streaming client against the fake server: timing fields, token sources, and every fault
ending as a counted, named error on its record (never an exception, never a silent success)."""

from __future__ import annotations

import asyncio

import pytest

from vazao.loadgen.client import ERROR_KINDS, Prompt, StreamClient, Target, error_kind


def send(url: str, prompt: Prompt | None = None, api: str = "chat", **client_kw):
    async def go():
        async with StreamClient(Target(url, model="fake-model", api=api), **client_kw) as c:
            return await c.send("r1", prompt or Prompt(max_tokens=8, text="one two three"), keep_text=True)

    return asyncio.run(go())



@pytest.mark.parametrize("api", ["chat", "completions"])
def test_stream_timing_and_usage(fake_llm, api):
    rec, text = send(fake_llm.url, api=api)
    assert rec.ok and rec.error is None and rec.status == 200
    assert rec.output_tokens == 8 and len(rec.itl_s) == 7
    assert text == " ".join(["tok"] * 8)
    assert rec.extra["tokens_from"] == "usage" and rec.extra["prompt_tokens_from"] == "usage"
    # three words (+ the chat template's 4 tokens per message on the fake server)
    assert rec.prompt_tokens == (3 + 4 if api == "chat" else 3)
    # the role-only first chunk (sent at once) does not count as the first token: content comes no
    # sooner than the server's 20 ms TTFT (its ticker aims at most 0.5 ms early); no upper bound, which
    # would measure this machine's load, not the client
    assert rec.ttft_s > 0.018
    assert all(g >= 0.0 for g in rec.itl_s) and rec.first_token_s <= rec.end_s
    assert sum(rec.itl_s) == pytest.approx(rec.end_s - rec.first_token_s, abs=1e-6)  # the gaps span the stream
    assert rec.tpot_s == pytest.approx((rec.end_s - rec.first_token_s) / 7)
    assert rec.extra["response_id"].startswith("chatcmpl-" if api == "chat" else "cmpl-")


def test_token_counts_fall_back_to_chunks_without_usage(fake_llm):
    rec, _ = send(fake_llm.configured("usage=0,tokens_per_chunk=3"), Prompt(max_tokens=9, text="a b", tokens=17))
    assert rec.ok
    assert rec.extra["tokens_from"] == "chunks" and rec.output_tokens == 3  # 3 chunks of 3 tokens
    assert rec.extra["prompt_tokens_from"] == "planned" and rec.prompt_tokens == 17


def test_token_counts_from_a_tokenizer(fake_llm):
    class Words:  # the tokenizers API surface the client uses
        def encode(self, text, add_special_tokens=False):
            return type("E", (), {"ids": text.split()})()

    async def go():
        async with StreamClient(Target(fake_llm.configured("usage=0,tokens_per_chunk=3")), tokenizer=Words()) as c:
            return await c.send("r", Prompt(max_tokens=9, text="a"))

    rec, _ = asyncio.run(go())
    assert rec.extra["tokens_from"] == "tokenizer" and rec.output_tokens == 9


FAULTS = [
    ("error_every=1", "http_500", 500),
    ("status=503", "http_503", 503),
    ("api_key=sekrit", "http_401", 401),
    ("disconnect_every=1", "disconnected", 200),
    ("malformed_every=1", "malformed_sse", 200),
    ("no_stream=1", "not_streaming", 200),
    ("ignore_max_tokens=50", "ignored_max_tokens", 200),
    ("done=0,role_chunk=0", None, 200),  # a finish_reason without [DONE] is a complete stream
]


@pytest.mark.parametrize("overrides,kind,status", FAULTS)
def test_faults_become_named_errors(fake_llm, overrides, kind, status):
    rec, _ = send(fake_llm.configured(overrides))
    assert error_kind(rec.error) == kind, rec.error
    assert rec.status == status
    assert rec.ok is (kind is None)
    if kind is not None:
        assert kind.split("_")[0] in ERROR_KINDS or kind in ERROR_KINDS


def test_stall_ends_in_the_stall_timeout(fake_llm):
    rec, _ = send(fake_llm.configured("stall_every=1,stall_after=2,stall_s=5"), stall_timeout_s=0.3)
    assert error_kind(rec.error) == "stall"
    assert rec.extra["chunks"] == 2  # what came before the stall is kept
    # ended by the client's 0.3 s stall timeout, not by the server giving up after its 5 s stall: the kind
    # says so on any machine (the server's close would read as disconnected or truncated)


def test_request_timeout(fake_llm):
    rec, _ = send(fake_llm.configured("ttft=2s"), request_timeout_s=0.3)
    assert error_kind(rec.error) == "timeout"


def test_unreachable_server():
    rec, _ = send("http://127.0.0.1:9/v1", connect_timeout_s=2)
    assert error_kind(rec.error) == "connect" and rec.status is None


def test_api_key_is_sent_from_the_environment(fake_llm, monkeypatch):
    monkeypatch.setenv("VAZAO_TEST_KEY", "sekrit")
    rec, _ = send(fake_llm.configured("api_key=sekrit"), api="chat")
    assert error_kind(rec.error) == "http_401"  # Target's default env var is OPENAI_API_KEY

    async def go():
        async with StreamClient(Target(fake_llm.configured("api_key=sekrit"), api_key_env="VAZAO_TEST_KEY")) as c:
            return await c.send("r", Prompt(max_tokens=4, text="x"))

    rec, _ = asyncio.run(go())
    assert rec.ok
    assert "sekrit" not in repr(rec)


def test_cancelled_request_is_recorded():
    async def go(url):
        async with StreamClient(Target(url)) as c:
            task = asyncio.create_task(c.send("r", Prompt(max_tokens=1000, text="x")))
            await asyncio.sleep(0.2)
            task.cancel()
            return await task

    from vazao.testing.fake_server import FakeConfig, serve_in_thread

    with serve_in_thread(FakeConfig(ttft=0.01, itl=0.01)) as server:
        rec, _ = asyncio.run(go(server.url))
    assert error_kind(rec.error) == "cancelled" and rec.extra["chunks"] > 0


def test_target_urls_hide_credentials():
    t = Target("https://user:pw@example.invalid/v1?key=abc")
    assert t.safe_url == "https://example.invalid/v1"
    assert Target("http://h:8080/v1").root_url == "http://h:8080"


def test_connections_are_kept_alive_and_reused(fake_llm):
    async def go():
        async with StreamClient(Target(fake_llm.url)) as c:
            recs = [(await c.send(f"r{i}", Prompt(max_tokens=4, text="x")))[0] for i in range(3)]
            return recs, len(c.pool.open)

    recs, connections = asyncio.run(go())
    assert all(r.ok for r in recs) and connections == 1


def test_stream_on_uvloop(fake_llm):
    pytest.importorskip("uvloop")
    from vazao.loadgen.loop import loop_name, run

    async def go():
        async with StreamClient(Target(fake_llm.url, model="fake-model")) as c:
            rec, text = await c.send("r1", Prompt(max_tokens=8, text="one two three"), keep_text=True)
            return rec, text, loop_name()

    rec, text, name = run(go(), loop="uvloop")
    assert name == "uvloop" and rec.ok and rec.output_tokens == 8 and len(rec.itl_s) == 7
    assert text == " ".join(["tok"] * 8)


def test_loop_choice(monkeypatch):
    from vazao.loadgen.loop import loop_name, run

    async def name():
        return loop_name()

    assert run(name(), loop="asyncio") == "asyncio"
    monkeypatch.setenv("VAZAO_LOOP", "asyncio")
    assert run(name()) == "asyncio"
    with pytest.raises(ValueError):
        run(name(), loop="tokio")
