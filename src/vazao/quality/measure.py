"""The requests of a `vazao quality` run: each prompt to both endpoints at once, one prompt at a time,
greedy (temperature 0), non-streaming, over loadgen's HTTP/1.1 client (loadgen.control, the pool of
loadgen.h1); the servers' models read from /v1/models (loadgen.server_facts.fetch). Redirects are never
followed (the request carries the API key); every error is one VazaoError line with the key and the -H
values masked (loadgen.redact: the caller holds redact.scope over the run).

Two endpoints that count the same prompt differently (usage.prompt_tokens) have different tokenizers: they
are not two formats of one model, and the run is refused rather than compared."""

from __future__ import annotations

import asyncio
import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.loadgen import control, h1, redact, server_facts
from vazao.loadgen.client import Target
from vazao.quality.compare import Answer, compare
from vazao.quality.prompts import PromptItem
from vazao.quality.result import METRICS, PromptResult, QualityMeasurement

CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class _Side:
    role: str  # reference | candidate
    target: Target
    model: str  # what the requests name ("" when the server lists none)
    logprobs: bool = True  # still asked for (a server that refuses them is asked without)


def _where(side: _Side) -> str:
    return f"{side.role} {side.target.safe_url}"


def _headers(target: Target) -> dict[str, str]:
    return {**target.request_headers(), "Accept": "application/json"}


async def _model(pool: h1.Pool, role: str, target: Target) -> str:
    """The model to name: the one asked for, checked against /v1/models where the server lists them."""
    url = target.base_url.rstrip("/") + "/models"
    status, body, _ = await server_facts.fetch(pool, "GET", url, _headers(target), timeout_s=CONNECT_TIMEOUT_S)
    where = f"{role} {target.safe_url}"
    if status is None:
        raise VazaoError(f"{where}: could not connect (is the server up at that URL?)")
    if status in (401, 403):
        raise VazaoError(f"{where}: refused with HTTP {status} (check the API key or headers)")
    served = [m["id"] for m in body.get("data", []) if isinstance(m, dict) and isinstance(m.get("id"), str)] \
        if status == 200 and isinstance(body, dict) and isinstance(body.get("data"), list) else []
    if target.model:
        if served and target.model not in served:
            raise VazaoError(f"{where} does not serve model {target.model[:80]!r} (it serves: "
                             f"{', '.join(s[:80] for s in served[:5])}): mismatched models")
        return target.model
    if len(served) > 1:
        raise VazaoError(f"{role}_model: {where} serves {len(served)} models; name one", parameter=f"{role}_model")
    return served[0] if served else ""


def _body(side: _Side, item: PromptItem, max_tokens: int, top_k: int) -> dict[str, Any]:
    b: dict[str, Any] = {"max_tokens": max_tokens, "temperature": 0.0, "top_p": 1.0, "stream": False, "seed": 0}
    if side.model:
        b["model"] = side.model
    if side.target.api == "chat":
        b["messages"] = item.chat_messages()
        if side.logprobs and top_k:
            b.update(logprobs=True, top_logprobs=top_k)
    else:
        b["prompt"] = item.completion_text()
        if side.logprobs and top_k:
            b["logprobs"] = top_k
    b.update(side.target.extra_body)
    return b


def _top(entries: Any) -> tuple[tuple[str, float], ...]:
    """One position's alternatives: a {token: logprob} mapping (completions) or [{token, logprob}] (chat)."""
    pairs: list[tuple[Any, Any]]
    if isinstance(entries, Mapping):
        pairs = list(entries.items())
    elif isinstance(entries, list):
        pairs = [(e.get("token"), e.get("logprob")) for e in entries if isinstance(e, Mapping)]
    else:
        return ()
    return tuple((t, float(lp)) for t, lp in pairs
                 if isinstance(t, str) and isinstance(lp, (int, float)) and not isinstance(lp, bool)
                 and lp > -1e30)


def parse_answer(body: Any, api: str) -> Answer | None:
    """An OpenAI-compatible completion body as an Answer (None: it holds no choice)."""
    if not isinstance(body, Mapping) or not isinstance(body.get("choices"), list) or not body["choices"]:
        return None
    choice = body["choices"][0]
    if not isinstance(choice, Mapping):
        return None
    tokens: tuple[str, ...] | None = None
    top = None
    lp = choice.get("logprobs")
    if api == "chat":
        msg = choice.get("message")
        text = msg.get("content") if isinstance(msg, Mapping) else None
        content = lp.get("content") if isinstance(lp, Mapping) else None
        if isinstance(content, list) and all(isinstance(e, Mapping) and isinstance(e.get("token"), str)
                                             for e in content):
            tokens = tuple(e["token"] for e in content)
            top = tuple(_top(e.get("top_logprobs")) for e in content)
    else:
        text = choice.get("text")
        if isinstance(lp, Mapping) and isinstance(lp.get("tokens"), list) and \
                all(isinstance(t, str) for t in lp["tokens"]):
            tokens = tuple(lp["tokens"])
            tops = lp.get("top_logprobs")
            top = tuple(_top(t) for t in tops) if isinstance(tops, list) and len(tops) == len(tokens) else None
    usage = body.get("usage")
    prompt_tokens = usage.get("prompt_tokens") if isinstance(usage, Mapping) else None
    return Answer(text if isinstance(text, str) else "", tokens, top,
                  prompt_tokens if isinstance(prompt_tokens, int) and not isinstance(prompt_tokens, bool) else None)


async def _ask(pool: h1.Pool, side: _Side, item: PromptItem, n: int, *, max_tokens: int, top_k: int,
               timeout_s: float) -> tuple[_Side, Answer]:
    url = side.target.url
    try:
        reply = await control.call(pool, "POST", url, _headers(side.target), json=_body(side, item, max_tokens, top_k),
                                   timeout_s=timeout_s, max_body=limits.MAX_RESPONSE_BYTES)
    except asyncio.TimeoutError:
        raise VazaoError(f"timeout: {_where(side)}: prompt {n} got no answer within {timeout_s:g} s",
                         parameter="timeout") from None
    except (OSError, ValueError, h1.Abort) as exc:
        raise VazaoError(redact.cut(f"{_where(side)}: prompt {n}: {exc}", 300)) from None
    if reply.status == 400 and side.logprobs and top_k:  # a server without logprobs: ask again without
        return await _ask(pool, replace(side, logprobs=False), item, n, max_tokens=max_tokens, top_k=top_k,
                          timeout_s=timeout_s)
    if reply.status != 200:
        snippet = (reply.body or b"").decode("utf-8", "replace").replace("\n", " ")
        raise VazaoError(redact.cut(f"{_where(side)} refused prompt {n} with HTTP {reply.status}: {snippet}", 1000))
    try:
        body = inputs.loads_json((reply.body or b"").decode("utf-8", "replace"), f"{_where(side)} answer")
    except VazaoError:
        raise VazaoError(f"{_where(side)}: prompt {n}: the answer is not JSON") from None
    answer = parse_answer(body, side.target.api)
    if answer is None:
        raise VazaoError(f"{_where(side)}: prompt {n}: the answer holds no choices")
    return side, answer


async def _run(reference: Target, candidate: Target, prompts: Sequence[PromptItem], *, max_tokens: int,
               top_k: int, timeout_s: float) -> tuple[list[tuple[Answer, Answer]], _Side, _Side]:
    pool = h1.Pool(CONNECT_TIMEOUT_S)
    try:
        ref_model, cand_model = await asyncio.gather(_model(pool, "reference", reference),
                                                     _model(pool, "candidate", candidate))
        ref, cand = _Side("reference", reference, ref_model), _Side("candidate", candidate, cand_model)
        pairs = []
        for n, item in enumerate(prompts, 1):
            (ref, a), (cand, b) = await asyncio.gather(
                _ask(pool, ref, item, n, max_tokens=max_tokens, top_k=top_k, timeout_s=timeout_s),
                _ask(pool, cand, item, n, max_tokens=max_tokens, top_k=top_k, timeout_s=timeout_s))
            if a.prompt_tokens is not None and b.prompt_tokens is not None and a.prompt_tokens != b.prompt_tokens:
                raise VazaoError(f"mismatched models: prompt {n} is {a.prompt_tokens} tokens to the reference and "
                                 f"{b.prompt_tokens} to the candidate, so their tokenizers differ: not two "
                                 "formats of one model")
            pairs.append((a, b))
        return pairs, ref, cand
    finally:
        pool.close()


def measure_quality(reference: Target, candidate: Target, prompts: Sequence[PromptItem], *, family: str,
                    fmt: str, reference_format: str = "bf16", metric: str = "exact", max_tokens: int = 64,
                    top_logprobs: int = 5, timeout_s: float = 120.0, prompts_name: str = "prompts",
                    date: str | None = None) -> QualityMeasurement:
    """Send every prompt to both endpoints and compare the answers (compare.py states the metrics)."""
    from vazao.catalog.formats import get_format

    if not prompts:
        raise VazaoError("quality: give at least one prompt")
    if reference.api != candidate.api:
        raise VazaoError("quality: the reference and the candidate must use the same api")
    if metric not in METRICS:
        raise VazaoError(f"metric {str(metric)[:40]!r}: one of {', '.join(METRICS)}")
    fmt, reference_format = get_format(fmt).name, get_format(reference_format).name
    if fmt == reference_format:
        raise VazaoError(f"format and reference format are both {fmt}: nothing to compare")
    inputs.number(max_tokens, "max_tokens", minimum=1, maximum=limits.MAX_REQUEST_TOKENS, integer=True)
    inputs.number(top_logprobs, "top_logprobs", minimum=0, maximum=limits.MAX_TOP_LOGPROBS, integer=True)
    inputs.number(timeout_s, "timeout", minimum=0.1, maximum=limits.MAX_RUN_S)
    family = inputs.split_list(family, "family", max_items=1)[0].lower() if family else ""
    if not family:
        raise VazaoError("quality: give the model family (or a catalog model)")
    pairs, ref, cand = asyncio.run(_run(reference, candidate, prompts, max_tokens=max_tokens, top_k=top_logprobs,
                                        timeout_s=timeout_s))
    results = tuple(PromptResult(n, compare(a, b), a.text[:200], b.text[:200])
                    for n, (a, b) in enumerate(pairs, 1))
    return QualityMeasurement(
        family=family, format=fmt, reference_format=reference_format, metric=metric,
        reference_url=reference.safe_url, candidate_url=candidate.safe_url,
        reference_model=ref.model or "(unnamed)", candidate_model=cand.model or "(unnamed)", api=reference.api,
        max_tokens=max_tokens, top_logprobs=top_logprobs, prompts_file=Path(prompts_name).name,
        date=date or _dt.date.today().isoformat(), prompts=results,
        logprobs=bool(top_logprobs) and any(r.stats.positions for r in results))
