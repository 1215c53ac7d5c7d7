import pytest

from numfmt import fixed, group_digits, human_bytes, ordinal, parse_grouped, percent


def test_group_small():
    assert group_digits(999) == "999"
    assert group_digits(0) == "0"


def test_group_thousands():
    assert group_digits(1234567) == "1,234,567"


def test_group_exact_thousand():
    assert group_digits(1000) == "1,000"


def test_group_six_digits():
    assert group_digits(100000) == "100,000"


def test_group_negative():
    assert group_digits(-4500) == "-4,500"


def test_group_negative_small():
    assert group_digits(-999) == "-999"


def test_group_custom_separator():
    assert group_digits(1234567, ".") == "1.234.567"
    assert group_digits(-1234, "") == "-1234"


def test_fixed_rounds_half_up():
    assert fixed(2.345, 2) == "2.35"


def test_fixed_default_places():
    assert fixed(0.5) == "0.50"
    assert fixed(7) == "7.00"


def test_fixed_pads_decimals():
    assert fixed(3.5, 3) == "3.500"
    assert fixed(1.05, 2) == "1.05"


def test_fixed_no_decimals():
    assert fixed(1234.6, 0) == "1,235"


def test_fixed_rounds_into_thousands():
    assert fixed(999.999, 2) == "1,000.00"


def test_fixed_negative():
    assert fixed(-1234.5, 1) == "-1,234.5"


def test_fixed_negative_half_away_from_zero():
    assert fixed(-2.5, 0) == "-3"


def test_fixed_negative_rounding_to_zero_has_no_sign():
    assert fixed(-0.001, 2) == "0.00"


def test_fixed_custom_separator():
    assert fixed(1234567.891, 1, " ") == "1 234 567.9"


def test_fixed_rejects_negative_places():
    with pytest.raises(ValueError):
        fixed(1.0, -1)


def test_fixed_rejects_places_below_minus_one():
    with pytest.raises(ValueError):
        fixed(-3.2, -2)


def test_bytes_small():
    assert human_bytes(512) == "512 B"


def test_bytes_zero_and_below_kib():
    assert human_bytes(0) == "0 B"
    assert human_bytes(1023) == "1023 B"


def test_bytes_exact_kib():
    assert human_bytes(1024) == "1.0 KiB"


def test_bytes_kib():
    assert human_bytes(1536) == "1.5 KiB"


def test_bytes_exact_mib():
    assert human_bytes(1024 * 1024) == "1.0 MiB"


def test_bytes_gib_and_tib():
    assert human_bytes(5 * 1024 ** 3 // 2) == "2.5 GiB"
    assert human_bytes(3 * 1024 ** 4) == "3.0 TiB"


def test_bytes_largest_unit():
    assert human_bytes(1024 ** 5) == "1024.0 TiB"


def test_bytes_negative():
    with pytest.raises(ValueError):
        human_bytes(-1)


def test_percent():
    assert percent(1, 3) == "33.3%"


def test_percent_places():
    assert percent(1, 2, 0) == "50%"
    assert percent(3, 8, 2) == "37.50%"


def test_percent_over_a_hundred():
    assert percent(12345, 10) == "123,450.0%"


def test_percent_negative_and_zero_part():
    assert percent(-1, 4) == "-25.0%"
    assert percent(0, 5) == "0.0%"


def test_percent_zero_whole():
    assert percent(5, 0) == "n/a"
    assert percent(0, 0) == "n/a"


def test_ordinals_first_three():
    assert ordinal(1) == "1st"
    assert ordinal(2) == "2nd"
    assert ordinal(3) == "3rd"


def test_ordinals_th():
    assert ordinal(0) == "0th"
    assert ordinal(4) == "4th"
    assert ordinal(10) == "10th"


def test_ordinals_teens():
    assert ordinal(11) == "11th"
    assert ordinal(12) == "12th"
    assert ordinal(13) == "13th"


def test_ordinals_round_numbers():
    assert ordinal(20) == "20th"
    assert ordinal(1000) == "1000th"


def test_ordinals_twenties():
    assert ordinal(21) == "21st"
    assert ordinal(22) == "22nd"
    assert ordinal(23) == "23rd"


def test_ordinals_hundreds():
    assert ordinal(101) == "101st"
    assert ordinal(111) == "111th"
    assert ordinal(112) == "112th"


def test_ordinals_large():
    assert ordinal(121) == "121st"
    assert ordinal(1001) == "1001st"
    assert ordinal(2013) == "2013th"


def test_parse_grouped():
    assert parse_grouped("1,234,567") == 1234567


def test_parse_grouped_full_leading_group():
    assert parse_grouped("123,456") == 123456


def test_parse_grouped_negative_millions():
    assert parse_grouped("-100,000,000") == -100000000


def test_parse_grouped_small():
    assert parse_grouped("0") == 0
    assert parse_grouped("12") == 12


def test_parse_grouped_without_separators():
    assert parse_grouped("1234567") == 1234567


def test_parse_grouped_negative():
    assert parse_grouped("-12,000") == -12000
    assert parse_grouped("-5") == -5


def test_parse_grouped_custom_separator():
    assert parse_grouped("9.876.543", ".") == 9876543


def test_parse_grouped_rejects_short_group():
    with pytest.raises(ValueError):
        parse_grouped("1,23")


def test_parse_grouped_rejects_long_group():
    with pytest.raises(ValueError):
        parse_grouped("1,2345")


def test_parse_grouped_rejects_long_leading_group():
    with pytest.raises(ValueError):
        parse_grouped("1234,567")


def test_parse_grouped_rejects_empty_leading_group():
    with pytest.raises(ValueError):
        parse_grouped(",123")
