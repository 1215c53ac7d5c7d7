import pytest

from tokens import Token, count_names, kinds, texts, tokenize


def test_simple_expression_texts():
    assert texts("a + 12") == ["a", "+", "12"]


def test_kinds():
    assert kinds('x = "hi"') == ["name", "op", "string"]


def test_keywords():
    assert kinds("if else let true false") == ["keyword"] * 5


def test_name_with_keyword_prefix():
    assert kinds("iffy lets") == ["name", "name"]


def test_underscore_names():
    assert texts("_tmp1 x_2") == ["_tmp1", "x_2"]


def test_decimal_number():
    assert texts("3.25 2") == ["3.25", "2"]
    assert kinds("3.25 7") == ["number", "number"]


def test_number_then_name():
    assert texts("12ab") == ["12", "ab"]
    assert kinds("12ab") == ["number", "name"]


def test_two_char_operators_win():
    assert texts("a<=b==c!=d") == ["a", "<=", "b", "==", "c", "!=", "d"]


def test_logical_operators():
    assert texts("a&&b||!c") == ["a", "&&", "b", "||", "!", "c"]


def test_single_char_operators():
    assert texts("(a%b)/c,d>=e") == ["(", "a", "%", "b", ")", "/", "c", ",", "d", ">=", "e"]


def test_string_keeps_quotes():
    assert texts('"a b"') == ['"a b"']
    assert texts('""') == ['""']


def test_hash_inside_string():
    assert texts('"a#b" c') == ['"a#b"', "c"]


def test_columns():
    assert [t.column for t in tokenize("ab  cd e")] == [1, 5, 8]


def test_column_after_tab():
    assert [t.column for t in tokenize("\tx\t\ty")] == [2, 5]


def test_positions_after_string():
    assert [(t.line, t.column) for t in tokenize('"ab" t')] == [(1, 1), (1, 6)]


def test_lines():
    assert [t.line for t in tokenize("a\nb\n\nc")] == [1, 2, 4]


def test_column_resets_on_new_line():
    assert repr(tokenize("x\n  y")[1]) == "Token('name', 'y', 2, 3)"


def test_comment_skipped():
    assert texts("a # comment + b\nc") == ["a", "c"]


def test_comment_at_end():
    assert texts("x # trailing") == ["x"]


def test_comment_line_positions():
    assert [(t.line, t.column) for t in tokenize("# c\n  z")] == [(2, 3)]


def test_empty_source():
    assert tokenize("") == []
    assert tokenize("   \n\t") == []


def test_unexpected_character():
    with pytest.raises(SyntaxError, match="1:3"):
        tokenize("a @ b")


def test_unexpected_character_second_line():
    with pytest.raises(SyntaxError, match="2:2: unexpected character"):
        tokenize("x\n $")


def test_unexpected_character_first():
    with pytest.raises(SyntaxError, match="1:1"):
        tokenize("?")


def test_unterminated_string():
    with pytest.raises(SyntaxError, match="1:3: unterminated"):
        tokenize('a "bc')


def test_newline_in_string():
    with pytest.raises(SyntaxError, match="newline"):
        tokenize('"ab\ncd"')


def test_newline_in_string_position():
    with pytest.raises(SyntaxError, match="2:2: newline in string"):
        tokenize('x\n "a\n"')


def test_count_names():
    assert count_names("let a = a + b(a)") == {"a": 3, "b": 1}


def test_count_names_skips_keywords():
    assert count_names("if x else y x") == {"x": 2, "y": 1}


def test_count_names_none():
    assert count_names("") == {}
    assert count_names('1 2 "s" true') == {}


def test_token_repr():
    assert repr(Token("op", "+", 1, 2)) == "Token('op', '+', 1, 2)"


def test_token_attributes():
    token = Token("name", "v", 3, 4)
    assert (token.kind, token.text, token.line, token.column) == ("name", "v", 3, 4)


def test_token_reprs_of_source():
    assert [repr(t) for t in tokenize('v "s" 1')] == [
        "Token('name', 'v', 1, 1)", "Token('string', '\"s\"', 1, 3)", "Token('number', '1', 1, 7)"]
