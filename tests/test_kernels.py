"""The numba kernels agree with their numpy twins."""
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from ektelo_pgm.domain import Domain
from ektelo_pgm.kernels import (assemble, assemble_reference, calibrate, calibrate_reference, dot, dot_reference,
                                exp_shifted, identity_loss, identity_loss_reference, log_partition,
                                predicted_decrease, predicted_decrease_reference, project, project_reference,
                                runs_to_maps, step, step_reference)
from ektelo_pgm.kernels import tree as kernels_tree
from ektelo_pgm.kernels.tree import (BLOCK, PARALLEL_CELLS, SERIAL, ParameterLayout, TreeLayout, parallel_cells,
                                     workspace)
from ektelo_pgm.pgm.inference import MarginalOracle, staging
from ektelo_pgm.pgm.junction_tree import index_map, index_runs


def _onto(rng, n, m):
    """A random int32 map from n cells onto all of m cells (n >= m)."""
    return rng.permutation(np.arange(n) % m).astype(np.int32)


def _csr(groups):
    """(offsets, members) of a list of int lists."""
    return (np.concatenate([[0], np.cumsum([len(g) for g in groups])]).astype(np.int64),
            np.array([x for g in groups for x in g], dtype=np.int64))


def _random_tree(rng, k):
    """The TreeLayout and ParameterLayout of a random tree with random (single-cell run) maps onto
    its separators, and 0-2 random parameter tables hosted by each clique, plus at times a staged
    table hosting 1-2 more (and at times a staged table of its own, nested up to three deep)."""
    sizes = rng.integers(1, 30, size=k)
    parent = np.array([-1] + [int(rng.integers(0, i)) for i in range(1, k)], dtype=np.int64)
    clique_off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    seps = [0] + [int(rng.integers(1, min(sizes[c], sizes[parent[c]]) + 1)) for c in range(1, k)]
    sep_off = np.concatenate([[0], np.cumsum(seps)]).astype(np.int64)
    child_off, children = _csr([[c for c in range(k) if parent[c] == p] for p in range(k)])
    up = [np.zeros(0, dtype=np.int32)] + [_onto(rng, sizes[c], seps[c]) for c in range(1, k)]
    down = [np.zeros(0, dtype=np.int32)] + [_onto(rng, sizes[parent[c]], seps[c]) for c in range(1, k)]
    order = np.arange(k - 1, -1, -1, dtype=np.int64)
    runs = []
    for rows in (up, down):
        runs += [np.ones(k, dtype=np.int64), rng.random(k) < 0.5,
                 np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64), np.concatenate(rows)]
    params, stages = [], []  # maps from the host's cells; staged tables with their members, inner first

    def table(host_cells):
        return _onto(rng, host_cells, int(rng.integers(1, host_cells + 1)))

    def param(host_cells):
        params.append(table(host_cells))
        return len(params) - 1, False

    def stage(host_cells, depth):
        onto = table(host_cells)
        members = [param(onto.max() + 1) for _ in range(int(rng.integers(1, 3)))]
        if depth < 2 and rng.random() < 0.3:
            members.append(stage(onto.max() + 1, depth + 1))
        stages.append((onto, members))
        return len(stages) - 1, True

    groups = []
    for c in range(k):
        groups.append([param(sizes[c]) for _ in range(int(rng.integers(0, 3)))])
        if rng.random() < 0.4:
            groups[-1].append(stage(sizes[c], 0))

    def number(ref):
        return ref[0] + len(params) if ref[1] else ref[0]

    tables = params + [onto for onto, _ in stages]
    hosted_off, hosted = _csr([[number(r) for r in g] for g in groups])
    staged_off, staged = _csr([[number(r) for r in members] for _, members in stages])
    p_off = np.concatenate([[0], np.cumsum([t.max(initial=-1) + 1 for t in tables])]).astype(np.int64)
    layout = ParameterLayout(
        hosted_off, hosted, p_off, np.ones(len(tables), dtype=np.int64), rng.random(len(tables)) < 0.5,
        np.concatenate([[0], np.cumsum([t.size for t in tables])]).astype(np.int64),
        np.concatenate(tables) if tables else np.zeros(0, dtype=np.int32), staged_off, staged)
    return TreeLayout(clique_off, order, parent, child_off, children, sep_off, *runs), layout


def _check_calibrate(tree, params, theta, total, parallel_cells=PARALLEL_CELLS):
    """calibrate = calibrate_reference on one tree: log-probabilities, parameter marginals, log Z;
    log_partition = calibrate's log Z to the last bit."""
    clique_off, k = tree.clique_off, len(tree.clique_off) - 1
    results = []
    for kernel in (calibrate, calibrate_reference):
        work, mu = workspace(tree, params), np.full(theta.size, np.nan)
        for scratch in work[:-1]:  # all but the int64 bits: NaN, so that reading before writing shows
            scratch.fill(np.nan)
        log_z = kernel(theta, total, tree, params, mu, work, parallel_cells)
        results.append((work.belief - np.repeat(work.log_norm, np.diff(clique_off)), mu, log_z))
    (fast_b, fast_mu, fast_z), (slow_b, slow_mu, slow_z) = results
    scale = max(1.0, np.abs(theta).max(initial=0))
    np.testing.assert_allclose(fast_b, slow_b, rtol=1e-9, atol=1e-9 * scale)
    np.testing.assert_allclose(fast_mu, slow_mu, rtol=1e-9, atol=1e-9)
    assert abs(fast_z - slow_z) <= 1e-9 * max(1.0, abs(slow_z))
    assert log_partition(theta, tree, params, workspace(tree, params), parallel_cells) == fast_z
    for c in range(k):  # every clique's marginal sums to the total
        assert abs(np.exp(fast_b[clique_off[c]:clique_off[c + 1]]).sum() * total - total) < 1e-8 * total


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), k=st.integers(1, 12), scale=st.sampled_from([0.1, 3.0, 400.0, 3000.0]))
def test_calibrate_matches_reference(seed, k, scale):
    rng = np.random.default_rng(seed)
    tree, params = _random_tree(rng, k)
    _check_calibrate(tree, params, rng.normal(size=params.p_off[len(params.p_off) - len(params.staged_off)]) * scale,
                     123.0)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(1, 7), m=st.integers(1, 6), scale=st.sampled_from([1.0, 1000.0]))
def test_calibrate_on_junction_trees(seed, d, m, scale):
    rng = np.random.default_rng(seed)
    domain = Domain([f"x{i}" for i in range(d)], rng.integers(1, 5, size=d).tolist())
    cliques = [tuple(rng.choice(domain.attrs, size=rng.integers(1, min(d, 4) + 1), replace=False)) for _ in range(m)]
    oracle = MarginalOracle(domain, cliques)
    _check_calibrate(oracle.layout, oracle.params, rng.normal(size=oracle.size) * scale, 7.0)


def test_calibrate_on_cliques_big_enough_for_all_cores():
    rng = np.random.default_rng(5)
    domain = Domain(list("abcde"), [40, 30, 40, 30, 3])
    oracle = MarginalOracle(domain, [("a", "b", "c"), ("b", "c", "d"), ("a",), ("d", "c"), ("d", "e")])
    assert np.diff(oracle.layout.clique_off).max() >= PARALLEL_CELLS
    for scale, threshold in ((1.0, PARALLEL_CELLS), (50.0, PARALLEL_CELLS), (50.0, SERIAL)):
        _check_calibrate(oracle.layout, oracle.params, rng.normal(size=oracle.size) * scale, 1000.0, threshold)
    theta = rng.normal(size=oracle.size) * 3.0
    marginals = []
    for threshold in (PARALLEL_CELLS, SERIAL):  # chunked sums onto small tables: the same bits either way
        mu = np.empty(oracle.size)
        calibrate(theta, 1000.0, oracle.layout, oracle.params, mu, oracle.workspace(), threshold)
        marginals.append(mu)
    assert np.array_equal(*marginals)


def test_calibrate_through_staged_tables():
    """Every pair of a 4-attribute domain: one tree clique hosting six tables, four staged."""
    rng = np.random.default_rng(11)
    domain = Domain(list("abcd"), [30, 4, 3, 20])
    pairs = [(x, y) for i, x in enumerate("abcd") for y in "abcd"[i + 1:]]
    oracle = MarginalOracle(domain, pairs)
    assert len(oracle.layout.clique_off) == 2 and len(oracle.params.staged_off) - 1 >= 2
    for scale in (1.0, 300.0):
        _check_calibrate(oracle.layout, oracle.params, rng.normal(size=oracle.size) * scale, 50.0)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(1, 7), m=st.integers(0, 9))
def test_staging_plans_cover_each_table_once_and_save_cells(seed, d, m):
    rng = np.random.default_rng(seed)
    domain = Domain([f"x{i}" for i in range(d)], rng.integers(1, 40, size=d).tolist())
    tables = [tuple(sorted(rng.choice(d, size=rng.integers(0, d + 1), replace=False))) for _ in range(m)]
    tables = [tuple(domain.attrs[i] for i in t) for t in tables]
    plan, direct = staging(domain, domain.attrs, tables)
    attrs = [set(t) for t in tables] + [set(a) for a, _ in plan]
    seen = list(direct) + [j for _, inner in plan for j in inner]
    assert sorted(seen) == list(range(m + len(plan)))
    for s, (union, inner) in enumerate(plan):
        assert set(union) < set(domain.attrs) and all(attrs[j] <= set(union) for j in inner)
        assert all(j < m + s for j in inner) and len(inner) >= 2  # inner tables first; a group, not one table
    size = domain.size()
    passes = len(direct) * size + sum(len(inner) * domain.size(union) for union, inner in plan)
    assert passes <= m * size


def _big_oracle_marginals(seed):
    """Parameter marginals of a model with a 48,000-cell clique (parallel paths in a parent process)."""
    domain = Domain(list("abcd"), [40, 30, 40, 30])
    oracle = MarginalOracle(domain, [("a", "b", "c"), ("b", "c", "d")])
    return oracle.calibrate(np.random.default_rng(seed).normal(size=oracle.size), 100.0)[0]


def idle_machine(monkeypatch, busy):
    """Other work wants ``busy`` CPUs from now on."""
    monkeypatch.setattr(kernels_tree, "_busy_elsewhere", lambda: busy)
    monkeypatch.setattr(kernels_tree, "_load", [-float("inf"), 0.0])


def test_kernels_go_parallel_only_with_an_idle_core_per_thread(monkeypatch):
    idle_machine(monkeypatch, 0.0)
    assert parallel_cells() == PARALLEL_CELLS
    idle_machine(monkeypatch, os.cpu_count() + 3.0)
    assert parallel_cells() == (PARALLEL_CELLS if kernels_tree.get_num_threads() == 1 else SERIAL)
    monkeypatch.setattr(kernels_tree, "_busy_elsewhere", lambda: 0.0)  # read at most once a second
    assert parallel_cells() == (PARALLEL_CELLS if kernels_tree.get_num_threads() == 1 else SERIAL)


@pytest.mark.skipif(not os.path.exists("/proc/loadavg"), reason="instantaneous run queue read from Linux's /proc")
def test_a_competitor_counts_as_soon_as_it_runs():
    """A busy process started half a second ago is seen at once (the 1-minute load average
    would take about a minute to show it)."""
    competitor = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        assert kernels_tree._busy_elsewhere() >= 1.0
    finally:
        competitor.kill()
        competitor.wait()


def test_forked_children_run_the_kernels_serially(monkeypatch):
    idle_machine(monkeypatch, 0.0)
    expected = _big_oracle_marginals(0)  # the parent has started parallel work
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_big_oracle_marginals, (0,)).get(timeout=120)
        assert pool.apply_async(parallel_cells).get(timeout=120) == SERIAL
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert parallel_cells() == PARALLEL_CELLS


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
@given(seed=st.integers(0, 2**31), n=st.one_of(st.integers(0, 50), st.integers(10_000, 30_000)))
def test_dot_matches_reference(seed, n):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(size=n)
    assert np.isclose(dot(a, b), dot_reference(a, b), rtol=1e-12, atol=1e-12 * n)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.one_of(st.integers(1, 3000), st.integers(PARALLEL_CELLS, 3 * PARALLEL_CELLS)))
def test_exp_shifted_matches_numpy(seed, n):
    rng = np.random.default_rng(seed)
    x = -rng.exponential(50.0, size=n)
    x[rng.random(x.size) < 0.1] = -np.inf
    shift = float(rng.exponential())  # at least every value: the arguments are <= 0
    y = np.full(n, np.nan)
    total = exp_shifted(x, shift, y, np.empty(BLOCK, dtype=np.int64), PARALLEL_CELLS)
    expected = np.where(x - shift < -708, 0.0, np.exp(x - shift))
    np.testing.assert_allclose(y, expected, rtol=1e-15, atol=0)
    assert np.isclose(total, expected.sum(), rtol=1e-13, atol=0)
    serial = np.full(n, np.nan)  # the serial branch gives the same bits: a run's result never depends on the load
    assert exp_shifted(x, shift, serial, np.empty(BLOCK, dtype=np.int64), SERIAL) == total
    np.testing.assert_array_equal(serial, y)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), p=st.integers(1, 6))
def test_index_runs_match_plain_maps(seed, p):
    rng = np.random.default_rng(seed)
    domain = Domain(list("abcde"), rng.integers(1, 4, size=5).tolist())
    hosts = [tuple(sorted(rng.choice(list("abcde"), size=rng.integers(1, 6), replace=False))) for _ in range(p)]
    small = []
    for h in hosts:  # any subset of the host, sometimes permuted (then runs fall back to single cells)
        attrs = list(rng.choice(h, size=rng.integers(1, len(h) + 1), replace=False))
        small.append(tuple(attrs if rng.random() < 0.3 else sorted(attrs)))
    runs = [index_runs(domain, h, s) for h, s in zip(hosts, small)]
    maps, map_off = runs_to_maps(np.array([r[0] for r in runs]), np.array([r[1] for r in runs]),
                                 np.concatenate([[0], np.cumsum([r[2].size for r in runs])]),
                                 np.concatenate([r[2] for r in runs]), [domain.size(h) for h in hosts])
    for j, (h, s) in enumerate(zip(hosts, small)):
        np.testing.assert_array_equal(maps[map_off[j]:map_off[j + 1]], index_map(domain, h, s))


def test_kernels_compile_where_their_folder_is_not_writable(tmp_path):
    """A read-only install without a home: numba cannot cache beside the sources nor in the user's
    cache folder, and the kernels still import and run (their cache goes to the temporary folder)."""
    package = Path(__file__).resolve().parents[1] / "ektelo_pgm"
    shutil.copytree(package, tmp_path / "ektelo_pgm", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "ektelo_pgm" / "kernels" / "__pycache__").write_text("")  # a file: no cache folder there
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(HOME="/proc", XDG_CACHE_HOME="/proc/none", PYTHONPATH=str(tmp_path))
    script = "import numpy as np; from ektelo_pgm.kernels import dot; print(dot(np.ones(3), np.ones(3)))"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "3.0"


def test_a_missing_numba_is_named_at_import():
    """numba is a core requirement: without it the kernels' import says so and why."""
    script = ("import sys; sys.modules['numba'] = None\n"
              "try:\n    import ektelo_pgm.kernels\nexcept ImportError as why:\n    print(why)")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("ektelo_pgm needs numba (pip install 'numba>=0.58'"), done.stdout
