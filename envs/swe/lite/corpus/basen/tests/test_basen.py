import pytest

from basen import check_base, digit_sum, from_base, to_base


def test_check_base_accepts_two():
    assert check_base(2) is None


def test_check_base_accepts_thirty_six():
    assert check_base(36) is None


def test_check_base_accepts_ten():
    assert check_base(10) is None


def test_check_base_rejects_one():
    with pytest.raises(ValueError):
        check_base(1)


def test_check_base_rejects_thirty_seven():
    with pytest.raises(ValueError):
        check_base(37)


def test_check_base_rejects_negative():
    with pytest.raises(ValueError):
        check_base(-16)


def test_to_base_binary():
    assert to_base(10, 2) == "1010"


def test_to_base_hex():
    assert to_base(255, 16) == "ff"


def test_to_base_one():
    assert to_base(1, 2) == "1"


def test_to_base_octal_power():
    assert to_base(64, 8) == "100"


def test_to_base_large():
    assert to_base(2**64, 16) == "10000000000000000"


def test_to_base_zero():
    assert to_base(0, 7) == "0"


def test_to_base_zero_binary():
    assert to_base(0, 2) == "0"


def test_to_base_negative():
    assert to_base(-35, 36) == "-z"


def test_to_base_negative_hex():
    assert to_base(-255, 16) == "-ff"


def test_to_base_minus_one():
    assert to_base(-1, 2) == "-1"


def test_to_base_accepts_base_36():
    assert to_base(36, 36) == "10"


def test_to_base_largest_digit():
    assert to_base(35, 36) == "z"


def test_to_base_rejects_base_one():
    with pytest.raises(ValueError):
        to_base(5, 1)


def test_to_base_rejects_base_37():
    with pytest.raises(ValueError):
        to_base(5, 37)


def test_from_base_decimal():
    assert from_base("1234", 10) == 1234


def test_from_base_binary():
    assert from_base("1010", 2) == 10


def test_from_base_hex_upper():
    assert from_base("FF", 16) == 255


def test_from_base_hex_mixed_case():
    assert from_base("aB", 16) == 171


def test_from_base_base_36():
    assert from_base("z", 36) == 35
    assert from_base("10", 36) == 36


def test_from_base_strips_spaces():
    assert from_base("  42 ", 10) == 42


def test_from_base_zero():
    assert from_base("0", 5) == 0


def test_from_base_negative():
    assert from_base("-101", 2) == -5


def test_from_base_negative_hex():
    assert from_base("-ff", 16) == -255


def test_from_base_largest_digit():
    assert from_base("9", 10) == 9
    assert from_base("f", 16) == 15


def test_from_base_rejects_digit_out_of_range():
    with pytest.raises(ValueError):
        from_base("12", 2)


def test_from_base_rejects_digit_equal_to_base():
    with pytest.raises(ValueError):
        from_base("8", 8)


def test_from_base_rejects_letter_past_base():
    with pytest.raises(ValueError):
        from_base("g", 16)


def test_from_base_rejects_other_characters():
    with pytest.raises(ValueError):
        from_base("1.5", 10)


def test_from_base_rejects_empty():
    with pytest.raises(ValueError):
        from_base("-", 10)


def test_from_base_rejects_blank():
    with pytest.raises(ValueError):
        from_base("   ", 10)


def test_from_base_rejects_base_one():
    with pytest.raises(ValueError):
        from_base("0", 1)


def test_roundtrip_base_7():
    assert from_base(to_base(12345, 7), 7) == 12345


def test_roundtrip_negative_base_3():
    assert from_base(to_base(-1000, 3), 3) == -1000


def test_roundtrip_large_base_36():
    assert from_base(to_base(10**30, 36), 36) == 10**30


def test_digit_sum_decimal():
    assert digit_sum(-9876) == 30


def test_digit_sum_positive():
    assert digit_sum(12345) == 15


def test_digit_sum_power_of_ten():
    assert digit_sum(1000) == 1


def test_digit_sum_zero():
    assert digit_sum(0) == 0


def test_digit_sum_binary():
    assert digit_sum(7, 2) == 3


def test_digit_sum_binary_power_of_two():
    assert digit_sum(256, 2) == 1


def test_digit_sum_hex():
    assert digit_sum(255, 16) == 30


def test_digit_sum_base_36():
    assert digit_sum(-71, 36) == 36


def test_digit_sum_rejects_bad_base():
    with pytest.raises(ValueError):
        digit_sum(10, 37)
