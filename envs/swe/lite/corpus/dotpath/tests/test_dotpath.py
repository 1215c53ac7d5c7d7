import pytest

from dotpath import delete_path, flatten, get_path, set_path, split_path, unflatten


def config():
    return {"servers": [{"host": "a", "port": 80}, {"host": "b"}], "name": "demo", "empty": {}}


def test_split_path():
    assert split_path("a.b.10") == ["a", "b", 10]


def test_split_path_single_part():
    assert split_path("a") == ["a"]


def test_split_path_leading_index():
    assert split_path("0.x") == [0, "x"]


def test_split_path_negative_is_a_key():
    assert split_path("a.-1") == ["a", "-1"]


def test_split_path_root():
    assert split_path("") == []


def test_split_path_empty_segment():
    with pytest.raises(ValueError):
        split_path("a..b")


def test_split_path_trailing_dot():
    with pytest.raises(ValueError):
        split_path("a.")


def test_split_path_leading_dot():
    with pytest.raises(ValueError):
        split_path(".a")


def test_get_nested():
    assert get_path(config(), "servers.1.host") == "b"


def test_get_first_list_item():
    assert get_path({"a": [10, 20]}, "a.0") == 10


def test_get_from_list_root():
    assert get_path([5, [6, 7]], "1.1") == 7


def test_get_top_level():
    assert get_path(config(), "name") == "demo"


def test_get_root():
    assert get_path(config(), "") == config()


def test_get_missing_key():
    assert get_path(config(), "servers.1.port", 443) == 443


def test_get_missing_top_level_key():
    assert get_path({"a": 1}, "b", "d") == "d"


def test_get_stored_none_is_not_missing():
    assert get_path({"a": {"b": None}}, "a.b", 5) is None


def test_get_index_out_of_range():
    assert get_path(config(), "servers.2.host") is None


def test_get_index_just_past_end():
    assert get_path({"a": [10, 20]}, "a.2", "none") == "none"


def test_get_negative_index_is_missing():
    assert get_path({"a": [10, 20]}, "a.-1") is None


def test_get_index_of_dict_is_missing():
    assert get_path({"0": "s"}, "0", "no") == "no"


def test_get_through_scalar():
    assert get_path(config(), "name.first") is None


def test_set_creates_dicts():
    assert set_path({}, "a.b.c", 1) == {"a": {"b": {"c": 1}}}


def test_set_top_level():
    assert set_path({}, "k", 0) == {"k": 0}


def test_set_creates_lists():
    assert set_path({}, "items.1", "x") == {"items": [None, "x"]}


def test_set_creates_list_of_dicts():
    assert set_path({}, "a.0.b", 1) == {"a": [{"b": 1}]}


def test_set_in_list_root():
    assert set_path([], "2", "z") == [None, None, "z"]


def test_set_extends_list():
    assert set_path({"a": [1]}, "a.3", 4) == {"a": [1, None, None, 4]}


def test_set_fills_none_slot():
    assert set_path({"a": [None, None]}, "a.1.k", "v") == {"a": [None, {"k": "v"}]}


def test_set_overwrites():
    data = {"a": {"b": 1}}
    set_path(data, "a.b", 2)
    assert data == {"a": {"b": 2}}


def test_set_overwrites_list_item():
    data = {"l": [1, 2, 3]}
    set_path(data, "l.1", 9)
    assert data == {"l": [1, 9, 3]}


def test_set_keeps_siblings():
    data = config()
    set_path(data, "servers.0.port", 8080)
    assert data["servers"] == [{"host": "a", "port": 8080}, {"host": "b"}]


def test_set_root_rejected():
    with pytest.raises(ValueError):
        set_path({}, "", 1)


def test_set_root_of_list_rejected():
    with pytest.raises(ValueError):
        set_path([1], "", 2)


def test_flatten():
    assert flatten({"a": {"b": 1}, "c": [2, 3]}) == {"a.b": 1, "c.0": 2, "c.1": 3}


def test_flatten_deep():
    assert flatten({"a": {"b": {"c": None}}}) == {"a.b.c": None}


def test_flatten_list_root():
    assert flatten([1, [2, {"a": 3}]]) == {"0": 1, "1.0": 2, "1.1.a": 3}


def test_flatten_with_prefix():
    assert flatten({"x": 1}, "root") == {"root.x": 1}


def test_flatten_empty():
    assert flatten({}) == {}


def test_flatten_keeps_empty_containers():
    assert flatten({"e": {}, "l": []}) == {"e": {}, "l": []}


def test_flatten_config():
    assert flatten(config()) == {"servers.0.host": "a", "servers.0.port": 80, "servers.1.host": "b",
                                 "name": "demo", "empty": {}}


def test_unflatten_dicts():
    assert unflatten({"a.b": 1, "a.c": 2}) == {"a": {"b": 1, "c": 2}}


def test_unflatten_list():
    assert unflatten({"a.1": "y", "a.0": "x", "b": 3}) == {"a": ["x", "y"], "b": 3}


def test_unflatten_empty():
    assert unflatten({}) == {}


def test_unflatten_round_trip():
    assert unflatten(flatten(config())) == config()


def test_unflatten_orders_numeric_indexes():
    assert unflatten({"x.10": "k", "x.2": "c"})["x"][10] == "k"


def test_unflatten_gaps_are_none():
    assert unflatten({"x.3": "d", "x.1": "b"}) == {"x": [None, "b", None, "d"]}


def test_delete_key():
    data = {"a": {"b": 1, "c": 2}}
    delete_path(data, "a.b")
    assert data == {"a": {"c": 2}}


def test_delete_deep_key():
    data = {"a": {"b": {"c": 1, "d": 2}}}
    delete_path(data, "a.b.c")
    assert data == {"a": {"b": {"d": 2}}}


def test_delete_list_item():
    data = {"l": [1, 2, 3]}
    delete_path(data, "l.0")
    assert data == {"l": [2, 3]}


def test_delete_last_list_item():
    data = {"l": [1, 2, 3]}
    delete_path(data, "l.2")
    assert data == {"l": [1, 2]}


def test_delete_from_list_root():
    data = [1, 2, 3]
    delete_path(data, "1")
    assert data == [1, 3]


def test_delete_top_level():
    data = {"a": 1, "b": 2}
    delete_path(data, "a")
    assert data == {"b": 2}


def test_delete_missing():
    with pytest.raises(KeyError):
        delete_path({"a": {}}, "a.b")


def test_delete_missing_top_level():
    with pytest.raises(KeyError):
        delete_path({"a": 1}, "b")


def test_delete_index_past_end():
    with pytest.raises(KeyError):
        delete_path({"l": [1, 2]}, "l.2")


def test_delete_index_past_end_of_list_root():
    with pytest.raises(KeyError):
        delete_path([7], "1")


def test_delete_below_scalar():
    with pytest.raises(KeyError):
        delete_path({"a": 1}, "a.b")
