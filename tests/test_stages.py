"""Every operator implements its stage's contract (same parameters, same defaults), and the
reconstructions honour warm_start and callback as their docstrings say."""
import inspect

import numpy as np
import pytest

from ektelo_pgm import Budget, Domain
from ektelo_pgm import matrix as mx
from ektelo_pgm import stages
from ektelo_pgm.operators import select
from ektelo_pgm.operators.least_squares import weighted_system
from ektelo_pgm.operators.measure import Gaussian, Laplace
from ektelo_pgm.operators.reconstruct import (APPGM, PGM, LeastSquares, LocalLeastSquares, MultiplicativeWeights,
                                              NonNegativeLeastSquares)
from ektelo_pgm.workload import Query
from test_adaptive import toy

DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])
RECONSTRUCTIONS = [LeastSquares(), LocalLeastSquares(), NonNegativeLeastSquares(), MultiplicativeWeights(iters=300),
                   PGM(iters=300), APPGM(iters=300)]


def protocol_parameters(protocol, method):
    return list(inspect.signature(getattr(protocol, method)).parameters.values())[1:]


def follows(operator, protocol, method):
    """The operator's method takes the protocol's parameters, in order, with the same defaults;
    anything more is keyword-only or has a default."""
    ours = list(inspect.signature(getattr(operator, method)).parameters.values())
    theirs = protocol_parameters(protocol, method)
    assert [(p.name, p.default) for p in ours[:len(theirs)]] == [(p.name, p.default) for p in theirs]
    assert all(p.default is not inspect.Parameter.empty for p in ours[len(theirs):])
    assert isinstance(operator, protocol)


@pytest.mark.parametrize("operator", RECONSTRUCTIONS, ids=lambda op: type(op).__name__)
def test_every_reconstruction_follows_the_protocol(operator):
    follows(operator, stages.Reconstruct, "reconstruct")


def test_selections_and_measurements_follow_the_protocols():
    for operator in [select.Identity(), select.Total(), select.Marginals([("a",)]), select.KWayMarginals(2),
                     select.Workload([("a", "b")]), select.HB("c"), select.HDMMMarginals([("a", "b")])]:
        follows(operator, stages.Select, "select")
    follows(select.WorstApproximated([("a", "b")]), stages.PrivateSelect, "select")
    for operator in [Laplace(1.0), Gaussian(1.0)]:
        assert isinstance(operator, stages.Measure)
        names = [p.name for p in protocol_parameters(stages.Measure, "measure")]
        assert list(inspect.signature(operator.measure).parameters)[:len(names)] == names


def measurements(seed=0):
    data = toy()
    queries = [Query(("a", "b")), Query(("b", "c")), Query(("c",), mx.Prefix(4))]
    return data, Laplace(1.0).measure(data, queries, Budget.pure(1.0), rng=seed)


def loss(ms, estimate):
    A, b = weighted_system(DOMAIN, ms)
    residual = A @ estimate.project(DOMAIN.attrs).ravel() - b
    return 0.5 * float(residual @ residual)


@pytest.mark.parametrize("operator", RECONSTRUCTIONS, ids=lambda op: type(op).__name__)
def test_callbacks_report_the_loss_and_warm_starts_are_taken(operator):
    data, ms = measurements()
    seen = []
    estimate = operator.reconstruct(DOMAIN, ms, total=len(data), callback=lambda t, value: seen.append((t, value)))
    assert seen and all(np.isfinite(v) for _, v in seen)
    again = operator.reconstruct(DOMAIN, ms, total=len(data), warm_start=estimate)
    assert again.domain == DOMAIN and again.total == pytest.approx(len(data), rel=1e-5)  # NNLS: approximately
    if isinstance(operator, (LeastSquares, LocalLeastSquares, NonNegativeLeastSquares)):
        assert len(seen) == 1 and seen[0][0] == 1  # one report after the solve; the start is not used
        np.testing.assert_array_equal(again.project(("a", "b")), estimate.project(("a", "b")))
    if isinstance(operator, LocalLeastSquares):
        cliques = {("a", "b"): [ms[0]], ("b", "c"): [ms[1]], ("c",): [ms[2]]}
        expected = 0.0
        for clique, group in cliques.items():
            A, b = weighted_system(DOMAIN.project(clique), group)
            residual = A @ estimate.project(clique).ravel() - b
            expected += 0.5 * float(residual @ residual)
        assert seen[0][1] == pytest.approx(expected, rel=1e-9)
    elif isinstance(operator, (LeastSquares, MultiplicativeWeights)):
        assert seen[-1][1] == pytest.approx(loss(ms, estimate), rel=1e-9)
    if isinstance(operator, MultiplicativeWeights):
        assert [t for t, _ in seen] == list(range(estimate.iterations + 1)) and estimate.iterations <= operator.iters
        values = [v for _, v in seen]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(values, values[1:]))  # the default step decreases it


def test_multiplicative_weights_sums_the_factors_losses():
    data, ms = measurements()
    disjoint = [m for m in ms if m.attrs != ("b", "c")]  # groups {a, b} and {c}
    seen = []
    estimate = MultiplicativeWeights(iters=3).reconstruct(DOMAIN, disjoint, total=len(data),
                                                           callback=lambda t, v: seen.append(v))
    assert len(estimate.factors) == 2 and estimate.iterations == 3 and len(seen) == 4
    assert seen[-1] == pytest.approx(loss(disjoint, estimate), rel=1e-9)
