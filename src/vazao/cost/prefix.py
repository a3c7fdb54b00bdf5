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

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from vazao.catalog.prices import PriceTable, share_str, usd_str
from vazao.cost.ledger import Charge, TokenLedger, price_request
from vazao.cost.prefix_requests import Request, read_requests, request_text
from vazao.cost.prompt_cache import (
    CacheRun,
    lcp_all,
    majority_prefix,
    pretokenize,
    simulate_cache,
    tokenizer_from_file,
    unit_text,
)
from vazao.cost.volatile import ANCHOR_UNITS, Span, VolatileFinding, classify, volatile_spans, word_align
from vazao.errors import VazaoError
from vazao.resultfiles import from_document

__all__ = [
    "CacheCost", "CacheRun", "PrefixReport", "Request", "Span", "VolatileFinding", "analyze", "classify",
    "pretokenize", "read_requests", "request_text", "simulate_cache", "tokenizer_from_file", "volatile_spans",
]

PAIRS_SCANNED = 400


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

    @classmethod
    def from_json(cls, d: Mapping) -> CacheCost:
        return from_document(cls, d)  # the savings are derived


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

    @classmethod
    def from_json(cls, d: Mapping) -> PrefixReport:
        """The cache's figures are flat in the report (to_json spreads them): read back from it."""
        return from_document(cls, d, cache=CacheCost.from_json(d), malformed_lines=tuple(
            (m["line"], m["reason"]) for m in d.get("malformed_lines") or ()))



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
    anchor = "".join(unit_text(x) for x in a[max(0, sa.start - u.anchor_units):sa.start])
    text = "".join(unit_text(x) for x in b[sb.start:sb.end])
    # the anchor's last word belongs to the value when the split falls inside it ("14:" + "02")
    glued = "" if anchor[-1:].isspace() else anchor.split()[-1] if anchor.split() else ""
    return anchor.strip(), glued + text


def _scan_volatile(u: _Units) -> _VolatileScan:
    """Each request against the one before it (every step-th pair, at most PAIRS_SCANNED)."""
    seqs = u.seqs
    step = max(1, (len(seqs) - 1) // PAIRS_SCANNED)
    per_request: dict[int, list[Span]] = defaultdict(list)
    groups: dict[str, list[tuple[Span, str]]] = defaultdict(list)
    for i in range(1, len(seqs), step):
        a, b = seqs[i - 1], seqs[i]
        for sa, sb in volatile_spans(a, b, u.window, u.min_run):
            if u.unit == "char":
                sa, sb = word_align(a, sa), word_align(b, sb)
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


DEFAULT_TTL_S = 300.0  # the shortest TTL providers sell (Anthropic's 5 minutes; OpenAI's is 5–10 minutes)
_FROM_CACHE = -1.0


def cache_ttl_seconds(cache_ttl: str | None) -> float:
    """How long a cache entry lives: the TTL `cache_ttl` names (5m, 1h), else DEFAULT_TTL_S."""
    from vazao.units import parse_duration

    if cache_ttl is None or cache_ttl == "default":
        return DEFAULT_TTL_S
    ttl_s = parse_duration(cache_ttl)
    if not ttl_s > 0:
        raise VazaoError(f"cache TTL must be longer than zero, got {cache_ttl[:40]!r}")
    return ttl_s


def analyze(requests: Sequence[Request], table: PriceTable, unit: str = "token", block: int | None = None,
            min_cacheable_tokens: int = 1024, ttl_s: float | None = _FROM_CACHE, cache_ttl: str | None = None,
            chars_per_token: float = 4.0, encode: Callable[[str], list] | None = None,
            min_run_tokens: int = 32, window_tokens: int = 4096) -> PrefixReport:
    """The prefix report of `requests` priced at `table`. cache_ttl: the TTL whose write price is paid
    (None: the table's first); ttl_s: how long entries live when requests carry timestamps (default:
    cache_ttl's duration, else DEFAULT_TTL_S; None: never expire)."""
    if ttl_s == _FROM_CACHE:
        ttl_s = cache_ttl_seconds(cache_ttl)
    _check_analyze(requests, table, unit, chars_per_token)
    u = _to_units(requests, unit, block, min_cacheable_tokens, ttl_s, chars_per_token, encode, min_run_tokens,
                  window_tokens)
    cost = _simulate_and_bill(u, u.seqs, table, cache_ttl)
    lcp = lcp_all(u.seqs)
    maj_units, maj_n = majority_prefix(u.seqs, u.block)
    tail = "".join(unit_text(x) for x in u.seqs[0][max(0, lcp - 40):lcp]) if lcp else ""
    scan = _scan_volatile(u)
    findings = _findings(u, scan.groups)
    notes = list(u.notes)
    if scan.step > 1:
        notes.append(f"volatile content searched in one pair of consecutive requests in {scan.step}; the "
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
