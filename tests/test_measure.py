"""Measure operators: stacked sensitivity against dense brute force, budget charges, noise scale."""
import math
import re
from fractions import Fraction

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.linalg import LinearOperator

from ektelo_pgm import Dataset, Domain
from ektelo_pgm import matrix as mx
from ektelo_pgm.operators import measure
from ektelo_pgm.operators.measure import Gaussian, Laplace, stacked_sensitivity
from ektelo_pgm.workload import Query
from ektelo_pgm.privacy import Budget, BudgetExceededError, laplace_std
from conftest import dense_marginal

DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 4, 2])


def dense_stack(domain, queries):
    return np.vstack([q.weight * q.local(domain).dense() @ dense_marginal(domain, q.attrs) for q in queries])


cliques = st.lists(st.sampled_from(DOMAIN.attrs), min_size=0, max_size=3, unique=True).map(tuple)


@st.composite
def query_sets(draw):
    out = []
    for _ in range(draw(st.integers(1, 4))):
        attrs = draw(cliques)
        kind = draw(st.sampled_from(["marginal", "dense", "prefix"]))
        weight = draw(st.floats(0.2, 3.0))
        cells = DOMAIN.size(attrs)
        if kind == "marginal":
            out.append(Query(attrs, None, weight))
        elif kind == "dense":
            rows = draw(st.integers(1, 4))
            values = draw(st.lists(st.floats(-2, 2), min_size=rows * cells, max_size=rows * cells))
            out.append(Query(attrs, np.array(values).reshape(rows, cells), weight))
        else:
            out.append(Query(attrs, mx.Prefix(cells), weight))
    return out


@settings(max_examples=40, deadline=None)
@given(query_sets(), st.sampled_from([1, 2]))
def test_stacked_sensitivity_is_the_dense_max_column_norm(queries, p):
    A = dense_stack(DOMAIN, queries)
    expected = np.max(np.linalg.norm(A, ord=p, axis=0))
    assert stacked_sensitivity(DOMAIN, queries, p) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_small_elimination_limit_gives_the_sum_of_maxima(monkeypatch):
    rng = np.random.default_rng(0)
    queries = [Query(("a", "b"), rng.normal(size=(2, 6))), Query(("b", "c"), rng.normal(size=(3, 12))),
               Query(("c", "a"), rng.normal(size=(2, 8)))]
    exact = np.max(np.abs(dense_stack(DOMAIN, queries)).sum(axis=0))
    assert stacked_sensitivity(DOMAIN, queries, 1) == pytest.approx(exact)
    monkeypatch.setattr(measure, "MAX_SENSITIVITY_CELLS", 1)
    bound = sum(np.abs(q.local(DOMAIN).dense()).sum(axis=0).max() for q in queries)
    assert stacked_sensitivity(DOMAIN, queries, 1) == pytest.approx(bound)
    assert bound >= exact


def data(n=500, seed=0):
    return Dataset(np.random.default_rng(seed).integers(0, DOMAIN.shape, size=(n, 4)), DOMAIN)


def test_laplace_charges_once_before_noise_with_the_stacked_sensitivity():
    queries = [Query(("a", "b")), Query(("c",), mx.Prefix(4), 2.0), Query(())]
    budget = Budget.pure(1.0)
    ms = Laplace(0.5).measure(data(), queries, budget, rng=0, label="all")
    sens = 1 + 2 * 4 + 1
    assert budget.ledger == [budget.ledger[0]] and budget.ledger[0].label == "all"
    assert (budget.ledger[0].mechanism, budget.ledger[0].amount) == ("pure", Fraction(1, 2))
    for q, m in zip(queries, ms):
        assert m.attrs == q.attrs and m.query is q.matrix
        assert m.std == pytest.approx(laplace_std(sens, 0.5) / q.weight)
        assert m.std == pytest.approx(math.sqrt(2) * sens / 0.5 / q.weight, rel=1e-3)
    assert ms[2].y.size == 1
    with pytest.raises(BudgetExceededError):
        Laplace(0.6).measure(data(), queries, budget, rng=0)
    assert len(budget.ledger) == 1


def test_noise_has_the_stated_std_and_no_bias():
    queries = [Query(("a", "b", "c", "d"))]
    truth = data().datavector()
    for mech, budget, draws in [(Laplace(2.0), Budget.pure(1e9), 400), (Gaussian(0.5), Budget.zcdp(1e9), 400)]:
        rng = np.random.default_rng(1)
        ys = np.array([mech.measure(data(), queries, budget, rng=rng)[0].y for _ in range(draws)])
        std = mech.measure(data(), queries, budget, rng=0)[0].std
        assert np.std(ys - truth) == pytest.approx(std, rel=0.03)
        assert abs(np.mean(ys - truth)) < 4 * std / math.sqrt(ys.size)


def test_gaussian_needs_zcdp_and_spends_all_that_remains_by_default():
    with pytest.raises(ValueError, match="cannot be charged to a pure budget"):
        Gaussian(0.1).measure(data(), [Query(("a",))], Budget.pure(1.0), rng=0)
    budget = Budget.zcdp(0.3)
    budget.spend(0.1)
    ms = Gaussian().measure(data(), [Query(("a",)), Query(("b",))], budget, rng=0)
    assert budget.remaining == 0 and budget.ledger[-1].amount == Fraction(2, 10)
    assert ms[0].std == pytest.approx(math.sqrt(2) / math.sqrt(2 * 0.2))
    laplace_on_zcdp = Budget.zcdp(0.5)
    Laplace().measure(data(), [Query(("a",))], laplace_on_zcdp, rng=0)
    assert laplace_on_zcdp.ledger[0].parameter == pytest.approx(1.0) and laplace_on_zcdp.remaining >= 0
    with pytest.raises(TypeError, match="the budget must be a Budget"):
        Laplace(1.0).measure(data(), [Query(("a",))], None, rng=0)
    with pytest.raises(ValueError, match="positive and finite"):
        Laplace(-1.0)
    with pytest.raises(ValueError, match="no queries"):
        Laplace(1.0).measure(data(), [], Budget.pure(1.0), rng=0)


def test_weighted_queries_rescale_answers_and_identical_seeds_repeat():
    queries = [Query(("a",), None, 4.0), Query(("b",), None, 1.0)]
    first = Laplace(1.0).measure(data(), queries, Budget.pure(1.0), rng=7)
    again = Laplace(1.0).measure(data(), queries, Budget.pure(1.0), rng=7)
    for m, n in zip(first, again):
        np.testing.assert_array_equal(m.y, n.y)
    assert first[0].std * 4 == pytest.approx(first[1].std)
    huge = Laplace(1e9).measure(data(), queries, Budget.pure(1e9), rng=0)
    np.testing.assert_allclose(huge[0].y, data().marginal(("a",)), atol=1e-6)


def test_a_custom_query_matrix_is_measured_with_its_exact_sensitivity():
    rng = np.random.default_rng(3)
    array = rng.normal(size=(5, 6))
    custom = LinearOperator((5, 6), matvec=lambda x: array @ x, rmatvec=lambda y: array.T @ y, dtype=float)
    (m,) = Laplace(1.0).measure(data(), [Query(("b", "d"), custom)], Budget.pure(1.0), rng=0)
    assert m.std == pytest.approx(math.sqrt(2) * np.abs(array).sum(axis=0).max(), rel=1e-6)
    huge = Laplace(1e9).measure(data(), [Query(("b", "d"), custom)], Budget.pure(1e9), rng=0)[0]
    np.testing.assert_allclose(huge.y, array @ data().marginal(("b", "d")).ravel(), atol=1e-6)


@pytest.mark.parametrize("shape,mb", [((50_000, 10_000), "3,814.7 MB"), ((10 ** 30, 10 ** 30), "7.63e+54 MB")])
def test_a_measurement_on_a_huge_domain_is_refused_early_with_its_size(shape, mb):
    """Issue 12 item 6: 5e8 and 1e60 cells died in numpy allocation inside the sensitivity step."""
    domain = Domain(["a", "b"], list(shape))
    budget = Budget.pure(1.0)
    with pytest.raises(MemoryError, match=re.escape(mb)):
        Laplace(1.0).measure(Dataset(np.zeros((3, 2), dtype=np.int64), domain), [Query(("a", "b"))], budget)
    assert budget.spent == 0.0
