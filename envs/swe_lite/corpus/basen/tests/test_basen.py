import pytest

from basen import digit_sum, from_base, to_base


def test_to_base_binary():
    assert to_base(10, 2) == "1010"


def test_to_base_hex():
    assert to_base(255, 16) == "ff"


def test_to_base_zero():
    assert to_base(0, 7) == "0"


def test_to_base_negative():
    assert to_base(-35, 36) == "-z"


def test_to_base_rejects_base_one():
    with pytest.raises(ValueError):
        to_base(5, 1)


def test_to_base_accepts_base_36():
    assert to_base(36, 36) == "10"


def test_from_base_hex_upper():
    assert from_base("FF", 16) == 255


def test_from_base_negative():
    assert from_base("-101", 2) == -5


def test_from_base_rejects_digit_out_of_range():
    with pytest.raises(ValueError):
        from_base("12", 2)


def test_from_base_rejects_empty():
    with pytest.raises(ValueError):
        from_base("-", 10)


def test_roundtrip_base_7():
    assert from_base(to_base(12345, 7), 7) == 12345


def test_digit_sum_decimal():
    assert digit_sum(-9876) == 30


def test_digit_sum_binary():
    assert digit_sum(7, 2) == 3
