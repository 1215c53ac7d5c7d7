import pytest

from money import allocate, format_amount, parse_amount, percent_of, split, total, with_tax


def test_parse_plain():
    assert parse_amount("12.34") == 1234


def test_parse_symbol_and_groups():
    assert parse_amount("$1,234.56") == 123456


def test_parse_one_decimal():
    assert parse_amount("3.5") == 350


def test_parse_no_decimals():
    assert parse_amount("7") == 700


def test_parse_negative():
    assert parse_amount("-0.05") == -5


def test_parse_accounting_negative():
    assert parse_amount("($12.00)") == -1200


def test_parse_rejects_three_decimals():
    with pytest.raises(ValueError):
        parse_amount("1.234")


def test_parse_rejects_text():
    with pytest.raises(ValueError):
        parse_amount("abc")


def test_format():
    assert format_amount(123456) == "$1,234.56"


def test_format_small():
    assert format_amount(5) == "$0.05"


def test_format_negative():
    assert format_amount(-250, symbol="€") == "-€2.50"


def test_split_even():
    assert split(900, 3) == [300, 300, 300]


def test_split_remainder_first():
    assert split(1000, 3) == [334, 333, 333]


def test_split_bad_parts():
    with pytest.raises(ValueError):
        split(100, 0)


def test_allocate():
    assert allocate(100, [1, 1, 1]) == [34, 33, 33]


def test_allocate_weights():
    assert allocate(1000, [3, 7]) == [300, 700]


def test_allocate_largest_remainder():
    assert allocate(10, [1, 2, 2]) == [2, 4, 4]


def test_allocate_bad_weights():
    with pytest.raises(ValueError):
        allocate(10, [0, 0])


def test_percent_of_rounds_half_up():
    assert percent_of(250, 15) == 38


def test_percent_of_negative():
    assert percent_of(-250, 15) == -38


def test_with_tax():
    assert with_tax(1999, 8) == 2159


def test_total():
    assert total(["$1.10", "2.20", "(0.30)"]) == "$3.00"
