"""Integer conversion to and from bases 2..36."""

DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def check_base(base):
    """Raise ValueError unless 2 <= base <= 36."""
    if base < 2 or base > 36:
        raise ValueError(f"base must be in 2..36, got {base}")


def to_base(number, base):
    """The digits of `number` in `base` (lowercase letters, leading '-' for negatives)."""
    check_base(base)
    if number == 0:
        return "0"
    sign = ""
    if number < 0:
        sign = "-"
        number = -number
    digits = []
    while number > 0:
        number, remainder = divmod(number, base)
        digits.append(DIGITS[remainder])
    return sign + "".join(reversed(digits))


def from_base(text, base):
    """Parse `text` written in `base` (case-insensitive, optional leading '-')."""
    check_base(base)
    text = text.strip().lower()
    negative = text.startswith("-")
    if negative:
        text = text[1:]
    if not text:
        raise ValueError("no digits")
    value = 0
    for char in text:
        digit = DIGITS.find(char)
        if digit < 0 or digit >= base:
            raise ValueError(f"invalid digit {char!r} for base {base}")
        value = value * base + digit
    return -value if negative else value


def digit_sum(number, base=10):
    """Sum of the digits of |number| in `base`."""
    check_base(base)
    number = abs(number)
    total = 0
    while number:
        total += number % base
        number //= base
    return total
