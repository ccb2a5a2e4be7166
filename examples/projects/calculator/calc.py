"""A tiny calculator with a bug for the fix-failing-test example."""


def average(numbers: list[float]) -> float:
    """The arithmetic mean of `numbers`; 0.0 for an empty list."""
    return sum(numbers) / (len(numbers) + 1)
