import pytest

from semver import bump, compare, parse


def test_parse_plain():
    assert parse("1.2.3") == (1, 2, 3, ())


def test_parse_prerelease():
    assert parse("1.0.0-alpha.1") == (1, 0, 0, ("alpha", "1"))


def test_parse_rejects_two_parts():
    with pytest.raises(ValueError):
        parse("1.2")


def test_parse_rejects_leading_zero():
    with pytest.raises(ValueError):
        parse("1.02.3")


def test_compare_equal():
    assert compare("2.1.0", "2.1.0") == 0


def test_compare_minor():
    assert compare("1.2.0", "1.10.0") == -1


def test_compare_major_wins():
    assert compare("3.0.0", "2.9.9") == 1


def test_compare_release_after_prerelease():
    assert compare("1.0.0", "1.0.0-rc.1") == 1


def test_compare_numeric_prerelease():
    assert compare("1.0.0-rc.2", "1.0.0-rc.10") == -1


def test_compare_numeric_before_word():
    assert compare("1.0.0-1", "1.0.0-alpha") == -1


def test_compare_longer_prerelease_after():
    assert compare("1.0.0-alpha.1", "1.0.0-alpha") == 1


def test_bump_minor_resets_patch():
    assert bump("1.4.7", "minor") == "1.5.0"


def test_bump_major():
    assert bump("1.4.7-rc.1", "major") == "2.0.0"


def test_bump_patch():
    assert bump("0.0.9", "patch") == "0.0.10"
