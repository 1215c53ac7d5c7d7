import pytest

from fraction import Fraction, gcd, mean


def test_gcd():
    assert gcd(12, 18) == 6


def test_gcd_negative():
    assert gcd(-4, 6) == 2
    assert gcd(-12, -18) == 6


def test_gcd_zero():
    assert gcd(0, 5) == 5
    assert gcd(7, 0) == 7


def test_gcd_coprime():
    assert gcd(17, 5) == 1


def test_lowest_terms():
    f = Fraction(6, 8)
    assert (f.num, f.den) == (3, 4)


def test_lowest_terms_negative_numerator():
    f = Fraction(-10, 4)
    assert (f.num, f.den) == (-5, 2)


def test_zero_numerator_normalizes():
    f = Fraction(0, 5)
    assert (f.num, f.den) == (0, 1)


def test_negative_denominator_moves_sign():
    f = Fraction(1, -2)
    assert (f.num, f.den) == (-1, 2)


def test_both_negative_is_positive():
    f = Fraction(-3, -6)
    assert (f.num, f.den) == (1, 2)


def test_zero_denominator():
    with pytest.raises(ZeroDivisionError):
        Fraction(1, 0)


def test_zero_denominator_zero_numerator():
    with pytest.raises(ZeroDivisionError):
        Fraction(0, 0)


def test_add():
    f = Fraction(1, 2) + Fraction(1, 3)
    assert (f.num, f.den) == (5, 6)


def test_add_negative():
    f = Fraction(-3, 4) + Fraction(1, 6)
    assert (f.num, f.den) == (-7, 12)


def test_add_to_whole_number():
    f = Fraction(3, 4) + Fraction(5, 4)
    assert (f.num, f.den) == (2, 1)


def test_sub():
    f = Fraction(1, 2) - Fraction(3, 4)
    assert (f.num, f.den) == (-1, 4)


def test_sub_reduces():
    f = Fraction(5, 6) - Fraction(1, 3)
    assert (f.num, f.den) == (1, 2)


def test_sub_to_zero():
    f = Fraction(-1, 2) - Fraction(-2, 4)
    assert (f.num, f.den) == (0, 1)


def test_mul():
    f = Fraction(2, 3) * Fraction(9, 4)
    assert (f.num, f.den) == (3, 2)


def test_mul_negative():
    f = Fraction(-1, 2) * Fraction(2, 5)
    assert (f.num, f.den) == (-1, 5)


def test_mul_by_zero():
    f = Fraction(0) * Fraction(7, 3)
    assert (f.num, f.den) == (0, 1)


def test_div():
    f = Fraction(1, 2) / Fraction(1, 4)
    assert (f.num, f.den) == (2, 1)


def test_div_by_negative():
    f = Fraction(3, 4) / Fraction(-3, 2)
    assert (f.num, f.den) == (-1, 2)


def test_div_zero_numerator():
    f = Fraction(0, 3) / Fraction(5, 7)
    assert (f.num, f.den) == (0, 1)


def test_div_by_zero():
    with pytest.raises(ZeroDivisionError):
        Fraction(1, 2) / Fraction(0)


def test_div_by_zero_fraction():
    with pytest.raises(ZeroDivisionError):
        Fraction(-5, 3) / Fraction(0, 4)


def test_less_than():
    assert (Fraction(1, 3) < Fraction(1, 2)) is True
    assert (Fraction(1, 2) < Fraction(1, 3)) is False


def test_less_than_negative():
    assert (Fraction(-3, 4) < Fraction(-1, 2)) is True
    assert (Fraction(-1, 2) < Fraction(-3, 4)) is False


def test_less_than_equal_values():
    assert (Fraction(2, 4) < Fraction(1, 2)) is False
    assert (Fraction(1, 2) < Fraction(3, 6)) is False


def test_less_than_equal_negative_values():
    assert (Fraction(-1, 3) < Fraction(-2, 6)) is False


def test_less_equal_equal_values():
    assert (Fraction(2, 4) <= Fraction(1, 2)) is True


def test_less_equal_equal_negative():
    assert (Fraction(-6, 3) <= Fraction(-2)) is True


def test_less_equal_smaller():
    assert (Fraction(1, 3) <= Fraction(1, 2)) is True


def test_less_equal_greater():
    assert (Fraction(3, 4) <= Fraction(1, 2)) is False
    assert (Fraction(5, 4) <= Fraction(-5, 4)) is False


def test_str():
    assert str(Fraction(3, 4)) == "3/4"


def test_str_negative():
    assert str(Fraction(1, -2)) == "-1/2"


def test_str_integer():
    assert str(Fraction(8, 4)) == "2"
    assert str(Fraction(0, 7)) == "0"


def test_repr():
    assert repr(Fraction(1, -2)) == "Fraction(-1, 2)"


def test_repr_integer():
    assert repr(Fraction(7)) == "Fraction(7, 1)"


def test_repr_reduced():
    assert repr(Fraction(-12, 18)) == "Fraction(-2, 3)"


def test_parse_simple():
    f = Fraction.parse("3/4")
    assert (f.num, f.den) == (3, 4)


def test_parse_integer():
    f = Fraction.parse(" -2 ")
    assert (f.num, f.den) == (-2, 1)


def test_parse_mixed():
    f = Fraction.parse("1 1/2")
    assert (f.num, f.den) == (3, 2)


def test_parse_negative_mixed():
    f = Fraction.parse("-2 1/4")
    assert (f.num, f.den) == (-9, 4)


def test_parse_negative_mixed_reduces():
    f = Fraction.parse("-1 2/6")
    assert (f.num, f.den) == (-4, 3)


def test_parse_zero_denominator():
    with pytest.raises(ZeroDivisionError):
        Fraction.parse("1/0")


def test_mixed():
    assert Fraction(7, 2).mixed() == "3 1/2"


def test_mixed_larger():
    assert Fraction(22, 7).mixed() == "3 1/7"


def test_mixed_negative():
    assert Fraction(-7, 3).mixed() == "-2 1/3"
    assert Fraction(-11, 4).mixed() == "-2 3/4"


def test_mixed_proper():
    assert Fraction(2, 5).mixed() == "2/5"


def test_mixed_proper_negative():
    assert Fraction(-2, 5).mixed() == "-2/5"


def test_mixed_integer():
    assert Fraction(6, 3).mixed() == "2"
    assert Fraction(-4).mixed() == "-4"


def test_to_float():
    assert Fraction(1, 4).to_float() == 0.25


def test_to_float_negative():
    assert Fraction(-3, 8).to_float() == -0.375


def test_to_float_improper():
    assert Fraction(5, 2).to_float() == 2.5


def test_mean():
    assert repr(mean([Fraction(1), Fraction(2), Fraction(1, 2)])) == "Fraction(7, 6)"


def test_mean_negative():
    assert repr(mean([Fraction(-1, 2), Fraction(1, 4)])) == "Fraction(-1, 8)"


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])
