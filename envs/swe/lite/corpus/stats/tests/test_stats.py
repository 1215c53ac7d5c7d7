import pytest

from stats import mean, median, mode, percentile, value_range


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_mean_single():
    assert mean([7]) == 7.0


def test_mean_negative():
    assert mean([-3, 3, -6]) == -2.0


def test_mean_floats():
    assert mean([0.5, 1.5, 4.0]) == 2.0


def test_mean_half():
    assert mean([-1, 2]) == 0.5


def test_mean_empty_tuple():
    with pytest.raises(ValueError):
        mean(())


def test_mean_empty():
    with pytest.raises(ValueError, match="mean of empty data"):
        mean([])


def test_median_odd():
    assert median([5, 1, 3]) == 3


def test_median_single():
    assert median([9]) == 9


def test_median_odd_with_duplicates():
    assert median([9, 2, 2, 9, 2]) == 2


def test_median_even():
    assert median([4, 1, 3, 2]) == 2.5


def test_median_two_values():
    assert median([20, 10]) == 15.0


def test_median_even_negative():
    assert median([7, -5, -1, -3]) == -2.0


def test_median_empty_tuple():
    with pytest.raises(ValueError):
        median(())


def test_median_empty():
    with pytest.raises(ValueError, match="median of empty data"):
        median([])


def test_mode():
    assert mode([1, 2, 2, 3]) == 2


def test_mode_single():
    assert mode([4]) == 4


def test_mode_last_value_most_common():
    assert mode([1, 2, 3, 3]) == 3


def test_mode_strings():
    assert mode(["a", "b", "b", "c", "b"]) == "b"


def test_mode_tie_first_seen():
    assert mode([3, 1, 1, 3]) == 3


def test_mode_all_distinct():
    assert mode([5, 4, 3]) == 5


def test_mode_empty_tuple():
    with pytest.raises(ValueError):
        mode(())


def test_mode_empty():
    with pytest.raises(ValueError, match="mode of empty data"):
        mode([])


def test_percentile_median():
    assert percentile([1, 2, 3, 4, 5], 50) == 3


def test_percentile_exact_rank():
    assert percentile([5, 4, 3, 2, 1], 75) == 4.0


def test_percentile_interpolates():
    assert percentile([10, 20, 30, 40], 25) == 17.5


def test_percentile_interpolates_two_values():
    assert percentile([0, 10], 90) == 9.0


def test_percentile_max():
    assert percentile([3, 1, 2], 100) == 3


def test_percentile_min():
    assert percentile([3, 1, 2], 0) == 1


def test_percentile_bounds_two_values():
    assert percentile([8, 2], 0) == 2
    assert percentile([8, 2], 100) == 8


def test_percentile_single_value():
    assert percentile([42], 37) == 42


def test_percentile_rejects_out_of_range():
    with pytest.raises(ValueError):
        percentile([1, 2], 101)


def test_percentile_rejects_negative():
    with pytest.raises(ValueError, match="p must be in 0..100"):
        percentile([1, 2], -1)


def test_percentile_empty():
    with pytest.raises(ValueError, match="percentile of empty data"):
        percentile([], 50)


def test_value_range():
    assert value_range([4, 9, 1, 7]) == 8


def test_value_range_single():
    assert value_range([5]) == 0


def test_value_range_increasing():
    assert value_range([1, 2, 3]) == 2


def test_value_range_decreasing():
    assert value_range([3, 2, 1]) == 2


def test_value_range_negative():
    assert value_range([-5, -1, -10]) == 9


def test_value_range_floats():
    assert value_range([1.5, 0.5, 1.0]) == 1.0


def test_value_range_empty_tuple():
    with pytest.raises(ValueError, match="range of empty data"):
        value_range(())


def test_value_range_empty():
    with pytest.raises(ValueError):
        value_range([])
