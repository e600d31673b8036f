"""Noisy sufficient statistics (accounting, noise scale) and the simplex projection."""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ektelo_pgm import Budget, BudgetExceededError, Dataset, Domain
from ektelo_pgm.learning import noisy_statistics, noisy_total, project_simplex


def brute_simplex(v: np.ndarray, total: float) -> np.ndarray:
    """The closest point of the simplex by trying every support set (the QP's active sets)."""
    best, best_distance = None, np.inf
    n = v.size
    for size in range(1, n + 1):
        for support in itertools.combinations(range(n), size):
            support = list(support)
            x = np.zeros(n)
            x[support] = v[support] - (v[support].sum() - total) / size
            if x.min() >= -1e-12:
                distance = float(np.sum((x - v) ** 2))
                if distance < best_distance:
                    best, best_distance = x, distance
    return best


@settings(max_examples=150, deadline=None)
@given(arrays(np.float64, st.integers(1, 8), elements=st.floats(-5, 5)), st.sampled_from([1.0, 0.3, 7.0]))
def test_simplex_projection_is_the_brute_force_qp(v, total):
    x = project_simplex(v, total)
    assert x.min() >= 0
    assert x.sum() == pytest.approx(total, abs=1e-9)
    np.testing.assert_allclose(x, brute_simplex(v, total), atol=1e-9)


def test_simplex_projection_keeps_shape_and_refuses_nan():
    table = np.array([[0.5, -0.2], [0.9, 0.1]])
    assert project_simplex(table).shape == (2, 2)
    with pytest.raises(ValueError, match="NaN"):
        project_simplex(np.array([0.1, np.nan]))


def small_data():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    records = np.random.default_rng(0).integers(0, [2, 3, 2], size=(500, 3))
    return Dataset(records, domain)


def test_laplace_statistics_charge_exactly_and_use_scale_cliques_over_epsilon():
    data = small_data()
    cliques = [("a", "b"), ("c", "b"), ("a",)]
    budget = Budget.pure(0.7)
    release = noisy_statistics(data, cliques, 0.3, budget, rng=1)
    assert budget._spent == Fraction("0.3")
    assert [c.parameter for c in budget.ledger] == [0.3]
    for m, cl in zip(release, cliques):
        assert m.attrs == cl
        assert m.std == pytest.approx(math.sqrt(2) * len(cliques) / 0.3, rel=1e-2)
    rest = noisy_statistics(data, cliques, None, budget, rng=1)
    assert budget._spent == Fraction("0.7")
    assert rest[0].std == pytest.approx(math.sqrt(2) * 3 / 0.4, rel=1e-2)
    with pytest.raises(BudgetExceededError):
        noisy_statistics(data, cliques, 0.1, budget, rng=1)
    assert len(budget.ledger) == 2


def test_laplace_noise_is_unbiased_with_the_right_spread():
    data = small_data()
    cliques = [("a", "b"), ("b", "c")]
    exact = np.concatenate([data.marginal(cl).ravel() for cl in cliques])
    draws = np.array([np.concatenate([m.y for m in noisy_statistics(data, cliques, 1.0, rng=seed)])
                      for seed in range(800)])
    noise = draws - exact
    scale = 2.0  # |C| / epsilon
    # mean: standard error sqrt(2) * 2 / sqrt(800) = 0.1 per cell; variance 2 b^2 = 8
    assert np.abs(noise.mean(axis=0)).max() < 0.5
    np.testing.assert_allclose(noise.var(axis=0), 2 * scale**2, rtol=0.25)
    assert np.array_equal(draws[5], np.concatenate([m.y for m in noisy_statistics(data, cliques, 1.0, rng=5)]))


def test_noisy_total_is_the_mean_of_the_table_sums():
    data = small_data()
    release = noisy_statistics(data, [("a",), ("b", "c")], 2.0, rng=3)
    assert noisy_total(release) == pytest.approx(np.mean([m.y.sum() for m in release]))
