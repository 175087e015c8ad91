"""The per-process cache of decoded turn records is bounded by count and by an
estimate of the bytes it holds, least recently used out first."""

from __future__ import annotations

from haico.agent.checkpointer import DECODED_PER_STORED_BYTE, RecordCache


def test_the_byte_budget_evicts_the_least_recently_used() -> None:
    cost = 100 * DECODED_PER_STORED_BYTE
    cache = RecordCache(size=100, budget=2 * cost)
    cache.put("t", "a", ["A"], 100)
    cache.put("t", "b", ["B"], 100)
    assert cache.get("t", "a") == ["A"]  # a is now the most recently used
    cache.put("t", "c", ["C"], 100)
    assert cache.get("t", "b") is None
    assert cache.get("t", "a") == ["A"] and cache.get("t", "c") == ["C"]
    assert cache.used == 2 * cost
    cache.put("t", "c", ["C2"], 50)  # replacing an entry re-counts it
    assert cache.used == cost + 50 * DECODED_PER_STORED_BYTE
    # One record larger than the whole budget is still kept (alone).
    cache.put("t", "huge", ["H"], 10_000)
    assert cache.get("t", "huge") == ["H"] and cache.get("t", "a") is None
    cache.clear()
    assert cache.used == 0 and cache.get("t", "huge") is None


def test_the_count_bound_still_holds() -> None:
    cache = RecordCache(size=2, budget=10**9)
    for key in "abc":
        cache.put("t", key, [key], 1)
    assert cache.get("t", "a") is None and cache.get("t", "c") == ["c"]
