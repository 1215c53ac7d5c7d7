import pytest

from lru import LRUCache


def make(*pairs, capacity=2):
    cache = LRUCache(capacity)
    for key, value in pairs:
        cache.put(key, value)
    return cache


def test_rejects_zero_capacity():
    with pytest.raises(ValueError):
        LRUCache(0)


def test_get_missing_returns_default():
    assert LRUCache(2).get("x", 5) == 5


def test_put_then_get():
    assert make(("a", 1)).get("a") == 1


def test_eviction_of_oldest():
    cache = make(("a", 1), ("b", 2), ("c", 3))
    assert cache.keys() == ["b", "c"]


def test_put_returns_evicted_key():
    cache = make(("a", 1), ("b", 2))
    assert cache.put("c", 3) == "a"


def test_get_refreshes_key():
    cache = make(("a", 1), ("b", 2))
    cache.get("a")
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]


def test_update_does_not_evict():
    cache = make(("a", 1), ("b", 2))
    assert cache.put("a", 10) is None
    assert len(cache) == 2


def test_counters():
    cache = make(("a", 1))
    cache.get("a")
    cache.get("z")
    assert (cache.hits, cache.misses) == (1, 1)


def test_pop():
    cache = make(("a", 1), ("b", 2))
    assert cache.pop("a") == 1
    assert cache.keys() == ["b"]


def test_pop_missing():
    with pytest.raises(KeyError):
        LRUCache(1).pop("nope")


def test_capacity_one():
    cache = make(("a", 1), ("b", 2), capacity=1)
    assert cache.keys() == ["b"]
