import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

from ektelo_pgm.privacy import (Budget, BudgetExceededError, approx_to_zcdp,
                                exponential, exponential_probabilities, gaussian,
                                gaussian_sigma, laplace, laplace_scale,
                                zcdp_to_approx)

# ---------------------------------------------------------------- budgets


def test_ten_charges_of_a_tenth_spend_exactly_one():
    b = Budget.pure(1.0)
    for i in range(10):
        b.spend(0.1, label=f"q{i}")
    assert b.remaining == 0.0 and b.spent == 1.0
    assert sum(c.amount for c in b.ledger) == 1
    assert [c.label for c in b.ledger] == [f"q{i}" for i in range(10)]
    with pytest.raises(BudgetExceededError, match="asked epsilon=1e-06"):
        b.spend(1e-6)
    assert len(b.ledger) == 10


def test_overspend_is_refused_and_leaves_budget_unchanged():
    b = Budget.zcdp(0.5)
    b.spend(0.3, "first")
    with pytest.raises(BudgetExceededError) as err:
        b.spend(0.25, "second")
    assert "'second'" in str(err.value) and "0.25" in str(err.value) and "0.2 remains" in str(err.value)
    assert err.value.asked == Fraction("0.25") and err.value.remaining == Fraction("0.2")
    assert b.spent == 0.3 and len(b.ledger) == 1
    b.spend(0.2)
    assert b.remaining == 0.0


@settings(max_examples=60, deadline=None)
@given(total=st.floats(1e-4, 1e3), k=st.integers(1, 40))
def test_split_shares_always_fit_exactly(total, k):
    b = Budget.zcdp(total)
    share = b.split(k)
    for _ in range(k):
        b.spend(share)
    assert b.remaining >= 0
    assert math.isclose(b.spent, total, rel_tol=1e-12)
    assert k * Fraction(repr(float(np.nextafter(share, np.inf)))) > Fraction(repr(total))


@settings(max_examples=60, deadline=None)
@given(amounts=st.lists(st.decimals("0.001", "0.3", places=3), min_size=1, max_size=30))
def test_decimal_charges_sum_exactly(amounts):
    total = float(sum(amounts))
    b = Budget.pure(total)
    for a in amounts:
        b.spend(float(a))
    assert b.remaining == 0.0
    with pytest.raises(BudgetExceededError):
        b.spend(1e-12)


def test_fraction_share():
    b = Budget.pure(2.0)
    b.spend(0.5)
    assert b.fraction(0.5) == 0.75
    assert b.fraction(1) == 1.5
    with pytest.raises(ValueError, match="at most 1"):
        b.fraction(1.5)
    b.spend(1.5)
    with pytest.raises(BudgetExceededError, match="no epsilon remains"):
        b.split(3)


@pytest.mark.parametrize("bad", [-1.0, 0.0, float("nan"), float("inf"), "x", True])
def test_bad_amounts_are_refused(bad):
    with pytest.raises((ValueError, TypeError)):
        Budget.pure(bad)
    b = Budget.pure(1.0)
    with pytest.raises((ValueError, TypeError)):
        b.spend(bad)
    assert b.spent == 0.0


def test_unknown_notion_and_mechanism():
    with pytest.raises(ValueError, match="notion"):
        Budget(1.0, "renyi")
    with pytest.raises(ValueError, match="unknown mechanism"):
        Budget.pure(1.0).cost("laplacian", 0.1)
    with pytest.raises(ValueError, match="split"):
        Budget.pure(1.0).split(0)


def test_costs_per_notion():
    pure, z = Budget.pure(10.0), Budget.zcdp(10.0)
    assert pure.cost("pure", 0.3) == Fraction("0.3")
    assert pure.cost("exponential", 0.3) == Fraction("0.3")
    assert z.cost("pure", 0.3) == Fraction(9, 200)  # 0.3**2 / 2
    assert z.cost("exponential", 0.3) == Fraction(9, 800)  # 0.3**2 / 8
    assert z.cost("gaussian", 0.3) == Fraction("0.3")
    with pytest.raises(ValueError, match="Gaussian mechanism does not satisfy pure"):
        pure.cost("gaussian", 0.1)


@pytest.mark.parametrize("mechanism", ["pure", "exponential", "gaussian"])
@settings(max_examples=40, deadline=None)
@given(amount=st.floats(1e-6, 100.0))
def test_parameter_for_inverts_cost(mechanism, amount):
    b = Budget.zcdp(1000.0)
    p = b.parameter_for(mechanism, amount)
    assert b.cost(mechanism, p) <= Fraction(repr(amount))
    assert b.cost(mechanism, float(np.nextafter(p, np.inf))) > Fraction(repr(amount))
    assert math.isclose(float(b.cost(mechanism, p)), amount, rel_tol=1e-12)


def test_charge_records_mechanism():
    b = Budget.zcdp(1.0)
    b.charge("exponential", 0.4, label="select")
    b.charge("gaussian", 0.1, label="measure")
    assert [(c.label, c.mechanism, c.parameter) for c in b.ledger] == \
        [("select", "exponential", 0.4), ("measure", "gaussian", 0.1)]
    assert b.spent == 0.12  # exact: 0.4**2/8 + 0.1, no float drift
    assert b.affords("gaussian", 0.88) and not b.affords("gaussian", 0.8800001)

# ---------------------------------------------------------------- conversions


@settings(max_examples=80, deadline=None)
@given(eps=st.floats(1e-3, 50.0), log10_delta=st.floats(-15, -1))
def test_approx_conversion_closed_form_and_round_trip(eps, log10_delta):
    delta = 10.0 ** log10_delta
    rho = approx_to_zcdp(eps, delta)
    L = math.log(1 / delta)
    assert math.isclose(rho, (math.sqrt(L + eps) - math.sqrt(L)) ** 2, rel_tol=1e-9)
    assert zcdp_to_approx(rho, delta) <= eps
    assert math.isclose(zcdp_to_approx(rho, delta), eps, rel_tol=1e-12)
    assert Budget.approx(eps, delta).total == rho


def test_conversion_known_value():
    # rho = 0.5, delta = e^-2: eps = 0.5 + 2 sqrt(0.5 * 2) = 2.5
    assert math.isclose(zcdp_to_approx(0.5, math.exp(-2)), 2.5, rel_tol=1e-15)
    assert math.isclose(approx_to_zcdp(2.5, math.exp(-2)), 0.5, rel_tol=1e-12)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="delta"):
            zcdp_to_approx(0.5, bad)

# ---------------------------------------------------------------- mechanisms


def test_noise_scale_helpers():
    assert laplace_scale(2.0, 0.5) == 4.0
    assert gaussian_sigma(3.0, 0.5) == 3.0
    with pytest.raises(ValueError, match="epsilon"):
        laplace_scale(1.0, -1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_sigma(0.0, 1.0)


def _std_within(sample, sigma, kurtosis):
    """Sample std within 5 standard errors of sigma (SE of s^2 from the kurtosis)."""
    se = sigma ** 2 * math.sqrt((kurtosis - 1) / sample.size)
    return abs(sample.var() - sigma ** 2) < 5 * se


def test_laplace_noise_distribution():
    n, b = 200_000, laplace_scale(2.0, 0.5)
    noise = laplace(np.zeros(n), 2.0, 0.5, rng=11)
    assert _std_within(noise, math.sqrt(2) * b, kurtosis=6)
    assert not _std_within(noise, math.sqrt(2) * b * 1.02, kurtosis=6)
    assert stats.kstest(noise, stats.laplace(scale=b).cdf).pvalue > 1e-3
    assert stats.kstest(noise, stats.norm(scale=math.sqrt(2) * b).cdf).pvalue < 1e-6


def test_gaussian_noise_distribution():
    n, sigma = 200_000, gaussian_sigma(2.0, 0.08)
    noise = gaussian(np.zeros(n), 2.0, 0.08, rng=12)
    assert sigma == 5.0
    assert _std_within(noise, sigma, kurtosis=3)
    assert not _std_within(noise, sigma * 1.02, kurtosis=3)
    assert stats.kstest(noise, stats.norm(scale=sigma).cdf).pvalue > 1e-3


def test_mechanisms_keep_shape_and_add_to_answers():
    answers = np.arange(12.0).reshape(3, 4)
    out = laplace(answers, 1.0, 1e9, rng=0)
    assert out.shape == (3, 4) and out.dtype == np.float64
    assert np.allclose(out, answers, atol=1e-6)
    out = gaussian(answers, 1.0, 1e18, rng=0)
    assert np.allclose(out, answers, atol=1e-6)


def test_same_seed_same_output():
    x = np.ones(50)
    assert np.array_equal(laplace(x, 1, 1, rng=5), laplace(x, 1, 1, rng=5))
    assert np.array_equal(gaussian(x, 1, 1, rng=5), gaussian(x, 1, 1, rng=5))
    assert not np.array_equal(laplace(x, 1, 1, rng=5), laplace(x, 1, 1, rng=6))
    s = np.linspace(0, 3, 20)
    assert [exponential(s, 1, 1, rng=k) for k in range(20)] == [exponential(s, 1, 1, rng=k) for k in range(20)]


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_frequencies_match_exact_probabilities(monotonic):
    scores = np.array([0.0, 1.0, 2.0, 2.5, 4.0, -1.0])
    sens, eps = 2.0, 3.0
    p = exponential_probabilities(scores, sens, eps, monotonic)
    factor = eps / sens if monotonic else eps / (2 * sens)
    expected = np.exp(factor * scores) / np.exp(factor * scores).sum()
    assert np.allclose(p, expected, rtol=1e-14)
    rng = np.random.default_rng(2024)
    n = 40_000
    draws = np.array([exponential(scores, sens, eps, rng, monotonic=monotonic) for _ in range(n)])
    counts = np.bincount(draws, minlength=scores.size)
    assert stats.chisquare(counts, n * p).pvalue > 1e-3
    other = exponential_probabilities(scores, sens, eps, not monotonic)
    assert stats.chisquare(counts, n * other).pvalue < 1e-6


def test_exponential_charges_and_validates():
    b = Budget.zcdp(1.0)
    i = exponential([1.0, 2.0], 1.0, 2.0, rng=0, budget=b, label="pick")
    assert i in (0, 1) and b.spent == 0.5 and b.ledger[0].label == "pick"
    with pytest.raises(ValueError, match=r"scores must be finite; entry \(1,\) is nan"):
        exponential([1.0, np.nan], 1.0, 1.0, rng=0)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        exponential([], 1.0, 1.0, rng=0)
    with pytest.raises(ValueError, match="sensitivity"):
        exponential([1.0], 0.0, 1.0, rng=0)
    with pytest.raises(ValueError, match="epsilon"):
        exponential([1.0], 1.0, -0.5, rng=0)
    assert b.spent == 0.5  # invalid calls charge nothing


def test_refused_charge_releases_nothing_and_keeps_rng_state():
    b = Budget.pure(1.0)
    rng = np.random.default_rng(3)
    laplace(np.zeros(3), 1.0, 0.7, rng=rng, budget=b)
    state = rng.bit_generator.state
    for call in (lambda: laplace(np.zeros(3), 1.0, 0.31, rng=rng, budget=b),
                 lambda: exponential([0.0, 1.0], 1.0, 0.31, rng=rng, budget=b)):
        with pytest.raises(BudgetExceededError):
            call()
        assert rng.bit_generator.state == state
    assert b.spent == 0.7 and len(b.ledger) == 1
    laplace(np.zeros(3), 1.0, 0.3, rng=rng, budget=b)
    assert b.remaining == 0.0


def test_gaussian_on_pure_budget_is_refused_before_noise():
    b = Budget.pure(1.0)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match="pure budget"):
        gaussian(np.zeros(2), 1.0, 0.1, rng=rng, budget=b)
    assert rng.bit_generator.state == state and b.spent == 0.0


def test_laplace_on_zcdp_budget_costs_half_eps_squared():
    b = Budget.zcdp(0.5)
    laplace(np.zeros(2), 1.0, 0.6, rng=0, budget=b)
    assert b.spent == 0.18
    with pytest.raises(BudgetExceededError, match="rho"):
        laplace(np.zeros(2), 1.0, 0.81, rng=0, budget=b)  # 0.32805 > 0.32


@pytest.mark.parametrize("answers", [[1.0, np.inf], [np.nan]])
def test_non_finite_answers_are_refused(answers):
    with pytest.raises(ValueError, match="answers must be finite"):
        laplace(answers, 1.0, 1.0, rng=0)
    with pytest.raises(ValueError, match="answers must be finite"):
        gaussian(answers, 1.0, 1.0, rng=0)
