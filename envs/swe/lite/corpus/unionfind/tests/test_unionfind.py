import pytest

from unionfind import DisjointSet, count_islands


def island_grid():
    return ["##..", "#..#", "..##", "#..."]


def chain():
    ds = DisjointSet([1, 2, 3, 4])
    ds.union(1, 2)
    ds.union(3, 4)
    ds.union(3, 1)
    return ds


def test_new_items_are_separate():
    ds = DisjointSet("abc")
    assert ds.count == 3


def test_empty_set():
    ds = DisjointSet()
    assert (ds.parent, ds.size) == ({}, {})


def test_duplicates_in_constructor():
    assert DisjointSet("abba").parent == {"a": "a", "b": "b"}


def test_add_new_item():
    ds = DisjointSet()
    ds.add("z")
    assert (ds.parent, ds.size) == ({"z": "z"}, {"z": 1})


def test_add_twice_is_noop():
    ds = DisjointSet("a")
    ds.add("a")
    assert ds.count == 1


def test_add_after_union_keeps_group():
    ds = DisjointSet("ab")
    ds.union("a", "b")
    ds.add("b")
    assert (ds.parent, ds.group_size("a")) == ({"a": "a", "b": "a"}, 2)


def test_find_singleton():
    ds = DisjointSet([7, 8])
    assert ds.find(8) == 8


def test_find_unknown():
    with pytest.raises(KeyError):
        DisjointSet().find("missing")


def test_find_unknown_among_others():
    ds = DisjointSet("ab")
    ds.union("a", "b")
    with pytest.raises(KeyError):
        ds.find("c")


def test_find_follows_chain():
    ds = chain()
    assert [ds.find(1), ds.find(2), ds.find(3), ds.find(4)] == [3, 3, 3, 3]


def test_path_compression():
    ds = chain()
    assert ds.parent[2] == 1
    ds.find(2)
    assert ds.parent == {1: 3, 2: 3, 3: 3, 4: 3}


def test_union_joins():
    ds = DisjointSet("abc")
    ds.union("a", "b")
    assert ds.connected("a", "b") is True


def test_union_reports_change():
    ds = DisjointSet("ab")
    assert ds.union("a", "b") is True


def test_union_same_group_reports_no_change():
    ds = DisjointSet("ab")
    ds.union("a", "b")
    assert ds.union("b", "a") is False


def test_union_with_itself():
    ds = DisjointSet("ab")
    assert ds.union("a", "a") is False
    assert ds.size == {"a": 1, "b": 1}


def test_count_after_unions():
    ds = DisjointSet([0, 1, 2, 3, 4])
    ds.union(0, 1)
    ds.union(1, 2)
    ds.union(0, 2)
    assert ds.count == 3


def test_union_adds_unknown_items():
    ds = DisjointSet()
    ds.union("x", "y")
    assert ds.parent == {"x": "x", "y": "x"}
    assert list(ds.parent) == ["x", "y"]


def test_union_adds_unknown_items_in_order():
    ds = DisjointSet([5])
    ds.union(2, 1)
    assert list(ds.size) == [5, 2, 1]


def test_union_equal_sizes_first_root_wins():
    ds = DisjointSet("ab")
    ds.union("a", "b")
    assert (ds.parent, ds.size["a"]) == ({"a": "a", "b": "a"}, 2)


def test_smaller_group_joins_larger():
    ds = DisjointSet([0, 1, 2, 3])
    ds.union(1, 2)
    ds.union(1, 3)
    ds.union(0, 1)
    assert ds.find(0) == 1
    assert ds.find(2) == 1


def test_smaller_group_joins_larger_second_argument():
    ds = DisjointSet("abcd")
    ds.union("b", "c")
    ds.union("a", "b")
    assert ds.parent["a"] == "b"
    assert ds.size["b"] == 3


def test_connected_self():
    assert DisjointSet("q").connected("q", "q") is True


def test_not_connected():
    ds = DisjointSet("abc")
    ds.union("a", "b")
    assert ds.connected("a", "c") is False


def test_connected_through_chain():
    ds = DisjointSet("abcd")
    ds.union("a", "b")
    ds.union("c", "d")
    assert ds.connected("a", "d") is False
    ds.union("b", "c")
    assert ds.connected("a", "d") is True


def test_connected_unknown():
    with pytest.raises(KeyError):
        DisjointSet("a").connected("a", "b")


def test_group_size():
    ds = DisjointSet([0, 1, 2, 3, 4, 5])
    ds.union(0, 1)
    ds.union(2, 3)
    ds.union(1, 3)
    assert ds.group_size(2) == 4


def test_group_size_singleton():
    ds = DisjointSet("ab")
    assert ds.group_size("b") == 1


def test_group_size_repeated_union():
    ds = DisjointSet("abc")
    ds.union("a", "b")
    ds.union("b", "a")
    assert [ds.group_size("a"), ds.group_size("b"), ds.group_size("c")] == [2, 2, 1]


def test_group_size_unknown():
    with pytest.raises(KeyError):
        DisjointSet("a").group_size("z")


def test_groups():
    ds = DisjointSet("abcde")
    ds.union("e", "a")
    ds.union("c", "d")
    assert ds.groups() == [["a", "e"], ["b"], ["c", "d"]]


def test_groups_empty():
    assert DisjointSet().groups() == []


def test_groups_all_joined():
    ds = chain()
    assert ds.groups() == [[1, 2, 3, 4]]


def test_groups_singletons():
    assert DisjointSet([3, 1, 2]).groups() == [[1], [2], [3]]


def test_islands():
    assert count_islands(island_grid()) == 3


def test_islands_diagonal_is_separate():
    assert count_islands(["#.", ".#"]) == 2


def test_islands_none():
    assert count_islands(["...", "..."]) == 0
    assert count_islands([]) == 0


def test_islands_ring_and_late_join():
    assert count_islands(["###", "#.#", "###"]) == 1
    assert count_islands(["#.#", "###"]) == 1


def test_islands_lines():
    assert count_islands(["#", "#", "#"]) == 1
    assert count_islands(["###", "...", "#.#"]) == 3
