"""The run's non-streaming requests (server facts, /metrics, tokenize): one request, one whole
response, over the same lean HTTP/1.1 client and connection pool as the streams (h1.py).

Redirects are never followed: the request carries the API key and the `-H` headers, and a redirect
may point at another host. A 3xx comes back as it is, its Location resolved against the URL.
"""

from __future__ import annotations

import asyncio
import json as _json
from dataclasses import dataclass, field
from urllib.parse import urljoin

from vazao.loadgen import h1

__all__ = ["Reply", "call"]


@dataclass(frozen=True)
class Reply:
    """status: the HTTP status; headers: lower-cased names; body: None when it ran over max_body
    bytes; location: a 3xx's target, absolute."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = b""
    location: str | None = None


async def call(pool: h1.Pool, method: str, url: str, headers: dict[str, str], *, json: object = None,
               timeout_s: float = 5.0, max_body: int = 8 * 2**20) -> Reply:
    """One request with an optional JSON body, the whole exchange within timeout_s. Raises OSError
    (connect), asyncio.TimeoutError, ValueError (a header with a line break) or h1.Abort (a
    response that is not HTTP); a dropped connection is a ConnectionError."""
    origin = h1.Origin(url, headers, method=method)
    body = None if json is None else _json.dumps(json).encode()
    if body is None and method != "GET":
        body = b""
    # One byte over the limit tells "too long" from "exactly the limit".
    ex = h1.Exchange(0, True, False, stream=False, body_cap=max_body + 1)
    await asyncio.wait_for(h1.roundtrip(pool, origin, ex, origin.request(body), [None]), timeout_s)
    if ex.abort is not None:
        raise ex.abort
    if ex.lost is not None or ex.status is None:
        raise ConnectionError(f"{url}: the connection dropped before the response ended")
    location = ex.headers.get("location")
    raw = bytes(ex.body)
    return Reply(status=ex.status, headers=ex.headers, body=None if len(raw) > max_body else raw,
                 location=urljoin(url, location) if location is not None else None)
