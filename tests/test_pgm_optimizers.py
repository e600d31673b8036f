"""The optimisers of pgm/optimizers.py run on every oracle of the Oracle protocol and agree where
the oracles' polytopes agree (a tree-shaped set of cliques: local polytope = marginal polytope)."""
import numpy as np
import pytest

from ektelo_pgm.convergence import StoppingRule
from ektelo_pgm.domain import Domain
from ektelo_pgm.matrix import Prefix
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.pgm.appgm import ConvexGBP, RegionGraphOracle, measured_cliques
from ektelo_pgm.pgm.loss import Objective
from ektelo_pgm.pgm.inference import MarginalOracle
from ektelo_pgm.pgm.optimizers import Oracle, dual_averaging, mirror_descent, quasi_newton

DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 2, 4])
TOTAL = 1000.0


def chain_measurements(seed=0):
    """A chain of 2-way marginals (one by prefix queries) of a random table, noise std 1 to 5."""
    rng = np.random.default_rng(seed)
    table = rng.dirichlet(np.ones(DOMAIN.size())).reshape(DOMAIN.shape) * TOTAL
    ms = []
    for i, c in enumerate([("a", "b"), ("b", "c"), ("c", "d")]):
        axes = tuple(j for j, a in enumerate(DOMAIN.attrs) if a not in c)
        x = table.sum(axis=axes).ravel()
        query = Prefix(x.size) if i == 2 else None
        y = x if query is None else query @ x
        ms.append(Measurement(c, y + rng.normal(0, 1.0 + 2 * i, y.size), 1.0 + 2 * i, query=query))
    return ms


def oracles(ms):
    """``(oracle, objective)`` of the junction tree and of the tree region graph (CONVEX-GBP)."""
    exact = MarginalOracle(DOMAIN, [m.attrs for m in ms])
    cliques = measured_cliques(DOMAIN, ms, "tree", method="lbfgs")
    relaxed = RegionGraphOracle(cliques, ConvexGBP(cliques.graph), np.zeros(cliques.graph.cells))
    return [(exact, Objective(exact, ms)), (relaxed, cliques.objective)]


def test_both_engines_implement_the_protocol():
    for oracle, objective in oracles(chain_measurements()):
        assert isinstance(oracle, Oracle)
        mu = oracle.marginals(np.zeros(oracle.size), TOTAL)
        assert mu.shape == (oracle.size,) and np.isclose(mu.sum(), 3 * TOTAL)  # three cliques, counts
        value, grad = objective(mu)
        assert oracle.gap(mu, grad, TOTAL, 1e-3) >= 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_every_optimiser_runs_on_every_oracle_and_lbfgs_finds_one_optimum(seed):
    ms = chain_measurements(seed)
    found = []
    for oracle, objective in oracles(ms):
        start = objective(oracle.marginals(np.zeros(oracle.size), TOTAL))[0]
        for run in (mirror_descent, dual_averaging):
            theta, rule = run(oracle, objective, TOTAL, np.zeros(oracle.size), iters=50)
            assert rule.iterations == 50 and rule.loss < start
            assert rule.loss == pytest.approx(objective(oracle.marginals(theta, TOTAL))[0], rel=1e-9)
        theta, rule = quasi_newton(oracle, objective, TOTAL, np.zeros(oracle.size), 500, StoppingRule(1e-6),
                                   scaling=False)
        found.append(rule)
        assert getattr(oracle, "_work", None) is None  # the junction tree's scratch is freed after each run
    exact, relaxed = found
    assert exact.gap <= 1e-5 * exact.loss  # the junction tree's gap is tight: certified near the optimum
    assert relaxed.loss == pytest.approx(exact.loss, rel=1e-6) and relaxed.gap >= relaxed.loss - exact.loss
