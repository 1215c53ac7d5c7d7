import pytest

from dates import add_days, day_of_year, days_between, days_in_month, is_leap, validate


def test_is_leap_common():
    assert not is_leap(2023)


def test_is_leap_century():
    assert not is_leap(1900)


def test_is_leap_400():
    assert is_leap(2000)


def test_days_in_february_leap():
    assert days_in_month(2024, 2) == 29


def test_days_in_december():
    assert days_in_month(2023, 12) == 31


def test_days_in_month_rejects_13():
    with pytest.raises(ValueError):
        days_in_month(2023, 13)


def test_validate_rejects_feb_30():
    with pytest.raises(ValueError):
        validate((2024, 2, 30))


def test_day_of_year():
    assert day_of_year((2023, 3, 1)) == 60


def test_add_days_month_end():
    assert add_days((2023, 1, 31), 1) == (2023, 2, 1)


def test_add_days_year_end():
    assert add_days((2023, 12, 25), 10) == (2024, 1, 4)


def test_add_days_backwards():
    assert add_days((2024, 3, 1), -1) == (2024, 2, 29)


def test_days_between_same_year():
    assert days_between((2023, 1, 1), (2023, 3, 1)) == 59


def test_days_between_across_years():
    assert days_between((2023, 12, 31), (2025, 1, 1)) == 367


def test_days_between_negative():
    assert days_between((2023, 1, 10), (2023, 1, 1)) == -9
