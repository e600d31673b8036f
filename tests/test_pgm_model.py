"""GraphicalModel (oracle, out-of-model marginals, factored queries, sampling) against brute force."""
import itertools

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from ektelo_pgm.domain import Domain
from ektelo_pgm.matrix import Identity, Kronecker, Ones, Prefix
from ektelo_pgm.pgm import factored
from ektelo_pgm.pgm.clique_vector import CliqueVector
from ektelo_pgm.pgm.factor import Factor
from ektelo_pgm.pgm.branch_marginals import BranchMarginals, balanced, sum_product
from ektelo_pgm.pgm.elimination import Memo
from ektelo_pgm.pgm.model import GraphicalModel


def _random_model(rng, d, m, total=100.0, max_size=4):
    domain = Domain([f"x{i}" for i in range(d)], rng.integers(1, max_size + 1, size=d).tolist())
    cliques = [tuple(rng.choice(domain.attrs, size=rng.integers(1, min(d, 3) + 1), replace=False))
               for _ in range(m)]
    cliques += cliques[:1] + [tuple(reversed(c)) for c in cliques[:1]]  # duplicate, permuted
    pots = CliqueVector({cl: Factor(domain.project(cl), rng.normal(scale=2.0, size=domain.project(cl).shape))
                         for cl in dict.fromkeys(cliques)})
    return domain, cliques, pots, GraphicalModel(domain, cliques, pots, total=total)


def _joint(domain, pots, total):
    log_p = sum((f.expand(domain) for f in pots.values()), Factor.zeros(domain)).values
    p = np.exp(log_p - log_p.max())
    return p / p.sum() * total, log_p


def _marginal(domain, p, attrs):
    drop = tuple(i for i, a in enumerate(domain.attrs) if a not in attrs)
    kept = [a for a in domain.attrs if a in attrs]
    return np.transpose(p.sum(axis=drop), [kept.index(a) for a in attrs])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(1, 7), m=st.integers(1, 6))
def test_marginals_match_brute_force(seed, d, m):
    rng = np.random.default_rng(seed)
    domain, cliques, pots, model = _random_model(rng, d, m)
    p, log_p = _joint(domain, pots, 100.0)
    top = log_p.max()
    assert np.isclose(model.log_z, top + np.log(np.exp(log_p - top).sum()))
    for cl, table in model.marginals.items():  # calibrated clique marginals
        np.testing.assert_allclose(table.values, _marginal(domain, p, cl), atol=1e-9)
    for _ in range(4):  # any attribute set, in model or not, in any order
        attrs = tuple(rng.choice(domain.attrs, size=rng.integers(1, d + 1), replace=False))
        np.testing.assert_allclose(model.project(attrs), _marginal(domain, p, attrs), atol=1e-9)
    assert model.total == 100.0


def test_unmeasured_attributes_and_single_covering_clique():
    rng = np.random.default_rng(3)
    domain = Domain(list("abcd"), [3, 2, 4, 2])
    pots = CliqueVector({("a", "b", "c", "d"): Factor(domain, rng.normal(size=domain.shape))})
    model = GraphicalModel(domain, [("b", "d"), ("d", "a", "c", "b")], pots, total=7.0)
    p, _ = _joint(domain, pots, 7.0)
    np.testing.assert_allclose(model.project(("d", "a")), _marginal(domain, p, ("d", "a")), atol=1e-12)
    lonely = GraphicalModel(domain, [("a",)], total=12.0)  # b, c, d never measured: uniform
    np.testing.assert_allclose(lonely.project(("c", "b")), np.full((4, 2), 12.0 / 8))
    empty = GraphicalModel(domain, [], total=12.0)  # no cliques at all: uniform, log Z = log(cells)
    np.testing.assert_allclose(empty.project(("d", "a")), np.full((2, 3), 12.0 / 6))
    assert np.isclose(empty.log_z, np.log(domain.size()))


def test_large_domain_out_of_model_marginals():
    rng = np.random.default_rng(5)
    domain = Domain([f"x{i}" for i in range(8)], [4, 4, 4, 4, 5, 5, 4, 5])  # 128,000 cells
    cliques = [("x0", "x1"), ("x1", "x2", "x3"), ("x3", "x4"), ("x4", "x5", "x0"), ("x6", "x7"), ("x2", "x6")]
    pots = CliqueVector({cl: Factor(domain.project(cl), rng.normal(size=domain.project(cl).shape)) for cl in cliques})
    model = GraphicalModel(domain, cliques, pots, total=1000.0)
    p, _ = _joint(domain, pots, 1000.0)
    for attrs in [("x7", "x5"), ("x0", "x7", "x3"), domain.attrs]:
        np.testing.assert_allclose(model.project(attrs), _marginal(domain, p, attrs), atol=1e-9)


def test_factored_queries_match_dense_products():
    rng = np.random.default_rng(7)
    domain, cliques, pots, model = _random_model(rng, 5, 4, max_size=5)
    p, _ = _joint(domain, pots, 100.0)
    a, b, c = domain.attrs[0], domain.attrs[2], domain.attrs[4]
    n = domain.config
    blocks = {  # building blocks of supplement B, Table 2
        a: factored.cdf(n[a]),
        b: factored.moments(n[b], 2),
        c: factored.evidence(n[c], np.arange(0, n[c], 2)),
    }
    np.testing.assert_array_equal(blocks[a], np.tril(np.ones((n[a], n[a]))))
    np.testing.assert_array_equal(blocks[b], np.arange(n[b])[None, :] ** np.array([[1], [2]]))
    np.testing.assert_array_equal(blocks[c], (np.arange(n[c]) % 2 == 0)[None, :])
    assert np.array_equal(factored.compress([0, 2, 1, 2]), [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 1]])
    assert np.array_equal(factored.mean(3), [[0, 1, 2]]) and np.array_equal(factored.keep(2), np.eye(2))
    assert np.array_equal(factored.evidence(4, 2), [[0, 0, 1, 0]]) and factored.marginalize(3).shape == (1, 3)
    with pytest.raises(ValueError, match="subset"):
        factored.evidence(3, [3])
    answers = model.answer_factored(blocks)
    expected = np.einsum(_marginal(domain, p, (a, b, c)), [0, 1, 2], blocks[a], [3, 0], blocks[b], [4, 1],
                         blocks[c], [5, 2], [3, 4, 5])
    np.testing.assert_allclose(answers, expected, atol=1e-9)
    query = Kronecker([Prefix(n[c]), Identity(n[a]), Ones(1, n[b])])
    np.testing.assert_allclose(model.answer(query, (c, a, b)), query @ _marginal(domain, p, (c, a, b)).ravel(),
                               atol=1e-9)
    plain = Prefix(n[b])  # not a Kronecker: applied to the projected marginal
    np.testing.assert_allclose(model.answer(plain, (b,)), plain @ _marginal(domain, p, (b,)), atol=1e-9)
    with pytest.raises(ValueError, match="columns"):
        model.answer_factored({a: np.ones((1, n[a] + 1))})


def test_sampling_matches_marginals_statistically():
    rng = np.random.default_rng(11)
    domain, cliques, pots, model = _random_model(rng, 6, 5)
    n = 40_000
    data = model.synthetic_data(n, rng=1)
    assert len(data) == n and data.domain == domain
    for cl in list(model.marginals)[:3] + [domain.attrs[:2]]:
        expected = model.project(cl) / model.total
        observed = data.marginal(cl) / n
        # each cell within 5 standard errors
        assert np.all(np.abs(observed - expected) <= 5 * np.sqrt(expected * (1 - expected) / n) + 1e-12)
    again = model.synthetic_data(n, rng=1)
    np.testing.assert_array_equal(data.records, again.records)


def test_rounding_preserves_counts():
    rng = np.random.default_rng(13)
    domain, cliques, pots, model = _random_model(rng, 6, 5, total=537.0)
    data = model.synthetic_data(rng=2, method="round")
    assert len(data) == 537
    tree = model.tree
    root = tree.root
    expected = model.project(tree.cliques[root])
    assert np.all(np.abs(data.marginal(tree.cliques[root]) - expected) < 1)  # rounded down or up
    for c in range(len(tree.cliques)):  # every clique within one record per cell of each conditional
        counts = data.marginal(tree.cliques[c])
        sep = tree.separator(c)
        if tree.parent[c] < 0 or not sep:
            continue
        given = data.marginal(sep)
        cond = model.project(tree.cliques[c]) / np.maximum(Factor(domain.project(tree.cliques[c]),
                                                                  model.project(tree.cliques[c])).project(sep).expand(
            domain.project(tree.cliques[c])).values, 1e-300)
        target = Factor(domain.project(sep), given).expand(domain.project(tree.cliques[c])).values * cond
        assert np.all(np.abs(counts - target) < 1 + 1e-9)
    with pytest.raises(ValueError, match="method"):
        model.synthetic_data(5, method="bogus")


def test_save_load_roundtrip(tmp_path):
    rng = np.random.default_rng(17)
    domain, cliques, pots, model = _random_model(rng, 5, 4)
    model.save(tmp_path / "m.npz")
    back = GraphicalModel.load(tmp_path / "m.npz")
    assert back.domain == domain and back.cliques == model.cliques and back.total == model.total
    np.testing.assert_allclose(back.project(domain.attrs[:3]), model.project(domain.attrs[:3]))


def test_bad_inputs():
    domain = Domain(["a", "b"], [2, 2])
    bad = CliqueVector({("a",): Factor(domain.project(["a"]), [0.0, np.nan])})
    with pytest.raises(ValueError, match=r"clique \['a'\] is not finite"):
        GraphicalModel(domain, [("a",)], bad)
    with pytest.raises(ValueError, match="total"):
        GraphicalModel(domain, [("a",)], total=-1.0)
    with pytest.raises(KeyError, match="'z'"):
        GraphicalModel(domain, [("a",)]).project(("z",))


def test_an_out_of_model_marginal_of_many_independent_attributes():
    """75 attributes with only their 1-way factors (MST's independent model of a wide table):
    a pair's marginal joins all 75 clique tables, more than numpy's einsum takes at once (32);
    it is the outer product of the two 1-way marginals."""
    rng = np.random.default_rng(0)
    domain = Domain([f"x{i}" for i in range(75)], rng.integers(2, 5, size=75).tolist())
    cliques = [(a,) for a in domain.attrs]
    pots = CliqueVector({c: Factor(domain.project(c), rng.normal(size=domain.project(c).shape)) for c in cliques})
    model = GraphicalModel(domain, cliques, pots, total=1000.0)
    a, b = model.project(("x3",)), model.project(("x74",))  # at the two ends of the chain of cliques
    np.testing.assert_allclose(model.project(("x3", "x74")), np.outer(a, b) / 1000.0, rtol=1e-10)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(1, 7), m=st.integers(0, 5))
def test_projections_of_many_cliques_match_brute_force(seed, d, m):
    rng = np.random.default_rng(seed)
    domain, _, pots, model = _random_model(rng, d, m)  # m = 0: no clique, every attribute on its own
    p, _ = _joint(domain, pots, 100.0)
    asked = [tuple(rng.choice(domain.attrs, size=rng.integers(1, min(d, 3) + 1), replace=False)) for _ in range(12)]
    for attrs, table in zip(asked, model.projections(asked)):
        np.testing.assert_allclose(table, _marginal(domain, p, attrs), atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(4, 9), m=st.integers(2, 9), k=st.integers(2, 5))
def test_projections_across_branches_match_brute_force(seed, d, m, k):
    """Sets spread over several cliques, including ones no single clique separates (then
    variable elimination answers) and sets of more attributes than AIM asks for."""
    rng = np.random.default_rng(seed)
    domain, _, pots, model = _random_model(rng, d, m, max_size=3)
    p, _ = _joint(domain, pots, 100.0)
    asked = [tuple(rng.choice(domain.attrs, size=min(k, d), replace=False)) for _ in range(10)]
    asked += [tuple(reversed(a)) for a in asked]  # the same sets again: shared messages, other order
    for attrs, table in zip(asked, model.projections(asked)):
        np.testing.assert_allclose(table, _marginal(domain, p, attrs), atol=1e-9)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_projections_of_every_triple_around_a_hub_match_brute_force(seed):
    """AIM's pattern: every 3-way set, asked in order (some twice), on a tree whose branches
    hang from a hub clique, so that sets differing only in a last attribute from the same
    branch are made together, their messages side by side."""
    rng = np.random.default_rng(seed)
    attrs = ["h0", "h1", "h2", "a1", "a2", "b1", "b2", "c1", "c2"]
    domain = Domain(attrs, rng.integers(2, 4, size=len(attrs)).tolist())
    cliques = [("h0", "h1", "h2"), ("h0", "a1"), ("a1", "a2"), ("h1", "b1"), ("b1", "b2"), ("h2", "c1"), ("h2", "c2")]
    pots = CliqueVector({cl: Factor(domain.project(cl), rng.normal(scale=2.0, size=domain.project(cl).shape))
                         for cl in cliques})
    model = GraphicalModel(domain, cliques, pots, total=100.0)
    p, _ = _joint(domain, pots, 100.0)
    asked = list(itertools.combinations(attrs, 3))
    asked += asked[::7]
    branches = BranchMarginals(model.tree, model._marginals, Memo(model.tree.cells))
    branches.expect(dict.fromkeys(asked))
    assert any(len(group) > 1 for group in branches._waiting.values())  # the shared product is exercised
    for attrs_asked, table in zip(asked, model.projections(asked)):
        np.testing.assert_allclose(table, _marginal(domain, p, attrs_asked), atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(4, 9), m=st.integers(2, 9), parts=st.integers(2, 4))
def test_projections_in_parts_side_by_side_match_brute_force_and_one_thread(seed, d, m, parts):
    """The parts of a large tree's projections (every tree counted large here), made by threads
    side by side or one after the other, give the same tables to the last bit, and right ones."""
    import ektelo_pgm.pgm.model as model_module

    rng = np.random.default_rng(seed)
    domain, _, pots, model = _random_model(rng, d, m, max_size=3)
    p, _ = _joint(domain, pots, 100.0)
    asked = [tuple(rng.choice(domain.attrs, size=rng.integers(1, 4), replace=False)) for _ in range(30)] + [()]
    asked += [tuple(reversed(a)) for a in asked[::3]]
    made = {}
    for threads in (1, parts):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(model_module, "THREADED_CELLS", 0)
            patch.setattr(model_module.os, "cpu_count", lambda: parts)
            patch.setattr(model_module, "spare_threads", lambda most, threads=threads: min(most, threads))
            made[threads] = list(model.projections(asked))
    for attrs, one, side_by_side in zip(asked, made[1], made[parts]):
        np.testing.assert_array_equal(one, side_by_side)
        np.testing.assert_allclose(one, _marginal(domain, p, attrs) if attrs else 100.0, atol=1e-9)


@given(weights=st.lists(st.integers(0, 50), max_size=20), k=st.integers(1, 5))
def test_balanced_lists_hold_every_position_once_and_differ_by_at_most_the_heaviest(weights, k):
    lists = balanced(weights, k)
    assert sorted(i for part in lists for i in part) == list(range(len(weights)))
    assert len(lists) <= k and all(part == sorted(part) for part in lists)
    loads = [sum(weights[i] for i in part) for part in lists] + [0] * (k - len(lists))
    assert max(loads) - min(loads) <= max(weights, default=0)


def test_memo_drops_the_least_recently_used_tables():
    memo = Memo(10)
    memo.keep("a", np.zeros(4))
    memo.keep("b", np.zeros(4))
    memo["a"]  # used: "b" is now the oldest
    memo.keep("c", np.zeros(4))
    assert list(memo) == ["a", "c"] and memo.cells == 8
    memo.keep("d", np.zeros(11))  # larger than the whole limit: not kept, nothing dropped
    assert list(memo) == ["a", "c"] and memo.cells == 8


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(1, 4))
def test_sum_product_matches_einsum(seed, k):
    """Chains of products, broadcast ones laid out for the next product included, against einsum."""
    rng = np.random.default_rng(seed)
    names = "abcdef"
    sizes = dict(zip(names, rng.integers(1, 4, size=len(names)).tolist()))
    factors = []
    for _ in range(k):
        vs = tuple(rng.permutation(list(names))[:rng.integers(1, 5)])
        factors.append((vs, rng.random([sizes[v] for v in vs])))
    held = sorted({v for vs, _ in factors for v in vs})
    out = tuple(rng.permutation(held)[:rng.integers(0, len(held) + 1)])
    expected = np.einsum(",".join("".join(vs) for vs, _ in factors) + "->" + "".join(out), *[t for _, t in factors])
    assert np.allclose(sum_product(factors, out), expected)
