import pytest

from tokens import Token, count_names, kinds, texts, tokenize


def test_simple_expression_texts():
    assert texts("a + 12") == ["a", "+", "12"]


def test_kinds():
    assert kinds('x = "hi"') == ["name", "op", "string"]


def test_keywords():
    assert kinds("if else let true") == ["keyword"] * 4


def test_name_with_keyword_prefix():
    assert kinds("iffy") == ["name"]


def test_underscore_name():
    assert texts("_tmp1+x") == ["_tmp1", "+", "x"]


def test_decimal_number():
    assert texts("3.25*2") == ["3.25", "*", "2"]


def test_two_char_operators_win():
    assert texts("a<=b==c!=d") == ["a", "<=", "b", "==", "c", "!=", "d"]


def test_logical_operators():
    assert texts("a&&b||!c") == ["a", "&&", "b", "||", "!", "c"]


def test_string_keeps_quotes():
    assert texts('"a b"') == ['"a b"']


def test_columns():
    assert [t.column for t in tokenize("ab  + c")] == [1, 5, 7]


def test_lines():
    assert [t.line for t in tokenize("a\nb\n\nc")] == [1, 2, 4]


def test_column_resets_on_new_line():
    assert tokenize("x\n  y")[1] == Token("name", "y", 2, 3)


def test_comment_skipped():
    assert texts("a # comment + b\nc") == ["a", "c"]


def test_empty_source():
    assert tokenize("   \n\t") == []


def test_unexpected_character():
    with pytest.raises(SyntaxError, match="1:3"):
        tokenize("a @ b")


def test_unterminated_string():
    with pytest.raises(SyntaxError, match="unterminated"):
        tokenize('"abc')


def test_newline_in_string():
    with pytest.raises(SyntaxError, match="newline"):
        tokenize('"ab\ncd"')


def test_count_names():
    assert count_names("let a = a + b(a)") == {"a": 3, "b": 1}


def test_token_repr():
    assert repr(Token("op", "+", 1, 2)) == "Token('op', '+', 1, 2)"
