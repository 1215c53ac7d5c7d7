"""String distances and alignments: Levenshtein, Hamming, longest common subsequence, closest match."""


def levenshtein(a, b):
    """Minimum number of single-character inserts, deletes and substitutions turning a into b."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            cost = 0 if char_a == char_b else 1
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
        previous = current
    return previous[-1]


def hamming(a, b):
    """Number of positions where two equal-length strings differ."""
    if len(a) != len(b):
        raise ValueError("strings must have the same length")
    return sum(1 for x, y in zip(a, b) if x != y)


def lcs(a, b):
    """One longest common subsequence of a and b (ties broken toward a's earlier characters)."""
    rows, cols = len(a), len(b)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if a[i] == b[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    out, i, j = [], 0, 0
    while i < rows and j < cols:
        if a[i] == b[j]:
            out.append(a[i])
            i += 1
            j += 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return "".join(out)


def similarity(a, b):
    """1 - levenshtein / longer length, in [0, 1]; two empty strings are identical."""
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1 - levenshtein(a, b) / longest


def closest(word, choices, max_distance=2):
    """The choice nearest to `word` (first on ties) within `max_distance`, or None."""
    best, best_distance = None, max_distance + 1
    for choice in choices:
        distance = levenshtein(word, choice)
        if distance < best_distance:
            best, best_distance = choice, distance
    return best


def common_prefix_length(a, b):
    """Length of the longest shared prefix."""
    count = 0
    for x, y in zip(a, b):
        if x != y:
            break
        count += 1
    return count
