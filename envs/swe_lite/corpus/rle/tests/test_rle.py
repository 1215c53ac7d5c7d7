import pytest

from rle import decode, encode, longest_run, runs


def test_encode_empty():
    assert encode("") == ""


def test_encode_single():
    assert encode("a") == "1a"


def test_encode_runs():
    assert encode("aaabcc") == "3a1b2c"


def test_encode_long_run():
    assert encode("z" * 12) == "12z"


def test_decode_basic():
    assert decode("3a1b2c") == "aaabcc"


def test_decode_multi_digit():
    assert decode("10x") == "x" * 10


def test_decode_missing_count():
    with pytest.raises(ValueError):
        decode("a")


def test_decode_trailing_count():
    with pytest.raises(ValueError):
        decode("2a3")


def test_roundtrip():
    assert decode(encode("hello  world")) == "hello  world"


def test_runs():
    assert runs("aabccc") == [("a", 2), ("b", 1), ("c", 3)]


def test_longest_run_first_wins():
    assert longest_run("aabbcd") == ("a", 2)


def test_longest_run_empty():
    assert longest_run("") is None
