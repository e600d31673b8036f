"""GEM and RAP-softmax (Liu, Vietri and Wu 2021, sec. 5, appendix A.2 and B): product queries,
the mixture estimate, the public-data pretraining, seeding and accounting."""
import itertools
from fractions import Fraction

import numpy as np
import pytest

from ektelo_pgm import Budget, Dataset, Domain
from ektelo_pgm.estimate import MixtureEstimate

torch = pytest.importorskip("torch", reason="GEM and RAP-softmax need the optional torch extra (ektelo_pgm[gem])",
                            exc_type=ImportError)  # a torch that fails to load skips too
torch.set_num_threads(1)  # small tensors: one thread is fastest on a shared machine

from ektelo_pgm.mechanisms.gem import GEM, public_cliques  # noqa: E402
from ektelo_pgm.mechanisms.product import Generator, SoftmaxTable  # noqa: E402
from ektelo_pgm.mechanisms.rap import RAPSoftmax  # noqa: E402
from ektelo_pgm.workload import kway_marginals  # noqa: E402

from conftest import CORRELATED_DOMAIN as DOMAIN, correlated  # noqa: E402

SMALL = dict(hidden=(16, 16), embedding=8, batch=12, lr=1e-2, max_steps=20)


def brute_force(probs):
    """The mixture's full distribution by enumerating every record."""
    full = np.zeros(DOMAIN.shape)
    for x in itertools.product(*[range(n) for n in DOMAIN.shape]):
        full[x] = np.mean(np.prod([p[:, v] for p, v in zip(probs, x)], axis=0))
    return full


def project(full, attrs):
    kept = [a for a in DOMAIN.attrs if a in attrs]
    out = full.sum(axis=tuple(i for i, a in enumerate(DOMAIN.attrs) if a not in attrs))
    return np.transpose(out, [kept.index(a) for a in attrs])


@pytest.mark.parametrize("family", [Generator(hidden=(8,), embedding=4, batch=5, dtype="float64"),
                                    SoftmaxTable(rows=6, dtype="float64")])
def test_product_queries_are_the_marginals_of_the_generated_distribution(family):
    family.start(DOMAIN, np.random.default_rng(0))
    with torch.no_grad():
        probs = [p.numpy() for p in family.probabilities()]
    for p, n in zip(probs, DOMAIN.shape):
        assert p.shape[1] == n
        np.testing.assert_allclose(p.sum(axis=1), 1.0)
    full = brute_force(probs)
    assert full.sum() == pytest.approx(1.0)
    cliques = [("a",), ("c", "a"), ("b", "d", "a"), ("d", "c", "b", "a")]
    for attrs, got in zip(cliques, family.estimate(1.0).projections(cliques)):
        np.testing.assert_allclose(got, project(full, attrs), atol=1e-12)
        np.testing.assert_allclose(family.marginal(attrs), project(full, attrs), atol=1e-12)
        with torch.no_grad():
            np.testing.assert_allclose(family.answers(attrs, family.probabilities()).numpy(), project(full, attrs),
                                       atol=1e-12)
    estimate = family.estimate(100.0)
    np.testing.assert_allclose(estimate.project(["d", "b"]), 100 * project(full, ("d", "b")), atol=1e-9)


def test_mixture_synthetic_data_follow_the_mixture():
    rng = np.random.default_rng(1)
    probs = [rng.dirichlet(np.ones(n), size=3) for n in DOMAIN.shape]
    estimate = MixtureEstimate(DOMAIN, probs, 1000.0)
    synthetic = estimate.synthetic_data(40000, rng=2)
    full = brute_force(probs)
    np.testing.assert_allclose(synthetic.marginal(("b", "d")) / 40000, project(full, ("b", "d")), atol=0.015)
    assert len(estimate.synthetic_data(rng=0)) == 1000


def check_ledger(charges, rho, rounds, k, share):
    spent = sum((c.amount for c in charges), Fraction(0))
    assert spent <= Fraction(repr(rho)) and float(spent) == pytest.approx(rho, rel=1e-12)
    assert len(charges) == (k + 1) * rounds + 1
    selects = [c for c in charges if "select" in c.label]
    measures = [c for c in charges if "measure" in c.label]
    assert float(k * selects[0].amount / measures[0].amount) == pytest.approx(share / (1 - share), rel=1e-9)
    replay = Budget.zcdp(rho)
    assert [replay.charge(c.mechanism, c.parameter) for c in charges] == [c.amount for c in charges]


@pytest.mark.parametrize("make", [
    lambda: GEM(kway_marginals(DOMAIN, 2), rounds=4, **SMALL),
    lambda: RAPSoftmax(kway_marginals(DOMAIN, 2), rounds=3, k=2, rows=10, steps=10, unit="query"),
])
def test_accounting_exact_and_same_seed_same_output(make):
    data = correlated(2000)
    mechanism = make()
    k = mechanism.selector.k
    first = mechanism.run(data, Budget.zcdp(0.1), rng=3)
    check_ledger(first.charges, 0.1, mechanism.rounds, k, float(mechanism.select_fraction))
    second = make().run(data, Budget.zcdp(0.1), rng=3)
    np.testing.assert_array_equal(first.estimate.project(["a", "b", "d"]), second.estimate.project(["a", "b", "d"]))
    assert [m.y.tolist() for m in first.measurements] == [m.y.tolist() for m in second.measurements]
    third = make().run(data, Budget.zcdp(0.1), rng=4)
    assert not np.array_equal(first.estimate.project(["a", "b", "d"]), third.estimate.project(["a", "b", "d"]))


@pytest.mark.parametrize("make", [
    lambda w: GEM(w, rounds=20, hidden=(32, 32), embedding=8, batch=50, lr=1e-2, max_steps=300, ema=0.0),
    lambda w: RAPSoftmax(w, rounds=3, k=2, rows=50, steps=300, lr=0.1),
])
def test_tiny_noise_drives_the_selected_queries_error_down(make):
    data = correlated(2000)
    n = len(data)
    result = make(kway_marginals(DOMAIN, 2)).run(data, Budget.zcdp(1e8), rng=0)
    start = max(np.abs(data.marginal(q.attrs) / n - 1 / DOMAIN.size(q.attrs)).max() for q in result.queries)
    error = max(np.abs(result.estimate.project(q.attrs) - data.marginal(q.attrs)).max() / n for q in result.queries)
    assert error < 0.02 < start


def test_gem_pub_pretrains_on_a_public_table_with_fewer_attributes():
    data = correlated(2000)
    public = correlated(500, seed=9).project(["b", "a", "c"])
    workload = kway_marginals(DOMAIN, 2)
    assert public_cliques(workload, public) == [("a", "b"), ("a", "c"), ("b", "c")]
    family = Generator(hidden=(32,), embedding=8, batch=40, public=public, pretrain_cliques=[("a", "b"), ("b", "c")],
                       pretrain_steps=300, pretrain_batch=2, lr=1e-2)
    family.start(DOMAIN, np.random.default_rng(0))
    for attrs in [("a", "b"), ("b", "c")]:
        assert np.abs(family.marginal(attrs) - public.marginal(attrs) / 500).max() < 0.03
    result = GEM(workload, rounds=2, public=public, pretrain_steps=50, **SMALL).run(data, Budget.zcdp(0.5), rng=0)
    assert result.estimate.total == pytest.approx(len(data), rel=0.05)
    with pytest.raises(ValueError, match="public attribute"):
        wrong = Dataset(np.zeros((3, 1), dtype=int), Domain(["a"], [5]))
        GEM(workload, rounds=1, public=wrong, **SMALL).run(data, Budget.zcdp(0.5), rng=0)


def test_gem_ema_output_averages_the_latter_half():
    family = Generator(hidden=(4,), embedding=2, batch=3, ema=0.5)
    family.start(DOMAIN, 0)
    family.end_round(1, 4)
    assert family.averaged is None
    family.end_round(2, 4)
    first = [p.detach().clone() for p in family.averaged.parameters()]
    with torch.no_grad():
        for p in family.net.parameters():
            p.add_(1.0)
    family.end_round(3, 4)
    for mean, old in zip(family.averaged.parameters(), first):
        np.testing.assert_allclose(mean.detach().numpy(), old.numpy() + 0.5, atol=1e-6)
