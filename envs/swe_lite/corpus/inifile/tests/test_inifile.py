import pytest

from inifile import dump, get, get_bool, get_int, parse, strip_comment


def sample():
    return """
# global settings
name = demo
[server]
Port = 8080
host = example.org  ; the public name
debug = yes

[empty]
"""


def test_parse_sections():
    assert sorted(parse(sample())) == ["DEFAULT", "empty", "server"]


def test_parse_default_section():
    assert parse(sample())["DEFAULT"] == {"name": "demo"}


def test_keys_are_lowercased():
    assert "port" in parse(sample())["server"]


def test_inline_comment_removed():
    assert parse(sample())["server"]["host"] == "example.org"


def test_empty_section_exists():
    assert parse(sample())["empty"] == {}


def test_bad_header_names_line():
    with pytest.raises(ValueError, match="line 2"):
        parse("[ok]\n[broken\n")


def test_missing_equals():
    with pytest.raises(ValueError, match="expected key"):
        parse("[a]\njustakey\n")


def test_empty_key():
    with pytest.raises(ValueError, match="empty key"):
        parse(" = 3\n")


def test_strip_comment_quoted_value_kept():
    assert strip_comment('"a # b"') == "a # b"


def test_strip_comment_hash():
    assert strip_comment("value # note") == "value"


def test_strip_comment_no_space_keeps_hash():
    assert strip_comment("a#b") == "a#b"


def test_get_falls_back_to_default_section():
    assert get(parse(sample()), "server", "name") == "demo"


def test_get_missing_returns_default():
    assert get(parse(sample()), "server", "nope", "x") == "x"


def test_get_is_case_insensitive():
    assert get(parse(sample()), "server", "PORT") == "8080"


def test_get_int():
    assert get_int(parse(sample()), "server", "port") == 8080


def test_get_int_default():
    assert get_int(parse(sample()), "server", "workers", 4) == 4


def test_get_int_rejects_text():
    with pytest.raises(ValueError, match="server.host"):
        get_int(parse(sample()), "server", "host")


def test_get_bool_true():
    assert get_bool(parse(sample()), "server", "debug") is True


def test_get_bool_false_words():
    assert get_bool(parse("[a]\nx = Off\n"), "a", "x") is False


def test_get_bool_rejects_other():
    with pytest.raises(ValueError):
        get_bool(parse("[a]\nx = maybe\n"), "a", "x")


def test_dump_round_trip():
    data = parse(sample())
    assert parse(dump(data)) == data


def test_dump_skips_empty_default():
    assert dump({"DEFAULT": {}, "a": {"k": "v"}}) == "[a]\nk = v\n"
