import pytest

from csvline import column, format_field, format_line, needs_quotes, parse_line, parse_table


def test_parse_simple():
    assert parse_line("a,b,c") == ["a", "b", "c"]


def test_parse_empty_fields():
    assert parse_line("a,,c,") == ["a", "", "c", ""]


def test_parse_empty_line_is_one_field():
    assert parse_line("") == [""]


def test_parse_quoted_delimiter():
    assert parse_line('x,"1,2",y') == ["x", "1,2", "y"]


def test_parse_doubled_quote():
    assert parse_line('"say ""hi""",z') == ['say "hi"', "z"]


def test_parse_quote_inside_unquoted_field_is_literal():
    assert parse_line('ab"c,d') == ['ab"c', "d"]


def test_parse_other_delimiter():
    assert parse_line("1;2;3", delimiter=";") == ["1", "2", "3"]


def test_parse_rejects_long_delimiter():
    with pytest.raises(ValueError):
        parse_line("a,b", delimiter=",,")


def test_parse_rejects_unterminated_quote():
    with pytest.raises(ValueError):
        parse_line('a,"bc')


def test_needs_quotes_for_delimiter():
    assert needs_quotes("a,b")


def test_needs_quotes_for_padding():
    assert needs_quotes(" a")


def test_plain_value_needs_no_quotes():
    assert not needs_quotes("plain")


def test_format_field_doubles_quotes():
    assert format_field('a"b') == '"a""b"'


def test_format_field_number():
    assert format_field(42) == "42"


def test_format_line_round_trip():
    values = ["a", "b,c", 'd"e', ""]
    assert parse_line(format_line(values)) == values


def test_format_line_other_delimiter():
    assert format_line(["a;b", "c"], delimiter=";") == '"a;b";c'


def test_parse_table_rows():
    assert parse_table("name,age\nann,31\nbob,27\n") == [{"name": "ann", "age": "31"}, {"name": "bob", "age": "27"}]


def test_parse_table_skips_blank_lines():
    assert len(parse_table("a,b\n\n1,2\n\n")) == 1


def test_parse_table_empty_text():
    assert parse_table("  \n") == []


def test_parse_table_rejects_ragged_row():
    with pytest.raises(ValueError, match="line 3"):
        parse_table("a,b\n1,2\n3\n")


def test_column_values():
    rows = parse_table("k,v\nx,1\ny,2\n")
    assert column(rows, "v") == ["1", "2"]
