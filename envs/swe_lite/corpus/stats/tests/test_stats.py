import pytest

from stats import mean, median, mode, percentile, value_range


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_empty():
    with pytest.raises(ValueError):
        mean([])


def test_median_odd():
    assert median([5, 1, 3]) == 3


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5


def test_mode():
    assert mode([1, 2, 2, 3]) == 2


def test_mode_tie_first_seen():
    assert mode([3, 1, 1, 3]) == 3


def test_percentile_median():
    assert percentile([1, 2, 3, 4, 5], 50) == 3


def test_percentile_interpolates():
    assert percentile([10, 20, 30, 40], 25) == 17.5


def test_percentile_max():
    assert percentile([3, 1, 2], 100) == 3


def test_percentile_rejects_out_of_range():
    with pytest.raises(ValueError):
        percentile([1, 2], 101)


def test_value_range():
    assert value_range([4, 9, 1, 7]) == 8


def test_value_range_single():
    assert value_range([5]) == 0
