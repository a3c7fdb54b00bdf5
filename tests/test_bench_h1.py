"""The streaming client's HTTP/1.1 + SSE parser (bench/h1.py) on its own: whatever the framing and
however the bytes are split into reads, it finds what json.loads on every event would find, and its
fast path (plain content events counted without json.loads) never changes a result."""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from vazao.loadgen import h1

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunked(events: list[bytes]) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"


def sse(obj) -> bytes:
    body = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return b"data: " + body.encode() + b"\n\n"


def vllm_stream(texts: list[str], finish_in_last: bool = True, usage: bool = True) -> list[bytes]:
    base = {"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}
    out = [sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                     "logprobs": None, "finish_reason": None}]})]
    for i, t in enumerate(texts):
        last = i == len(texts) - 1
        out.append(sse({**base, "choices": [{"index": 0, "delta": {"content": t}, "logprobs": None,
                                             "finish_reason": "length" if last and finish_in_last else None}]}))
    if usage:
        out.append(sse({**base, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": len(texts),
                                                         "total_tokens": 3 + len(texts)}}))
    out.append(b"data: [DONE]\n\n")
    return out


def llama_stream(texts: list[str]) -> list[bytes]:
    """llama.cpp's order: finish_reason first, content last, a `created` that ticks, timings."""
    out = []
    for i, t in enumerate(texts):
        out.append(sse({"choices": [{"finish_reason": None, "index": 0, "delta": {"content": t}}],
                        "created": 1700000000 + i // 3, "id": "chatcmpl-x", "model": "g",
                        "object": "chat.completion.chunk", "timings": {"predicted_ms": 10.5 * i}}))
    out.append(sse({"choices": [{"finish_reason": "stop", "index": 0, "delta": {}}], "id": "chatcmpl-x",
                    "usage": {"completion_tokens": len(texts), "prompt_tokens": 2, "total_tokens": 2 + len(texts)}}))
    out.append(b"data: [DONE]\n\n")
    return out


def fake_stream(n: int) -> list[bytes]:
    """vazao's fake server: a per-chunk timestamp after the choices."""
    head = b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"f","choices":[{"index":0,'
    out = [head + b'"delta":{"role":"assistant","content":""},"finish_reason":null}],"x_t":0}\n\n']
    for i in range(n):
        out.append(head + b'"delta":{"content":"%s"},"finish_reason":null}],"x_t":%.6f}\n\n'
                   % (b" tok" if i else b"tok", 1000 + i / 100))
    out.append(b'data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n'
               b'data: {"id":"x","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":%d}}\n\n'
               b"data: [DONE]\n\n" % n)
    return out


TEXTS = ["Hello", " wor", "ld", " \"quoted\"", " back\\slash", " line\nbreak", " ünï", " 東京", " tab\t", "", " end"]

STREAMS = {
    "fake": fake_stream(40),
    "vllm": vllm_stream(TEXTS),
    "vllm-no-usage": vllm_stream([f" t{i}" for i in range(30)], finish_in_last=False, usage=False),
    "llama": llama_stream([f" w{i}" for i in range(30)] + TEXTS),
    "reasoning": [sse({"id": "r", "choices": [{"index": 0, "delta": {"reasoning_content": "think"}}]}),
                  sse({"id": "r", "choices": [{"index": 0, "delta": {"content": None, "reasoning_content": "more"}}]}),
                  sse({"id": "r", "choices": [{"index": 0, "delta": {"content": "answer"}}]}),
                  sse({"id": "r", "choices": [{"index": 0, "delta": {"content": "answer2"}}]}),
                  sse({"id": "r", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})],
    "two-choices": [sse({"id": "c", "choices": [{"index": 0, "delta": {"content": "a"}},
                                                {"index": 1, "delta": {"content": "b"}}]}) for _ in range(5)]
                   + [b"data: [DONE]\n\n"],
    "crlf": [e.replace(b"\n", b"\r\n") for e in vllm_stream([f" c{i}" for i in range(10)])],
    "completions": [sse({"id": "cmpl-1", "object": "text_completion",
                         "choices": [{"index": 0, "text": f" x{i}", "finish_reason": None}]}) for i in range(20)]
                   + [sse({"id": "cmpl-1", "choices": [{"index": 0, "text": "", "finish_reason": "length"}]}),
                      b"data: [DONE]\n\n"],
}


def reference(events: list[bytes], chat: bool = True) -> dict:
    """What json.loads on every data: line finds (the client's rules, without the fast path)."""
    text, chunks, finish, usage, done, rid = [], 0, None, None, False, None
    for line in b"".join(events).split(b"\n"):
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            done = True
            continue
        obj = json.loads(payload)
        choices = obj.get("choices")
        if choices:
            c = choices[0]
            d = c.get("delta")
            if d is not None:
                t = d.get("content") or d.get("reasoning_content") or d.get("reasoning")
            else:
                t = c.get("text")
            if t:
                chunks += 1
                text.append(t)
                rid = rid or obj.get("id")
            finish = c.get("finish_reason") or finish
        usage = obj.get("usage") or usage
    return {"text": "".join(text), "chunks": chunks, "finish": finish, "usage": usage, "done": done, "rid": rid}


def parse(reads: list[bytes], chat: bool = True, max_tokens: int = 10**6, pause_s: float = 0.0) -> h1.Exchange:
    async def go():
        ex = h1.Exchange(max_tokens, chat, keep_text=True)
        for r in reads:
            ex.feed(r)
            if pause_s:
                time.sleep(pause_s)
        return ex

    return asyncio.run(go())


def result(ex: h1.Exchange) -> dict:
    return {"text": "".join(ex.pieces), "chunks": ex.chunks, "finish": ex.finish, "usage": ex.usage,
            "done": ex.done, "rid": ex.rid}


def splits(data: bytes, rng: random.Random, mode: str) -> list[bytes]:
    if mode == "whole":
        return [data]
    if mode == "bytes":
        return [data[i:i + 1] for i in range(len(data))]
    cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, 40)))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.parametrize("mode", ["chunks", "whole", "random", "bytes"])
def test_any_framing_finds_what_json_finds(name, mode):
    events = STREAMS[name]
    chat = name != "completions"
    body = chunked(events)
    if mode == "chunks":  # one read per HTTP chunk, as a streaming server writes them
        framed = [HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"]
    else:
        framed = splits(HEAD + body, random.Random(name), mode)
    ex = parse(framed, chat)
    assert ex.abort is None and ex.lost is None and ex.complete
    assert result(ex) == reference(events, chat)
    assert len(ex.gaps) == max(0, ex.chunks - 1)
    assert all(g >= 0 for g in ex.gaps)


def test_fast_path_skips_json_for_plain_events(monkeypatch):
    calls = []
    real = h1.Exchange._event
    monkeypatch.setattr(h1.Exchange, "_event", lambda self, line, now: (calls.append(line), real(self, line, now)))
    events = fake_stream(100)
    ex = parse([HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"])
    assert ex.chunks == 100 and ex.complete
    # the role event, the first content event (its id, and the shape to match), finish, usage, [DONE]
    assert len(calls) == 5


def test_each_read_is_timed_and_one_read_shares_its_time():
    events = fake_stream(6)
    reads = [HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"]
    ex = parse(reads, pause_s=0.003)
    assert ex.chunks == 6 and all(g >= 0.003 for g in ex.gaps)
    ex = parse([HEAD + chunked(events)])
    assert ex.chunks == 6 and list(ex.gaps) == [0.0] * 5


@pytest.mark.parametrize("bad", [
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"f","choices":[{"index":0,'
    b'"delta":{"content":" tok"\n\n',  # cut short, same shape up to the text
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"f","choices":[{"index":0,'
    b'"delta":{"content":" tok"},"finish_reason":null}],"x_t":1000.5\n\n',  # no closing brace
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"f","choices":[{"index":0,'
    b'"delta":{"content":" tok\xff"},"finish_reason":null}],"x_t":1000.5}\n\n',  # not UTF-8
])
def test_a_broken_event_shaped_like_a_good_one_is_malformed(bad):
    events = fake_stream(5)
    events = events[:4] + [bad] + events[4:]
    ex = parse([HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events])
    assert ex.abort is not None and ex.abort.kind == "malformed_sse", ex.abort


def test_finish_reason_in_a_content_event_of_the_same_shape():
    head = b'data: {"id":"a","choices":[{"index":0,"delta":{"content":"'
    events = [head + b'x"},"finish_reason":null}]}\n\n'] * 5 + [head + b'y"},"finish_reason":"length"}]}\n\n']
    ex = parse([HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events] + [b"0\r\n\r\n"])
    assert ex.chunks == 6 and ex.finish == "length" and "".join(ex.pieces) == "xxxxxy"


def test_more_chunks_than_max_tokens_stops_the_stream():
    events = fake_stream(20)
    ex = parse([HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events], max_tokens=8)
    assert ex.abort is not None and ex.abort.kind == "ignored_max_tokens" and ex.chunks == 9


@pytest.mark.parametrize("head,body,complete,status", [
    (b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 36\r\n\r\n",
     b'{"error":{"message":"boom","code":5}}'[:36], True, 500),
    (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
     b"data: [DONE]\n\n", False, 200),  # ends with the connection
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", b"", True, 204),
])
def test_heads_and_body_framings(head, body, complete, status):
    ex = parse([head, body] if body else [head])
    assert ex.status == status and ex.complete is complete
    if not complete:
        ex.connection_lost(None)
        assert ex.complete and ex.done and not ex.keep_alive


def test_a_connection_lost_mid_stream_is_not_complete():
    events = fake_stream(5)
    ex = parse([HEAD] + [b"%x\r\n%s\r\n" % (len(e), e) for e in events[:3]])
    ex.connection_lost(None)
    assert not ex.complete and ex.lost is not None and ex.chunks == 2


def test_origin_builds_one_request_head():
    o = h1.Origin("https://u:p@example.invalid:8443/v1/chat/completions?x=1", {"X-A": "1", "accept": "*/*"})
    req = o.request(b"{}")
    assert req.startswith(b"POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: example.invalid:8443\r\n")
    assert b"Authorization: Basic dTpw\r\n" in req and b"accept: */*\r\n" in req and b"Accept: text" not in req
    assert req.endswith(b"Content-Length: 2\r\n\r\n{}")
    with pytest.raises(ValueError):
        h1.Origin("http://h/v1", {"X": "a\r\nInjected: 1"})


def test_a_reused_connection_the_server_dropped_is_retried_once_on_a_fresh_one():
    """A server that answers one request per connection and drops the next one unanswered (as a
    server closing an idle keep-alive connection does when the close crosses the next request)."""
    from vazao.loadgen.client import Prompt, StreamClient, Target

    body = chunked(fake_stream(3))
    connections = []

    async def handle(reader, writer):
        connections.append(writer)
        served = 0
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            if served:
                writer.close()
                return
            writer.write(HEAD + body)
            served += 1

    async def go():
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with StreamClient(Target(f"http://127.0.0.1:{port}/v1")) as c:
            recs = [(await c.send(f"r{i}", Prompt(max_tokens=5, text="x")))[0] for i in range(3)]
        server.close()
        return recs

    recs = asyncio.run(go())
    assert [r.error for r in recs] == [None, None, None] and all(r.output_tokens == 3 for r in recs)
    assert len(connections) == 3  # each request after the first: dropped on the old connection, retried on a new one
