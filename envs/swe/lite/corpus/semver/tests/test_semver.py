import pytest

from semver import bump, compare, parse


def test_parse_plain():
    assert parse("1.2.3") == (1, 2, 3, ())


def test_parse_zeros():
    assert parse("0.0.0") == (0, 0, 0, ())


def test_parse_large_numbers():
    assert parse("10.20.300") == (10, 20, 300, ())


def test_parse_prerelease():
    assert parse("1.0.0-alpha.1") == (1, 0, 0, ("alpha", "1"))


def test_parse_long_prerelease():
    assert parse("2.0.10-rc.1.x") == (2, 0, 10, ("rc", "1", "x"))


def test_parse_rejects_two_parts():
    with pytest.raises(ValueError):
        parse("1.2")


def test_parse_rejects_four_parts():
    with pytest.raises(ValueError, match="expected MAJOR.MINOR.PATCH"):
        parse("1.2.3.4")


def test_parse_rejects_empty():
    with pytest.raises(ValueError, match="expected MAJOR.MINOR.PATCH"):
        parse("")


def test_parse_rejects_non_numeric():
    with pytest.raises(ValueError, match="non-numeric component 'a'"):
        parse("1.a.3")


def test_parse_rejects_empty_component():
    with pytest.raises(ValueError, match="non-numeric"):
        parse("1..3")


def test_parse_rejects_leading_zero():
    with pytest.raises(ValueError):
        parse("1.02.3")


def test_parse_rejects_leading_zero_major():
    with pytest.raises(ValueError, match="leading zero in '01'"):
        parse("01.0.0")


def test_parse_rejects_double_zero_patch():
    with pytest.raises(ValueError, match="leading zero"):
        parse("1.0.00")


def test_compare_equal():
    assert compare("2.1.0", "2.1.0") == 0


def test_compare_minor():
    assert compare("1.2.0", "1.10.0") == -1


def test_compare_minor_reversed():
    assert compare("1.10.0", "1.2.0") == 1


def test_compare_major_wins():
    assert compare("3.0.0", "2.9.9") == 1


def test_compare_patch():
    assert compare("0.0.1", "0.0.2") == -1


def test_compare_core_before_prerelease():
    assert compare("1.0.1-alpha", "1.0.0") == 1
    assert compare("1.0.0", "1.0.1-alpha") == -1


def test_compare_release_after_prerelease():
    assert compare("1.0.0", "1.0.0-rc.1") == 1


def test_compare_prerelease_before_release():
    assert compare("2.3.4-rc.1", "2.3.4") == -1


def test_compare_release_after_numeric_prerelease():
    assert compare("0.1.0", "0.1.0-0") == 1


def test_compare_long_prerelease_before_release():
    assert compare("10.0.0-x.y", "10.0.0") == -1


def test_compare_equal_identifiers_then_word():
    assert compare("1.0.0-alpha.2.x", "1.0.0-alpha.2.y") == -1


def test_compare_equal_prerelease():
    assert compare("1.0.0-rc.1", "1.0.0-rc.1") == 0


def test_compare_numeric_prerelease():
    assert compare("1.0.0-rc.2", "1.0.0-rc.10") == -1


def test_compare_numeric_prerelease_reversed():
    assert compare("1.0.0-rc.10", "1.0.0-rc.9") == 1


def test_compare_numeric_before_word():
    assert compare("1.0.0-1", "1.0.0-alpha") == -1


def test_compare_word_after_numeric():
    assert compare("1.0.0-beta", "1.0.0-11") == 1


def test_compare_words():
    assert compare("1.0.0-alpha", "1.0.0-beta") == -1
    assert compare("1.0.0-rc", "1.0.0-beta") == 1


def test_compare_words_second_identifier():
    assert compare("1.0.0-alpha.beta", "1.0.0-alpha.alpha") == 1


def test_compare_longer_prerelease_after():
    assert compare("1.0.0-alpha.1", "1.0.0-alpha") == 1


def test_compare_shorter_prerelease_before():
    assert compare("1.0.0-alpha", "1.0.0-alpha.0") == -1


def test_compare_invalid_version():
    with pytest.raises(ValueError):
        compare("1.0", "1.0.0")


def test_bump_minor_resets_patch():
    assert bump("1.4.7", "minor") == "1.5.0"


def test_bump_minor_from_nine():
    assert bump("0.9.3", "minor") == "0.10.0"


def test_bump_major():
    assert bump("1.4.7-rc.1", "major") == "2.0.0"


def test_bump_major_from_zero():
    assert bump("0.9.9", "major") == "1.0.0"


def test_bump_patch():
    assert bump("0.0.9", "patch") == "0.0.10"


def test_bump_patch_drops_prerelease():
    assert bump("3.2.1-beta", "patch") == "3.2.2"


def test_bump_unknown_part():
    with pytest.raises(ValueError, match="unknown part 'build'"):
        bump("1.2.3", "build")


def test_bump_part_is_case_sensitive():
    with pytest.raises(ValueError):
        bump("1.2.3", "Major")


def test_bump_invalid_version():
    with pytest.raises(ValueError):
        bump("1.2", "patch")
