"""An empirical privacy audit: releases on neighbouring datasets, many runs, and a
Clopper-Pearson lower bound on the epsilon they reveal, which must stay below the claim;
and Mironov's (2012) floating-point attack on the Laplace mechanism, which must find nothing.

Each audit fixes its distinguishing event before drawing, draws ``n`` releases on each
neighbour, and bounds ``P[event | D'] / P[event | D]`` from below at 99.9% confidence.  The
same bound must also be well above zero: an audit that cannot see the noise's own ratio
would pass a broken mechanism too.
"""
import math

import numpy as np
import pytest
from scipy import stats

from ektelo_pgm import Dataset, Domain
from ektelo_pgm.operators.measure import Laplace as LaplaceMeasure
from ektelo_pgm.operators import select
from ektelo_pgm.operators.least_squares import LeastSquares
from ektelo_pgm.plans import Plan
from ektelo_pgm.privacy import Budget, exponential, gaussian, laplace, zcdp_delta, zcdp_to_approx

CONFIDENCE = 0.999


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion at ``CONFIDENCE``."""
    alpha = 1 - CONFIDENCE
    lo = stats.beta.ppf(alpha / 2, hits, n - hits + 1) if hits > 0 else 0.0
    hi = stats.beta.ppf(1 - alpha / 2, hits + 1, n - hits) if hits < n else 1.0
    return lo, hi


def epsilon_lower_bound(event_d: np.ndarray, event_neighbour: np.ndarray, delta: float = 0.0) -> float:
    """Lower bound on epsilon from ``P[E | D'] <= exp(eps) P[E | D] + delta`` (event indicators)."""
    lo_neighbour, _ = clopper_pearson(int(event_neighbour.sum()), event_neighbour.size)
    _, hi_d = clopper_pearson(int(event_d.sum()), event_d.size)
    if lo_neighbour - delta <= 0:
        return 0.0
    return math.log((lo_neighbour - delta) / hi_d)


def test_laplace_audit():
    """Count 0 vs 1 (add/remove one record), epsilon 1, event ``release >= 1``: the
    discrete Laplace attains the ratio e exactly on this event."""
    n, eps = 100_000, 1.0
    budget = Budget.pure(2 * eps)
    d = laplace(np.zeros(n), 1.0, eps, rng=1, budget=budget, label="D: n releases of a count of 0")
    budget = Budget.pure(2 * eps)
    neighbour = laplace(np.ones(n), 1.0, eps, rng=2, budget=budget, label="D': n releases of a count of 1")
    bound = epsilon_lower_bound(d >= 1, neighbour >= 1)
    assert 0.9 < bound <= eps


def test_gaussian_audit():
    """Count 0 vs 1, rho 0.5 (sigma 1), event ``release >= 2``: the lower bound, net of the delta
    of the tight (epsilon, delta) conversion, stays below that epsilon."""
    n, rho, delta = 100_000, 0.5, 1e-3
    d = gaussian(np.zeros(n), 1.0, rho, rng=3, budget=Budget.zcdp(rho))
    neighbour = gaussian(np.ones(n), 1.0, rho, rng=4, budget=Budget.zcdp(rho))
    bound = epsilon_lower_bound(d >= 2, neighbour >= 2, delta)
    claimed = zcdp_to_approx(rho, delta)  # rho-zCDP promises (claimed, delta)-DP: 3.54
    assert zcdp_delta(rho, claimed) <= delta
    assert 1.5 < bound <= claimed


def test_exponential_mechanism_audit():
    """Two candidates whose scores (sensitivity 1) swap between neighbours, (0, 1) vs (1, 0),
    epsilon 1: the chance of picking the first moves by exactly exp(epsilon / 2)."""
    n, eps = 1500, 1.0
    budget = Budget.pure(4 * n * eps)
    rng = np.random.default_rng(5)
    d = np.array([exponential([0.0, 1.0], 1.0, eps, rng, budget=budget) for _ in range(n)])
    neighbour = np.array([exponential([1.0, 0.0], 1.0, eps, rng, budget=budget) for _ in range(n)])
    bound = epsilon_lower_bound(d == 0, neighbour == 0)
    assert 0.2 < bound <= eps


def test_end_to_end_plan_audit():
    """A whole plan (identity queries, Laplace with epsilon 1, least squares) on two datasets
    that differ by one record; event: the estimated count of the added record's cell >= 6."""
    domain = Domain(["a"], [2])
    d = Dataset(np.array([[0]] * 5 + [[1]] * 3), domain)
    neighbour = Dataset(np.array([[0]] * 6 + [[1]] * 3), domain)
    plan = Plan(select.Identity(), LaplaceMeasure(1.0), LeastSquares())
    rng = np.random.default_rng(6)
    n = 600

    def estimates(data):
        return np.array([plan.run(data, Budget.pure(1.0), rng).estimate.project(["a"])[0] for _ in range(n)])

    bound = epsilon_lower_bound(estimates(d) >= 5.5, estimates(neighbour) >= 5.5)
    assert 0.5 < bound <= 1.0


# ---------------------------------------------------------------- Mironov's floating-point attack


def _producible_by_laplace_from_zero(y: float, scale: float) -> bool:
    """Whether numpy's float Laplace sampler, which returns ``0 - scale*log(2 - 2U)`` or
    ``0 + scale*log(2U)`` for U a multiple of 2**-53, can return exactly ``y`` (Mironov 2012,
    sec. 4: invert the sampler and try the neighbouring grid points of U)."""
    if y > 0:
        centre = 1.0 - math.exp(-y / scale) / 2.0
    else:
        centre = math.exp(y / scale) / 2.0
    k = int(round(centre * 2 ** 53))
    for j in range(k - 3, k + 4):
        u = j / 2 ** 53
        if y > 0 and 0.5 <= u < 1.0 and -scale * math.log(2.0 - u - u) == y:
            return True
        if y <= 0 and 0.0 < u < 0.5 and scale * math.log(u + u) == y:
            return True
    return False


def mironov_unproducible(releases: np.ndarray, scale: float) -> int:
    """How many releases of a count of 1 the same mechanism can never produce from a count of 0.

    Integer releases: every integer is a possible release of any count (discrete noise has
    full support on the integers), so none.  Float releases: the attack above."""
    releases = np.asarray(releases)
    if releases.dtype.kind in "iu":
        return 0
    return sum(not _producible_by_laplace_from_zero(float(y), scale) for y in releases)


@pytest.mark.parametrize("eps", [1.0, 0.1, 0.01])
def test_mironov_attack_finds_nothing(eps):
    """Issue 12 item 1: on float Laplace noise 80% of the releases of a 1 could never come from a 0."""
    n = 20_000
    releases = laplace(np.ones(n), 1.0, eps, rng=7, budget=Budget.pure(eps))
    assert mironov_unproducible(releases, 1.0 / eps) == 0
    zeros = laplace(np.zeros(2000), 1.0, eps, rng=8, budget=Budget.pure(eps))
    assert mironov_unproducible(zeros, 1.0 / eps) == 0  # and no false alarm on the count of 0 itself
    # real-valued answers: every release lies on the same power-of-two grid whatever the answer
    real = laplace(np.full(n, 0.75), 1.0, eps, rng=9, budget=Budget.pure(eps), integer=False)
    step = 2.0 ** (math.floor(math.log2(1.0 / n)) - 30)
    assert np.array_equal(real / step, np.rint(real / step))


def test_the_attack_works_on_float_laplace_noise():
    """The attack is real: on numpy's float Laplace (the old sampler) it finds most releases."""
    rng = np.random.default_rng(10)
    releases = 1.0 + rng.laplace(0.0, 1.0, size=2000)
    assert mironov_unproducible(releases, 1.0) > 0.5 * releases.size
    assert mironov_unproducible(rng.laplace(0.0, 1.0, size=2000), 1.0) == 0  # no false positive
