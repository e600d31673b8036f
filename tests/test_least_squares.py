"""LeastSquares (LSMR and CHOLMOD paths), LocalLeastSquares and NonNegativeLeastSquares against
dense numpy / scipy references built here."""
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls

from ektelo_pgm.domain import Domain
from ektelo_pgm.estimate import LocalEstimate, VectorEstimate
from ektelo_pgm.matrix import AllRange, Dense, Identity, Marginal, Prefix, Total
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators import least_squares
from ektelo_pgm.operators.least_squares import LeastSquares, LocalLeastSquares, NonNegativeLeastSquares

HAVE_CHOLMOD = least_squares.cholesky is not None
needs_cholmod = pytest.mark.skipif(not HAVE_CHOLMOD, reason="scikit-sparse (sksparse.cholmod) is not installed; "
                                   "the CHOLMOD path is tested where it is (see .ci/run)")
TIGHT = dict(atol=1e-13, btol=1e-13)

DOMAIN = Domain(["a", "b", "c"], [3, 4, 2])


def truth(domain, rng):
    return rng.integers(0, 30, domain.size()).astype(float)


def measure(domain, x, spec, rng, noise=1.0):
    """Measurements from ``spec``: a list of (attrs, local query or None, std scalar or 'per')."""
    out = []
    for attrs, query, std in spec:
        Q = (Identity(domain.size(attrs)) if query is None else query) @ Marginal(domain, attrs)
        std = rng.uniform(0.5, 2.0, Q.shape[0]) if std == "per" else std
        y = Q @ x + noise * std * rng.normal(size=Q.shape[0])
        out.append(Measurement(attrs, y, std, query=query))
    return out


def dense_system(domain, ms):
    A = np.vstack([m.full_query(domain).dense() / np.reshape(m.std, (-1, 1)) for m in ms])
    b = np.concatenate([m.y / m.std for m in ms])
    return A, b


def dense_lstsq(domain, ms):
    A, b = dense_system(domain, ms)
    return np.linalg.lstsq(A, b, rcond=None)[0]


def dense_constrained(domain, ms, total):
    """min ||A x - b|| s.t. sum x = total, minimum norm: lstsq on the sum-zero subspace."""
    A, b = dense_system(domain, ms)
    n = A.shape[1]
    P = np.eye(n) - 1.0 / n
    z = np.linalg.lstsq(A @ P, b - A @ np.full(n, total / n), rcond=None)[0]
    return total / n + P @ z


# Several measurement sets on DOMAIN: full rank ones (the full identity is among them, or the
# marginals and range queries together determine every cell) and rank-deficient ones.
FULL_RANK = {
    "identity+marginals": [(("a", "b", "c"), None, 1.0), (("a", "b"), None, 2.0), (("c",), None, 0.5)],
    "permuted+per-answer": [(("c", "a", "b"), None, "per"), (("b", "a"), Prefix(12), 1.5)],
    "dense-query": [(("b", "c", "a"), Dense(np.random.default_rng(5).normal(size=(30, 24))), "per")],
}
RANK_DEFICIENT = {
    "marginals": [(("a", "b"), None, 1.0), (("b", "c"), None, 2.0)],
    "ranges+total": [(("b",), AllRange(4), 1.0), ((), Total(1), 3.0), (("a", "c"), None, 1.0)],
}


@pytest.mark.parametrize("name", sorted(FULL_RANK) + sorted(RANK_DEFICIENT))
def test_lsmr_equals_dense_lstsq(name):
    rng = np.random.default_rng(0)
    ms = measure(DOMAIN, truth(DOMAIN, rng), {**FULL_RANK, **RANK_DEFICIENT}[name], rng)
    solver = LeastSquares(method="lsmr", **TIGHT)
    est = solver.reconstruct(DOMAIN, ms)
    assert isinstance(est, VectorEstimate) and solver.solver_ == "lsmr"
    # rank-deficient sets: LSMR from x0 = 0 gives the minimum-norm solution, as lstsq does
    np.testing.assert_allclose(est.vector, dense_lstsq(DOMAIN, ms), atol=1e-8)


@needs_cholmod
@pytest.mark.parametrize("name", sorted(FULL_RANK))
@pytest.mark.parametrize("method", ["cholmod", "auto"])
def test_cholmod_equals_dense_lstsq(name, method):
    rng = np.random.default_rng(1)
    ms = measure(DOMAIN, truth(DOMAIN, rng), FULL_RANK[name], rng)
    solver = LeastSquares(method=method)
    est = solver.reconstruct(DOMAIN, ms)
    assert solver.solver_ == "cholmod"
    np.testing.assert_allclose(est.vector, dense_lstsq(DOMAIN, ms), atol=1e-8)


@needs_cholmod
@pytest.mark.parametrize("name", sorted(RANK_DEFICIENT))
def test_cholmod_on_rank_deficient_falls_back_to_minimum_norm_lsmr(name):
    rng = np.random.default_rng(2)
    ms = measure(DOMAIN, truth(DOMAIN, rng), RANK_DEFICIENT[name], rng)
    forced = LeastSquares(method="cholmod", **TIGHT)
    with pytest.warns(RuntimeWarning, match="singular"):
        est = forced.reconstruct(DOMAIN, ms)
    assert forced.solver_ == "lsmr"
    np.testing.assert_allclose(est.vector, dense_lstsq(DOMAIN, ms), atol=1e-8)
    auto = LeastSquares(method="auto", **TIGHT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto falls back silently
        np.testing.assert_allclose(auto.reconstruct(DOMAIN, ms).vector, est.vector, atol=1e-9)
    assert auto.solver_ == "lsmr"


@pytest.mark.parametrize("method", ["lsmr", pytest.param("cholmod", marks=needs_cholmod)])
@pytest.mark.parametrize("name", ["identity+marginals", "marginals"])
def test_known_total_is_exact(method, name):
    rng = np.random.default_rng(3)
    ms = measure(DOMAIN, truth(DOMAIN, rng), {**FULL_RANK, **RANK_DEFICIENT}[name], rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the rank-deficient set falls back to LSMR
        est = LeastSquares(method=method, **TIGHT).reconstruct(DOMAIN, ms, total=321.5)
    assert est.total == pytest.approx(321.5, abs=1e-9)
    np.testing.assert_allclose(est.vector, dense_constrained(DOMAIN, ms, 321.5), atol=1e-8)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), seed=st.integers(0, 2**16),
       cliques=st.lists(st.sets(st.integers(0, 2), max_size=3), min_size=1, max_size=4))
def test_random_marginal_sets_match_lstsq_on_both_paths(shape, seed, cliques):
    domain = Domain([f"x{i}" for i in range(len(shape))], shape)
    rng = np.random.default_rng(seed)
    spec = [(tuple(domain.attrs[i] for i in sorted(c) if i < len(shape)), None, float(rng.uniform(0.5, 2)))
            for c in cliques]
    ms = measure(domain, truth(domain, rng), spec, rng)
    reference = dense_lstsq(domain, ms)
    np.testing.assert_allclose(LeastSquares(method="lsmr", **TIGHT).reconstruct(domain, ms).vector, reference,
                               atol=1e-7)
    if HAVE_CHOLMOD:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            est = LeastSquares(method="cholmod", **TIGHT).reconstruct(domain, ms)
        np.testing.assert_allclose(est.vector, reference, atol=1e-7)


def test_without_scikit_sparse_auto_uses_lsmr_and_cholmod_is_refused(monkeypatch):
    monkeypatch.setattr(least_squares, "cholesky", None)
    rng = np.random.default_rng(4)
    ms = measure(DOMAIN, truth(DOMAIN, rng), FULL_RANK["identity+marginals"], rng)
    solver = LeastSquares(**TIGHT)
    np.testing.assert_allclose(solver.reconstruct(DOMAIN, ms).vector, dense_lstsq(DOMAIN, ms), atol=1e-8)
    assert solver.solver_ == "lsmr"
    with pytest.raises(ImportError, match="scikit-sparse"):
        LeastSquares(method="cholmod")


def test_the_package_imports_and_solves_without_scikit_sparse():
    script = ("import sys; sys.modules['sksparse'] = None; sys.modules['sksparse.cholmod'] = None\n"
              "import numpy as np\n"
              "from ektelo_pgm import Domain, Measurement\n"
              "from ektelo_pgm.operators import least_squares as ls\n"
              "assert ls.cholesky is None\n"
              "est = ls.LeastSquares().reconstruct(Domain(['a'], [3]), [Measurement(['a'], [1.0, 2.0, 3.0], 1.0)])\n"
              "print(est.vector.round(6).tolist())\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1.0, 2.0, 3.0]"


@needs_cholmod
def test_auto_skips_cholmod_when_the_normal_matrix_would_be_dense():
    rng = np.random.default_rng(5)
    ms = measure(DOMAIN, truth(DOMAIN, rng), FULL_RANK["identity+marginals"], rng)
    solver = LeastSquares(cholmod_max_nnz=50, **TIGHT)  # the 24 x 24 normal matrix has more
    np.testing.assert_allclose(solver.reconstruct(DOMAIN, ms).vector, dense_lstsq(DOMAIN, ms), atol=1e-8)
    assert solver.solver_ == "lsmr"


def test_lsmr_tolerances_stop_early_and_maxiter_warns():
    rng = np.random.default_rng(6)
    ms = measure(DOMAIN, truth(DOMAIN, rng), FULL_RANK["permuted+per-answer"], rng)
    reference = dense_lstsq(DOMAIN, ms)
    loose = LeastSquares(method="lsmr", atol=1e-2, btol=1e-2).reconstruct(DOMAIN, ms).vector
    tight = LeastSquares(method="lsmr", **TIGHT).reconstruct(DOMAIN, ms).vector
    assert np.abs(tight - reference).max() < np.abs(loose - reference).max()
    with pytest.warns(RuntimeWarning, match="maxiter=2"):
        LeastSquares(method="lsmr", maxiter=2).reconstruct(DOMAIN, ms)


@pytest.mark.parametrize("operator", [LeastSquares(), NonNegativeLeastSquares()])
def test_full_vector_operators_refuse_above_the_size_limit_naming_the_size(operator):
    big = Domain([f"x{i}" for i in range(20)], [10] * 20)  # 1e20 cells
    with pytest.raises(MemoryError, match=r"full data vector over \['x0', .*'x19'\] has .* MB.*above the limit"):
        operator.reconstruct(big, [Measurement(("x0",), np.zeros(10), 1.0)])
    small = LeastSquares(max_mb=1e-4)  # 24 cells are 0.0002 MB
    with pytest.raises(MemoryError, match="0.0 MB"):
        small.reconstruct(DOMAIN, [Measurement(("a",), np.zeros(3), 1.0)])


def test_local_least_squares_refuses_a_clique_above_the_size_limit():
    ms = [Measurement(("a",), np.zeros(3), 1.0), Measurement(("a", "b"), np.zeros(12), 1.0)]
    with pytest.raises(MemoryError, match=r"clique marginal over \['a', 'b'\]"):
        LocalLeastSquares(max_mb=10 * 8 / 2**20).reconstruct(DOMAIN, ms[::-1])
    LocalLeastSquares(max_mb=10 * 8 / 2**20).reconstruct(DOMAIN, ms[:1])


def test_local_least_squares_solves_each_clique_alone():
    rng = np.random.default_rng(7)
    x = truth(DOMAIN, rng)
    spec = [(("a", "b"), None, 1.0), (("b", "a"), Prefix(12), 2.0), (("b", "c"), AllRange(8), "per"),
            (("a", "b", "c"), None, 1.0)]
    ms = measure(DOMAIN, x, spec, rng)
    est = LocalLeastSquares(method="lsmr", **TIGHT).reconstruct(DOMAIN, ms)
    assert isinstance(est, LocalEstimate)
    ab = Domain(["a", "b"], [3, 4])
    np.testing.assert_allclose(est.project(("a", "b")).ravel(), dense_lstsq(ab, ms[:2]), atol=1e-8)
    bc = Domain(["b", "c"], [4, 2])
    np.testing.assert_allclose(est.project(("c", "b")), dense_lstsq(bc, ms[2:3]).reshape(4, 2).T, atol=1e-8)
    # the super-clique is estimated from its own measurement only: here it is the identity
    np.testing.assert_allclose(est.project(("a", "b", "c")).ravel(), ms[3].y, atol=1e-8)
    # a subset is summed out of the smallest measured clique that contains it
    np.testing.assert_allclose(est.project(("b",)), dense_lstsq(bc, ms[2:3]).reshape(4, 2).sum(1), atol=1e-8)
    assert est.total == pytest.approx(est.project(("b", "c")).sum())
    with pytest.raises(ValueError, match="no distribution"):
        est.synthetic_data(10, rng=0)


def test_local_least_squares_uncovered_attributes_and_total():
    rng = np.random.default_rng(8)
    domain = Domain(["a", "b", "c"], [3, 4, 2])
    ms = measure(domain, truth(domain, rng), [(("a",), None, 1.0), (("b",), None, 1.0)], rng)
    est = LocalLeastSquares().reconstruct(domain, ms, total=50.0)
    assert est.project(("a",)).sum() == pytest.approx(50.0) and est.project(("b",)).sum() == pytest.approx(50.0)
    with pytest.raises(ValueError, match=r"none contains \['a', 'b'\]"):
        est.project(("a", "b"))


def test_non_negative_least_squares_equals_scipy_nnls():
    rng = np.random.default_rng(9)
    x = truth(DOMAIN, rng) * (rng.random(DOMAIN.size()) < 0.4)  # many empty cells: bounds are active
    for spec in (FULL_RANK["identity+marginals"], FULL_RANK["permuted+per-answer"]):
        ms = measure(DOMAIN, x, spec, rng, noise=3.0)
        est = NonNegativeLeastSquares(tol=1e-12).reconstruct(DOMAIN, ms)
        A, b = dense_system(DOMAIN, ms)
        reference = nnls(A, b, maxiter=5000)[0]
        assert est.vector.min() >= 0
        assert np.sum((A @ est.vector - b) ** 2) <= np.sum((A @ reference - b) ** 2) * (1 + 1e-9)
        np.testing.assert_allclose(est.vector, reference, atol=1e-4)
    est = NonNegativeLeastSquares(tol=1e-12).reconstruct(DOMAIN, ms, total=400.0)
    assert est.total == pytest.approx(400.0, rel=1e-5) and est.vector.min() >= 0


def test_non_negative_least_squares_is_exact_and_quiet_on_consistent_heavily_weighted_measurements():
    rng = np.random.default_rng(13)
    x = truth(DOMAIN, rng)
    spec = [(("b", "c"), Dense(rng.uniform(0, 1, (5, 8))), 1e-6), (("a",), None, 1e-6)]
    ms = measure(DOMAIN, x, spec, rng, noise=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = NonNegativeLeastSquares().reconstruct(DOMAIN, ms, total=x.sum())
    for m in ms:
        np.testing.assert_allclose(m.full_query(DOMAIN) @ est.vector, m.y, rtol=1e-6)
    with pytest.warns(RuntimeWarning, match="stopped after 1 iterations"):
        sparse_truth = x * (rng.random(x.size) < 0.3)  # negative unconstrained cells: the bounds bind
        NonNegativeLeastSquares(maxiter=1).reconstruct(
            DOMAIN, measure(DOMAIN, sparse_truth, FULL_RANK["identity+marginals"], rng, noise=3.0))


@pytest.mark.parametrize("make", [lambda: LeastSquares(method="lsmr", **TIGHT),
                                  pytest.param(lambda: LeastSquares(method="cholmod"), marks=needs_cholmod),
                                  lambda: NonNegativeLeastSquares(tol=1e-12), lambda: LocalLeastSquares(**TIGHT)],
                         ids=["lsmr", "cholmod", "nnls", "local"])
def test_operators_recover_the_truth_as_noise_vanishes(make):  # built in the test: collection never needs CHOLMOD
    operator = make()
    rng = np.random.default_rng(10)
    x = truth(DOMAIN, rng)
    spec = [(("a", "b", "c"), None, 1.0), (("b", "c"), Prefix(8), 1.0), (("a",), None, 1.0)]
    truth_estimate = VectorEstimate(DOMAIN, x)
    errors = []
    for noise in (1.0, 1e-3, 1e-6):
        est = operator.reconstruct(DOMAIN, measure(DOMAIN, x, spec, np.random.default_rng(11), noise=noise))
        errors.append(max(np.abs(est.project(c) - truth_estimate.project(c)).max()
                          for c in [("a", "b", "c"), ("b", "c"), ("a",)]))
    assert errors[2] < 1e-4 and errors[2] < errors[1] < errors[0]


def test_identical_inputs_give_identical_results():
    spec = FULL_RANK["permuted+per-answer"] + RANK_DEFICIENT["marginals"]
    runs = []
    for _ in range(2):
        rng = np.random.default_rng(12)
        ms = measure(DOMAIN, truth(DOMAIN, rng), spec, rng)
        runs.append([op.reconstruct(DOMAIN, ms).project(("a", "b")) for op in
                     (LeastSquares(), NonNegativeLeastSquares(), LocalLeastSquares())])
    for first, second in zip(*runs):
        np.testing.assert_array_equal(first, second)


def test_bad_input_is_refused_clearly():
    ms = [Measurement(("a",), np.zeros(3), 1.0)]
    with pytest.raises(ValueError, match="no measurements"):
        LeastSquares().reconstruct(DOMAIN, [])
    with pytest.raises(ValueError, match="total"):
        LeastSquares().reconstruct(DOMAIN, ms, total=-1)
    with pytest.raises(ValueError, match="method"):
        LeastSquares(method="qr")
    with pytest.raises(KeyError, match="'z'"):
        LeastSquares().reconstruct(DOMAIN, [Measurement(("z",), np.zeros(3), 1.0)])
    with pytest.raises(ValueError, match="answers"):
        LeastSquares().reconstruct(DOMAIN, [Measurement(("a",), np.zeros(4), 1.0)])


def test_nonnegative_least_squares_on_counts_of_a_trillion():
    """Issue 12 item 6: counts of 1e12 used to come back as all zeros (L-BFGS-B stopped abnormally)."""
    domain = Domain(["a", "b"], [16, 2])
    y = np.random.default_rng(0).uniform(0, 2e12, 32)
    estimate = least_squares.NonNegativeLeastSquares().reconstruct(domain, [Measurement(("a", "b"), y, 1.0)])
    np.testing.assert_allclose(estimate.project(("a", "b")).ravel(), y, rtol=1e-9)


def test_an_abnormal_solver_stop_is_an_error_not_an_estimate(monkeypatch):
    from scipy.optimize import OptimizeResult

    def abnormal(*args, **kwargs):
        return OptimizeResult(x=np.zeros(4), nit=0, success=False, message="ABNORMAL: line search")

    monkeypatch.setattr(least_squares, "minimize", abnormal)
    with pytest.raises(RuntimeError, match="stopped abnormally.*ABNORMAL"):
        least_squares.NonNegativeLeastSquares().reconstruct(Domain(["a"], [4]), [Measurement(("a",), np.ones(4), 1.0)])
