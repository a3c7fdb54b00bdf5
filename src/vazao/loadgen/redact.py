"""Secrets never leave the process: every configured secret (the API key from the environment, every
`-H` header value, user:password in the URL) is replaced by ``[redacted]`` in any text a bench
run writes — records, result files, stdout, stderr, warnings — because a server may echo them back
(``401: Incorrect API key provided: sk-…``) and its words end up in error messages.

One process-wide set, filled by the command that knows the secrets (``scope``) and applied where
text leaves: RecordLog lines, error strings, the CLI's printed and written output. Applying it is a
few ``str.replace`` scans per line written, never per streamed chunk."""

from __future__ import annotations

import contextlib
import json
from base64 import b64encode
from collections.abc import Iterable, Iterator, Mapping
from urllib.parse import unquote, urlsplit

__all__ = ["MASK", "MIN_SECRET_CHARS", "active", "cut", "header_secrets", "redact", "redact_obj", "scope",
           "url_secrets"]

MASK = "[redacted]"
# Shorter values (`-H 'X-Debug: 1'`) are not secrets, and masking every "1" would wreck the output.
MIN_SECRET_CHARS = 4

_secrets: tuple[str, ...] = ()


# Headers whose values describe the request, not who sends it: masking "application/json" everywhere
# would only make the output harder to read.
NOT_SECRET_HEADERS = frozenset({"accept", "accept-encoding", "accept-language", "cache-control", "connection",
                                "content-type", "user-agent"})


def header_secrets(headers: Mapping[str, str]) -> list[str]:
    """The values of the -H headers that may carry a credential (all but NOT_SECRET_HEADERS)."""
    return [str(v) for k, v in headers.items() if str(k).strip().lower() not in NOT_SECRET_HEADERS]


def url_secrets(url: str) -> list[str]:
    """user:password in a URL, raw and percent-decoded, and the password and user on their own."""
    try:
        parts = urlsplit(url)
        user, password = parts.username, parts.password
    except ValueError:
        return []
    out: list[str] = []
    netloc = parts.netloc
    if "@" in netloc:
        out.append(netloc.rsplit("@", 1)[0])
    for v in (password, user):
        if v:
            out += [v, unquote(v)]
    if user is not None:  # sent as Basic auth: a server that echoes its headers shows this form
        out.append(b64encode(f"{user}:{password or ''}".encode()).decode())
    return out


def _expand(values: Iterable[str | None]) -> tuple[str, ...]:
    """The secrets and the pieces a server may echo alone (the token of 'Bearer <token>');
    longest first, so a secret that contains another is masked whole."""
    found: set[str] = set()
    for v in values:
        if not v:
            continue
        v = str(v).strip()
        found.add(v)
        scheme, _, token = v.partition(" ")
        if token.strip() and scheme.lower() in ("bearer", "basic", "token", "apikey", "api-key"):
            found.add(token.strip())
    found |= {json.dumps(s)[1:-1] for s in found}  # as it appears inside a JSON string
    return tuple(sorted((s for s in found if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True))


@contextlib.contextmanager
def scope(values: Iterable[str | None]) -> Iterator[None]:
    """Add `values` to the secrets for the duration (the previous set comes back after)."""
    global _secrets
    before = _secrets
    _secrets = tuple(sorted(set(before) | set(_expand(values)), key=len, reverse=True))
    try:
        yield
    finally:
        _secrets = before


def active() -> bool:
    return bool(_secrets)


def redact(text: str) -> str:
    if not _secrets or not text:
        return text
    for s in _secrets:
        if s in text:
            text = text.replace(s, MASK)
    return text


def cut(text: str, n: int) -> str:
    """At most n characters of text, masked first: a secret cut in two would leak its first half."""
    return redact(text)[:n]


def redact_obj(obj):
    """The same over every string of a JSON-shaped value (keys included)."""
    if not _secrets:
        return obj
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        return {redact_obj(k): redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj
