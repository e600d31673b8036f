import copy
import itertools
import math
import multiprocessing
import pickle
import sys
import threading
from fractions import Fraction

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st
from scipy import stats

from ektelo_pgm.privacy import (Budget, Person, BudgetExceededError, approx_to_zcdp,
                                approx_to_zcdp_simple, exponential, exponential_probabilities,
                                gaussian, gaussian_sigma, gaussian_std, laplace, laplace_scale,
                                laplace_std, permute_and_flip, zcdp_delta, zcdp_to_approx,
                                zcdp_to_approx_simple)
from ektelo_pgm.privacy.samplers import Source, bernoulli_exp

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

# ---------------------------------------------------------------- threads


def test_threads_hammering_one_budget_never_overspend():
    """Issue 12 item 2: 8 threads charging one pure budget of 1 in steps of 0.01, switching
    threads every microsecond (without the lock some trials overspend)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        _hammer()
    finally:
        sys.setswitchinterval(previous)


def _hammer():
    for trial in range(40):
        b = Budget.pure(1.0)
        granted = [0] * 8
        start = threading.Barrier(8)

        def worker(i):
            start.wait()
            for _ in range(40):
                try:
                    b.charge("pure", 0.01)
                    granted[i] += 1
                except BudgetExceededError:
                    pass

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(granted) == 100 == len(b.ledger)
        assert sum(c.amount for c in b.ledger) == Fraction(1) and b.spent == 1.0 and b.remaining == 0.0


def test_a_budget_cannot_be_copied_or_pickled():
    """Issue 26, item 8: a copy (pickled to another process, or copied here) could spend the
    whole budget again."""
    b = Budget.zcdp(1.0, neighbours="substitute", secure=True)
    b.charge("gaussian", 0.25, "m")
    for duplicate in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="cannot be copied or pickled"):
            duplicate(b)
    assert b.spent == 0.25 and len(b.ledger) == 1


def _charge_in_child(budget, results):
    try:
        budget.charge("pure", 1.0, "in the child")
        results.put("charged")
    except RuntimeError as error:
        results.put(str(error))


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs the fork start method")
def test_a_forked_copy_of_a_budget_refuses_to_charge():
    """Issue 26, item 8: a forked child inherits a copy of the budget without pickling; its
    charges would not reach the parent, so it must refuse them all."""
    fork = multiprocessing.get_context("fork")
    b = Budget.pure(1.0)
    results = fork.Queue()
    child = fork.Process(target=_charge_in_child, args=(b, results))
    child.start()
    message = results.get(timeout=60)
    child.join(timeout=60)
    assert "cannot be charged in process" in message
    assert b.spent == 0.0
    b.charge("pure", 1.0, "in the parent")  # the process that made it still charges it
    assert b.remaining == 0.0


def test_neighbouring_relation_is_declared_on_the_budget():
    assert Budget.pure(1.0).neighbours == "add/remove" and not Budget.pure(1.0).public_total
    sub = Budget.zcdp(1.0, neighbours="substitute")
    assert sub.public_total and sub.sensitivity(1.5) == 3.0 and Budget.pure(1.0).sensitivity(1.5) == 1.5
    with pytest.raises(ValueError, match="neighbours"):
        Budget.pure(1.0, neighbours="bounded")


def test_the_person_relation_scales_every_sensitivity_by_its_rows():
    """Person(K) (issue 54): K records added or removed, so K times the add/remove sensitivity, the
    record count private; K a positive integer; the relation in the budget's words."""
    person = Budget.zcdp(1.0, neighbours=Person(4))
    assert person.sensitivity(1.5) == 6.0 and person.max_rows == 4 and not person.public_total
    assert Budget.pure(1.0).max_rows == Budget.pure(1.0, neighbours="substitute").max_rows == 1
    assert str(Person(4)) == "per person (at most 4 rows each)" and "Person(max_rows=4)" in repr(person)
    for bad in (0, -2, 1.5, True, "3"):
        with pytest.raises(ValueError, match="max-rows-per-person"):
            Person(bad)

# ---------------------------------------------------------------- conversions


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(1e-3, 50.0), log10_delta=st.floats(-15, -1))
def test_simple_conversion_closed_form_and_round_trip(eps, log10_delta):
    delta = 10.0 ** log10_delta
    rho = approx_to_zcdp_simple(eps, delta)
    L = math.log(1 / delta)
    assert math.isclose(rho, (math.sqrt(L + eps) - math.sqrt(L)) ** 2, rel_tol=1e-9)
    assert zcdp_to_approx_simple(rho, delta) <= eps
    assert math.isclose(zcdp_to_approx_simple(rho, delta), eps, rel_tol=1e-12)


def test_simple_conversion_known_value():
    # rho = 0.5, delta = e^-2: eps = 0.5 + 2 sqrt(0.5 * 2) = 2.5
    assert math.isclose(zcdp_to_approx_simple(0.5, math.exp(-2)), 2.5, rel_tol=1e-15)
    assert math.isclose(approx_to_zcdp_simple(2.5, math.exp(-2)), 0.5, rel_tol=1e-12)
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="delta"):
            zcdp_to_approx(0.5, bad)


def _delta_by_mpmath(rho, eps):
    """CKS 2020 Corollary 13 minimised over alpha with 50-digit arithmetic (an independent reference)."""
    import mpmath

    mpmath.mp.dps = 50
    rho, eps = mpmath.mpf(rho), mpmath.mpf(eps)

    def log_delta(a):
        return (a - 1) * (a * rho - eps) - mpmath.log(a) + (a - 1) * mpmath.log(1 - 1 / a)

    best = mpmath.findroot(lambda a: (2 * a - 1) * rho - eps + mpmath.log(1 - 1 / a),
                           ((eps + 1) / (2 * rho) + 1.5,), solver="secant")
    return float(mpmath.exp(log_delta(best)))


@pytest.mark.parametrize("rho,eps", [(0.5, 2.5), (0.1, 1.0), (0.01, 0.5), (1.0, 8.0), (0.02, 1.0)])
def test_tight_delta_matches_a_high_precision_minimisation(rho, eps):
    assert zcdp_delta(rho, eps) == pytest.approx(_delta_by_mpmath(rho, eps), rel=1e-9)
    # the tight delta is below the simple one's: exp(-(eps - rho)^2 / (4 rho))
    assert zcdp_delta(rho, eps) < math.exp(-(eps - rho) ** 2 / (4 * rho))


@settings(max_examples=60, deadline=None)
@given(eps=st.floats(1e-2, 20.0), log10_delta=st.floats(-12, -2))
def test_tight_conversion_inverts_and_beats_the_simple_one(eps, log10_delta):
    """Issue 12 item 7: the tight conversion gives more rho for the same (eps, delta)."""
    delta = 10.0 ** log10_delta
    rho = approx_to_zcdp(eps, delta)
    assert zcdp_delta(rho, eps) <= delta < zcdp_delta(float(np.nextafter(rho, np.inf)) * (1 + 1e-9), eps)
    assert rho > approx_to_zcdp_simple(eps, delta)
    assert zcdp_to_approx(rho, delta) <= eps * (1 + 1e-12)
    assert zcdp_to_approx(rho, delta) <= zcdp_to_approx_simple(rho, delta)
    assert Budget.approx(eps, delta).total == rho


def test_tight_conversion_is_monotone():
    deltas = [zcdp_delta(0.1, e) for e in np.linspace(0.1, 5, 30)]
    assert all(a > b for a, b in zip(deltas, deltas[1:]))
    deltas = [zcdp_delta(r, 1.0) for r in np.linspace(0.01, 1, 30)]
    assert all(a < b for a, b in zip(deltas, deltas[1:]))
    rhos = [approx_to_zcdp(1.0, d) for d in (1e-10, 1e-8, 1e-6, 1e-4)]
    assert all(a < b for a, b in zip(rhos, rhos[1:]))
    assert zcdp_delta(0.0, 1.0) == 0.0
    # the gain quoted for (1, 1e-6): 39% more rho, a Gaussian sigma 15% smaller
    gain = approx_to_zcdp(1.0, 1e-6) / approx_to_zcdp_simple(1.0, 1e-6)
    assert 1.35 < gain < 1.45

# ---------------------------------------------------------------- mechanisms


def test_noise_scale_helpers():
    assert laplace_scale(2.0, 0.5) == 4.0
    assert gaussian_sigma(3.0, 0.5) == 3.0
    with pytest.raises(ValueError, match="epsilon"):
        laplace_scale(1.0, -1.0)
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_sigma(0.0, 1.0)
    # the discrete Laplace of scale b has variance 2q/(1-q)^2, q = exp(-1/b)
    q = math.exp(-1 / 4)
    assert laplace_std(2.0, 0.5) == pytest.approx(math.sqrt(2 * q) / (1 - q), rel=1e-14)
    assert gaussian_std(3.0, 0.5) == 3.0


def test_noise_is_only_drawn_through_a_budget():
    """Issue 10: no budget=None path that releases anything."""
    for call in (lambda: laplace([1.0], 1.0, 1.0, rng=0, budget=None),
                 lambda: gaussian([1.0], 1.0, 1.0, rng=0, budget=None),
                 lambda: exponential([1.0], 1.0, 1.0, rng=0, budget=None),
                 lambda: permute_and_flip([1.0], 1.0, 1.0, rng=0, budget=None)):
        with pytest.raises(TypeError, match="the budget must be a Budget"):
            call()
    for primitive in (laplace, permute_and_flip):
        with pytest.raises(TypeError):
            primitive([1.0], 1.0, 1.0, 0)  # the budget is a required keyword


def _std_within(sample, sigma, kurtosis):
    """Sample std within 5 standard errors of sigma (SE of s^2 from the kurtosis)."""
    se = sigma ** 2 * math.sqrt((kurtosis - 1) / sample.size)
    return abs(sample.var() - sigma ** 2) < 5 * se


def test_laplace_noise_distribution():
    n, b = 200_000, laplace_scale(2.0, 0.5)
    noise = laplace(np.zeros(n), 2.0, 0.5, rng=11, budget=Budget.pure(0.5))
    assert noise.dtype == np.int64
    std = laplace_std(2.0, 0.5)
    assert _std_within(noise, std, kurtosis=6)
    assert not _std_within(noise, std * 1.02, kurtosis=6)
    values, counts = np.unique(np.abs(noise), return_counts=True)
    keep = values <= 30  # P[|x| = k] proportional to exp(-k / b) (twice for k > 0)
    pmf = np.exp(-values[keep] / b) * np.where(values[keep] == 0, 1, 2)
    expected = pmf / (1 + 2 * math.exp(-1 / b) / (1 - math.exp(-1 / b))) * n
    assert stats.chisquare(counts[keep], expected, sum_check=False).pvalue > 1e-3


def test_gaussian_noise_distribution():
    n, sigma = 200_000, gaussian_sigma(2.0, 0.08)
    noise = gaussian(np.zeros(n), 2.0, 0.08, rng=12, budget=Budget.zcdp(0.08))
    assert sigma == 5.0 and gaussian_std(2.0, 0.08) == 5.0 and noise.dtype == np.int64
    assert _std_within(noise, sigma, kurtosis=3)
    assert not _std_within(noise, sigma * 1.02, kurtosis=3)
    values, counts = np.unique(noise, return_counts=True)
    support = np.arange(-30, 31)
    pmf = np.exp(-support ** 2 / (2 * sigma ** 2))
    observed = np.array([counts[values == v].sum() for v in support])
    assert stats.chisquare(observed, pmf / pmf.sum() * observed.sum()).pvalue > 1e-3


def test_small_gaussian_parameter_has_the_exact_smaller_variance():
    # sigma = 0.5: the discrete Gaussian's variance is well below sigma^2
    z = np.arange(-20, 21)
    w = np.exp(-z ** 2 / (2 * 0.25))
    exact = float((z ** 2 * w).sum() / w.sum())
    assert gaussian_std(1.0, 2.0) == pytest.approx(math.sqrt(exact), rel=1e-12) and exact < 0.25 * 0.9
    noise = gaussian(np.zeros(100_000), 1.0, 2.0, rng=3, budget=Budget.zcdp(2.0))
    assert _std_within(noise, math.sqrt(exact), kurtosis=6)


def test_mechanisms_keep_shape_and_add_to_answers():
    answers = np.arange(12.0).reshape(3, 4)
    out = laplace(answers, 1.0, 1e9, rng=0, budget=Budget.pure(1e9))
    assert out.shape == (3, 4) and out.dtype == np.int64
    np.testing.assert_array_equal(out, answers)
    out = gaussian(answers, 1.0, 1e18, rng=0, budget=Budget.zcdp(1e18))
    np.testing.assert_array_equal(out, answers)
    real = answers / 3
    out = laplace(real, 1.0, 1e9, rng=0, budget=Budget.pure(1e9), integer=False)
    assert out.dtype == np.float64 and np.allclose(out, real, atol=1e-8)
    with pytest.raises(ValueError, match="not integers"):
        laplace(real, 1.0, 1.0, rng=0, budget=Budget.pure(1.0))


def test_real_answers_are_released_on_a_power_of_two_grid():
    b = Budget.pure(10.0)
    out = laplace(np.full(1000, 0.3), 1.0, 1.0, rng=1, budget=b, integer=False)
    step = 2.0 ** (math.floor(math.log2(1.0 / 1000)) - 30)
    assert np.all(out / step == np.rint(out / step))
    assert _std_within(out - 0.3, laplace_std(1.0, 1.0, integer=False, size=1000), kurtosis=6)
    assert laplace_std(1.0, 1.0, integer=False, size=1000) == pytest.approx(math.sqrt(2), rel=1e-6)


def test_same_seed_same_output_and_secure_draws_ignore_the_seed():
    x = np.ones(50)

    def run(f, seed, notion="pure", secure=False):
        return f(x, 1, 1, rng=seed, budget=Budget(10, notion, secure=secure))

    assert np.array_equal(run(laplace, 5), run(laplace, 5))
    assert np.array_equal(run(gaussian, 5, "zcdp"), run(gaussian, 5, "zcdp"))
    assert not np.array_equal(run(laplace, 5), run(laplace, 6))
    assert not np.array_equal(run(laplace, 5, secure=True), run(laplace, 5, secure=True))
    s = np.linspace(0, 3, 20)
    picks = [exponential(s, 1, 1, rng=k, budget=Budget.pure(1)) for k in range(20)]
    assert picks == [exponential(s, 1, 1, rng=k, budget=Budget.pure(1)) for k in range(20)]
    secure = np.concatenate([run(laplace, 0, secure=True) for _ in range(200)]) - 1
    assert _std_within(secure, laplace_std(1, 1), kurtosis=6)


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_frequencies_match_exact_probabilities(monotonic):
    scores = np.array([0.0, 1.0, 2.0, 2.5, 4.0, -1.0])
    sens, eps = 2.0, 3.0
    p = exponential_probabilities(scores, sens, eps, monotonic)
    factor = eps / sens if monotonic else eps / (2 * sens)
    expected = np.exp(factor * scores) / np.exp(factor * scores).sum()
    assert np.allclose(p, expected, rtol=1e-14)
    rng = np.random.default_rng(2024)
    n = 4000
    budget = Budget.pure(n * eps)
    draws = np.array([exponential(scores, sens, eps, rng, budget=budget, monotonic=monotonic) for _ in range(n)])
    counts = np.bincount(draws, minlength=scores.size)
    assert stats.chisquare(counts, n * p).pvalue > 1e-3
    other = exponential_probabilities(scores, sens, eps, not monotonic)
    assert stats.chisquare(counts, n * other).pvalue < 1e-6


def _permute_and_flip_probabilities(scores, sens, eps):
    """Exact output distribution of permute-and-flip, averaged over every order: candidate i
    wins when every candidate before it flips tails and it flips heads."""
    keep = np.exp(-eps * (max(scores) - np.asarray(scores)) / (2 * sens))
    p = np.zeros(len(scores))
    for order in itertools.permutations(range(len(scores))):
        tails = 1.0
        for i in order:
            p[i] += tails * keep[i]
            tails *= 1 - keep[i]
    return p / math.factorial(len(scores))


def test_permute_and_flip_frequencies_match_its_exact_distribution():
    """Issue 26, item 7: permute-and-flip (McKenna and Sheldon 2020) on the exact samplers draws
    its exact distribution, which differs from the exponential mechanism's."""
    scores = np.array([0.0, 1.0, 2.0, 2.5, 4.0, -1.0])
    sens, eps, n = 2.0, 3.0, 4000
    p = _permute_and_flip_probabilities(scores, sens, eps)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert _permute_and_flip_probabilities([2.0, 0.0], 1.0, 1.0)[1] == pytest.approx(0.5 * math.exp(-1.0))
    rng = np.random.default_rng(7)
    budget = Budget.pure(n * eps)
    draws = np.array([permute_and_flip(scores, sens, eps, rng, budget=budget) for _ in range(n)])
    counts = np.bincount(draws, minlength=scores.size)
    assert stats.chisquare(counts, n * p).pvalue > 1e-3
    assert stats.chisquare(counts, n * exponential_probabilities(scores, sens, eps)).pvalue < 1e-6
    assert budget.spent == n * eps and {c.mechanism for c in budget.ledger} == {"pure"}


def test_permute_and_flip_with_a_secure_budget_never_touches_the_generator_given():
    """Issue 26, item 7: secure=True draws the order and the coins from the operating system."""
    rng = np.random.default_rng(11)
    state = rng.bit_generator.state
    budget = Budget.zcdp(10.0, secure=True)
    picks = {permute_and_flip([0.0, 0.1, 0.2], 1.0, 0.1, rng, budget=budget) for _ in range(60)}
    assert rng.bit_generator.state == state
    assert picks == {0, 1, 2}  # all nearly equally likely: the draws are random, not fixed
    assert budget.spent == pytest.approx(60 * 0.1 ** 2 / 2)


def test_permute_and_flip_handles_extreme_scores_and_validates():
    budget = Budget.pure(1e9)
    assert permute_and_flip([0.0, 1e300, -1e300], 1.0, 1.0, rng=0, budget=budget) == 1
    assert all(permute_and_flip([0.0, 1e-300], 1e-300, 100.0, rng=seed, budget=budget) == 1 for seed in range(5))
    b = Budget.pure(1.0)
    with pytest.raises(ValueError, match=r"scores must be finite"):
        permute_and_flip([1.0, np.inf], 1.0, 0.5, rng=0, budget=b)
    with pytest.raises(ValueError, match="sensitivity"):
        permute_and_flip([1.0], 0.0, 0.5, rng=0, budget=b)
    assert b.spent == 0.0  # invalid calls charge nothing


def test_exponential_handles_extreme_scores_exactly():
    budget = Budget.pure(1e9)
    # one candidate 1e300 ahead: the others have probability exp(-5e299), i.e. never
    assert exponential([0.0, 1e300, -1e300], 1.0, 1.0, rng=0, budget=budget) == 1
    # tiny differences still matter: 1e-300 apart, weights 1 : exp(50)
    assert exponential([0.0, 1e-300], 1e-300, 100.0, rng=0, budget=budget) == 1


finite_scores = st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=12)
rates = st.fractions(min_value=Fraction(1, 10**30), max_value=10**30).filter(lambda r: r > 0)


@settings(max_examples=300, deadline=None)
@given(scores=finite_scores, rate=rates, near=st.booleans())
def test_acceptance_whole_parts_are_exact_floors(scores, rate, near):
    """The float shortcut for the whole parts of exp(-rate * gap) never differs from exact
    arithmetic, also for gaps within rounding error of an integer (``near``)."""
    from ektelo_pgm.privacy.noise import _WHOLE_CAP, _acceptance_parts

    scores = np.array(scores, dtype=np.float64)
    if near:  # every gap an exact integer multiple of 1/rate, or one ulp from it
        rate = Fraction(1, 2**20) if rate > 2**40 else rate
        scores = np.array([float(Fraction(k) / rate) for k in range(len(scores))], dtype=np.float64)
        scores = scores + (scores * 2**-52) * np.resize([0, 1, -1], len(scores))
    whole, rest, den = _acceptance_parts(scores, rate)
    top = max(Fraction(float(v)) for v in scores)
    exact = [(top - Fraction(float(v))) * rate for v in scores]
    assert whole.dtype == np.int64
    assert whole.tolist() == [min(math.floor(g), _WHOLE_CAP) for g in exact]
    idx = np.arange(len(scores))
    assert [Fraction(int(r), den) for r in rest(idx)] == [g - int(w) for g, w in zip(exact, whole)]


def _exponential_by_exact_rejection(scores, sens, eps, seed):
    """The exponential mechanism by rejection on exact integers throughout (slow): propose every
    index uniformly, accept with Bernoulli(exp(-gap)) on the whole array; gaps over the common
    denominator of the 53-bit mantissas, as the implementation takes them."""
    exact = [Fraction(float(v)) for v in scores]
    shift = int(np.frexp(np.asarray(scores, dtype=np.float64))[1].min()) - 53
    rate = Fraction(eps) / (2 * Fraction(sens))
    den = (rate * Fraction(2) ** shift).denominator
    num = np.array([int((max(exact) - v) * rate * den) for v in exact], dtype=object)
    source = Source(seed)
    while True:
        proposals = source.below(len(num), len(num))
        accepted = np.flatnonzero(bernoulli_exp(source, num[proposals], den))
        if accepted.size:
            return int(proposals[accepted[0]])


@settings(max_examples=60, deadline=None)
@given(scores=finite_scores, sens=st.floats(1e-3, 1e3), eps=st.floats(1e-2, 1e2), seed=st.integers(0, 2**32))
def test_exponential_draws_what_exact_rejection_draws(scores, sens, eps, seed):
    """Deciding whole parts in int64 first changes no draw: the same seed picks the same index
    as rejection sampling with exact integers throughout."""
    budget = Budget.pure(1e9)
    assert exponential(scores, sens, eps, rng=seed, budget=budget) == \
        _exponential_by_exact_rejection(scores, sens, eps, seed)


def test_exponential_charges_and_validates():
    b = Budget.zcdp(1.0)
    i = exponential([1.0, 2.0], 1.0, 2.0, rng=0, budget=b, label="pick")
    assert i in (0, 1) and b.spent == 0.5 and b.ledger[0].label == "pick"
    with pytest.raises(ValueError, match=r"scores must be finite; entry \(1,\) is nan"):
        exponential([1.0, np.nan], 1.0, 1.0, rng=0, budget=b)
    with pytest.raises(ValueError, match="non-empty 1-D"):
        exponential([], 1.0, 1.0, rng=0, budget=b)
    with pytest.raises(ValueError, match="sensitivity"):
        exponential([1.0], 0.0, 1.0, rng=0, budget=b)
    with pytest.raises(ValueError, match="epsilon"):
        exponential([1.0], 1.0, -0.5, rng=0, budget=b)
    assert b.spent == 0.5  # invalid calls charge nothing


def test_refused_charge_releases_nothing_and_keeps_rng_state():
    b = Budget.pure(1.0)
    rng = np.random.default_rng(3)
    laplace(np.zeros(3), 1.0, 0.7, rng=rng, budget=b)
    state = rng.bit_generator.state
    for call in (lambda: laplace(np.zeros(3), 1.0, 0.31, rng=rng, budget=b),
                 lambda: exponential([0.0, 1.0], 1.0, 0.31, rng=rng, budget=b),
                 lambda: permute_and_flip([0.0, 1.0], 1.0, 0.31, rng=rng, budget=b)):
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
    b = Budget.zcdp(10.0)
    with pytest.raises(ValueError, match="answers must be finite"):
        laplace(answers, 1.0, 1.0, rng=0, budget=b)
    with pytest.raises(ValueError, match="answers must be finite"):
        gaussian(answers, 1.0, 1.0, rng=0, budget=b)
    assert b.spent == 0.0


def test_subnormal_epsilon_is_refused_before_anything_is_charged():
    """Issue 12 item 6: epsilon 1e-320 was charged and released +-inf."""
    b = Budget.pure(1.0)
    for call in (lambda: laplace([1.0], 1.0, 1e-320, rng=0, budget=b),
                 lambda: b.charge("pure", 1e-320), lambda: Budget.pure(1e-320)):
        with pytest.raises(ValueError, match="subnormal"):
            call()
    with pytest.raises(ValueError, match="too large"):
        laplace([1.0], 1e200, 1e-200, rng=0, budget=b)
    assert b.spent == 0.0 and not b.ledger


@pytest.mark.parametrize("notion", ["zcdp", "pure"])
def test_count_noise_charges_once_and_draws_the_law_gaussian_and_laplace_add(notion):
    """count_noise charges its budget once, before any draw, and its draws, in parts, are the
    noise gaussian (laplace) adds to counts from the same generator."""
    from ektelo_pgm.privacy import count_noise

    budget = Budget.zcdp(1.0) if notion == "zcdp" else Budget.pure(1.0)
    draw = count_noise(2.0, 0.25, np.random.default_rng(5), budget=budget, label="counts")
    assert [c.label for c in budget.ledger] == ["counts"] and budget.remaining == pytest.approx(0.75)
    parts = np.concatenate([draw(3), draw(0), draw(4)])
    again = Budget.zcdp(1.0) if notion == "zcdp" else Budget.pure(1.0)
    add = gaussian if notion == "zcdp" else laplace
    rng = np.random.default_rng(5)
    assert np.array_equal(parts[:3], add(np.zeros(3), 2.0, 0.25, rng, budget=again))
    assert np.array_equal(parts[3:], add(np.zeros(4), 2.0, 0.25, rng, budget=again))
    assert len(budget.ledger) == 1
