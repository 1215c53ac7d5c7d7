import pytest

from polynom import add, degree, derivative, divide, evaluate, multiply, subtract, to_string, trim


def test_trim():
    assert trim([1, 2, 0, 0]) == [1, 2]


def test_trim_all_zeros():
    assert trim([0, 0, 0]) == []
    assert trim([]) == []


def test_trim_keeps_inner_and_leading_zeros():
    assert trim([0, 1, 0, 3]) == [0, 1, 0, 3]


def test_degree():
    assert degree([5, 0, 2]) == 2


def test_degree_zero_polynomial():
    assert degree([0, 0]) == -1
    assert degree([]) == -1


def test_degree_constant():
    assert degree([4]) == 0


def test_degree_ignores_trailing_zeros():
    assert degree([1, 2, 3, 0]) == 2


def test_add_different_lengths():
    assert add([1, 2], [3, 4, 5]) == [4, 6, 5]


def test_add_shorter_first_argument():
    assert add([7], [2, -3]) == [9, -3]


def test_add_cancels():
    assert add([1, 2], [1, -2]) == [2]


def test_add_cancels_to_zero():
    assert add([3, -1], [-3, 1]) == []


def test_add_empty():
    assert add([], [0, 4]) == [0, 4]


def test_subtract():
    assert subtract([5, 5], [1, 2]) == [4, 3]


def test_subtract_itself():
    assert subtract([2, 0, 7], [2, 0, 7]) == []


def test_subtract_longer():
    assert subtract([1], [0, 2, 3]) == [1, -2, -3]


def test_subtract_from_empty():
    assert subtract([], [1, -1]) == [-1, 1]


def test_multiply():
    assert multiply([1, 1], [1, -1]) == [1, 0, -1]


def test_multiply_by_zero():
    assert multiply([1, 2], []) == []
    assert multiply([], [3]) == []


def test_multiply_by_constant():
    assert multiply([2], [1, 2, 3]) == [2, 4, 6]


def test_multiply_different_lengths():
    assert multiply([1, 2], [3, 4, 5]) == [3, 10, 13, 10]


def test_multiply_powers_of_x():
    assert multiply([0, 1], [0, 0, 1]) == [0, 0, 0, 1]


def test_evaluate():
    assert evaluate([1, -2, 3], 2) == 9


def test_evaluate_constant():
    assert evaluate([7], 100) == 7


def test_evaluate_empty():
    assert evaluate([], 5) == 0


def test_evaluate_at_zero():
    assert evaluate([4, 5, 6], 0) == 4


def test_evaluate_negative_x():
    assert evaluate([1, 1, 1], -2) == 3
    assert evaluate([0, 0, 1], -3) == 9


def test_evaluate_large():
    assert evaluate([2, 0, 0, 1], 10) == 1002


def test_derivative():
    assert derivative([4, 3, 2, 1]) == [3, 4, 3]


def test_derivative_constant():
    assert derivative([9]) == []
    assert derivative([]) == []


def test_derivative_linear():
    assert derivative([0, 7]) == [7]


def test_derivative_gaps():
    assert derivative([5, 0, 0, 2]) == [0, 0, 6]


def test_derivative_trims():
    assert derivative([1, 2, 0]) == [2]


def test_to_string():
    assert to_string([1, -2, 3]) == "3x^2 - 2x + 1"


def test_to_string_unit_coefficients():
    assert to_string([0, 1, 0, -1]) == "-x^3 + x"


def test_to_string_all_plus():
    assert to_string([1, 1, 1]) == "x^2 + x + 1"


def test_to_string_linear():
    assert to_string([3, 1]) == "x + 3"
    assert to_string([0, -1]) == "-x"


def test_to_string_negative_constant_term():
    assert to_string([-1, 0, 2]) == "2x^2 - 1"


def test_to_string_zero():
    assert to_string([]) == "0"
    assert to_string([0, 0]) == "0"


def test_to_string_constant():
    assert to_string([5]) == "5"


def test_to_string_constant_negative():
    assert to_string([-4]) == "-4"
    assert to_string([-1]) == "-1"


def test_to_string_single_power():
    assert to_string([0, 0, -5]) == "-5x^2"
    assert to_string([0, 0, 0, 1]) == "x^3"


def test_divide_exact():
    assert divide([-1, 0, 1], [-1, 1]) == ([1, 1], [])


def test_divide_cubic():
    assert divide([-1, 0, 0, 1], [-1, 1]) == ([1, 1, 1], [])


def test_divide_with_remainder():
    assert divide([1, 0, 1], [1, 1]) == ([-1, 1], [2])


def test_divide_by_constant():
    assert divide([2, 4], [2]) == ([1, 2], [])


def test_divide_by_larger_degree():
    assert divide([1, 2], [0, 0, 1]) == ([], [1, 2])


def test_divide_zero_dividend():
    assert divide([], [1, 1]) == ([], [])
    assert divide([0, 0], [3]) == ([], [])


def test_divide_ignores_trailing_zeros():
    assert divide([-1, 0, 1, 0], [-1, 1, 0]) == ([1, 1], [])


def test_divide_by_zero():
    with pytest.raises(ZeroDivisionError):
        divide([1], [0])


def test_divide_by_empty():
    with pytest.raises(ZeroDivisionError):
        divide([1, 2], [])
