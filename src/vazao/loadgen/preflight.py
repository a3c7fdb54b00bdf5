"""Before the load: ask the server about itself, send probe requests that turn bad input (wrong
URL, wrong path, a refused key, a server that does not stream or ignores max_tokens) into one
clear message, and calibrate prompt sizes against the server's own token counts."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from vazao.errors import VazaoError
from vazao.loadgen import h1, server_facts
from vazao.loadgen.client import API_PATHS, Prompt, StreamClient, error_kind
from vazao.loadgen.prompts import Sizing, TextMaker, sizing_from_usage
from vazao.loadgen.records import RecordLog
from vazao.results import RequestRecord

__all__ = ["BenchRefused", "Preflight", "preflight"]

PROBE_MAX_TOKENS = 4
SHORT_WORDS, LONG_WORDS = 8, 200


class BenchRefused(VazaoError):
    """The server cannot be benchmarked as asked; the message says why and what to change."""


@dataclass
class Preflight:
    model: str | None
    sizing: Sizing
    usage: bool  # the server reports usage in streams
    facts: dict[str, Any] = field(default_factory=dict)
    probes: list[RequestRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _probe_prompt(maker: TextMaker, words: int, key: str) -> Prompt:
    return Prompt(PROBE_MAX_TOKENS, text=maker.text(words, key), tokens=0, tokens_from="probe")


def refusal(rec: RequestRecord, client: StreamClient) -> str | None:
    """A message when a probe's failure means the run cannot go on; None when it can."""
    kind = error_kind(rec.error)
    t = client.target
    url = t.safe_url
    if kind is None:
        return None
    detail = rec.error.split(":", 1)[1].strip() if ":" in rec.error else ""
    if kind == "connect":
        return f"cannot reach {url}: {detail}"
    if kind in ("http_401", "http_403"):
        env = t.api_key_env
        hint = (f"the key in ${env} was refused" if t.api_key() else
                f"no API key was sent (set ${env}, or name another variable with --api-key-env)")
        return f"{url} answered HTTP {rec.status} ({detail}): {hint}"
    if kind in ("http_404", "http_405"):
        return (f"POST {t.safe_url.rstrip('/')}{API_PATHS[t.api]} answered HTTP "
                f"{rec.status} ({detail}): wrong path or model? the URL must be the API base, e.g. "
                "http://127.0.0.1:8080/v1")
    if kind == "not_streaming":
        return f"{url} does not stream ({detail}); vazao bench needs server-sent events"
    if kind == "ignored_max_tokens":
        return f"{url} ignores max_tokens ({detail}); measured lengths would not match the workload"
    if kind.startswith("http_"):
        return f"{url} answered a probe request with HTTP {rec.status}: {detail}"
    return f"a probe request to {url} failed: {rec.error}"


async def _tokenize(pool: h1.Pool, root: str, model: str | None, headers: dict,
                    text: str, redirects: list) -> tuple[str, int] | None:
    attempts = [("/extras/tokenize", {"input": text}), ("/tokenize", {"content": text})]
    if model:
        attempts.append(("/tokenize", {"model": model, "prompt": text}))
    for path, body in attempts:
        status, obj, _ = await server_facts.fetch(pool, "POST", root + path, headers, json=body,
                                                  timeout_s=10.0, redirects=redirects)
        if status != 200:
            continue
        if isinstance(obj, dict):
            if isinstance(obj.get("count"), int):
                return path, obj["count"]
            if isinstance(obj.get("tokens"), list):
                return path, len(obj["tokens"])
    return None


async def preflight(client: StreamClient, maker: TextMaker, log: RecordLog | None = None,
                    probe: bool = True) -> Preflight:
    t = client.target
    facts = await server_facts.collect(client.pool, t.base_url, t.root_url, client.headers)
    model = t.model
    if model is None and facts.get("models"):
        model = facts["models"][0].get("id")
        client.target = dataclasses.replace(t, model=model)
        t = client.target
    pre = Preflight(model=model, sizing=Sizing(), usage=False, facts=facts)
    redirects = [(r["url"], r["location"]) for r in facts.get("redirects_refused", ())]
    try:
        await _probe(client, maker, log, pre, probe, redirects)
    finally:
        if (note := server_facts.redirect_note(redirects)) is not None:
            pre.notes.insert(0, note)
            facts["redirects_refused"] = [{"url": u, "location": loc[:300]} for u, loc in redirects]
    return pre


async def _probe(client: StreamClient, maker: TextMaker, log: RecordLog | None, pre: Preflight, probe: bool,
                 redirects: list) -> None:
    t = client.target
    model = pre.model
    if not probe:
        pre.notes.append("probe skipped: prompt sizes assume one token per word")
        return

    async def send(words: int, key: str) -> RequestRecord:
        rec, _ = await client.send(f"probe-{key}", _probe_prompt(maker, words, key))
        pre.probes.append(rec)
        if log is not None:
            log.record(rec, kind="probe")
        if error_kind(rec.error) == "cancelled":  # the run is ending (Ctrl-C, SIGTERM, --max-time)
            raise asyncio.CancelledError
        return rec

    short = await send(SHORT_WORDS, "short")
    if short.status == 400 and t.include_usage and "stream_options" in (short.error or ""):
        client.target = dataclasses.replace(t, include_usage=False)
        t = client.target
        pre.notes.append("the server refused stream_options; token counts come from the stream")
        short = await send(SHORT_WORDS, "short-nousage")
    if (msg := refusal(short, client)) is not None:
        raise BenchRefused(msg)
    pre.usage = short.extra.get("prompt_tokens_from") == "usage"

    if maker.tokenizer is not None:
        overhead = 0
        if pre.usage:
            counted = maker.count(maker.text(SHORT_WORDS, "short"))
            overhead = max(0, short.prompt_tokens - counted)
        pre.sizing = Sizing(1.0, overhead, "tokenizer.json (one-token words only)")
    elif pre.usage:
        long = await send(LONG_WORDS, "long")
        if (msg := refusal(long, client)) is not None:
            raise BenchRefused(msg)
        if long.extra.get("prompt_tokens_from") == "usage":
            pre.sizing = sizing_from_usage((SHORT_WORDS, LONG_WORDS), (short.prompt_tokens, long.prompt_tokens),
                                           "server usage on two probe prompts")
    else:
        a = await _tokenize(client.pool, t.root_url, model, client.headers, maker.text(SHORT_WORDS, "short"),
                            redirects)
        b = await _tokenize(client.pool, t.root_url, model, client.headers, maker.text(LONG_WORDS, "long"),
                            redirects) if a else None
        if a and b:
            pre.sizing = sizing_from_usage((SHORT_WORDS, LONG_WORDS), (a[1], b[1]), f"server {a[0]}")
            if t.api == "chat":
                pre.notes.append("prompt sizes from the server's tokenizer; the chat template's own "
                                 "tokens are not counted")
        else:
            pre.notes.append("the server reports no usage and offers no tokenize endpoint: prompt sizes "
                             "assume one token per word (pass --tokenizer for exact sizes)")
