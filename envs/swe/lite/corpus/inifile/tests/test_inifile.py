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


def config():
    return {"DEFAULT": {"name": "demo", "port": "80", "retries": "3"},
            "server": {"port": "8080", "host": "example.org", "debug": "yes", "size": "-12"},
            "flags": {"a": "On", "b": "0", "c": "FALSE", "d": "maybe", "e": "1"}}


def test_parse_sections():
    assert sorted(parse(sample())) == ["DEFAULT", "empty", "server"]


def test_parse_default_section():
    assert parse(sample())["DEFAULT"] == {"name": "demo"}


def test_parse_server_section():
    assert parse(sample())["server"] == {"port": "8080", "host": "example.org", "debug": "yes"}


def test_parse_empty_text():
    assert parse("") == {"DEFAULT": {}}


def test_parse_comments_and_blank_lines_skipped():
    assert parse("; one\n\n   # two\nk = v\n") == {"DEFAULT": {"k": "v"}}


def test_parse_keys_lowercased_values_kept():
    assert parse("[S]\n  MiXed Key =  Some Value  \n") == {"DEFAULT": {}, "S": {"mixed key": "Some Value"}}


def test_parse_value_may_contain_equals():
    assert parse("url = a=b\n") == {"DEFAULT": {"url": "a=b"}}


def test_parse_repeated_section_merges():
    assert parse("[a]\nx = 1\n[b]\ny = 2\n[a]\nz = 3\n")["a"] == {"x": "1", "z": "3"}


def test_parse_section_name_stripped():
    assert sorted(parse("[ db ]\nk = v\n")) == ["DEFAULT", "db"]


def test_parse_empty_value():
    assert parse("[a]\nk =\n")["a"] == {"k": ""}


def test_parse_quoted_values():
    assert parse('a = ""\nb = "\nc = "x # y"\n') == {"DEFAULT": {"a": "", "b": '"', "c": "x # y"}}


def test_bad_header_names_line():
    with pytest.raises(ValueError, match="line 2"):
        parse("[ok]\n[broken\n")


def test_bad_header_empty_brackets():
    with pytest.raises(ValueError, match="line 1: bad section"):
        parse("[]\nk = v\n")


def test_missing_equals():
    with pytest.raises(ValueError, match="line 3: expected key"):
        parse("[a]\n\njustakey\n")


def test_missing_equals_in_default_section():
    with pytest.raises(ValueError, match="line 2: expected key"):
        parse("a = 1\nb\n")


def test_empty_key():
    with pytest.raises(ValueError, match="line 1: empty key"):
        parse(" = 3\n")


def test_strip_comment_quoted_value_kept():
    assert strip_comment('"a # b"') == "a # b"


def test_strip_comment_single_quotes():
    assert strip_comment("'x ; y'") == "x ; y"


def test_strip_comment_empty_quotes():
    assert strip_comment("''") == ""
    assert strip_comment('""') == ""


def test_strip_comment_unmatched_quotes():
    assert strip_comment('"abc\'') == '"abc\''


def test_strip_comment_lone_quote():
    assert strip_comment('"') == '"'
    assert strip_comment("'") == "'"


def test_strip_comment_hash():
    assert strip_comment("value # note") == "value"


def test_strip_comment_semicolon():
    assert strip_comment("a b ; note") == "a b"


def test_strip_comment_both_markers():
    assert strip_comment("a ; b # c") == "a"


def test_strip_comment_no_space_keeps_hash():
    assert strip_comment("a#b") == "a#b"
    assert strip_comment("x;y") == "x;y"


def test_strip_comment_trailing_spaces():
    assert strip_comment("abc   ") == "abc"
    assert strip_comment("") == ""


def test_get_from_section():
    assert get(config(), "server", "host") == "example.org"


def test_get_section_overrides_default():
    assert get(config(), "server", "port") == "8080"


def test_get_falls_back_to_default_section():
    assert get(config(), "server", "name") == "demo"


def test_get_unknown_section_uses_default_section():
    assert get(config(), "nowhere", "retries") == "3"


def test_get_missing_returns_default():
    assert get(config(), "server", "nope", "x") == "x"
    assert get(config(), "server", "nope") is None


def test_get_without_default_section():
    assert get({"a": {"k": "v"}}, "b", "k", "none") == "none"


def test_get_is_case_insensitive():
    assert get(config(), "server", "PORT") == "8080"


def test_get_int():
    assert get_int(config(), "server", "port") == 8080


def test_get_int_negative():
    assert get_int(config(), "server", "size") == -12


def test_get_int_from_default_section():
    assert get_int(config(), "flags", "retries") == 3


def test_get_int_default():
    assert get_int(config(), "server", "workers", 4) == 4


def test_get_int_default_is_zero():
    assert get_int(config(), "server", "workers") == 0
    assert get_int(config(), "nowhere", "x") == 0


def test_get_int_missing_in_empty_data():
    assert get_int({}, "a", "b") == 0


def test_get_int_rejects_text():
    with pytest.raises(ValueError, match="server.host"):
        get_int(config(), "server", "host")


def test_get_int_rejects_bool_word():
    with pytest.raises(ValueError, match="flags.a is not an integer"):
        get_int(config(), "flags", "a")


def test_get_bool_true():
    assert get_bool(config(), "server", "debug") is True


def test_get_bool_true_words():
    assert get_bool(config(), "flags", "a") is True
    assert get_bool(config(), "flags", "e") is True


def test_get_bool_false_words():
    assert get_bool(config(), "flags", "b") is False
    assert get_bool(config(), "flags", "c") is False


def test_get_bool_default():
    assert get_bool(config(), "flags", "zzz") is False


def test_get_bool_given_default():
    assert get_bool(config(), "flags", "zzz", True) is True


def test_get_bool_rejects_other():
    with pytest.raises(ValueError, match="flags.d is not a boolean"):
        get_bool(config(), "flags", "d")


def test_get_bool_rejects_number():
    with pytest.raises(ValueError):
        get_bool(config(), "server", "port")


def test_dump_sections():
    assert dump({"DEFAULT": {}, "a": {"k": "v"}, "b": {"x": "1", "y": "2"}}) == "[a]\nk = v\n\n[b]\nx = 1\ny = 2\n"


def test_dump_skips_empty_default():
    assert dump({"DEFAULT": {}, "a": {"k": "v"}}) == "[a]\nk = v\n"


def test_dump_keeps_nonempty_default():
    assert dump({"DEFAULT": {"n": "1"}, "s": {}}) == "[DEFAULT]\nn = 1\n\n[s]\n"


def test_dump_empty():
    assert dump({}) == ""
    assert dump({"DEFAULT": {}}) == ""


def test_dump_round_trip():
    data = parse(sample())
    assert parse(dump(data)) == data
