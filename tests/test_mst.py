"""MST: exact accounting replayed by hand, seeds, near-noiseless recovery, the private spanning
tree's distribution, and the compression of rare values."""
import itertools
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from ektelo_pgm import Dataset, Domain, VectorEstimate, sample_data
from ektelo_pgm.mechanisms import MST
from ektelo_pgm.estimate import Decompressed
from ektelo_pgm.mechanisms.mst import Compression, pair_scores, private_spanning_tree
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.measure import Gaussian
from ektelo_pgm.operators.reconstruct import PGM
from ektelo_pgm.privacy import Budget, exponential_probabilities
from ektelo_pgm.workload import Query

DOMAIN = Domain(["a", "b", "c", "d"], [3, 4, 2, 6])


def chain(n=2000, seed=0):
    """a -> b -> c -> d with strong dependence; value 5 of d is rare (a handful of records)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.2) * rng.integers(0, 4, n)) % 4
    c = (b % 2) ^ (rng.random(n) < 0.1)
    d = np.where(rng.random(n) < 0.003, 5, (2 * c + rng.integers(0, 2, n)) % 5)
    return Dataset(np.stack([a, b, c, d], axis=1), DOMAIN)


def replay(data, total, threshold, iters, seed):
    """MST by hand from the public pieces, with the same budget shares and labels."""
    rng = np.random.default_rng(seed)
    budget = Budget.zcdp(total)
    third = budget.split(3)
    oneway = [Query((a,)) for a in DOMAIN.attrs]
    measured = Gaussian(budget.parameter_for("gaussian", third)).measure(data, oneway, budget, rng,
                                                                         label="MST 1-way marginals")
    compression = Compression.from_measurements(DOMAIN, measured, threshold)
    compressed = compression.compress(data)
    measurements = [compression.compress_measurement(m) for m in measured]
    independent = PGM(iters=iters).reconstruct(compression.domain, measurements)
    pairs = list(itertools.combinations(DOMAIN.attrs, 2))
    step = budget.fraction(Fraction(1, 2 * (len(DOMAIN) - 1)))
    tree = private_spanning_tree(DOMAIN.attrs, pairs, pair_scores(compressed, independent, pairs),
                                 budget.parameter_for("exponential", step), budget, rng)
    rho = budget.parameter_for("gaussian", budget.fraction(1))
    measurements += Gaussian(rho).measure(compressed, [Query(e) for e in tree], budget, rng,
                                          label="MST 2-way marginals")
    return budget, measurements


def test_mst_spends_the_whole_budget_in_three_exact_parts_and_a_replay_charges_the_same():
    data, total = chain(), 0.05
    budget = Budget.zcdp(total)
    result = MST(iters=200).run(data, budget, rng=7)
    ledger = budget.ledger
    assert result.charges == ledger
    assert result.spent == sum((c.amount for c in ledger), Fraction(0))
    assert 0 <= Fraction(repr(total)) - result.spent < Fraction(1, 10 ** 15)
    assert [(c.label, c.mechanism) for c in ledger] == (
        [("MST 1-way marginals", "gaussian")] + [(f"MST edge {k}", "exponential") for k in range(1, 4)]
        + [("MST 2-way marginals", "gaussian")])
    third = Fraction(repr(total)) / 3
    assert ledger[0].amount <= third
    assert sum(c.amount for c in ledger[1:4]) <= third
    assert all(c.amount == ledger[1].amount == Fraction(repr(c.parameter)) ** 2 / 8 for c in ledger[1:4])
    # every charge is the cost of the parameter it names
    fresh = Budget.zcdp(total)
    for c in ledger:
        assert fresh.charge(c.mechanism, c.parameter, c.label) == c.amount
    assert fresh.ledger == ledger
    # the same steps by hand charge the same and measure the same
    manual_budget, manual = replay(data, total, 3.0, 200, 7)
    assert manual_budget.ledger == ledger
    assert [m.attrs for m in manual] == [m.attrs for m in result.measurements]
    for m, r in zip(manual, result.measurements):
        np.testing.assert_array_equal(m.y, r.y)
        np.testing.assert_array_equal(m.std, r.std)


def test_mst_repeats_with_a_seed_and_differs_with_another():
    data = chain()
    runs = [MST(iters=100).run(data, Budget.approx(1.0, 1e-6), rng=s) for s in (3, 3, 4)]
    first, again, other = runs
    for m, r in zip(first.measurements, again.measurements):
        assert m.attrs == r.attrs
        np.testing.assert_array_equal(m.y, r.y)
    np.testing.assert_array_equal(first.estimate.synthetic_data(rng=1).records,
                                  again.estimate.synthetic_data(rng=1).records)
    assert not np.array_equal(first.measurements[0].y, other.measurements[0].y)


def test_mst_near_noiseless_finds_the_maximum_spanning_tree_and_recovers_its_marginals():
    data = chain()
    result = MST(iters=2000).run(data, Budget.zcdp(1e9), rng=0)
    estimate = result.estimate
    # nothing is rare when the noise is tiny: values with records are kept, empty ones merged
    expected = Compression(DOMAIN, {a: data.marginal((a,)) > 0 for a in DOMAIN.attrs})
    for a in DOMAIN.attrs:
        np.testing.assert_array_equal(estimate.codes[a], expected.codes[a])
    # the exponential mechanism with a huge epsilon is Kruskal on the exact scores
    independent = PGM(iters=2000).reconstruct(DOMAIN, [Measurement((a,), data.marginal((a,)), 1.0)
                                                        for a in DOMAIN.attrs])
    pairs = list(itertools.combinations(DOMAIN.attrs, 2))
    graph = nx.Graph()
    graph.add_weighted_edges_from((a, b, s) for (a, b), s in zip(pairs, pair_scores(data, independent, pairs)))
    best = {frozenset(e) for e in nx.maximum_spanning_tree(graph).edges}
    tree = {frozenset(q.attrs) for q in result.queries if len(q.attrs) == 2}
    assert tree == best and len(best) == len(DOMAIN) - 1
    for pair in tree:
        np.testing.assert_allclose(estimate.project(tuple(sorted(pair))), data.marginal(tuple(sorted(pair))),
                                   atol=0.5)  # counts, of 2000 records
    assert estimate.total == pytest.approx(len(data), abs=0.01)
    synthetic = estimate.synthetic_data(rng=0)
    assert len(synthetic) == len(data) and synthetic.domain == DOMAIN


def test_private_spanning_tree_follows_the_exponential_mechanism_on_a_triangle():
    """Three nodes: the first edge is drawn among all three, the second among the other two (both
    join the remaining node), so tree {e, f} has probability p(e) q_e(f) + p(f) q_f(e)."""
    attrs = ["x", "y", "z"]
    pairs = [("x", "y"), ("x", "z"), ("y", "z")]
    scores = np.array([3.0, 1.0, 0.0])
    epsilon = 1.0
    first = exponential_probabilities(scores, 1.0, epsilon)
    trees = [frozenset(t) for t in itertools.combinations(range(3), 2)]
    exact = []
    for tree in trees:
        e, f = sorted(tree)
        p = 0.0
        for u, v in ((e, f), (f, e)):
            rest = [k for k in range(3) if k != u]
            p += first[u] * exponential_probabilities(scores[rest], 1.0, epsilon)[rest.index(v)]
        exact.append(p)
    assert sum(exact) == pytest.approx(1.0)
    rng = np.random.default_rng(2024)
    draws = 6000
    counts = dict.fromkeys(trees, 0)
    for _ in range(draws):
        chosen = private_spanning_tree(attrs, pairs, scores, epsilon, Budget.zcdp(1.0), rng=rng)
        counts[frozenset(pairs.index(e) for e in chosen)] += 1
    observed = np.array([counts[t] for t in trees])
    assert stats.chisquare(observed, draws * np.array(exact)).pvalue > 1e-3


def test_private_spanning_tree_charges_each_edge_before_drawing_and_refuses_disconnected_pairs():
    budget = Budget.zcdp(1.0)
    tree = private_spanning_tree("pqrs", list(itertools.combinations("pqrs", 2)), np.arange(6.0), 0.5, budget, 0)
    assert len(tree) == 3 and nx.is_tree(nx.Graph(tree))
    assert [c.amount for c in budget.ledger] == [Fraction(1, 32)] * 3
    with pytest.raises(ValueError, match="do not connect"):
        private_spanning_tree("pqr", [("p", "q")], [1.0], 1.0, Budget.zcdp(1.0))


def test_compression_merges_rare_values_and_decompresses_uniformly():
    domain = Domain(["u", "v"], [4, 3])
    compression = Compression(domain, {"u": [True, False, True, False], "v": [False, True, True]})
    np.testing.assert_array_equal(compression.codes["u"], [0, 2, 1, 2])
    np.testing.assert_array_equal(compression.codes["v"], [2, 0, 1])
    assert compression.domain == Domain(["u", "v"], [3, 3])
    m = compression.compress_measurement(Measurement(("u",), [10.0, 1.0, 20.0, 2.0], 2.0))
    np.testing.assert_allclose(m.y, [10.0, 20.0, 3.0])
    np.testing.assert_allclose(m.std, [2.0, 2.0, 2.0 * np.sqrt(2)])
    # a one-value merge relabels: v's only rare value 0 takes the last code
    inner = VectorEstimate(compression.domain, np.arange(9.0) + 1.0)
    estimate = Decompressed(inner, domain, compression.codes)
    table = estimate.project(("v", "u"))
    compressed = inner.project(("v", "u"))
    expected = compressed[np.ix_(compression.codes["v"], compression.codes["u"])]
    expected /= compression.group_size["u"][compression.codes["u"]][None, :]
    np.testing.assert_allclose(table, expected)
    assert table.sum() == pytest.approx(inner.total)
    synthetic = estimate.synthetic_data(60000, rng=5)
    observed = synthetic.marginal(("v", "u")).ravel()
    assert stats.chisquare(observed, 60000 * table.ravel() / table.sum()).pvalue > 1e-3
    back = compression.compress(synthetic)
    assert np.all(back.records[:, 1] == compression.codes["v"][synthetic.records[:, 1]])


def test_mst_refuses_a_pure_budget():
    with pytest.raises(ValueError, match="rho-zCDP"):
        MST().run(chain(), Budget.pure(1.0))


def test_mst_on_a_single_attribute_measures_its_marginal_with_the_whole_budget():
    records = np.repeat([0, 1, 2], [6000, 3000, 1000])[:, None]
    budget = Budget.zcdp(0.5)
    result = MST().run(Dataset(records, Domain(["a"], [3])), budget, rng=0)
    assert [ch.label for ch in budget.ledger] == ["MST 1-way marginals"] and budget.remaining == 0
    np.testing.assert_allclose(result.estimate.project(("a",)), [6000, 3000, 1000], atol=10)  # noise std 1


def test_mst_on_titanic_end_to_end():
    data = sample_data.load("titanic")
    result = MST(iters=500).run(data, Budget.approx(1.0, 1e-9), rng=0)
    assert result.estimate.domain == data.domain
    assert result.estimate.estimate.domain["Age"] < data.domain["Age"]  # rare ages merged
    synthetic = result.estimate.synthetic_data(rng=0)
    assert synthetic.domain == data.domain
    assert abs(len(synthetic) - len(data)) < 50
