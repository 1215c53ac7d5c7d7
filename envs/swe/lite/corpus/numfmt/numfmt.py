"""Number formatting: thousands separators, fixed decimals, byte sizes, percentages, ordinals."""


def group_digits(number, separator=","):
    """`1234567` -> "1,234,567"; negative numbers keep their sign in front."""
    if number < 0:
        return "-" + group_digits(-number, separator)
    digits = str(number)
    groups = []
    while len(digits) > 3:
        groups.append(digits[-3:])
        digits = digits[:-3]
    groups.append(digits)
    return separator.join(reversed(groups))


def fixed(value, places=2, separator=","):
    """A float with `places` decimals (half away from zero) and grouped integer digits."""
    if places < 0:
        raise ValueError("places must be >= 0")
    scale = 10 ** places
    scaled = int(abs(value) * scale + 0.5)
    whole, frac = divmod(scaled, scale)
    sign = "-" if value < 0 and scaled else ""
    text = sign + group_digits(whole, separator)
    if places:
        text += "." + str(frac).rjust(places, "0")
    return text


def human_bytes(size):
    """Byte counts with binary units: 512 -> "512 B", 1536 -> "1.5 KiB", one decimal above bytes."""
    if size < 0:
        raise ValueError("size must be >= 0")
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    value = float(size)
    unit = 0
    while value >= 1024 and unit < len(units) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{size} B"
    return f"{value:.1f} {units[unit]}"


def percent(part, whole, places=1):
    """`part` of `whole` as a percentage string; "n/a" when whole is 0."""
    if whole == 0:
        return "n/a"
    return fixed(100 * part / whole, places) + "%"


def ordinal(n):
    """1 -> "1st", 2 -> "2nd", 11 -> "11th", 23 -> "23rd"."""
    if 10 <= n % 100 <= 20:
        suffix = "th"
    else:
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def parse_grouped(text, separator=","):
    """Inverse of group_digits: "1,234" -> 1234; groups after the first must have three digits."""
    sign = -1 if text.startswith("-") else 1
    body = text[1:] if sign < 0 else text
    groups = body.split(separator)
    if not groups[0] or len(groups[0]) > 3 and len(groups) > 1:
        raise ValueError(f"bad leading group in {text!r}")
    for group in groups[1:]:
        if len(group) != 3:
            raise ValueError(f"bad group {group!r} in {text!r}")
    return sign * int("".join(groups))
