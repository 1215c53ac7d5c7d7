"""Text helpers: URL slugs, greedy word wrapping and truncation with an ellipsis."""


def slugify(text, separator="-"):
    """Lowercase ASCII words joined by `separator`; other characters split words."""
    words = []
    current = []
    for char in text.lower():
        if char.isascii() and char.isalnum():
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return separator.join(words)


def wrap(text, width):
    """Greedy word wrap; a word longer than `width` gets a line of its own."""
    if width < 1:
        raise ValueError("width must be positive")
    lines = []
    line = ""
    for word in text.split():
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line = line + " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def truncate(text, limit, ellipsis="..."):
    """Cut `text` to at most `limit` characters, ending with `ellipsis` when cut."""
    if limit < len(ellipsis):
        raise ValueError("limit shorter than the ellipsis")
    if len(text) <= limit:
        return text
    return text[: limit - len(ellipsis)] + ellipsis


def count_words(text):
    """Number of whitespace-separated words."""
    count = 0
    in_word = False
    for char in text:
        if char.isspace():
            in_word = False
        elif not in_word:
            in_word = True
            count += 1
    return count
