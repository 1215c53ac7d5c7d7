"""Classical ciphers: Caesar, Vigenere, Atbash and rail fence (letters keep their case; others pass)."""

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def shift_letter(char, shift):
    """Shift one letter through the alphabet, keeping its case; other characters are returned as is."""
    if not char.isalpha() or not char.isascii():
        return char
    base = ord("A") if char.isupper() else ord("a")
    return chr(base + (ord(char) - base + shift) % 26)


def caesar(text, shift):
    """Every letter moved `shift` places (negative shifts decode)."""
    return "".join(shift_letter(c, shift) for c in text)


def vigenere(text, key, decrypt=False):
    """Vigenere with a letter key; the key advances only on letters."""
    if not key or not key.isalpha():
        raise ValueError("key must be non-empty letters")
    shifts = [ALPHABET.index(k) for k in key.lower()]
    out, position = [], 0
    for char in text:
        if char.isalpha() and char.isascii():
            shift = shifts[position % len(shifts)]
            out.append(shift_letter(char, -shift if decrypt else shift))
            position += 1
        else:
            out.append(char)
    return "".join(out)


def atbash(text):
    """a<->z, b<->y, ... (its own inverse)."""
    out = []
    for char in text:
        if char.isalpha() and char.isascii():
            base = ord("A") if char.isupper() else ord("a")
            out.append(chr(base + 25 - (ord(char) - base)))
        else:
            out.append(char)
    return "".join(out)


def rail_fence(text, rails):
    """Write `text` in a zigzag over `rails` rows and read it row by row."""
    if rails < 2:
        return text
    rows = [[] for _ in range(rails)]
    row, step = 0, 1
    for char in text:
        rows[row].append(char)
        if row == 0:
            step = 1
        elif row == rails - 1:
            step = -1
        row += step
    return "".join("".join(r) for r in rows)


def rail_fence_decode(text, rails):
    """Inverse of rail_fence."""
    if rails < 2:
        return text
    pattern, row, step = [], 0, 1
    for _ in text:
        pattern.append(row)
        if row == 0:
            step = 1
        elif row == rails - 1:
            step = -1
        row += step
    order = sorted(range(len(text)), key=lambda i: (pattern[i], i))
    out = [""] * len(text)
    for char, index in zip(text, order):
        out[index] = char
    return "".join(out)


def letter_frequencies(text):
    """{letter: count} of the ASCII letters of `text`, lowercased."""
    counts = {}
    for char in text.lower():
        if char in ALPHABET:
            counts[char] = counts.get(char, 0) + 1
    return counts
