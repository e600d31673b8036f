"""The undirected model class against brute force over the full joint table."""
import itertools

import numpy as np
import pytest

from ektelo_pgm import Dataset, Domain
from ektelo_pgm.learning import (LoopyBP, Structure, UndirectedModel, chain, dirichlet_model, erdos_renyi,
                                 time_homogeneous_chain, variables)
from ektelo_pgm.pgm import ModelTooLargeError


def joint(model: UndirectedModel) -> np.ndarray:
    """The model's distribution over the full domain (C order), by enumerating every cell."""
    domain = model.domain
    logp = np.zeros(domain.shape)
    for cl, table in zip(model.cliques, model.potentials()):
        shape = [domain[a] if a in cl else 1 for a in domain.attrs]
        order = [cl.index(a) for a in domain.attrs if a in cl]
        logp = logp + np.transpose(table, order).reshape(shape)
    p = np.exp(logp - logp.max())
    return p / p.sum(), float(np.log(np.exp(logp - logp.max()).sum()) + logp.max())


def brute_marginal(p: np.ndarray, domain: Domain, attrs) -> np.ndarray:
    drop = tuple(i for i, a in enumerate(domain.attrs) if a not in attrs)
    kept = [a for a in domain.attrs if a in attrs]
    return np.transpose(p.sum(axis=drop), [kept.index(a) for a in attrs])


def random_model(domain, cliques, seed, ties=(), inference="auto"):
    rng = np.random.default_rng(seed)
    structure = Structure(domain, cliques, ties, inference)
    return UndirectedModel(structure, rng.normal(scale=1.5, size=structure.size))


STRUCTURES = {
    "chain": (Domain(["a", "b", "c", "d"], [2, 3, 2, 3]), [("a", "b"), ("b", "c"), ("c", "d")], ()),
    "loop, permuted, repeated": (Domain(["a", "b", "c", "d"], [3, 2, 2, 3]),
                                 [("b", "a"), ("b", "c"), ("d", "c"), ("a", "d"), ("a", "b")], ()),
    "higher order with singleton": (Domain(["a", "b", "c", "d"], [2, 2, 3, 2]),
                                    [("a", "b", "c"), ("c", "d"), ("d",)], ()),
    "tied chain": (variables(4, 3),) + time_homogeneous_chain(variables(4, 3)),
}


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_exact_inference_matches_brute_force(name):
    domain, cliques, ties = STRUCTURES[name]
    model = random_model(domain, cliques, 1, ties)
    assert model.exact
    p, log_z = joint(model)
    assert model.log_z == pytest.approx(log_z, abs=1e-10)
    for cl, mu in zip(model.cliques, model.marginals):
        np.testing.assert_allclose(mu, brute_marginal(p, domain, cl), atol=1e-12)
    for positions in [(3, 0), (2,), (1, 3, 0)]:
        attrs = tuple(domain.attrs[i] for i in positions)
        np.testing.assert_allclose(model.project(attrs), brute_marginal(p, domain, attrs), atol=1e-12)
    entropy = -float(np.sum(p * np.log(p)))
    assert model.entropy() == pytest.approx(entropy, abs=1e-10)


def test_tied_cliques_share_one_table():
    domain = variables(4, 3)
    cliques, ties = time_homogeneous_chain(domain)
    model = random_model(domain, cliques, 2, ties)
    tables = model.potentials()
    assert model.structure.size == 3 + 9
    for t in tables[2:]:
        np.testing.assert_array_equal(t, tables[1])


def test_log_likelihood_and_kl_against_brute_force():
    domain, cliques, _ = STRUCTURES["loop, permuted, repeated"]
    p_model = random_model(domain, cliques, 3)
    q_model = random_model(domain, [("a", "b", "c"), ("c", "d")], 4)
    p, _ = joint(p_model)
    q, _ = joint(q_model)
    assert p_model.kl_divergence(q_model) == pytest.approx(float(np.sum(p * np.log(p / q))), abs=1e-10)
    assert q_model.kl_divergence(p_model) == pytest.approx(float(np.sum(q * np.log(q / p))), abs=1e-10)
    assert p_model.kl_divergence(p_model) == pytest.approx(0.0, abs=1e-12)
    records = np.array([[0, 1, 1, 2], [2, 0, 1, 0], [1, 1, 0, 1]])
    data = Dataset(records, domain)
    expected = np.mean([np.log(p[tuple(r)]) for r in records])
    assert p_model.log_likelihood(data) == pytest.approx(expected, abs=1e-10)


def test_sampling_matches_the_model_and_repeats_with_the_seed():
    domain, cliques, ties = STRUCTURES["tied chain"]
    model = random_model(domain, cliques, 5, ties)
    p, _ = joint(model)
    first = model.synthetic_data(40000, rng=7)
    assert np.array_equal(first.records, model.synthetic_data(40000, rng=7).records)
    counts = first.datavector().reshape(domain.shape)
    expected = 40000 * p
    # chi-square over the 81 cells: mean 80, sd about 13; 160 is beyond 6 sd
    assert float(np.sum((counts - expected) ** 2 / expected)) < 160


def test_loopy_bp_is_exact_on_a_tree_and_close_on_a_loop():
    domain, cliques, _ = STRUCTURES["chain"]
    exact = random_model(domain, cliques, 6)
    loopy = UndirectedModel(Structure(domain, cliques, inference="loopy"), exact.theta)
    assert not loopy.exact
    assert loopy.log_z == pytest.approx(exact.log_z, abs=1e-9)
    for a, b in zip(loopy.marginals, exact.marginals):
        np.testing.assert_allclose(a, b, atol=1e-9)
    domain = variables(4, 2)
    cycle = [("x0", "x1"), ("x1", "x2"), ("x2", "x3"), ("x0", "x3")]
    rng = np.random.default_rng(0)
    theta = rng.normal(scale=0.3, size=16)
    exact = UndirectedModel(Structure(domain, cycle), theta)
    loopy = UndirectedModel(Structure(domain, cycle, inference="loopy"), theta)
    assert loopy.structure.engine.converged
    for a, b in zip(loopy.marginals, exact.marginals):
        np.testing.assert_allclose(a, b, atol=0.02)
    assert loopy.log_z == pytest.approx(exact.log_z, abs=0.02)
    with pytest.raises(ModelTooLargeError):
        loopy.synthetic_data(10, rng=0)
    with pytest.raises(ValueError, match="lie in no clique"):
        loopy.project(("x0", "x2"))


def test_auto_falls_back_to_loopy_when_the_tree_is_too_large():
    domain = variables(6, 10)
    edges = [(a, b) for a, b in itertools.combinations(domain.attrs, 2)]
    structure = Structure(domain, edges, max_mb=1.0)
    assert isinstance(structure.engine, LoopyBP)
    with pytest.raises(ModelTooLargeError, match="MB"):
        Structure(domain, edges, inference="exact", max_mb=1.0).engine


def test_generators():
    domain = variables(10, 3)
    assert len(chain(domain, 3)) == 9 + 8 + 7
    edges = erdos_renyi(domain, 0.3, rng=1)
    assert edges == erdos_renyi(domain, 0.3, rng=1)
    import networkx as nx
    assert nx.is_connected(nx.Graph(edges))
    model = dirichlet_model(domain, edges, rng=2)
    for g, shape in enumerate(model.structure.shapes):
        assert np.exp(model.structure.table(model.theta, g)).sum() == pytest.approx(1.0)


def test_bad_structures_are_refused():
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    with pytest.raises(ValueError, match="same sizes"):
        Structure(domain, [("a", "b"), ("b", "c")], ties=[[("a", "b"), ("b", "c")]])
    with pytest.raises(ValueError, match="not among"):
        Structure(domain, [("a", "b")], ties=[[("a", "b"), ("a", "c")]])
    with pytest.raises(KeyError, match="'z'"):
        Structure(domain, [("a", "z")])
    with pytest.raises(ValueError, match="inference"):
        Structure(domain, [("a", "b")], inference="magic")
    structure = Structure(domain, [("a", "b")])
    with pytest.raises(ValueError, match="not finite"):
        UndirectedModel(structure, np.full(structure.size, np.nan))


def test_an_undirected_model_is_an_estimate_in_counts():
    """project gives total x the probabilities, synthetic_data draws the rounded total by default
    (i.i.d., as GraphicalModel's "sample"), and the learners' models stand for the noisy count."""
    from ektelo_pgm import Budget, Estimate
    from ektelo_pgm.learning import NaiveMLE

    domain, cliques, ties = STRUCTURES["tied chain"]
    model = random_model(domain, cliques, 5, ties)
    counted = UndirectedModel(model.structure, model.theta, total=250.0)
    assert isinstance(counted, Estimate) and model.total == 1.0 and counted.total == 250.0
    p, _ = joint(model)
    np.testing.assert_allclose(counted.project(("x1", "x0")), 250.0 * brute_marginal(p, domain, ("x1", "x0")), atol=1e-9)
    np.testing.assert_array_equal(counted.probabilities(("x0",)), model.project(("x0",)))
    assert len(counted.synthetic_data(rng=0)) == 250
    np.testing.assert_array_equal(counted.synthetic_data(40, rng=3).records,
                                  counted.synthetic_data(40, rng=3, method="sample").records)
    with pytest.raises(ValueError, match="positive integer"):
        counted.synthetic_data(0)
    with pytest.raises(ValueError, match="total must be"):
        UndirectedModel(model.structure, model.theta, total=0)
    data = model.synthetic_data(3000, rng=1)
    fitted = NaiveMLE(cliques, ties).fit(data, Budget.pure(1.0), rng=2)
    assert abs(fitted.total - 3000) < 100 and fitted.project(("x0",)).sum() == pytest.approx(fitted.total)
