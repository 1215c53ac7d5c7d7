"""Shell-style wildcard matching: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`, and `**` across path separators."""


def _class_end(pattern, i):
    """Index just past the `]` closing the class that starts at pattern[i] == "[", or -1."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 1
    return j + 1 if j < len(pattern) else -1


def class_matches(body, char):
    """Whether `char` is in a class body like "a-z0_" (a leading "!" negates)."""
    negate = body.startswith("!")
    if negate:
        body = body[1:]
    found = False
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            if body[i] <= char <= body[i + 2]:
                found = True
            i += 3
        else:
            if body[i] == char:
                found = True
            i += 1
    return found != negate


def match(pattern, text, sep="/"):
    """True when the whole `text` matches; `*` and `?` never match `sep`, `**` matches anything."""
    if not pattern:
        return not text
    head = pattern[0]
    if pattern.startswith("**"):
        rest = pattern[2:]
        return any(match(rest, text[i:], sep) for i in range(len(text) + 1))
    if head == "*":
        rest = pattern[1:]
        for i in range(len(text) + 1):
            if match(rest, text[i:], sep):
                return True
            if i < len(text) and text[i] == sep:
                break
        return False
    if not text:
        return False
    if head == "?":
        return text[0] != sep and match(pattern[1:], text[1:], sep)
    if head == "[":
        end = _class_end(pattern, 0)
        if end > 0:
            return class_matches(pattern[1:end - 1], text[0]) and match(pattern[end:], text[1:], sep)
    return head == text[0] and match(pattern[1:], text[1:], sep)


def filter_names(names, pattern):
    """The names matching `pattern`, in their original order."""
    return [name for name in names if match(pattern, name)]


def has_magic(pattern):
    """True when `pattern` contains any wildcard character."""
    return any(c in pattern for c in "*?[")


def literal_prefix(pattern):
    """The directory part before the first wildcard: "src/lib/*.py" -> "src/lib/"."""
    cut = len(pattern)
    for index, char in enumerate(pattern):
        if char in "*?[":
            cut = index
            break
    return pattern[: pattern.rfind("/", 0, cut) + 1]
