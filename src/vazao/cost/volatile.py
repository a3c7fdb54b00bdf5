"""Volatile content in prompts: where two prompts differ and line up again, widened to whole words
for characters, and what kind of value the difference holds (a timestamp, an id, a name...)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vazao.resultfiles import from_document

ANCHOR_UNITS = 8  # k-gram length used to find where two prompts line up again
SPANS_PER_PAIR = 4
CANDIDATES = 8

_KINDS = (
    ("timestamp", re.compile(
        r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(:\d{2})?|\b\d{1,2}/\d{1,2}/\d{2,4}\b|"
        r"\b(mon|tue|wed|thu|fri|sat|sun)[a-z]*\b|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d",
        re.IGNORECASE)),
    ("id", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-|\b[0-9a-f]{12,}\b|\b[A-Za-z]+[-_]?\d{4,}\b", re.IGNORECASE)),
    ("email", re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")),
    ("number", re.compile(r"^\W*\d[\d.,]*\W*$")),
    ("name", re.compile(r"\b[A-Z][a-z]+\b")),
)


def _common_run(a: Sequence, i: int, b: Sequence, j: int) -> int:
    n = 0
    while i + n < len(a) and j + n < len(b) and a[i + n] == b[j + n]:
        n += 1
    return n


def _resync(a: Sequence, pa: int, b: Sequence, pb: int, window: int, min_run: int) -> tuple[int, int] | None:
    """Where a and b line up again after diverging at (pa, pb): the (i, j) nearest the divergence
    from which a common run of at least min_run units starts."""
    k = min(ANCHOR_UNITS, min_run)
    index: dict[tuple, list[int]] = {}
    for j in range(pb, min(len(b) - k + 1, pb + window)):
        lst = index.setdefault(tuple(b[j:j + k]), [])
        if len(lst) < CANDIDATES:
            lst.append(j)
    best, best_cost = None, math.inf
    for i in range(pa, min(len(a) - k + 1, pa + window)):
        if i - pa >= best_cost:
            break
        for j in index.get(tuple(a[i:i + k]), ()):
            cost = (i - pa) + (j - pb)
            if cost >= best_cost:
                break
            if _common_run(a, i, b, j) >= min_run:
                best, best_cost = (i, j), cost
                break
    return best


@dataclass(frozen=True)
class Span:
    start: int  # units into the request
    end: int
    static_after: int  # identical units that follow it in both requests


def volatile_spans(a: Sequence, b: Sequence, window: int, min_run: int) -> list[tuple[Span, Span]]:
    """Spans where a and b differ, each followed by at least min_run identical units."""
    out = []
    pa = pb = _common_run(a, 0, b, 0)
    while len(out) < SPANS_PER_PAIR and pa < len(a) and pb < len(b):
        hit = _resync(a, pa, b, pb, window, min_run)
        if hit is None:
            break
        i, j = hit
        run = _common_run(a, i, b, j)
        out.append((Span(pa, i, run), Span(pb, j, run)))
        pa, pb = i + run, j + run
    return out


def word_align(seq: Sequence, span: Span) -> Span:
    """Widen a character-level span to whole words: a value that happens to share its first or last
    letter with another request's value ('Souza' / 'Lima') must still move as one piece."""
    def inside(i: int) -> bool:
        return 0 < i < len(seq) and str(seq[i - 1]).isalnum() and str(seq[i]).isalnum()

    start, end = span.start, span.end
    while inside(start):
        start -= 1
    while inside(end):
        end += 1
    return Span(start, end, max(0, span.static_after - (end - span.end)))


def classify(text: str) -> str:
    """What kind of volatile content a span holds: 'timestamp', 'id', 'email', 'name' (several joined
    with ', '), else 'number' or 'text'."""
    found = [kind for kind, pattern in _KINDS if kind != "number" and pattern.search(text)]
    if found:
        return ", ".join(found)
    return "number" if _KINDS[3][1].search(text) else "text"


@dataclass(frozen=True)
class VolatileFinding:
    kind: str
    anchor: str  # the static text just before the volatile content
    position_tokens: int  # median position where it starts
    requests: int  # requests in which it broke the shared prefix
    static_after_tokens: int  # median identical tokens after it that caching loses
    examples: tuple[str, ...]

    def to_json(self) -> dict:
        return dict(self.__dict__) | {"examples": list(self.examples)}

    @classmethod
    def from_json(cls, d: Mapping) -> VolatileFinding:
        return from_document(cls, d)
