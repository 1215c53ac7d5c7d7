import pytest

from dates import add_days, day_of_year, days_between, days_in_month, is_leap, validate


def test_is_leap_common():
    assert is_leap(2023) is False


def test_is_leap_divisible_by_four():
    assert is_leap(2024) is True


def test_is_leap_century():
    assert is_leap(1900) is False


def test_is_leap_other_century():
    assert is_leap(2100) is False


def test_is_leap_400():
    assert is_leap(2000) is True


def test_is_leap_1600():
    assert is_leap(1600) is True


def test_days_in_february_leap():
    assert days_in_month(2024, 2) == 29


def test_days_in_february_common():
    assert days_in_month(2023, 2) == 28


def test_days_in_february_century():
    assert (days_in_month(1900, 2), days_in_month(2000, 2)) == (28, 29)


def test_days_in_january():
    assert days_in_month(2023, 1) == 31


def test_days_in_thirty_day_months():
    assert (days_in_month(2023, 4), days_in_month(2023, 11)) == (30, 30)


def test_days_in_december():
    assert days_in_month(2023, 12) == 31


def test_days_in_month_rejects_13():
    with pytest.raises(ValueError):
        days_in_month(2023, 13)


def test_days_in_month_rejects_zero():
    with pytest.raises(ValueError):
        days_in_month(2023, 0)


def test_days_in_month_rejects_negative():
    with pytest.raises(ValueError):
        days_in_month(2024, -2)


def test_validate_accepts_leap_day():
    assert validate((2024, 2, 29)) is None


def test_validate_accepts_year_bounds():
    assert (validate((2023, 1, 1)), validate((2023, 12, 31))) == (None, None)


def test_validate_rejects_feb_30():
    with pytest.raises(ValueError):
        validate((2024, 2, 30))


def test_validate_rejects_feb_29_in_common_year():
    with pytest.raises(ValueError):
        validate((2023, 2, 29))


def test_validate_rejects_april_31():
    with pytest.raises(ValueError):
        validate((2023, 4, 31))


def test_validate_rejects_day_zero():
    with pytest.raises(ValueError):
        validate((2023, 5, 0))


def test_validate_rejects_month_zero():
    with pytest.raises(ValueError):
        validate((2023, 0, 5))


def test_validate_rejects_month_13():
    with pytest.raises(ValueError):
        validate((2023, 13, 1))


def test_day_of_year():
    assert day_of_year((2023, 3, 1)) == 60


def test_day_of_year_leap():
    assert day_of_year((2024, 3, 1)) == 61


def test_day_of_year_first():
    assert day_of_year((2023, 1, 1)) == 1


def test_day_of_year_february():
    assert day_of_year((2023, 2, 14)) == 45


def test_day_of_year_last():
    assert (day_of_year((2023, 12, 31)), day_of_year((2024, 12, 31))) == (365, 366)


def test_day_of_year_rejects_invalid_date():
    with pytest.raises(ValueError):
        day_of_year((2023, 2, 29))


def test_add_days_within_month():
    assert add_days((2023, 5, 10), 5) == (2023, 5, 15)


def test_add_days_zero():
    assert add_days((2023, 7, 31), 0) == (2023, 7, 31)


def test_add_days_month_end():
    assert add_days((2023, 1, 31), 1) == (2023, 2, 1)


def test_add_days_over_february():
    assert add_days((2023, 1, 31), 29) == (2023, 3, 1)


def test_add_days_year_end():
    assert add_days((2023, 12, 25), 10) == (2024, 1, 4)


def test_add_days_whole_leap_year():
    assert add_days((2024, 1, 1), 365) == (2024, 12, 31)


def test_add_days_many():
    assert add_days((2000, 1, 1), 1000) == (2002, 9, 27)


def test_add_days_backwards():
    assert add_days((2024, 3, 1), -1) == (2024, 2, 29)


def test_add_days_backwards_into_january():
    assert add_days((2023, 2, 3), -5) == (2023, 1, 29)


def test_add_days_backwards_month():
    assert add_days((2023, 5, 15), -45) == (2023, 3, 31)


def test_add_days_backwards_year():
    assert add_days((2023, 1, 1), -1) == (2022, 12, 31)


def test_add_days_backwards_many():
    assert add_days((2024, 3, 10), -400) == (2023, 2, 4)


def test_add_days_rejects_invalid_date():
    with pytest.raises(ValueError):
        add_days((2023, 6, 31), 1)


def test_days_between_same_day():
    assert days_between((2023, 8, 8), (2023, 8, 8)) == 0


def test_days_between_same_year():
    assert days_between((2023, 1, 1), (2023, 3, 1)) == 59


def test_days_between_rest_of_year():
    assert days_between((2023, 3, 1), (2023, 12, 31)) == 305


def test_days_between_over_leap_day():
    assert days_between((2024, 2, 28), (2024, 3, 1)) == 2


def test_days_between_across_years():
    assert days_between((2023, 12, 31), (2025, 1, 1)) == 367


def test_days_between_leap_year():
    assert days_between((2000, 1, 1), (2001, 1, 1)) == 366


def test_days_between_decades():
    assert days_between((1999, 12, 31), (2030, 6, 15)) == 11124


def test_days_between_negative():
    assert days_between((2023, 1, 10), (2023, 1, 1)) == -9


def test_days_between_negative_across_years():
    assert days_between((2024, 6, 1), (2019, 3, 1)) == -1919


def test_days_between_negative_one_year():
    assert days_between((2025, 1, 1), (2023, 12, 31)) == -367
