"""The prefix advisor: from real requests, the longest static prefix, the hit rate a prompt cache
would see, what caching saves under a price table, and which volatile content (a timestamp, a user
name, a request id early in the prompt) breaks the prefix and what moving it would save.

Prompts are compared as sequences of units: approximate tokens (a GPT-style pre-tokenizer regex),
exact tokens from a tokenizer.json, or characters. The cache is simulated like vLLM's and the
providers': the prompt is cut into fixed blocks, each block hashed together with everything before
it, and a request reads the longest run of leading blocks already cached (refreshed on use and
expired after the TTL when requests carry timestamps). A block is billed as a cache write only when a
later request reads it — the ideal placement of cache breakpoints; other new tokens are plain input."""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from vazao import inputs
from vazao.catalog.prices import PriceTable, share_str, usd_str
from vazao.cost.ledger import Charge, TokenLedger, price_request
from vazao.errors import VazaoError

# GPT-style pre-tokenizer: contractions, words with their leading space, up to 3 digits, punctuation
# runs, whitespace. Close to BPE counts for English prose and code; use --tokenizer for exact counts.
_PRETOKEN = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+(?!\S)|\s+")
ANCHOR_UNITS = 8  # k-gram length used to find where two prompts line up again
MAX_SPANS_PER_PAIR = 4
MAX_PAIRS = 400
MAX_CANDIDATES = 8
MAX_TIME_S = 1e11  # a Unix time in seconds (year ~5000); larger is not a timestamp

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


# ---- reading requests -------------------------------------------------------------------------
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
            if not (math.isfinite(v) and abs(v) <= MAX_TIME_S):
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


# ---- units ------------------------------------------------------------------------------------
def pretokenize(text: str) -> list[str]:
    return _PRETOKEN.findall(text)


def tokenizer_from_file(path: str | Path) -> Callable[[str], list]:
    """Exact token ids from a Hugging Face tokenizer.json (needs the optional `tokenizers` package)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise VazaoError("an exact tokenizer needs the 'tokenizers' package: pip install 'vazao[tokenizers]'") from None
    p = inputs.input_file(Path(path).expanduser(), "tokenizer")
    try:
        tok = Tokenizer.from_file(str(p))
    except Exception as exc:  # the library raises plain Exception for unreadable files
        raise VazaoError(f"cannot load tokenizer {path}: {exc}") from None

    def encode(text: str) -> list:
        enc = tok.encode(text, add_special_tokens=False)
        return list(zip(enc.ids, [text[a:b] for a, b in enc.offsets], strict=True))

    return encode


def _unit_text(u: Any) -> str:
    return u[1] if isinstance(u, tuple) else u


# ---- cache simulation -------------------------------------------------------------------------
@dataclass(frozen=True)
class CacheRun:
    read_units: tuple[int, ...]  # per request
    write_units: tuple[int, ...]  # per request: blocks it wrote that a later request read
    total_units: tuple[int, ...]

    @property
    def hit_rate(self) -> float:
        total = sum(self.total_units)
        return sum(self.read_units) / total if total else 0.0


def simulate_cache(seqs: Sequence[Sequence], times: Sequence[float | None], block: int,
                   min_cacheable: int, ttl_s: float | None) -> CacheRun:
    if block < 1:
        raise VazaoError(f"block must be a positive number of units, got {block}")
    entries: dict[int, tuple[float, int, int]] = {}  # chain hash -> (last use, writer, position)
    reach: dict[int, int] = defaultdict(int)  # writer -> blocks of it read later (exclusive end)
    hits: list[int] = []
    for i, seq in enumerate(seqs):
        t = times[i] if times[i] is not None else float(i)
        chain, h = [], 0
        for j in range(len(seq) // block):
            h = hash((h, tuple(seq[j * block:(j + 1) * block])))
            chain.append(h)
        hit = 0
        for j, h in enumerate(chain):
            e = entries.get(h)
            if e is None or (ttl_s is not None and times[i] is not None and t - e[0] > ttl_s):
                break
            hit = j + 1
        if hit * block < min_cacheable:
            hit = 0
        for j in range(hit):
            last, writer, pos = entries[chain[j]]
            entries[chain[j]] = (t, writer, pos)
            reach[writer] = max(reach[writer], pos + 1)
        if len(chain) * block >= min_cacheable:
            for j in range(hit, len(chain)):
                entries[chain[j]] = (t, i, j)
        hits.append(hit)
    read = tuple(h * block for h in hits)
    write = tuple(max(0, reach.get(i, 0) - hits[i]) * block for i in range(len(seqs)))
    return CacheRun(read, write, tuple(len(s) for s in seqs))


# ---- volatile spans ---------------------------------------------------------------------------
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
        if len(lst) < MAX_CANDIDATES:
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
    while len(out) < MAX_SPANS_PER_PAIR and pa < len(a) and pb < len(b):
        hit = _resync(a, pa, b, pb, window, min_run)
        if hit is None:
            break
        i, j = hit
        run = _common_run(a, i, b, j)
        out.append((Span(pa, i, run), Span(pb, j, run)))
        pa, pb = i + run, j + run
    return out


def _word_align(seq: Sequence, span: Span) -> Span:
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


# ---- the report -------------------------------------------------------------------------------
@dataclass(frozen=True)
class CacheCost:
    hit_rate: float
    cached_tokens: int
    cache_write_tokens: int
    uncached_usd: Decimal
    cached_usd: Decimal

    @property
    def savings_usd(self) -> Decimal:
        return self.uncached_usd - self.cached_usd

    @property
    def savings_share(self) -> Decimal:
        return self.savings_usd / self.uncached_usd if self.uncached_usd else Decimal(0)

    def to_json(self) -> dict:
        return {"hit_rate": self.hit_rate, "cached_tokens": self.cached_tokens,
                "cache_write_tokens": self.cache_write_tokens, "uncached_usd": usd_str(self.uncached_usd),
                "cached_usd": usd_str(self.cached_usd), "savings_usd": usd_str(self.savings_usd),
                "savings_share": share_str(self.savings_share)}


@dataclass(frozen=True)
class PrefixReport:
    requests: int
    unit: str
    block_units: int
    min_cacheable_units: int
    ttl_s: float | None
    prompt_tokens: int
    static_prefix_tokens: int  # shared by every request
    static_prefix_tail: str  # the last characters of that prefix
    majority_prefix_tokens: int  # shared by at least half of the requests
    majority_requests: int
    price: str
    cache: CacheCost
    volatile: tuple[VolatileFinding, ...]
    after_fix: CacheCost | None  # volatile spans moved to the end of each prompt
    advice: tuple[str, ...]
    malformed: int = 0
    malformed_lines: tuple[tuple[int, str], ...] = field(default=())
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        d = {k: v for k, v in self.__dict__.items() if k not in ("cache", "after_fix", "volatile")}
        d.update(self.cache.to_json())
        d["volatile"] = [v.to_json() for v in self.volatile]
        d["after_fix"] = self.after_fix.to_json() if self.after_fix else None
        d["advice"] = list(self.advice)
        d["notes"] = list(self.notes)
        d["malformed_lines"] = [{"line": n, "reason": r} for n, r in self.malformed_lines]
        return d


def _lcp_all(seqs: Sequence[Sequence]) -> int:
    if not seqs:
        return 0
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for k in range(n):
        u = first[k]
        if any(s[k] != u for s in seqs[1:]):
            return k
    return n


def _majority_prefix(seqs: Sequence[Sequence], block: int) -> tuple[int, int]:
    """Deepest block-aligned prefix shared by at least half the requests (and at least two)."""
    need = max(2, (len(seqs) + 1) // 2)
    best = (0, 0)
    groups: list[list[int]] = [list(range(len(seqs)))]
    depth = 0
    while groups:
        nxt = []
        for g in groups:
            by: dict[tuple, list[int]] = defaultdict(list)
            for i in g:
                s = seqs[i]
                if len(s) >= (depth + 1) * block:
                    by[tuple(s[depth * block:(depth + 1) * block])].append(i)
            for members in by.values():
                if len(members) >= need:
                    nxt.append(members)
                    best = max(best, ((depth + 1) * block, len(members)))
        groups = nxt
        depth += 1
    return best


def _to_tokens(units: int, unit: str, chars_per_token: float) -> int:
    return units if unit != "char" else int(round(units / chars_per_token))


def _bill(run: CacheRun, table: PriceTable, unit: str, cpt: float, ttl: str | None) -> CacheCost:
    cached = uncached = Charge()
    read_t = write_t = 0
    for r, w, n in zip(run.read_units, run.write_units, run.total_units, strict=True):
        total = _to_tokens(n, unit, cpt)
        rt = _to_tokens(r, unit, cpt)
        wt = min(_to_tokens(w, unit, cpt), total - rt)
        read_t, write_t = read_t + rt, write_t + wt
        uncached += price_request(table, TokenLedger(new_input=total))[0]
        cached += price_request(table, TokenLedger(new_input=total - rt - wt, cache_read=rt, cache_write=wt),
                                cache_ttl=ttl)[0]
    return CacheCost(run.hit_rate, read_t, write_t, uncached.total, cached.total)


@dataclass(frozen=True)
class _Units:
    """The requests as unit sequences in the order the cache sees them, with every length in units."""

    unit: str
    chars_per_token: float
    seqs: list[list]
    times: list[float | None]
    ttl_s: float | None  # None when the requests carry no timestamps: entries never expire
    block: int
    min_units: int
    min_run: int
    window: int
    anchor_units: int
    notes: tuple[str, ...]

    def tokens(self, units: int) -> int:
        return _to_tokens(units, self.unit, self.chars_per_token)


def _check_analyze(requests: Sequence[Request], table: PriceTable, unit: str, chars_per_token: float) -> None:
    if not requests:
        raise VazaoError("no requests to analyze")
    if unit not in ("token", "char"):
        raise VazaoError(f"unit must be token or char, got {unit!r}")
    if table.base.cache_read is None:
        raise VazaoError(f"{table.id} lists no prompt-cache price; pick a price with cache reads")
    if chars_per_token <= 0:
        raise VazaoError(f"chars_per_token must be positive, got {chars_per_token}")


def _in_cache_order(requests: Sequence[Request], ttl_s: float | None) -> tuple[list[Request], float | None, list[str]]:
    """Requests in time order with the TTL that applies; without timestamps, file order and no expiry."""
    if all(r.time_s is not None for r in requests):
        return sorted(requests, key=lambda r: r.time_s), ttl_s, []
    notes = ["requests carry no timestamps: cache entries never expire in this simulation"] if ttl_s is not None else []
    return list(requests), None, notes


def _to_units(requests: Sequence[Request], unit: str, block: int | None, min_cacheable_tokens: int,
              ttl_s: float | None, chars_per_token: float, encode: Callable[[str], list] | None,
              min_run_tokens: int, window_tokens: int) -> _Units:
    ordered, ttl_s_eff, notes = _in_cache_order(requests, ttl_s)
    scale = chars_per_token if unit == "char" else 1.0
    if unit == "char":
        seqs: list[list] = [list(r.text) for r in ordered]
    else:
        seqs = [(encode or pretokenize)(r.text) for r in ordered]
        if encode is None:
            notes.append("token counts are approximate (regex pre-tokenizer); give a tokenizer.json for exact ones")
    return _Units(unit=unit, chars_per_token=chars_per_token, seqs=seqs, times=[r.time_s for r in ordered],
                  ttl_s=ttl_s_eff, block=block or (16 if unit == "token" else 64),
                  min_units=int(round(min_cacheable_tokens * scale)),
                  min_run=max(1, int(round(min_run_tokens * scale))), window=int(window_tokens * scale),
                  anchor_units=int(ANCHOR_UNITS * scale), notes=tuple(notes))


def _simulate_and_bill(u: _Units, seqs: Sequence[Sequence], table: PriceTable, cache_ttl: str | None) -> CacheCost:
    run = simulate_cache(seqs, u.times, u.block, u.min_units, u.ttl_s)
    return _bill(run, table, u.unit, u.chars_per_token, cache_ttl)


@dataclass(frozen=True)
class _VolatileScan:
    """Volatile spans found in a bounded sample of consecutive request pairs."""

    step: int  # every step-th pair was compared
    per_request: dict[int, list[Span]]  # request index -> its volatile spans
    groups: dict[str, list[tuple[Span, str]]]  # anchor text -> (span, value) in each request


def _anchored_value(u: _Units, a: Sequence, sa: Span, b: Sequence, sb: Span) -> tuple[str, str]:
    """(anchor, value): the static text before the span in a, and the span's text in b."""
    anchor = "".join(_unit_text(x) for x in a[max(0, sa.start - u.anchor_units):sa.start])
    text = "".join(_unit_text(x) for x in b[sb.start:sb.end])
    # the anchor's last word belongs to the value when the split falls inside it ("14:" + "02")
    glued = "" if anchor[-1:].isspace() else anchor.split()[-1] if anchor.split() else ""
    return anchor.strip(), glued + text


def _scan_volatile(u: _Units) -> _VolatileScan:
    """Each request against the one before it (every step-th pair, at most MAX_PAIRS)."""
    seqs = u.seqs
    step = max(1, (len(seqs) - 1) // MAX_PAIRS)
    per_request: dict[int, list[Span]] = defaultdict(list)
    groups: dict[str, list[tuple[Span, str]]] = defaultdict(list)
    for i in range(1, len(seqs), step):
        a, b = seqs[i - 1], seqs[i]
        for sa, sb in volatile_spans(a, b, u.window, u.min_run):
            if u.unit == "char":
                sa, sb = _word_align(a, sa), _word_align(b, sb)
            anchor, value = _anchored_value(u, a, sa, b, sb)
            groups[anchor].append((sb, value))
            per_request[i].append(sb)
            # with every pair compared, request i - 1's spans came in as the later side of the pair before
            if i == 1 or step > 1:
                per_request.setdefault(i - 1, [])
                if sa not in per_request[i - 1]:
                    per_request[i - 1].append(sa)
    return _VolatileScan(step, per_request, groups)


def _findings(u: _Units, groups: Mapping[str, list[tuple[Span, str]]]) -> list[VolatileFinding]:
    """One finding per anchor, the ones that lose the most cached tokens first."""
    findings = []
    for anchor, items in groups.items():
        texts = [t for _, t in items]  # each with the anchor's last word when the split cut a word
        pos = sorted(s.start for s, _ in items)[len(items) // 2]
        after = sorted(s.static_after for s, _ in items)[len(items) // 2]
        examples = tuple(t for t, _ in Counter(t.strip() for t in texts).most_common(3))
        findings.append(VolatileFinding(
            kind=classify(" ".join(texts)), anchor=anchor[-60:], position_tokens=u.tokens(pos), requests=len(items),
            static_after_tokens=u.tokens(after), examples=examples))
    findings.sort(key=lambda f: (-f.requests * f.static_after_tokens, f.position_tokens))
    return findings


def _move_to_end(seq: Sequence, spans: Sequence[Span]) -> list:
    """seq with the given spans (overlapping ones skipped) cut out and appended in order."""
    keep, tail_units, cur = [], [], 0
    for sp in sorted(spans, key=lambda x: x.start):
        if sp.start < cur:
            continue
        keep.extend(seq[cur:sp.start])
        tail_units.extend(seq[sp.start:sp.end])
        cur = sp.end
    return keep + list(seq[cur:]) + tail_units


def _after_fix(u: _Units, scan: _VolatileScan, table: PriceTable, cache_ttl: str | None) -> CacheCost | None:
    """The bill with every volatile span found moved to the end of its prompt."""
    if not scan.per_request:
        return None
    moved = [_move_to_end(s, scan.per_request.get(i, [])) for i, s in enumerate(u.seqs)]
    return _simulate_and_bill(u, moved, table, cache_ttl)


def analyze(requests: Sequence[Request], table: PriceTable, unit: str = "token", block: int | None = None,
            min_cacheable_tokens: int = 1024, ttl_s: float | None = 300.0, cache_ttl: str | None = None,
            chars_per_token: float = 4.0, encode: Callable[[str], list] | None = None,
            min_run_tokens: int = 32, window_tokens: int = 4096) -> PrefixReport:
    _check_analyze(requests, table, unit, chars_per_token)
    u = _to_units(requests, unit, block, min_cacheable_tokens, ttl_s, chars_per_token, encode, min_run_tokens,
                  window_tokens)
    cost = _simulate_and_bill(u, u.seqs, table, cache_ttl)
    lcp = _lcp_all(u.seqs)
    maj_units, maj_n = _majority_prefix(u.seqs, u.block)
    tail = "".join(_unit_text(x) for x in u.seqs[0][max(0, lcp - 40):lcp]) if lcp else ""
    scan = _scan_volatile(u)
    findings = _findings(u, scan.groups)
    notes = list(u.notes)
    if scan.step > 1:
        notes.append(f"volatile content searched in every {scan.step}th pair of consecutive requests; the "
                     "'moved to the end' estimate moves it only in those requests (a lower bound)")
    after_fix = _after_fix(u, scan, table, cache_ttl)
    advice = _advice(findings, cost, after_fix, u.tokens(lcp), min_cacheable_tokens)
    return PrefixReport(
        requests=len(u.seqs), unit=unit, block_units=u.block, min_cacheable_units=u.min_units, ttl_s=u.ttl_s,
        prompt_tokens=sum(u.tokens(len(s)) for s in u.seqs),
        static_prefix_tokens=u.tokens(lcp), static_prefix_tail=tail,
        majority_prefix_tokens=u.tokens(maj_units), majority_requests=maj_n,
        price=table.id, cache=cost, volatile=tuple(findings), after_fix=after_fix, advice=tuple(advice),
        notes=tuple(notes),
    )


def _advice(findings: Sequence[VolatileFinding], cost: CacheCost, after: CacheCost | None, lcp_tokens: int,
            min_cacheable: int) -> list[str]:
    out = []
    for f in findings[:5]:
        ex = ", ".join(repr(e[:40]) for e in f.examples)
        where = f"after {f.anchor[-40:]!r}" if f.anchor else "at the very start"
        out.append(f"{f.kind} {where} (≈ token {f.position_tokens}) changes between requests ({ex}); the "
                   f"{f.static_after_tokens:,} tokens after it are identical. Move it after the static part "
                   "or to the end of the prompt.")
    if findings and after is not None and after.savings_usd > cost.savings_usd:
        out.append(f"With the volatile content moved to the end the hit rate goes from {cost.hit_rate:.0%} to "
                   f"{after.hit_rate:.0%} and caching saves {after.savings_share:.0%} of the input bill "
                   f"instead of {cost.savings_share:.0%}.")
    if lcp_tokens < min_cacheable and not findings:
        out.append(f"The prefix shared by every request is {lcp_tokens:,} tokens, under the {min_cacheable:,}-token "
                   "minimum a provider caches: put the stable instructions, tools and documents first.")
    if not out:
        out.append("The static prefix already leads every prompt: turn on caching and keep it byte-identical.")
    return out
