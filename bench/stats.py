"""The statistics of the figures: nearest-rank percentiles, the median of runs and its range."""

from __future__ import annotations

import statistics
from typing import Any


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summary(runs: list[float], unit: str) -> dict[str, Any]:
    return {
        "median": statistics.median(runs),
        "min": min(runs),
        "max": max(runs),
        "runs": runs,
        "unit": unit,
    }
