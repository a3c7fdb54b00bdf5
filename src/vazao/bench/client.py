"""Streaming client for OpenAI-compatible servers: one request in, one RequestRecord out.

Timing (results.py states the definitions): the clock starts just before the request body is
written to the socket (aiohttp's trace hook; the time spent before that inside the client —
connection set-up, pool waits — is kept as ``extra["client_wait_s"]`` when over 0.5 ms);
a chunk's time is when its bytes were read off the socket (chunks that arrive in one read share
it); only chunks with non-empty content count (role-only and finish chunks do not).

Token counts: ``usage`` from the final chunk when the server sends it (``stream_options:
{include_usage: true}`` is always asked for, unless turned off), else a user-supplied tokenizer
over the streamed text, else one token per content chunk. Each record says which in
``extra["tokens_from"]``.

Errors are never raised: each becomes the record's ``error`` as ``"kind: detail"`` (see
ERROR_KINDS) with the HTTP status where there was one, so a run counts and shows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from vazao.errors import VazaoError
from vazao.results import RequestRecord

__all__ = ["ERROR_KINDS", "Prompt", "StreamClient", "Target", "error_kind", "load_tokenizer"]

ERROR_KINDS = {
    "connect": "could not connect to the server",
    "http": "the server answered an HTTP error status",
    "timeout": "the request ran past the per-request timeout",
    "stall": "the stream sent nothing for longer than the stall timeout",
    "disconnected": "the connection dropped mid-stream",
    "truncated": "the stream ended without [DONE] or a finish_reason",
    "malformed_sse": "a data: line was not valid JSON",
    "server_error": "the stream carried an error object",
    "not_streaming": "the server answered with one JSON body instead of an event stream",
    "ignored_max_tokens": "the server generated more tokens than max_tokens asked for",
    "empty": "the stream finished without any content",
    "cancelled": "the run ended (time limit or Ctrl-C) while the request was in flight",
}

API_PATHS = {"chat": "/chat/completions", "completions": "/completions"}


def error_kind(error: str | None) -> str | None:
    return None if error is None else error.split(":", 1)[0]


@dataclass(frozen=True)
class Target:
    """Where and how to send: the base URL (usually ending in /v1) and the request options."""

    base_url: str
    model: str | None = None
    api: str = "chat"  # chat | completions
    api_key_env: str | None = "OPENAI_API_KEY"
    include_usage: bool = True
    ignore_eos: bool = False
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.api not in API_PATHS:
            raise VazaoError(f"--api must be chat or completions, got {self.api!r}")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise VazaoError(f"not an http(s) URL: {self.safe_url!r}")

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + API_PATHS[self.api]

    @property
    def root_url(self) -> str:
        """The server root: the base URL without a trailing /v1 (for /metrics, /tokenize)."""
        base = self.base_url.rstrip("/")
        return base[: -len("/v1")] if base.endswith("/v1") else base

    @property
    def safe_url(self) -> str:
        """The base URL without user:password and without its query (either may carry a key)."""
        parts = urlsplit(self.base_url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

    def api_key(self) -> str | None:
        if not self.api_key_env:
            return None
        return os.environ.get(self.api_key_env) or None

    def request_headers(self) -> dict[str, str]:
        h = {"Accept": "text/event-stream", **dict(self.headers)}
        key = self.api_key()
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h


@dataclass
class Prompt:
    """What one request sends. ``tokens`` is the expected prompt size (used when the server
    reports no usage) and ``tokens_from`` says where that number came from."""

    max_tokens: int
    text: str | None = None
    messages: list[dict] | None = None
    tokens: int = 0
    tokens_from: str = "planned"

    def body(self, target: Target) -> dict:
        b: dict[str, Any] = {"stream": True, "max_tokens": self.max_tokens}
        if target.model:
            b["model"] = target.model
        if target.api == "chat":
            b["messages"] = self.messages if self.messages is not None else [
                {"role": "user", "content": self.text or ""}]
        else:
            b["prompt"] = self.text if self.text is not None else _flatten(self.messages or [])
        if target.include_usage:
            b["stream_options"] = {"include_usage": True}
        if target.ignore_eos:
            b["ignore_eos"] = True
        b.update(target.extra_body)
        return b


def _flatten(messages: list[dict]) -> str:
    return "".join(f"{m.get('role', 'user')}: {m.get('content', '')}\n" for m in messages) + "assistant:"


def load_tokenizer(path: str):
    """A `tokenizers` Tokenizer from a tokenizer.json (the optional extra)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise VazaoError("--tokenizer needs the optional package 'tokenizers': "
                         "pip install 'vazao[tokenizers]'") from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises its own Exception subclass
        raise VazaoError(f"cannot load tokenizer {path}: {exc}") from None


_DECODER = json.JSONDecoder()


async def _on_sent(session, ctx, params) -> None:
    """aiohttp trace hook, called just before the request's headers are buffered and again just
    before its body is written: the last call is "just before the request is sent"."""
    box = ctx.trace_request_ctx
    if box is not None:
        box[0] = time.perf_counter()


class _Watchdog:
    """Cancels a request whose stream has been silent for `stall_s`: one timer per stall period,
    re-armed from the last read, instead of a timer reset on every chunk."""

    __slots__ = ("task", "activity", "stall_s", "handle", "loop")

    def __init__(self, task: asyncio.Task | None, activity: list, stall_s: float | None):
        self.task, self.activity, self.stall_s, self.handle = task, activity, stall_s, None
        if task is not None and stall_s:
            self.loop = asyncio.get_running_loop()
            self.handle = self.loop.call_later(stall_s, self._check)

    def _check(self) -> None:
        idle = time.perf_counter() - self.activity[0]
        if idle >= self.stall_s:
            self.activity[1] = True
            self.handle = None
            self.task.cancel()
        else:
            self.handle = self.loop.call_later(self.stall_s - idle, self._check)

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None


class _Abort(Exception):
    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


def _count_tokens(tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


class StreamClient:
    """An aiohttp session shared by every request of a run.

    origin: the run clock's zero (time.perf_counter()); record times are seconds after it.
    request_timeout_s: the whole request; stall_timeout_s: the longest silence mid-stream.
    """

    def __init__(self, target: Target, *, origin: float | None = None, request_timeout_s: float = 600.0,
                 stall_timeout_s: float = 60.0, connect_timeout_s: float = 10.0,
                 max_connections: int = 1024, tokenizer=None):
        self.target = target
        self.origin = time.perf_counter() if origin is None else origin
        self.tokenizer = tokenizer
        # No sock_read timeout: aiohttp re-arms that timer on every read, a cost per chunk. A
        # watchdog per request that wakes once per stall period does the same job (see send).
        self.timeout = aiohttp.ClientTimeout(total=request_timeout_s, sock_connect=connect_timeout_s)
        self.stall_timeout_s = stall_timeout_s
        self.max_connections = max_connections
        self.session: aiohttp.ClientSession | None = None
        self.chunks = 0  # content chunks received over the client's life (for CPU per chunk)
        self.headers = target.request_headers()
        self.url = target.url

    async def __aenter__(self) -> StreamClient:
        connector = aiohttp.TCPConnector(limit=self.max_connections, limit_per_host=0,
                                         ttl_dns_cache=300, keepalive_timeout=30)
        trace = aiohttp.TraceConfig()
        trace.on_request_headers_sent.append(_on_sent)
        trace.on_request_chunk_sent.append(_on_sent)
        self.session = aiohttp.ClientSession(connector=connector, timeout=self.timeout, trace_configs=[trace],
                                             auto_decompress=False, trust_env=False)
        return self

    async def __aexit__(self, *exc) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None

    async def send(self, request_id: str, prompt: Prompt, *, extra: Mapping | None = None,
                   keep_text: bool = False) -> tuple[RequestRecord, str | None]:
        """Send one streaming request; returns its record and (when keep_text) the streamed text."""
        pc = time.perf_counter
        decode = _DECODER.decode
        max_tokens = prompt.max_tokens
        body = prompt.body(self.target)
        pieces: list[str] | None = [] if (keep_text or self.tokenizer is not None) else None
        gaps: list[float] = []
        first = last = rid = None
        chunks = 0
        usage = None
        finish = None
        done = False
        status = None
        error = None
        task = asyncio.current_task()
        activity = [0.0, False]  # last read, stalled
        watchdog = _Watchdog(task, activity, self.stall_timeout_s)
        t_call = pc()
        activity[0] = t_call
        sent = [None]  # when the body is handed to the socket (filled in by _on_sent)
        try:
            async with self.session.post(self.url, json=body, headers=self.headers, trace_request_ctx=sent) as resp:
                status = resp.status
                ctype = resp.headers.get("Content-Type", "")
                if status != 200:
                    raise _Abort(f"http_{status}", await _snippet(resp))
                if not ctype.startswith("text/event-stream"):
                    raise _Abort("not_streaming", f"Content-Type {ctype or 'missing'}; "
                                 f"body starts {await _snippet(resp, 120)}")
                buf = b""
                read = resp.content.readany
                while True:
                    data = await read()
                    now = pc()
                    activity[0] = now
                    if not data:
                        break
                    if buf:
                        data = buf + data
                    lines = data.split(b"\n")
                    buf = lines.pop()
                    for line in lines:
                        if line[:5] != b"data:":
                            continue  # blank separators, comments, event:/id: fields
                        payload = line[5:].strip()
                        if payload == b"[DONE]":
                            done = True
                            continue
                        try:
                            obj = decode(payload.decode())
                            choices = obj.get("choices")
                        except (ValueError, AttributeError):  # UnicodeDecodeError is a ValueError
                            raise _Abort("malformed_sse", repr(payload[:80])) from None
                        if choices:
                            c = choices[0]
                            d = c.get("delta")
                            if d is not None:
                                text = d.get("content") or d.get("reasoning_content") or d.get("reasoning")
                            else:
                                text = c.get("text")
                            if text:
                                chunks += 1
                                if first is None:
                                    first = now
                                    rid = obj.get("id")
                                else:
                                    gaps.append(now - last)
                                last = now
                                if pieces is not None:
                                    pieces.append(text)
                                if chunks > max_tokens:
                                    raise _Abort("ignored_max_tokens",
                                                 f"asked for {max_tokens}, got more than {max_tokens} chunks")
                            fr = c.get("finish_reason")
                            if fr:
                                finish = fr
                        u = obj.get("usage")
                        if u:
                            usage = u
                        err = obj.get("error")
                        if err:
                            msg = err.get("message", err) if isinstance(err, dict) else err
                            raise _Abort("server_error", str(msg)[:200])
                if buf.strip():
                    raise _Abort("truncated", f"stream ended mid-line {buf[:60]!r}")
                if not done and finish is None:
                    raise _Abort("truncated", f"no [DONE] and no finish_reason after {chunks} chunks")
                if first is None:
                    raise _Abort("empty", f"finish_reason {finish!r} and no content")
        except _Abort as exc:
            error = str(exc)
        except aiohttp.ClientConnectorError as exc:
            error = f"connect: {exc}"
        except aiohttp.ConnectionTimeoutError as exc:
            error = f"connect: timed out ({exc})"
        except asyncio.TimeoutError:
            error = f"timeout: over {self.timeout.total} s"
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError,
                aiohttp.ClientOSError, ConnectionError) as exc:
            error = f"disconnected: {type(exc).__name__}: {str(exc)[:160]}"
        except aiohttp.ClientResponseError as exc:
            error = f"http_{exc.status}: {exc.message}"[:200]
        except aiohttp.ClientError as exc:
            error = f"connect: {type(exc).__name__}: {str(exc)[:160]}"
        except asyncio.CancelledError:
            if not activity[1]:
                error = "cancelled: the run ended while this request was in flight"
            else:  # the watchdog's doing: a stall, not the run's end
                error = f"stall: no data for {self.stall_timeout_s:g} s"
                if hasattr(task, "uncancel"):
                    task.uncancel()
        finally:
            watchdog.stop()
        self.chunks += chunks

        tokens_from = "chunks"
        out_tokens = chunks
        text = "".join(pieces) if pieces is not None else None
        if usage and usage.get("completion_tokens") is not None:
            out_tokens, tokens_from = int(usage["completion_tokens"]), "usage"
        elif self.tokenizer is not None and text:
            out_tokens, tokens_from = _count_tokens(self.tokenizer, text), "tokenizer"
        if error is None and out_tokens > max_tokens:
            error = f"ignored_max_tokens: asked for {max_tokens}, got {out_tokens} ({tokens_from})"
        prompt_tokens, prompt_from = prompt.tokens, prompt.tokens_from
        cached = 0
        if usage and usage.get("prompt_tokens") is not None:
            prompt_tokens, prompt_from = int(usage["prompt_tokens"]), "usage"
            details = usage.get("prompt_tokens_details") or {}
            cached = int(details.get("cached_tokens") or 0)
        ex = {"chunks": chunks, "tokens_from": tokens_from, "prompt_tokens_from": prompt_from,
              "max_tokens": max_tokens}
        if finish:
            ex["finish_reason"] = finish
        if rid:
            ex["response_id"] = str(rid)[:80]
        if prompt_from == "usage" and prompt.tokens:
            ex["planned_prompt_tokens"] = prompt.tokens
        if extra:
            ex.update(extra)
        t_send = sent[0] or t_call
        if t_send - t_call > 0.0005:  # connection set-up, pool wait, event-loop queueing
            ex["client_wait_s"] = round(t_send - t_call, 6)
        o = self.origin
        rec = RequestRecord(
            request_id=request_id,
            source="measured",
            arrival_s=t_send - o,
            prompt_tokens=prompt_tokens,
            output_tokens=out_tokens,
            first_token_s=None if first is None else first - o,
            end_s=None if last is None else last - o,
            itl_s=tuple(gaps),
            cached_prompt_tokens=cached,
            error=error,
            status=status,
            extra=ex,
        )
        return rec, text


async def _snippet(resp: aiohttp.ClientResponse, n: int = 200) -> str:
    with contextlib.suppress(Exception):
        raw = await resp.content.read(4096)
        text = raw.decode("utf-8", "replace")
        with contextlib.suppress(ValueError):
            obj = json.loads(text)
            err = obj.get("error") if isinstance(obj, dict) else None
            if isinstance(err, dict) and err.get("message"):
                return str(err["message"])[:n]
            if isinstance(err, str):
                return err[:n]
            if isinstance(obj, dict) and isinstance(obj.get("detail"), str):
                return obj["detail"][:n]
        return " ".join(text.split())[:n] or "(empty body)"
    return "(body unreadable)"
