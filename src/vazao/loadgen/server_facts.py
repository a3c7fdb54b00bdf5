"""What the server says about itself, kept next to the run: /v1/models, identifying response
headers, llama.cpp's /props, vLLM's /version, and Prometheus /metrics (vLLM, SGLang, llama.cpp
with --metrics) before and after the run, so the server's own token counters can be set against
the client's.

Nothing here stores the API key: only response headers are kept, and of those only the ones that
identify the server. Redirects are never followed: the request carries the key and the `-H`
headers, and a redirect may point at another host (an HTTP client that follows it would drop
Authorization there at best, and send every custom header). A refused redirect is kept in
`redirects` and reported in one line.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any
from urllib.parse import urlsplit

from vazao import inputs, limits
from vazao.errors import VazaoError
from vazao.loadgen import control, h1

__all__ = ["collect", "fetch", "metrics_delta", "parse_prometheus", "redirect_note", "scrape_metrics",
           "summarize_props"]

_KEEP_HEADERS = ("server", "x-powered-by", "via", "x-request-id", "openai-model", "openai-version",
                 "openai-processing-ms", "x-ratelimit-limit-requests", "x-ratelimit-limit-tokens")
_METRIC_PREFIXES = ("vllm:", "sglang:", "llamacpp:", "tgi_", "fake:")
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([-+0-9.eEinfINFNaN]+)")
_FETCH_TIMEOUT_S = 5.0


def parse_prometheus(text: str) -> dict[str, float]:
    """Samples of the serving engines' metric families, label sets summed per name (histogram
    buckets dropped: _sum and _count are kept)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        name = m.group(1)
        if not name.startswith(_METRIC_PREFIXES) or name.endswith("_bucket"):
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        out[name] = out.get(name, 0.0) + value
    return out


def metrics_delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float]:
    """after − before for counters (names ending _total, _sum, _count)."""
    if not before or not after:
        return {}
    return {k: after[k] - before.get(k, 0.0) for k in after
            if k.endswith(("_total", "_sum", "_count")) and after[k] != before.get(k, 0.0)}


async def fetch(pool: h1.Pool, method: str, url: str, headers: dict, *, json: Any = None,
                timeout_s: float = _FETCH_TIMEOUT_S,
                redirects: list | None = None) -> tuple[int | None, Any, dict]:
    """(status, body, identifying headers) of one setup request, redirects not followed (a 3xx
    is appended to `redirects` as (url, location) and answers None). The body is parsed JSON
    when the server says JSON, else text; at most limits.MAX_RESPONSE_BYTES bytes are read."""
    try:
        reply = await control.call(pool, method, url, headers, json=json, timeout_s=timeout_s,
                                   max_body=limits.MAX_RESPONSE_BYTES)
        kept = {k: v for k, v in reply.headers.items() if k in _KEEP_HEADERS}
        if 300 <= reply.status < 400:
            if redirects is not None:
                redirects.append((url, reply.location or url))
            return reply.status, None, kept
        if reply.status != 200 or reply.body is None:  # over limits.MAX_RESPONSE_BYTES: not what these endpoints answer
            return reply.status, None, kept
        text = reply.body.decode("utf-8", "replace")
        if "json" in reply.headers.get("content-type", "") or json is not None:
            return reply.status, inputs.loads_json(text, url), kept
        return reply.status, text, kept
    except (OSError, asyncio.TimeoutError, ValueError, VazaoError, h1.Abort):
        return None, None, {}


def redirect_note(redirects: list) -> str | None:
    """One line for the redirects refused, or None."""
    if not redirects:
        return None
    url, location = redirects[0]
    more = f" (and {len(redirects) - 1} more)" if len(redirects) > 1 else ""
    return (f"{_path(url)} redirected to {_origin_of(location)}{_path(location)}{more}: not followed, so "
            "the API key and headers went nowhere else (point the URL at the server itself)")


def _path(url: str) -> str:
    try:
        return urlsplit(url).path or "/"
    except ValueError:
        return "?"


def _origin_of(url: str) -> str:
    try:
        p = urlsplit(url)
        return f"{p.scheme}://{p.hostname}{':' + str(p.port) if p.port else ''}" if p.hostname else ""
    except ValueError:
        return "?"


async def _get(pool: h1.Pool, url: str, headers: dict,
               redirects: list | None = None) -> tuple[int | None, Any, dict]:
    return await fetch(pool, "GET", url, headers, redirects=redirects)


async def scrape_metrics(pool: h1.Pool, root_url: str, headers: dict,
                         redirects: list | None = None) -> dict[str, float] | None:
    status, body, _ = await _get(pool, root_url + "/metrics", headers, redirects)
    if status != 200 or not isinstance(body, str):
        return None
    parsed = parse_prometheus(body)
    return parsed or None


def _summarize_models(body: Any) -> list[dict]:
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        return []
    keep = ("id", "owned_by", "max_model_len", "root", "meta")
    return [{k: m[k] for k in keep if k in m} for m in body["data"][:20] if isinstance(m, dict)]


def summarize_props(body: Any) -> dict[str, Any] | None:
    """llama.cpp's /props, the fields kept and each of the type llama.cpp gives it; None when the body
    holds none of them. Any server may answer 200 to /props (a catch-all route, a proxy's JSON error
    page), so a missing or odd-shaped field is left out, never trusted or raised on."""
    if not isinstance(body, dict):
        return None
    out: dict[str, Any] = {}
    for key, kind in (("total_slots", int), ("n_ctx", int), ("build_info", str), ("model_path", str),
                      ("chat_template", str)):
        v = body.get(key)
        if isinstance(v, kind) and not isinstance(v, bool):
            out[key] = v[:200] if key == "chat_template" else v  # a template runs to kilobytes
    settings = body.get("default_generation_settings")
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(n_ctx, int) and not isinstance(n_ctx, bool):  # where llama.cpp puts the context size
        out["n_ctx"] = n_ctx
    return out or None


async def collect(pool: h1.Pool, base_url: str, root_url: str, headers: dict) -> dict:
    """Everything the server offers about itself; absent endpoints are simply left out."""
    redirects: list = []
    models_task = _get(pool, base_url.rstrip("/") + "/models", headers, redirects)
    props_task = _get(pool, root_url + "/props", headers, redirects)
    version_task = _get(pool, root_url + "/version", headers, redirects)
    metrics_task = scrape_metrics(pool, root_url, headers, redirects)
    (m_status, m_body, m_headers), (p_status, p_body, _), (v_status, v_body, _), metrics = await asyncio.gather(
        models_task, props_task, version_task, metrics_task)
    facts: dict[str, Any] = {"models_status": m_status, "headers": m_headers}
    if redirects:
        facts["redirects_refused"] = [{"url": u, "location": loc[:300]} for u, loc in redirects]
    models = _summarize_models(m_body)
    if models:
        facts["models"] = models
    props = summarize_props(p_body) if p_status == 200 else None
    if props:
        facts["props"] = props
    if v_status == 200 and v_body is not None:
        facts["version"] = v_body if not isinstance(v_body, str) else v_body[:200]
    facts["engine"] = _guess_engine(facts, metrics)
    if metrics:
        facts["metrics_before"] = metrics
    return facts


def _guess_engine(facts: dict, metrics: dict | None) -> str | None:
    names = " ".join(metrics or {})
    if "vllm:" in names:
        return "vllm"
    if "sglang:" in names:
        return "sglang"
    if "llamacpp:" in names or "props" in facts:
        return "llama.cpp"
    owners = {m.get("owned_by") for m in facts.get("models", [])}
    server = facts.get("headers", {}).get("server", "")
    if "vllm" in owners:
        return "vllm"
    if "llamacpp" in owners or "llama.cpp" in server:
        return "llama.cpp"
    if "me" in owners and server == "uvicorn":
        return "llama-cpp-python"
    if server:
        return server
    return None
