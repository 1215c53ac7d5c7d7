from globmatch import class_matches, filter_names, has_magic, literal_prefix, match


def test_literal():
    assert match("abc", "abc") is True


def test_literal_mismatch():
    assert match("abc", "abd") is False
    assert match("abc", "xbc") is False


def test_literal_length_differs():
    assert match("abc", "abcd") is False
    assert match("abcd", "abc") is False


def test_empty_pattern():
    assert match("", "") is True


def test_empty_pattern_nonempty_text():
    assert match("", "a") is False


def test_pattern_longer_than_empty_text():
    assert match("a", "") is False


def test_star_suffix():
    assert match("*.py", "main.py") is True


def test_star_matches_empty():
    assert match("a*", "a") is True
    assert match("*", "") is True


def test_star_does_not_cross_separator():
    assert match("*.py", "src/main.py") is False


def test_star_stops_at_trailing_separator():
    assert match("a*", "a/") is False


def test_star_before_separator():
    assert match("*/b", "a/b") is True
    assert match("src/*", "src/x.c") is True


def test_star_in_middle():
    assert match("a*c", "abbbc") is True


def test_star_in_middle_mismatch():
    assert match("a*c", "abbbd") is False


def test_star_custom_separator():
    assert match("*.txt", "a.b.txt", sep=".") is False
    assert match("*.txt", "a/b.txt", sep=".") is True


def test_question_mark():
    assert match("?.txt", "a.txt") is True


def test_question_mark_one_char_only():
    assert match("?.txt", "ab.txt") is False


def test_question_mark_not_separator():
    assert match("a?b", "a/b") is False


def test_question_needs_a_character():
    assert match("ab?", "ab") is False


def test_question_marks_count_characters():
    assert match("??", "xy") is True
    assert match("??", "x") is False


def test_double_star_crosses_separators():
    assert match("src/**.py", "src/a/b/c.py") is True


def test_double_star_matches_empty():
    assert match("**", "") is True
    assert match("a/**", "a/") is True


def test_double_star_then_literal_mismatch():
    assert match("**/x", "a/b/y") is False


def test_double_star_in_middle():
    assert match("a/**/z", "a/b/c/z") is True
    assert match("a/**/z", "b/c/z") is False


def test_class():
    assert match("[abc]x", "bx") is True


def test_class_mismatch():
    assert match("[abc]x", "dx") is False


def test_class_range():
    assert match("file[0-9]", "file7") is True


def test_class_range_mismatch():
    assert match("file[0-9]", "filex") is False


def test_class_negated():
    assert match("[!a]", "b") is True


def test_class_negated_mismatch():
    assert match("[!a]", "a") is False


def test_class_bracket_first():
    assert match("[]]", "]") is True


def test_class_negated_bracket_first():
    assert match("[!]]", "x") is True
    assert match("[!]]", "]") is False


def test_class_then_more_pattern():
    assert match("[a-c][x-z]", "by") is True
    assert match("[a-c][x-z]", "bb") is False


def test_class_needs_a_character():
    assert match("a[bc]", "a") is False


def test_unclosed_bracket_is_literal():
    assert match("[ab", "[ab") is True


def test_unclosed_bracket_mismatch():
    assert match("[ab", "a") is False


def test_class_matches_single_chars():
    assert class_matches("abc", "c") is True
    assert class_matches("abc", "d") is False


def test_class_matches_multiple_ranges():
    assert class_matches("a-cx-z", "y") is True


def test_class_matches_between_ranges():
    assert class_matches("a-cx-z", "m") is False


def test_class_range_inclusive_ends():
    assert class_matches("0-9", "9") is True
    assert class_matches("0-9", "0") is True


def test_class_range_outside():
    assert class_matches("b-d", "a") is False
    assert class_matches("b-d", "e") is False


def test_class_trailing_dash_is_literal():
    assert class_matches("a-", "-") is True
    assert class_matches("a-", "b") is False


def test_class_matches_negated():
    assert class_matches("!a-c", "d") is True
    assert class_matches("!a-c", "b") is False


def test_class_matches_empty_body():
    assert class_matches("", "a") is False
    assert class_matches("!", "a") is True


def test_filter_names():
    assert filter_names(["a.py", "b.txt", "c.py"], "*.py") == ["a.py", "c.py"]


def test_filter_names_none_match():
    assert filter_names(["a.py", "b.py"], "*.txt") == []


def test_filter_names_empty():
    assert filter_names([], "*") == []


def test_filter_names_keeps_order():
    assert filter_names(["z1", "a2", "m3", "q"], "??") == ["z1", "a2", "m3"]


def test_has_magic():
    assert has_magic("a[bc]") is True


def test_has_magic_plain():
    assert has_magic("plain/name.txt") is False
    assert has_magic("") is False


def test_has_magic_star_and_question():
    assert has_magic("x*") is True
    assert has_magic("?") is True


def test_literal_prefix():
    assert literal_prefix("src/lib/*.py") == "src/lib/"


def test_literal_prefix_no_dir():
    assert literal_prefix("*.py") == ""


def test_literal_prefix_plain_path():
    assert literal_prefix("docs/readme.md") == "docs/"


def test_literal_prefix_first_wildcard_counts():
    assert literal_prefix("a/b?/c*") == "a/"
    assert literal_prefix("x/[ab]/y") == "x/"


def test_literal_prefix_absolute_and_empty():
    assert literal_prefix("/abs/*.txt") == "/abs/"
    assert literal_prefix("") == ""
