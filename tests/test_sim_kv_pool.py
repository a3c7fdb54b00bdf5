"""Exact tests of the KV block pool: block ids, reuse order, prefix-cache keys and LRU eviction."""

from __future__ import annotations

import pytest

from vazao.sim.kv_pool import BlockPool, PoolExhausted


def test_fresh_pool_hands_out_lowest_ids_then_reuses_most_recently_freed():
    pool = BlockPool(8, 16)
    assert pool.allocate(3) == [0, 1, 2]
    assert pool.allocate(2) == [3, 4]
    assert pool.num_free == 3 and pool.num_used == 5
    pool.free([1])
    pool.free([3])
    assert pool.allocate(2) == [3, 1]  # a stack: last freed, first reused
    assert pool.allocate(3) == [5, 6, 7]
    assert pool.num_free == 0
    with pytest.raises(PoolExhausted):
        pool.allocate(1)


def test_cached_blocks_are_evicted_least_recently_used_first():
    pool = BlockPool(4, 16)
    ids = pool.allocate(4)
    for i, bid in enumerate(ids):
        assert pool.commit(bid, ("k", i))
    pool.free(reversed(ids))  # a finished request frees its tail first
    assert pool.num_free == 4 and pool.num_cached == 4
    assert pool.eviction_order() == [3, 2, 1, 0]
    assert pool.allocate(1) == [3]  # evicts the least recently used: the old tail
    assert pool.evictions == 1
    assert pool.key_of(3) is None
    assert pool.match([("k", 0), ("k", 1), ("k", 2), ("k", 3)]) == [0, 1, 2]
    pool.allocate_anonymous(1)  # evicts block 2, keeps no id
    assert pool.eviction_order() == [1, 0]
    assert pool.match([("k", 0), ("k", 1), ("k", 2)]) == [0, 1]
    pool.acquire([0])  # a request hits block 0: it leaves the eviction list
    assert pool.eviction_order() == [1]
    assert pool.num_free == 1
    pool.free([0])
    assert pool.eviction_order() == [1, 0]


def test_never_cached_blocks_go_before_cached_ones():
    pool = BlockPool(4, 16)
    a = pool.allocate(2)
    pool.commit(a[0], "prefix-0")
    pool.free(a)  # block 0 cached (evictable), block 1 back on the free stack
    assert pool.allocate(1) == [1]
    assert pool.num_cached == 1 and pool.evictions == 0
    assert pool.allocate(2) == [2, 3]
    assert pool.allocate(1) == [0] and pool.evictions == 1


def test_shared_blocks_are_reference_counted():
    pool = BlockPool(4, 16)
    [b] = pool.allocate(1)
    pool.commit(b, "system-0")
    pool.acquire(pool.match(["system-0"]))  # a second request shares it
    pool.free([b])
    assert pool.eviction_order() == []  # still held by one request
    pool.free([b])
    assert pool.eviction_order() == [b]


def test_a_key_already_cached_keeps_its_first_block():
    pool = BlockPool(4, 16)
    x, y = pool.allocate(2)
    assert pool.commit(x, "same")
    assert not pool.commit(y, "same")
    pool.free([y, x])
    assert pool.eviction_order() == [x]
    assert pool.num_free == 4


def test_anonymous_blocks_are_counted_and_can_be_identified():
    pool = BlockPool(6, 16)
    pool.allocate_anonymous(4)
    assert pool.num_used == 4 and pool.num_free == 2
    assert pool.try_allocate_anonymous(3) is False and pool.num_used == 4
    assert pool.identify(2) == [0, 1]
    assert pool.num_used == 4
    pool.free_anonymous(2)
    pool.free([1, 0])
    assert pool.num_used == 0
    with pytest.raises(Exception, match="anonymous"):
        pool.free_anonymous(1)


def test_caching_off_matches_nothing():
    pool = BlockPool(4, 16, caching=False)
    [b] = pool.allocate(1)
    assert not pool.commit(b, "k")
    assert pool.match(["k"]) == []


def test_evicted_since_lists_what_each_eviction_took_in_order():
    """The eviction log a waiting request's remembered lookup is checked against (scheduler.py _hits)."""
    pool = BlockPool(4, 16)
    ids = pool.allocate(4)
    for i, bid in enumerate(ids):
        pool.commit(bid, ("k", i))
    pool.free(reversed(ids))
    assert pool.evicted_since(0) == []
    pool.allocate(1)  # evicts the old tail, block 3
    pool.allocate_anonymous(2)  # then blocks 2 and 1
    assert pool.evictions == 3
    assert pool.evicted_since(0) == [3, 2, 1] and pool.evicted_since(1) == [2, 1] and pool.evicted_since(3) == []
    assert pool.match([("k", 0), ("k", 1)]) == [0]


def test_a_large_pool_hands_out_ids_as_a_listed_stack_would():
    """The never-used ids are a count, not a list: the order is still lowest first, freed ids first after."""
    pool = BlockPool(10_000_000, 16)
    assert pool.num_free == 10_000_000
    assert pool.allocate(3) == [0, 1, 2]
    pool.free([1])
    assert pool.allocate(3) == [1, 3, 4]
    pool.allocate_anonymous(9_999_995)
    assert pool.num_free == 0
    with pytest.raises(PoolExhausted):
        pool.allocate(1)
    pool.free_anonymous(2)
    assert pool.allocate(2) == [5, 6]
