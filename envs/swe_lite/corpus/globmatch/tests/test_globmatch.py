from globmatch import class_matches, filter_names, has_magic, literal_prefix, match


def test_literal():
    assert match("abc", "abc") and not match("abc", "abd")


def test_empty_pattern():
    assert match("", "") and not match("", "a")


def test_star_suffix():
    assert match("*.py", "main.py")


def test_star_matches_empty():
    assert match("a*", "a")


def test_star_does_not_cross_separator():
    assert not match("*.py", "src/main.py")


def test_star_in_middle():
    assert match("a*c", "abbbc") and not match("a*c", "abbbd")


def test_question_mark():
    assert match("?.txt", "a.txt") and not match("?.txt", "ab.txt")


def test_question_mark_not_separator():
    assert not match("a?b", "a/b")


def test_question_needs_a_character():
    assert not match("ab?", "ab")


def test_double_star_crosses_separators():
    assert match("src/**.py", "src/a/b/c.py")


def test_class():
    assert match("[abc]x", "bx") and not match("[abc]x", "dx")


def test_class_range():
    assert match("file[0-9]", "file7") and not match("file[0-9]", "filex")


def test_class_negated():
    assert match("[!a]", "b") and not match("[!a]", "a")


def test_class_bracket_first():
    assert match("[]]", "]")


def test_unclosed_bracket_is_literal():
    assert match("[ab", "[ab")


def test_class_matches_multiple_ranges():
    assert class_matches("a-cx-z", "y") and not class_matches("a-cx-z", "m")


def test_class_range_inclusive_end():
    assert class_matches("0-9", "9")


def test_filter_names():
    assert filter_names(["a.py", "b.txt", "c.py"], "*.py") == ["a.py", "c.py"]


def test_has_magic():
    assert has_magic("a[bc]") and not has_magic("plain/name.txt")


def test_literal_prefix():
    assert literal_prefix("src/lib/*.py") == "src/lib/"


def test_literal_prefix_no_dir():
    assert literal_prefix("*.py") == ""


def test_literal_prefix_plain_path():
    assert literal_prefix("docs/readme.md") == "docs/"
