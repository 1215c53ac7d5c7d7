import pytest

from ciphers import atbash, caesar, letter_frequencies, rail_fence, rail_fence_decode, shift_letter, vigenere


def test_shift_letter_forward():
    assert shift_letter("c", 2) == "e"


def test_shift_letter_wraps():
    assert shift_letter("z", 1) == "a"


def test_shift_letter_wraps_backwards():
    assert shift_letter("a", -1) == "z"


def test_shift_letter_zero_shift():
    assert shift_letter("q", 0) == "q"


def test_shift_letter_full_turns():
    assert shift_letter("m", 52) == "m"


def test_shift_letter_keeps_case():
    assert shift_letter("A", 3) == "D"


def test_shift_letter_uppercase_wraps():
    assert shift_letter("Y", 2) == "A"


def test_shift_letter_other_characters():
    assert shift_letter("!", 5) == "!"


def test_shift_letter_digit():
    assert shift_letter("5", 3) == "5"


def test_shift_letter_non_ascii():
    assert shift_letter("é", 1) == "é"


def test_caesar():
    assert caesar("Hello, World", 3) == "Khoor, Zruog"


def test_caesar_wraps():
    assert caesar("xyz", 3) == "abc"


def test_caesar_negative_decodes():
    assert caesar("Khoor", -3) == "Hello"


def test_caesar_negative_wraps():
    assert caesar("ABC", -1) == "ZAB"


def test_caesar_large_shift():
    assert caesar("abc", 27) == "bcd"


def test_caesar_empty():
    assert caesar("", 5) == ""


def test_vigenere():
    assert vigenere("attack at dawn", "lemon") == "lxfopv ef rnhr"


def test_vigenere_decrypt():
    assert vigenere("lxfopv ef rnhr", "lemon", decrypt=True) == "attack at dawn"


def test_vigenere_round_trip():
    assert vigenere(vigenere("Secret Plan!", "Key"), "Key", decrypt=True) == "Secret Plan!"


def test_vigenere_key_a_changes_nothing():
    assert vigenere("HELLO", "a") == "HELLO"


def test_vigenere_key_skips_non_letters():
    assert vigenere("Hi there", "ab") == "Hj tiese"


def test_vigenere_key_skips_punctuation():
    assert vigenere("a-b-c", "bc") == "b-d-d"


def test_vigenere_wraps():
    assert vigenere("zzz", "b") == "aaa"


def test_vigenere_uppercase_key():
    assert vigenere("abc", "B") == "bcd"


def test_vigenere_empty_text():
    assert vigenere("", "key") == ""


def test_vigenere_bad_key():
    with pytest.raises(ValueError):
        vigenere("abc", "k3y")


def test_vigenere_key_with_space():
    with pytest.raises(ValueError):
        vigenere("abc", "my key")


def test_vigenere_empty_key():
    with pytest.raises(ValueError):
        vigenere("abc", "")


def test_vigenere_empty_key_with_empty_text():
    with pytest.raises(ValueError):
        vigenere("", "")


def test_atbash():
    assert atbash("Abc xyz") == "Zyx cba"


def test_atbash_middle_letters():
    assert atbash("m n") == "n m"


def test_atbash_uppercase_and_digits():
    assert atbash("ZEBRA 42") == "AVYIZ 42"


def test_atbash_non_ascii():
    assert atbash("é!") == "é!"


def test_atbash_empty():
    assert atbash("") == ""


def test_atbash_is_inverse():
    assert atbash(atbash("Mirror, mirror")) == "Mirror, mirror"


def test_rail_fence_three():
    assert rail_fence("WEAREDISCOVERED", 3) == "WECRERDSOEEAIVD"


def test_rail_fence_two():
    assert rail_fence("abcdef", 2) == "acebdf"


def test_rail_fence_three_short():
    assert rail_fence("abcdefghij", 3) == "aeibdfhjcg"


def test_rail_fence_four():
    assert rail_fence("abcdefgh", 4) == "agbfhced"


def test_rail_fence_more_rails_than_letters():
    assert rail_fence("ab", 5) == "ab"


def test_rail_fence_one_rail():
    assert rail_fence("abc", 1) == "abc"


def test_rail_fence_zero_rails():
    assert rail_fence("abc", 0) == "abc"


def test_rail_fence_empty():
    assert rail_fence("", 3) == ""


def test_rail_fence_decode():
    assert rail_fence_decode("WECRERDSOEEAIVD", 3) == "WEAREDISCOVERED"


def test_rail_fence_decode_two():
    assert rail_fence_decode("acebdf", 2) == "abcdef"


def test_rail_fence_decode_three_short():
    assert rail_fence_decode("aeibdfhjcg", 3) == "abcdefghij"


def test_rail_fence_decode_four():
    assert rail_fence_decode("agbfhced", 4) == "abcdefgh"


def test_rail_fence_decode_one_rail():
    assert rail_fence_decode("xyz", 1) == "xyz"


def test_rail_fence_decode_empty():
    assert rail_fence_decode("", 3) == ""


def test_rail_fence_round_trip_four():
    assert rail_fence_decode(rail_fence("the quick brown fox", 4), 4) == "the quick brown fox"


def test_letter_frequencies():
    assert letter_frequencies("Aa b!") == {"a": 2, "b": 1}


def test_letter_frequencies_word():
    assert letter_frequencies("Hello") == {"h": 1, "e": 1, "l": 2, "o": 1}


def test_letter_frequencies_last_letter():
    assert letter_frequencies("ZzZ a") == {"z": 3, "a": 1}


def test_letter_frequencies_no_letters():
    assert letter_frequencies("123 é ü") == {}


def test_letter_frequencies_empty():
    assert letter_frequencies("") == {}
