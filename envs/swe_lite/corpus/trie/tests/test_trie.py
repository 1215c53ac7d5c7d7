import pytest

from trie import Trie


def test_contains():
    t = Trie(["car", "cart"])
    assert "car" in t and "cart" in t and "ca" not in t


def test_count_repeated():
    t = Trie(["a", "a", "ab"])
    assert t.count("a") == 2


def test_count_missing():
    assert Trie(["abc"]).count("abd") == 0


def test_size():
    assert Trie(["x", "y", "x"]).size == 3


def test_insert_empty():
    with pytest.raises(ValueError):
        Trie().insert("")


def test_count_prefix():
    t = Trie(["tea", "ten", "to", "inn"])
    assert t.count_prefix("te") == 2


def test_count_prefix_whole_trie():
    assert Trie(["a", "b", "b"]).count_prefix("") == 3


def test_count_prefix_missing():
    assert Trie(["a"]).count_prefix("zz") == 0


def test_remove_one_occurrence():
    t = Trie(["go", "go"])
    t.remove("go")
    assert t.count("go") == 1


def test_remove_keeps_longer_word():
    t = Trie(["in", "inn"])
    t.remove("in")
    assert "in" not in t and "inn" in t


def test_remove_keeps_prefix_word():
    t = Trie(["in", "inn"])
    t.remove("inn")
    assert "in" in t and "inn" not in t


def test_remove_updates_prefix_counts():
    t = Trie(["tea", "ten"])
    t.remove("tea")
    assert t.count_prefix("te") == 1 and t.size == 1


def test_remove_missing():
    with pytest.raises(KeyError):
        Trie(["a"]).remove("b")


def test_complete_sorted():
    t = Trie(["tea", "ted", "ten", "to"])
    assert t.complete("te") == ["tea", "ted", "ten"]


def test_complete_includes_prefix_word():
    assert Trie(["in", "inn", "ink"]).complete("in") == ["in", "ink", "inn"]


def test_complete_limit():
    assert Trie(["a", "ab", "abc", "abd"]).complete("a", limit=2) == ["a", "ab"]


def test_complete_missing():
    assert Trie(["a"]).complete("b") == []


def test_longest_common_prefix():
    assert Trie(["flower", "flow", "flight"]).longest_common_prefix() == "fl"


def test_longest_common_prefix_stops_at_word():
    assert Trie(["ab", "abc"]).longest_common_prefix() == "ab"


def test_longest_common_prefix_empty():
    assert Trie().longest_common_prefix() == ""
