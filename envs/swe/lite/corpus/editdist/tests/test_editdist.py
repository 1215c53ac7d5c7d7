import pytest

from editdist import closest, common_prefix_length, hamming, lcs, levenshtein, similarity


def fruits():
    return ["apple", "apply", "ample"]


def test_levenshtein_classic():
    assert levenshtein("kitten", "sitting") == 3


def test_levenshtein_longer_words():
    assert levenshtein("intention", "execution") == 5


def test_levenshtein_inserts():
    assert levenshtein("sunday", "saturday") == 3


def test_levenshtein_empty():
    assert levenshtein("", "abc") == 3


def test_levenshtein_empty_second():
    assert levenshtein("abc", "") == 3


def test_levenshtein_both_empty():
    assert levenshtein("", "") == 0


def test_levenshtein_identical():
    assert levenshtein("same", "same") == 0


def test_levenshtein_symmetric():
    assert (levenshtein("flaw", "lawn"), levenshtein("lawn", "flaw")) == (2, 2)


def test_levenshtein_single_substitution():
    assert levenshtein("cat", "cut") == 1


def test_levenshtein_single_insert_and_delete():
    assert (levenshtein("abc", "abcd"), levenshtein("abcd", "acd")) == (1, 1)


def test_levenshtein_swap_costs_two():
    assert levenshtein("ab", "ba") == 2


def test_hamming():
    assert hamming("karolin", "kathrin") == 3


def test_hamming_bits():
    assert hamming("1011101", "1001001") == 2


def test_hamming_all_different():
    assert hamming("abc", "xyz") == 3


def test_hamming_equal():
    assert hamming("abc", "abc") == 0


def test_hamming_empty():
    assert hamming("", "") == 0


def test_hamming_length_mismatch():
    with pytest.raises(ValueError):
        hamming("a", "ab")


def test_hamming_longer_first():
    with pytest.raises(ValueError):
        hamming("abc", "")


def test_lcs():
    assert lcs("ABCBDAB", "BDCABA") == "BDAB"


def test_lcs_classic():
    assert lcs("AGGTAB", "GXTXAYB") == "GTAB"


def test_lcs_repeated_letters():
    assert lcs("banana", "atana") == "aana"


def test_lcs_disjoint():
    assert lcs("abc", "xyz") == ""


def test_lcs_empty():
    assert lcs("", "abc") == ""


def test_lcs_identical():
    assert lcs("abc", "abc") == "abc"


def test_lcs_subsequence():
    assert lcs("axbycz", "abc") == "abc"


def test_lcs_subsequence_of_first():
    assert lcs("ab", "xaxbx") == "ab"


def test_lcs_tie():
    assert lcs("ab", "ba") == "b"


def test_similarity_identical():
    assert similarity("abc", "abc") == 1.0


def test_similarity_partial():
    assert similarity("abcd", "abcf") == 0.75


def test_similarity_half():
    assert similarity("a", "ab") == 0.5


def test_similarity_nothing_shared():
    assert (similarity("ab", "ba"), similarity("abcd", "xyz")) == (0.0, 0.0)


def test_similarity_one_empty():
    assert similarity("abc", "") == 0.0


def test_similarity_empty():
    assert similarity("", "") == 1.0


def test_closest():
    assert closest("appel", fruits()) == "apple"


def test_closest_first_on_ties():
    assert closest("cat", ["cut", "cot"]) == "cut"


def test_closest_exact_match_wins():
    assert closest("cat", ["dog", "cart", "cat"]) == "cat"


def test_closest_nearer_later_choice():
    assert closest("hello", ["help", "hell"], max_distance=1) == "hell"


def test_closest_none_in_range():
    assert closest("zzz", ["apple", "banana"]) is None


def test_closest_no_choices():
    assert closest("cat", []) is None


def test_closest_exact_limit():
    assert closest("ab", ["abcd"], max_distance=2) == "abcd"


def test_closest_larger_limit():
    assert closest("cat", ["dogs"], max_distance=4) == "dogs"


def test_closest_zero_limit():
    assert (closest("abc", ["xyz"], max_distance=0), closest("abc", ["abd", "abc"], max_distance=0)) == (None, "abc")


def test_common_prefix_length():
    assert common_prefix_length("interview", "internet") == 5


def test_common_prefix_length_short():
    assert common_prefix_length("abcd", "abxd") == 2


def test_common_prefix_length_whole():
    assert common_prefix_length("ab", "abc") == 2


def test_common_prefix_length_identical():
    assert common_prefix_length("same", "same") == 4


def test_common_prefix_length_first_differs():
    assert common_prefix_length("abc", "xbc") == 0


def test_common_prefix_length_empty():
    assert common_prefix_length("", "abc") == 0
