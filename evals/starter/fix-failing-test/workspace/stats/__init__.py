"""Small statistics helpers used by the reporting job."""


def mean(values):
    """The arithmetic mean of values; ValueError for an empty sequence."""
    if not values:
        raise ValueError("mean of an empty sequence")
    return sum(values) // len(values)


def median(values):
    """The median of values; ValueError for an empty sequence."""
    if not values:
        raise ValueError("median of an empty sequence")
    ordered = sorted(values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2
