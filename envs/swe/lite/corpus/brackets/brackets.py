"""Bracket matching for (), [] and {} with positions of the first problem."""

PAIRS = {")": "(", "]": "[", "}": "{"}
OPENERS = set(PAIRS.values())


def first_error(text):
    """Index of the first unmatched or mismatched bracket, or None when balanced."""
    stack = []
    for i, char in enumerate(text):
        if char in OPENERS:
            stack.append((char, i))
        elif char in PAIRS:
            if not stack or stack[-1][0] != PAIRS[char]:
                return i
            stack.pop()
    if stack:
        return stack[0][1]
    return None


def is_balanced(text):
    """True when every bracket in `text` is matched and properly nested."""
    return first_error(text) is None


def max_depth(text):
    """The deepest nesting level of brackets (assumes balanced input)."""
    depth = 0
    deepest = 0
    for char in text:
        if char in OPENERS:
            depth += 1
            deepest = max(deepest, depth)
        elif char in PAIRS:
            depth -= 1
    return deepest


def matching_pairs(text):
    """List of (open_index, close_index) pairs, ordered by close index; ValueError if unbalanced."""
    stack = []
    pairs = []
    for i, char in enumerate(text):
        if char in OPENERS:
            stack.append(i)
        elif char in PAIRS:
            if not stack:
                raise ValueError(f"unmatched {char!r} at {i}")
            pairs.append((stack.pop(), i))
    if stack:
        raise ValueError(f"unclosed bracket at {stack[-1]}")
    return pairs
