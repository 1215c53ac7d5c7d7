import pytest

from editdist import closest, common_prefix_length, hamming, lcs, levenshtein, similarity


def test_levenshtein_classic():
    assert levenshtein("kitten", "sitting") == 3


def test_levenshtein_empty():
    assert levenshtein("", "abc") == 3


def test_levenshtein_identical():
    assert levenshtein("same", "same") == 0


def test_levenshtein_symmetric():
    assert levenshtein("flaw", "lawn") == levenshtein("lawn", "flaw") == 2


def test_levenshtein_single_substitution():
    assert levenshtein("cat", "cut") == 1


def test_hamming():
    assert hamming("karolin", "kathrin") == 3


def test_hamming_equal():
    assert hamming("abc", "abc") == 0


def test_hamming_length_mismatch():
    with pytest.raises(ValueError):
        hamming("a", "ab")


def test_lcs():
    assert lcs("ABCBDAB", "BDCABA") == "BDAB"


def test_lcs_disjoint():
    assert lcs("abc", "xyz") == ""


def test_lcs_subsequence():
    assert lcs("axbycz", "abc") == "abc"


def test_similarity_identical():
    assert similarity("abc", "abc") == 1.0


def test_similarity_partial():
    assert similarity("abcd", "abcf") == 0.75


def test_similarity_empty():
    assert similarity("", "") == 1.0


def test_closest():
    assert closest("appel", ["apple", "apply", "ample"]) == "apple"


def test_closest_none_in_range():
    assert closest("zzz", ["apple", "banana"]) is None


def test_closest_exact_limit():
    assert closest("ab", ["abcd"], max_distance=2) == "abcd"


def test_common_prefix_length():
    assert common_prefix_length("interview", "internet") == 5


def test_common_prefix_length_whole():
    assert common_prefix_length("ab", "abc") == 2
