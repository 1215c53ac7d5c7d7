"""Input validators: IPv4 addresses, hex colors, Luhn card numbers, ISBN-10, identifiers, emails."""


def is_ipv4(text):
    """Four dot-separated decimal octets 0..255 without leading zeros."""
    parts = text.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part.isdigit():
            return False
        if len(part) > 1 and part[0] == "0":
            return False
        if int(part) > 255:
            return False
    return True


def is_hex_color(text):
    """"#rgb" or "#rrggbb" with hex digits in any case."""
    if not text.startswith("#"):
        return False
    digits = text[1:]
    if len(digits) not in (3, 6):
        return False
    return all(c in "0123456789abcdefABCDEF" for c in digits)


def luhn_valid(number):
    """True for a digit string (spaces allowed) whose Luhn checksum is 0; needs at least two digits."""
    digits = number.replace(" ", "")
    if len(digits) < 2 or not digits.isdigit():
        return False
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2 == 1:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def isbn10_valid(text):
    """ISBN-10 (hyphens allowed, final X = 10): the weighted sum 10..1 is divisible by 11."""
    chars = text.replace("-", "")
    if len(chars) != 10:
        return False
    total = 0
    for position, char in enumerate(chars):
        if char == "X" and position == 9:
            value = 10
        elif char.isdigit():
            value = int(char)
        else:
            return False
        total += value * (10 - position)
    return total % 11 == 0


def is_identifier(text, max_length=32):
    """A letter or underscore, then letters, digits or underscores; at most `max_length` characters."""
    if not text or len(text) > max_length:
        return False
    if not (text[0].isalpha() or text[0] == "_"):
        return False
    return all(c.isalnum() or c == "_" for c in text[1:])


def is_email(text):
    """A plain local@domain address: one @, a non-empty local part, a dotted domain without empty labels."""
    if text.count("@") != 1:
        return False
    local, domain = text.split("@")
    if not local or " " in text:
        return False
    labels = domain.split(".")
    if len(labels) < 2:
        return False
    return all(label and not label.startswith("-") for label in labels)
