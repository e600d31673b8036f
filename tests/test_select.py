"""Select operators against brute-force references: trees, branching, HDMM's error, EM selection."""
import itertools
from fractions import Fraction

import numpy as np
import pytest
import scipy.optimize
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from ektelo_pgm import Dataset, Domain, VectorEstimate
from ektelo_pgm import matrix as mx
from ektelo_pgm.operators import select
from ektelo_pgm.workload import Query
from ektelo_pgm.privacy import Budget, BudgetExceededError, exponential_probabilities
from conftest import dense_marginal

DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])


class Custom(mx.Matrix):
    """A user query matrix with only shape, _matvec and _rmatvec."""

    def __init__(self, array):
        self.array = np.asarray(array, dtype=float)
        self.shape = self.array.shape

    def _matvec(self, x):
        return self.array @ x

    def _rmatvec(self, y):
        return self.array.T @ y


def full_dense(domain, query):
    return query.weight * query.local(domain).dense() @ dense_marginal(domain, query.attrs)


# ---------------------------------------------------------------- queries and simple selectors


def test_query_validates_weight_and_columns():
    with pytest.raises(ValueError, match="weight must be positive"):
        Query(("a",), None, 0.0)
    with pytest.raises(ValueError, match=r"3 columns but the marginal has 2 cells"):
        Query(("a",), mx.Identity(3)).local(DOMAIN)
    with pytest.raises(KeyError, match="not in the domain"):
        Query(("zz",)).local(DOMAIN)
    assert Query("a").attrs == ("a",)


def test_simple_selectors():
    assert [q.attrs for q in select.Identity().select(DOMAIN)] == [("a", "b", "c")]
    assert [q.attrs for q in select.Identity(["c", "a"]).select(DOMAIN)] == [("c", "a")]
    total = select.Total().select(DOMAIN)[0]
    assert total.attrs == () and total.local(DOMAIN).shape == (1, 1)
    ks = select.KWayMarginals(2).select(DOMAIN)
    assert [q.attrs for q in ks] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert [q.attrs for q in select.KWayMarginals(1, ["c", "a"]).select(DOMAIN)] == [("a",), ("c",)]
    with pytest.raises(ValueError, match="k=4 but only 3 attributes"):
        select.KWayMarginals(4).select(DOMAIN)
    weighted = select.Marginals({("a", "b"): 2.0, "c": 0.5}).select(DOMAIN)
    assert [(q.attrs, q.weight) for q in weighted] == [(("a", "b"), 2.0), (("c",), 0.5)]
    work = select.Workload([("a", "b"), (("c",), mx.Prefix(4), 3.0)]).select(DOMAIN)
    assert work[1].weight == 3.0 and isinstance(work[1].matrix, mx.Prefix)
    with pytest.raises(ValueError, match="at least one entry"):
        select.Workload([])


# ---------------------------------------------------------------- hierarchical ranges


def brute_tree(n, b):
    """Levels of aligned ranges, widths b^(h-1) .. 1, built by visiting cells."""
    h = 1
    while b ** h < n:
        h += 1
    rows = []
    for level in range(h):
        width = b ** (h - 1 - level)
        for start in range(0, n, width):
            rows.append([1.0 if start <= c < start + width else 0.0 for c in range(n)])
    return np.array(rows), h


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 70), st.integers(2, 9))
def test_hierarchy_is_the_aligned_tree(n, b):
    tree = select.hierarchy(n, b)
    expected, h = brute_tree(n, b)
    np.testing.assert_array_equal(tree.dense(), expected)
    assert tree.sensitivity(1) == h == select.tree_levels(n, b)
    np.testing.assert_array_equal(tree.dense()[-n:], np.eye(n))


@pytest.mark.parametrize("n", [1, 2, 3, 17, 91, 256, 300])
def test_best_branching_is_the_exhaustive_minimum(n):
    cost = {b: (b - 1) * select.tree_levels(n, b) ** 3 for b in range(2, max(n, 2) + 1)}
    best = min(cost, key=lambda b: (cost[b], b))
    assert select.best_branching(n) == best


@pytest.mark.parametrize("n", [64, 128])
def test_the_chosen_tree_answers_all_ranges_better_than_the_identity(n):
    W = mx.AllRange(n).dense()

    def error(A):  # expected total squared error of least squares, up to the noise scale
        return A.sensitivity(1) ** 2 * np.trace(W.T @ W @ np.linalg.pinv(A.dense().T @ A.dense()))

    assert error(select.hierarchy(n, select.best_branching(n))) < 0.9 * error(mx.Identity(n))


def test_hb_on_two_attributes_is_a_kronecker_of_trees():
    (q,) = select.HB(["b", "c"], branching=2).select(DOMAIN)
    t3, t4 = brute_tree(3, 2)[0], brute_tree(4, 2)[0]
    np.testing.assert_array_equal(q.local(DOMAIN).dense(), np.kron(t3, t4))
    assert q.local(DOMAIN).sensitivity(1) == 2 * 2
    with pytest.raises(ValueError, match="at least 2"):
        select.hierarchy(5, 1)


# ---------------------------------------------------------------- HDMM marginal strategy


def brute_error(domain, workload, strategy, noise):
    """sigma^2 tr(W^T W pinv(A^T A)) with dense matrices (inf if W is outside A's row space)."""
    W = np.vstack([full_dense(domain, q) for q in workload])
    A = np.vstack([w * dense_marginal(domain, s) for s, w in strategy.items()])
    pinv = np.linalg.pinv(A.T @ A)
    if not np.allclose(W @ pinv @ (A.T @ A), W, atol=1e-8):
        return np.inf
    theta = np.array(list(strategy.values()))
    var = 2 * theta.sum() ** 2 if noise == "laplace" else 0.5 * np.sum(theta ** 2)
    return var * np.trace(W.T @ W @ pinv)


def small_workload():
    rng = np.random.default_rng(3)
    return [Query(("a", "c"), mx.Kronecker([mx.Identity(2), mx.Prefix(4)]), 2.0),
            Query(("b",)),
            Query(("c", "b"), Custom(rng.normal(size=(5, 12)))),
            Query(("a", "b"), mx.Weighted(mx.Kronecker([mx.Total(2), mx.AllRange(3)]), 0.5))]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.floats(0.1, 3.0), min_size=8, max_size=8), st.sampled_from(["laplace", "gaussian"]))
def test_hdmm_error_matches_dense_trace(weights, noise):
    subsets = [s for k in range(4) for s in itertools.combinations(DOMAIN.attrs, k)]
    strategy = dict(zip(subsets, weights))
    hdmm = select.HDMMMarginals(small_workload(), noise=noise)
    expected = brute_error(DOMAIN, small_workload(), strategy, noise)
    assert hdmm.expected_error(DOMAIN, strategy) == pytest.approx(expected, rel=1e-9)


def test_hdmm_error_is_infinite_when_the_workload_is_unsupported():
    hdmm = select.HDMMMarginals([("a", "b")])
    assert hdmm.expected_error(DOMAIN, {("a",): 1.0, ("b",): 1.0}) == np.inf
    assert brute_error(DOMAIN, [Query(("a", "b"))], {("a",): 1.0, ("b",): 1.0}, "laplace") == np.inf


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_hdmm_gradient_matches_finite_differences(noise):
    hdmm = select.HDMMMarginals(small_workload(), noise=noise)
    _, outside, contains, m = hdmm._problem(DOMAIN)
    theta = np.random.default_rng(0).uniform(0.5, 2.0, size=outside.size)
    err = scipy.optimize.check_grad(lambda t: hdmm._error(t, outside, contains, m),
                                    lambda t: hdmm._error(t, outside, contains, m, gradient=True)[1], theta)
    assert err <= 1e-5 * np.linalg.norm(hdmm._error(theta, outside, contains, m, gradient=True)[1])


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_hdmm_beats_simple_strategies_and_is_a_local_optimum(noise):
    workload = small_workload()
    hdmm = select.HDMMMarginals(workload, noise=noise)
    strategy = hdmm.optimize(DOMAIN)
    assert sum(strategy.values()) == pytest.approx(1.0)
    best = hdmm.expected_error(DOMAIN, strategy)
    assert best == pytest.approx(brute_error(DOMAIN, workload, strategy, noise), rel=1e-9)
    assert best <= hdmm.expected_error(DOMAIN, {("a", "b", "c"): 1.0})
    assert best <= hdmm.expected_error(DOMAIN, {q.attrs: 1.0 for q in workload})
    for attrs in strategy:  # no single weight change improves the error by more than 0.1%
        for factor in (0.8, 1.25):
            moved = dict(strategy, **{}) | {attrs: strategy[attrs] * factor}
            assert hdmm.expected_error(DOMAIN, moved) >= best * (1 - 1e-3)
    queries = hdmm.select(DOMAIN)
    assert {q.attrs: q.weight for q in queries} == strategy and all(q.matrix is None for q in queries)


def test_hdmm_restricts_to_the_downward_closure_for_many_attributes():
    domain = Domain([f"x{i}" for i in range(12)], [2] * 12)
    hdmm = select.HDMMMarginals([("x0", "x1", "x2"), ("x2", "x5")], max_subsets=1024)
    strategy = hdmm.optimize(domain)
    closure = {s for c in [("x0", "x1", "x2"), ("x2", "x5")] for k in range(4) for s in itertools.combinations(c, k)}
    assert set(strategy) <= closure
    assert hdmm.expected_error(domain, strategy) <= hdmm.expected_error(domain, {("x0", "x1", "x2"): 1, ("x2", "x5"): 1})


# ---------------------------------------------------------------- worst-approximated selection


def toy_data(seed=0, n=40):
    rng = np.random.default_rng(seed)
    return Dataset(rng.integers(0, DOMAIN.shape, size=(n, 3)), DOMAIN)


def candidates():
    return [Query(("a", "b")), Query(("c",), mx.Prefix(4), 2.0), Query(("b", "c"), Custom(np.arange(24.0).reshape(2, 12) - 5))]


@pytest.mark.parametrize("per_query", [False, True])
def test_scores_and_sensitivity_against_brute_force(per_query):
    data = toy_data()
    estimate = VectorEstimate(DOMAIN, np.random.default_rng(1).uniform(0, 4, size=DOMAIN.size()))
    selector = select.WorstApproximated(candidates(), per_query=per_query, penalty=0.5)
    x = data.datavector()
    rows = [np.abs(full_dense(DOMAIN, q) @ (x - estimate.vector)) for q in candidates()]
    if per_query:
        expected = np.concatenate(rows) - 0.5
    else:
        expected = np.array([r.sum() - 0.5 * r.size for r in rows])
    np.testing.assert_allclose(selector._scores(data, estimate), expected)
    # sensitivity: the largest change of any score when one record is added, over all cells
    changes = []
    for cell in np.ndindex(*DOMAIN.shape):
        bigger = Dataset(np.vstack([data.records, cell]), DOMAIN)
        changes.append(np.abs(selector._scores(bigger, estimate) - selector._scores(data, estimate)).max())
    assert max(changes) <= selector.sensitivity(DOMAIN) + 1e-9
    bound = [q.weight * (np.abs(full_dense(DOMAIN, q) / q.weight).max() if per_query
                         else np.abs(full_dense(DOMAIN, q) / q.weight).sum(axis=0).max()) for q in candidates()]
    assert selector.sensitivity(DOMAIN) == pytest.approx(max(bound))


def test_selection_charges_first_and_follows_the_exponential_mechanism():
    data = toy_data()
    estimate = VectorEstimate(DOMAIN, np.full(DOMAIN.size(), len(data) / DOMAIN.size()))
    selector = select.WorstApproximated(candidates())
    budget = Budget.pure(1.0)
    (chosen,) = selector.select(data, estimate, budget, 0.25, rng=0)
    assert [(c.mechanism, c.parameter, c.amount) for c in budget.ledger] == [("exponential", 0.25, 0.25)]
    assert chosen in selector.candidates
    probs = exponential_probabilities(selector._scores(data, estimate), selector.sensitivity(DOMAIN), 0.25)
    rng = np.random.default_rng(5)
    plenty = Budget.pure(3000 * 0.25)
    draws = [selector.candidates.index(selector.select(data, estimate, plenty, 0.25, rng=rng)[0]) for _ in range(3000)]
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / 3000, probs, atol=0.03)
    with pytest.raises(BudgetExceededError):
        selector.select(data, estimate, budget, 0.8, rng=0)
    assert len(budget.ledger) == 1


def test_per_query_selection_returns_the_row_and_huge_epsilon_picks_the_worst():
    data = toy_data()
    estimate = VectorEstimate(DOMAIN, np.random.default_rng(2).uniform(0, 4, size=DOMAIN.size()))
    selector = select.WorstApproximated(candidates(), per_query=True)
    scores = selector._scores(data, estimate)
    assert np.sum(scores == scores.max()) == 1
    (chosen,) = selector.select(data, estimate, Budget.pure(1e6), 1e6, rng=0)
    worst = int(np.argmax(scores))
    sizes = np.cumsum([0] + [q.local(DOMAIN).shape[0] for q in candidates()])
    owner = int(np.searchsorted(sizes, worst, side="right") - 1)
    source = candidates()[owner]
    assert chosen.attrs == source.attrs and chosen.weight == source.weight
    np.testing.assert_allclose(chosen.local(DOMAIN).dense()[0], source.local(DOMAIN).dense()[worst - sizes[owner]])


def test_k_selections_are_distinct_sequential_exponential_mechanisms_within_the_amount():
    """k choices: k exponential mechanisms over the candidates left, each spending 1/k of the
    amount (exactly, on a zCDP budget too), the first distributed as a single choice."""
    data = toy_data()
    estimate = VectorEstimate(DOMAIN, np.full(DOMAIN.size(), len(data) / DOMAIN.size()))
    budget = Budget.zcdp(Fraction(1, 3))
    chosen = select.WorstApproximated(candidates(), k=3).select(data, estimate, budget, Fraction(1, 3), rng=0)
    assert len({q.attrs for q in chosen}) == 3 and 0 <= budget.remaining < 1e-12
    assert [c.label for c in budget.ledger] == [f"select worst approximated ({i} of 3)" for i in (1, 2, 3)]
    assert sum(c.amount for c in budget.ledger) <= Fraction(1, 3)
    assert all(c.amount <= Fraction(1, 9) and float(c.amount) == pytest.approx(1 / 9) for c in budget.ledger)
    single = select.WorstApproximated(candidates())
    pair = select.WorstApproximated(candidates(), k=2)
    rng = np.random.default_rng(6)
    firsts = [pair.candidates.index(pair.select(data, estimate, Budget.pure(1.0), 0.5, rng)[0]) for _ in range(3000)]
    probs = exponential_probabilities(single._scores(data, estimate), single.sensitivity(DOMAIN), 0.25)
    np.testing.assert_allclose(np.bincount(firsts, minlength=3) / 3000, probs, atol=0.03)
    with pytest.raises(ValueError, match="k=4 but only 3 candidates"):
        select.WorstApproximated(candidates(), k=4).select(data, estimate, Budget.pure(1.0), 1.0, rng=0)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        select.WorstApproximated(candidates(), k=0)
