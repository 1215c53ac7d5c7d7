"""Closed integer intervals given as (start, end) tuples."""


def normalize(interval):
    """Return the interval with its bounds in ascending order."""
    start, end = interval
    if start > end:
        return (end, start)
    return (start, end)


def merge(intervals):
    """Merge overlapping or touching intervals; the result is sorted by start."""
    items = sorted(normalize(i) for i in intervals)
    merged = []
    for start, end in items:
        if merged and start <= merged[-1][1]:
            last_start, last_end = merged[-1]
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def overlaps(a, b):
    """True when two intervals share at least one point."""
    a_start, a_end = normalize(a)
    b_start, b_end = normalize(b)
    return a_start <= b_end and b_start <= a_end


def total_length(intervals):
    """Number of integer points covered by the union of the intervals."""
    total = 0
    for start, end in merge(intervals):
        total += end - start + 1
    return total


def gaps(intervals, lo, hi):
    """The uncovered sub-intervals of [lo, hi], in order."""
    result = []
    cursor = lo
    for start, end in merge(intervals):
        if end < lo or start > hi:
            continue
        if start > cursor:
            result.append((cursor, start - 1))
        cursor = max(cursor, end + 1)
    if cursor <= hi:
        result.append((cursor, hi))
    return result
