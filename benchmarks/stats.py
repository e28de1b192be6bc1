"""Percentiles and unit helpers shared by every scenario (one definition of each)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0 < q ≤ 1) by nearest rank: the smallest value with at least q·n values
    at or below it; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = min(len(ordered), max(1, math.ceil(q * len(ordered))))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    """The median (mean of the middle two for an even count); nan for no values."""
    return statistics.median(values) if values else float("nan")


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean; nan for no values."""
    return statistics.fmean(values) if values else float("nan")


def ms(seconds: float) -> float:
    """Seconds as milliseconds, rounded to the microsecond."""
    return round(seconds * 1000, 3)


def mb(kb: int) -> float:
    """KiB (as /proc reports them) as MB (10^6 bytes)."""
    return kb * 1024 / 1e6


def bootstrap_ci(
    a: Sequence[float], b: Sequence[float], n: int = 2000, seed: int = 1234
) -> tuple[float, float]:
    """95% bootstrap interval of median(a) - median(b), resampling each side independently."""
    rng = random.Random(seed)
    diffs = sorted(
        median(rng.choices(a, k=len(a))) - median(rng.choices(b, k=len(b))) for _ in range(n)
    )
    return diffs[int(n * 0.025)], diffs[int(n * 0.975) - 1]
