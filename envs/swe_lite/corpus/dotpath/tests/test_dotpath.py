import pytest

from dotpath import delete_path, flatten, get_path, set_path, split_path, unflatten


def config():
    return {"servers": [{"host": "a", "port": 80}, {"host": "b"}], "name": "demo", "empty": {}}


def test_split_path():
    assert split_path("a.b.10") == ["a", "b", 10]


def test_split_path_empty_segment():
    with pytest.raises(ValueError):
        split_path("a..b")


def test_split_path_root():
    assert split_path("") == []


def test_get_nested():
    assert get_path(config(), "servers.1.host") == "b"


def test_get_root():
    data = config()
    assert get_path(data, "") is data


def test_get_missing_key():
    assert get_path(config(), "servers.1.port", 443) == 443


def test_get_index_out_of_range():
    assert get_path(config(), "servers.2.host") is None


def test_get_through_scalar():
    assert get_path(config(), "name.first") is None


def test_set_creates_dicts():
    assert set_path({}, "a.b.c", 1) == {"a": {"b": {"c": 1}}}


def test_set_creates_lists():
    assert set_path({}, "items.1", "x") == {"items": [None, "x"]}


def test_set_overwrites():
    data = {"a": {"b": 1}}
    set_path(data, "a.b", 2)
    assert data == {"a": {"b": 2}}


def test_set_root_rejected():
    with pytest.raises(ValueError):
        set_path({}, "", 1)


def test_flatten():
    assert flatten({"a": {"b": 1}, "c": [2, 3]}) == {"a.b": 1, "c.0": 2, "c.1": 3}


def test_flatten_keeps_empty_containers():
    assert flatten({"e": {}, "l": []}) == {"e": {}, "l": []}


def test_unflatten_round_trip():
    assert unflatten(flatten(config())) == config()


def test_unflatten_orders_numeric_indexes():
    assert unflatten({"x.10": "k", "x.2": "c"})["x"][10] == "k"


def test_delete_key():
    data = {"a": {"b": 1, "c": 2}}
    delete_path(data, "a.b")
    assert data == {"a": {"c": 2}}


def test_delete_list_item():
    data = {"l": [1, 2, 3]}
    delete_path(data, "l.0")
    assert data == {"l": [2, 3]}


def test_delete_top_level():
    data = {"a": 1, "b": 2}
    delete_path(data, "a")
    assert data == {"b": 2}


def test_delete_missing():
    with pytest.raises(KeyError):
        delete_path({"a": {}}, "a.b")
