import pytest

from unionfind import DisjointSet, count_islands


def test_new_items_are_separate():
    ds = DisjointSet("abc")
    assert ds.count == 3


def test_add_twice_is_noop():
    ds = DisjointSet("a")
    ds.add("a")
    assert ds.count == 1


def test_union_joins():
    ds = DisjointSet("abc")
    ds.union("a", "b")
    assert ds.connected("a", "b")


def test_union_reports_change():
    ds = DisjointSet("ab")
    assert ds.union("a", "b") is True


def test_union_same_group_reports_no_change():
    ds = DisjointSet("ab")
    ds.union("a", "b")
    assert ds.union("b", "a") is False


def test_count_after_unions():
    ds = DisjointSet(range(5))
    ds.union(0, 1)
    ds.union(1, 2)
    ds.union(0, 2)
    assert ds.count == 3


def test_not_connected():
    ds = DisjointSet("abc")
    ds.union("a", "b")
    assert not ds.connected("a", "c")


def test_union_adds_unknown_items():
    ds = DisjointSet()
    ds.union("x", "y")
    assert ds.count == 1


def test_find_unknown():
    with pytest.raises(KeyError):
        DisjointSet().find("missing")


def test_group_size():
    ds = DisjointSet(range(6))
    ds.union(0, 1)
    ds.union(2, 3)
    ds.union(1, 3)
    assert ds.group_size(2) == 4


def test_smaller_group_joins_larger():
    ds = DisjointSet(range(4))
    ds.union(1, 2)
    ds.union(1, 3)
    ds.union(0, 1)
    assert ds.find(0) == ds.find(2) == 1


def test_path_compression():
    ds = DisjointSet()
    ds.parent = {1: 2, 2: 3, 3: 3}
    ds.size = {3: 3}
    ds.find(1)
    assert ds.parent[1] == 3


def test_groups():
    ds = DisjointSet("abcde")
    ds.union("e", "a")
    ds.union("c", "d")
    assert ds.groups() == [["a", "e"], ["b"], ["c", "d"]]


def test_islands():
    grid = ["##..", "#..#", "..##", "#..."]
    assert count_islands(grid) == 3


def test_islands_diagonal_is_separate():
    assert count_islands(["#.", ".#"]) == 2


def test_islands_none():
    assert count_islands(["...", "..."]) == 0


def test_islands_ring():
    assert count_islands(["###", "#.#", "###"]) == 1
