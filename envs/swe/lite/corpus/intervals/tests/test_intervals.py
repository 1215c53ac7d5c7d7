from intervals import gaps, merge, normalize, overlaps, total_length


def test_normalize_swaps_reversed_bounds():
    assert normalize((5, 2)) == (2, 5)


def test_normalize_keeps_ordered_bounds():
    assert normalize((2, 5)) == (2, 5)


def test_normalize_negative_bounds():
    assert normalize((-1, -7)) == (-7, -1)


def test_normalize_single_point():
    assert normalize((3, 3)) == (3, 3)


def test_merge_empty():
    assert merge([]) == []


def test_merge_overlapping():
    assert merge([(1, 4), (3, 6)]) == [(1, 6)]


def test_merge_touching():
    assert merge([(1, 3), (3, 5)]) == [(1, 5)]


def test_merge_touching_chain():
    assert merge([(5, 7), (1, 3), (3, 5)]) == [(1, 7)]


def test_merge_adjacent_stay_apart():
    assert merge([(1, 3), (4, 5)]) == [(1, 3), (4, 5)]


def test_merge_keeps_disjoint_sorted():
    assert merge([(8, 9), (1, 2)]) == [(1, 2), (8, 9)]


def test_merge_contained():
    assert merge([(1, 10), (2, 3)]) == [(1, 10)]


def test_merge_reversed_bounds():
    assert merge([(6, 3), (2, 1)]) == [(1, 2), (3, 6)]


def test_merge_chain_of_three():
    assert merge([(5, 8), (1, 3), (2, 6), (20, 21)]) == [(1, 8), (20, 21)]


def test_overlaps_shared_endpoint():
    assert overlaps((1, 5), (5, 9)) is True


def test_overlaps_shared_endpoint_other_order():
    assert overlaps((5, 9), (1, 5)) is True


def test_overlaps_single_points():
    assert overlaps((3, 3), (3, 3)) is True
    assert overlaps((3, 3), (4, 4)) is False


def test_overlaps_disjoint():
    assert overlaps((1, 2), (4, 9)) is False


def test_overlaps_disjoint_other_order():
    assert overlaps((7, 9), (1, 6)) is False


def test_overlaps_adjacent():
    assert overlaps((1, 3), (4, 6)) is False


def test_overlaps_reversed_bounds():
    assert overlaps((9, 5), (1, 5)) is True
    assert overlaps((2, 1), (9, 3)) is False


def test_overlaps_contained():
    assert overlaps((1, 10), (3, 4)) is True
    assert overlaps((3, 4), (1, 10)) is True


def test_total_length_counts_points():
    assert total_length([(1, 3), (2, 6), (10, 10)]) == 7


def test_total_length_touching_counted_once():
    assert total_length([(1, 3), (3, 4)]) == 4


def test_total_length_empty():
    assert total_length([]) == 0


def test_total_length_single_point():
    assert total_length([(5, 5)]) == 1


def test_total_length_reversed_and_negative():
    assert total_length([(4, 1), (-3, -1)]) == 7


def test_gaps_between():
    assert gaps([(2, 3), (6, 7)], 1, 9) == [(1, 1), (4, 5), (8, 9)]


def test_gaps_fully_covered():
    assert gaps([(0, 20)], 1, 9) == []


def test_gaps_ignores_outside():
    assert gaps([(20, 30)], 1, 5) == [(1, 5)]
    assert gaps([(0, 0)], 1, 3) == [(1, 3)]


def test_gaps_ignores_interval_after_hi():
    assert gaps([(1, 2), (7, 8)], 1, 5) == [(3, 5)]


def test_gaps_adjacent_intervals():
    assert gaps([(1, 2), (3, 4)], 1, 6) == [(5, 6)]


def test_gaps_last_point_uncovered():
    assert gaps([(1, 8)], 1, 9) == [(9, 9)]


def test_gaps_single_points_left():
    assert gaps([(0, 3), (5, 5)], 0, 6) == [(4, 4), (6, 6)]


def test_gaps_no_intervals():
    assert gaps([], -2, 2) == [(-2, 2)]


def test_gaps_interval_across_lo():
    assert gaps([(0, 3)], 2, 8) == [(4, 8)]


def test_gaps_interval_across_hi():
    assert gaps([(5, 12)], 1, 9) == [(1, 4)]


def test_gaps_interval_at_hi():
    assert gaps([(9, 9)], 1, 9) == [(1, 8)]


def test_gaps_interval_starting_at_hi():
    assert gaps([(4, 7)], 1, 4) == [(1, 3)]


def test_gaps_interval_at_lo():
    assert gaps([(1, 1)], 1, 9) == [(2, 9)]


def test_gaps_interval_ending_at_lo():
    assert gaps([(-3, 1)], 1, 4) == [(2, 4)]
