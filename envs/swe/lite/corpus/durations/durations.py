"""Durations in seconds: "1h 2m 3s" formatting, parsing, clock strings and rough humanized text."""

UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def format_duration(seconds):
    """`3723` -> "1h 2m 3s"; zero units are left out, and 0 is "0s"; negative gets a leading "-"."""
    if seconds < 0:
        return "-" + format_duration(-seconds)
    parts = []
    for name, size in UNITS:
        amount, seconds = divmod(seconds, size)
        if amount:
            parts.append(f"{amount}{name}")
    return " ".join(parts) if parts else "0s"


def parse_duration(text):
    """"1h30m" or "2d 4h" or "45s" -> seconds; ValueError for unknown units or missing numbers."""
    sizes = dict(UNITS)
    total, number = 0, ""
    for char in text.replace(" ", ""):
        if char.isdigit():
            number += char
        elif char in sizes:
            if not number:
                raise ValueError(f"unit {char!r} without a number in {text!r}")
            total += int(number) * sizes[char]
            number = ""
        else:
            raise ValueError(f"unknown unit {char!r} in {text!r}")
    if number:
        raise ValueError(f"number without a unit in {text!r}")
    if not text.strip():
        raise ValueError("empty duration")
    return total


def clock(seconds):
    """Seconds as "H:MM:SS" (hours unbounded), or "M:SS" under an hour."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours > 0:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def parse_clock(text):
    """"H:MM:SS" or "M:SS" -> seconds; minutes and seconds must be below 60 when a larger unit leads."""
    parts = [int(p) for p in text.split(":")]
    if not 2 <= len(parts) <= 3:
        raise ValueError(f"expected M:SS or H:MM:SS, got {text!r}")
    if parts[-1] >= 60 or (len(parts) == 3 and parts[1] >= 60):
        raise ValueError(f"field out of range in {text!r}")
    total = 0
    for part in parts:
        total = total * 60 + part
    return total


def humanize(seconds):
    """A rough description: "just now" under 10 s, then the largest unit, rounded down, pluralized."""
    if seconds < 10:
        return "just now"
    names = (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))
    for name, size in names:
        if seconds >= size:
            amount = seconds // size
            return f"{amount} {name}{'s' if amount != 1 else ''} ago"
    return "just now"
