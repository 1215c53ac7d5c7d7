import pytest

from graphs import components, distances, has_cycle, nodes, shortest_path, topological_order


def dag():
    return {"a": ["b", "c"], "b": ["d"], "c": ["d"], "d": ["e"]}


def ring():
    return {1: [2], 2: [3], 3: [1]}


def test_nodes_include_sinks():
    assert nodes({"a": ["b"]}) == ["a", "b"]


def test_nodes_empty():
    assert nodes({}) == []


def test_nodes_sorted_without_duplicates():
    assert nodes({3: [1, 2], 2: [5, 1]}) == [1, 2, 3, 5]


def test_nodes_of_dag():
    assert nodes(dag()) == ["a", "b", "c", "d", "e"]


def test_shortest_path_direct():
    assert shortest_path(dag(), "a", "b") == ["a", "b"]


def test_shortest_path_long():
    assert shortest_path(dag(), "a", "e") == ["a", "b", "d", "e"]


def test_shortest_path_same_node():
    assert shortest_path(dag(), "c", "c") == ["c"]


def test_shortest_path_same_node_on_a_cycle():
    assert shortest_path(ring(), 1, 1) == [1]


def test_shortest_path_unreachable():
    assert shortest_path(dag(), "e", "a") is None


def test_shortest_path_unknown_start():
    assert shortest_path(dag(), "x", "a") is None


def test_shortest_path_prefers_fewer_edges():
    graph = {1: [2, 5], 2: [3], 3: [4], 5: [4]}
    assert shortest_path(graph, 1, 4) == [1, 5, 4]


def test_shortest_path_around_a_cycle():
    assert shortest_path(ring(), 2, 1) == [2, 3, 1]
    assert shortest_path(ring(), 3, 2) == [3, 1, 2]


def test_distances():
    assert distances(dag(), "a") == {"a": 0, "b": 1, "c": 1, "d": 2, "e": 3}


def test_distances_from_sink():
    assert distances(dag(), "e") == {"e": 0}


def test_distances_unknown_start():
    assert distances(dag(), "q") == {"q": 0}


def test_distances_in_a_cycle():
    assert distances(ring(), 2) == {2: 0, 3: 1, 1: 2}


def test_distances_take_the_shorter_branch():
    graph = {"s": ["a", "b"], "a": ["c"], "b": ["x"], "x": ["c", "y"]}
    assert distances(graph, "s") == {"s": 0, "a": 1, "b": 1, "c": 2, "x": 2, "y": 3}


def test_topological_order():
    assert topological_order(dag()) == ["a", "b", "c", "d", "e"]


def test_topological_order_independent_nodes_sorted():
    assert topological_order({"z": [], "m": [], "b": []}) == ["b", "m", "z"]


def test_topological_order_waits_for_all_parents():
    assert topological_order({"x": ["z"], "y": ["z"], "a": ["y"]}) == ["a", "x", "y", "z"]


def test_topological_order_released_nodes_sorted():
    assert topological_order({"s": ["z", "b"], "b": [], "z": []}) == ["s", "b", "z"]


def test_topological_order_empty():
    assert topological_order({}) == []


def test_topological_order_cycle():
    with pytest.raises(ValueError):
        topological_order({"a": ["b"], "b": ["a"]})


def test_topological_order_cycle_after_a_prefix():
    with pytest.raises(ValueError):
        topological_order({"a": ["b"], "b": ["c"], "c": ["b"]})


def test_has_cycle_self_loop():
    assert has_cycle({"a": ["a"]}) is True


def test_has_cycle_ring():
    assert has_cycle(ring()) is True


def test_has_cycle_false_for_dag():
    assert has_cycle(dag()) is False


def test_has_cycle_false_for_empty():
    assert has_cycle({}) is False


def test_components_split():
    assert components({"a": ["b"], "c": ["d"], "e": []}) == [["a", "b"], ["c", "d"], ["e"]]


def test_components_follow_reverse_edges():
    assert components({"b": ["a"], "c": ["a"]}) == [["a", "b", "c"]]


def test_components_empty():
    assert components({}) == []


def test_components_ordered_by_smallest_node():
    assert components({5: [1], 3: [4], 2: []}) == [[1, 5], [2], [3, 4]]


def test_components_chain_and_cycle():
    assert components({1: [2], 2: [3], 4: [5], 5: [4]}) == [[1, 2, 3], [4, 5]]
