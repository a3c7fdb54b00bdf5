"""A lean HTTP/1.1 client for one job: POST a JSON body, read a server-sent event stream, and time
every content event at the moment its bytes come off the socket.

Why not aiohttp for the stream (vazao's bench uses no other HTTP client; see control.py for the
non-streaming setup requests, which go through this module too): aiohttp hands each
read to a StreamReader and wakes the request's task to fetch it, a future, a task step and a dozen
Python frames per chunk, and a timestamp taken in the task is late by every other socket's callback
in that loop iteration. Here the protocol's ``data_received`` takes one ``time.perf_counter()``,
undoes the chunked framing, splits the SSE lines and counts content events itself; the request's
task wakes once, when the response ends. At 512 streams that is the difference between a client
that saturates its core and one that does not.

The parse has a fast path. Each stream's first content event goes through json.loads (for its id)
and, when it is plain (text in ``"content":"…"`` or ``"text":"…"``, unescaped, in the one choice; no
finish_reason, usage or error), its shape is kept: the bytes up to the text, and the bytes after it
with digits removed. A later event with the same bytes up to the text, unescaped text, and the same
bytes after it but for digits (timestamps, counters) is counted without json.loads: it can only
differ from the learnt one in its text and its numbers. Anything else — role and finish events,
usage, errors, escaped text, reasoning fields, several choices — goes through json.loads and the
full rules (and a plain one there teaches the shape anew).

What it does not do, on purpose: redirects (a 3xx is reported as is, with Location: following one
would hand the key and the headers to wherever it points),
proxies, compression (it asks for identity), HTTP/2. Connections are kept alive and reused; a
reused connection that the server had already closed is retried once on a fresh one.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import ssl
import time
from array import array
from base64 import b64encode
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

from vazao import limits
from vazao.loadgen.redact import cut
from vazao.loadgen.waits import within

__all__ = ["Abort", "Exchange", "Origin", "Pool", "roundtrip"]

_DECODE = json.JSONDecoder().decode
_now = time.perf_counter
_MAX_HEAD = 64 * 1024
_MAX_LINE = 8 * 1024  # a chunk-size line or an unfinished trailer longer than this is not HTTP
_SNIPPET = 4096  # bytes of a non-stream body kept for the error message
_DNS_TTL_S = 300.0
_DIGITS = b"0123456789."  # what may differ between two plain content events of one stream
_IDLE_S = 4.0  # a kept-alive connection idle longer than this is not reused (uvicorn closes at 5 s)

HEAD, BODY, ENDED = 0, 1, 2


class Abort(Exception):
    """A stream that must end now, as the named error kind (see client.ERROR_KINDS)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind


class Origin:
    """Where one URL's requests go, with the request head prepared once."""

    def __init__(self, url: str, headers: Mapping[str, str], method: str = "POST"):
        parts = urlsplit(url)
        self.scheme = parts.scheme
        self.host = parts.hostname or ""
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.key = (self.scheme, self.host, self.port)
        self.ssl: ssl.SSLContext | None = ssl.create_default_context() if parts.scheme == "https" else None
        try:
            ipaddress.ip_address(self.host)
            self.literal = True
        except ValueError:
            self.literal = False
        host_header = parts.netloc.rsplit("@", 1)[-1]
        if (parts.scheme, parts.port) in (("http", 80), ("https", 443)):
            host_header = host_header.rsplit(":", 1)[0]
        path = quote(parts.path or "/", safe="/%:@!$&'()*+,;=-._~")
        if parts.query:
            path += "?" + parts.query
        fields = {"Host": host_header, "User-Agent": "vazao-bench", "Accept": "text/event-stream",
                  "Accept-Encoding": "identity", "Content-Type": "application/json"}
        if method == "GET":
            del fields["Content-Type"]
        if parts.username is not None:  # as aiohttp does: user:password in the URL is Basic auth
            cred = f"{parts.username}:{parts.password or ''}".encode()
            fields["Authorization"] = "Basic " + b64encode(cred).decode()
        lower = {k.lower(): k for k in fields}
        for k, v in headers.items():
            if any(c in str(k) + str(v) for c in "\r\n\0"):
                raise ValueError(f"header {k!r} holds a line break")
            fields.pop(lower.get(k.lower(), k), None)
            fields[k] = v
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
        self.head = head.encode("latin-1")

    def request(self, body: bytes | None) -> bytes:
        """The request's bytes; a body of None sends no Content-Length (a GET)."""
        if body is None:
            return self.head + b"\r\n"
        return b"%sContent-Length: %d\r\n\r\n%s" % (self.head, len(body), body)


class Exchange:
    """One request's response, parsed as it arrives; the result is in its fields once `fut` is done.

    Times are time.perf_counter() values: `first`/`last` the reads that carried the first/last
    content event, `gaps` every gap between consecutive content events, `last_read` the last read
    of any kind (for the stall watchdog)."""

    __slots__ = ("fut", "conn", "api_key", "max_tokens", "pieces", "phase", "hbuf", "status", "version",
                 "headers", "sse", "keep_alive", "feed_body", "left", "cbuf", "trailer", "sbuf", "body",
                 "first", "last", "gaps", "chunks", "rid", "usage", "finish", "done", "abort", "lost",
                 "complete", "last_read", "got_bytes", "hot", "pre", "pre_len", "tail", "tail_mask",
                 "tail_line", "tail_line_mask", "max_line", "stream", "body_cap")

    def __init__(self, max_tokens: int, chat: bool, keep_text: bool, max_line: int = limits.MAX_SSE_LINE_BYTES,
                 stream: bool = True, body_cap: int = _SNIPPET):
        """stream=False: the body is kept (up to body_cap bytes), never parsed as events."""
        self.max_line = max_line
        self.stream = stream
        self.body_cap = body_cap
        self.api_key = b'"content":"' if chat else b'"text":"'
        self.max_tokens = max_tokens
        self.pieces: list[str] | None = [] if keep_text else None
        self.gaps = array("d")
        self.first = self.last = self.rid = self.usage = self.finish = None
        self.chunks = 0
        self.done = False
        self.last_read = 0.0
        self.hot = False
        self.pre = self.tail = self.tail_mask = self.tail_line = self.tail_line_mask = None
        self.pre_len = 0
        self.fut: asyncio.Future | None = None
        self.conn: Connection | None = None
        self.restart()

    def restart(self) -> None:
        """Before each attempt: nothing received yet."""
        self.fut = asyncio.get_running_loop().create_future()
        self.phase = HEAD
        self.hbuf = self.cbuf = self.sbuf = b""
        self.status = self.version = None
        self.headers: dict[str, str] = {}
        self.sse = False
        self.keep_alive = False
        self.feed_body = None
        self.left = 0
        self.trailer = False
        self.body = bytearray()
        self.abort: Abort | None = None
        self.lost: BaseException | None = None
        self.complete = False
        self.got_bytes = False

    # ---- endings --------------------------------------------------------------------------
    def _end(self) -> None:
        """The response is complete (its framing says so)."""
        self.phase = ENDED
        self.hot = False
        self.complete = True
        conn = self.conn
        if conn is not None:
            conn.exchange = None
            if not self.keep_alive:
                conn.close()
        if not self.fut.done():
            self.fut.set_result(None)

    def _fail(self, abort: Abort) -> None:
        """Stop reading: the stream is wrong in a way the record must say."""
        self.abort = abort
        self.phase = ENDED
        self.hot = False
        if self.conn is not None:
            self.conn.exchange = None
            self.conn.close()
        if not self.fut.done():
            self.fut.set_result(None)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self.phase == ENDED:
            return
        if self.phase == BODY and self.feed_body == self._until_eof:
            self.keep_alive = False
            self._end()  # a body delimited by the connection's close
            return
        self.lost = exc if exc is not None else ConnectionResetError("the server closed the connection")
        self.phase = ENDED
        self.hot = False
        if not self.fut.done():
            self.fut.set_result(None)

    # ---- the head --------------------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Everything read off the socket for this exchange (the connection's data_received)."""
        now = _now()
        self.last_read = now
        if self.hot:
            # The common read: one whole HTTP chunk holding one content event shaped like the
            # stream's last plain one (same bytes up to the text; after it, the same bytes but for
            # digits: timestamps). Counted without json.loads; anything else takes the full path.
            j = data.find(b"\r\n", 0, 12)
            if j > 0:
                try:
                    size = int(data[:j], 16)
                except ValueError:
                    size = 0
                end = j + 2 + size
                if size and len(data) == end + 2 and data.startswith(self.pre, j + 2):
                    s = j + 2 + self.pre_len
                    e = data.find(b'"', s, end)
                    if e > s and data.find(b"\\", s, e) < 0 and data.find(b"\n", s, e) < 0:
                        tail = data[e:end]
                        if tail == self.tail or tail.translate(None, _DIGITS) == self.tail_mask:
                            n = self.chunks = self.chunks + 1
                            self.gaps.append(now - self.last)
                            self.last = now
                            if self.pieces is not None or n > self.max_tokens:
                                self._count_checks(data, s, e)
                            return
        if self.phase == BODY:
            self.feed_body(data, now)
        elif self.phase == HEAD:
            self.got_bytes = True
            self._head(data, now)
        self.hot = (self.phase == BODY and self.sse and self.pre is not None and self.feed_body == self._chunked
                    and not self.cbuf and not self.left and not self.sbuf and not self.trailer)

    def _count(self, raw: bytes, s: int, e: int, now: float) -> None:
        """One more content event (not the stream's first), its text raw[s:e] (no escapes in it)."""
        self.chunks += 1
        self.gaps.append(now - self.last)
        self.last = now
        self._count_checks(raw, s, e)

    def _count_checks(self, raw: bytes, s: int, e: int) -> None:
        if self.pieces is not None:
            try:
                self.pieces.append(raw[s:e].decode())
            except UnicodeDecodeError:
                self._fail(Abort("malformed_sse", repr(raw[s:s + 80])))
                return
        if self.chunks > self.max_tokens:
            self._fail(Abort("ignored_max_tokens",
                             f"asked for {self.max_tokens}, got more than {self.max_tokens} chunks"))

    def _head(self, data: bytes, now: float) -> None:
        buf = self.hbuf + data if self.hbuf else data
        i = buf.find(b"\r\n\r\n")
        if i < 0:
            if len(buf) > _MAX_HEAD:
                self._fail(Abort("disconnected", f"response head over {_MAX_HEAD} bytes"))
            else:
                self.hbuf = buf
            return
        self.hbuf = b""
        lines = buf[:i].decode("latin-1").split("\r\n")
        rest = buf[i + 4:]
        status_line = lines[0].split(" ", 2)
        try:
            version, status = status_line[0], int(status_line[1])
            if not version.startswith("HTTP/1."):
                raise ValueError(version)
        except (ValueError, IndexError):
            self._fail(Abort("disconnected", f"not an HTTP/1.x response: {cut(lines[0], 80)!r}"))
            return
        if 100 <= status < 200 and status != 101:  # interim responses: the real one follows
            if rest:
                self._head(rest, now)
            return
        headers = self.headers
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.status, self.version = status, version
        connection = headers.get("connection", "").lower()
        self.keep_alive = "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        ctype = headers.get("content-type", "").lower()
        self.sse = self.stream and status == 200 and ctype.startswith("text/event-stream")
        self.phase = BODY
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self.feed_body = self._chunked
        elif "content-length" in headers or status in (204, 304):
            try:
                self.left = int(headers.get("content-length", "0"))
            except ValueError:
                self._fail(Abort("disconnected", f"bad Content-Length {cut(headers['content-length'], 40)!r}"))
                return
            self.feed_body = self._counted
            if self.left <= 0:
                self._end()
                return
        else:
            self.keep_alive = False
            self.feed_body = self._until_eof
        if rest:
            self.feed_body(rest, now)

    # ---- body framings ------------------------------------------------------------------------
    def _chunked(self, data: bytes, now: float) -> None:
        if self.cbuf:
            data = self.cbuf + data
            self.cbuf = b""
        sink = self._sse if self.sse else self._collect
        left = self.left  # bytes of the current chunk still to come, its CRLF included
        pos, n = 0, len(data)
        while pos < n:
            if left:
                if left > 2:
                    end = pos + left - 2
                    if end > n:
                        end = n
                    left -= end - pos
                    sink(data[pos:end], now)
                    pos = end
                    if self.phase != BODY:
                        return
                else:
                    take = left if left <= n - pos else n - pos
                    left -= take
                    pos += take
                continue
            j = data.find(b"\r\n", pos)
            if j < 0:
                if n - pos > _MAX_LINE:
                    self._fail(Abort("disconnected", "a chunked-encoding line over 8 KiB"))
                    return
                self.cbuf = data[pos:]
                break
            if self.trailer:
                if j == pos:  # the blank line after the last chunk: the response is complete
                    self.left = 0
                    self._end()
                    return
                pos = j + 2
                continue
            try:
                size = int(data[pos:j].split(b";", 1)[0], 16)
            except ValueError:
                self._fail(Abort("disconnected", f"bad chunk size {cut(data[pos:j].decode('latin-1'), 40)!r}"))
                return
            pos = j + 2
            if size:
                left = size + 2
            else:
                self.trailer = True
        self.left = left

    def _counted(self, data: bytes, now: float) -> None:
        left = self.left
        if len(data) > left:
            data = data[:left]
        self.left = left - len(data)
        (self._sse if self.sse else self._collect)(data, now)
        if self.left == 0 and self.phase == BODY:
            self._end()

    def _until_eof(self, data: bytes, now: float) -> None:
        (self._sse if self.sse else self._collect)(data, now)

    def _collect(self, data: bytes, now: float) -> None:
        body, cap = self.body, self.body_cap
        if len(body) < cap:
            body += data[:cap - len(body)]
            if len(body) >= cap:  # enough for the message (or over the caller's limit): stop reading
                self.keep_alive = False
                self._end()

    # ---- server-sent events -----------------------------------------------------------------------
    def _sse(self, data: bytes, now: float) -> None:
        """Complete SSE lines; every content event in them is timed `now` (the read that brought it).
        A line that spans reads grows in place (a bytearray: each byte copied a bounded number of
        times, however many reads it takes) and is refused past max_line."""
        sbuf = self.sbuf
        if sbuf:
            if b"\n" not in data:  # the line goes on (the buffer holds no newline, by construction)
                if len(sbuf) + len(data) > self.max_line:
                    self._too_long(len(sbuf) + len(data))
                    return
                if type(sbuf) is bytes:
                    sbuf = self.sbuf = bytearray(sbuf)
                sbuf += data
                return
            data = (bytes(sbuf) if type(sbuf) is bytearray else sbuf) + data
        lines = data.split(b"\n")
        rest = lines.pop()
        if len(rest) > self.max_line or (sbuf and len(lines[0]) > self.max_line):
            self._too_long(max(len(rest), len(lines[0])))
            return
        self.sbuf = rest
        for line in lines:
            pre = self.pre
            if pre is not None and line.startswith(pre):  # shaped like the last plain content event
                s = self.pre_len
                e = line.find(b'"', s)
                if e > s and line.find(b"\\", s, e) < 0:
                    tail = line[e:]
                    if tail == self.tail_line or tail.translate(None, _DIGITS) == self.tail_line_mask:
                        self._count(line, s, e, now)
                        if self.phase != BODY:
                            return
                        continue
            if line[:5] != b"data:":
                continue  # blank separators, comments, event:/id: fields
            try:
                self._event(line, now)
            except Abort as exc:
                self._fail(exc)
                return

    def _too_long(self, size: int) -> None:
        self._fail(Abort("sse_line_too_long", f"a server-sent event line over {self.max_line:,} bytes "
                         f"(at least {size:,})"))

    def _event(self, line: bytes, now: float) -> None:
        """One data: line, by the full rules (json.loads). A line of the wrong shape (choices not a
        list of objects, text not a string, usage not an object) is malformed, never a crash."""
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            obj = _DECODE(payload.decode())
            text, fr, u, err = _fields(obj)
        except (ValueError, AttributeError, TypeError, KeyError, IndexError, RecursionError):
            raise Abort("malformed_sse", repr(cut(payload[:4096].decode("utf-8", "replace"), 80))) from None
        if text:
            self.chunks += 1
            if self.first is None:
                self.first = now
                rid = obj.get("id")
                self.rid = rid if isinstance(rid, (str, int)) else None
            else:
                self.gaps.append(now - self.last)
            self.last = now
            if self.pieces is not None:
                self.pieces.append(text)
            if self.chunks > self.max_tokens:
                raise Abort("ignored_max_tokens",
                            f"asked for {self.max_tokens}, got more than {self.max_tokens} chunks")
        if fr:
            self.finish = cut(fr, 80)
        if u:
            self.usage = u
        if err:
            msg = err.get("message", err) if isinstance(err, dict) else err
            raise Abort("server_error", cut(str(msg), 200))
        if text and not fr and not u:
            self._learn(line, text)

    def _learn(self, line: bytes, text: str) -> None:
        """Keep a plain content event's shape for the fast path, when its raw bytes show the text
        where json.loads found it: once, unescaped, in the field the key names."""
        key = self.api_key
        k = line.find(key)
        if k < 0:
            return
        s = k + len(key)
        e = line.find(b'"', s)
        if e <= s or line.find(b"\\", s, e) >= 0 or line.find(key, e) >= 0 or line[s:e] != text.encode():
            return
        self.pre, self.pre_len = line[:s], s
        self.tail_line = line[e:]
        self.tail_line_mask = self.tail_line.translate(None, _DIGITS)
        self.tail = self.tail_line + b"\n\n"
        self.tail_mask = self.tail_line_mask + b"\n\n"


def _fields(obj: dict) -> tuple[str | None, str | None, dict | None, object]:
    """(content text, finish_reason, usage, error) of one parsed event; TypeError on a wrong shape."""
    choices = obj.get("choices")
    text = fr = None
    if choices:
        c = choices[0]
        d = c.get("delta")
        if d is not None:
            text = d.get("content") or d.get("reasoning_content") or d.get("reasoning")
        else:
            text = c.get("text")
        fr = c.get("finish_reason")
        if (text and not isinstance(text, str)) or (fr and not isinstance(fr, str)):
            raise TypeError("content and finish_reason must be strings")
    u = obj.get("usage")
    if u and not isinstance(u, dict):
        raise TypeError("usage must be an object")
    return text, fr, u, obj.get("error")


class Connection(asyncio.Protocol):
    """One kept-alive HTTP/1.1 connection; feeds whatever it reads to the exchange it carries."""

    def __init__(self, pool: Pool, key: tuple):
        self.pool, self.key = pool, key
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.closed = False
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        ex = self.exchange
        if ex is None:  # bytes nobody asked for: the connection is not in a known state
            self.close()
            return
        ex.feed(data)

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.pool.forget(self)
        ex, self.exchange = self.exchange, None
        if ex is not None:
            ex.connection_lost(exc)

    def start(self, ex: Exchange, request: bytes) -> None:
        ex.conn = self
        if self.closed or self.transport.is_closing():  # closed by the server since it was handed out
            ex.connection_lost(ConnectionResetError("the server closed the connection before the request"))
            return
        self.exchange = ex
        self.transport.write(request)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.transport is not None:
                self.transport.close()


class Pool:
    """Kept-alive connections per (scheme, host, port), a DNS cache, and the connect timeout."""

    def __init__(self, connect_timeout_s: float):
        self.connect_timeout_s = connect_timeout_s
        self.idle: dict[tuple, list[Connection]] = {}
        self.open: set[Connection] = set()
        self.dns: dict[tuple, tuple[float, list]] = {}

    async def get(self, origin: Origin, fresh: bool = False) -> tuple[Connection, bool]:
        """A connection to `origin` and whether it is a reused one."""
        idle = self.idle.get(origin.key)
        if idle and not fresh:
            now = time.monotonic()
            while idle:
                c = idle.pop()
                if not c.closed and now - c.idle_since < _IDLE_S and not c.transport.is_closing():
                    return c, True
                c.close()
        return await self._connect(origin), False

    def put(self, conn: Connection) -> None:
        if conn.closed or conn.exchange is not None or conn.transport.is_closing():
            conn.close()
            return
        conn.idle_since = time.monotonic()
        self.idle.setdefault(conn.key, []).append(conn)

    def forget(self, conn: Connection) -> None:
        self.open.discard(conn)

    async def _addresses(self, origin: Origin) -> list:
        if origin.literal:
            return [origin.host]
        key = (origin.host, origin.port)
        hit = self.dns.get(key)
        if hit is not None and hit[0] > time.monotonic():
            return hit[1]
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(origin.host, origin.port, type=socket.SOCK_STREAM)
        addrs = list(dict.fromkeys(info[4][0] for info in infos))
        self.dns[key] = (time.monotonic() + _DNS_TTL_S, addrs)
        return addrs

    async def _connect(self, origin: Origin) -> Connection:
        loop = asyncio.get_running_loop()

        async def attempt() -> Connection:
            error: Exception | None = None
            for addr in await self._addresses(origin):
                try:
                    _, conn = await loop.create_connection(
                        lambda: Connection(self, origin.key), addr, origin.port, ssl=origin.ssl,
                        server_hostname=origin.host if origin.ssl else None)
                    return conn
                except OSError as exc:
                    error = exc
            raise error or OSError(f"no address for {origin.host}")

        # a connection made as the request is cancelled is closed, not left open (loadgen/waits.py)
        conn = await within(attempt(), self.connect_timeout_s, abandon=lambda late: late.close())
        self.open.add(conn)
        return conn

    def close(self) -> None:
        for conn in list(self.open):
            conn.close()
        self.open.clear()
        self.idle.clear()


async def roundtrip(pool: Pool, origin: Origin, ex: Exchange, request: bytes, sent: list) -> None:
    """Send on a kept-alive connection (or a new one) and wait for the response to end; a reused
    connection that turns out closed before any byte came back is retried once on a fresh one.
    sent[0] is when the request was handed to the socket."""
    for attempt in (0, 1):
        conn, reused = await pool.get(origin, fresh=attempt > 0)
        sent[0] = time.perf_counter()
        conn.start(ex, request)
        try:
            await ex.fut
        except BaseException:
            conn.close()  # cancelled mid-response: the connection is in an unknown state
            raise
        if ex.lost is not None and reused and not ex.got_bytes and attempt == 0:
            ex.restart()
            continue
        if ex.complete and ex.keep_alive and ex.abort is None:
            pool.put(conn)
        else:
            conn.close()
        return
