import pytest

from csvline import column, format_field, format_line, needs_quotes, parse_line, parse_table


def sample_rows():
    return [{"k": "x", "v": "1"}, {"k": "y"}, {"k": "z", "v": "3"}]


def test_parse_simple():
    assert parse_line("a,b,c") == ["a", "b", "c"]


def test_parse_empty_fields():
    assert parse_line("a,,c,") == ["a", "", "c", ""]


def test_parse_lone_delimiter():
    assert parse_line(",") == ["", ""]


def test_parse_empty_line_is_one_field():
    assert parse_line("") == [""]


def test_parse_keeps_spaces():
    assert parse_line(" a , b ") == [" a ", " b "]


def test_parse_quoted_delimiter():
    assert parse_line('x,"1,2",y') == ["x", "1,2", "y"]


def test_parse_quoted_delimiter_at_end():
    assert parse_line('"x,"') == ["x,"]


def test_parse_empty_quoted_field():
    assert parse_line('"",a') == ["", "a"]


def test_parse_doubled_quote():
    assert parse_line('"say ""hi""",z') == ['say "hi"', "z"]


def test_parse_only_a_doubled_quote():
    assert parse_line('""""') == ['"']


def test_parse_text_after_closing_quote():
    assert parse_line('"a"b,c') == ["ab", "c"]


def test_parse_quote_inside_unquoted_field_is_literal():
    assert parse_line('ab"c,d') == ['ab"c', "d"]


def test_parse_quote_after_space_is_literal():
    assert parse_line(' "a",b') == [' "a"', "b"]


def test_parse_other_delimiter():
    assert parse_line("1;2;3", delimiter=";") == ["1", "2", "3"]


def test_parse_other_delimiter_keeps_commas():
    assert parse_line("a,b;c", delimiter=";") == ["a,b", "c"]


def test_parse_tab_delimiter():
    assert parse_line("a\tb", delimiter="\t") == ["a", "b"]


def test_parse_rejects_long_delimiter():
    with pytest.raises(ValueError):
        parse_line("a,b", delimiter=",,")


def test_parse_rejects_empty_delimiter():
    with pytest.raises(ValueError):
        parse_line("a,b", delimiter="")


def test_parse_rejects_unterminated_quote():
    with pytest.raises(ValueError):
        parse_line('a,"bc')


def test_parse_rejects_lone_quote():
    with pytest.raises(ValueError):
        parse_line('"')


def test_parse_rejects_doubled_quote_at_end():
    with pytest.raises(ValueError):
        parse_line('"a""')


def test_needs_quotes_for_delimiter():
    assert needs_quotes("a,b") is True


def test_needs_quotes_for_other_delimiter():
    assert (needs_quotes("a;b", ";"), needs_quotes("a,b", ";")) == (True, False)


def test_needs_quotes_for_leading_space():
    assert needs_quotes(" a") is True


def test_needs_quotes_for_trailing_space():
    assert needs_quotes("a ") is True


def test_needs_quotes_for_quote():
    assert needs_quotes('say "x"') is True


def test_needs_quotes_for_newline():
    assert needs_quotes("a\nb") is True


def test_plain_value_needs_no_quotes():
    assert needs_quotes("plain") is False


def test_empty_value_needs_no_quotes():
    assert needs_quotes("") is False


def test_inner_space_needs_no_quotes():
    assert needs_quotes("a b") is False


def test_format_field_doubles_quotes():
    assert format_field('a"b') == '"a""b"'


def test_format_field_lone_quote():
    assert format_field('"') == '""""'


def test_format_field_delimiter():
    assert format_field("a,b") == '"a,b"'


def test_format_field_padding():
    assert format_field(" x") == '" x"'


def test_format_field_plain():
    assert format_field("abc") == "abc"


def test_format_field_number():
    assert format_field(42) == "42"


def test_format_field_float_and_none():
    assert (format_field(1.5), format_field(None)) == ("1.5", "None")


def test_format_field_other_delimiter():
    assert (format_field("a|b", "|"), format_field("a,b", "|")) == ('"a|b"', "a,b")


def test_format_line():
    assert format_line([1, 2.5, "x y"]) == "1,2.5,x y"


def test_format_line_quotes_where_needed():
    assert format_line(["a", " b", "c,d"]) == 'a," b","c,d"'


def test_format_line_empty():
    assert format_line([]) == ""


def test_format_line_empty_fields():
    assert format_line(["", ""]) == ","


def test_format_line_round_trip():
    values = ["a", "b,c", 'd"e', ""]
    assert parse_line(format_line(values)) == values


def test_format_line_other_delimiter():
    assert format_line(["a;b", "c"], delimiter=";") == '"a;b";c'


def test_parse_table_rows():
    assert parse_table("name,age\nann,31\nbob,27\n") == [{"name": "ann", "age": "31"}, {"name": "bob", "age": "27"}]


def test_parse_table_quoted_value():
    assert parse_table('n,q\nx,"1,5"') == [{"n": "x", "q": "1,5"}]


def test_parse_table_other_delimiter():
    assert parse_table("a;b\n1;2", ";") == [{"a": "1", "b": "2"}]


def test_parse_table_skips_blank_lines():
    assert parse_table("a,b\n\n1,2\n  \n") == [{"a": "1", "b": "2"}]


def test_parse_table_header_only():
    assert parse_table("a,b\n") == []


def test_parse_table_empty_text():
    assert parse_table("  \n") == []


def test_parse_table_rejects_ragged_row():
    with pytest.raises(ValueError, match="line 3"):
        parse_table("a,b\n1,2\n3\n")


def test_parse_table_rejects_long_row():
    with pytest.raises(ValueError, match="line 2"):
        parse_table("a\n1,2")


def test_column_values():
    rows = parse_table("k,v\nx,1\ny,2\n")
    assert column(rows, "v") == ["1", "2"]


def test_column_skips_rows_without_it():
    assert column(sample_rows(), "v") == ["1", "3"]


def test_column_every_row():
    assert column(sample_rows(), "k") == ["x", "y", "z"]


def test_column_missing():
    assert column(sample_rows(), "w") == []


def test_column_of_no_rows():
    assert column([], "k") == []
