import pytest

from querystr import build_query, get_param, parse_query, quote, split_url, unquote


def test_quote_safe_unchanged():
    assert quote("a-b_c.d~e") == "a-b_c.d~e"


def test_quote_space_and_symbols():
    assert quote("a b&c") == "a%20b%26c"


def test_quote_utf8():
    assert quote("é") == "%C3%A9"


def test_unquote():
    assert unquote("a%20b%26c") == "a b&c"


def test_unquote_plus():
    assert unquote("a+b") == "a b"


def test_unquote_plus_kept():
    assert unquote("a+b", plus_is_space=False) == "a+b"


def test_unquote_utf8():
    assert unquote("%C3%A9t%C3%A9") == "été"


def test_unquote_truncated():
    with pytest.raises(ValueError):
        unquote("abc%2")


def test_unquote_non_hex():
    with pytest.raises(ValueError):
        unquote("%zz")


def test_parse_query_multi():
    assert parse_query("a=1&b=2&a=3") == {"a": ["1", "3"], "b": ["2"]}


def test_parse_query_leading_question_mark():
    assert parse_query("?x=1") == {"x": ["1"]}


def test_parse_query_flag_and_empty_pairs():
    assert parse_query("flag&&y=") == {"flag": [""], "y": [""]}


def test_parse_query_value_with_equals():
    assert parse_query("eq=a=b") == {"eq": ["a=b"]}


def test_build_query():
    assert build_query({"q": "a b", "n": 2}) == "q=a%20b&n=2"


def test_build_query_lists():
    assert build_query({"t": ["x", "y"]}) == "t=x&t=y"


def test_build_round_trip():
    params = {"name": ["Zoë"], "tags": ["a&b", "c"]}
    assert parse_query(build_query(params)) == params


def test_split_url():
    assert split_url("https://Example.org:8443/a/b?x=1") == ("https", "example.org", 8443, "/a/b", "x=1")


def test_split_url_defaults():
    assert split_url("http://host") == ("http", "host", None, "/", "")


def test_split_url_bad_scheme():
    with pytest.raises(ValueError):
        split_url("ftp://host/")


def test_split_url_bad_port():
    with pytest.raises(ValueError, match="bad port"):
        split_url("http://host:99999/")


def test_split_url_missing_host():
    with pytest.raises(ValueError, match="missing host"):
        split_url("http:///path")


def test_get_param():
    assert get_param("http://h/p?a=1&b=2&a=3", "a") == "1"


def test_get_param_default():
    assert get_param("http://h/p", "a", "none") == "none"
