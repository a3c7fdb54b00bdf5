"""The KV block pool of one replica: fixed-size blocks, a prefix cache keyed by block content, LRU eviction.

Blocks come in two kinds. An *identified* block has an id (0 … num_blocks−1) because the cache must
find it again: it holds a block of shared content (a system prompt, a conversation's history) under
a key. An *anonymous* block is one a sequence holds for content nobody else will ask for; only the
count matters, so the pool tracks how many are out without naming them (the simulator's hot path
grows every decoding sequence by count, never block by block).

Allocation order, exactly: never-cached free ids first, lowest id first on a fresh pool and most
recently freed first afterwards (a stack); when those run out, the least recently used cached block
whose reference count is zero is evicted and reused. A cached block that a new request hits is
taken off the eviction list (`acquire`), so a block in use is never evicted.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence

from vazao.errors import VazaoError


class PoolExhausted(VazaoError):
    """An allocation asked for more blocks than the pool can free."""


class BlockPool:
    def __init__(self, num_blocks: int, block_size: int, caching: bool = True):
        if num_blocks < 0 or block_size < 1:
            raise VazaoError(f"bad KV pool: {num_blocks} blocks of {block_size} tokens")
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.caching = caching
        # The never-cached free ids: a stack whose bottom is every id not yet handed out, lowest on top
        # (num_blocks − 1 … _fresh), kept as the count `_fresh` rather than listed (a pool of millions of
        # blocks was most of a short simulation's start), under the ids freed since, most recent on top.
        self._clean: list[int] = []
        self._fresh = 0  # ids _fresh … num_blocks − 1 were never handed out
        self._anon = 0  # anonymous blocks in use: a claim on the never-cached free ids
        self._lru: OrderedDict[int, None] = OrderedDict()  # evictable cached ids, oldest first
        self._key_of: dict[int, Hashable] = {}
        self._id_of: dict[Hashable, int] = {}
        self._refs: dict[int, int] = {}  # identified blocks in use → reference count
        self.evictions = 0
        # the ids evicted, in order (evictions == its length): a waiting request's earlier lookup stays
        # valid past the evictions that took none of its blocks (scheduler.py _hits)
        self._evicted: list[int] = []

    # ---- counts ------------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        """Blocks an allocation can get: never-cached free blocks plus evictable cached ones."""
        return self._spare + len(self._lru)

    @property
    def _spare(self) -> int:
        """Never-cached free blocks no anonymous allocation has claimed."""
        return len(self._clean) + self.num_blocks - self._fresh - self._anon

    @property
    def num_used(self) -> int:
        return self.num_blocks - self.num_free

    @property
    def num_cached(self) -> int:
        return len(self._id_of)

    @property
    def num_evictable(self) -> int:
        return len(self._lru)

    def usage(self) -> float:
        return self.num_used / self.num_blocks if self.num_blocks else 0.0

    # ---- allocation --------------------------------------------------------------------------
    def _make_clean(self, n: int) -> None:
        """Evict least recently used cached blocks until `n` never-cached blocks are unclaimed."""
        short = n - self._spare
        if short <= 0:
            return
        if short > len(self._lru):
            raise PoolExhausted(f"KV pool: {n} blocks wanted, {self.num_free} free")
        lru, key_of, id_of, clean, evicted = self._lru, self._key_of, self._id_of, self._clean, self._evicted
        for _ in range(short):
            bid, _ = lru.popitem(last=False)
            del id_of[key_of.pop(bid)]
            clean.append(bid)
            evicted.append(bid)
        self.evictions += short

    def allocate(self, n: int) -> list[int]:
        """n identified blocks (reference count 1)."""
        if n <= 0:
            return []
        self._make_clean(n)
        clean = self._clean
        m = min(n, len(clean))
        ids = clean[-m:][::-1] if m else []
        del clean[len(clean) - m:]
        if n > m:  # then the bottom of the stack: ids never handed out, lowest first
            ids += range(self._fresh, self._fresh + n - m)
            self._fresh += n - m
        for bid in ids:
            self._refs[bid] = 1
        return ids

    def allocate_anonymous(self, n: int) -> None:
        if n > 0:
            self._make_clean(n)
            self._anon += n

    def try_allocate_anonymous(self, n: int) -> bool:
        """allocate_anonymous(n) when the pool can free n blocks; False (and no change) otherwise."""
        spare = self._spare
        if n > spare:
            if n - spare > len(self._lru):
                return False
            self._make_clean(n)
        self._anon += n
        return True

    def free_anonymous(self, n: int) -> None:
        if n > self._anon:
            raise VazaoError(f"KV pool: freeing {n} anonymous blocks, {self._anon} held")
        self._anon -= n

    def identify(self, n: int) -> list[int]:
        """Turn n anonymous blocks a sequence holds into identified ones (to key them)."""
        if n <= 0:
            return []
        self.free_anonymous(n)
        return self.allocate(n)

    def free(self, ids: Iterable[int]) -> None:
        """Drop one reference to each block, in the given order: a cached block reaching zero goes to
        the back of the eviction list (free a sequence's blocks last-first so its tail is evicted
        before its head), an uncached one back onto the free stack."""
        refs, key_of, lru, clean = self._refs, self._key_of, self._lru, self._clean
        for bid in ids:
            r = refs[bid] - 1
            if r:
                refs[bid] = r
                continue
            del refs[bid]
            if bid in key_of:
                lru[bid] = None
            else:
                clean.append(bid)

    # ---- prefix cache ------------------------------------------------------------------------
    def commit(self, block_id: int, key: Hashable) -> bool:
        """Record that an in-use block holds `key`'s content. A key cached already (two requests
        computed the same block at once) keeps its first block; this one stays uncached."""
        if not self.caching or key in self._id_of or block_id in self._key_of:
            return False
        self._id_of[key] = block_id
        self._key_of[block_id] = key
        return True

    def match(self, keys: Iterable[Hashable]) -> list[int]:
        """Ids of the longest run of leading keys that are cached (no side effects)."""
        if not self.caching:
            return []
        out = []
        id_of = self._id_of
        for k in keys:
            bid = id_of.get(k)
            if bid is None:
                break
            out.append(bid)
        return out

    def evicted_since(self, evictions: int) -> list[int]:
        """The ids evicted after the pool's eviction count was `evictions`, in order."""
        return self._evicted[evictions:]

    def evictable_among(self, ids: Sequence[int]) -> int:
        """How many of `ids` (distinct block ids) sit on the eviction list."""
        return len(self._lru.keys() & ids)

    def acquire(self, ids: Iterable[int]) -> None:
        """Take a reference to cached blocks a request hit (off the eviction list if idle)."""
        refs, lru = self._refs, self._lru
        for bid in ids:
            if bid in lru:
                del lru[bid]
                refs[bid] = 1
            else:
                refs[bid] += 1

    def key_of(self, block_id: int) -> Hashable | None:
        return self._key_of.get(block_id)

    def eviction_order(self) -> list[int]:
        """Evictable cached ids, next to be evicted first."""
        return list(self._lru)
