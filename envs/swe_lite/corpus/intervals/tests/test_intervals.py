from intervals import gaps, merge, normalize, overlaps, total_length


def test_normalize_swaps_reversed_bounds():
    assert normalize((5, 2)) == (2, 5)


def test_normalize_keeps_ordered_bounds():
    assert normalize((2, 5)) == (2, 5)


def test_merge_empty():
    assert merge([]) == []


def test_merge_overlapping():
    assert merge([(1, 4), (3, 6)]) == [(1, 6)]


def test_merge_touching():
    assert merge([(1, 3), (3, 5)]) == [(1, 5)]


def test_merge_keeps_disjoint_sorted():
    assert merge([(8, 9), (1, 2)]) == [(1, 2), (8, 9)]


def test_merge_contained():
    assert merge([(1, 10), (2, 3)]) == [(1, 10)]


def test_overlaps_true():
    assert overlaps((1, 5), (5, 9))


def test_overlaps_false():
    assert not overlaps((1, 2), (4, 9))


def test_total_length_counts_points():
    assert total_length([(1, 3), (2, 6), (10, 10)]) == 7


def test_gaps_between():
    assert gaps([(2, 3), (6, 7)], 1, 9) == [(1, 1), (4, 5), (8, 9)]


def test_gaps_fully_covered():
    assert gaps([(0, 20)], 1, 9) == []


def test_gaps_ignores_outside():
    assert gaps([(20, 30)], 1, 5) == [(1, 5)]
