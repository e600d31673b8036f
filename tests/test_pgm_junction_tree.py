"""Junction trees: coverage, running intersection, index maps and the size refusal."""
import itertools

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from ektelo_pgm.domain import Domain
from ektelo_pgm.kernels.triangulation import SATURATED
from ektelo_pgm.pgm.junction_tree import (JunctionTree, ModelTooLargeError, elimination_order, index_map,
                                         triangulated_mb, triangulated_mb_with)


def _check_tree(tree, domain, cliques):
    sets = [set(c) for c in tree.cliques]
    assert set().union(*sets) == set(domain.attrs)
    for cl in cliques:
        assert any(set(cl) <= s for s in sets), cl
    for a, b in itertools.combinations(range(len(sets)), 2):
        assert not sets[a] <= sets[b] and not sets[b] <= sets[a]  # maximal
    # running intersection: the cliques holding any attribute form a connected subtree
    for attr in domain.attrs:
        holders = {i for i, s in enumerate(sets) if attr in s}
        tops = [i for i in holders if tree.parent[i] < 0 or tree.parent[i] not in holders]
        assert len(tops) == 1, attr
    position = {c: i for i, c in enumerate(tree.order)}
    for c, p in enumerate(tree.parent):
        if p >= 0:
            assert position[c] < position[p]
    assert tree.order[-1] == tree.root and tree.cells == sum(domain.size(c) for c in tree.cliques)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(1, 8), m=st.integers(0, 7))
def test_random_clique_sets(seed, d, m):
    rng = np.random.default_rng(seed)
    domain = Domain([f"x{i}" for i in range(d)], rng.integers(1, 4, size=d).tolist())
    cliques = [tuple(rng.choice(domain.attrs, size=rng.integers(1, d + 1), replace=False)) for _ in range(m)]
    cliques += cliques[:2]  # duplicates, in permuted order too
    cliques += [tuple(reversed(c)) for c in cliques[:2]]
    tree = JunctionTree(domain, cliques)
    _check_tree(tree, domain, cliques)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.sampled_from([1, 2, 5, 9, 16, 63, 64, 65, 130]), m=st.integers(0, 12))
def test_triangulated_size_kernel_matches_the_junction_tree(seed, d, m):
    """The compiled size (bitmask elimination, both heuristics) is the junction tree's, including
    wide cliques, ties between heuristics, attributes of size 1 and bitmasks of several words;
    with one more clique it is that of the tree with it."""
    rng = np.random.default_rng(seed)
    domain = Domain([f"x{i}" for i in range(d)], rng.integers(1, 7, size=d).tolist())

    def draw():
        return tuple(rng.choice(domain.attrs, size=rng.integers(1, min(d, 5) + 1), replace=False))

    cliques = [draw() for _ in range(m)]
    assert triangulated_mb(domain, cliques) == JunctionTree(domain, cliques).mb
    extra = [draw() for _ in range(3)] + cliques[:1]
    extra += [tuple(reversed(c)) for c in extra]  # the same edges again: one elimination, same size
    memo = {}
    for model in (cliques, cliques + extra[:1]):  # the memo is kept across graphs, as AIM keeps it
        for _ in range(2):
            np.testing.assert_array_equal(triangulated_mb_with(domain, model, extra, memo),
                                          [JunctionTree(domain, [*model, c]).mb for c in extra])


def test_triangulated_size_saturates():
    wide = Domain([f"x{i}" for i in range(40)], [100] * 40)
    assert triangulated_mb(wide, [wide.attrs]) == SATURATED * 8 / 2**20


def test_chain_cycle_and_star():
    dom = Domain([f"a{i}" for i in range(12)], [3] * 12)
    chain = [(f"a{i}", f"a{i+1}", f"a{i+2}") for i in range(10)]
    tree = JunctionTree(dom, chain)
    assert sorted(tree.cliques) == sorted(chain)
    cycle = [(f"a{i}", f"a{(i + 1) % 6}") for i in range(6)]
    tree = JunctionTree(dom, cycle)
    _check_tree(tree, dom, cycle)
    assert max(len(c) for c in tree.cliques) == 3  # a cycle triangulates into triangles
    whole = JunctionTree(dom, [dom.attrs, ("a1", "a2")])
    assert whole.cliques == [dom.attrs]


def test_elimination_orders_are_deterministic():
    dom = Domain(list("abcdef"), [2, 3, 4, 2, 3, 4])
    graph = {a: set() for a in dom.attrs}
    for x, y in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("e", "f")]:
        graph[x].add(y)
        graph[y].add(x)
    for method in ("min_fill", "min_size"):
        first = elimination_order(dom, graph, method)
        assert first == elimination_order(dom, graph, method) and sorted(first) == sorted(dom.attrs)
    with pytest.raises(ValueError, match="min_fill"):
        elimination_order(dom, graph, "random")


def test_refuses_large_models_before_allocating():
    dom = Domain([f"a{i}" for i in range(30)], [100] * 30)
    with pytest.raises(ModelTooLargeError, match=r"MB.*largest cliques: \['a0', 'a1', 'a2', 'a3', 'a4'"):
        JunctionTree(dom, [tuple(f"a{i}" for i in range(5)), ("a5", "a6")], max_mb=100)
    tree = JunctionTree(dom, [("a0", "a1"), ("a1", "a2")], max_mb=1)
    assert tree.mb < 1


def test_index_map_matches_unravel():
    dom = Domain(list("abc"), [2, 3, 4])
    idx = index_map(dom, ("a", "b", "c"), ("c", "a"))
    a, b, c = np.unravel_index(np.arange(24), (2, 3, 4))
    np.testing.assert_array_equal(idx, c * 2 + a)
    assert index_map(dom, ("b",), ()).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="not in the clique"):
        index_map(dom, ("a",), ("b",))


@pytest.mark.parametrize("cells", ["parallel", "serial"])
def test_extended_sizes_are_the_same_in_parallel_and_serial(monkeypatch, cells):
    """Whether the machine has idle cores (the candidates spread over threads) or not, each
    extra clique gets the junction tree's size."""
    from ektelo_pgm.kernels import tree as kernels

    threshold = kernels.PARALLEL_CELLS if cells == "parallel" else kernels.SERIAL
    monkeypatch.setattr(kernels, "parallel_cells", lambda: threshold)
    rng = np.random.default_rng(3)
    domain = Domain([f"x{i}" for i in range(12)], rng.integers(2, 6, size=12).tolist())
    cliques = [tuple(rng.choice(domain.attrs, size=3, replace=False)) for _ in range(6)]
    extra = [tuple(rng.choice(domain.attrs, size=3, replace=False)) for _ in range(40)]
    np.testing.assert_array_equal(triangulated_mb_with(domain, cliques, extra),
                                  [JunctionTree(domain, [*cliques, c]).mb for c in extra])
