import pytest

from bitset import BitSet


def test_add_and_contains():
    s = BitSet([3, 5])
    assert 3 in s and 5 in s and 4 not in s


def test_zero_is_storable():
    assert 0 in BitSet([0])


def test_negative_not_contained():
    assert -1 not in BitSet([1])


def test_add_rejects_negative():
    with pytest.raises(ValueError):
        BitSet([-2])


def test_add_rejects_non_int():
    with pytest.raises(ValueError):
        BitSet(["a"])


def test_len():
    assert len(BitSet([1, 2, 2, 9, 64])) == 4


def test_len_empty():
    assert len(BitSet()) == 0


def test_iter_sorted():
    assert list(BitSet([9, 0, 4])) == [0, 4, 9]


def test_remove():
    s = BitSet([1, 2])
    s.remove(1)
    assert list(s) == [2]


def test_remove_missing():
    with pytest.raises(KeyError):
        BitSet([1]).remove(2)


def test_discard_missing_is_quiet():
    s = BitSet([1])
    s.discard(7)
    assert list(s) == [1]


def test_union():
    assert list(BitSet([1, 2]).union(BitSet([2, 3]))) == [1, 2, 3]


def test_intersection():
    assert list(BitSet([1, 2, 5]).intersection(BitSet([2, 5, 6]))) == [2, 5]


def test_difference():
    assert list(BitSet([1, 2, 5]).difference(BitSet([2]))) == [1, 5]


def test_equality():
    assert BitSet([1, 3]) == BitSet([3, 1]) and BitSet([1]) != BitSet([2])


def test_min_max():
    s = BitSet([12, 4, 70])
    assert (s.min(), s.max()) == (4, 70)


def test_min_empty():
    with pytest.raises(ValueError):
        BitSet().min()


def test_to_ranges():
    assert BitSet([1, 2, 3, 7, 9, 10]).to_ranges() == [(1, 3), (7, 7), (9, 10)]


def test_to_ranges_single():
    assert BitSet([0]).to_ranges() == [(0, 0)]
