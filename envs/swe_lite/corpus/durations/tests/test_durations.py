import pytest

from durations import clock, format_duration, humanize, parse_clock, parse_duration


def test_format_all_units():
    assert format_duration(90061) == "1d 1h 1m 1s"


def test_format_skips_zero_units():
    assert format_duration(3605) == "1h 5s"


def test_format_zero():
    assert format_duration(0) == "0s"


def test_format_minutes():
    assert format_duration(120) == "2m"


def test_format_negative():
    assert format_duration(-61) == "-1m 1s"


def test_parse_compact():
    assert parse_duration("1h30m") == 5400


def test_parse_spaces():
    assert parse_duration("2d 4h") == 187200


def test_parse_multi_digit():
    assert parse_duration("125s") == 125


def test_parse_round_trip():
    assert parse_duration(format_duration(98765)) == 98765


def test_parse_unknown_unit():
    with pytest.raises(ValueError, match="unknown unit"):
        parse_duration("3w")


def test_parse_unit_without_number():
    with pytest.raises(ValueError):
        parse_duration("h")


def test_parse_trailing_number():
    with pytest.raises(ValueError, match="without a unit"):
        parse_duration("1h30")


def test_parse_empty():
    with pytest.raises(ValueError):
        parse_duration("  ")


def test_clock_minutes():
    assert clock(75) == "1:15"


def test_clock_hours():
    assert clock(3725) == "1:02:05"


def test_clock_exact_hour():
    assert clock(3600) == "1:00:00"


def test_parse_clock_hours():
    assert parse_clock("2:00:30") == 7230


def test_parse_clock_minutes():
    assert parse_clock("4:05") == 245


def test_parse_clock_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        parse_clock("1:75:00")


def test_parse_clock_bad_shape():
    with pytest.raises(ValueError):
        parse_clock("5")


def test_humanize_recent():
    assert humanize(9) == "just now"


def test_humanize_singular():
    assert humanize(60) == "1 minute ago"


def test_humanize_plural_hours():
    assert humanize(7300) == "2 hours ago"
