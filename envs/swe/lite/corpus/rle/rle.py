"""Run-length encoding of strings: "aaab" <-> "3a1b"."""


def encode(text):
    """Encode `text` as count+char pairs."""
    if not text:
        return ""
    parts = []
    current = text[0]
    count = 1
    for char in text[1:]:
        if char == current:
            count += 1
        else:
            parts.append(f"{count}{current}")
            current = char
            count = 1
    parts.append(f"{count}{current}")
    return "".join(parts)


def decode(data):
    """Decode count+char pairs produced by `encode`."""
    result = []
    digits = ""
    for char in data:
        if char.isdigit():
            digits += char
            continue
        if not digits:
            raise ValueError(f"missing count before {char!r}")
        result.append(char * int(digits))
        digits = ""
    if digits:
        raise ValueError("trailing count without a character")
    return "".join(result)


def runs(text):
    """The list of (char, length) runs in `text`."""
    out = []
    for char in text:
        if out and out[-1][0] == char:
            out[-1] = (char, out[-1][1] + 1)
        else:
            out.append((char, 1))
    return out


def longest_run(text):
    """The (char, length) of the first longest run, or None for an empty string."""
    best = None
    for char, length in runs(text):
        if best is None or length > best[1]:
            best = (char, length)
    return best
