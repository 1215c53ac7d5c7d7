import pytest

from polynom import add, degree, derivative, divide, evaluate, multiply, subtract, to_string, trim


def test_trim():
    assert trim([1, 2, 0, 0]) == [1, 2]


def test_degree():
    assert degree([5, 0, 2]) == 2


def test_degree_zero_polynomial():
    assert degree([0, 0]) == -1


def test_add_different_lengths():
    assert add([1, 2], [3, 4, 5]) == [4, 6, 5]


def test_add_cancels():
    assert add([1, 2], [1, -2]) == [2]


def test_subtract():
    assert subtract([5, 5], [1, 2]) == [4, 3]


def test_multiply():
    assert multiply([1, 1], [1, -1]) == [1, 0, -1]


def test_multiply_by_zero():
    assert multiply([1, 2], []) == []


def test_evaluate():
    assert evaluate([1, -2, 3], 2) == 9


def test_evaluate_constant():
    assert evaluate([7], 100) == 7


def test_derivative():
    assert derivative([4, 3, 2, 1]) == [3, 4, 3]


def test_derivative_constant():
    assert derivative([9]) == []


def test_to_string():
    assert to_string([1, -2, 3]) == "3x^2 - 2x + 1"


def test_to_string_unit_coefficients():
    assert to_string([0, 1, 0, -1]) == "-x^3 + x"


def test_to_string_zero():
    assert to_string([]) == "0"


def test_to_string_constant_negative():
    assert to_string([-4]) == "-4"


def test_divide_exact():
    assert divide([-1, 0, 1], [-1, 1]) == ([1, 1], [])


def test_divide_with_remainder():
    assert divide([1, 0, 1], [1, 1]) == ([-1, 1], [2])


def test_divide_by_larger_degree():
    assert divide([1, 2], [0, 0, 1]) == ([], [1, 2])


def test_divide_by_zero():
    with pytest.raises(ZeroDivisionError):
        divide([1], [0])
