import pytest

from bitset import BitSet


def test_contains_added_items():
    s = BitSet([3, 5])
    assert (3 in s, 5 in s, 4 in s) == (True, True, False)


def test_zero_is_storable():
    assert (0 in BitSet([0])) is True


def test_large_item_is_storable():
    s = BitSet([200])
    assert (200 in s, 199 in s, 201 in s) == (True, False, False)


def test_negative_not_contained():
    assert (-1 in BitSet([1])) is False


def test_non_int_not_contained():
    assert ("a" in BitSet([1])) is False


def test_nothing_in_empty_set():
    assert (0 in BitSet(), 1 in BitSet()) == (False, False)


def test_bits_of_items():
    assert BitSet([0, 3]).bits == 9


def test_bits_of_empty_set():
    assert BitSet().bits == 0


def test_add():
    s = BitSet()
    s.add(4)
    s.add(1)
    assert (list(s), s.bits) == ([1, 4], 18)


def test_add_twice_keeps_one():
    s = BitSet([6])
    s.add(6)
    assert (list(s), len(s)) == ([6], 1)


def test_add_zero():
    s = BitSet([2])
    s.add(0)
    assert list(s) == [0, 2]


def test_add_rejects_negative():
    with pytest.raises(ValueError):
        BitSet([-2])


def test_add_rejects_minus_one():
    s = BitSet([1])
    with pytest.raises(ValueError):
        s.add(-1)
    assert list(s) == [1]


def test_add_rejects_non_int():
    with pytest.raises(ValueError):
        BitSet(["a"])


def test_add_rejects_float():
    with pytest.raises(ValueError):
        BitSet().add(1.5)


def test_len():
    assert len(BitSet([1, 2, 2, 9, 64])) == 4


def test_len_empty():
    assert len(BitSet()) == 0


def test_len_single_large_item():
    assert len(BitSet([300])) == 1


def test_len_consecutive_items():
    assert len(BitSet(range(10))) == 10


def test_iter_sorted():
    assert list(BitSet([9, 0, 4])) == [0, 4, 9]


def test_iter_empty():
    assert list(BitSet()) == []


def test_iter_large_items():
    assert list(BitSet([130, 64, 1])) == [1, 64, 130]


def test_remove():
    s = BitSet([1, 2])
    s.remove(1)
    assert list(s) == [2]


def test_remove_last_item():
    s = BitSet([5])
    s.remove(5)
    assert (list(s), s.bits) == ([], 0)


def test_remove_keeps_other_items():
    s = BitSet([0, 3, 8, 40])
    s.remove(8)
    assert (list(s), len(s)) == ([0, 3, 40], 3)


def test_remove_missing():
    with pytest.raises(KeyError):
        BitSet([1]).remove(2)


def test_remove_from_empty():
    with pytest.raises(KeyError):
        BitSet().remove(0)


def test_remove_missing_changes_nothing():
    s = BitSet([1, 3])
    with pytest.raises(KeyError):
        s.remove(2)
    assert s.bits == 10


def test_discard_present():
    s = BitSet([1, 7])
    s.discard(7)
    assert list(s) == [1]


def test_discard_missing_is_quiet():
    s = BitSet([1])
    s.discard(7)
    assert list(s) == [1]


def test_discard_negative_is_quiet():
    s = BitSet([0, 2])
    s.discard(-2)
    assert list(s) == [0, 2]


def test_union():
    assert list(BitSet([1, 2]).union(BitSet([2, 3]))) == [1, 2, 3]


def test_union_with_empty():
    assert list(BitSet([4, 0]).union(BitSet())) == [0, 4]


def test_union_keeps_operands():
    a, b = BitSet([1]), BitSet([9])
    c = a.union(b)
    assert (list(a), list(b), list(c)) == ([1], [9], [1, 9])


def test_intersection():
    assert list(BitSet([1, 2, 5]).intersection(BitSet([2, 5, 6]))) == [2, 5]


def test_intersection_disjoint():
    assert list(BitSet([1, 3]).intersection(BitSet([0, 2, 4]))) == []


def test_intersection_with_superset():
    assert list(BitSet([7, 8]).intersection(BitSet(range(20)))) == [7, 8]


def test_difference():
    assert list(BitSet([1, 2, 5]).difference(BitSet([2]))) == [1, 5]


def test_difference_with_superset():
    assert list(BitSet([3, 4]).difference(BitSet([2, 3, 4, 5]))) == []


def test_difference_is_not_symmetric():
    a, b = BitSet([1, 2, 3]), BitSet([3, 4])
    assert (list(a.difference(b)), list(b.difference(a))) == ([1, 2], [4])


def test_equal_sets_have_equal_bits():
    assert BitSet([1, 3]).bits == BitSet([3, 1, 3]).bits


def test_different_sets_have_different_bits():
    assert (BitSet([1]).bits, BitSet([2]).bits) == (2, 4)


def test_min_max():
    s = BitSet([12, 4, 70])
    assert (s.min(), s.max()) == (4, 70)


def test_min_max_with_zero():
    s = BitSet([0, 1])
    assert (s.min(), s.max()) == (0, 1)


def test_min_max_single_item():
    s = BitSet([33])
    assert (s.min(), s.max()) == (33, 33)


def test_min_after_remove():
    s = BitSet([2, 5, 9])
    s.remove(2)
    assert s.min() == 5


def test_min_empty():
    with pytest.raises(ValueError):
        BitSet().min()


def test_max_empty():
    with pytest.raises(ValueError):
        BitSet().max()


def test_max_after_emptying():
    s = BitSet([3])
    s.remove(3)
    with pytest.raises(ValueError):
        s.max()


def test_to_ranges():
    assert BitSet([1, 2, 3, 7, 9, 10]).to_ranges() == [(1, 3), (7, 7), (9, 10)]


def test_to_ranges_single():
    assert BitSet([0]).to_ranges() == [(0, 0)]


def test_to_ranges_empty():
    assert BitSet().to_ranges() == []


def test_to_ranges_one_run():
    assert BitSet([4, 5, 6, 7]).to_ranges() == [(4, 7)]


def test_to_ranges_gaps_of_one():
    assert BitSet([1, 3, 5]).to_ranges() == [(1, 1), (3, 3), (5, 5)]
