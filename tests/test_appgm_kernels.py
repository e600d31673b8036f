"""The CONVEX-GBP kernels of ektelo_pgm.kernels.gbp against their numpy twins."""
import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm.domain import Domain
from ektelo_pgm.kernels.gbp import (gbp_absorb, gbp_absorb_reference, gbp_logsumexp, gbp_logsumexp_reference,
                                    gbp_normalize, gbp_normalize_reference)
from ektelo_pgm.pgm.region_graph import RegionGraph

DOMAIN = Domain(["A", "B", "C", "D", "E"], [2, 3, 4, 2, 3])

cliques_strategy = st.lists(
    st.lists(st.sampled_from(DOMAIN.attrs), min_size=1, max_size=3, unique=True), min_size=1, max_size=6
)


def edges_of(graph):
    lay = graph.layout()
    return (lay["msg_off"], lay["host"], lay["map_off"], lay["maps"], lay["region_off"]), lay


@settings(max_examples=40, deadline=None)
@given(cliques_strategy, st.sampled_from(["saturated", "factor", "tree"]), st.integers(0, 2**31), st.floats(0.1, 900))
def test_kernels_match_numpy_twins(cliques, kind, seed, scale):
    graph = RegionGraph.build(kind, DOMAIN, cliques)
    edges, lay = edges_of(graph)
    rng = np.random.default_rng(seed)
    values = rng.normal(size=graph.cells) * scale
    np.testing.assert_allclose(gbp_logsumexp(values, *edges), gbp_logsumexp_reference(values, *edges), rtol=1e-12, atol=1e-9)
    messages = rng.normal(size=int(lay["msg_off"][-1]))
    np.testing.assert_allclose(gbp_absorb(messages, *edges, lay["child"]),
                               gbp_absorb_reference(messages, *edges, lay["child"]), atol=1e-12)
    out, log_z = gbp_normalize(values, graph.offsets, 7.0)
    ref, ref_z = gbp_normalize_reference(values, graph.offsets, 7.0)
    np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(log_z, ref_z, rtol=1e-12)
    np.testing.assert_allclose(np.add.reduceat(out, graph.offsets[:-1]), 7.0)


def test_logsumexp_against_direct_formula_and_extreme_values():
    graph = RegionGraph.build("saturated", DOMAIN, [("A", "B", "C"), ("B", "C", "D")])
    edges, lay = edges_of(graph)
    values = np.random.default_rng(1).normal(size=graph.cells)
    values[graph.offsets[0]] = 2000.0   # one dominant cell: the other child cells need the exact pass
    values[graph.offsets[0] + 1] = -np.inf
    got = gbp_logsumexp(values, *edges)
    for j, (p, c) in enumerate(graph.edges):
        parent = values[graph.offsets[p]:graph.offsets[p + 1]]
        index = lay["maps"][lay["map_off"][j]:lay["map_off"][j] + parent.size]
        for s in range(graph.sizes[c]):
            cells = parent[index == s]
            top = cells.max()
            expected = top + np.log(np.exp(cells - top).sum()) if np.isfinite(top) else -np.inf
            assert np.isclose(got[lay["msg_off"][j] + s], expected, rtol=1e-13)
    assert np.all(np.isfinite(got))


def test_absorb_handles_graph_without_edges():
    graph = RegionGraph.build("factor", DOMAIN, [("A",), ("B",)])
    edges, lay = edges_of(graph)
    np.testing.assert_array_equal(gbp_absorb(np.zeros(0), *edges, lay["child"]), np.zeros(graph.cells))
