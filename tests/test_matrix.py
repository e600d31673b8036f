"""Every implicit operator against its dense self (brute-force references built here)."""
import itertools

import numpy as np
import pytest
import scipy.sparse as sp
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.linalg import aslinearoperator, lsmr, lsqr

from ektelo_pgm.domain import Domain
from ektelo_pgm.matrix import (Adapter, AllRange, Dense, HStack, Identity, Kronecker, Marginal, Marginals,
                               Matrix, Ones, Prefix, Product, RangeQueries, Sparse, Suffix, Sum, Total,
                               Transpose, VStack, Weighted, as_matrix, core)


class Custom(Matrix):
    """A user-defined query matrix that gives only shape, _matvec and _rmatvec."""

    def __init__(self, array):
        self.array = np.asarray(array, dtype=float)
        self.shape = self.array.shape  # no super().__init__: shape alone must be enough

    def _matvec(self, x):
        return self.array @ x

    def _rmatvec(self, y):
        return self.array.T @ y


def brute_ranges(shape, lower, upper):
    """Dense box-query matrix by enumerating cells."""
    cells = list(itertools.product(*[range(s) for s in shape]))
    out = np.zeros((len(lower), len(cells)))
    for q, (lo, hi) in enumerate(zip(lower, upper)):
        for c, cell in enumerate(cells):
            out[q, c] = all(l <= v <= h for v, l, h in zip(cell, lo, hi))
    return out


def brute_marginal(domain, attrs, x):
    """Marginal of a data vector by visiting every cell."""
    out = np.zeros([domain[a] for a in attrs])
    axes = [domain.attrs.index(a) for a in attrs]
    for flat, cell in enumerate(np.ndindex(*domain.shape)):
        out[tuple(cell[i] for i in axes)] += x[flat]
    return out.ravel()


def all_ranges(n):
    return np.array([[1.0 if i <= c <= j else 0.0 for c in range(n)] for i in range(n) for j in range(i, n)])


def _cases():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(4, 3))
    B = rng.normal(size=(3, 5))
    S = sp.random(5, 4, density=0.4, random_state=1, format="csr")
    S.data -= 0.5
    d = Domain(["a", "b", "c"], [2, 3, 4])
    lower = np.array([[0, 1], [2, 0], [1, 1], [0, 0]])
    upper = np.array([[1, 3], [2, 0], [2, 2], [2, 3]])
    lo3 = np.array([[0, 0, 1], [1, 2, 0], [0, 1, 1]])
    hi3 = np.array([[1, 2, 1], [1, 2, 3], [1, 1, 2]])
    eye = np.eye(24)
    return {
        "Identity": (Identity(4), np.eye(4)),
        "Ones": (Ones(3, 5), np.ones((3, 5))),
        "Total": (Total(6), np.ones((1, 6))),
        "Prefix": (Prefix(6), np.tril(np.ones((6, 6)))),
        "Suffix": (Suffix(6), np.triu(np.ones((6, 6)))),
        "AllRange": (AllRange(6), all_ranges(6)),
        "RangeQueries2d": (RangeQueries((3, 4), lower, upper), brute_ranges((3, 4), lower, upper)),
        "RangeQueries3d": (RangeQueries((2, 3, 4), lo3, hi3), brute_ranges((2, 3, 4), lo3, hi3)),
        "RangeQueries1d": (RangeQueries(5, [0, 2, 4], [3, 2, 4]), brute_ranges((5,), [[0], [2], [4]], [[3], [2], [4]])),
        "Dense": (Dense(A), A),
        "Sparse": (Sparse(S), S.toarray()),
        "Weighted": (Weighted(Dense(A), -2.5), -2.5 * A),
        "Sum": (Sum([Dense(A), Ones(4, 3), Weighted(Dense(A), -1.0)]), np.ones((4, 3))),
        "Product": (Product(Dense(A), Dense(B)), A @ B),
        "ProductPrefix": (Product(Prefix(4), Dense(A)), np.tril(np.ones((4, 4))) @ A),
        "VStack": (VStack([Dense(A), Prefix(3), Total(3)]), np.vstack([A, np.tril(np.ones((3, 3))), np.ones((1, 3))])),
        "HStack": (HStack([Dense(A), Ones(4, 2)]), np.hstack([A, np.ones((4, 2))])),
        "Kronecker": (Kronecker([Dense(A), Prefix(3), Sparse(S)]),
                      np.kron(np.kron(A, np.tril(np.ones((3, 3)))), S.toarray())),
        "Marginal": (Marginal(d, ["c", "a"]), np.stack([brute_marginal(d, ["c", "a"], e) for e in eye], axis=1)),
        "MarginalCyclic": (Marginal(d, ["c", "a", "b"]),
                           np.stack([brute_marginal(d, ["c", "a", "b"], e) for e in eye], axis=1)),
        "MarginalTotal": (Marginal(d, []), np.ones((1, 24))),
        "MarginalAll": (Marginal(d, ["a", "b", "c"]), np.eye(24)),
        "KroneckerIdentities": (Kronecker([Identity(2), Identity(3)]), np.eye(6)),
        "Marginals": (Marginals(d, {("b",): 2.0, ("c", "b"): -0.5}),
                      np.vstack([2.0 * np.stack([brute_marginal(d, ["b"], e) for e in eye], axis=1),
                                 -0.5 * np.stack([brute_marginal(d, ["c", "b"], e) for e in eye], axis=1)])),
        "MarginalQuery": (Kronecker([Prefix(4), Identity(2)]) @ Marginal(d, ["c", "a"]),
                          np.kron(np.tril(np.ones((4, 4))), np.eye(2))
                          @ np.stack([brute_marginal(d, ["c", "a"], e) for e in eye], axis=1)),
        "ProductColumnMap": (Dense(np.arange(16.0).reshape(4, 4) - 7) @ Kronecker([Identity(2), Total(3), Identity(2)]),
                             (np.arange(16.0).reshape(4, 4) - 7) @ np.kron(np.kron(np.eye(2), np.ones((1, 3))), np.eye(2))),
        "Custom": (Custom(A), A),
        "CustomTranspose": (Custom(A).T, A.T),
        "Adapter": (as_matrix(aslinearoperator(A)), A),
    }


CASES = _cases()


def col_norms(D, p):
    return np.abs(D).sum(axis=0) if p == 1 else np.sqrt((D ** 2).sum(axis=0))


def check_against(op, D, rng):
    """Every method of ``op`` agrees with the dense reference ``D``."""
    m, n = D.shape
    assert op.shape == D.shape and op.dtype == np.float64
    np.testing.assert_allclose(op.dense(), D, atol=1e-10)
    got_sparse = op.sparse()
    assert sp.issparse(got_sparse)
    np.testing.assert_allclose(got_sparse.toarray(), D, atol=1e-10)
    x, y = rng.normal(size=n), rng.normal(size=m)
    X, Y = rng.normal(size=(n, 3)), rng.normal(size=(m, 2))
    np.testing.assert_allclose(op @ x, D @ x, atol=1e-9)
    assert not np.shares_memory(op @ x, x) and not np.shares_memory(op.T @ y, y)  # fresh outputs
    np.testing.assert_allclose(op @ X, D @ X, atol=1e-9)
    np.testing.assert_allclose(op.matvec(x), D @ x, atol=1e-9)
    np.testing.assert_allclose(op.rmatvec(y), D.T @ y, atol=1e-9)
    np.testing.assert_allclose(op.rmatmat(Y), D.T @ Y, atol=1e-9)
    np.testing.assert_allclose(y @ op, y @ D, atol=1e-9)
    np.testing.assert_allclose(Y.T @ op, Y.T @ D, atol=1e-9)
    T = op.T
    assert isinstance(T, Matrix) and T.shape == (n, m)
    np.testing.assert_allclose(T.dense(), D.T, atol=1e-10)
    np.testing.assert_allclose(T @ y, D.T @ y, atol=1e-9)
    np.testing.assert_allclose(T.T @ x, D @ x, atol=1e-9)
    G = op.gram()
    assert isinstance(G, Matrix)
    np.testing.assert_allclose(G.dense(), D.T @ D, atol=1e-9)
    np.testing.assert_allclose(op.abs().dense(), np.abs(D), atol=1e-10)
    np.testing.assert_allclose(op.sum(), D.sum(), atol=1e-9)
    np.testing.assert_allclose(op.sum(0), D.sum(axis=0), atol=1e-9)
    np.testing.assert_allclose(op.sum(1), D.sum(axis=1), atol=1e-9)
    for p in (1, 2):
        np.testing.assert_allclose(op.column_norms(p), col_norms(D, p), atol=1e-9)
        np.testing.assert_allclose(op.sensitivity(p), col_norms(D, p).max(initial=0.0), atol=1e-9)
        np.testing.assert_allclose(T.sensitivity(p), col_norms(D.T, p).max(initial=0.0), atol=1e-9)
    np.testing.assert_allclose((3.0 * op).dense(), 3.0 * D, atol=1e-9)
    np.testing.assert_allclose((op * -0.5).dense(), -0.5 * D, atol=1e-9)
    np.testing.assert_allclose((op / 4).dense(), D / 4, atol=1e-9)
    np.testing.assert_allclose((op + op).dense(), 2 * D, atol=1e-9)
    np.testing.assert_allclose((op - 2 * op).dense(), -D, atol=1e-9)
    np.testing.assert_allclose((-op) @ x, -(D @ x), atol=1e-9)
    np.testing.assert_allclose((op.T @ op) @ x, D.T @ (D @ x), atol=1e-9)
    np.testing.assert_allclose(op.H @ y, D.T @ y, atol=1e-9)  # scipy's adjoint protocol
    np.testing.assert_allclose(op(x), D @ x, atol=1e-9)


@pytest.mark.parametrize("name", sorted(CASES))
def test_class_against_dense(name):
    op, D = CASES[name]
    check_against(op, D, np.random.default_rng(0))


def test_structure_is_kept():
    A = Dense(np.arange(6.0).reshape(2, 3))
    K = Kronecker([Prefix(3), A])
    assert isinstance(K.T, Kronecker) and isinstance(K.gram(), Kronecker) and isinstance(K.abs(), Kronecker)
    assert isinstance(Prefix(4).T, Suffix) and isinstance(Suffix(4).T, Prefix)
    assert isinstance(VStack([A, A]).gram(), Sum) and isinstance(VStack([A, A]).T, HStack)
    assert isinstance(HStack([A, A]).T, VStack)
    assert isinstance(Identity(5).gram(), Identity)
    W = Weighted(Prefix(3), -2.0)
    assert isinstance(W.gram(), Weighted) and W.gram().weight == 4.0
    assert isinstance(W.abs(), Weighted) and W.abs().weight == 2.0
    assert isinstance(2 * Prefix(3), Weighted) and isinstance(Prefix(3) * 2, Weighted)
    assert (2 * (3 * Prefix(3))).weight == 6.0
    KK = Kronecker([Prefix(3), A]) @ Kronecker([Suffix(3), Dense(np.ones((3, 2)))])
    assert isinstance(KK, Kronecker)
    np.testing.assert_allclose(KK.dense(), K.dense() @ np.kron(np.triu(np.ones((3, 3))), np.ones((3, 2))))
    assert Identity(3) @ A.T is not None and (A @ Identity(3)) is A
    assert isinstance(A @ Prefix(3), Product)
    assert isinstance(AllRange(5).T, Transpose) and AllRange(5).abs() is not None


def test_star_is_only_scaling():
    P = Prefix(3)
    with pytest.raises(TypeError, match="use `@`"):
        P * P
    with pytest.raises(TypeError, match="use `@`"):
        P * np.ones(3)
    with pytest.raises(TypeError, match="scale by a number"):
        P @ 2.0
    with pytest.raises(TypeError):
        P ** 2
    with pytest.raises(ValueError, match="not aligned"):
        P @ Prefix(4)
    with pytest.raises(ValueError, match="cannot be added"):
        P + Prefix(4)


def test_sensitivity_of_stacks_is_exact_not_a_bound():
    # disjoint blocks: the per-block maxima sum to 2 but no column has norm above 1
    V = VStack([Dense([[1.0, 0.0]]), Dense([[0.0, 1.0]])])
    assert V.sensitivity(1) == 1.0 and V.sensitivity(2) == 1.0
    assert Sum([Prefix(4), -1 * Prefix(4)]).sensitivity(1) == 0.0
    assert AllRange(7).sensitivity(1) == max((j + 1) * (7 - j) for j in range(7))
    assert Prefix(9).sensitivity(2) == 3.0
    d = Domain(["a", "b", "c"], [3, 4, 5])
    M = Marginals(d, {("a", "b"): 1.0, ("c",): 2.0, (): -1.0})
    assert M.sensitivity(1) == 4.0 and np.isclose(M.sensitivity(2), np.sqrt(6.0))
    assert np.isclose(VStack(list(M.blocks)).sensitivity(2), np.sqrt(6.0))  # generic VStack path agrees
    Q = Kronecker([AllRange(5), Identity(4)]) @ Marginal(d, ["c", "b"])
    assert Q.sensitivity(1) == AllRange(5).sensitivity(1)
    assert Q.sensitivity(1) == pytest.approx(col_norms(Q.dense(), 1).max())


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_marginal_against_brute_force(shape, data):
    names = [f"x{i}" for i in range(len(shape))]
    d = Domain(names, shape)
    attrs = data.draw(st.permutations(names).flatmap(lambda p: st.integers(0, len(p)).map(lambda k: p[:k])))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.random(d.size())
    M = Marginal(d, attrs)
    assert M.shape == (d.size(attrs), d.size())
    np.testing.assert_allclose(M @ x, brute_marginal(d, attrs, x), atol=1e-12)
    y = rng.random(M.shape[0])
    # <M x, y> = <x, M^T y> and M^T y[cell] = y[marginal cell of cell]
    np.testing.assert_allclose(M.T @ y, [y[i] for i in np.argmax(M.dense(), axis=0)])
    np.testing.assert_allclose((M @ np.eye(d.size())), np.stack([brute_marginal(d, attrs, e) for e in np.eye(d.size())], 1))


def test_marginal_errors():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(KeyError, match="'z'"):
        Marginal(d, ["a", "z"])
    with pytest.raises(ValueError, match="repeat"):
        Marginal(d, ["a", "a"])
    with pytest.raises(ValueError, match="weight"):
        Marginals(d, {("a",): float("nan")})
    assert Marginals(d, [("a",), ("b",)]).sensitivity(1) == 2.0


def test_range_query_errors():
    with pytest.raises(ValueError, match="query 1 on axis 0 has lower > upper"):
        RangeQueries((3, 3), [[0, 0], [2, 0]], [[1, 1], [1, 2]])
    with pytest.raises(ValueError, match="upper >= size"):
        RangeQueries((3,), [[0]], [[3]])
    with pytest.raises(ValueError, match=r"\(queries, 2\)"):
        RangeQueries((3, 3), [0, 1], [1, 2])


def test_custom_matrix_gets_everything():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(5, 4))
    C = Custom(A)
    check_against(C @ Prefix(4), A @ np.tril(np.ones((4, 4))), rng)
    check_against(Kronecker([C, Prefix(2)]), np.kron(A, np.tril(np.ones((2, 2)))), rng)
    check_against(VStack([C, Total(4)]), np.vstack([A, np.ones((1, 4))]), rng)
    assert C.sensitivity(1) == pytest.approx(np.abs(A).sum(0).max())


def test_subclass_without_application_is_refused_clearly():
    class Forward(Matrix):
        def __init__(self):
            super().__init__((2, 3))

        def _matvec(self, x):
            return x[:2]

    class Nothing(Matrix):
        shape = (2, 2)

    np.testing.assert_allclose(Forward() @ np.arange(3.0), [0.0, 1.0])
    with pytest.raises(TypeError, match="Forward defines neither _rmatvec nor _rmatmat"):
        Forward().T @ np.ones(2)
    with pytest.raises(TypeError, match="Nothing defines neither _matvec nor _matmat"):
        Nothing() @ np.ones(2)
    with pytest.raises(ValueError, match="shape must be a pair"):
        Identity("n")


def test_refuses_huge_materialisation(monkeypatch):
    with pytest.raises(MemoryError, match="MB"):
        Prefix(100_000).dense()
    with pytest.raises(MemoryError, match="MB"):
        AllRange(5_000).sparse()
    with pytest.raises(MemoryError, match="MB"):
        Kronecker([Identity(10**5), Identity(10**5)]).dense()
    monkeypatch.setattr(core, "max_mb", 0.001)
    with pytest.raises(MemoryError, match="column-norm fallback .* MB"):
        Custom(np.ones((30, 30))).sensitivity(1)
    assert Prefix(10**6).sensitivity(1) == 10**6  # closed forms never materialise


def test_as_matrix_and_errors():
    A = np.arange(6.0).reshape(2, 3)
    assert isinstance(as_matrix(A), Dense) and isinstance(as_matrix(sp.csr_matrix(A)), Sparse)
    assert isinstance(as_matrix(aslinearoperator(A)), Adapter)
    P = Prefix(3)
    assert as_matrix(P) is P
    with pytest.raises(ValueError, match="2-D"):
        as_matrix(np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        Weighted(P, float("inf"))
    with pytest.raises(ValueError, match="p must be 1 or 2"):
        P.sensitivity(3)
    np.testing.assert_allclose((P @ sp.csr_matrix(np.eye(3))).dense(), np.tril(np.ones((3, 3))))
    np.testing.assert_allclose((sp.csr_matrix(np.eye(3)) @ P).dense(), np.tril(np.ones((3, 3))))
    np.testing.assert_allclose(P @ np.array([1, 2, 3]), [1.0, 3.0, 6.0])  # integer input works
    assert P.matvec(np.array([1, 2, 3])).dtype == np.float64 and P.rmatmat(np.eye(3, dtype=int)).dtype == np.float64
    with pytest.raises(TypeError, match="complex"):
        P @ np.ones(3, dtype=complex)
    with pytest.raises(ValueError, match="3 x 3 Prefix needs 3 rows, got an array of shape"):
        P @ np.ones(4)
    with pytest.raises(ValueError, match="A.T @ Y of a 3 x 3 Prefix"):
        np.ones((2, 4)) @ P


def test_lsmr_and_lsqr_accept_operators():
    rng = np.random.default_rng(5)
    d = Domain(["a", "b", "c"], [3, 4, 2])
    Q = VStack([Kronecker([Prefix(4), Identity(2)]) @ Marginal(d, ["b", "c"]),
                2.0 * Marginal(d, ["a", "c"]), Identity(d.size()), AllRange(24) * 0.5])
    y = rng.normal(size=Q.shape[0])
    ref = np.linalg.lstsq(Q.dense(), y, rcond=None)[0]
    np.testing.assert_allclose(lsmr(Q, y, atol=1e-12, btol=1e-12)[0], ref, atol=1e-6)
    np.testing.assert_allclose(lsqr(Q, y, atol=1e-12, btol=1e-12)[0], ref, atol=1e-6)
    C = Custom(rng.normal(size=(8, 5)))
    yc = rng.normal(size=8)
    np.testing.assert_allclose(lsmr(C, yc, atol=1e-12, btol=1e-12)[0],
                               np.linalg.lstsq(C.array, yc, rcond=None)[0], atol=1e-6)


def test_allrange_and_prefix_scale():
    x = np.random.default_rng(0).random(3000)
    y = AllRange(3000) @ x
    lo, hi = AllRange(3000).intervals()
    P = np.concatenate([[0.0], np.cumsum(x)])
    np.testing.assert_allclose(y, P[hi + 1] - P[lo])
    np.testing.assert_allclose(Prefix(10**6) @ np.ones(10**6), np.arange(1, 10**6 + 1))


# ---- random compositions ------------------------------------------------------------------------------

def _divisors(k):
    return [i for i in range(1, k + 1) if k % i == 0]


@st.composite
def operators(draw, m, n, depth):
    """An (operator, dense reference) pair of shape (m, n), built recursively."""
    kinds = ["dense", "sparse", "ones", "custom", "ranges"]
    if n % m == 0:
        kinds.append("marginal")
    if m == n:
        kinds += ["identity", "prefix", "suffix"]
    if m == n * (n + 1) // 2:
        kinds.append("allrange")
    if depth > 0:
        kinds += ["weighted", "sum", "product", "transpose", "kron"]
        if m > 1:
            kinds.append("vstack")
        if n > 1:
            kinds.append("hstack")
    kind = draw(st.sampled_from(kinds))
    sub = lambda a, b: draw(operators(a, b, depth - 1))  # noqa: E731
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    if kind in ("dense", "custom"):
        A = rng.normal(size=(m, n))
        return (Dense(A) if kind == "dense" else Custom(A)), A
    if kind == "sparse":
        A = rng.normal(size=(m, n)) * (rng.random((m, n)) < 0.5)
        return Sparse(sp.csr_matrix(A)), A
    if kind == "ranges":
        a, b = np.sort(rng.integers(0, n, size=(2, m)), axis=0)
        return RangeQueries((n,), a[:, None], b[:, None]), brute_ranges((n,), a[:, None], b[:, None])
    if kind == "marginal":
        # the marginal on one attribute of size m, first or second in the domain
        sizes = draw(st.sampled_from([(m, n // m), (n // m, m)]))
        d = Domain(["u", "v"], sizes)
        attr = "u" if sizes[0] == m else "v"
        return Marginal(d, [attr]), np.stack([brute_marginal(d, [attr], e) for e in np.eye(n)], axis=1)
    if kind == "ones":
        return Ones(m, n), np.ones((m, n))
    if kind == "identity":
        return Identity(n), np.eye(n)
    if kind == "prefix":
        return Prefix(n), np.tril(np.ones((n, n)))
    if kind == "suffix":
        return Suffix(n), np.triu(np.ones((n, n)))
    if kind == "allrange":
        return AllRange(n), all_ranges(n)
    if kind == "weighted":
        w = draw(st.floats(-3, 3, allow_nan=False))
        A, D = sub(m, n)
        return w * A, w * D
    if kind == "sum":
        (A, D), (B, E) = sub(m, n), sub(m, n)
        return A + B, D + E
    if kind == "product":
        k = draw(st.integers(1, 4))
        (A, D), (B, E) = sub(m, k), sub(k, n)
        return A @ B, D @ E
    if kind == "transpose":
        A, D = sub(n, m)
        return A.T, D.T
    if kind == "kron":
        m1, n1 = draw(st.sampled_from(_divisors(m))), draw(st.sampled_from(_divisors(n)))
        (A, D), (B, E) = sub(m1, n1), sub(m // m1, n // n1)
        return Kronecker([A, B]), np.kron(D, E)
    if kind == "vstack":
        k = draw(st.integers(1, m - 1))
        (A, D), (B, E) = sub(k, n), sub(m - k, n)
        return VStack([A, B]), np.vstack([D, E])
    k = draw(st.integers(1, n - 1))
    (A, D), (B, E) = sub(m, k), sub(m, n - k)
    return HStack([A, B]), np.hstack([D, E])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), m=st.integers(1, 6), n=st.integers(1, 6))
def test_random_compositions_against_dense(data, m, n):
    op, D = data.draw(operators(m, n, depth=2))
    check_against(op, D, np.random.default_rng(m * 7 + n))
