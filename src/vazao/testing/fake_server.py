"""A fake OpenAI-compatible streaming server: exact TTFT and ITL, and the faults a real server will
not produce on demand (5xx, 401, mid-stream disconnects, stalls, malformed SSE, no streaming,
ignored max_tokens). For tests and benchmarks only.

Every request gets the server's FakeConfig, overridden by an optional path prefix, so one server
serves many behaviours: ``http://HOST:PORT/cfg/error_every=3,itl=5ms/v1`` is a base URL whose every
third request fails with a 500.

Tokens are whitespace-separated words: prompt tokens = words in the prompt (+ ``chat_overhead`` per
chat message), and /extras/tokenize, /tokenize count the same way.

Timing: chunks are sent on an absolute schedule (first content at receipt + ttft, then every itl)
by one ticker for all streams, so a stream's gaps average exactly ``itl`` and 512 streams cost one
timer wake per tick, not one per chunk. Each chunk carries ``x_t``, the server's
``time.perf_counter()`` when it was written (CLOCK_MONOTONIC, comparable across processes), and
/stats reports what the server actually did: the truth to check a client against.

Run standalone: ``python -m vazao.testing.fake_server --port 0 --ttft 50ms --itl 10ms`` prints
``READY http://127.0.0.1:PORT/v1`` and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import heapq
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field

try:  # aiohttp is test support only (the dev and testing extras), never a dependency of the library
    from aiohttp import web
except ImportError:
    raise ImportError("vazao.testing.fake_server needs aiohttp: pip install 'vazao[testing]'") from None

from vazao.units import parse_duration

__all__ = ["FakeConfig", "FakeServer", "serve_in_thread", "spawn"]

WORD = "tok"
# asyncio's timers fire up to 1 ms late (epoll waits in whole milliseconds): the ticker aims half
# a millisecond early, so writes land within about ±0.5 ms of their schedule, on time on average.
EARLY_S = 0.0005


@dataclass(frozen=True)
class FakeConfig:
    ttft: float = 0.05  # seconds from receipt (or from getting a slot) to the first content chunk
    itl: float = 0.01  # seconds between content chunks
    output_tokens: int = 0  # 0: as many as max_tokens asks (16 when absent)
    tokens_per_chunk: int = 1
    usage: bool = True  # honour stream_options.include_usage
    role_chunk: bool = True  # send an empty-content role delta at once, as OpenAI does
    api_key: str = ""  # when set, requests need "Authorization: Bearer <api_key>"
    status: int = 0  # when set, every completion request answers this HTTP status
    error_every: int = 0  # every Nth request answers 500
    disconnect_every: int = 0  # every Nth stream is cut after disconnect_after chunks
    disconnect_after: int = 2
    stall_every: int = 0  # every Nth stream stops sending after stall_after chunks
    stall_after: int = 2
    stall_s: float = 30.0  # how long a stalled stream stays open before the server gives up
    malformed_every: int = 0  # every Nth stream gets a broken SSE line after 1 chunk
    no_stream: bool = False  # answer one JSON body even when asked to stream
    ignore_max_tokens: int = 0  # when set, always generate this many tokens
    done: bool = True  # end streams with "data: [DONE]"
    slots: int = 0  # 0: unlimited; else requests queue for one of this many slots
    chat_overhead: int = 4  # prompt tokens a chat template adds per message
    record_times: bool = False  # keep every content write time per stream id, for /stats/streams
    echo_headers: bool = False  # error bodies repeat the request's headers (as some servers echo the key)
    redirect_port: int = 0  # when set, /v1/models, /metrics and tokenize answer 307 to this port on 127.0.0.1
    model: str = "fake-model"

    @classmethod
    def parse_overrides(cls, text: str, base: FakeConfig | None = None) -> FakeConfig:
        """'itl=5ms,error_every=3' -> a FakeConfig with those fields changed."""
        base = base or cls()
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        changes: dict[str, object] = {}
        for part in filter(None, text.split(",")):
            key, _, value = part.partition("=")
            key = key.strip()
            if key not in kinds:
                raise ValueError(f"unknown fake-server setting {key!r}")
            changes[key] = _convert(kinds[key], value.strip())
        return dataclasses.replace(base, **changes)


def _convert(kind: str, value: str) -> object:
    if kind == "float":
        return parse_duration(value)
    if kind == "int":
        return int(value)
    if kind == "bool":
        return value.lower() in ("1", "true", "yes", "on")
    return value


@dataclass
class _Stats:
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    chunks: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    running: int = 0
    # server-side truth: TTFT from receipt to the first content write, and gaps between writes
    ttft_sum: float = 0.0
    ttft_n: int = 0
    gap_sum: float = 0.0
    gap_n: int = 0
    late_sum: float = 0.0  # how late writes were against their schedule (negative: early)
    late_max: float = 0.0

    def to_json(self) -> dict:
        return {
            "requests": self.requests,
            "statuses": {str(k): v for k, v in self.statuses.items()},
            "faults": dict(self.faults),
            "chunks": self.chunks,
            "prompt_tokens": self.prompt_tokens,
            "generation_tokens": self.generation_tokens,
            "running": self.running,
            "ttft_mean_s": self.ttft_sum / self.ttft_n if self.ttft_n else None,
            "gap_mean_s": self.gap_sum / self.gap_n if self.gap_n else None,
            "late_mean_s": self.late_sum / self.chunks if self.chunks else None,
            "late_max_s": self.late_max,
            "process_cpu_s": time.process_time(),  # the server's own CPU so far (user + system)
        }


def _count_words(text: str) -> int:
    return len(text.split())


def _prompt_tokens(body: dict, cfg: FakeConfig) -> int:
    if "messages" in body:
        n = 0
        for m in body.get("messages") or []:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, list):  # content parts
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            n += _count_words(content or "") + cfg.chat_overhead
        return n
    prompt = body.get("prompt", "")
    if isinstance(prompt, list):
        prompt = " ".join(p for p in prompt if isinstance(p, str))
    return _count_words(str(prompt))


class _Stream:
    """One streaming response driven by the ticker."""

    __slots__ = ("resp", "cfg", "chat", "n_out", "sent", "t0", "next_due", "fault", "fault_at",
                 "done", "head", "tail", "last_write", "created", "include_usage", "prompt_tokens",
                 "rid", "transport", "words", "times")

    def __init__(self, resp, transport, cfg, chat, n_out, t0, fault, fault_at, include_usage,
                 prompt_tokens, rid):
        self.resp = resp
        self.transport = transport
        self.cfg = cfg
        self.chat = chat
        self.n_out = n_out
        self.sent = 0  # tokens sent
        self.t0 = t0
        self.next_due = t0 + cfg.ttft
        self.fault = fault
        self.fault_at = fault_at
        self.done: asyncio.Future = asyncio.get_running_loop().create_future()
        self.created = int(time.time())
        self.rid = rid
        self.include_usage = include_usage
        self.prompt_tokens = prompt_tokens
        self.last_write = None
        self.times: list[float] | None = [] if cfg.record_times else None
        k = max(1, cfg.tokens_per_chunk)
        self.words = [b""] + [(" " + " ".join([WORD] * i)).encode() for i in range(1, k + 1)]
        if chat:
            self.head = (f'data: {{"id":"chatcmpl-{rid}","object":"chat.completion.chunk",'
                         f'"created":{self.created},"model":"{cfg.model}","choices":[{{"index":0,'
                         f'"delta":{{"content":"').encode()
            self.tail = b'"},"finish_reason":null}],"x_t":'
        else:
            self.head = (f'data: {{"id":"cmpl-{rid}","object":"text_completion",'
                         f'"created":{self.created},"model":"{cfg.model}","choices":[{{"index":0,'
                         f'"text":"').encode()
            self.tail = b'","finish_reason":null}],"x_t":'

    def _finish(self, result: str) -> None:
        if not self.done.done():
            self.done.set_result(result)


class _Ticker:
    """One timer for all streams: pops every stream that is due and writes its next chunk."""

    def __init__(self, server: FakeServer):
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.heap: list = []
        self.seq = itertools.count()
        self.timer: asyncio.TimerHandle | None = None
        self.timer_when = math.inf
        # perf_counter and loop.time() are both CLOCK_MONOTONIC on Linux, but keep the offset
        self.offset = self.loop.time() - time.perf_counter()

    def add(self, stream: _Stream) -> None:
        when = stream.next_due
        heapq.heappush(self.heap, (when, next(self.seq), stream))
        if when < self.timer_when:
            if self.timer is not None:
                self.timer.cancel()
            self.timer_when = when
            self.timer = self.loop.call_at(when + self.offset - EARLY_S, self._fire)

    def _fire(self) -> None:
        self.timer, self.timer_when = None, math.inf
        now = time.perf_counter()
        heap = self.heap
        stats = self.server.stats
        pop, push = heapq.heappop, heapq.heappush
        due = []
        while heap and heap[0][0] <= now + EARLY_S:
            due.append(pop(heap)[2])
        # streams go back on the heap after the batch: a late batch never starves the loop
        for s in due:
            if _step(s, stats):
                push(heap, (s.next_due, next(self.seq), s))
        if heap:
            self.timer_when = heap[0][0]
            self.timer = self.loop.call_at(self.timer_when + self.offset - EARLY_S, self._fire)


def _frame(payload: bytes) -> bytes:
    """One HTTP/1.1 chunk. Streams are written straight to the transport after aiohttp has sent the
    headers (StreamResponse sends them in prepare()); aiohttp still writes the final 0-chunk."""
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _write(s: _Stream, payload: bytes) -> bool:
    t = s.transport
    if t is None or t.is_closing():
        return False
    t.write(_frame(payload))
    return True


def _step(s: _Stream, stats: _Stats) -> bool:
    """Write the stream's next chunk (or its fault); True when it has more to send."""
    cfg = s.cfg
    if s.fault is not None and s.sent >= s.fault_at:
        kind = s.fault
        stats.faults[kind] += 1
        if kind == "disconnect":
            if s.transport is not None:
                s.transport.abort()
            s._finish("disconnected")
        elif kind == "stall":
            s._finish("stall")
        else:  # malformed
            _write(s, b'data: {"choices": [{"delta": {"content": "x"\n\n')
            s._finish("malformed")
        return False
    k = min(cfg.tokens_per_chunk, s.n_out - s.sent)
    text = s.words[k] if s.sent else s.words[k][1:]
    t = time.perf_counter()
    if not _write(s, b"%s%s%s%.6f}\n\n" % (s.head, text, s.tail, t)):
        stats.faults["client_gone"] += 1
        s._finish("client gone")
        return False
    late = t - s.next_due
    stats.late_sum += late
    if late > stats.late_max:
        stats.late_max = late
    stats.chunks += 1
    if s.sent == 0:
        stats.ttft_sum += t - s.t0
        stats.ttft_n += 1
    else:
        stats.gap_sum += t - s.last_write
        stats.gap_n += 1
    s.last_write = t
    if s.times is not None:
        s.times.append(t)
    s.sent += k
    if s.sent >= s.n_out:
        s._finish("ok")
        return False
    s.next_due += cfg.itl
    return True


class FakeServer:
    def __init__(self, config: FakeConfig | None = None):
        self.config = config or FakeConfig()
        self.stats = _Stats()
        self._counters: Counter = Counter()
        self._slots: dict[int, asyncio.Semaphore] = {}
        self._ticker: _Ticker | None = None
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        self._rid = itertools.count(1)
        self.stream_times: dict[str, dict] = {}
        self.seen: deque = deque(maxlen=256)  # (method, path, headers) of the latest requests, for tests
        self.url: str | None = None  # the base URL once started (…/v1)

    def configured(self, overrides: str) -> str:
        """The base URL that serves with these FakeConfig overrides (`error_every=3,itl=5ms`)."""
        if self.url is None:
            raise RuntimeError("the fake server is not started")
        return self.url.replace("/v1", f"/cfg/{overrides}/v1")

    @web.middleware
    async def _remember(self, request: web.Request, handler):
        self.seen.append((request.method, request.path, dict(request.headers)))
        return await handler(request)

    # ---- app -------------------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 2**20, middlewares=[self._remember])
        for prefix in ("", "/cfg/{cfg}"):
            app.router.add_post(prefix + "/v1/chat/completions", self._chat)
            app.router.add_post(prefix + "/v1/completions", self._completions)
            app.router.add_get(prefix + "/v1/models", self._models)
            app.router.add_get(prefix + "/metrics", self._metrics)
            app.router.add_post(prefix + "/extras/tokenize", self._tokenize_extras)
            app.router.add_post(prefix + "/tokenize", self._tokenize)
        app.router.add_get("/stats", self._stats)
        app.router.add_get("/stats/streams", self._stream_times)
        app.router.add_post("/stats/reset", self._stats_reset)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, backlog=4096, reuse_address=True)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]
        self._ticker = _Ticker(self)
        return f"http://{host}:{self.port}/v1"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- handlers ----------------------------------------------------------------------
    def _config(self, request: web.Request) -> tuple[FakeConfig, str]:
        key = request.match_info.get("cfg", "")
        if not key:
            return self.config, key
        return FakeConfig.parse_overrides(key, self.config), key

    def _auth_error(self, request: web.Request, cfg: FakeConfig) -> web.Response | None:
        if cfg.api_key and request.headers.get("Authorization") != f"Bearer {cfg.api_key}":
            if cfg.echo_headers:  # as OpenAI's own: "Incorrect API key provided: sk-…"
                return _error(401, f"Incorrect API key provided: {request.headers.get('Authorization', '')}; "
                              + _echo(request), "invalid_api_key")
            return _error(401, "invalid or missing API key", "invalid_api_key")
        return None

    def _redirect(self, request: web.Request, cfg: FakeConfig) -> web.Response | None:
        if not cfg.redirect_port:
            return None
        path = request.path.split("/", 3)[3] if request.path.startswith("/cfg/") else request.path.lstrip("/")
        return web.Response(status=307, headers={"Location": f"http://127.0.0.1:{cfg.redirect_port}/{path}"})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def _generate(self, request: web.Request, chat: bool) -> web.StreamResponse:
        t0 = time.perf_counter()
        cfg, key = self._config(request)
        self._counters[key] += 1
        n = self._counters[key]
        self.stats.requests += 1
        if (resp := self._auth_error(request, cfg)) is not None:
            self.stats.statuses[401] += 1
            return resp
        try:
            body = await request.json()
        except ValueError:
            self.stats.statuses[400] += 1
            return _error(400, "request body is not JSON")
        if cfg.status:
            self.stats.statuses[cfg.status] += 1
            echo = f"; {_echo(request)}" if cfg.echo_headers else ""
            return _error(cfg.status, f"configured status {cfg.status}{echo}")
        if cfg.error_every and n % cfg.error_every == 0:
            self.stats.statuses[500] += 1
            return _error(500, "injected server error", "server_error")
        if chat and not isinstance(body.get("messages"), list):
            self.stats.statuses[400] += 1
            return _error(400, "'messages' must be a list")
        max_tokens = body.get("max_tokens") or body.get("max_completion_tokens") or 16
        n_out = cfg.ignore_max_tokens or cfg.output_tokens or int(max_tokens)
        prompt_tokens = _prompt_tokens(body, cfg)
        include_usage = bool(cfg.usage and (body.get("stream_options") or {}).get("include_usage"))
        sem = None
        if cfg.slots:
            sem = self._slots.setdefault(cfg.slots, asyncio.Semaphore(cfg.slots))
            await sem.acquire()
        self.stats.running += 1
        try:
            t_start = time.perf_counter()
            if cfg.no_stream or not body.get("stream"):
                await asyncio.sleep(cfg.ttft + cfg.itl * max(0, n_out - 1))
                self.stats.statuses[200] += 1
                self.stats.prompt_tokens += prompt_tokens
                self.stats.generation_tokens += n_out
                return web.json_response(_full_body(chat, cfg, n_out, prompt_tokens))
            fault, fault_at = None, 0
            if cfg.disconnect_every and n % cfg.disconnect_every == 0:
                fault, fault_at = "disconnect", cfg.disconnect_after
            elif cfg.stall_every and n % cfg.stall_every == 0:
                fault, fault_at = "stall", cfg.stall_after
            elif cfg.malformed_every and n % cfg.malformed_every == 0:
                fault, fault_at = "malformed", 1
            resp = web.StreamResponse(headers={
                "Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                "Server": "vazao-fake", "X-Fake-Received": f"{t0:.6f}"})
            resp.enable_chunked_encoding()
            await resp.prepare(request)
            self.stats.statuses[200] += 1
            self.stats.prompt_tokens += prompt_tokens
            rid = next(self._rid)
            s = _Stream(resp, request.transport, cfg, chat, n_out, t_start, fault, fault_at, include_usage,
                        prompt_tokens, rid)
            if chat and cfg.role_chunk:
                _write(s, s.head.replace(b'"delta":{"content":"', b'"delta":{"role":"assistant","content":"')
                       + s.tail + b"0}\n\n")
            self._ticker.add(s)
            outcome = await s.done
            if s.times is not None:
                self.stream_times[f"{'chatcmpl' if chat else 'cmpl'}-{rid}"] = {"received": t0, "times": s.times}
            self.stats.generation_tokens += s.sent
            if outcome == "stall":
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await asyncio.sleep(cfg.stall_s)
                    await resp.write_eof()
                return resp
            if outcome != "ok":
                return resp
            await self._finish_stream(resp, s)
            return resp
        finally:
            self.stats.running -= 1
            if sem is not None:
                sem.release()

    async def _finish_stream(self, resp: web.StreamResponse, s: _Stream) -> None:
        cfg = s.cfg
        obj = "chat.completion.chunk" if s.chat else "text_completion"
        choice = ({"index": 0, "delta": {}, "finish_reason": "length"} if s.chat
                  else {"index": 0, "text": "", "finish_reason": "length"})
        parts = [{"id": f"x-{s.rid}", "object": obj, "created": s.created, "model": cfg.model,
                  "choices": [choice]}]
        if s.include_usage:
            parts.append({"id": f"x-{s.rid}", "object": obj, "created": s.created, "model": cfg.model,
                          "choices": [], "usage": _usage(s.prompt_tokens, s.sent)})
        data = b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in parts)
        if cfg.done:
            data += b"data: [DONE]\n\n"
        if not _write(s, data):
            self.stats.faults["client_gone"] += 1

    async def _models(self, request: web.Request) -> web.Response:
        cfg, _ = self._config(request)
        if (resp := self._redirect(request, cfg) or self._auth_error(request, cfg)) is not None:
            return resp
        return web.json_response(
            {"object": "list", "data": [{"id": cfg.model, "object": "model", "owned_by": "vazao-fake",
                                         "max_model_len": 8192}]},
            headers={"Server": "vazao-fake"})

    async def _metrics(self, request: web.Request) -> web.Response:
        if (resp := self._redirect(request, self._config(request)[0])) is not None:
            return resp
        st = self.stats
        text = (
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
            "# TYPE vllm:prompt_tokens_total counter\n"
            f'vllm:prompt_tokens_total{{model_name="{self.config.model}"}} {st.prompt_tokens}\n'
            "# TYPE vllm:generation_tokens_total counter\n"
            f'vllm:generation_tokens_total{{model_name="{self.config.model}"}} {st.generation_tokens}\n'
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{model_name="{self.config.model}"}} {st.running}\n'
        )
        return web.Response(text=text, content_type="text/plain")

    async def _tokenize_extras(self, request: web.Request) -> web.Response:
        if (resp := self._redirect(request, self._config(request)[0])) is not None:
            return resp
        body = await request.json()
        return web.json_response({"tokens": list(range(_count_words(str(body.get("input", "")))))})

    async def _tokenize(self, request: web.Request) -> web.Response:
        if (resp := self._redirect(request, self._config(request)[0])) is not None:
            return resp
        body = await request.json()
        text = body.get("content", body.get("prompt", ""))
        n = _count_words(str(text))
        return web.json_response({"tokens": list(range(n)), "count": n})

    async def _stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats.to_json())

    async def _stream_times(self, request: web.Request) -> web.Response:
        return web.json_response(self.stream_times)

    async def _stats_reset(self, request: web.Request) -> web.Response:
        running = self.stats.running
        self.stats = _Stats(running=running)
        self.stream_times = {}
        return web.json_response({"ok": True})


def _usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


def _full_body(chat: bool, cfg: FakeConfig, n_out: int, prompt_tokens: int) -> dict:
    text = " ".join([WORD] * n_out)
    if chat:
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
        obj = "chat.completion"
    else:
        choice = {"index": 0, "text": text, "finish_reason": "length"}
        obj = "text_completion"
    return {"id": "full-1", "object": obj, "created": int(time.time()), "model": cfg.model,
            "choices": [choice], "usage": _usage(prompt_tokens, n_out)}


def _echo(request: web.Request) -> str:
    return "request headers: " + ", ".join(f"{k}: {v}" for k, v in request.headers.items())


def _error(status: int, message: str, code: str = "error") -> web.Response:
    return web.json_response({"error": {"message": message, "type": code, "code": status}}, status=status)


# ---- ways to run it ------------------------------------------------------------------------


@contextlib.contextmanager
def serve_in_thread(config: FakeConfig | None = None, host: str = "127.0.0.1") -> Iterator[FakeServer]:
    """Run a FakeServer on its own event loop in a daemon thread; yields it (``.url`` set)."""
    server = FakeServer(config)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict = {}

    def main() -> None:
        asyncio.set_event_loop(loop)
        try:
            box["url"] = loop.run_until_complete(server.start(host))
        except Exception as exc:  # surfaced to the caller below
            box["error"] = exc
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.run_until_complete(server.stop())
        loop.close()

    thread = threading.Thread(target=main, name="vazao-fake-server", daemon=True)
    thread.start()
    ready.wait(10)
    if "error" in box:
        raise box["error"]
    server.url = box["url"]
    try:
        yield server
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@contextlib.contextmanager
def spawn(config: FakeConfig | None = None, host: str = "127.0.0.1") -> Iterator[str]:
    """Run the fake server in a child process (its CPU kept apart from the client's); yields the
    base URL and kills the process on exit."""
    cfg = config or FakeConfig()
    args = [sys.executable, "-m", "vazao.testing.fake_server", "--host", host, "--port", "0"]
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if value != f.default:
            args += ["--set", f"{f.name}={value}"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if not line.startswith("READY "):
            proc.kill()
            raise RuntimeError(f"fake server did not start: {line!r} {proc.stderr.read()[-2000:]}")
        yield line.split()[1]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m vazao.testing.fake_server", description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft", default=None, help="e.g. 50ms")
    p.add_argument("--itl", default=None, help="e.g. 10ms")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any FakeConfig field, e.g. --set error_every=3")
    a = p.parse_args(argv)
    sets = list(a.set)
    if a.ttft:
        sets.append(f"ttft={a.ttft}")
    if a.itl:
        sets.append(f"itl={a.itl}")
    cfg = FakeConfig.parse_overrides(",".join(sets))

    async def serve() -> None:
        server = FakeServer(cfg)
        url = await server.start(a.host, a.port)
        print(f"READY {url}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await server.stop()

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
