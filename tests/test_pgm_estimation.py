"""Private-PGM estimation: noiseless recovery, losses, unknown totals, warm starts, the operator."""

import numpy as np
import pytest

from ektelo_pgm.domain import Domain
from ektelo_pgm.matrix import Dense, Identity, Kronecker, Prefix
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.reconstruct import PGM
from ektelo_pgm.pgm.clique_vector import CliqueVector
from ektelo_pgm.measurement import estimate_total
from ektelo_pgm.pgm.factor import Factor
from ektelo_pgm.pgm.inference import MarginalOracle
from ektelo_pgm.pgm.junction_tree import ModelTooLargeError
from ektelo_pgm.pgm.loss import Objective, largest_eigenvalue
from ektelo_pgm.pgm.model import GraphicalModel
from ektelo_pgm.pgm.optimizers import Oracle, mirror_descent

DOM = Domain(list("abcdef"), [2, 3, 4, 2, 3, 2])
CLIQUES = [("a", "b"), ("c", "b"), ("c", "d", "a"), ("e",)]  # f is never measured


def _truth(seed=0, total=1000.0):
    rng = np.random.default_rng(seed)
    pots = CliqueVector({cl: Factor(DOM.project(cl), rng.normal(size=DOM.project(cl).shape)) for cl in CLIQUES})
    return GraphicalModel(DOM, CLIQUES, pots, total=total)


def _measurements(truth):
    ms = [Measurement(cl, truth.project(cl).ravel(), 1.0 + 0.25 * i) for i, cl in enumerate(CLIQUES)]
    ms.append(Measurement(("b", "a"), truth.project(("b", "a")).ravel(), 2.0))  # duplicate, permuted
    ms.append(Measurement(("d",), truth.project(("d",)).ravel(), np.linspace(1, 2, 2)))  # per-answer std
    prefix = Prefix(4)
    ms.append(Measurement(("c",), prefix @ truth.project(("c",)), 0.5, query=prefix))
    kron = Kronecker([Identity(2), Prefix(4)])  # a general query over permuted attributes
    ms.append(Measurement(("d", "c"), kron @ truth.project(("d", "c")).ravel(), 1.0, query=kron))
    return ms


def _error(model, truth):
    return max(np.abs(model.project(cl) - truth.project(cl)).max() for cl in CLIQUES + [("a", "e", "f")])


@pytest.mark.parametrize("method,loss,known,iters,tolerance", [
    ("mirror", "l2", True, 3000, 0.01), ("mirror", "l2", False, 3000, 0.01),
    ("accelerated", "l2", True, 5000, 0.5), ("accelerated", "l2", False, 5000, 0.5),
    ("mirror", "l1", True, 5000, 0.5), ("mirror", "l1", False, 5000, 0.5)])
def test_recovers_noiseless_marginals(method, loss, known, iters, tolerance):
    truth = _truth()
    seen = []
    model = PGM(iters=iters, method=method, loss=loss).reconstruct(
        DOM, _measurements(truth), total=1000.0 if known else None, callback=lambda t, v: seen.append(v))
    assert np.isclose(model.total, 1000.0)
    assert _error(model, truth) < tolerance  # counts, out of 1000 records
    assert seen and model.loss <= seen[0] + 1e-12
    if method == "mirror" and loss == "l2":
        assert all(b <= a for a, b in zip(seen, seen[1:]))  # the line search is monotone


def _reference_mirror_descent(oracle, objective, total, iters, first, smooth):
    """Algorithm 1 with Armijo line search, step by step in Python (the compiled loop's rules)."""
    theta = np.zeros(oracle.size)
    mu = oracle.calibrate(theta, total)[0]
    value, grad = objective(mu)
    alpha, streak, losses, kinks = first, 4, [], 0
    best_theta, best_value = theta, value
    for t in range(1, iters + 1):
        if streak >= 4:
            alpha, streak = 2 * alpha, 0
        for trial in range(25):
            new_theta = theta - alpha * grad
            new_mu = oracle.calibrate(new_theta, total)[0]
            new_value, new_grad = objective(new_mu)
            if value - new_value >= 1e-4 * grad @ (mu - new_mu) and value - new_value > 1e-9 * value:
                streak = streak + 1 if trial == 0 else 0
                break
            alpha /= 2
        else:
            if smooth:
                break
            alpha, kinks = first / np.sqrt(t), kinks + 1
            new_theta = theta - alpha * grad
            new_mu = oracle.calibrate(new_theta, total)[0]
            new_value, new_grad = objective(new_mu)
        theta, mu, value, grad = new_theta, new_mu, new_value, new_grad
        losses.append(value)
        if value < best_value:
            best_theta, best_value = theta, value
    if not smooth and best_value < value:
        return best_theta, best_value, losses, kinks
    return theta, value, losses, kinks


class Unfused:
    """The junction-tree oracle without its compiled loop: the shared Python loop runs instead."""

    def __init__(self, oracle):
        self.size, self.scale, self.marginals, self.gap = oracle.size, oracle.scale, oracle.marginals, oracle.gap


@pytest.mark.parametrize("loss,general,iters", [("l2", False, 60), ("l2", True, 60), ("l1", True, 600)])
def test_compiled_mirror_descent_matches_python_reference(loss, general, iters):
    truth = _truth()
    ms = [m for m in _measurements(truth) if general or m.query is None]
    oracle = MarginalOracle(DOM, [m.attrs for m in ms])
    assert isinstance(oracle, Oracle) and isinstance(Unfused(oracle), Oracle)
    objective = Objective(oracle, ms, loss)
    first = objective.first_step(1000.0)
    theta, value, losses, kinks = _reference_mirror_descent(oracle, objective, 1000.0, iters, first, loss == "l2")
    assert objective.needs_python == general and (kinks > 0) == (loss == "l1")  # L1 takes a subgradient step
    for engine in (oracle, Unfused(oracle)):  # the compiled loop and the shared Python one
        seen = []
        got, rule = mirror_descent(engine, objective, 1000.0, np.zeros(oracle.size), iters=iters,
                                   callback=lambda t, v: seen.append((t, v)))
        assert [t for t, _ in seen] == list(range(1, len(losses) + 1)) and rule.iterations == len(losses)
        np.testing.assert_allclose([v for _, v in seen], losses, rtol=1e-9)
        np.testing.assert_allclose(got, theta, rtol=1e-8, atol=1e-10)
        assert rule.loss == pytest.approx(value, rel=1e-9)


def test_total_estimation_inverse_variance():
    truth = _truth(total=500.0)
    cells = truth.project(("c",))
    prefix = Prefix(4)
    assert Measurement(("c",), prefix @ cells, 2.0, query=prefix).total_estimate(DOM) == pytest.approx((500.0, 4.0))
    assert Measurement(("c",), cells[:1], 1.0, query=Dense(np.eye(4)[:1])).total_estimate(DOM) is None
    noisy = [Measurement(("a",), [100.0, 300.0], 1.0), Measurement(("b",), [200.0, 100.0, 300.0], 2.0)]
    var_a, var_b = 2.0, 12.0
    expected = (400.0 / var_a + 600.0 / var_b) / (1 / var_a + 1 / var_b)
    assert estimate_total(DOM, noisy) == pytest.approx(expected)
    assert estimate_total(DOM, noisy[:0]) is None
    with pytest.raises(ValueError, match="number of records is unknown"):
        PGM(iters=5).reconstruct(DOM, [Measurement(("c",), cells[:1], 1.0, query=Dense(np.eye(4)[:1]))])


def test_objective_gradient_and_lipschitz():
    truth = _truth()
    ms = _measurements(truth)
    oracle = MarginalOracle(DOM, [m.attrs for m in ms])
    rng = np.random.default_rng(1)
    mu = rng.random(oracle.size) * 50
    for loss in ("l2", "l1"):
        objective = Objective(oracle, ms, loss)
        value, grad = objective(mu)
        step = rng.normal(size=mu.size) * 1e-6
        assert np.isclose(objective(mu + step)[0] - value, grad @ step, rtol=1e-4, atol=1e-9)
    q = Dense(rng.normal(size=(5, 4)))
    w = rng.random(5) + 0.5
    dense = q.dense()
    assert np.isclose(largest_eigenvalue(q, w), np.linalg.eigvalsh(dense.T @ np.diag(w**2) @ dense).max(), rtol=1e-4)
    # blocks: (a,b) 1 + 1/4, (c,d,a) 1/1.5^2, (e) 1/1.75^2, (d) 1, (c) top eigenvalue of P^T P / 0.5^2,
    # (c,d) that of kron(I, P)^T kron(I, P)
    prefix = Prefix(4).dense()
    expected = max(1.25, np.linalg.eigvalsh(prefix.T @ prefix).max() / 0.25)
    assert np.isclose(Objective(oracle, ms, "l2").lipschitz(), expected, rtol=1e-4)


def test_custom_loss_and_extra_cliques():
    truth = _truth()
    target = truth.project(("c", "d", "a"))

    def loss(marginals):
        diff = marginals[("a", "c", "d")].values - np.transpose(target, (2, 0, 1))
        return 0.5 * float(np.sum(diff**2)), CliqueVector({("a", "c", "d"): Factor(DOM.project(("a", "c", "d")), diff)})

    model = PGM(iters=500, loss=loss).reconstruct(DOM, [], total=1000.0, cliques=[("d", "c", "a")])
    assert np.abs(model.project(("c", "d", "a")) - target).max() < 1e-3
    with pytest.raises(ValueError, match="not a model clique"):
        PGM(iters=2, loss=lambda m: (0.0, CliqueVector({("a", "b"): Factor.zeros(DOM.project(("a", "b")))}))).reconstruct(
            DOM, [], total=10.0, cliques=[("a",)])


def test_warm_start_continues_from_previous_model():
    truth = _truth()
    ms = _measurements(truth)
    first = PGM(iters=300).reconstruct(DOM, ms[:2], total=1000.0)
    cold = PGM(iters=3).reconstruct(DOM, ms, total=1000.0)
    warm = PGM(iters=3).reconstruct(DOM, ms, total=1000.0, warm_start=first)
    assert set(first.cliques) <= set(warm.cliques)
    assert warm.loss < cold.loss
    with pytest.raises(ValueError, match="warm start"):
        PGM().reconstruct(Domain(["z"], [2]), [Measurement(("z",), [1.0, 2.0], 1.0)], warm_start=first)


@pytest.mark.parametrize("method", ["lbfgs", "mirror", "accelerated"])
def test_warm_start_matches_a_new_clique_before_any_iteration(method):
    """A clique the warm start lacks starts at its measured marginal (one step of iterative
    proportional fitting); a measured clique inside a warm one changes nothing."""
    truth = _truth()
    ms = _measurements(truth)[:3]  # ("a", "b"), ("c", "b"), then ("c", "d", "a") is new
    first = PGM(iters=300, method=method).reconstruct(DOM, ms[:2], total=1000.0)
    warm = PGM(iters=0, method=method).reconstruct(DOM, ms, total=1000.0, warm_start=first)
    np.testing.assert_allclose(warm.project(("c", "d", "a")), truth.project(("c", "d", "a")), rtol=1e-6)
    plain = PGM(iters=0, method=method).reconstruct(DOM, ms[:2] + [Measurement(("c",), ms[2].y[:4], 1.0)],
                                                    total=1000.0, warm_start=first)  # c lies inside a warm clique
    np.testing.assert_allclose(plain.theta[:first.theta.size], first.theta)
    noisy = Measurement(ms[2].attrs, ms[2].y + np.random.default_rng(0).normal(scale=30.0, size=ms[2].y.size), 30.0)
    cold = PGM(iters=0, method=method).reconstruct(DOM, ms[:2] + [noisy], total=1000.0, warm_start=first)
    unmatched = sum(0.5 * float(np.sum(((first.project(m.attrs).ravel() - m.y) / m.std) ** 2))
                    for m in ms[:2] + [noisy])  # the warm start's own potentials, zero on the new clique
    assert cold.loss <= unmatched * (1 + 1e-9)  # never a worse start


@pytest.mark.parametrize("method", ["auto", "lbfgs", "mirror", "accelerated"])
def test_only_general_queries(method):
    """No identity measurement at all (the curvature of L-BFGS's default then starts from no cells),
    cold and warm started."""
    truth = _truth()
    kron = Kronecker([Identity(2), Prefix(4)])
    ms = [Measurement(("d", "c"), kron @ truth.project(("d", "c")).ravel(), 1.0, query=kron),
          Measurement(("c",), Prefix(4) @ truth.project(("c",)), 0.5, query=Prefix(4))]
    model = PGM(iters=2000, method=method).reconstruct(DOM, ms, total=1000.0)
    assert np.abs(model.project(("d", "c")) - truth.project(("d", "c"))).max() < 0.5
    warm = PGM(iters=10, method=method).reconstruct(DOM, ms, total=1000.0, warm_start=model)
    assert warm.loss <= model.loss + 1e-9 * max(model.loss, 1.0)


def test_operator_validation_and_size_refusal():
    with pytest.raises(ValueError, match="method"):
        PGM(method="newton")
    with pytest.raises(ValueError, match="loss"):
        PGM(loss="huber")
    with pytest.raises(ValueError, match="tol"):
        PGM(tol=-0.5)
    big = Domain([f"x{i}" for i in range(4)], [100] * 4)
    ms = [Measurement(("x0", "x1", "x2"), np.zeros(10**6), 1.0), Measurement(("x2", "x3", "x0"), np.zeros(10**6), 1.0)]
    with pytest.raises(ModelTooLargeError, match="MB"):
        PGM(max_mb=10).reconstruct(big, ms, total=1.0)
    with pytest.raises(ValueError, match="answers"):
        PGM().reconstruct(DOM, [Measurement(("a",), [1.0, 2.0, 3.0], 1.0)])


def test_auto_picks_by_model_size(monkeypatch):
    """``"auto"`` on L2: L-BFGS up to LBFGS_CELLS parameters (the junction tree's cells), mirror
    descent above (docs/benchmarks.md, "Default methods by time to quality"); mirror descent for
    L1; explicit methods as asked.  Nothing is solved: the optimisers are replaced by recorders."""
    from ektelo_pgm.convergence import StoppingRule
    from ektelo_pgm.pgm import estimation, optimizers
    from ektelo_pgm.pgm.estimation import LBFGS_CELLS, resolve_method

    def chain(d):
        domain = Domain([f"x{i}" for i in range(d)], [10] * d)
        return domain, [Measurement((f"x{i}", f"x{i + 1}", f"x{i + 2}"), np.zeros(1000), 1.0) for i in range(d - 2)]

    ran = []
    def recorder(name):
        return lambda oracle, objective, total, theta, *args: ran.append(name) or (theta, StoppingRule())

    monkeypatch.setattr(optimizers, "quasi_newton", recorder("lbfgs"))
    monkeypatch.setattr(optimizers, "mirror_descent", recorder("mirror"))
    small, large = chain(12), chain(120)
    sizes = [MarginalOracle(domain, [m.attrs for m in ms]).size for domain, ms in (small, large)]
    assert sizes[0] <= LBFGS_CELLS < sizes[1]
    for (domain, ms), loss in [(small, "l2"), (large, "l2"), (small, "l1")]:
        estimation.estimate(domain, ms, total=1.0, loss=loss)
    assert ran == ["lbfgs", "mirror", "mirror"]
    assert resolve_method("auto", "l2") == resolve_method("auto", "l2", LBFGS_CELLS) == "lbfgs"
    assert resolve_method("auto", "l2", LBFGS_CELLS + 1) == resolve_method("auto", "l1", 10) == "mirror"
    assert resolve_method("lbfgs", "l2", 10 * LBFGS_CELLS) == "lbfgs"
