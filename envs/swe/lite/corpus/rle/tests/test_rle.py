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


def test_encode_alternating():
    assert encode("abab") == "1a1b1a1b"


def test_encode_run_at_end():
    assert encode("xyyy") == "1x3y"


def test_encode_case_and_spaces():
    assert encode("aA  ") == "1a1A2 "


def test_decode_basic():
    assert decode("3a1b2c") == "aaabcc"


def test_decode_single():
    assert decode("1q") == "q"


def test_decode_empty():
    assert decode("") == ""


def test_decode_multi_digit():
    assert decode("10x") == "x" * 10


def test_decode_multi_digit_then_single():
    assert decode("12a1b") == "aaaaaaaaaaaab"


def test_decode_zero_count():
    assert decode("0a2b") == "bb"


def test_decode_missing_count():
    with pytest.raises(ValueError):
        decode("a")


def test_decode_missing_count_in_middle():
    with pytest.raises(ValueError, match="missing count before 'b'"):
        decode("2ab")


def test_decode_trailing_count():
    with pytest.raises(ValueError):
        decode("2a3")


def test_decode_only_digits():
    with pytest.raises(ValueError, match="trailing count"):
        decode("12")


def test_roundtrip():
    assert decode(encode("hello  world")) == "hello  world"


def test_roundtrip_long_runs():
    assert encode(decode("11a3b")) == "11a3b"


def test_runs():
    assert runs("aabccc") == [("a", 2), ("b", 1), ("c", 3)]


def test_runs_empty():
    assert runs("") == []


def test_runs_single():
    assert runs("k") == [("k", 1)]


def test_runs_alternating():
    assert runs("abaa") == [("a", 1), ("b", 1), ("a", 2)]


def test_longest_run_first_wins():
    assert longest_run("aabbcd") == ("a", 2)


def test_longest_run_ties_keep_first():
    assert longest_run("abc") == ("a", 1)
    assert longest_run("xxyyzz") == ("x", 2)


def test_longest_run_empty():
    assert longest_run("") is None


def test_longest_run_single():
    assert longest_run("x") == ("x", 1)


def test_longest_run_in_middle():
    assert longest_run("abbbcc") == ("b", 3)


def test_longest_run_at_end():
    assert longest_run("abcccc") == ("c", 4)
