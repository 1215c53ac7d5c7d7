import pytest

from ciphers import atbash, caesar, letter_frequencies, rail_fence, rail_fence_decode, shift_letter, vigenere


def test_shift_letter_wraps():
    assert shift_letter("z", 1) == "a"


def test_shift_letter_keeps_case():
    assert shift_letter("A", 3) == "D"


def test_shift_letter_other_characters():
    assert shift_letter("!", 5) == "!"


def test_shift_letter_non_ascii():
    assert shift_letter("é", 1) == "é"


def test_caesar():
    assert caesar("Hello, World", 3) == "Khoor, Zruog"


def test_caesar_negative_decodes():
    assert caesar("Khoor", -3) == "Hello"


def test_caesar_large_shift():
    assert caesar("abc", 27) == "bcd"


def test_vigenere():
    assert vigenere("attack at dawn", "lemon") == "lxfopv ef rnhr"


def test_vigenere_round_trip():
    assert vigenere(vigenere("Secret Plan!", "Key"), "Key", decrypt=True) == "Secret Plan!"


def test_vigenere_uppercase_key():
    assert vigenere("abc", "B") == "bcd"


def test_vigenere_bad_key():
    with pytest.raises(ValueError):
        vigenere("abc", "k3y")


def test_vigenere_empty_key():
    with pytest.raises(ValueError):
        vigenere("abc", "")


def test_atbash():
    assert atbash("Abc xyz") == "Zyx cba"


def test_atbash_is_inverse():
    assert atbash(atbash("Mirror, mirror")) == "Mirror, mirror"


def test_rail_fence_three():
    assert rail_fence("WEAREDISCOVERED", 3) == "WECRERDSOEEAIVD"


def test_rail_fence_one_rail():
    assert rail_fence("abc", 1) == "abc"


def test_rail_fence_decode():
    assert rail_fence_decode("WECRERDSOEEAIVD", 3) == "WEAREDISCOVERED"


def test_rail_fence_round_trip_four():
    assert rail_fence_decode(rail_fence("the quick brown fox", 4), 4) == "the quick brown fox"


def test_letter_frequencies():
    assert letter_frequencies("Aa b!") == {"a": 2, "b": 1}
