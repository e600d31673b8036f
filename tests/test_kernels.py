"""The numba kernels agree with their numpy twins."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ektelo_pgm.kernels import (assemble, assemble_reference, calibrate, calibrate_reference, identity_loss,
                                identity_loss_reference, predicted_decrease, predicted_decrease_reference, project,
                                project_reference, step, step_reference)
from ektelo_pgm.domain import Domain
from ektelo_pgm.kernels import assemble_runs, assemble_runs_reference, project_runs, project_runs_reference
from ektelo_pgm.kernels.tree import exp_nonpositive
from ektelo_pgm.pgm.junction_tree import JunctionTree, index_map, index_runs


def _onto(rng, n, m):
    """A random int32 map from n cells onto all of m cells (n >= m)."""
    return rng.permutation(np.arange(n) % m).astype(np.int32)


def _random_tree(rng, k):
    """A random tree with random (single-cell run) maps onto its separators."""
    sizes = rng.integers(1, 30, size=k)
    parent = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, k)], dtype=np.int64)
    clique_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    seps = [0] + [int(rng.integers(1, min(sizes[c], sizes[parent[c]]) + 1)) for c in range(1, k)]
    sep_off = np.concatenate([[0], np.cumsum(seps)]).astype(np.int64)
    up = [np.zeros(0, dtype=np.int32)] + [_onto(rng, sizes[c], seps[c]) for c in range(1, k)]
    down = [np.zeros(0, dtype=np.int32)] + [_onto(rng, sizes[parent[c]], seps[c]) for c in range(1, k)]
    order = np.arange(k - 1, -1, -1, dtype=np.int64)
    runs = []
    for rows in (up, down):
        runs += [np.ones(k, dtype=np.int64), rng.random(k) < 0.5,
                 np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64), np.concatenate(rows)]
    return (clique_off, order, parent, sep_off, *runs)


def _check_calibrate(tree, theta, total):
    n = theta.size
    fast = (np.empty(n), np.empty(n))
    fast = (*fast, calibrate(theta, *tree, total, *fast))
    slow = (np.empty(n), np.empty(n))
    slow = (*slow, calibrate_reference(theta, *tree, total, *slow))
    scale = max(1.0, np.abs(theta).max())
    np.testing.assert_allclose(fast[0], slow[0], rtol=1e-9, atol=1e-9 * scale)
    np.testing.assert_allclose(fast[1], slow[1], rtol=1e-9, atol=1e-9)
    assert abs(fast[2] - slow[2]) <= 1e-9 * max(1.0, abs(slow[2]))
    clique_off = tree[0]
    for c in range(len(clique_off) - 1):  # every clique's marginal sums to the total
        assert abs(fast[1][clique_off[c]:clique_off[c + 1]].sum() - total) < 1e-8 * total


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(1, 12), scale=st.sampled_from([0.1, 3.0, 400.0, 3000.0]))
def test_calibrate_matches_reference(seed, k, scale):
    rng = np.random.default_rng(seed)
    tree = _random_tree(rng, k)
    _check_calibrate(tree, rng.normal(size=tree[0][-1]) * scale, 123.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(1, 7), m=st.integers(1, 6), scale=st.sampled_from([1.0, 1000.0]))
def test_calibrate_on_junction_trees(seed, d, m, scale):
    rng = np.random.default_rng(seed)
    domain = Domain([f"x{i}" for i in range(d)], rng.integers(1, 5, size=d).tolist())
    cliques = [tuple(rng.choice(domain.attrs, size=rng.integers(1, min(d, 4) + 1), replace=False)) for _ in range(m)]
    lay = JunctionTree(domain, cliques).layout()
    tree = tuple(lay[key] for key in ("clique_off", "order", "parent", "sep_off", "up_run", "up_kept", "up_off",
                                      "up_rows", "down_run", "down_kept", "down_off", "down_rows"))
    _check_calibrate(tree, rng.normal(size=lay["clique_off"][-1]) * scale, 7.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(1, 6), p=st.integers(1, 8))
def test_assemble_and_project_match_reference(seed, k, p):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, size=k)
    clique_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    host = rng.integers(0, k, size=p).astype(np.int64)
    small = [int(rng.integers(1, sizes[h] + 1)) for h in host]
    p_off = np.concatenate([[0], np.cumsum(small)]).astype(np.int64)
    maps = np.concatenate([_onto(rng, sizes[h], m) for h, m in zip(host, small)])
    map_off = np.concatenate([[0], np.cumsum(sizes[host])]).astype(np.int64)
    theta = rng.normal(size=p_off[-1])
    mu = rng.random(clique_off[-1])
    args = (p_off, host, map_off, maps, clique_off)
    outs = [np.full(clique_off[-1], np.nan) for _ in range(2)] + [np.full(p_off[-1], np.nan) for _ in range(2)]
    assemble(theta, *args, outs[0])
    assemble_reference(theta, *args, outs[1])
    project(mu, *args, outs[2])
    project_reference(mu, *args, outs[3])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)
    np.testing.assert_allclose(outs[2], outs[3], rtol=1e-12)
    assert np.isclose(outs[0] @ mu, theta @ outs[2])  # project is the adjoint of assemble


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 200), m=st.integers(1, 50), l1=st.booleans())
def test_identity_loss_matches_reference(seed, n, m, l1):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=m)
    index = rng.integers(0, m, size=n).astype(np.int64)
    y, w = rng.normal(size=n), rng.random(n) + 0.1
    g1, g2 = np.full(m, np.nan), np.full(m, np.nan)
    assert np.isclose(identity_loss(mu, index, y, w, l1, g1), identity_loss_reference(mu, index, y, w, l1, g2))
    np.testing.assert_allclose(g1, g2, atol=1e-12)
    a, b = np.full(m, np.nan), np.full(m, np.nan)
    step(mu, 0.3, g1, a)
    step_reference(mu, 0.3, g1, b)
    np.testing.assert_allclose(a, b)
    assert np.isclose(predicted_decrease(g1, mu, a), predicted_decrease_reference(g1, mu, a))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 500))
def test_exp_nonpositive_matches_numpy(seed, n):
    rng = np.random.default_rng(seed)
    x = -rng.exponential(50.0, size=n)
    x[rng.random(n) < 0.1] = -np.inf
    y = x.copy()
    exp_nonpositive(y, n, np.empty(n, dtype=np.int64))
    expected = np.where(x < -708, 0.0, np.exp(x))
    np.testing.assert_allclose(y, expected, rtol=5e-14, atol=0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), p=st.integers(1, 6))
def test_run_kernels_match_plain_maps(seed, p):
    rng = np.random.default_rng(seed)
    domain = Domain(list("abcde"), rng.integers(1, 4, size=5).tolist())
    hosts = [tuple(sorted(rng.choice(list("abcde"), size=rng.integers(1, 6), replace=False))) for _ in range(2)]
    clique_off = np.concatenate([[0], np.cumsum([domain.size(h) for h in hosts])]).astype(np.int64)
    host = rng.integers(0, 2, size=p).astype(np.int64)
    small = []
    for h in host:  # any subset of the host, sometimes permuted (then runs fall back to single cells)
        attrs = list(rng.choice(hosts[h], size=rng.integers(1, len(hosts[h]) + 1), replace=False))
        small.append(tuple(attrs if rng.random() < 0.3 else sorted(attrs)))
    runs = [index_runs(domain, hosts[h], s) for h, s in zip(host, small)]
    for (length, kept, rows), h, s in zip(runs, host, small):
        full = index_map(domain, hosts[h], s)
        expected = np.repeat(rows, length) + (np.tile(np.arange(length), rows.size) if kept else 0)
        np.testing.assert_array_equal(full, expected)
    p_off = np.concatenate([[0], np.cumsum([domain.size(s) for s in small])]).astype(np.int64)
    run = np.array([r[0] for r in runs], dtype=np.int64)
    kept = np.array([r[1] for r in runs], dtype=np.bool_)
    row_off = np.concatenate([[0], np.cumsum([r[2].size for r in runs])]).astype(np.int64)
    rows = np.concatenate([r[2] for r in runs])
    args = (p_off, host, run, kept, row_off, rows, clique_off)
    theta, mu = rng.normal(size=p_off[-1]), rng.random(clique_off[-1])
    outs = [np.full(clique_off[-1], np.nan) for _ in range(2)] + [np.full(p_off[-1], np.nan) for _ in range(2)]
    assemble_runs(theta, *args, outs[0])
    assemble_runs_reference(theta, *args, outs[1])
    project_runs(mu, *args, outs[2])
    project_runs_reference(mu, *args, outs[3])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12)
    np.testing.assert_allclose(outs[2], outs[3], rtol=1e-12)
    assert np.isclose(outs[0] @ mu, theta @ outs[2])
