import pytest

from slugwrap import count_words, slugify, truncate, wrap


def test_slugify_basic():
    assert slugify("Hello, World!") == "hello-world"


def test_slugify_separator():
    assert slugify("a b  c", separator="_") == "a_b_c"


def test_slugify_drops_non_ascii():
    assert slugify("Café au lait") == "caf-au-lait"


def test_slugify_empty():
    assert slugify("!!!") == ""


def test_wrap_fits_exactly():
    assert wrap("aa bb cc", 5) == ["aa bb", "cc"]


def test_wrap_long_word():
    assert wrap("a abcdefgh b", 4) == ["a", "abcdefgh", "b"]


def test_wrap_rejects_zero_width():
    with pytest.raises(ValueError):
        wrap("abc", 0)


def test_wrap_empty():
    assert wrap("   ", 10) == []


def test_truncate_short_text_unchanged():
    assert truncate("hello", 5) == "hello"


def test_truncate_cuts():
    assert truncate("hello world", 8) == "hello..."


def test_truncate_rejects_tiny_limit():
    with pytest.raises(ValueError):
        truncate("hello", 2)


def test_count_words():
    assert count_words("  one two\tthree\n") == 3
