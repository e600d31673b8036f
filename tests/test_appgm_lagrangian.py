"""APPGM's augmented Lagrangian (ektelo_pgm.pgm.appgm.lagrangian) against dense and SLSQP references."""
import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st
from scipy.optimize import minimize

from ektelo_pgm.domain import Domain
from ektelo_pgm.operators.reconstruct import APPGM, PGM
from ektelo_pgm.pgm.appgm import MeasuredCliques
from ektelo_pgm.pgm.appgm.estimation import LBFGS_CELLS, resolve_method
from ektelo_pgm.pgm.appgm.lagrangian import LocalConstraints, lower_bound, stationary_multipliers, working_mb
from ektelo_pgm.pgm.factor import Factor
from ektelo_pgm.pgm.region_graph import RegionGraph
from test_appgm import DOMAIN, LOOPY, correlated_data, l2_loss, noisy, tree_structured

CLIQUES = LOOPY + [("B", "D", "E")]


def dense_constraints(graph, total):
    """``A`` and ``b`` of the local polytope from Factor marginals, one column per cell."""
    columns = []
    for j in range(graph.cells):
        unit = np.zeros(graph.cells)
        unit[j] = 1.0
        rows = []
        for p, c in graph.edges:
            parent = Factor(graph.domain.project(graph.regions[p]), graph.segment(unit, p))
            rows.append(parent.project(graph.regions[c]).values.ravel() - graph.segment(unit, c).ravel())
        rows.append([graph.segment(unit, t).sum() for t in range(len(graph.regions)) if not graph.parents[t]])
        columns.append(np.concatenate(rows))
    a = np.array(columns).T
    tops = sum(1 for parents in graph.parents if not parents)
    return a, np.concatenate([np.zeros(a.shape[0] - tops), np.full(tops, total)])


@pytest.fixture(scope="module")
def problem():
    """The loopy set of tests/test_appgm.py (std 30) and its optimum over L(G) by SLSQP."""
    data = correlated_data(DOMAIN, seed=4)
    measurements = noisy(data, CLIQUES, std=30.0, seed=5)
    graph = RegionGraph.build("saturated", DOMAIN, CLIQUES)
    objective = MeasuredCliques(graph, measurements)
    total = float(len(data))
    a, b = dense_constraints(graph, total)
    u, s, vt = np.linalg.svd(a, full_matrices=False)  # independent rows for SLSQP
    rank = int(np.sum(s > 1e-10 * s[0]))
    rows, rhs = s[:rank, None] * vt[:rank], u[:, :rank].T @ b
    start = np.concatenate([np.full(size, total / size) for size in graph.sizes])
    ref = minimize(objective, start, jac=True, method="SLSQP", bounds=[(0, None)] * graph.cells,
                   constraints=[{"type": "eq", "fun": lambda t: rows @ t - rhs, "jac": lambda t: rows}],
                   options={"maxiter": 500, "ftol": 1e-12})
    assert np.abs(a @ ref.x - b).max() < 1e-6 * total  # its loss settles; its own test of the step does not
    return measurements, objective, total, ref.fun, ref.x


@pytest.mark.parametrize("kind", ["saturated", "factor"])
def test_constraints_and_their_adjoint_match_the_dense_matrix(kind):
    graph = RegionGraph.build(kind, DOMAIN, CLIQUES)
    constraints = LocalConstraints(graph, 123.0)
    a, b = dense_constraints(graph, 123.0)
    rng = np.random.default_rng(0)
    tau, lam = rng.random(graph.cells), rng.normal(size=a.shape[0])
    np.testing.assert_allclose(constraints(tau), a @ tau - b, atol=1e-12)
    np.testing.assert_allclose(constraints.adjoint(lam), a.T @ lam, atol=1e-12)
    data = correlated_data(DOMAIN, n=123)
    truth = np.concatenate([data.marginal(r).ravel() for r in graph.regions])
    np.testing.assert_allclose(constraints(truth), 0.0, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spread=st.floats(1e-3, 1e3))
def test_lower_bound_holds_for_any_point_and_multipliers(problem, seed, spread):
    measurements, objective, total, best, _ = problem
    constraints = LocalConstraints(objective.graph, total)
    rng = np.random.default_rng(seed)
    tau = total * rng.dirichlet(np.ones(objective.graph.cells)) * rng.uniform(0.5, 2.0)
    value, grad = objective(tau)
    lam = spread * rng.normal(size=constraints.rows)
    assert lower_bound(constraints, tau, value, grad, lam) <= best * (1 + 1e-9)


def test_lower_bound_is_tight_at_the_optimum(problem):
    _, objective, total, best, optimum = problem
    constraints = LocalConstraints(objective.graph, total)
    value, grad = objective(optimum)
    bound = lower_bound(constraints, optimum, value, grad, stationary_multipliers(constraints, optimum, grad))
    assert best - 1e-4 * best <= bound <= best * (1 + 1e-9)


def test_augmented_reaches_the_optimum_over_the_local_polytope(problem):
    measurements, objective, total, best, _ = problem
    est = APPGM(method="augmented").reconstruct(DOMAIN, measurements, total=total)
    loss = objective(est.beliefs)[0]
    assert est.violation() < 1e-8 * total and est.beliefs.min() >= 0
    assert best * (1 - 1e-6) <= loss <= best * (1 + 1e-6)
    assert loss - best <= est.gap <= 1e-6 * loss and est.converged
    assert est.iterations == len(est.history) < 1000


def test_a_run_capped_too_low_reports_it(problem):
    measurements, objective, total, best, _ = problem
    est = APPGM(method="augmented", iters=5).reconstruct(DOMAIN, measurements, total=total)
    loss = objective(est.beliefs)[0]
    assert est.iterations <= 5 and not est.converged
    assert est.violation() < 1e-8 * total and loss - best <= est.gap


def test_warm_start_from_an_earlier_estimate(problem):
    measurements, objective, total, best, _ = problem
    earlier = APPGM(method="augmented").reconstruct(DOMAIN, measurements[:-1], total=total)
    cold = APPGM(method="augmented").reconstruct(DOMAIN, measurements, total=total)
    warm = APPGM(method="augmented").reconstruct(DOMAIN, measurements, total=total, warm_start=earlier)
    assert warm.history[0] < cold.history[0]
    assert objective(warm.beliefs)[0] <= best * (1 + 1e-6)


@pytest.mark.parametrize("cliques", [[("A", "B"), ("B", "C"), ("A", "C")], [("A", "B"), ("B", "C"), ("C", "D")]])
def test_default_on_large_graphs_is_no_worse_than_exact_pgm(cliques):
    """2-way marginals over attributes of size 20 in a triangle (1,280 cells with the fourth
    attribute) and a chain (1,240 cells, a junction tree): "auto" takes the augmented
    Lagrangian, which ends at most exact Private-PGM's loss, and its certified bound lies below
    that loss (the marginal polytope is inside the local polytope)."""
    domain = Domain(["A", "B", "C", "D"], [20, 20, 20, 20])
    data = correlated_data(domain, n=5000, seed=3)
    measurements = noisy(data, cliques, std=5.0, seed=2)
    graph = RegionGraph.build("saturated", domain, [m.attrs for m in measurements])
    assert graph.cells > LBFGS_CELLS and resolve_method("auto", "l2", graph) == "augmented"
    est = APPGM().reconstruct(domain, measurements, total=5000.0)
    objective = MeasuredCliques(est.graph, measurements)
    loss = objective(est.beliefs)[0]
    exact = PGM(iters=3000).reconstruct(domain, measurements, total=5000.0)
    exact_loss = objective(np.concatenate([exact.project(r).ravel() for r in est.graph.regions]))[0]
    assert loss <= exact_loss * (1 + 1e-6)
    assert loss - est.gap <= exact_loss
    assert est.violation() < 1e-8 * 5000


def test_memory_decides_between_the_methods():
    """Above ``max_mb`` the default falls back to L-BFGS where the polytope is exact and to the
    proximal loop elsewhere; asked for explicitly, the augmented Lagrangian refuses with the size."""
    domain = Domain(["A", "B", "C", "D"], [20, 20, 20, 20])
    loopy = RegionGraph.build("saturated", domain, [("A", "B"), ("B", "C"), ("A", "C")])
    tree = RegionGraph.build("saturated", domain, [("A", "B"), ("B", "C"), ("C", "D")])
    small = 0.5 * working_mb(loopy)
    assert resolve_method("auto", "l2", loopy, small) == "mirror"
    assert resolve_method("auto", "l2", tree, small) == "lbfgs"
    assert resolve_method("auto", "l1", loopy) == "mirror"
    data = correlated_data(domain, n=500)
    with pytest.raises(MemoryError, match=r"1,280 cells\) needs about .* MB, above the limit"):
        APPGM(method="augmented", max_mb=small).reconstruct(domain, noisy(data, [("A", "B"), ("B", "C"), ("A", "C")],
                                                                          5.0), total=500.0)


@pytest.mark.parametrize("seed", [0, 1, 3, 7])
def test_heterogeneous_noise_on_cycles(seed):
    """The cycles of tests/test_appgm.py (noise std from 1e-2 to 1e2, prefix queries, zero cells):
    within 1e-4 of exact Private-PGM's loss or below it, the gap bounding the distance to it
    (whose loss is at least the relaxation's optimum)."""
    domain, ms, total = tree_structured(seed, loopy=True)
    exact = l2_loss(domain, ms, PGM(iters=3000).reconstruct(domain, ms, total=total).project)
    est = APPGM(method="augmented").reconstruct(domain, ms, total=total)
    loss = l2_loss(domain, ms, est.project)
    assert loss <= exact * (1 + 1e-4) and est.gap >= loss - exact
    assert est.violation() < 1e-8 * total
