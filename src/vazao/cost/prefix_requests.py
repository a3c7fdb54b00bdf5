"""Reading prompt-cache requests: one JSON request a line (chat, Anthropic, Responses, completion or
OpenAI batch), each turned into its prompt text in the order a provider caches it, with its time."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from vazao import inputs, limits
from vazao.errors import VazaoError


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:  # images, files, tool blocks: their identity matters to a cache, not their size
                parts.append(json.dumps(part, sort_keys=False, ensure_ascii=False))
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False)


def request_text(obj: Any) -> str:
    """A request's prompt in the order a provider caches it: tools, system, then messages (chat
    messages, Anthropic system+messages, a Responses `input`, a completion `prompt`, or any of these
    under an OpenAI batch line's `body`)."""
    if not isinstance(obj, Mapping):
        raise ValueError("not a JSON object")
    if isinstance(obj.get("body"), Mapping) and not any(k in obj for k in ("messages", "prompt", "input")):
        obj = obj["body"]
    out = []
    if obj.get("tools"):
        out.append("<tools>\n" + json.dumps(obj["tools"], ensure_ascii=False) + "\n")
    if obj.get("system") is not None:
        out.append("<system>\n" + _content_text(obj["system"]) + "\n")
    if isinstance(obj.get("instructions"), str):
        out.append("<system>\n" + obj["instructions"] + "\n")
    if isinstance(obj.get("messages"), list):
        for m in obj["messages"]:
            if not isinstance(m, Mapping):
                raise ValueError("a message is not an object")
            out.append(f"<{m.get('role', 'user')}>\n{_content_text(m.get('content'))}\n")
    elif "input" in obj:
        inp = obj["input"]
        if isinstance(inp, list) and all(isinstance(m, Mapping) and "role" in m for m in inp):
            out.extend(f"<{m['role']}>\n{_content_text(m.get('content'))}\n" for m in inp)
        else:
            out.append(_content_text(inp))
    elif "prompt" in obj:
        out.append(_content_text(obj["prompt"]))
    else:
        raise ValueError("no messages, input or prompt")
    return "".join(out)


def _timestamp(obj: Mapping) -> float | None:
    for key in ("timestamp", "created", "time", "ts"):
        v = obj.get(key)
        if v is None:
            continue
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if not (math.isfinite(v) and abs(v) <= limits.MAX_UNIX_TIME_S):
                raise ValueError(f"{key} is not a time in seconds: {str(v)[:40]}")
            return float(v)
        if isinstance(v, str):
            try:
                return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
            except (ValueError, OverflowError, OSError):
                raise ValueError(f"{key} is not an ISO 8601 time: {v[:40]!r}") from None
    return None


@dataclass(frozen=True)
class Request:
    line: int
    text: str
    time_s: float | None


def read_requests(path: str | Path) -> tuple[list[Request], int, list[tuple[int, str]]]:
    """Requests from a JSONL file; returns (requests, malformed count, first malformed lines).
    A file in which no line is a request is an error."""
    p = Path(path).expanduser()
    out, bad, malformed = [], [], 0
    for n, raw in inputs.iter_lines(inputs.input_stream(p, "requests file"), "requests file"):
        if raw is not None and not raw.strip():
            continue
        try:
            if raw is None:
                raise ValueError("not UTF-8 text, or a line longer than 16 MiB")
            obj = _loads(raw, n)
            out.append(Request(n, request_text(obj), _timestamp(obj)))
        except ValueError as exc:
            malformed += 1
            if len(bad) < 20:
                bad.append((n, str(exc)[:200]))
    if not out:
        detail = f" (line {bad[0][0]}: {bad[0][1]})" if bad else ""
        raise VazaoError(f"requests file {inputs._show(p)} holds no request{detail}")
    return out, malformed, bad


def _loads(text: str, n: int) -> Any:
    return inputs.loads_json_line(text, n)
