import pytest

from expr import evaluate, tokenize


def test_tokenize():
    assert tokenize("12+(3*4)") == [12, "+", "(", 3, "*", 4, ")"]


def test_tokenize_rejects_letters():
    with pytest.raises(SyntaxError):
        tokenize("1+x")


def test_addition():
    assert evaluate("1 + 2 + 3") == 6


def test_subtraction_is_left_associative():
    assert evaluate("10 - 4 - 3") == 3


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14


def test_parentheses():
    assert evaluate("(2 + 3) * 4") == 20


def test_division():
    assert evaluate("7 / 2") == 3.5


def test_division_chain():
    assert evaluate("100 / 10 / 5") == 2


def test_unary_minus():
    assert evaluate("-3 * -(2 + 1)") == 9


def test_division_by_zero():
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / (2 - 2)")


def test_missing_paren():
    with pytest.raises(SyntaxError):
        evaluate("(1 + 2")


def test_trailing_tokens():
    with pytest.raises(SyntaxError):
        evaluate("1 2")
