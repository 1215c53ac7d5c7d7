"""Descriptive statistics over lists of numbers."""


def mean(values):
    """Arithmetic mean; ValueError for an empty list."""
    if not values:
        raise ValueError("mean of empty data")
    return sum(values) / len(values)


def median(values):
    """Middle value; the mean of the two middle values for an even count."""
    if not values:
        raise ValueError("median of empty data")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2 == 1:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def mode(values):
    """Most common value; ties go to the value seen first."""
    if not values:
        raise ValueError("mode of empty data")
    counts = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    best = values[0]
    for value in counts:
        if counts[value] > counts[best]:
            best = value
    return best


def percentile(values, p):
    """The p-th percentile (0..100) with linear interpolation between closest ranks."""
    if not values:
        raise ValueError("percentile of empty data")
    if p < 0 or p > 100:
        raise ValueError("p must be in 0..100")
    ordered = sorted(values)
    position = (len(ordered) - 1) * p / 100
    lower = int(position)
    upper = min(lower + 1, len(ordered) - 1)
    fraction = position - lower
    return ordered[lower] + (ordered[upper] - ordered[lower]) * fraction


def value_range(values):
    """max - min; 0 for a single value."""
    if not values:
        raise ValueError("range of empty data")
    low = high = values[0]
    for value in values[1:]:
        if value < low:
            low = value
        elif value > high:
            high = value
    return high - low
