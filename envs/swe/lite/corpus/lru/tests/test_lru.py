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


def test_rejects_negative_capacity():
    with pytest.raises(ValueError):
        LRUCache(-3)


def test_capacity_one_accepted():
    assert LRUCache(1).capacity == 1


def test_new_cache_is_empty():
    cache = LRUCache(3)
    assert cache.keys() == []
    assert (len(cache), cache.hits, cache.misses) == (0, 0, 0)


def test_get_missing_returns_default():
    assert LRUCache(2).get("x", 5) == 5
    assert make(("a", 1)).get("b") is None


def test_put_then_get():
    assert make(("a", 1)).get("a") == 1
    assert make(("a", 0), ("b", 2)).get("a", 7) == 0


def test_get_refreshes_key():
    cache = make(("a", 1), ("b", 2))
    cache.get("a")
    assert cache.keys() == ["b", "a"]


def test_get_refreshed_key_survives_eviction():
    cache = make(("a", 1), ("b", 2))
    cache.get("a")
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]


def test_get_missing_does_not_change_order():
    cache = make(("a", 1), ("b", 2))
    cache.get("z")
    assert cache.keys() == ["a", "b"]


def test_counters():
    cache = make(("a", 1))
    cache.get("a")
    cache.get("z")
    assert (cache.hits, cache.misses) == (1, 1)


def test_counters_count_every_lookup():
    cache = make(("a", 1), ("b", 2))
    for key in ["a", "b", "a", "x", "y"]:
        cache.get(key)
    assert (cache.hits, cache.misses) == (3, 2)


def test_eviction_of_oldest():
    cache = make(("a", 1), ("b", 2), ("c", 3))
    assert cache.keys() == ["b", "c"]


def test_put_returns_evicted_key():
    cache = make(("a", 1), ("b", 2))
    assert cache.put("c", 3) == "a"


def test_put_returns_none_with_room():
    cache = make(("a", 1), capacity=3)
    assert cache.put("b", 2) is None
    assert cache.put("c", 3) is None


def test_evicted_key_is_gone():
    cache = make(("a", 1), ("b", 2), ("c", 3))
    with pytest.raises(KeyError):
        cache.pop("a")


def test_evictions_in_order_capacity_three():
    cache = make(("a", 1), ("b", 2), ("c", 3), capacity=3)
    assert [cache.put("d", 4), cache.put("e", 5)] == ["a", "b"]
    assert cache.keys() == ["c", "d", "e"]


def test_update_does_not_evict():
    cache = make(("a", 1), ("b", 2))
    assert cache.put("a", 10) is None
    assert len(cache) == 2


def test_update_changes_value():
    cache = make(("a", 1), ("b", 2))
    cache.put("a", 10)
    assert cache.get("a") == 10


def test_update_refreshes_key():
    cache = make(("a", 1), ("b", 2))
    cache.put("a", 10)
    assert cache.put("c", 3) == "b"
    assert cache.keys() == ["a", "c"]


def test_capacity_one():
    cache = make(("a", 1), capacity=1)
    assert cache.put("b", 2) == "a"
    assert cache.keys() == ["b"]


def test_pop():
    cache = make(("a", 1), ("b", 2))
    assert cache.pop("a") == 1
    assert cache.keys() == ["b"]


def test_pop_middle_key():
    cache = make(("a", 1), ("b", 2), ("c", 3), capacity=3)
    assert cache.pop("b") == 2
    assert cache.keys() == ["a", "c"]


def test_pop_makes_room():
    cache = make(("a", 1), ("b", 2))
    cache.pop("b")
    assert cache.put("c", 3) is None
    assert cache.keys() == ["a", "c"]


def test_pop_missing():
    with pytest.raises(KeyError):
        LRUCache(1).pop("nope")


def test_pop_twice():
    cache = make(("a", 1))
    cache.pop("a")
    with pytest.raises(KeyError):
        cache.pop("a")


def test_keys_least_recent_first():
    cache = make(("x", 1), ("y", 2), ("z", 3), capacity=5)
    assert cache.keys() == ["x", "y", "z"]


def test_len_counts_entries():
    assert len(make(("a", 1), ("b", 2), capacity=4)) == 2


def test_len_after_pop():
    cache = make(("a", 1), ("b", 2))
    cache.pop("a")
    assert len(cache) == 1
