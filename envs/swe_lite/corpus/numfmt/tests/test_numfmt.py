import pytest

from numfmt import fixed, group_digits, human_bytes, ordinal, parse_grouped, percent


def test_group_small():
    assert group_digits(999) == "999"


def test_group_thousands():
    assert group_digits(1234567) == "1,234,567"


def test_group_exact_thousand():
    assert group_digits(1000) == "1,000"


def test_group_negative():
    assert group_digits(-4500) == "-4,500"


def test_group_custom_separator():
    assert group_digits(1234567, ".") == "1.234.567"


def test_fixed_rounds_half_up():
    assert fixed(2.345, 2) == "2.35"


def test_fixed_pads_decimals():
    assert fixed(3.5, 3) == "3.500"


def test_fixed_no_decimals():
    assert fixed(1234.6, 0) == "1,235"


def test_fixed_negative():
    assert fixed(-1234.5, 1) == "-1,234.5"


def test_fixed_negative_rounding_to_zero_has_no_sign():
    assert fixed(-0.001, 2) == "0.00"


def test_fixed_rejects_negative_places():
    with pytest.raises(ValueError):
        fixed(1.0, -1)


def test_bytes_small():
    assert human_bytes(512) == "512 B"


def test_bytes_kib():
    assert human_bytes(1536) == "1.5 KiB"


def test_bytes_exact_mib():
    assert human_bytes(1024 * 1024) == "1.0 MiB"


def test_bytes_largest_unit():
    assert human_bytes(1024 ** 5) == "1024.0 TiB"


def test_bytes_negative():
    with pytest.raises(ValueError):
        human_bytes(-1)


def test_percent():
    assert percent(1, 3) == "33.3%"


def test_percent_zero_whole():
    assert percent(5, 0) == "n/a"


def test_ordinals():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]


def test_parse_grouped():
    assert parse_grouped("1,234,567") == 1234567


def test_parse_grouped_negative():
    assert parse_grouped("-12,000") == -12000


def test_parse_grouped_rejects_short_group():
    with pytest.raises(ValueError):
        parse_grouped("1,23")
