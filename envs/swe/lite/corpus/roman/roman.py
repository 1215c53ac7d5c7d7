"""Roman numeral conversion for the integers 1..3999."""

NUMERALS = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
    (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
    (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number):
    """Convert an integer in 1..3999 to a Roman numeral."""
    if not isinstance(number, int):
        raise TypeError("number must be an int")
    if number < 1 or number > 3999:
        raise ValueError("number out of range 1..3999")
    parts = []
    for value, symbol in NUMERALS:
        while number >= value:
            parts.append(symbol)
            number -= value
    return "".join(parts)


def from_roman(text):
    """Convert a Roman numeral (any case) back to an integer."""
    text = text.upper()
    if not text:
        raise ValueError("empty numeral")
    total = 0
    for i, char in enumerate(text):
        if char not in VALUES:
            raise ValueError(f"invalid numeral character {char!r}")
        value = VALUES[char]
        if i + 1 < len(text) and VALUES.get(text[i + 1], 0) > value:
            total -= value
        else:
            total += value
    if to_roman(total) != text:
        raise ValueError(f"non-canonical numeral {text!r}")
    return total


def is_roman(text):
    """True when `text` is a canonical Roman numeral."""
    try:
        from_roman(text)
    except ValueError:
        return False
    return True
