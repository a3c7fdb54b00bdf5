"""The metrics of one reference/candidate answer pair, and their totals over a run.

- exact match: the two answers' texts are identical.
- agreement: the answers' common prefix, in tokens when both servers returned their tokens (logprobs), else
  in whitespace-separated words, over the reference's length. Greedy decoding conditions each token on the
  ones before it, so once the answers part, later positions no longer compare like with like: only the
  common prefix counts.
- log-probabilities, at each position whose context is the same on both sides (the common prefix and the
  position where they part): the overlap of the two top-k sets (|ref ∩ cand| / k) and a truncated KL
  divergence KL(ref ‖ cand) ≈ Σ over the reference's top-k tokens t of p_ref(t) · (ln p_ref(t) − ln p_cand(t)),
  in nats, where a token missing from the candidate's top-k takes the candidate's k-th log-probability (the
  most it can have). It leaves out the mass outside the reference's top k, so it estimates the KL, it does
  not bound it; llama.cpp's `perplexity --kl-divergence` computes the full one over the whole vocabulary."""

from __future__ import annotations

import math
from dataclasses import dataclass

TopK = tuple[tuple[str, float], ...]  # one position's alternatives: (token, log-probability)


@dataclass(frozen=True)
class Answer:
    text: str
    tokens: tuple[str, ...] | None = None  # the generated tokens, when the server returned logprobs
    top: tuple[TopK, ...] | None = None  # per generated token, its top-k alternatives
    prompt_tokens: int | None = None  # the server's count of the prompt (usage)


@dataclass(frozen=True)
class PairStats:
    """One prompt's comparison."""

    exact: bool
    unit: str  # tokens | words
    reference_units: int
    agreeing_units: int
    positions: int = 0  # positions with top-k log-probabilities on both sides, in a shared context
    top_overlap_sum: float = 0.0
    kl_sum: float = 0.0


def common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def position_divergence(ref: TopK, cand: TopK) -> tuple[float, float]:
    """(top-k overlap, truncated KL in nats) of one position (module docstring)."""
    r, c = dict(ref), dict(cand)
    k = min(len(r), len(c))
    overlap = len(set(r) & set(c)) / k if k else 0.0
    floor = min(c.values()) if c else -math.inf
    kl = 0.0
    for tok, lp in r.items():
        kl += math.exp(lp) * (lp - c.get(tok, floor))
    return overlap, kl


def compare(ref: Answer, cand: Answer) -> PairStats:
    exact = ref.text == cand.text
    if ref.tokens is not None and cand.tokens is not None:
        unit, a, b = "tokens", ref.tokens, cand.tokens
    else:
        unit, a, b = "words", tuple(ref.text.split()), tuple(cand.text.split())
    agree = common_prefix(a, b)
    positions, overlap_sum, kl_sum = 0, 0.0, 0.0
    if ref.top is not None and cand.top is not None and unit == "tokens":
        shared = min(agree + 1, len(ref.top), len(cand.top))  # the parting position still shares its context
        for i in range(shared):
            if ref.top[i] and cand.top[i]:
                o, kl = position_divergence(ref.top[i], cand.top[i])
                positions += 1
                overlap_sum += o
                kl_sum += kl
    return PairStats(exact, unit, len(a), agree, positions, overlap_sum, kl_sum)
