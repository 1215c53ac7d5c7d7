import pytest

from roman import from_roman, is_roman, to_roman


def round_trip_numbers():
    return [1, 4, 9, 14, 40, 90, 400, 900, 1666, 2421, 3999]


def test_to_roman_small():
    assert to_roman(3) == "III"


def test_to_roman_one():
    assert to_roman(1) == "I"


def test_to_roman_subtractive():
    assert to_roman(94) == "XCIV"


def test_to_roman_four_and_nine():
    assert to_roman(4) == "IV"
    assert to_roman(9) == "IX"


def test_to_roman_hundreds():
    assert to_roman(400) == "CD"
    assert to_roman(1994) == "MCMXCIV"


def test_to_roman_long():
    assert to_roman(3888) == "MMMDCCCLXXXVIII"


def test_to_roman_large():
    assert to_roman(3999) == "MMMCMXCIX"


def test_to_roman_rejects_zero():
    with pytest.raises(ValueError):
        to_roman(0)


def test_to_roman_rejects_negative():
    with pytest.raises(ValueError, match="out of range"):
        to_roman(-5)


def test_to_roman_rejects_too_large():
    with pytest.raises(ValueError):
        to_roman(4000)


def test_to_roman_rejects_much_too_large():
    with pytest.raises(ValueError, match="out of range"):
        to_roman(10000)


def test_to_roman_rejects_float():
    with pytest.raises(TypeError):
        to_roman(2.0)


def test_to_roman_rejects_fraction():
    with pytest.raises(TypeError):
        to_roman(1.5)


def test_to_roman_rejects_string():
    with pytest.raises(TypeError, match="must be an int"):
        to_roman("5")


def test_from_roman_basic():
    assert from_roman("XLII") == 42


def test_from_roman_lowercase():
    assert from_roman("mcmxc") == 1990


def test_from_roman_subtractive_chain():
    assert from_roman("CDXLIV") == 444


def test_from_roman_extremes():
    assert from_roman("MMMCMXCIX") == 3999
    assert from_roman("I") == 1


def test_round_trip():
    assert [from_roman(to_roman(n)) for n in round_trip_numbers()] == round_trip_numbers()


def test_from_roman_rejects_bad_char():
    with pytest.raises(ValueError):
        from_roman("XIZ")


def test_from_roman_rejects_digits():
    with pytest.raises(ValueError):
        from_roman("12")


def test_from_roman_rejects_empty():
    with pytest.raises(ValueError, match="empty numeral"):
        from_roman("")


def test_from_roman_rejects_repeated_ones():
    with pytest.raises(ValueError):
        from_roman("IIII")


def test_from_roman_rejects_bad_subtraction():
    with pytest.raises(ValueError):
        from_roman("IC")


def test_from_roman_rejects_vx():
    with pytest.raises(ValueError):
        from_roman("VX")


def test_from_roman_rejects_too_large():
    with pytest.raises(ValueError):
        from_roman("MMMM")


def test_is_roman_canonical():
    assert is_roman("IV") is True


def test_is_roman_lowercase():
    assert is_roman("xiv") is True


def test_is_roman_non_canonical():
    assert is_roman("IIII") is False


def test_is_roman_empty():
    assert is_roman("") is False


def test_is_roman_bad_chars():
    assert is_roman("X I") is False
    assert is_roman("MCMXCIV!") is False
