"""Exponentially weighted families and the MWEM and PEP losses (Liu, Vietri and Wu 2021,
sec. 4, appendix A.3 and C)."""
import numpy as np
import pytest
import scipy.optimize
from scipy.special import logsumexp

from ektelo_pgm import Dataset, Domain
from ektelo_pgm.mechanisms.entropy import (FullDistribution, GraphicalDistribution, MWEMLoss, PEPLoss,
                                           PublicSupport, SupportEstimate)
from ektelo_pgm.mechanisms.framework import Measured

DOMAIN = Domain(["a", "b", "c"], [2, 3, 2])


def truth(seed=0):
    """A random distribution over DOMAIN (probabilities, full shape)."""
    p = np.random.default_rng(seed).dirichlet(np.ones(DOMAIN.size())).reshape(DOMAIN.shape)
    return p


def marginal(p, attrs):
    kept = [a for a in DOMAIN.attrs if a in attrs]
    out = p.sum(axis=tuple(i for i, a in enumerate(DOMAIN.attrs) if a not in attrs))
    return np.transpose(out, [kept.index(a) for a in attrs])


def measured_from(p):
    """Consistent measurements: two whole marginals (one listed out of domain order) and one cell."""
    m = Measured()
    m.add(("b", "a"), None, marginal(p, ("b", "a")))
    m.add(("c", "b"), None, marginal(p, ("c", "b")))
    m.add(("a", "c"), 3, marginal(p, ("a", "c")).ravel()[3])
    return m


def features(m):
    """The rows q_i(x) of every measured answer over the full domain, and the answers a_i."""
    rows, answers = [], []
    for t in m.values():
        cells = list(range(DOMAIN.size(t.attrs))) if t.cell is None else [t.cell]
        for cell in cells:
            table = np.zeros(DOMAIN.size(t.attrs))
            table[cell] = 1.0
            shaped = table.reshape(DOMAIN.project(t.attrs).shape)
            order = [a for a in DOMAIN.attrs if a in t.attrs]
            shaped = np.transpose(shaped, [t.attrs.index(a) for a in order])
            rows.append(np.broadcast_to(shaped.reshape([DOMAIN[a] if a in order else 1 for a in DOMAIN.attrs]),
                                        DOMAIN.shape).ravel())
            answers.append(np.ravel(t.value)[cell] if t.cell is None else float(t.value))
    return np.array(rows), np.array(answers)


def max_entropy(m):
    """The maximum-entropy distribution matching the measurements: the convex dual
    min_lambda log sum_x exp(lambda . q(x)) - lambda . a solved by scipy's L-BFGS."""
    Q, a = features(m)

    def dual(lam):
        s = lam @ Q
        p = np.exp(s - logsumexp(s))
        return logsumexp(s) - lam @ a, Q @ p - a

    lam = scipy.optimize.minimize(dual, np.zeros(len(a)), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 5000, "gtol": 1e-12, "ftol": 1e-15}).x
    s = lam @ Q
    return np.exp(s - logsumexp(s)).reshape(DOMAIN.shape)


@pytest.mark.parametrize("family", [FullDistribution, GraphicalDistribution])
def test_pep_projection_matches_a_direct_convex_solve(family):
    m = measured_from(truth())
    fam = family()
    fam.start(DOMAIN)
    PEPLoss(max_steps=3000, gamma=1e-12).update(fam, m, list(m), np.random.default_rng(0))
    expected = max_entropy(m)
    got = fam.estimate(1.0).project(DOMAIN.attrs)
    np.testing.assert_allclose(got, expected, atol=1e-7)
    for t in m.values():
        assert t.error(fam) < 1e-9


def test_pep_single_cell_projection_is_exact_and_keeps_ratios():
    fam = FullDistribution()
    fam.start(DOMAIN)
    m = Measured()
    key = m.add(("b",), 1, 0.7)
    before = fam.marginal(DOMAIN.attrs).copy()
    PEPLoss(max_steps=1).update(fam, m, [key], None)
    after = fam.marginal(DOMAIN.attrs)
    assert after[:, 1, :].sum() == pytest.approx(0.7)
    # the relative-entropy projection rescales each side of the constraint proportionally
    np.testing.assert_allclose(after[:, 1, :] / before[:, 1, :], 0.7 / (1 / 3))
    np.testing.assert_allclose(after[:, [0, 2], :] / before[:, [0, 2], :], 0.3 / (2 / 3))


def test_pep_stops_at_gamma():
    m = measured_from(truth(1))
    fam = FullDistribution()
    fam.start(DOMAIN)
    PEPLoss(max_steps=1000, gamma=0.05).update(fam, m, list(m), None)
    errors = [t.error(fam) for t in m.values()]
    assert max(errors) <= 0.05
    assert max(errors) > 1e-6  # it stopped early, not at the exact projection


def test_mwem_loss_is_the_multiplicative_weights_update():
    p = truth(2)
    m = Measured()
    key = m.add(("a", "b"), None, marginal(p, ("a", "b")))
    fam = FullDistribution()
    fam.start(DOMAIN)
    MWEMLoss(eta=0.5, past=None).update(fam, m, [key], np.random.default_rng(0))
    u = np.full(DOMAIN.shape, 1 / DOMAIN.size())
    expected = u * np.exp(0.5 * (marginal(p, ("a", "b")) - marginal(u, ("a", "b"))))[:, :, None]
    np.testing.assert_allclose(fam.marginal(DOMAIN.attrs), expected / expected.sum())


def test_mwem_loss_reuses_past_queries_with_large_error():
    m = measured_from(truth(3))
    keys = list(m)
    alone, reused = FullDistribution(), FullDistribution()
    for fam, past in ((alone, None), (reused, 0.0)):
        fam.start(DOMAIN)
        MWEMLoss(eta=0.5, past=past).update(fam, m, keys[-1:], np.random.default_rng(0))
    # the new query alone moves one cell; reusing the past marginals also moves the rest
    assert reused.marginal(("b", "a"))[0, 0] != pytest.approx(alone.marginal(("b", "a"))[0, 0])
    assert sum(t.error(reused) for t in m.values()) < sum(t.error(alone) for t in m.values())


def test_graphical_and_full_families_agree_under_the_same_tilts():
    rng = np.random.default_rng(4)
    full, graphical = FullDistribution(), GraphicalDistribution()
    for fam in (full, graphical):
        fam.start(DOMAIN)
    for attrs in [("c", "a"), ("b",), ("a", "b"), ("c", "a")]:
        table = rng.normal(size=DOMAIN.project(attrs).shape)
        full.tilt(attrs, table)
        graphical.tilt(attrs, table)
    for attrs in [("a",), ("b", "c"), ("c", "b", "a")]:
        np.testing.assert_allclose(graphical.marginal(attrs), full.marginal(attrs), atol=1e-12)
    np.testing.assert_allclose(graphical.estimate(50.0).project(["b", "a"]), full.estimate(50.0).project(["b", "a"]))


def test_public_support_starts_at_the_public_distribution_and_stays_on_it():
    records = np.array([[0, 1, 0], [0, 1, 0], [1, 2, 1], [1, 0, 0]])
    public = Dataset(records, DOMAIN)
    fam = PublicSupport(public)
    fam.start(DOMAIN)
    np.testing.assert_allclose(fam.marginal(("b", "a")), public.marginal(("b", "a")) / 4)
    m = Measured()
    key = m.add(("a",), None, np.array([0.2, 0.8]))
    PEPLoss(max_steps=5).update(fam, m, [key], None)
    np.testing.assert_allclose(fam.marginal(("a",)), [0.2, 0.8])
    estimate = fam.estimate(10.0)
    assert isinstance(estimate, SupportEstimate)
    assert estimate.total == pytest.approx(10.0)
    synthetic = estimate.synthetic_data(500, rng=0)
    rows = {tuple(r) for r in records}
    assert all(tuple(r) in rows for r in synthetic.records)
    assert synthetic.marginal(("a",))[1] / 500 == pytest.approx(0.8, abs=0.06)


def test_public_support_refuses_another_domain():
    public = Dataset(np.zeros((2, 2), dtype=int), Domain(["a", "b"], [2, 3]))
    with pytest.raises(ValueError, match="public dataset"):
        PublicSupport(public).start(DOMAIN)


def test_full_distribution_refuses_a_large_domain():
    big = Domain([f"x{i}" for i in range(10)], [32] * 10)
    with pytest.raises(MemoryError, match="full distribution"):
        FullDistribution(max_mb=64).start(big)
