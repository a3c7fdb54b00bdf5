"""Streaming client for OpenAI-compatible servers: one request in, one RequestRecord out.

Timing (results.py states the definitions): the clock starts just before the request is written
to the socket (the time spent before that inside the client — connection set-up, waiting for one
of max_connections, event-loop queueing — is kept as ``extra["client_wait_s"]`` when over 0.5 ms);
a chunk's time is when its bytes were read off the socket, taken in the connection's protocol
callback (chunks that arrive in one read share it; see h1.py); only chunks with non-empty content
count (role-only and finish chunks do not).

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

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.loadgen import h1
from vazao.loadgen.pacing import Pacer, Watchdog
from vazao.loadgen.redact import cut, header_secrets, redact, url_secrets
from vazao.results import RequestRecord

__all__ = ["ERROR_KINDS", "Prompt", "StreamClient", "Target", "check_headers", "error_kind", "load_tokenizer",
           "parse_headers"]

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
    "cancelled": "the run ended (time limit, Ctrl-C or SIGTERM) while the request was in flight",
    "sse_line_too_long": "one server-sent event line was longer than the client accepts (8 MiB)",
}

API_PATHS = {"chat": "/chat/completions", "completions": "/completions"}


def error_kind(error: str | None) -> str | None:
    return None if error is None else error.split(":", 1)[0]


_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def check_headers(headers: Mapping[str, str]) -> None:
    """Each name an HTTP token, each value a string free of control characters: a line break in
    either would smuggle another header (or a request) into every request sent."""
    for name, value in headers.items():
        if not isinstance(name, str) or not name or not set(name) <= _TOKEN:
            raise VazaoError(f"header name {str(name)[:40]!r} is not a valid HTTP header name")
        if not isinstance(value, str):
            raise VazaoError(f"header {name[:40]!r}: its value must be text, got {type(value).__name__}")
        if any(ord(c) < 32 and c != "\t" or ord(c) == 127 for c in value):
            raise VazaoError(f"header {name[:40]!r}: its value holds a control character (a line break?)")


def parse_headers(items: list[str] | None) -> dict[str, str]:
    """'Name: value' strings (curl's -H) as a checked mapping."""
    out = {}
    for item in items or []:
        name, sep, value = item.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise VazaoError(f"header must look like 'Name: value', got {item.split(':')[0][:40]!r}…")
        out[name] = value
    check_headers(out)
    return out


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
            raise VazaoError(f"api must be chat or completions, got {self.api!r}")
        shown = _show_url(self.base_url)
        if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in self.base_url):
            raise VazaoError(f"URL {shown!r} holds a space or a control character")
        try:
            parts = urlsplit(self.base_url)
            parts.port  # noqa: B018 (raises on a port that is not a number in range)
            host = parts.hostname
        except ValueError as exc:
            raise VazaoError(f"URL {shown!r} is not valid: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.netloc or not host:
            raise VazaoError(f"not an http(s) URL with a host: {shown!r} (e.g. http://127.0.0.1:8080/v1)")
        check_headers(self.headers)  # here, so a library caller is held to what the command line is

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

    def secrets(self) -> list[str]:
        """What must never be written anywhere: the API key, every extra header's value, and
        user:password in the URL."""
        return [self.api_key() or "", *header_secrets(self.headers), *url_secrets(self.base_url)]

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


def _show_url(url: str) -> str:
    """A URL for an error message, before it is known to parse: no user:password, no query."""
    head, sep, rest = url.partition("://")
    if sep:
        netloc, slash, path = rest.partition("/")
        url = head + sep + netloc.rsplit("@", 1)[-1] + slash + path
    return url.split("?", 1)[0].split("#", 1)[0][:200]


def _flatten(messages: list[dict]) -> str:
    return "".join(f"{m.get('role', 'user')}: {m.get('content', '')}\n" for m in messages) + "assistant:"


def load_tokenizer(path: str):
    """A `tokenizers` Tokenizer from a tokenizer.json (the optional extra)."""
    inputs.input_file(path, "tokenizer file")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise VazaoError("a tokenizer file needs the optional package 'tokenizers': "
                         "pip install 'vazao[tokenizers]'") from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises its own Exception subclass
        raise VazaoError(f"cannot load tokenizer {path}: {exc}") from None


_Abort = h1.Abort


def _count_tokens(tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


class StreamClient:
    """The connections shared by every request of a run, all through h1 (a lean HTTP/1.1 client
    that times each read in its protocol callback): the streams here, and the setup requests
    (server facts, /metrics, tokenize) on the same `pool` through control.call.

    origin: the run clock's zero (time.perf_counter()); record times are seconds after it.
    request_timeout_s: the whole request; stall_timeout_s: the longest silence mid-stream.
    max_connections: streams in flight at once; more wait inside the client (``client_wait_s``).
    """

    def __init__(self, target: Target, *, origin: float | None = None, request_timeout_s: float = 600.0,
                 stall_timeout_s: float = 60.0, connect_timeout_s: float = 10.0,
                 max_connections: int = 1024, tokenizer=None, max_event_bytes: int = limits.MAX_SSE_LINE_BYTES):
        self.target = target
        self.max_event_bytes = max_event_bytes  # one server-sent event line; longer is an error
        self.origin = time.perf_counter() if origin is None else origin
        self.tokenizer = tokenizer
        self.request_timeout_s = request_timeout_s
        self.stall_timeout_s = stall_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_connections = max_connections
        self.chunks = 0  # content chunks received over the client's life (for CPU per chunk)
        self.headers = target.request_headers()
        self.url = target.url
        try:
            self._origin = h1.Origin(self.url, self.headers)
        except ValueError as exc:
            raise VazaoError(str(exc)) from None
        self.pool: h1.Pool | None = None  # open between __aenter__ and __aexit__
        self._slots: asyncio.Semaphore | None = None
        self._pacer = Pacer()

    async def __aenter__(self) -> StreamClient:
        self.pool = h1.Pool(self.connect_timeout_s)
        self._slots = asyncio.Semaphore(self.max_connections)
        return self

    async def __aexit__(self, *exc) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    async def _exchange(self, ex: h1.Exchange, request: bytes, sent: list) -> None:
        async with self._slots:
            await h1.roundtrip(self.pool, self._origin, ex, request, sent)

    async def send(self, request_id: str, prompt: Prompt, *, extra: Mapping | None = None,
                   keep_text: bool = False) -> tuple[RequestRecord, str | None]:
        """Send one streaming request; returns its record and (when keep_text) the streamed text."""
        body = json.dumps(prompt.body(self.target)).encode()
        ex = h1.Exchange(prompt.max_tokens, self.target.api == "chat", keep_text or self.tokenizer is not None,
                         self.max_event_bytes)
        task = asyncio.current_task()
        t_call = time.perf_counter()
        ex.last_read = t_call
        sent = [None]  # when the request is handed to the socket
        error = await self._run(task, ex, body, t_call, sent)
        if error is not None:
            error = redact(error)  # a server may echo the key or a header back in its error text
        try:
            await self._pacer.turn()
        except asyncio.CancelledError:  # the run is ending: this request's record is complete, keep it
            if hasattr(task, "uncancel"):
                task.uncancel()
        self.chunks += ex.chunks
        text = "".join(ex.pieces) if ex.pieces is not None else None
        return self._record(request_id, prompt, ex, error, text, extra, t_call, sent[0] or t_call), text

    async def _run(self, task: asyncio.Task | None, ex: h1.Exchange, body: bytes, t_call: float,
                   sent: list) -> str | None:
        """The exchange under the watchdog; its error as "kind: detail", or None."""
        watchdog = Watchdog(task, ex, self.stall_timeout_s, self.request_timeout_s, t_call)
        try:
            await self._exchange(ex, self._origin.request(body), sent)
            _raise_for(ex)
        except _Abort as exc:
            return str(exc)
        except (asyncio.TimeoutError, OSError) as exc:  # from connecting
            if isinstance(exc, asyncio.TimeoutError) or "timed out" in str(exc):
                return f"connect: timed out after {self.connect_timeout_s:g} s"
            o = self._origin
            return f"connect: cannot connect to {o.host}:{o.port}: {type(exc).__name__}: {str(exc)[:160]}"
        except asyncio.CancelledError:
            why = watchdog.why
            if why is None:
                return "cancelled: the run ended while this request was in flight"
            if hasattr(task, "uncancel"):  # the watchdog's doing: a stall or the request timeout, not the run's end
                task.uncancel()
            return (f"stall: no data for {self.stall_timeout_s:g} s" if why == "stall"
                    else f"timeout: over {self.request_timeout_s:g} s")
        finally:
            watchdog.stop()
        return None

    def _record(self, request_id: str, prompt: Prompt, ex: h1.Exchange, error: str | None, text: str | None,
                extra: Mapping | None, t_call: float, t_send: float) -> RequestRecord:
        """The request's record: token counts from usage, the tokenizer or the chunks, in that order."""
        max_tokens, chunks = prompt.max_tokens, ex.chunks
        tokens_from = "chunks"
        out_tokens = chunks
        usage = _usage(ex.usage)
        if usage and usage.get("completion_tokens") is not None:
            out_tokens, tokens_from = usage["completion_tokens"], "usage"
        elif self.tokenizer is not None and text:
            out_tokens, tokens_from = _count_tokens(self.tokenizer, text), "tokenizer"
        if error is None and out_tokens > max_tokens:
            error = f"ignored_max_tokens: asked for {max_tokens}, got {out_tokens} ({tokens_from})"
        prompt_tokens, prompt_from = prompt.tokens, prompt.tokens_from
        cached = 0
        if usage and usage.get("prompt_tokens") is not None:
            prompt_tokens, prompt_from = usage["prompt_tokens"], "usage"
            cached = usage.get("cached_tokens") or 0
        ex_ = {"chunks": chunks, "tokens_from": tokens_from, "prompt_tokens_from": prompt_from,
               "max_tokens": max_tokens}
        if ex.finish:
            ex_["finish_reason"] = ex.finish
        if ex.rid:
            ex_["response_id"] = cut(str(ex.rid), 80)
        if prompt_from == "usage" and prompt.tokens:
            ex_["planned_prompt_tokens"] = prompt.tokens
        if extra:
            ex_.update(extra)
        if t_send - t_call > 0.0005:  # connection set-up, waiting for a slot, event-loop queueing
            ex_["client_wait_s"] = round(t_send - t_call, 6)
        o = self.origin
        first, last = ex.first, ex.last
        return RequestRecord(
            request_id=request_id,
            source="measured",
            arrival_s=t_send - o,
            prompt_tokens=prompt_tokens,
            output_tokens=out_tokens,
            first_token_s=None if first is None else first - o,
            end_s=None if last is None else last - o,
            itl_s=tuple(ex.gaps),
            cached_prompt_tokens=cached,
            error=error,
            status=ex.status,
            extra=ex_,
        )


def _raise_for(ex: h1.Exchange) -> None:
    """Raise the Abort that a finished exchange's response deserves, if any."""
    status = ex.status
    if ex.abort is not None:
        raise ex.abort
    if ex.lost is not None:
        lost = ex.lost
        where = "before the response head" if status is None else f"after {ex.chunks} chunks"
        raise _Abort("disconnected", f"{type(lost).__name__}: {str(lost)[:120]} ({where})")
    if status != 200:
        detail = _snippet(bytes(ex.body))
        if 300 <= status < 400 and ex.headers.get("location"):
            detail = f"redirected to {cut(ex.headers['location'], 120)}; {detail}"
        raise _Abort(f"http_{status}", detail)
    if not ex.sse:
        ctype = ex.headers.get("content-type", "")
        raise _Abort("not_streaming", f"Content-Type {ctype or 'missing'}; "
                     f"body starts {_snippet(bytes(ex.body), 120)}")
    if ex.sbuf.strip():
        raise _Abort("truncated", f"stream ended mid-line "
                     f"{cut(bytes(ex.sbuf[:4096]).decode('utf-8', 'replace'), 60)!r}")
    if not ex.done and ex.finish is None:
        raise _Abort("truncated", f"no [DONE] and no finish_reason after {ex.chunks} chunks")
    if ex.first is None:
        raise _Abort("empty", f"finish_reason {ex.finish!r} and no content")


_MAX_COUNT = 2**40


def _token_count(v: Any) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < _MAX_COUNT:
        return None
    return int(v)


def _usage(usage: Any) -> dict[str, int] | None:
    """The server's token counts, kept only where they are counts (a hostile or broken server may
    send strings, negatives or 1e300 there)."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    out = {"completion_tokens": _token_count(usage.get("completion_tokens")),
           "prompt_tokens": _token_count(usage.get("prompt_tokens")),
           "cached_tokens": _token_count(details.get("cached_tokens")) if isinstance(details, dict) else None}
    return out


def _snippet(raw: bytes, n: int = 200) -> str:
    """The gist of an error body: the message of an OpenAI-style error object, else its text."""
    text = redact(raw.decode("utf-8", "replace"))  # before any cut: half a secret is still a leak
    with contextlib.suppress(ValueError, RecursionError):
        obj = json.loads(text)
        err = obj.get("error") if isinstance(obj, dict) else None
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:n]
        if isinstance(err, str):
            return err[:n]
        if isinstance(obj, dict) and isinstance(obj.get("detail"), str):
            return obj["detail"][:n]
    return " ".join(text.split())[:n] or "(empty body)"
