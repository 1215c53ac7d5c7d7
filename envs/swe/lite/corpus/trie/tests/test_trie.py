import pytest

from trie import Trie


def root_of_ab():
    leaf = {"children": {}, "end": 1, "passing": 1}
    middle = {"children": {"b": leaf}, "end": 0, "passing": 1}
    return {"children": {"a": middle}, "end": 0, "passing": 1}


def test_contains():
    t = Trie(["car", "cart"])
    assert ("car" in t) is True
    assert ("cart" in t) is True


def test_contains_prefix_is_not_a_word():
    t = Trie(["car", "cart"])
    assert ("ca" in t) is False
    assert ("carts" in t) is False


def test_contains_empty_trie():
    assert ("" in Trie()) is False
    assert ("a" in Trie()) is False


def test_count_repeated():
    t = Trie(["a", "a", "ab"])
    assert t.count("a") == 2
    assert t.count("ab") == 1


def test_count_missing():
    assert Trie(["abc"]).count("abd") == 0


def test_count_missing_in_middle():
    assert Trie(["abc"]).count("xbc") == 0


def test_count_prefix_only():
    assert Trie(["abc"]).count("ab") == 0
    assert Trie(["abc"]).count("abcd") == 0


def test_size():
    assert Trie(["x", "y", "x"]).size == 3


def test_size_empty():
    assert Trie().size == 0


def test_insert_after_creation():
    t = Trie()
    t.insert("ab")
    t.insert("a")
    assert (t.size, t.count("ab"), t.count("a")) == (2, 1, 1)


def test_node_structure():
    assert Trie(["ab"]).root == root_of_ab()


def test_node_structure_shared_prefix():
    root = Trie(["ab", "a"]).root
    assert (root["passing"], root["children"]["a"]["passing"], root["children"]["a"]["end"]) == (2, 2, 1)


def test_insert_empty():
    with pytest.raises(ValueError):
        Trie().insert("")


def test_insert_empty_in_constructor():
    with pytest.raises(ValueError, match="empty word"):
        Trie(["a", ""])


def test_insert_empty_keeps_trie():
    t = Trie(["a"])
    with pytest.raises(ValueError):
        t.insert("")
    assert (t.size, t.count_prefix("")) == (1, 1)


def test_count_prefix():
    t = Trie(["tea", "ten", "to", "inn"])
    assert t.count_prefix("te") == 2


def test_count_prefix_whole_word():
    t = Trie(["tea", "ten", "to", "inn"])
    assert t.count_prefix("tea") == 1
    assert t.count_prefix("t") == 3


def test_count_prefix_whole_trie():
    assert Trie(["a", "b", "b"]).count_prefix("") == 3


def test_count_prefix_repeated():
    assert Trie(["a", "a", "ab"]).count_prefix("a") == 3


def test_count_prefix_longer_than_word():
    assert Trie(["te"]).count_prefix("tea") == 0


def test_count_prefix_missing():
    assert Trie(["a"]).count_prefix("zz") == 0
    assert Trie().count_prefix("") == 0


def test_remove_one_occurrence():
    t = Trie(["go", "go"])
    t.remove("go")
    assert t.count("go") == 1


def test_remove_keeps_longer_word():
    t = Trie(["in", "inn"])
    t.remove("in")
    assert ("in" in t) is False
    assert ("inn" in t) is True


def test_remove_keeps_prefix_word():
    t = Trie(["in", "inn"])
    t.remove("inn")
    assert ("in" in t) is True
    assert ("inn" in t) is False


def test_remove_updates_prefix_counts():
    t = Trie(["tea", "ten"])
    t.remove("tea")
    assert t.count_prefix("te") == 1
    assert t.size == 1


def test_remove_last_word_empties_root():
    t = Trie(["ab"])
    t.remove("ab")
    assert (t.root, t.size) == ({"children": {}, "end": 0, "passing": 0}, 0)


def test_remove_branch():
    t = Trie(["ab", "ac"])
    t.remove("ab")
    assert list(t.root["children"]["a"]["children"]) == ["c"]


def test_remove_missing():
    with pytest.raises(KeyError):
        Trie(["a"]).remove("b")


def test_remove_prefix_not_inserted():
    t = Trie(["inn"])
    with pytest.raises(KeyError):
        t.remove("in")
    assert t.count_prefix("in") == 1


def test_remove_twice():
    t = Trie(["x"])
    t.remove("x")
    with pytest.raises(KeyError):
        t.remove("x")


def test_complete_sorted():
    t = Trie(["tea", "ted", "ten", "to"])
    assert t.complete("te") == ["tea", "ted", "ten"]


def test_complete_includes_prefix_word():
    assert Trie(["in", "inn", "ink"]).complete("in") == ["in", "ink", "inn"]


def test_complete_everything():
    assert Trie(["b", "b", "ab", "a"]).complete("") == ["a", "ab", "b"]


def test_complete_whole_word():
    assert Trie(["tea", "ten"]).complete("tea") == ["tea"]


def test_complete_limit():
    assert Trie(["a", "ab", "abc", "abd"]).complete("a", limit=2) == ["a", "ab"]


def test_complete_limit_zero_and_one():
    t = Trie(["zeta", "zed", "zoo"])
    assert t.complete("z", limit=0) == []
    assert t.complete("z", limit=1) == ["zed"]


def test_complete_missing():
    assert Trie(["a"]).complete("b") == []
    assert Trie(["abc"]).complete("abd") == []


def test_longest_common_prefix():
    assert Trie(["flower", "flow", "flight"]).longest_common_prefix() == "fl"


def test_longest_common_prefix_single_word():
    assert Trie(["hello"]).longest_common_prefix() == "hello"
    assert Trie(["same", "same"]).longest_common_prefix() == "same"


def test_longest_common_prefix_stops_at_word():
    assert Trie(["ab", "abc"]).longest_common_prefix() == "ab"


def test_longest_common_prefix_nothing_shared():
    assert Trie(["a", "b"]).longest_common_prefix() == ""


def test_longest_common_prefix_empty():
    assert Trie().longest_common_prefix() == ""
