import pytest

from roman import from_roman, is_roman, to_roman


def test_to_roman_small():
    assert to_roman(3) == "III"


def test_to_roman_subtractive():
    assert to_roman(94) == "XCIV"


def test_to_roman_large():
    assert to_roman(3999) == "MMMCMXCIX"


def test_to_roman_one():
    assert to_roman(1) == "I"


def test_to_roman_rejects_zero():
    with pytest.raises(ValueError):
        to_roman(0)


def test_to_roman_rejects_too_large():
    with pytest.raises(ValueError):
        to_roman(4000)


def test_to_roman_rejects_float():
    with pytest.raises(TypeError):
        to_roman(2.0)


def test_from_roman_basic():
    assert from_roman("XLII") == 42


def test_from_roman_lowercase():
    assert from_roman("mcmxc") == 1990


def test_from_roman_rejects_bad_char():
    with pytest.raises(ValueError):
        from_roman("XIZ")


def test_from_roman_rejects_empty():
    with pytest.raises(ValueError):
        from_roman("")


def test_is_roman_canonical():
    assert is_roman("IV")


def test_is_roman_non_canonical():
    assert not is_roman("IIII")
