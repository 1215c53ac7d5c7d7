"""Calendar arithmetic on (year, month, day) tuples, proleptic Gregorian, no time zones."""

DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap(year):
    """Gregorian leap year rule."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year, month):
    """Number of days in `month` (1..12) of `year`."""
    if month < 1 or month > 12:
        raise ValueError(f"month must be in 1..12, got {month}")
    if month == 2 and is_leap(year):
        return 29
    return DAYS_IN_MONTH[month - 1]


def validate(date):
    """Raise ValueError unless `date` is a real calendar date."""
    year, month, day = date
    if day < 1 or day > days_in_month(year, month):
        raise ValueError(f"invalid date {date}")


def day_of_year(date):
    """1 for January 1st, up to 365 or 366."""
    validate(date)
    year, month, day = date
    total = day
    for m in range(1, month):
        total += days_in_month(year, m)
    return total


def add_days(date, days):
    """The date `days` days after `date` (negative values go back)."""
    validate(date)
    year, month, day = date
    day += days
    while day > days_in_month(year, month):
        day -= days_in_month(year, month)
        month += 1
        if month > 12:
            month = 1
            year += 1
    while day < 1:
        month -= 1
        if month < 1:
            month = 12
            year -= 1
        day += days_in_month(year, month)
    return (year, month, day)


def days_between(a, b):
    """Signed number of days from date `a` to date `b`."""
    if a > b:
        return -days_between(b, a)
    count = 0
    while a[0] < b[0]:
        count += (366 if is_leap(a[0]) else 365) - day_of_year(a) + 1
        a = (a[0] + 1, 1, 1)
    return count + day_of_year(b) - day_of_year(a)
