"""MultiplicativeWeights against independent references: iterative proportional fitting and the
convex dual of the I-projection (consistent measurements), KKT conditions of the L2 loss over the
scaled simplex (noisy ones), the full-vector run (factored representation), MWEM's Figure 1 rule."""
import numpy as np
import pytest
from scipy.linalg import orth
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

from ektelo_pgm.domain import Domain
from ektelo_pgm.estimate import FactoredEstimate, VectorEstimate
from ektelo_pgm.matrix import Dense, Identity, Kronecker, Marginal, Prefix, Total
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.measurement import estimate_total
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights, attribute_groups

DOMAIN = Domain(["a", "b", "c", "d"], [3, 4, 2, 3])


def positive_truth(domain, total, rng):
    x = rng.gamma(2.0, size=domain.size())
    return total * x / x.sum()


def measure(domain, x, spec, rng, noise=0.0):
    out = []
    for attrs, query, std in spec:
        Q = (Identity(domain.size(attrs)) if query is None else query) @ Marginal(domain, attrs)
        y = Q @ x + noise * std * rng.normal(size=Q.shape[0])
        out.append(Measurement(attrs, y, std, query=query))
    return out


def ipf(domain, x, cliques, sweeps=3000):
    """Iterative proportional fitting from uniform to the marginals of ``x`` on ``cliques``."""
    target = VectorEstimate(domain, x)
    p = np.full(domain.shape, x.sum() / domain.size())
    for _ in range(sweeps):
        for clique in cliques:
            canon = domain.canonical(clique)
            current = VectorEstimate(domain, p.ravel()).project(canon)
            ratio = target.project(canon) / current
            p = p * ratio.reshape([domain[a] if a in canon else 1 for a in domain.attrs])
    return p.ravel()


def dual_projection(domain, ms, total):
    """The I-projection of uniform onto {Q p = y} by minimising its convex dual over lambda:
    total * logsumexp(Q' lambda) - lambda' y, whose minimiser gives p = total * softmax(Q' lambda)."""
    Q = np.vstack([m.full_query(domain).dense() for m in ms])
    y = np.concatenate([m.y for m in ms])

    def dual(lam):
        theta = Q.T @ lam
        return total * logsumexp(theta) - lam @ y, Q @ (total * softmax(theta)) - y

    lam = minimize(dual, np.zeros(len(y)), jac=True, method="BFGS", options={"gtol": 1e-11, "maxiter": 10000}).x
    return total * softmax(Q.T @ lam)


def test_converges_to_the_ipf_solution_on_consistent_marginals():
    rng = np.random.default_rng(0)
    x = positive_truth(DOMAIN, 1000.0, rng)
    cliques = [("a", "b"), ("c", "b"), ("d", "c")]
    ms = measure(DOMAIN, x, [(c, None, s) for c, s in zip(cliques, (1.0, 0.5, 2.0))], rng)
    est = MultiplicativeWeights(iters=4000).reconstruct(DOMAIN, ms, total=1000.0)
    assert isinstance(est, VectorEstimate)
    np.testing.assert_allclose(est.vector, ipf(DOMAIN, x, cliques), atol=1e-8)


def test_converges_to_the_dual_i_projection_on_consistent_range_queries():
    rng = np.random.default_rng(1)
    domain = Domain(["a", "b", "c"], [3, 4, 2])
    x = positive_truth(domain, 500.0, rng)
    pairs = Dense(np.eye(8)[[0, 2, 5]] + np.eye(8)[[1, 4, 6]])  # sums of two cells
    spec = [(("b",), Prefix(4), 1.0), (("c", "a"), None, 0.7), (("b", "c"), pairs, 0.5)]
    ms = measure(domain, x, spec, rng)
    est = MultiplicativeWeights(iters=6000).reconstruct(domain, ms)  # total from the Prefix's last row
    assert est.total == pytest.approx(500.0)
    reference = dual_projection(domain, ms, 500.0)
    np.testing.assert_allclose(est.vector, reference, atol=1e-6)


def test_noisy_measurements_reach_the_l2_optimum_over_the_scaled_simplex():
    """KKT conditions of min sum ||(Q p - y)/std||^2 s.t. p >= 0, sum p = total: the gradient is
    equal to its mean on the support and not below it anywhere."""
    rng = np.random.default_rng(2)
    x = positive_truth(DOMAIN, 2000.0, rng)
    spec = [(("a", "b"), None, 3.0), (("b", "c", "d"), None, 5.0), (("a", "d"), None, 4.0)]
    ms = measure(DOMAIN, x, spec, rng, noise=1.0)
    est = MultiplicativeWeights(iters=5000).reconstruct(DOMAIN, ms, total=2000.0)
    p = est.vector
    grad = sum(m.full_query(DOMAIN).T @ ((m.full_query(DOMAIN) @ p - m.y) / m.std**2) for m in ms)
    lam = p @ grad / p.sum()
    scale = np.abs(grad).max()
    assert np.max(p / p.sum() * np.abs(grad - lam)) < 1e-6 * scale
    assert grad.min() >= lam - 1e-5 * scale
    loss = lambda v: sum(np.sum(((m.full_query(DOMAIN) @ v - m.y) / m.std) ** 2) for m in ms)  # noqa: E731
    for _ in range(20):  # no feasible perturbation does better
        q = np.clip(p + rng.normal(scale=0.5, size=p.size), 0, None)
        assert loss(2000.0 * q / q.sum()) >= loss(p) - 1e-9


def test_one_update_is_mwem_figure_1_rule():
    rng = np.random.default_rng(3)
    x = positive_truth(DOMAIN, 300.0, rng)
    q = (rng.random(DOMAIN.size(("a", "b"))) < 0.5).astype(float)
    m = Measurement(("a", "b"), [q @ VectorEstimate(DOMAIN, x).project(("a", "b")).ravel() + 7.0], 1.0,
                    query=Dense(q[None, :]))
    total = 300.0
    est = MultiplicativeWeights(iters=1, stepsize=1 / (2 * total), factored=False).reconstruct(DOMAIN, [m], total=total)
    full_q = m.full_query(DOMAIN).dense()[0]
    A0 = np.full(DOMAIN.size(), total / DOMAIN.size())
    A1 = A0 * np.exp(full_q * (m.y[0] - full_q @ A0) / (2 * total))  # Hardt et al. 2012, Figure 1, step 3
    np.testing.assert_allclose(est.vector, total * A1 / A1.sum(), rtol=1e-12)
    # an explicit stepsize repeats that rule, with no search, for every iteration it is given
    est = MultiplicativeWeights(iters=3, stepsize=1 / (2 * total), factored=False, tol=0, ftol=0).reconstruct(
        DOMAIN, [m], total=total)
    A = A0
    for _ in range(3):
        A = A * np.exp(full_q * (m.y[0] - full_q @ A) / (2 * total))
        A = total * A / A.sum()
    assert est.iterations == 3
    np.testing.assert_allclose(est.vector, A, rtol=1e-12)


SPLIT = Domain(["a", "b", "c", "d", "e"], [3, 4, 2, 3, 2])
SPLIT_SPEC = [(("b", "a"), None, 1.0), (("b",), Prefix(4), 2.0), (("c", "d"), None, 0.5), ((), Total(1), 1.0)]


def test_attribute_groups_are_the_connected_components():
    assert attribute_groups(SPLIT, [("b", "a"), ("d", "c")]) == [("a", "b"), ("c", "d"), ("e",)]
    assert attribute_groups(SPLIT, [("a", "e"), ("c", "e"), ("b",)]) == [("a", "c", "e"), ("b",), ("d",)]


@pytest.mark.parametrize("stepsize", [0.0004, None])
def test_factored_equals_unfactored(stepsize):
    rng = np.random.default_rng(4)
    ms = measure(SPLIT, positive_truth(SPLIT, 800.0, rng), SPLIT_SPEC, rng, noise=1.0)
    # an explicit stepsize with no early stop runs exactly `iters` identical iterations
    settings = dict(iters=300, stepsize=stepsize, tol=0.0, ftol=0.0) if stepsize else {}
    factored = MultiplicativeWeights(**settings).reconstruct(SPLIT, ms)
    full = MultiplicativeWeights(factored=False, **settings).reconstruct(SPLIT, ms)
    assert isinstance(factored, FactoredEstimate) and isinstance(full, VectorEstimate)
    assert [g for g, _ in factored.factors] == [("a", "b"), ("c", "d"), ("e",)]
    # an explicit stepsize gives identical iterates; the default ones converge to the same point
    tol = 1e-10 if stepsize else 1e-7
    np.testing.assert_allclose(factored.total, full.total, rtol=1e-12)
    for attrs in [("e", "a", "c"), ("d", "b"), ("a", "b", "c", "d", "e"), ("c",), ()]:
        np.testing.assert_allclose(factored.project(attrs), full.project(attrs), atol=tol * 800)


def test_factored_runs_where_the_full_vector_is_refused():
    big = Domain([f"x{i}" for i in range(40)], [3] * 40)  # 3^40 ~ 1.2e19 cells
    rng = np.random.default_rng(5)
    ms = [Measurement((f"x{i}", f"x{i + 1}"), rng.uniform(50, 150, 9), 1.0) for i in range(0, 40, 2)]
    with pytest.raises(MemoryError, match=r"full data vector over \['x0', .*'x39'\] has .* MB"):
        MultiplicativeWeights(factored=False).reconstruct(big, ms)
    est = MultiplicativeWeights(iters=200).reconstruct(big, ms)
    assert len(est.factors) == 20 and est.total == pytest.approx(estimate_total(big, ms))
    assert est.project(("x3", "x2")).shape == (3, 3) and est.project(("x0", "x39")).sum() == pytest.approx(est.total)
    data = est.synthetic_data(50, rng=7)
    assert data.records.shape == (50, 40)


def test_a_factor_above_the_limit_is_refused_by_name():
    ms = [Measurement(("a", "b"), np.ones(12), 1.0), Measurement(("c",), np.ones(2), 1.0)]
    with pytest.raises(MemoryError, match=r"factor over \['a', 'b'\] has 12 cells"):
        MultiplicativeWeights(max_mb=10 * 8 / 2**20).reconstruct(DOMAIN, ms)


def test_factored_estimate_matches_the_product_vector():
    rng = np.random.default_rng(6)
    f1, f2 = rng.dirichlet(np.ones(12)).reshape(4, 3), rng.dirichlet(np.ones(6)).reshape(2, 3)
    est = FactoredEstimate(DOMAIN, 50.0, [(("b", "a"), f1), (("c", "d"), f2)])
    vector = 50.0 * np.einsum("ba,cd->abcd", f1, f2).ravel()
    dense = VectorEstimate(DOMAIN, vector)
    for attrs in [("a",), ("d", "a"), ("c", "b", "d"), ("a", "b", "c", "d"), ()]:
        np.testing.assert_allclose(est.project(attrs), dense.project(attrs), atol=1e-12)
    first, second = est.synthetic_data(20000, rng=8), est.synthetic_data(20000, rng=8)
    np.testing.assert_array_equal(first.records, second.records)
    assert np.abs(first.marginal(("a", "d")) / 20000 * 50 - dense.project(("a", "d"))).max() < 1.0
    with pytest.raises(ValueError, match="partition"):
        FactoredEstimate(DOMAIN, 50.0, [(("b", "a"), f1)])
    with pytest.raises(ValueError, match="not a probability"):
        FactoredEstimate(DOMAIN, 50.0, [(("b", "a"), 2 * f1), (("c", "d"), f2)])


def test_estimate_total_is_inverse_variance_weighted():
    y_a, y_total, y_prefix = np.array([10.0, 20.0, 33.0]), np.array([70.0]), np.array([5.0, 9.0, 30.0, 66.0])
    ms = [Measurement(("a",), y_a, 1.0), Measurement((), y_total, 2.0), Measurement(("b",), y_prefix, 3.0, query=Prefix(4)),
          Measurement(("c",), [4.0], 1.0, query=Dense([[1.0, -1.0]]))]  # a difference says nothing of the total
    # sum of 3 answers of std 1: variance 3; the total: variance 4; the prefix's last row: variance 9
    expected = (63.0 / 3 + 70.0 / 4 + 66.0 / 9) / (1 / 3 + 1 / 4 + 1 / 9)
    assert estimate_total(DOMAIN, ms) == pytest.approx(expected, rel=1e-10)
    assert estimate_total(DOMAIN, ms[3:]) is None
    assert estimate_total(DOMAIN, [Measurement(("a",), [-5.0, 1.0, 1.0], 1.0)]) == 1.0  # at least one record
    with pytest.raises(ValueError, match="pass total="):
        MultiplicativeWeights().reconstruct(DOMAIN, ms[3:])


@pytest.mark.parametrize("factored", [True, False])
def test_warm_start_continues_the_iterations(factored):
    rng = np.random.default_rng(9)
    ms = measure(SPLIT, positive_truth(SPLIT, 800.0, rng), SPLIT_SPEC, rng)  # consistent: an interior optimum
    tol = 1e-6
    first = MultiplicativeWeights(iters=1, factored=factored).reconstruct(SPLIT, ms, total=800.0)
    assert first.iterations == 1 and not first.converged
    mw = MultiplicativeWeights(factored=factored)
    resumed = mw.reconstruct(SPLIT, ms, total=800.0, warm_start=first)
    straight = mw.reconstruct(SPLIT, ms, total=800.0)
    assert resumed.converged and straight.converged
    np.testing.assert_allclose(resumed.project(SPLIT.attrs), straight.project(SPLIT.attrs), atol=1e3 * tol)
    again = mw.reconstruct(SPLIT, ms, total=800.0, warm_start=straight)
    assert again.iterations == 0 and again.converged  # an optimal start is recognised as such
    with pytest.raises(ValueError, match="warm_start"):
        MultiplicativeWeights().reconstruct(DOMAIN, measure(DOMAIN, np.ones(DOMAIN.size()), [(("a",), None, 1.0)], rng),
                                            warm_start=first)


def test_recovers_noiseless_marginals_with_prefix_queries_by_default():
    """A 60-cell domain with a Prefix x Identity query, noise scales 0.3 to 2: recovered with the
    defaults, certified within a few Gauss-Newton steps."""
    domain = Domain(["a", "b", "c"], [5, 4, 3])
    rng = np.random.default_rng(13)
    x = positive_truth(domain, 1000.0, rng)
    spec = [(("a", "b"), Kronecker([Prefix(5), Identity(4)]), 1.0), (("b", "c"), None, 0.3), (("c",), Prefix(3), 2.0)]
    ms = measure(domain, x, spec, rng)
    est = MultiplicativeWeights().reconstruct(domain, ms, total=x.sum())
    assert est.converged and est.iterations < 20 and est.gap <= 1e-6
    for m in ms:
        answers = m.query_for(domain) @ est.project(m.attrs).ravel()
        assert np.abs(answers - m.y).max() < 1e-6 * x.sum()


def test_reaches_the_i_projection_of_a_warm_start_found_by_brute_force():
    """On 12 cells, a Prefix x pair-sum query and a marginal that leave p free in 6 directions
    (one row redundant): the minimiser of KL(p || p0) subject to them (scipy's SLSQP on p itself)
    from a non-uniform start p0."""
    domain = Domain(["a", "b"], [4, 3])
    rng = np.random.default_rng(15)
    x, p0 = positive_truth(domain, 100.0, rng), positive_truth(domain, 100.0, rng)
    spec = [(("a", "b"), Kronecker([Prefix(4), Dense([[1.0, 1.0, 0.0]])]), 0.05), (("b",), None, 20.0)]
    ms = measure(domain, x, spec, rng)
    Q = np.vstack([m.full_query(domain).dense() for m in ms])
    y = np.concatenate([m.y for m in ms])
    assert np.linalg.matrix_rank(Q) == 6  # one row redundant; the constraints do not pin p down
    basis = orth(Q.T).T  # SLSQP needs independent constraints: an orthonormal basis of Q's rows
    kl = lambda p: (np.sum(p * np.log(p / p0)), np.log(p / p0) + 1.0)  # noqa: E731
    result = minimize(kl, x, jac=True, method="SLSQP", bounds=[(1e-9, None)] * x.size,
                      constraints={"type": "eq", "fun": lambda p: basis @ (p - x), "jac": lambda p: basis},
                      options={"ftol": 1e-15, "maxiter": 1000})
    assert result.success and np.abs(Q @ result.x - y).max() < 1e-9
    reference = result.x
    start = VectorEstimate(domain, p0)
    est = MultiplicativeWeights().reconstruct(domain, ms, total=100.0, warm_start=start)
    assert est.converged
    np.testing.assert_allclose(est.vector, reference, atol=1e-6)
    # in the exponential family of p0: log(p / p0) lies in the row space of the constraints
    shift = np.log(est.vector / p0)
    coefficients = np.linalg.lstsq(np.vstack([Q, np.ones(x.size)]).T, shift, rcond=None)[0]
    np.testing.assert_allclose(np.vstack([Q, np.ones(x.size)]).T @ coefficients, shift, atol=1e-9)


def test_a_capped_run_reports_that_it_did_not_converge():
    rng = np.random.default_rng(14)
    ms = measure(DOMAIN, positive_truth(DOMAIN, 1000.0, rng), [(("a", "b"), None, 0.01), (("b", "c"), None, 100.0)], rng)
    seen = []
    est = MultiplicativeWeights(iters=2).reconstruct(DOMAIN, ms, total=1000.0,
                                                     callback=lambda t, v: seen.append((t, v)))
    assert est.iterations == 2 and not est.converged and est.gap > 1e-6
    assert [t for t, _ in seen] == [0, 1, 2] and all(b <= a for (_, a), (_, b) in zip(seen, seen[1:]))
    assert MultiplicativeWeights().reconstruct(DOMAIN, ms, total=1000.0).converged  # the uncapped run is


def test_recovers_the_measured_marginals_as_noise_vanishes():
    rng = np.random.default_rng(10)
    x = positive_truth(DOMAIN, 1000.0, rng)
    spec = [(("a", "b"), None, 1.0), (("b", "c"), None, 1.0), (("d",), Prefix(3), 1.0)]
    truth = VectorEstimate(DOMAIN, x)
    errors = []
    for noise in (1.0, 1e-2, 1e-5):
        est = MultiplicativeWeights(iters=3000).reconstruct(DOMAIN, measure(DOMAIN, x, spec, np.random.default_rng(11), noise))
        errors.append(max(np.abs(est.project(c) - truth.project(c)).max() for c, _, _ in spec))
    assert errors[2] < 1e-3 and errors[2] < errors[1] < errors[0]


def test_identical_inputs_and_seeds_give_identical_results():
    runs = []
    for _ in range(2):
        rng = np.random.default_rng(12)
        ms = measure(SPLIT, positive_truth(SPLIT, 500.0, rng), SPLIT_SPEC, rng, noise=1.0)
        est = MultiplicativeWeights(iters=100).reconstruct(SPLIT, ms)
        runs.append((est.project(("a", "c", "e")), est.synthetic_data(rng=3).records))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="iters"):
        MultiplicativeWeights(iters=-1)
    with pytest.raises(ValueError, match="stepsize"):
        MultiplicativeWeights(stepsize=0.0)
    with pytest.raises(ValueError, match="tol"):
        MultiplicativeWeights(tol=-1.0)
    with pytest.raises(ValueError, match="no measurements"):
        MultiplicativeWeights().reconstruct(DOMAIN, [], total=10)


# ---------------------------------------------------------------- the methods: cyclic (MWEM's rule, reused), mirror


def brute_force_cyclic(domain, ms, total, passes, start=None, stepsize=None):
    """Hardt et al. 2012, Figure 1 step 3 with sec. 2.3.2's measurement reuse, on the dense data
    vector: ``passes`` sweeps, each measurement in turn ``p <- p exp(-eta Q'W^2 (Q p - y))``,
    normalised to ``total``; ``eta = 1 / (2 total max_j max_col ||W_j Q_j col||^2)``."""
    blocks = []
    for m in ms:
        Q = np.diag(np.broadcast_to(1.0 / np.asarray(m.std), m.y.shape)) @ m.full_query(domain).dense()
        blocks.append((Q, m.y / np.asarray(m.std)))
    eta = stepsize or 1.0 / (2.0 * total * max(float(np.max(np.sum(Q**2, axis=0))) for Q, _ in blocks))
    p = np.full(domain.size(), total / domain.size()) if start is None else total * start / start.sum()
    losses = [0.5 * sum(np.sum((Q @ p - b) ** 2) for Q, b in blocks)]
    for _ in range(passes):
        for Q, b in blocks:
            p = p * np.exp(-eta * Q.T @ (Q @ p - b))
            p = total * p / p.sum()
        losses.append(0.5 * sum(np.sum((Q @ p - b) ** 2) for Q, b in blocks))
    grad = sum(Q.T @ (Q @ p - b) for Q, b in blocks)
    return p, losses, grad @ p - total * grad.min()


AWKWARD = [(("c", "a"), None, 1.5), (("b",), Prefix(4), 2.0), (("d", "b", "a"), None, 4.0),
           (("a", "b"), Kronecker([Prefix(3), Dense([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])]), 0.7)]


@pytest.mark.parametrize("warm", [False, True])
def test_cyclic_is_the_brute_force_rule_with_measurement_reuse(warm):
    """Permuted cliques, a Prefix and a Kronecker query, per-answer stds, noisy answers, a
    non-uniform start: every pass's loss, the final counts and the gap as the dense computation."""
    rng = np.random.default_rng(21)
    x = positive_truth(DOMAIN, 1500.0, rng)
    ms = measure(DOMAIN, x, AWKWARD, rng, noise=1.0)
    ms[0] = Measurement(ms[0].attrs, ms[0].y, rng.uniform(0.5, 3.0, ms[0].y.size))  # one std per answer
    start = positive_truth(DOMAIN, 1500.0, rng) if warm else None
    seen = []
    est = MultiplicativeWeights(method="cyclic", iters=25, factored=False, tol=0, ftol=0).reconstruct(
        DOMAIN, ms, total=1500.0, warm_start=None if start is None else VectorEstimate(DOMAIN, start),
        callback=lambda t, v: seen.append(v))
    p, losses, gap = brute_force_cyclic(DOMAIN, ms, 1500.0, 25, start)
    assert est.iterations == 25 and not est.converged
    np.testing.assert_allclose(est.vector, p, rtol=1e-11)
    np.testing.assert_allclose(seen, losses, rtol=1e-11)
    assert est.gap == pytest.approx(gap, rel=1e-9)


def test_cyclic_one_pass_on_one_measurement_is_figure_1():
    """One measurement of a marginal, one pass, the default step: A_1 = A_0 exp(q (m - q(A_0)) / 2n)
    on each of its answers (Hardt et al. 2012, Figure 1 step 3)."""
    rng = np.random.default_rng(22)
    total = 400.0
    m = measure(DOMAIN, positive_truth(DOMAIN, total, rng), [(("b", "d"), None, 3.0)], rng, noise=1.0)[0]
    est = MultiplicativeWeights(method="cyclic", iters=1, factored=False).reconstruct(DOMAIN, [m], total=total)
    Q = m.full_query(DOMAIN).dense()
    A0 = np.full(DOMAIN.size(), total / DOMAIN.size())
    A1 = A0 * np.exp(Q.T @ (m.y - Q @ A0) / (2 * total))
    np.testing.assert_allclose(est.vector, total * A1 / A1.sum(), rtol=1e-12)


def test_cyclic_with_a_given_step_and_factored_equals_the_full_vector():
    rng = np.random.default_rng(23)
    ms = measure(SPLIT, positive_truth(SPLIT, 800.0, rng), SPLIT_SPEC, rng, noise=1.0)
    settings = dict(method="cyclic", iters=40, stepsize=2e-4, tol=0.0, ftol=0.0)
    factored = MultiplicativeWeights(**settings).reconstruct(SPLIT, ms)
    full = MultiplicativeWeights(factored=False, **settings).reconstruct(SPLIT, ms)
    p, _, _ = brute_force_cyclic(SPLIT, [m for m in ms if m.attrs], full.total, 40, stepsize=2e-4)
    np.testing.assert_allclose(full.vector, p, rtol=1e-11)
    for attrs in [("e", "a", "c"), ("d", "b"), SPLIT.attrs]:
        np.testing.assert_allclose(factored.project(attrs), full.project(attrs), rtol=1e-10, atol=1e-10)


def test_cyclic_fits_consistent_marginals():
    """Consistent marginals: the passes approach the I-projection (the IPF solution), and stop
    once the Frank-Wolfe gap is certified."""
    rng = np.random.default_rng(24)
    x = positive_truth(DOMAIN, 1000.0, rng)
    cliques = [("a", "b"), ("c", "b"), ("d", "c")]
    ms = measure(DOMAIN, x, [(c, None, 1.0) for c in cliques], rng)
    est = MultiplicativeWeights(method="cyclic", iters=20000, factored=False).reconstruct(DOMAIN, ms, total=1000.0)
    assert est.converged and est.iterations < 20000
    np.testing.assert_allclose(est.vector, ipf(DOMAIN, x, cliques), atol=1e-2)


def test_the_methods_are_deterministic_and_the_old_options_unchanged():
    """Same inputs, same output, for every method; "auto" is Gauss-Newton without a stepsize and
    the searched-or-given batch rule ("mirror") with one, iterate for iterate."""
    rng = np.random.default_rng(25)
    ms = measure(SPLIT, positive_truth(SPLIT, 600.0, rng), SPLIT_SPEC, rng, noise=1.0)
    for method in ("cyclic", "gauss-newton", "mirror"):
        first, again = (MultiplicativeWeights(method=method, iters=30).reconstruct(SPLIT, ms) for _ in range(2))
        np.testing.assert_array_equal(first.project(SPLIT.attrs), again.project(SPLIT.attrs))
    pairs = [(MultiplicativeWeights(method="auto"), MultiplicativeWeights(method="gauss-newton")),
             (MultiplicativeWeights(stepsize=3e-4, iters=40),
              MultiplicativeWeights(method="mirror", stepsize=3e-4, iters=40))]
    for a, b in pairs:
        ea, eb = a.reconstruct(SPLIT, ms), b.reconstruct(SPLIT, ms)
        assert ea.iterations == eb.iterations
        np.testing.assert_array_equal(ea.project(SPLIT.attrs), eb.project(SPLIT.attrs))
    assert MultiplicativeWeights(method="cyclic").iters == 100 and MultiplicativeWeights().iters == 1000


def test_searched_mirror_lowers_the_loss_every_iteration():
    rng = np.random.default_rng(26)
    ms = measure(DOMAIN, positive_truth(DOMAIN, 900.0, rng), AWKWARD, rng, noise=1.0)
    seen = []
    est = MultiplicativeWeights(method="mirror", iters=60).reconstruct(DOMAIN, ms, total=900.0,
                                                                       callback=lambda t, v: seen.append(v))
    assert len(seen) == est.iterations + 1 and all(b < a for a, b in zip(seen, seen[1:]))


def test_bad_methods_are_refused():
    with pytest.raises(ValueError, match="method"):
        MultiplicativeWeights(method="newton")
    with pytest.raises(ValueError, match="stepsize"):
        MultiplicativeWeights(method="gauss-newton", stepsize=0.1)
