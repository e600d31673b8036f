"""The contract every mechanism keeps (issue 28): it spends within its budget, the budget's
ledger is the result's charges, the same seed gives the same output, its settings read back
(``Cls(**m.get_params())`` is configured as ``m``) and its reconstruction is ``estimator=``."""
import itertools
import json

import numpy as np
import pytest

from ektelo_pgm import Budget, Dataset, Domain
from ektelo_pgm.mechanisms import AIM, GEM, HDMM, MST, MWEM, PEP, PMW, DualQuery, PrivBayes, RAPSoftmax
from ektelo_pgm.operators.least_squares import LocalLeastSquares
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights
from ektelo_pgm.operators.reconstruct import APPGM, PGM
from ektelo_pgm.params import as_data

DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 4, 2])
PAIRS = list(itertools.combinations(DOMAIN.attrs, 2))
try:
    import torch  # noqa: F401
except ImportError:  # absent, or installed but failing to load
    torch = None
TORCH = pytest.mark.skipif(torch is None, reason="GEM and RAP-softmax need torch (not installed or does not load)")
PURE = lambda: Budget.pure(1.0)  # noqa: E731
PUBLIC = lambda: Budget.pure(1.0, neighbours="substitute")  # noqa: E731
ZCDP = lambda: Budget.zcdp(0.5)  # noqa: E731

CASES = {
    "MWEM": (lambda: MWEM(PAIRS, rounds=2), PURE),
    "MWEM+PGM": (lambda: MWEM(PAIRS, rounds=2, estimator=PGM(iters=20)), PURE),
    "PrivBayes": (lambda: PrivBayes(), PUBLIC),
    "PrivBayes+PGM": (lambda: PrivBayes(estimator=PGM(iters=20)), PUBLIC),
    "HDMM": (lambda: HDMM(PAIRS), PURE),
    "HDMM+LLS": (lambda: HDMM(PAIRS, estimator=LocalLeastSquares()), PURE),
    "DualQuery": (lambda: DualQuery(PAIRS, rounds=3, samples=3), PUBLIC),
    "DualQuery+PGM": (lambda: DualQuery(PAIRS, rounds=3, samples=3, estimator=PGM(iters=20)), PUBLIC),
    "PEP": (lambda: PEP(PAIRS, rounds=2), ZCDP),
    "PEP+PGM": (lambda: PEP(PAIRS, rounds=2, estimator=PGM(iters=20)), ZCDP),
    "PMW": (lambda: PMW(PAIRS, rounds=2), ZCDP),
    "PMW+MW": (lambda: PMW(PAIRS, rounds=2, estimator=MultiplicativeWeights(iters=20)), ZCDP),
    "GEM": (lambda: GEM(PAIRS, rounds=2, hidden=(8,), embedding=4, batch=8, max_steps=5), ZCDP),
    "RAP-softmax": (lambda: RAPSoftmax(PAIRS, rounds=2, k=2, rows=8, steps=5), ZCDP),
    "AIM": (lambda: AIM(PAIRS, rounds=8, iters=10, final_iters=10), ZCDP),
    "AIM+APPGM": (lambda: AIM(PAIRS, rounds=8, estimator=APPGM(iters=10), iters=10, final_iters=10), ZCDP),
    "MST": (lambda: MST(iters=20), ZCDP),
    "MST+APPGM": (lambda: MST(estimator=APPGM(iters=20)), ZCDP),
}
NEEDS_TORCH = {"GEM", "RAP-softmax"}


def data() -> Dataset:
    rng = np.random.default_rng(0)
    records = rng.integers(0, 2, size=(400, 4))
    records[:, 1] = (records[:, 0] + rng.integers(0, 2, 400)) % 3
    records[:, 2] = (records[:, 1] + records[:, 3]) % 4
    return Dataset(records, DOMAIN)


def output(result) -> list:
    return [result.estimate.project(list(c)).tolist() for c in PAIRS] + [(c.label, c.amount) for c in result.charges]


@pytest.mark.parametrize("name", [pytest.param(n, marks=TORCH) if n in NEEDS_TORCH else n for n in CASES])
def test_mechanism_contract(name):
    make, budget_for = CASES[name]
    budget = budget_for()
    result = make().run(data(), budget, rng=3)
    assert result.spent <= budget.total * (1 + 1e-12)
    assert budget.ledger == result.charges
    again = make().run(data(), budget_for(), rng=3)
    assert output(again) == output(result)
    mechanism = make()
    params = mechanism.get_params()
    assert "estimator" in params
    assert as_data(type(mechanism)(**params).get_params()) == as_data(params)
    json.dumps(as_data(params))  # plain data


@pytest.mark.parametrize("name", list(CASES))
def test_settings_read_back_without_running(name):
    """GEM and RAP-softmax included: building them needs no torch."""
    mechanism = CASES[name][0]()
    params = mechanism.get_params()
    assert as_data(type(mechanism)(**params).get_params()) == as_data(params)


def test_settings_are_kept_as_given_and_nested_estimators_read_back():
    mechanism = AIM(PAIRS, max_mb=12, select_fraction=0.2, estimator=APPGM(iters=7, region_graph="factor"))
    assert (mechanism.max_mb, mechanism.select_fraction, mechanism.workload) == (12, 0.2, PAIRS)
    settings = as_data(mechanism.get_params())
    assert settings["estimator"] == {"class": "ektelo_pgm.operators.reconstruct.APPGM",
                                     "params": as_data(APPGM(iters=7, region_graph="factor").get_params())}
    assert settings["workload"] == [list(p) for p in PAIRS]


def test_aim_limits_the_estimators_own_model_size(monkeypatch):
    """With APPGM, AIM's size limit is the region graph's (``model_mb``), not a junction tree's."""
    sizes = []
    original = APPGM.model_mb

    def model_mb(self, domain, cliques):
        sizes.append(original(self, domain, cliques))
        return sizes[-1]

    monkeypatch.setattr(APPGM, "model_mb", model_mb)
    result = AIM(PAIRS, rounds=8, max_mb=1e-4, estimator=APPGM(iters=10), iters=10,
                 final_iters=10).run(data(), ZCDP(), rng=0)
    assert sizes
    measured = [m.attrs for m in result.measurements]
    assert any(len(c) > 1 for c in measured)  # pairs that fit did compete
    assert APPGM().model_mb(DOMAIN, measured) <= 1e-4  # the region graph's size: 13 cells at most
