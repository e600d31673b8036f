"""HDMM as a mechanism with each reconstruction: its ledger replayed by hand, same seed same
output, near-noiseless recovery of the workload, the paper's workload by default."""
from fractions import Fraction

import numpy as np
import pytest

from ektelo_pgm import Dataset, Domain
from ektelo_pgm import matrix as mx
from ektelo_pgm.mechanisms.hdmm import HDMM
from ektelo_pgm.metrics import workload_error
from ektelo_pgm.operators import select
from ektelo_pgm.operators.measure import Laplace
from ektelo_pgm.operators.reconstruct import APPGM, PGM, LeastSquares, LocalLeastSquares
from ektelo_pgm.privacy import Budget
from ektelo_pgm.workload import Query, Workload, range_marginals

DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 4, 2])
WORKLOAD = Workload([Query(("a", "b", "c")), Query(("b", "c", "d"), mx.Kronecker([mx.Identity(3), mx.Prefix(4),
                                                                                   mx.Identity(2)]))])


def toy(n=500, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (2 * b + rng.integers(0, 2, n)) % 4
    d = (c + rng.integers(0, 2, n)) % 2
    return Dataset(np.stack([a, b, c, d], axis=1), DOMAIN)


def test_ledger_equals_a_replay_by_hand():
    data = toy()
    budget = Budget.pure(Fraction(1, 2))
    result = HDMM(WORKLOAD, estimator=LocalLeastSquares()).run(data, budget, rng=0)
    replay = Budget.pure(Fraction(1, 2))
    queries = select.HDMMMarginals(WORKLOAD).select(DOMAIN)
    assert [(q.attrs, q.weight) for q in queries] == [(q.attrs, q.weight) for q in result.queries]
    Laplace().measure(data, queries, replay, rng=0)
    assert [c.amount for c in result.charges] == [c.amount for c in replay.ledger]
    assert result.spent == Fraction(1, 2)


def test_gaussian_on_a_zcdp_budget():
    result = HDMM(WORKLOAD, noise="gaussian").run(toy(), Budget.zcdp(Fraction(1, 10)), rng=0)
    assert result.spent == Fraction(1, 10)
    assert [c.mechanism for c in result.charges] == ["gaussian"]


def test_same_seed_same_output():
    data = toy()
    one = HDMM(WORKLOAD, estimator=PGM(iters=50)).run(data, Budget.pure(1.0), rng=4)
    two = HDMM(WORKLOAD, estimator=PGM(iters=50)).run(data, Budget.pure(1.0), rng=4)
    for m1, m2 in zip(one.measurements, two.measurements):
        np.testing.assert_array_equal(m1.y, m2.y)
    np.testing.assert_array_equal(one.estimate.project(("a", "b", "c")), two.estimate.project(("a", "b", "c")))


@pytest.mark.parametrize("reconstruct", [LeastSquares(), LocalLeastSquares(), PGM(iters=500), APPGM(iters=300)])
def test_near_noiseless_answers_the_workload(reconstruct):
    data = toy()
    result = HDMM(WORKLOAD, estimator=reconstruct).run(data, Budget.pure(1e6), rng=0)
    assert workload_error(WORKLOAD, data, result.estimate) < 0.01


def test_default_workload_is_the_papers_range_marginals():
    data = toy()
    mech = HDMM(numeric=["c"], triples=2, workload_seed=5)
    expected = range_marginals(DOMAIN, ["c"], 2, rng=5)
    assert [q.attrs for q in mech.workload_for(data)] == [q.attrs for q in expected]
    with pytest.raises(ValueError, match="noise"):
        HDMM(noise="cauchy")
