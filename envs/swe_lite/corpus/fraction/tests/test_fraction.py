import pytest

from fraction import Fraction, gcd, mean


def test_gcd():
    assert gcd(12, 18) == 6


def test_gcd_negative():
    assert gcd(-4, 6) == 2


def test_gcd_zero():
    assert gcd(0, 5) == 5


def test_lowest_terms():
    assert str(Fraction(6, 8)) == "3/4"


def test_negative_denominator_moves_sign():
    assert repr(Fraction(1, -2)) == "Fraction(-1, 2)"


def test_zero_denominator():
    with pytest.raises(ZeroDivisionError):
        Fraction(1, 0)


def test_add():
    assert Fraction(1, 2) + Fraction(1, 3) == Fraction(5, 6)


def test_sub():
    assert Fraction(1, 2) - Fraction(3, 4) == Fraction(-1, 4)


def test_mul():
    assert Fraction(2, 3) * Fraction(9, 4) == Fraction(3, 2)


def test_div():
    assert Fraction(1, 2) / Fraction(1, 4) == Fraction(2)


def test_div_by_zero():
    with pytest.raises(ZeroDivisionError):
        Fraction(1, 2) / Fraction(0)


def test_ordering():
    assert Fraction(1, 3) < Fraction(1, 2) and not Fraction(1, 2) < Fraction(1, 3)


def test_less_equal():
    assert Fraction(2, 4) <= Fraction(1, 2)


def test_str_integer():
    assert str(Fraction(8, 4)) == "2"


def test_parse_simple():
    assert Fraction.parse("3/4") == Fraction(3, 4)


def test_parse_integer():
    assert Fraction.parse(" -2 ") == Fraction(-2)


def test_parse_mixed():
    assert Fraction.parse("1 1/2") == Fraction(3, 2)


def test_parse_negative_mixed():
    assert Fraction.parse("-2 1/4") == Fraction(-9, 4)


def test_mixed():
    assert Fraction(7, 2).mixed() == "3 1/2"


def test_mixed_negative():
    assert Fraction(-7, 3).mixed() == "-2 1/3"


def test_mixed_proper():
    assert Fraction(2, 5).mixed() == "2/5"


def test_to_float():
    assert Fraction(1, 4).to_float() == 0.25


def test_mean():
    assert mean([Fraction(1), Fraction(2), Fraction(1, 2)]) == Fraction(7, 6)


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])
