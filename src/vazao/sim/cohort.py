"""The decoding sequences of one engine, advanced together in O(1) per step.

Every decoding sequence gains the same number of tokens per step (one, or the speculative
expectation), so the cohort keeps one counter A of tokens gained since it began; a member's KV
length is `base + A`. The step's context sum is `Σ base + n·A`; the members that cross a block
boundary are counted per residue of `base` modulo the block size; completions sit in a heap keyed
by the A at which they finish. No per-member work happens on a step unless a member joins, leaves
or finishes.
"""

from __future__ import annotations

import heapq
from array import array

from vazao.sim.sequence import Seq
from vazao.sim.stats import add_window


class DecodeCohort:
    __slots__ = ("A", "n", "sum_base", "bs", "cnt", "heap", "track", "gaps")

    def __init__(self, block_size: int, track: int = 0, gaps: array[float] | None = None) -> None:
        self.A = 0
        self.n = 0
        self.sum_base = 0
        self.bs = block_size
        self.cnt = [0] * block_size  # members per residue of base mod block size
        self.heap: list[tuple[int, int, Seq]] = []
        # the engine's step gaps (one per decode step); a member's gaps are the steps it was here for
        self.track = track
        self.gaps = gaps if gaps is not None else array("d")

    def context_sum(self) -> int:
        """KV tokens the members hold (what the next step reads)."""
        return self.sum_base + self.n * self.A

    def kv_len(self, seq: Seq) -> int:
        return seq.base + self.A

    def join(self, seq: Seq, kv_len: int, remaining: int) -> None:
        seq.base = kv_len - self.A
        seq.fin = self.A + remaining
        seq.in_cohort = True
        seq.seg_start = len(self.gaps)
        self.n += 1
        self.sum_base += seq.base
        self.cnt[seq.base % self.bs] += 1
        heapq.heappush(self.heap, (seq.fin, seq.order, seq))

    def leave(self, seq: Seq) -> None:
        seq.in_cohort = False
        add_window(seq, self.track, seq.seg_start, len(self.gaps))
        self.n -= 1
        self.sum_base -= seq.base
        self.cnt[seq.base % self.bs] -= 1

    def blocks_needed(self, a: int) -> int:
        """New blocks the members need to grow by `a` tokens each."""
        bs, A, cnt = self.bs, self.A, self.cnt
        if a == 1:  # a member needs a block exactly when its KV length is a multiple of bs
            return cnt[(-A) % bs]
        total = 0
        for r in range(bs):
            c = cnt[r]
            if c:
                m = (r + A) % bs
                total += c * (-(-(m + a) // bs) - (1 if m else 0))
        return total

    def advance(self, a: int) -> list[Seq]:
        """Every member gains `a` tokens; returns (and removes) the members that finished."""
        self.A += a
        A, heap = self.A, self.heap
        done = []
        while heap and heap[0][0] <= A:
            fin, _, seq = heapq.heappop(heap)
            if seq.in_cohort and seq.fin == fin:
                self.leave(seq)
                done.append(seq)
        return done
