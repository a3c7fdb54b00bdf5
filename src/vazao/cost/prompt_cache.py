"""Prompts as sequences of units (approximate tokens, exact tokens from a tokenizer.json, or
characters) and the block prompt cache that vLLM and the providers run on them: each fixed block hashed
with everything before it, a request reading the longest run of leading blocks already cached."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vazao import inputs
from vazao.errors import VazaoError

# GPT-style pre-tokenizer: contractions, words with their leading space, up to 3 digits, punctuation
# runs, whitespace. Close to BPE counts for English prose and code; tokenizer_from_file gives exact counts.
_PRETOKEN = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+(?!\S)|\s+")


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


def unit_text(u: Any) -> str:
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



# ---- shared prefixes --------------------------------------------------------------------------
def lcp_all(seqs: Sequence[Sequence]) -> int:
    if not seqs:
        return 0
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for k in range(n):
        u = first[k]
        if any(s[k] != u for s in seqs[1:]):
            return k
    return n


def majority_prefix(seqs: Sequence[Sequence], block: int) -> tuple[int, int]:
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
