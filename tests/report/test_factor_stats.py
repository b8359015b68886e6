"""The statistics of a suggested billed-token factor: ratio of sums, effective n, interval, verdict."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.report.factor_stats import MIN_EFFECTIVE_N, RatioEstimate, ratio_of_sums, t_quantile, verdict

# (y = billed delta, x = counted delta > 0)
pairs_strategy = st.lists(
    st.tuples(st.integers(0, 10**7), st.integers(1, 10**7)), min_size=1, max_size=60
)


@given(pairs_strategy)
def test_ratio_is_the_exact_ratio_of_sums_and_inside_its_interval(pairs: list[tuple[int, int]]) -> None:
    est = ratio_of_sums(pairs)
    assert est.ratio == sum(y for y, _ in pairs) / sum(x for _, x in pairs)
    assert est.n == len(pairs)
    assert 1.0 - 1e-9 <= est.effective_n <= est.n + 1e-9
    assert est.low <= est.ratio <= est.high


@given(pairs_strategy, st.integers(1, 50))
def test_scaling_the_billed_side_scales_ratio_and_interval(pairs: list[tuple[int, int]], k: int) -> None:
    base = ratio_of_sums(pairs)
    scaled = ratio_of_sums([(y * k, x) for y, x in pairs])
    assert scaled.ratio == pytest.approx(base.ratio * k, rel=1e-12)
    assert scaled.effective_n == base.effective_n  # weights are the counted deltas only
    if math.isfinite(base.std_error):
        assert scaled.std_error == pytest.approx(base.std_error * k, rel=1e-9, abs=1e-12)


@given(pairs_strategy, st.randoms(use_true_random=False))
def test_order_does_not_matter(pairs: list[tuple[int, int]], rnd: random.Random) -> None:
    shuffled = list(pairs)
    rnd.shuffle(shuffled)
    a, b = ratio_of_sums(pairs), ratio_of_sums(shuffled)
    assert a.ratio == b.ratio and a.effective_n == pytest.approx(b.effective_n)
    if math.isfinite(a.std_error):
        assert a.std_error == pytest.approx(b.std_error, rel=1e-9, abs=1e-12)


@given(st.lists(st.integers(1, 10**6), min_size=2, max_size=50), st.integers(1, 9))
def test_an_exact_proportional_sample_has_a_point_interval(xs: list[int], k: int) -> None:
    est = ratio_of_sums([(k * x, x) for x in xs])
    assert est.ratio == k and est.std_error == 0.0 and est.low == est.high == k


def test_effective_n_counts_a_dominating_row_once() -> None:
    assert ratio_of_sums([(10, 10)] * 40).effective_n == pytest.approx(40)
    lopsided = ratio_of_sums([(100_000, 100_000)] + [(10, 10)] * 39)
    assert lopsided.n == 40 and lopsided.effective_n < 1.01


def test_one_row_has_no_interval() -> None:
    est = ratio_of_sums([(13, 10)])
    assert est.ratio == 1.3 and math.isinf(est.std_error) and est.low == -math.inf and est.high == math.inf
    assert not verdict(est, 1).suggest


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        ratio_of_sums([(1, 0)])
    with pytest.raises(ValueError, match="no rows"):
        ratio_of_sums([])
    with pytest.raises(ValueError, match="confidence"):
        ratio_of_sums([(1, 1)], confidence=1.0)


@pytest.mark.parametrize(
    ("p", "df", "expected"),  # printed t tables
    [(0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.975, 3, 3.1824), (0.975, 5, 2.5706),
     (0.975, 10, 2.2281), (0.975, 29, 2.0452), (0.95, 20, 1.7247), (0.995, 30, 2.7500), (0.025, 12, -2.1788)],
)
def test_t_quantile_matches_the_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, rel=2e-3)


def test_interval_covers_the_true_factor_about_as_often_as_it_says() -> None:
    """Simulated shadow tests with a known factor: the 95% interval holds it in about 95% of samples."""
    rnd = random.Random(20261201)
    trials, covered = 400, 0
    for _ in range(trials):
        pairs = []
        for _ in range(40):
            x = rnd.randint(200, 5000)
            pairs.append((max(0, round(1.3 * x + rnd.gauss(0, 0.08 * x))), x))
        est = ratio_of_sums(pairs)
        covered += est.low <= 1.3 <= est.high
    assert 0.91 <= covered / trials <= 0.99


def _estimate(effective_n: float, low: float, high: float) -> RatioEstimate:
    return RatioEstimate(100, effective_n, (low + high) / 2, 0.01, low, high, 0.95)


def test_verdict_needs_the_minimum_effective_n() -> None:
    small = verdict(_estimate(MIN_EFFECTIVE_N - 0.5, 1.2, 1.3))
    assert not small.suggest and small.reason.startswith("no correction") and "minimum 30" in small.reason
    assert verdict(_estimate(MIN_EFFECTIVE_N, 1.2, 1.3)).suggest
    assert verdict(_estimate(12, 1.2, 1.3), min_effective_n=10).suggest


@pytest.mark.parametrize(("low", "high", "suggest"), [(0.95, 1.05, False), (1.0, 1.2, False), (0.8, 1.0, False),
                                                      (1.001, 1.2, True), (0.7, 0.999, True)])
def test_verdict_refuses_an_interval_containing_one(low: float, high: float, suggest: bool) -> None:
    decision = verdict(_estimate(200, low, high))
    assert decision.suggest is suggest
    if not suggest:
        assert decision.reason == f"no correction: the 95% interval {low:.3f}..{high:.3f} contains 1.0"


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 10**5), st.integers(1, 10**5)), min_size=2, max_size=29))
def test_fewer_rows_than_the_minimum_never_suggest(pairs: list[tuple[int, int]]) -> None:
    assert not verdict(ratio_of_sums(pairs)).suggest
