"""The statistics behind a suggested ``billed_token_factor``: a ratio of sums, its interval, a verdict.

Pure arithmetic, no I/O. A delta factor is ``f = Σy / Σx`` over rows with
``y`` = billed delta (``billed_before − billed_after``) and ``x`` = counted
delta (``tokens_before − tokens_after`` > 0). Three promises:

* **effective n** (Kish): ``(Σx)² / Σx²``. The ratio of sums weights each row
  by its counted delta, so one huge row among small ones is worth about one
  row, not many; ``n_eff`` equals ``n`` when every row weighs the same.
* **interval**: the usual linearised (delta-method) standard error of a ratio
  estimator, ``SE = sqrt(n/(n−1) · Σ(y − f·x)²) / Σx``, with a Student t
  quantile on ``floor(n_eff) − 1`` degrees of freedom (at least 1): fewer
  effective rows, a wider interval.
* **verdict**: a factor is suggested only when ``n_eff`` reaches the minimum
  (:data:`MIN_EFFECTIVE_N`, 30 by default) and the interval excludes 1.0;
  otherwise the verdict is "no correction" (keep factor 1.0, the exporter's
  default), with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from statistics import NormalDist
from typing import NamedTuple

MIN_EFFECTIVE_N = 30  # below it a ratio of a few rows says more about those rows than about the tokenizer
DEFAULT_CONFIDENCE = 0.95


class RatioEstimate(NamedTuple):
    """A ratio of sums with its spread: what the verdict is decided on."""

    n: int  # rows
    effective_n: float  # Kish's (Σx)² / Σx²
    ratio: float  # Σy / Σx
    std_error: float
    low: float
    high: float
    confidence: float  # e.g. 0.95


class Verdict(NamedTuple):
    """Whether to suggest the factor, and why (a reason a user can act on)."""

    suggest: bool
    reason: str


def t_quantile(p: float, df: int) -> float:
    """Student t quantile (lower tail ``p``), exact for 1 and 2 degrees of freedom.

    From 3 on, the Cornish-Fisher expansion of Abramowitz & Stegun 26.7.5 around
    the normal quantile (error below 0.2% at df = 3 for p = 0.975, shrinking fast).
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}")
    if df < 1:
        raise ValueError(f"df must be at least 1, got {df!r}")
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = NormalDist().inv_cdf(p)
    nu = float(df)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / nu + g2 / nu**2 + g3 / nu**3 + g4 / nu**4


def ratio_of_sums(pairs: Iterable[tuple[int, int]], confidence: float = DEFAULT_CONFIDENCE) -> RatioEstimate:
    """``Σy / Σx`` of ``(y, x)`` pairs (every ``x`` > 0), its effective n and two-sided interval."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    ys: list[int] = []
    xs: list[int] = []
    for y, x in pairs:
        if x <= 0:
            raise ValueError(f"a counted delta must be positive, got {x!r}")
        ys.append(y)
        xs.append(x)
    n = len(xs)
    if n == 0:
        raise ValueError("no rows")
    sum_x = sum(xs)  # exact integers: no float order effects in the ratio itself
    sum_y = sum(ys)
    ratio = sum_y / sum_x
    effective_n = sum_x * sum_x / sum(x * x for x in xs)
    if n < 2:
        return RatioEstimate(n, effective_n, ratio, math.inf, -math.inf, math.inf, confidence)
    # Σ(y − f·x)² = Σ(y·Σx − x·Σy)² / (Σx)², summed in exact integers: no cancellation, and an exactly
    # proportional sample has exactly zero spread
    scaled_residuals = sum((y * sum_x - x * sum_y) ** 2 for y, x in zip(ys, xs, strict=True))
    std_error = math.sqrt(n / (n - 1) * scaled_residuals) / (sum_x * sum_x)
    df = max(1, math.floor(effective_n + 1e-9) - 1)
    half = t_quantile(0.5 + confidence / 2, df) * std_error
    return RatioEstimate(n, effective_n, ratio, std_error, ratio - half, ratio + half, confidence)


def verdict(estimate: RatioEstimate, min_effective_n: float = MIN_EFFECTIVE_N) -> Verdict:
    """Suggest the factor only with enough effective rows and an interval that excludes 1.0."""
    if estimate.effective_n < min_effective_n:
        return Verdict(False, f"no correction: effective n {estimate.effective_n:.1f} (of {estimate.n} rows) "
                              f"is below the minimum {min_effective_n:g}")
    if estimate.low <= 1.0 <= estimate.high:
        return Verdict(False, f"no correction: the {estimate.confidence:.0%} interval "
                              f"{estimate.low:.3f}..{estimate.high:.3f} contains 1.0")
    return Verdict(True, f"suggested: {estimate.confidence:.0%} interval {estimate.low:.3f}..{estimate.high:.3f} "
                         f"excludes 1.0, effective n {estimate.effective_n:.1f}")


__all__ = ["DEFAULT_CONFIDENCE", "MIN_EFFECTIVE_N", "RatioEstimate", "Verdict", "ratio_of_sums", "t_quantile",
           "verdict"]
