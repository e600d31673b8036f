import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm.domain import Domain
from ektelo_pgm.pgm.factor import Factor
from ektelo_pgm.pgm.junction_tree import JunctionTree
from ektelo_pgm.pgm.region_graph import RegionGraph

DOMAIN = Domain(["A", "B", "C", "D", "E", "F"], [2, 3, 2, 4, 2, 3])
FIGURE_1 = [("A", "B", "C"), ("A", "D"), ("B", "C", "D"), ("D", "E")]

cliques_strategy = st.lists(
    st.lists(st.sampled_from(DOMAIN.attrs), min_size=1, max_size=4, unique=True), min_size=1, max_size=7
)


def brute_closure(cliques):
    """Maximal cliques closed under pairwise intersection, by repeated sweeps."""
    sets = {frozenset(c) for c in cliques}
    regions = {s for s in sets if not any(s < t for t in sets)}
    while True:
        new = {a & b for a in regions for b in regions if a & b} - regions
        if not new:
            return regions
        regions |= new


def as_sets(graph):
    regions = {frozenset(r) for r in graph.regions}
    edges = {(frozenset(graph.regions[p]), frozenset(graph.regions[c])) for p, c in graph.edges}
    return regions, edges


def uncovered(cliques):
    used = set().union(*map(set, cliques))
    return {frozenset([a]) for a in DOMAIN.attrs if a not in used}


def test_figure_1_saturated_and_factor_graphs():
    regions, edges = as_sets(RegionGraph.build("saturated", DOMAIN, FIGURE_1))
    f = frozenset
    assert regions == {f("ABC"), f("AD"), f("BCD"), f("DE"), f("BC"), f("A"), f("D"), f("F")}
    assert edges == {(f("ABC"), f("BC")), (f("BCD"), f("BC")), (f("ABC"), f("A")), (f("AD"), f("A")),
                     (f("AD"), f("D")), (f("BCD"), f("D")), (f("DE"), f("D"))}
    regions, edges = as_sets(RegionGraph.build("factor", DOMAIN, FIGURE_1))
    assert regions == {f("ABC"), f("AD"), f("BCD"), f("DE")} | {f(a) for a in "ABCDEF"}
    assert (f("ABC"), f("B")) in edges and (f("ABC"), f("BC")) not in edges and len(edges) == 10


def test_figure_1_junction_tree_merges_the_loop():
    graph = RegionGraph.build("tree", DOMAIN, FIGURE_1)
    regions, edges = as_sets(graph)
    assert frozenset("ABCD") in regions and frozenset("DE") in regions
    assert edges == {(frozenset("ABCD"), frozenset("D")), (frozenset("DE"), frozenset("D"))}


@settings(max_examples=60, deadline=None)
@given(cliques_strategy)
def test_saturated_graph_is_the_intersection_closure_with_maximal_edges(cliques):
    graph = RegionGraph.build("saturated", DOMAIN, cliques)
    regions, edges = as_sets(graph)
    assert regions == brute_closure(cliques) | uncovered(cliques)
    expected = {
        (r, s) for r in regions for s in regions
        if s < r and not any(s < t < r for t in regions)
    }
    assert edges == expected
    for c in cliques:
        host = graph.host(c)
        assert host is not None and set(c) <= set(graph.regions[host])
        assert graph.sizes[host] == min(graph.sizes[i] for i, r in enumerate(graph.regions) if set(c) <= set(r))


@settings(max_examples=40, deadline=None)
@given(cliques_strategy)
def test_factor_and_tree_graphs_support_every_clique(cliques):
    for kind in ("factor", "tree"):
        graph = RegionGraph.build(kind, DOMAIN, cliques)
        assert all(graph.supports(c) for c in cliques)
        assert {a for r in graph.regions for a in r} == set(DOMAIN.attrs)
        for p, c in graph.edges:
            assert set(graph.regions[c]) < set(graph.regions[p])
    factor = RegionGraph.build("factor", DOMAIN, cliques)
    assert all(len(factor.regions[c]) == 1 for _, c in factor.edges)


@settings(max_examples=30, deadline=None)
@given(cliques_strategy)
def test_tree_graph_holds_junction_tree_cliques_and_their_separators(cliques):
    tree = JunctionTree(DOMAIN, cliques)
    graph = RegionGraph.build("tree", DOMAIN, cliques)
    tops = {graph.regions[i] for i in range(len(graph.regions)) if not graph.parents[i]}
    assert tops == set(tree.cliques)
    separators = {tree.separator(k) for k in range(len(tree.cliques))} - {()}
    assert set(graph.regions) - tops == separators
    for c in range(len(graph.regions)):
        for p in graph.parents[c]:
            assert set(graph.regions[c]) < set(graph.regions[p])


def test_layout_maps_send_parent_cells_to_child_cells():
    graph = RegionGraph.build("saturated", DOMAIN, FIGURE_1 + [("B", "E", "F")])
    lay = graph.layout()
    rng = np.random.default_rng(0)
    values = rng.random(graph.cells)
    for j, (p, c) in enumerate(graph.edges):
        parent = Factor(DOMAIN.project(graph.regions[p]), graph.segment(values, p))
        index = lay["maps"][lay["map_off"][j]:lay["map_off"][j + 1]]
        summed = np.bincount(index, graph.segment(values, p).ravel(), minlength=graph.sizes[c])
        np.testing.assert_allclose(summed, parent.project(graph.regions[c]).datavector())
        cells = lay["msg_cell"][lay["msg_off"][j]:lay["msg_off"][j + 1]]
        np.testing.assert_array_equal(cells, np.arange(graph.offsets[c], graph.offsets[c + 1]))


def test_counting_numbers_and_errors():
    graph = RegionGraph.build("saturated", DOMAIN, FIGURE_1, counting_numbers={("C", "B"): 2.5})
    assert graph.kappa[graph.index[("B", "C")]] == 2.5
    assert np.all(graph.kappa > 0)
    with pytest.raises(ValueError, match="must be positive"):
        RegionGraph.build("saturated", DOMAIN, FIGURE_1, counting_numbers={("B", "C"): 0.0})
    with pytest.raises(ValueError, match="not a region"):
        RegionGraph.build("factor", DOMAIN, FIGURE_1, counting_numbers={("B", "C"): 1.0})
    with pytest.raises(ValueError, match="kind must be one of"):
        RegionGraph.build("bethe", DOMAIN, FIGURE_1)
    with pytest.raises(KeyError, match="'Z'"):
        RegionGraph.build("saturated", DOMAIN, [("A", "Z")])
    with pytest.raises(ValueError, match="proper subset"):
        RegionGraph(DOMAIN, [("A", "B"), ("C",)], [(("A", "B"), ("C",))])
    wide = Domain([f"x{i}" for i in range(18)], [2] * 18)
    with pytest.raises(ValueError, match="18 attributes.*region_graph='factor'"):
        RegionGraph.build("saturated", wide, [wide.attrs])
    assert len(RegionGraph.build("factor", wide, [wide.attrs]).edges) == 18


def test_host_of_empty_and_unsupported_sets():
    graph = RegionGraph.build("saturated", DOMAIN, [("A", "B"), ("B", "C")])
    assert graph.host(()) is not None
    assert graph.host(("A", "C")) is None and not graph.supports(("A", "C"))
    assert graph.regions[graph.host(("B",))] == ("B",)
