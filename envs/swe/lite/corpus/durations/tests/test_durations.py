import pytest

from durations import clock, format_duration, humanize, parse_clock, parse_duration


def test_format_all_units():
    assert format_duration(90061) == "1d 1h 1m 1s"


def test_format_skips_zero_units():
    assert format_duration(3605) == "1h 5s"


def test_format_days_and_seconds():
    assert format_duration(172859) == "2d 59s"


def test_format_large():
    assert format_duration(1000000) == "11d 13h 46m 40s"


def test_format_zero():
    assert format_duration(0) == "0s"


def test_format_one_second():
    assert format_duration(1) == "1s"


def test_format_seconds_below_a_minute():
    assert format_duration(59) == "59s"


def test_format_minutes():
    assert format_duration(120) == "2m"


def test_format_exact_day():
    assert format_duration(86400) == "1d"


def test_format_negative():
    assert format_duration(-61) == "-1m 1s"


def test_format_negative_hour():
    assert format_duration(-3600) == "-1h"


def test_parse_compact():
    assert parse_duration("1h30m") == 5400


def test_parse_spaces():
    assert parse_duration("2d 4h") == 187200


def test_parse_single_units():
    assert (parse_duration("45s"), parse_duration("1d")) == (45, 86400)


def test_parse_minute_and_second():
    assert parse_duration("1m 1s") == 61


def test_parse_zero():
    assert parse_duration("0s") == 0


def test_parse_multi_digit():
    assert parse_duration("125s") == 125


def test_parse_repeated_unit_adds_up():
    assert parse_duration("10m10m") == 1200


def test_parse_round_trip_zero():
    assert parse_duration(format_duration(0)) == 0


def test_parse_round_trip():
    assert parse_duration(format_duration(98765)) == 98765


def test_parse_unknown_unit():
    with pytest.raises(ValueError, match="unknown unit"):
        parse_duration("3w")


def test_parse_decimal_point_is_unknown():
    with pytest.raises(ValueError, match="unknown unit"):
        parse_duration("1.5h")


def test_parse_unit_without_number():
    with pytest.raises(ValueError):
        parse_duration("h")


def test_parse_leading_unit_without_number():
    with pytest.raises(ValueError, match="without a number"):
        parse_duration("m5s")


def test_parse_trailing_number():
    with pytest.raises(ValueError, match="without a unit"):
        parse_duration("1h30")


def test_parse_number_only():
    with pytest.raises(ValueError, match="without a unit"):
        parse_duration("5")


def test_parse_blank():
    with pytest.raises(ValueError):
        parse_duration("  ")


def test_parse_empty():
    with pytest.raises(ValueError):
        parse_duration("")


def test_clock_under_a_minute():
    assert (clock(0), clock(59)) == ("0:00", "0:59")


def test_clock_minutes():
    assert clock(75) == "1:15"


def test_clock_exact_minute():
    assert clock(60) == "1:00"


def test_clock_just_under_an_hour():
    assert clock(3599) == "59:59"


def test_clock_hours():
    assert clock(3725) == "1:02:05"


def test_clock_exact_hour():
    assert clock(3600) == "1:00:00"


def test_clock_many_hours():
    assert (clock(36061), clock(360000)) == ("10:01:01", "100:00:00")


def test_parse_clock_hours():
    assert parse_clock("2:00:30") == 7230


def test_parse_clock_ten_hours():
    assert parse_clock("10:00:00") == 36000


def test_parse_clock_largest_fields():
    assert parse_clock("100:59:59") == 363599


def test_parse_clock_minutes():
    assert parse_clock("4:05") == 245


def test_parse_clock_zero():
    assert parse_clock("0:00") == 0


def test_parse_clock_seconds_only():
    assert parse_clock("0:59") == 59


def test_parse_clock_many_minutes():
    assert parse_clock("90:00") == 5400


def test_parse_clock_round_trip():
    assert parse_clock(clock(45296)) == 45296


def test_parse_clock_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        parse_clock("1:75:00")


def test_parse_clock_minutes_at_sixty():
    with pytest.raises(ValueError, match="out of range"):
        parse_clock("1:60:00")


def test_parse_clock_seconds_at_sixty():
    with pytest.raises(ValueError, match="out of range"):
        parse_clock("1:00:60")


def test_parse_clock_short_seconds_at_sixty():
    with pytest.raises(ValueError, match="out of range"):
        parse_clock("1:60")


def test_parse_clock_bad_shape():
    with pytest.raises(ValueError):
        parse_clock("5")


def test_parse_clock_too_many_fields():
    with pytest.raises(ValueError, match="expected"):
        parse_clock("1:2:3:4")


def test_humanize_recent():
    assert humanize(9) == "just now"


def test_humanize_first_seconds():
    assert (humanize(0), humanize(1)) == ("just now", "just now")


def test_humanize_ten_seconds():
    assert humanize(10) == "10 seconds ago"


def test_humanize_seconds():
    assert humanize(59) == "59 seconds ago"


def test_humanize_singular():
    assert humanize(60) == "1 minute ago"


def test_humanize_rounds_down():
    assert humanize(119) == "1 minute ago"


def test_humanize_plural_minutes():
    assert humanize(3599) == "59 minutes ago"


def test_humanize_one_hour():
    assert humanize(3600) == "1 hour ago"


def test_humanize_plural_hours():
    assert humanize(7300) == "2 hours ago"


def test_humanize_days():
    assert (humanize(86400), humanize(864005)) == ("1 day ago", "10 days ago")
