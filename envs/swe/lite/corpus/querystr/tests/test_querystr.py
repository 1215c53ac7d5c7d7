import pytest

from querystr import build_query, get_param, parse_query, quote, split_url, unquote


def round_trip_params():
    return {"name": ["Zoë"], "tags": ["a&b", "c"]}


def test_quote_safe_unchanged():
    assert quote("a-b_c.d~e") == "a-b_c.d~e"
    assert quote("AZaz09") == "AZaz09"


def test_quote_empty():
    assert quote("") == ""


def test_quote_space_and_symbols():
    assert quote("a b&c") == "a%20b%26c"
    assert quote("/%+") == "%2F%25%2B"


def test_quote_utf8():
    assert quote("é") == "%C3%A9"
    assert quote("x€") == "x%E2%82%AC"
    assert quote("😀") == "%F0%9F%98%80"


def test_unquote():
    assert unquote("a%20b%26c") == "a b&c"


def test_unquote_lowercase_hex_at_end():
    assert unquote("x%2f%3a") == "x/:"


def test_unquote_plain_and_empty():
    assert unquote("abc") == "abc"
    assert unquote("") == ""


def test_unquote_plus():
    assert unquote("a+b") == "a b"


def test_unquote_plus_repeated():
    assert unquote("++x+") == "  x "


def test_unquote_encoded_plus_stays_plus():
    assert unquote("1%2B1+2") == "1+1 2"


def test_unquote_plus_kept():
    assert unquote("a+b", plus_is_space=False) == "a+b"


def test_unquote_plus_kept_with_escapes():
    assert unquote("%20+%41", plus_is_space=False) == " +A"


def test_unquote_utf8():
    assert unquote("%C3%A9t%C3%A9") == "été"


def test_unquote_truncated():
    with pytest.raises(ValueError):
        unquote("abc%2")


def test_unquote_lone_percent():
    with pytest.raises(ValueError, match="bad escape at 3"):
        unquote("100%")


def test_unquote_non_hex():
    with pytest.raises(ValueError):
        unquote("%zz")


def test_unquote_non_hex_second_digit():
    with pytest.raises(ValueError, match="bad escape at 1"):
        unquote("a%4g")


def test_parse_query_multi():
    assert parse_query("a=1&b=2&a=3&") == {"a": ["1", "3"], "b": ["2"]}


def test_parse_query_leading_question_mark():
    assert parse_query("?x=1") == {"x": ["1"]}


def test_parse_query_empty():
    assert parse_query("") == {}
    assert parse_query("?") == {}


def test_parse_query_flags_empty_pairs_and_equals():
    assert parse_query("flag&&y=&eq=a=b") == {"flag": [""], "y": [""], "eq": ["a=b"]}


def test_parse_query_decodes_keys_and_values():
    assert parse_query("?a%20b=c+d&k=%C3%A9") == {"a b": ["c d"], "k": ["é"]}


def test_build_query():
    assert build_query({"q": "a b", "n": 2}) == "q=a%20b&n=2"


def test_build_query_empty():
    assert build_query({}) == ""


def test_build_query_encodes_key():
    assert build_query({"a b": "&", "é": "1"}) == "a%20b=%26&%C3%A9=1"


def test_build_query_lists():
    assert build_query({"t": ["x", "y"]}) == "t=x&t=y"


def test_build_query_empty_list_and_scalars():
    assert build_query({"a": [], "b": -1, "c": [7, "z"]}) == "b=-1&c=7&c=z"


def test_build_round_trip():
    assert parse_query(build_query(round_trip_params())) == round_trip_params()


def test_split_url():
    assert split_url("https://Example.org:8443/a/b?x=1") == ("https", "example.org", 8443, "/a/b", "x=1")


def test_split_url_defaults():
    assert split_url("http://host") == ("http", "host", None, "/", "")


def test_split_url_path_without_query():
    assert split_url("http://HOST/x/") == ("http", "host", None, "/x/", "")


def test_split_url_query_without_path():
    assert split_url("https://h?a=1&b") == ("https", "h", None, "/", "a=1&b")


def test_split_url_port_boundaries():
    assert split_url("http://h:1/") == ("http", "h", 1, "/", "")
    assert split_url("http://h:65535") == ("http", "h", 65535, "/", "")


def test_split_url_bad_scheme():
    with pytest.raises(ValueError):
        split_url("ftp://host/")


def test_split_url_no_scheme():
    with pytest.raises(ValueError, match="not an http"):
        split_url("example.org/path")


def test_split_url_uppercase_scheme():
    with pytest.raises(ValueError, match="not an http"):
        split_url("HTTP://host/")


def test_split_url_bad_port():
    with pytest.raises(ValueError, match="bad port"):
        split_url("http://host:99999/")


def test_split_url_port_65536():
    with pytest.raises(ValueError, match="bad port"):
        split_url("http://host:65536")


def test_split_url_port_zero():
    with pytest.raises(ValueError, match="bad port"):
        split_url("http://host:0/")


def test_split_url_port_not_digits():
    with pytest.raises(ValueError, match="bad port"):
        split_url("http://host:8a/")


def test_split_url_empty_port():
    with pytest.raises(ValueError, match="bad port"):
        split_url("http://host:/")


def test_split_url_missing_host():
    with pytest.raises(ValueError, match="missing host"):
        split_url("http:///path")


def test_split_url_missing_host_with_port():
    with pytest.raises(ValueError, match="missing host"):
        split_url("https://:8080/")


def test_split_url_missing_host_before_query():
    with pytest.raises(ValueError, match="missing host"):
        split_url("http://?q=1")


def test_get_param():
    assert get_param("http://h/p?a=1&b=2&a=3", "a") == "1"
    assert get_param("http://h/p?a=1&b=2&a=3", "b") == "2"


def test_get_param_decoded():
    assert get_param("https://h:8080/s?q=caf%C3%A9+au+lait", "q") == "café au lait"


def test_get_param_default():
    assert get_param("http://h/p", "a", "none") == "none"
    assert get_param("http://h/p?b=1", "a") is None


def test_get_param_bad_url():
    with pytest.raises(ValueError):
        get_param("h/p?a=1", "a")
