import pytest

from money import allocate, format_amount, parse_amount, percent_of, split, total, with_tax


def test_parse_plain():
    assert parse_amount("12.34") == 1234


def test_parse_symbol_and_groups():
    assert parse_amount("$1,234.56") == 123456
    assert parse_amount("1,000,000") == 100000000


def test_parse_one_decimal():
    assert parse_amount("3.5") == 350


def test_parse_no_decimals():
    assert parse_amount("7") == 700
    assert parse_amount("5.") == 500


def test_parse_surrounding_spaces():
    assert parse_amount("  4.20 ") == 420


def test_parse_negative():
    assert parse_amount("-0.05") == -5


def test_parse_negative_with_symbol():
    assert parse_amount("-$8.01") == -801


def test_parse_accounting_negative():
    assert parse_amount("($12.00)") == -1200


def test_parse_accounting_and_minus_cancel():
    assert parse_amount("(-3.00)") == 300


def test_parse_rejects_three_decimals():
    with pytest.raises(ValueError):
        parse_amount("1.234")


def test_parse_rejects_long_fraction():
    with pytest.raises(ValueError):
        parse_amount("$5.125")


def test_parse_rejects_text():
    with pytest.raises(ValueError):
        parse_amount("abc")


def test_parse_rejects_bad_fraction():
    with pytest.raises(ValueError):
        parse_amount("1.2x")


def test_parse_rejects_missing_whole():
    with pytest.raises(ValueError):
        parse_amount(".5")


def test_format():
    assert format_amount(123456) == "$1,234.56"


def test_format_small():
    assert format_amount(5) == "$0.05"
    assert format_amount(0) == "$0.00"


def test_format_whole_amount():
    assert format_amount(100) == "$1.00"


def test_format_millions():
    assert format_amount(123456789) == "$1,234,567.89"


def test_format_negative():
    assert format_amount(-250, symbol="€") == "-€2.50"


def test_format_negative_cent():
    assert format_amount(-1) == "-$0.01"


def test_format_without_symbol():
    assert format_amount(1200, symbol="") == "12.00"


def test_split_even():
    assert split(900, 3) == [300, 300, 300]


def test_split_remainder_first():
    assert split(1000, 3) == [334, 333, 333]


def test_split_two_leftover_cents():
    assert split(11, 3) == [4, 4, 3]


def test_split_one_part():
    assert split(457, 1) == [457]


def test_split_fewer_cents_than_parts():
    assert split(2, 5) == [1, 1, 0, 0, 0]


def test_split_negative_amount():
    assert split(-10, 3) == [-3, -3, -4]


def test_split_bad_parts():
    with pytest.raises(ValueError):
        split(100, 0)


def test_split_negative_parts():
    with pytest.raises(ValueError):
        split(100, -2)


def test_allocate():
    assert allocate(100, [1, 1, 1]) == [34, 33, 33]


def test_allocate_weights():
    assert allocate(1000, [3, 7]) == [300, 700]


def test_allocate_largest_remainder():
    assert allocate(10, [1, 2, 2]) == [2, 4, 4]


def test_allocate_leftover_to_larger_remainder():
    assert allocate(100, [1, 2]) == [33, 67]
    assert allocate(101, [2, 1, 1]) == [51, 25, 25]


def test_allocate_ties_go_first():
    assert allocate(5, [1, 1]) == [3, 2]


def test_allocate_zero_weight():
    assert allocate(7, [0, 1]) == [0, 7]
    assert allocate(0, [2, 3]) == [0, 0]


def test_allocate_bad_weights():
    with pytest.raises(ValueError):
        allocate(10, [0, 0])


def test_allocate_negative_total_weight():
    with pytest.raises(ValueError):
        allocate(10, [1, -2])


def test_allocate_no_weights():
    with pytest.raises(ValueError):
        allocate(10, [])


def test_percent_of_rounds_half_up():
    assert percent_of(250, 15) == 38


def test_percent_of_exact():
    assert percent_of(200, 10) == 20
    assert percent_of(0, 15) == 0


def test_percent_of_rounds_up_above_half():
    assert percent_of(249, 10) == 25


def test_percent_of_half_and_below():
    assert percent_of(150, 1) == 2
    assert percent_of(149, 1) == 1


def test_percent_of_negative():
    assert percent_of(-250, 15) == -38


def test_percent_of_negative_below_half():
    assert percent_of(-149, 1) == -1
    assert percent_of(-150, 1) == -2


def test_with_tax():
    assert with_tax(1999, 8) == 2159


def test_with_tax_zero_rate():
    assert with_tax(1234, 0) == 1234


def test_with_tax_rounds_small_amount():
    assert with_tax(5, 10) == 6
    assert with_tax(4, 10) == 4


def test_with_tax_negative_amount():
    assert with_tax(-1000, 10) == -1100


def test_total():
    assert total(["$1.10", "2.20", "(0.30)"]) == "$3.00"


def test_total_empty():
    assert total([]) == "$0.00"


def test_total_negative():
    assert total(["-5", "2.50"]) == "-$2.50"


def test_total_carries_into_thousands():
    assert total(["$999.99", "0.01"]) == "$1,000.00"
