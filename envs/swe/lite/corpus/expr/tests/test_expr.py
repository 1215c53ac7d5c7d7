import pytest

from expr import Parser, evaluate, tokenize


def test_tokenize():
    assert tokenize("12+(3*4)") == [12, "+", "(", 3, "*", 4, ")"]


def test_tokenize_multi_digit_numbers():
    assert tokenize("100-20") == [100, "-", 20]


def test_tokenize_all_operators():
    assert tokenize("(1)*-2/3") == ["(", 1, ")", "*", "-", 2, "/", 3]


def test_tokenize_skips_spaces():
    assert tokenize("  7 ") == [7]


def test_tokenize_empty():
    assert tokenize("") == []


def test_tokenize_rejects_letters():
    with pytest.raises(SyntaxError):
        tokenize("1+x")


def test_tokenize_rejects_decimal_point():
    with pytest.raises(SyntaxError):
        tokenize("1.5")


def test_parser_peek():
    assert Parser([5, "+"]).peek() == 5


def test_parser_peek_at_end():
    assert Parser([]).peek() is None


def test_parser_take_advances():
    parser = Parser([5, "+", 6])
    assert (parser.take(), parser.take(), parser.pos) == (5, "+", 2)


def test_parser_take_past_end():
    parser = Parser([1])
    parser.take()
    assert (parser.take(), parser.peek()) == (None, None)


def test_expression_single_number():
    assert Parser([7]).expression() == 7


def test_expression_addition():
    assert Parser([1, "+", 2, "+", 3]).expression() == 6


def test_expression_subtraction_is_left_associative():
    assert Parser([10, "-", 4, "-", 3]).expression() == 3


def test_expression_negative_result():
    assert Parser([5, "-", 7]).expression() == -2


def test_expression_mixed_signs():
    assert Parser([1, "-", 2, "+", 10]).expression() == 9


def test_expression_product_first():
    assert Parser([2, "+", 3, "*", 4]).expression() == 14


def test_expression_product_subtracted():
    assert Parser([8, "-", 2, "*", 3]).expression() == 2


def test_expression_stops_at_closing_paren():
    parser = Parser([1, "+", 2, ")", 5])
    assert (parser.expression(), parser.peek()) == (3, ")")


def test_term_product():
    assert Parser([2, "*", 3, "*", 4]).term() == 24


def test_term_multiply_by_zero():
    assert Parser([3, "*", 0]).term() == 0


def test_term_division():
    assert Parser([7, "/", 2]).term() == 3.5


def test_term_division_below_one():
    assert Parser([1, "/", 4]).term() == 0.25


def test_term_division_chain():
    assert Parser([100, "/", 10, "/", 5]).term() == 2


def test_term_division_then_product():
    assert Parser([12, "/", 4, "*", 3]).term() == 9.0


def test_term_stops_at_plus():
    parser = Parser([2, "*", 3, "+", 1])
    assert (parser.term(), parser.peek()) == (6, "+")


def test_term_division_by_zero():
    with pytest.raises(ZeroDivisionError):
        Parser([5, "/", 0]).term()


def test_term_division_by_zero_later():
    with pytest.raises(ZeroDivisionError):
        Parser([6, "/", 3, "/", 0]).term()


def test_factor_number():
    parser = Parser([9, "*", 2])
    assert (parser.factor(), parser.peek()) == (9, "*")


def test_factor_negates():
    assert Parser(["-", 4]).factor() == -4


def test_factor_double_negation():
    assert Parser(["-", "-", 5]).factor() == 5


def test_factor_group():
    assert Parser(["(", 2, "+", 3, ")"]).factor() == 5


def test_factor_nested_groups():
    assert Parser(["(", "(", 7, ")", ")"]).factor() == 7


def test_factor_negated_group():
    assert Parser(["-", "(", 4, "-", 10, ")"]).factor() == 6


def test_factor_missing_paren():
    with pytest.raises(SyntaxError):
        Parser(["(", 1, "+", 2]).factor()


def test_factor_empty_group():
    with pytest.raises(SyntaxError):
        Parser(["(", ")"]).factor()


def test_factor_operator_is_not_a_factor():
    with pytest.raises(SyntaxError):
        Parser(["*", 2]).factor()


def test_factor_nothing_left():
    with pytest.raises(SyntaxError):
        Parser([]).factor()


def test_evaluate_precedence():
    assert evaluate("2 + 3 * 4") == 14


def test_evaluate_parentheses():
    assert evaluate("(2 + 3) * 4") == 20


def test_evaluate_unary_minus():
    assert evaluate("-3 * -(2 + 1)") == 9


def test_evaluate_division_by_zero():
    with pytest.raises(ZeroDivisionError):
        evaluate("1 / (2 - 2)")


def test_evaluate_trailing_number():
    with pytest.raises(SyntaxError):
        evaluate("1 2")


def test_evaluate_unmatched_closing_paren():
    with pytest.raises(SyntaxError):
        evaluate("(1 + 2))")
