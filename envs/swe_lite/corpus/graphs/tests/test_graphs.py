import pytest

from graphs import components, distances, has_cycle, nodes, shortest_path, topological_order


def dag():
    return {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": ["e"]}


def test_nodes_include_sinks():
    assert nodes({"a": ["b"]}) == ["a", "b"]


def test_shortest_path_direct():
    assert shortest_path(dag(), "a", "b") == ["a", "b"]


def test_shortest_path_long():
    assert shortest_path(dag(), "a", "e") == ["a", "b", "d", "e"]


def test_shortest_path_same_node():
    assert shortest_path(dag(), "c", "c") == ["c"]


def test_shortest_path_unreachable():
    assert shortest_path(dag(), "e", "a") is None


def test_shortest_path_prefers_fewer_edges():
    graph = {1: [2, 5], 2: [3], 3: [4], 5: [4]}
    assert shortest_path(graph, 1, 4) == [1, 5, 4]


def test_distances():
    assert distances(dag(), "a") == {"a": 0, "b": 1, "c": 1, "d": 2, "e": 3}


def test_distances_from_sink():
    assert distances(dag(), "e") == {"e": 0}


def test_topological_order():
    assert topological_order(dag()) == ["a", "b", "c", "d", "e"]


def test_topological_order_independent_nodes_sorted():
    assert topological_order({"z": [], "m": [], "b": []}) == ["b", "m", "z"]


def test_topological_order_waits_for_all_parents():
    assert topological_order({"x": ["z"], "y": ["z"], "a": ["y"]}) == ["a", "x", "y", "z"]


def test_topological_order_cycle():
    with pytest.raises(ValueError):
        topological_order({"a": ["b"], "b": ["a"]})


def test_has_cycle_self_loop():
    assert has_cycle({"a": ["a"]})


def test_has_cycle_false_for_dag():
    assert not has_cycle(dag())


def test_components_split():
    assert components({"a": ["b"], "c": ["d"], "e": []}) == [["a", "b"], ["c", "d"], ["e"]]


def test_components_follow_reverse_edges():
    assert components({"b": ["a"], "c": ["a"]}) == [["a", "b", "c"]]


def test_components_empty():
    assert components({}) == []
