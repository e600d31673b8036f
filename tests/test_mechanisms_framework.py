"""Adaptive Measurements (Liu, Vietri and Wu 2021, sec. 3): selection, accounting, convergence."""
from fractions import Fraction

import numpy as np
import pytest

from ektelo_pgm import Budget, Dataset, Domain
from ektelo_pgm.estimate import VectorEstimate
from ektelo_pgm.mechanisms.framework import KWorst, alpha_share, split
from ektelo_pgm.mechanisms.pep import PEP
from ektelo_pgm.mechanisms.pmw import PMW
from ektelo_pgm.workload import kway_marginals

from conftest import CORRELATED_DOMAIN as DOMAIN, correlated



WORKLOAD = kway_marginals(DOMAIN, 2)


def check_ledger(charges, rho, rounds, k, alpha, counted):
    """Exact accounting: per round k selections and one measurement of the k queries together,
    the k selections costing alpha^2 / (1 - alpha)^2 times the measurement (sec. 3.1), all of
    them at most rho and nearly all of it; the ledger replays exactly on a fresh budget."""
    assert len(charges) == (k + 1) * rounds + counted
    spent = sum((c.amount for c in charges), Fraction(0))
    assert spent <= Fraction(repr(rho))
    assert float(spent) == pytest.approx(rho, rel=1e-12)
    selects = [c for c in charges if "select" in c.label]
    measures = [c for c in charges if "measure" in c.label]
    assert len(selects) == k * rounds and len(measures) == rounds
    assert len({c.amount for c in selects}) == 1 and len({c.amount for c in measures}) == 1
    ratio = k * selects[0].amount / measures[0].amount
    assert float(ratio) == pytest.approx(alpha ** 2 / (1 - alpha) ** 2, rel=1e-9)
    replay = Budget.zcdp(rho)
    for c in charges:
        assert replay.charge(c.mechanism, c.parameter) == c.amount
    assert replay.spent == float(spent)


@pytest.mark.parametrize("mechanism", [
    lambda: PMW(WORKLOAD, rounds=4, k=2, select_fraction=alpha_share(0.3)),
    lambda: PEP(WORKLOAD, rounds=4, k=2, select_fraction=alpha_share(0.3), unit="query"),
    lambda: PEP(WORKLOAD, rounds=4, k=2, select_fraction=alpha_share(0.3), representation="graphical", selection="permute_and_flip"),
])
def test_accounting_is_exact_and_replayable(mechanism):
    data = correlated(3000)
    budget = Budget.zcdp(0.05)
    result = mechanism().run(data, budget, rng=1)
    check_ledger(result.charges, 0.05, 4, 2, 0.3, counted=1)
    assert result.charges[0].label.endswith("record count")
    assert budget.remaining == pytest.approx(0.0, abs=1e-15)
    assert len(result.measurements) == 8 and len(result.queries) == 8
    again = mechanism().run(data, Budget.zcdp(0.05), rng=1)
    assert [c.amount for c in again.charges] == [c.amount for c in result.charges]
    np.testing.assert_array_equal(again.estimate.project(["a", "d"]), result.estimate.project(["a", "d"]))
    other = mechanism().run(data, Budget.zcdp(0.05), rng=2)
    assert not np.array_equal(other.estimate.project(["a", "d"]), result.estimate.project(["a", "d"]))


def test_public_total_spends_nothing_on_the_count():
    data = correlated(3000)
    result = PEP(WORKLOAD, rounds=3, total=len(data)).run(data, Budget.approx(1.0, 1e-6), rng=0)
    check_ledger(result.charges, Budget.approx(1.0, 1e-6).total, 3, 1, 0.5, counted=0)
    assert result.estimate.total == pytest.approx(len(data))


def test_budget_split_is_exact():
    assert alpha_share(0.5) == Fraction(1, 2)
    assert alpha_share(0.25) == Fraction(1, 10)
    for amount, k in [(0.1, 3), (1e-7, 7), (0.3, 1)]:
        part = split(amount, k)
        assert k * Fraction(repr(part)) <= Fraction(repr(amount))
        assert part == pytest.approx(amount / k, rel=1e-15)


def test_refusals():
    data = correlated(3000)
    with pytest.raises(ValueError, match="zCDP"):
        PEP(WORKLOAD, rounds=2).run(data, Budget.pure(1.0), rng=0)
    with pytest.raises(ValueError, match="select_fraction"):
        PEP(WORKLOAD, rounds=2, select_fraction=1.0)
    from ektelo_pgm.matrix import Prefix
    with pytest.raises(ValueError, match="query matrix"):
        PEP([(("a",), Prefix(2))], rounds=2).run(data, Budget.zcdp(1.0), rng=0)
    with pytest.raises(ValueError, match="cannot choose"):
        KWorst([("a",)], k=3).select(data, uniform(), Budget.zcdp(1.0), 0.1, np.random.default_rng(0))
    budget = Budget.zcdp(1.0)
    budget.spend(1.0)
    with pytest.raises(Exception, match="remain"):
        PEP(WORKLOAD, rounds=2).run(data, budget, rng=0)


def test_tiny_noise_drives_the_selected_queries_error_to_zero():
    data = correlated(3000)
    n = len(data)
    result = PEP(WORKLOAD, rounds=6, max_steps=2000, total=n).run(data, Budget.zcdp(1e8), rng=0)
    for q in result.queries:
        error = np.abs(result.estimate.project(q.attrs) - data.marginal(q.attrs)).max() / n
        assert error < 1e-4
    # a = c given b in these data, so matching the measured marginals matches the rest closely
    errors = [np.abs(result.estimate.project(c) - data.marginal(c)).max() / n for c in WORKLOAD.cliques]
    assert max(errors) < 0.01


def test_mwem_reduces_the_error_with_tiny_noise():
    data = correlated(3000)
    n = len(data)
    uniform = np.abs(data.marginal(("a", "d")) / n - 1 / 8).max()
    result = PMW(WORKLOAD, rounds=30, total=n).run(data, Budget.zcdp(1e8), rng=0)
    errors = [np.abs(result.estimate.project(c) - data.marginal(c)).max() / n for c in WORKLOAD.cliques]
    assert max(errors) < 0.5 * uniform


def uniform(n=3000):
    return VectorEstimate(DOMAIN, np.full(DOMAIN.size(), n / DOMAIN.size()))


def test_kworst_scores_marginals_or_cells():
    data = correlated(3000)
    n = len(data)
    cliques = [("a", "b"), ("c",)]
    truth = [data.marginal(c).ravel() for c in cliques]
    scores, offsets, _ = KWorst(cliques, unit="query").scores(data, uniform(n))
    assert scores.size == 8 and offsets.tolist() == [0, 6, 8]
    np.testing.assert_allclose(scores[:6], np.abs(truth[0] - n / 6))
    whole, _, _ = KWorst(cliques, unit="marginal").scores(data, uniform(n))
    np.testing.assert_allclose(whole, [scores[:6].max(), scores[6:].max()])


def test_kworst_picks_distinct_worst_queries_with_a_large_epsilon():
    data = correlated(3000)
    n = len(data)
    cliques = list(WORKLOAD.cliques)
    scores, _, _ = KWorst(cliques, unit="marginal").scores(data, uniform(n))
    best = [cliques[i] for i in np.argsort(-scores)[:2]]
    budget = Budget.zcdp(1e8)
    for mechanism in ("exponential", "permute_and_flip"):
        chosen = KWorst(cliques, k=2, mechanism=mechanism).select(data, uniform(n), budget, 1e3, np.random.default_rng(0))
        assert [q.attrs for q in chosen] == best and all(q.matrix is None for q in chosen)
    assert [c.mechanism for c in budget.ledger] == ["exponential"] * 2 + ["pure"] * 2
    cells = KWorst(cliques, k=3, unit="query").select(data, uniform(n), budget, 1e3, np.random.default_rng(0))
    assert len({(q.attrs, int(q.matrix.sparse().indices[0])) for q in cells}) == 3


def test_pep_on_a_graphical_model_runs_where_the_full_vector_cannot():
    wide = Domain([f"x{i}" for i in range(10)], [16] * 10)
    rng = np.random.default_rng(5)
    base = rng.integers(16, size=1500)
    records = np.stack([(base + i * rng.integers(2, size=1500)) % 16 for i in range(10)], axis=1)
    data = Dataset(records, wide)
    workload = kway_marginals(wide, 2)
    with pytest.raises(MemoryError, match="full distribution"):
        PEP(workload, rounds=2, total=1500).run(data, Budget.zcdp(1.0), rng=0)
    result = PEP(workload, rounds=3, total=1500, representation="graphical").run(data, Budget.zcdp(1e6), rng=0)
    for q in result.queries:
        assert np.abs(result.estimate.project(q.attrs) - data.marginal(q.attrs)).max() < 1.0
