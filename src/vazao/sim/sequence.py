"""A request inside the simulator: how many of its tokens are computed, how many emitted, which KV
blocks it holds. Mutable on purpose (the engine advances it every step); dropped when it finishes."""

from __future__ import annotations

from collections.abc import Hashable
from functools import lru_cache

ALL = 1 << 62  # key_cap of a request whose every block may be asked for again


@lru_cache(maxsize=1024)
def prefix_keys(prefix_id: str | None, blocks: int) -> tuple[tuple[str | None, int], ...]:
    """Keys of the first `blocks` blocks of a shared prefix (the same for every request using it)."""
    return tuple((prefix_id, j) for j in range(blocks))


class Seq:
    """One request in an engine. `target` is what the next (re)prefill must compute: the prompt, or
    after a preemption by recompute the prompt plus every token emitted so far."""

    __slots__ = (
        "rid", "index", "arrival_s", "prompt", "output", "emitted", "computed", "target", "first_s",
        "last_s", "blocks", "nblocks", "cached", "base", "fin", "order", "preemptions", "kv_ready",
        "counted", "prefix_id", "prefix_tokens", "stream", "key_cap", "in_cohort", "seg_start", "windows",
        "hit_memo",
    )

    def __init__(self, rid: str, index: int, arrival_s: float, prompt: int, output: int,
                 prefix_id: str | None, prefix_tokens: int, conversation_id: str | None, counted: bool) -> None:
        self.rid = rid
        self.index = index  # position in the plan
        self.arrival_s = arrival_s
        self.prompt = prompt
        self.output = output
        self.emitted = 0
        self.computed = 0  # KV tokens computed in the current residency
        self.target = prompt
        self.first_s: float | None = None
        self.last_s = arrival_s
        self.blocks: list[int] = []  # identified blocks, in position order (the leading ones)
        self.nblocks = 0  # all blocks held at admission (identified + anonymous)
        self.cached = 0  # prompt tokens served from the prefix cache at first admission
        self.base = 0  # decode cohort: KV length = base + cohort.A
        self.fin = 0  # decode cohort: finishes when cohort.A reaches this
        self.order = 0  # admission sequence number (preemption picks the highest)
        self.preemptions = 0
        self.kv_ready = False  # arrives with its KV computed elsewhere (disaggregated decode)
        self.counted = counted  # in the summaries (not warm-up)
        self.prefix_id = prefix_id
        self.prefix_tokens = prefix_tokens
        # The token stream after the prefix: a conversation's turns share one, a lone request owns its own.
        self.stream = conversation_id if conversation_id is not None else rid
        # Tokens worth keying in the prefix cache: a conversation's later turns hit its whole history,
        # other requests only ever share their prefix.
        self.key_cap = ALL if conversation_id is not None else (prefix_tokens if prefix_id is not None else 0)
        self.in_cohort = False
        self.seg_start = 0  # decode cohort: the engine's step-gap index when it joined
        self.windows: list[int] | None = None  # its gaps: flat (track, start, stop) windows (stats.py)
        # while it waits: (pool evictions, blocks looked up, the cached ones found, each found block's place in
        # the run its first lookup found) of its last lookup
        self.hit_memo: tuple[int, int, tuple[int, ...], dict[int, int]] | None = None

    def block_key(self, j: int, block_size: int) -> Hashable:
        """Content key of full block j: equal keys ⇔ equal tokens (and equal tokens before them)."""
        if (j + 1) * block_size <= self.prefix_tokens:
            return (self.prefix_id, j)
        return self._stream_keys(j, j + 1)[0]

    def _stream_keys(self, start: int, stop: int) -> list[Hashable]:
        """Keys of blocks start … stop − 1 past the shared prefix (its own stream's tokens), in one
        comprehension: a preempted request asks for hundreds of its blocks at every readmission."""
        pid, pt, stream = self.prefix_id, self.prefix_tokens, self.stream
        return [(pid, pt, stream, j) for j in range(start, stop)]

    def keys(self, limit: int, block_size: int) -> list[Hashable]:
        """Content keys of the first `limit` full blocks (block_key of each)."""
        head = min(limit, self.prefix_tokens // block_size)
        keys: list[Hashable] = list(prefix_keys(self.prefix_id, head)) if head else []
        if limit > head:
            keys += self._stream_keys(head, limit)
        return keys

    @property
    def in_conversation(self) -> bool:
        return self.stream is not self.rid

    def make_reusable(self) -> None:
        self.key_cap = ALL

    def keyable_blocks(self, tokens: int, block_size: int) -> int:
        """How many leading full blocks of `tokens` are worth keying (others are never asked for)."""
        return (tokens if tokens < self.key_cap else self.key_cap) // block_size
