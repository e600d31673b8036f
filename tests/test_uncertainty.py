"""Error bars: the noise laws, their sums and quantiles against brute force; the coverage of
measured intervals and of AIM's model bound by simulation; saving and the command line."""
import itertools
import math

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm.dataset import Dataset
from ektelo_pgm.domain import Domain
from ektelo_pgm.estimate import Decompressed, FactoredEstimate
from ektelo_pgm.mechanisms.aim import AIM
from ektelo_pgm.operators.measure import Gaussian, Laplace
from ektelo_pgm.privacy import Budget, NoiseLaw, gaussian_law, gaussian_std, laplace_law, laplace_std
from ektelo_pgm.privacy.samplers import discrete_gaussian_variance, discrete_laplace_variance
from ektelo_pgm.uncertainty import ErrorBars, Prior, SelectionBound, half_width, l1_quantile, sum_law
from ektelo_pgm.workload import Query

laws = st.one_of(st.builds(NoiseLaw, st.just("gaussian"), st.floats(0.2, 30.0)),
                 st.builds(NoiseLaw, st.just("laplace"), st.floats(0.2, 6.0)))


def brute_sum(table: dict[int, float], count: int) -> dict[int, float]:
    """The law of the sum of ``count`` independent draws of the integer law ``table``, term by term."""
    out = {0: 1.0}
    for _ in range(count):
        nxt = {}
        for s, a in out.items():
            for k, b in table.items():
                nxt[s + k] = nxt.get(s + k, 0.0) + a * b
        out = nxt
    return out


def law_table(law: NoiseLaw) -> dict[int, float]:
    low, p = law.probabilities()
    return {low + i: q for i, q in enumerate(p)}


def test_laws_match_the_mechanisms_stds():
    for law, std in ((gaussian_law(1.0, 0.02), gaussian_std(1.0, 0.02)), (laplace_law(2.0, 0.5), laplace_std(2.0, 0.5)),
                     (gaussian_law(1.0, 0.3, integer=False, size=7), gaussian_std(1.0, 0.3, integer=False, size=7))):
        assert law.std == std
    law = gaussian_law(1.0, 0.02)
    assert (law.kind, law.scale, law.unit) == ("gaussian", 25.0, 1.0)
    assert laplace_law(2.0, 0.5).scale == 4.0


@given(laws)
@settings(max_examples=30, deadline=None)
def test_law_table_is_the_distribution(law):
    low, p = law.probabilities()
    k = np.arange(low, low + p.size)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert low == -(p.size // 2)
    variance = discrete_gaussian_variance(law.scale) if law.kind == "gaussian" else discrete_laplace_variance(law.scale)
    assert (k * k) @ p == pytest.approx(variance, rel=1e-9)


@given(laws, st.integers(1, 4))
@settings(max_examples=25, deadline=None)
def test_sum_law_is_the_convolution(law, count):
    low, p = sum_law(*law.probabilities(), count)
    brute = brute_sum(law_table(law), count)
    for i, q in enumerate(p):
        assert q == pytest.approx(brute.get(low + i, 0.0), abs=1e-12)
    assert sum(v for s, v in brute.items() if not low <= s < low + p.size) < 1e-15


@given(laws, st.integers(1, 6), st.sampled_from([0.5, 0.9, 0.95, 0.99]))
@settings(max_examples=40, deadline=None)
def test_half_width_is_the_smallest_with_the_level(law, count, level):
    width = half_width(law, count, level)
    assert width == int(width)
    low, p = sum_law(*law.probabilities(), count)
    k = np.abs(np.arange(low, low + p.size))
    assert p[k <= width].sum() >= level - 1e-12
    assert width == 0 or p[k <= width - 1].sum() < level


@pytest.mark.parametrize("sigma2", [16.0, 50.0, 400.0, 5000.0])
def test_measured_intervals_cover_at_most_two_points_more(sigma2):
    """95% intervals of a discrete Gaussian cover between 95% and 97% when its parameter is at
    least 4 (the end points carry less than 2%)."""
    law = NoiseLaw("gaussian", sigma2)
    for count in (1, 3, 40):
        width = half_width(law, count)
        low, p = sum_law(*law.probabilities(), count)
        coverage = p[np.abs(np.arange(low, low + p.size)) <= width].sum()
        assert 0.95 <= coverage <= 0.97
        assert width == pytest.approx(1.96 * math.sqrt(sigma2 * count), abs=1.0)


@pytest.mark.parametrize("law,count", [(NoiseLaw("gaussian", 9.0), 1), (NoiseLaw("laplace", 1.5), 3),
                                       (NoiseLaw("gaussian", 2.0), 5)])
def test_l1_quantile_against_the_exact_law(law, count):
    magnitude = {}
    for k, q in law_table(law).items():
        magnitude[abs(k)] = magnitude.get(abs(k), 0.0) + q
    table = brute_sum(magnitude, count)
    values = sorted(table)
    cdf = np.cumsum([table[v] for v in values])
    for level in (0.5, 0.9, 0.975):
        assert l1_quantile(law, count, level) == values[int(np.searchsorted(cdf, level - 1e-12))]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    domain = Domain(["a", "b", "c", "d"], [3, 4, 5, 2])
    a = rng.integers(0, 3, 3000)
    b = (a + rng.integers(0, 2, 3000)) % 4
    c = rng.choice(5, 3000, p=[0.05, 0.1, 0.2, 0.3, 0.35])
    d = (c > 2).astype(int) ^ (rng.random(3000) < 0.1)
    return Dataset(np.column_stack([a, b, c, d]), domain)


@pytest.mark.parametrize("operator,budget", [(Gaussian(0.01), Budget.zcdp(1e6)), (Laplace(0.3), Budget.pure(1e6))])
def test_measured_intervals_cover_by_simulation(data, operator, budget):
    """Over 120 runs, each marginal's 95% intervals (from one measurement of the 4-way marginal,
    summed down) cover the true counts 95% to 97% of the time, within the simulation's error."""
    estimate = FactoredEstimate.uniform(data.domain, len(data))
    hits = []
    for seed in range(120):
        bars = ErrorBars(estimate, operator.measure(data, [Query(data.domain.attrs)], budget, seed))
        for attrs in [("a", "b", "c", "d"), ("c", "a"), ("b",), ("d", "c", "b")]:
            interval = bars.marginal(attrs)
            truth = data.marginal(attrs)
            assert interval.basis == "measured" and interval.lower.shape == truth.shape
            hits.append(((truth >= interval.lower) & (truth <= interval.upper)).ravel())
    hits = np.concatenate(hits)
    error = 3 * math.sqrt(0.95 * 0.05 / hits.size)
    assert 0.95 - error <= hits.mean() <= 0.97 + error


def test_the_released_count_lies_inside_its_interval(data):
    """A measured cell's count is the measurement's estimate cut at 0, and lies in [lower, upper]
    (both cut at 0 too), negative noisy counts included; the model's counts stay apart."""
    measurements = Gaussian(0.0005).measure(data, [Query(data.domain.attrs)], Budget.zcdp(1e6), 0)
    estimate = FactoredEstimate.uniform(data.domain, len(data))
    intervals = [ErrorBars(estimate, measurements).marginal(attrs) for attrs in [data.domain.attrs, ("c", "a")]]
    assert (intervals[0].measured < 0).any()
    for interval in intervals:
        np.testing.assert_array_equal(interval.estimate, np.maximum(interval.measured, 0.0))
        assert ((interval.lower <= interval.estimate) & (interval.estimate <= interval.upper)).all()
        np.testing.assert_allclose(interval.counts, estimate.project(interval.attrs))


def test_the_smallest_standard_error_is_used(data):
    budget = Budget.zcdp(1e6)
    coarse = Gaussian(0.001).measure(data, [Query(("a", "b", "c"))], budget, 0)
    fine = Gaussian(0.1).measure(data, [Query(("a", "b"))], budget, 1)
    bars = ErrorBars(FactoredEstimate.uniform(data.domain, len(data)), coarse + fine)
    assert bars.marginal(("a",)).std_error == pytest.approx(fine[0].std * 2)
    assert bars.marginal(("c",)).std_error == pytest.approx(coarse[0].std * math.sqrt(12))
    assert bars.marginal(("d",)).basis == "none" and np.isnan(bars.marginal(("d",)).lower).all()


def test_merged_values_have_no_measured_interval(data):
    inner = Domain(["a", "b", "c", "d"], [3, 4, 3, 2])
    codes = {"c": np.array([2, 2, 2, 0, 1])}  # c's values 0, 1, 2 merged into code 2
    records = data.records.copy()
    records[:, 2] = codes["c"][records[:, 2]]
    merged = Dataset(records, inner)
    measurements = Gaussian(0.05).measure(merged, [Query(("b", "c"))], Budget.zcdp(1e6), 3)
    estimate = Decompressed(FactoredEstimate.uniform(inner, len(data)), data.domain, codes)
    interval = ErrorBars(estimate, measurements).marginal(("c", "b"))
    assert interval.lower.shape == (5, 4)
    assert np.isnan(interval.lower[:3]).all() and not np.isnan(interval.lower[3:]).any()
    y = measurements[0].y.reshape(4, 3)
    assert interval.measured[3] == pytest.approx(y[:, 0]) and interval.measured[4] == pytest.approx(y[:, 1])


def test_selection_bound_formula():
    law = NoiseLaw("gaussian", 4.0)
    bound = SelectionBound(sigma=2.0, noise=law, epsilon=0.5, sensitivity=3.0, candidates=10, chosen_weight=3.0,
                           chosen_cells=6, residual=40.0, terms={("a", "b"): (2.0, 12, 5.0), ("a",): (1.0, 3, 1.0)})
    a = math.sqrt(2 / math.pi)
    u = l1_quantile(law, 6, 0.975)
    expected_ab = a * 2 * 12 + (3.0 * (40.0 + u - a * 2 * 6) + 2 * 3.0 * math.log(10 / 0.025) / 0.5) / 2.0 + 5.0
    assert bound.l1(("b", "a")) == pytest.approx(expected_ab)
    expected_a = a * 2 * 3 + (3.0 * (40.0 + u - a * 2 * 6) + 2 * 3.0 * math.log(10 / 0.025) / 0.5) / 1.0 + 1.0
    assert bound.l1(("a",)) == pytest.approx(min(expected_a, expected_ab))
    assert bound.l1(("c",)) is None


def test_aim_model_bounds_hold_by_simulation(data):
    """AIM's bounds on the model's L1 error of its unmeasured 2-way marginals hold in at least
    95% of the cases over 12 runs (in practice always: the bound is conservative)."""
    held = []
    for seed in range(12):
        result = AIM(rounds=8, iters=20, final_iters=30).run(data, Budget.zcdp(0.05), rng=seed)
        bound = result.selection_bound
        assert bound is not None and all(drift is None for _, _, drift in bound.terms.values())  # not yet needed
        bars = result.error_bars()
        for attrs in itertools.combinations(data.domain.attrs, 2):
            interval = bars.marginal(attrs)
            if interval.basis == "model bound":
                error = np.abs(data.marginal(attrs) - interval.counts).sum()
                held.append(error <= interval.l1_bound)
                truth = data.marginal(attrs)
                assert ((truth >= interval.lower) & (truth <= interval.upper)).all() or not held[-1]
                drift = bound.terms[attrs][2]
                assert drift == pytest.approx(np.abs(bound.scored.project(attrs) - result.estimate.project(attrs)).sum())
    assert len(held) >= 12 and np.mean(held) >= 0.95


def test_shows_a_value_above_z_stds_of_its_measured_noise():
    """A value's noisy count shows records from z noise stds (Gaussian: 3 stds, 30 for std 10); under
    Laplace noise of the same std, from the count its heavier tail passes as rarely (higher)."""
    from ektelo_pgm.measurement import Measurement

    domain = Domain(["a", "b"], [4, 2])
    estimate = FactoredEstimate.uniform(domain, 100)
    for law, bar in ((NoiseLaw("gaussian", 100.0), 30), (NoiseLaw("laplace", 10 / math.sqrt(2)), 42)):
        m = Measurement(("a",), [bar + 2, bar - 2, 0.0, -40.0], law.std, noise=law)
        bars = ErrorBars(estimate, [m])
        assert [bars.shows("a", v, 3.0) for v in range(4)] == [True, False, False, False]
    assert not bars.shows("b", 0, 3.0) and not bars.shows("b", 0, 0.1)  # nothing measured on b


def test_shows_combines_every_gaussian_measurement_that_holds_the_value():
    """A 1-way count 2.5 stds up and a 2-way one 2 stds up (each alone below 3 stds) together show
    the value at 3.2 stds.  Over 2,000 values: with no records, as many pass as the normal tail
    says (2 stds: 2.3%); with 25 records each, more pass than by the best measurement alone."""
    from ektelo_pgm.measurement import Measurement

    domain = Domain(["a", "b"], [2000, 2])
    estimate = FactoredEstimate.uniform(domain, 100)
    law = NoiseLaw("gaussian", 100.0)

    def bars(counts, rng):
        one_way = counts + rng.normal(0.0, 10.0, 2000)
        two_way = np.stack([counts, np.zeros(2000)], axis=1) + rng.normal(0.0, 10.0, (2000, 2))
        return ErrorBars(estimate, [Measurement(("a",), one_way, 10.0, noise=law),
                                    Measurement(("a", "b"), two_way.ravel(), 10.0, noise=law)])

    fixed = ErrorBars(estimate, [Measurement(("a",), np.full(2000, 25.0), 10.0, noise=law),
                                 Measurement(("a", "b"), np.tile([15.0, 13.0], 2000), 10.0, noise=law)])
    assert fixed.shows("a", 0, 3.0) and not fixed.marginal(("a",), math.erf(3 / math.sqrt(2))).lower[0] > 0
    rng = np.random.default_rng(0)
    empty = bars(np.zeros(2000), rng)
    passed = sum(empty.shows("a", v, 2.0) for v in range(2000))
    assert abs(passed - 2000 * 0.02275) < 4 * math.sqrt(2000 * 0.02275)
    held = bars(np.full(2000, 25.0), rng)
    combined = sum(held.shows("a", v, 3.0) for v in range(2000))
    alone = int((held.marginal(("a",), math.erf(3 / math.sqrt(2))).lower > 0).sum())
    assert alone < 0.4 * 2000 < 0.45 * 2000 < combined  # about 31% and 52%


def test_shows_weighs_the_schemas_noisy_count_with_the_measurements():
    """A count 2.5 stds up in one measurement and 2.5 stds up in the schema's noisy count (its
    ``prior``) together show the value at 3.5 stds, where each alone is below 3; under Laplace
    noise the prior is left out.  Over 2,000 values with no records, as many pass as the normal
    tail of the weighted count says (2 stds: 2.3%).  epa2021's car_truck, 46% blank on 1,108
    records, drew no blank at epsilon 1 (schema 4.3 stds, measurements 2.96)."""
    from ektelo_pgm.measurement import Measurement

    domain = Domain(["a"], [2000])
    estimate = FactoredEstimate.uniform(domain, 100)
    law = NoiseLaw("gaussian", 100.0)
    one = ErrorBars(estimate, [Measurement(("a",), np.full(2000, 25.0), 10.0, noise=law)])
    assert not one.shows("a", 0, 3.0) and not one.shows("a", 0, 3.0, Prior(50.0, 20.0 * 10))
    assert one.shows("a", 0, 3.0, Prior(50.0, 20.0))  # (25 / 100 + 50 / 400) / sqrt(1 / 100 + 1 / 400) = 3.35
    laplace = NoiseLaw("laplace", 10 / math.sqrt(2))
    alone = ErrorBars(estimate, [Measurement(("a",), np.full(2000, 25.0), laplace.std, noise=laplace)])
    assert alone.shows("a", 0, 3.0, Prior(50.0, 20.0)) == alone.shows("a", 0, 3.0)
    rng = np.random.default_rng(1)
    empty = ErrorBars(estimate, [Measurement(("a",), rng.normal(0.0, 10.0, 2000), 10.0, noise=law)])
    priors = rng.normal(0.0, 20.0, 2000)
    passed = sum(empty.shows("a", v, 2.0, Prior(priors[v], 20.0)) for v in range(2000))
    assert abs(passed - 2000 * 0.02275) < 4 * math.sqrt(2000 * 0.02275)


def test_a_prior_looked_at_for_lying_high_is_weighed_given_that():
    """The schema's count of a column's blanks is weighed only where it lay between 2 and 4.5 stds
    (a missing code in doubt), so were the column never blank it leans up: weighed as if not
    selected, 2,000 empty cells passed 2 stds 13% of the time (hotel_rates' reserved_room_type, never
    blank, drew 1% blanks at epsilon 1).  Given the selection (:meth:`Prior.tail`), as often as the
    normal tail says (2.3%); with no bounds the tail is the unselected one, which the integral
    over bounds far out gives too."""
    from scipy import stats

    from ektelo_pgm.measurement import Measurement

    domain = Domain(["a"], [2000])
    estimate = FactoredEstimate.uniform(domain, 100)
    law = NoiseLaw("gaussian", 100.0)
    rng = np.random.default_rng(2)
    empty = ErrorBars(estimate, [Measurement(("a",), rng.normal(0.0, 10.0, 2000), 10.0, noise=law)])
    priors = stats.truncnorm.rvs(2.0, 4.5, scale=20.0, size=2000, random_state=rng)
    passed = sum(empty.shows("a", v, 2.0, Prior(priors[v], 20.0, 40.0, 90.0)) for v in range(2000))
    unselected = sum(empty.shows("a", v, 2.0, Prior(priors[v], 20.0)) for v in range(2000))
    assert abs(passed - 2000 * 0.02275) < 4 * math.sqrt(2000 * 0.02275) and unselected > 0.1 * 2000
    for count, measured in ((50.0, 25.0), (60.0, 3.0), (85.0, -20.0)):
        closed = Prior(count, 20.0).tail(measured, 0.01)
        assert closed == pytest.approx(Prior(count, 20.0, -800.0, 800.0).tail(measured, 0.01), rel=1e-6)
        assert Prior(count, 20.0, 40.0, 90.0).tail(measured, 0.01) > closed  # the selection leans up


def test_msts_one_way_measurement_holds_the_values_it_kept_alone():
    """MST's 1-way measurement of a column whose rare values it merged has one std per answer
    (the merged answer sums several draws): it was left out, and the column's values took the
    interval of a 2-way measurement summed down (std 431 for 64 on seattle_pets' zip codes at
    epsilon 0.3).  Each value kept alone now takes the 1-way's own std and law."""
    from ektelo_pgm.mechanisms import MST

    rng = np.random.default_rng(3)
    n = 20_000
    c = rng.choice(6, n, p=[0.5, 0.3, 0.197, 0.001, 0.001, 0.001])
    data = Dataset(np.column_stack([c, (c + rng.integers(0, 2, n)) % 3]), Domain(["c", "e"], [6, 3]))
    result = MST(iters=50).run(data, Budget.zcdp(0.02), 0)
    one_way = next(m for m in result.measurements if m.attrs == ("c",))
    assert np.ndim(one_way.std) == 1 and result.estimate.group_size["c"].max() > 1  # rare values merged
    interval = ErrorBars(result.estimate, result.measurements).marginal(("c",))
    assert interval.std_error == pytest.approx(one_way.std.min())
    kept = result.estimate.group_size["c"][result.estimate.codes["c"]] == 1
    assert not np.isnan(interval.lower[kept]).any() and np.isnan(interval.lower[~kept]).all()
    np.testing.assert_allclose(interval.measured[kept], one_way.y[result.estimate.codes["c"][kept]])
