"""The torch junction-tree oracle (ektelo_pgm.pgm.torch_oracle) against the numba one, on
torch's CPU device (and on CUDA where present), and the ``backend`` option of PGM and APPGM."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm import Dataset, Domain, sample_data
from ektelo_pgm.errors import InputError
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.reconstruct import APPGM, PGM
from ektelo_pgm.pgm.estimation import estimate
from ektelo_pgm.pgm.inference import MarginalOracle
from ektelo_pgm.pgm.loss import Objective
from ektelo_pgm.pgm.optimizers import assess
from ektelo_pgm.pgm import backends
from ektelo_pgm.pgm.backends import resolve_backend

try:
    import torch
except ImportError:  # absent, or installed but failing to load: the torch tests skip
    torch = None
HAVE_TORCH = torch is not None
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed or does not load (the optional extra)")


def _cuda() -> bool:
    return HAVE_TORCH and torch.cuda.is_available()


DEVICES = ["cpu"] + (["cuda"] if _cuda() else [])
TORCH_BACKENDS = ["torch-cpu"] + (["gpu"] if _cuda() else [])  # "gpu" also runs the CUDA-graph loop


def torch_oracle(base, device="cpu", dtype="float64"):
    from ektelo_pgm.pgm.torch_oracle import TorchOracle

    return TorchOracle(base, device, dtype)


def random_model(sizes, picks):
    """A domain of ``sizes`` and the cliques ``picks`` (lists of attribute positions)."""
    domain = Domain([f"x{i}" for i in range(len(sizes))], list(sizes))
    cliques = [tuple(domain.attrs[i] for i in sorted(set(p))) for p in picks]
    return domain, cliques


def noisy(data, cliques, std, rng):
    out = []
    for cl in cliques:
        x = data.marginal(cl).ravel().astype(float)
        out.append(Measurement(cl, x + rng.normal(0.0, std, x.size), std))
    return out


@pytest.fixture(scope="module")
def adult():
    return sample_data.load("adult")


ADULT_TRIPLES = [("age", "education-num", "income>50K"), ("sex", "race", "hours-per-week"),
                 ("workclass", "occupation", "income>50K")]


# ------------------------------------------------------------------ backend resolution (no torch needed)

def test_unknown_backend_is_refused():
    with pytest.raises(InputError, match="backend"):
        PGM(backend="tpu")
    with pytest.raises(InputError, match="backend"):
        APPGM(backend="tpu")
    with pytest.raises(InputError, match="dtype"):
        PGM(backend="gpu", dtype="float16")


@pytest.mark.skipif(_cuda(), reason="a CUDA device is present: backend='gpu' runs")
def test_gpu_without_cuda_is_a_clear_error():
    domain = Domain(["a", "b"], [2, 3])
    m = [Measurement(("a", "b"), np.ones(6), 1.0)]
    for fit in (lambda: PGM(backend="gpu").reconstruct(domain, m),
                lambda: APPGM(backend="gpu").reconstruct(domain, m)):
        with pytest.raises(InputError, match="backend='gpu' needs"):
            fit()


def test_cpu_and_auto_without_cuda_stay_numba():
    assert resolve_backend("cpu", 10**9) == "cpu"
    if not _cuda():
        assert resolve_backend("auto", 10**9) == "cpu"
    assert resolve_backend("auto", 10) == "cpu"


def test_the_torch_devices_register_when_the_package_loads_without_importing_torch():
    code = ("import sys, ektelo_pgm.pgm; from ektelo_pgm.pgm.backends import DEVICES; "
            "print(sorted(DEVICES), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("]")[0] + "]" == "['cuda', 'torch-cpu']" and out.strip().endswith("False")


def test_backends_run_the_registered_device_and_refuse_a_missing_one(monkeypatch):
    domain = Domain(["a", "b"], [2, 3])
    base = MarginalOracle(domain, [("a", "b")])
    made = []
    device = backends.Device("torch-cpu", check=lambda: None, present=lambda: True,
                             oracle=lambda numba, dtype: made.append((numba, dtype)) or "device oracle",
                             gbp=lambda gbp: ("device gbp", gbp))
    monkeypatch.setitem(backends.DEVICES, "torch-cpu", device)
    assert backends.make_oracle(base, "torch-cpu", "float32") == "device oracle" and made == [(base, "float32")]
    assert backends.make_oracle(base, "cpu") is base and backends.device_gbp("numba gbp", "cpu") == "numba gbp"
    assert backends.device_gbp("numba gbp", "torch-cpu") == ("device gbp", "numba gbp")
    monkeypatch.delitem(backends.DEVICES, "cuda")
    with pytest.raises(InputError, match="no implementation of the 'cuda' device is registered"):
        resolve_backend("gpu")
    assert resolve_backend("auto", 10**9) == "cpu"  # no device for "auto" to choose


def present_cuda(oracle=None):
    """A stand-in for a CUDA device that is present (its oracle ``oracle(base, dtype)``)."""
    return backends.Device("cuda", check=lambda: None, present=lambda: True, oracle=oracle, gbp=None)


def test_auto_takes_a_present_gpu_only_for_large_trees_of_large_cliques(monkeypatch):
    monkeypatch.setitem(backends.DEVICES, "cuda", present_cuda())
    cells, per_clique = backends.AUTO_GPU_CELLS, backends.AUTO_GPU_CLIQUE_CELLS
    assert resolve_backend("auto", cells) == "cuda" and resolve_backend("auto", cells - 1) == "cpu"
    assert resolve_backend("auto", 100 * per_clique, 100) == "cuda"
    assert resolve_backend("auto", 100 * per_clique, 101) == "cpu"  # a chain of small cliques stays in numba
    assert resolve_backend("cpu", 10**9) == "cpu"


def test_pgm_runs_auto_by_default(monkeypatch):
    made = []
    monkeypatch.setitem(backends.DEVICES, "cuda", present_cuda(lambda base, dtype: made.append(dtype) or base))
    monkeypatch.setattr(backends, "AUTO_GPU_CELLS", 6)
    monkeypatch.setattr(backends, "AUTO_GPU_CLIQUE_CELLS", 6)
    domain = Domain(["a", "b"], [2, 3])
    PGM(iters=5).reconstruct(domain, [Measurement(("a", "b"), np.arange(6.0), 1.0)])
    assert made == ["float64"]  # the default went through the (stand-in) GPU
    PGM(iters=5, backend="cpu").reconstruct(domain, [Measurement(("a", "b"), np.arange(6.0), 1.0)])
    assert made == ["float64"]


def test_auto_runs_numba_where_the_gpu_cannot_hold_the_plan(monkeypatch):
    def full(base, dtype):
        raise MemoryError("the GPU's memory cannot hold the plan")

    monkeypatch.setitem(backends.DEVICES, "cuda", present_cuda(full))
    monkeypatch.setattr(backends, "AUTO_GPU_CELLS", 6)
    monkeypatch.setattr(backends, "AUTO_GPU_CLIQUE_CELLS", 6)
    domain = Domain(["a", "b"], [2, 3])
    m = [Measurement(("a", "b"), np.arange(6.0), 1.0)]
    with pytest.warns(UserWarning, match="running on the CPU instead"):
        model = PGM(iters=5).reconstruct(domain, m)
    np.testing.assert_allclose(model.project(("a", "b")), PGM(iters=5, backend="cpu").reconstruct(domain, m).project(
        ("a", "b")))
    with pytest.raises(MemoryError, match="cannot hold"):
        PGM(iters=5, backend="gpu").reconstruct(domain, m)


@needs_torch
def test_a_gpu_out_of_memory_is_a_memory_error_naming_the_tree(monkeypatch):
    from ektelo_pgm.pgm import torch_oracle

    def out_of_memory(*args):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(torch_oracle, "TorchOracle", out_of_memory)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    base = MarginalOracle(Domain(["a", "b"], [2, 3]), [("a", "b")])
    with pytest.raises(MemoryError, match="junction tree of 6 cells"):
        torch_oracle.cuda_oracle(base, "float64")


# ------------------------------------------------------------------ marginals equal the numba oracle's

@needs_torch
@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=7),
       picks=st.lists(st.lists(st.integers(0, 6), min_size=1, max_size=3), min_size=1, max_size=7),
       seed=st.integers(0, 2**16))
def test_marginals_equal_numba_on_random_models(sizes, picks, seed):
    picks = [[i % len(sizes) for i in p] for p in picks]
    domain, cliques = random_model(sizes, picks)
    base = MarginalOracle(domain, cliques)
    oracle = torch_oracle(base)
    rng = np.random.default_rng(seed)
    total = 1000.0
    for scale in (0.1, 3.0, 30.0):
        theta = rng.normal(0.0, scale, base.size)
        want = base.marginals(theta, total)
        got = oracle.marginals(theta, total)
        assert np.abs(got - want).max() <= 1e-10 * total
        assert oracle.log_partition(theta) == pytest.approx(base.log_partition(theta), rel=1e-12, abs=1e-10)


@needs_torch
@pytest.mark.parametrize("device", DEVICES)
def test_marginals_equal_numba_on_adult(adult, device):
    cliques = [(a,) for a in adult.domain.attrs] + ADULT_TRIPLES
    base = MarginalOracle(adult.domain, cliques)
    oracle = torch_oracle(base, device)
    rng = np.random.default_rng(1)
    total = float(len(adult))
    for _ in range(2):
        theta = rng.normal(0.0, 2.0, base.size)
        want = base.marginals(theta, total)
        assert np.abs(oracle.marginals(theta, total) - want).max() <= 1e-10 * total
    grad = rng.normal(size=base.size)
    assert oracle.gap(want, grad, total, 1e-3) == pytest.approx(base.gap(want, grad, total, 1e-3), rel=1e-9, abs=1e-6)


# The fused Triton kernels, run by triton's interpreter on the CPU (in a child process: the
# interpreter is chosen when triton loads).  triton 3.6's interpreter turns a loop bound into an
# int with int() of a one-element array, which numpy 2.4 refuses; the child takes the element.
FUSED_CHECK = """
import numpy as np
from triton.runtime import interpreter

patch = interpreter._patch_lang_tensor
def patched(tensor, scope):
    patch(tensor, scope)
    scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))
interpreter._patch_lang_tensor = patched

from ektelo_pgm import Domain
from ektelo_pgm.pgm import backends
from ektelo_pgm.pgm.estimation import estimate
from ektelo_pgm.pgm.inference import MarginalOracle
from ektelo_pgm.pgm.torch_oracle import TorchOracle
from ektelo_pgm.measurement import Measurement

rng = np.random.default_rng(0)
domain = Domain([f"x{i}" for i in range(6)], [10, 10, 30, 3, 4, 2])
cliques = [("x0", "x1", "x2"), ("x2", "x3"), ("x3", "x4", "x5"), ("x0",), ("x1", "x5")]
base = MarginalOracle(domain, cliques)
fused = TorchOracle(base, "cpu", fused=True)
assert max(r.chunks for r in fused.normalise) > 1  # a row split over chunks, reduced twice
for scale in (0.1, 3.0, 30.0):
    theta = rng.normal(0.0, scale, base.size)
    want = base.marginals(theta, 1000.0)
    assert np.abs(fused.marginals(theta, 1000.0) - want).max() <= 1e-10 * 1000.0
    assert abs(fused.log_partition(theta) - base.log_partition(theta)) <= 1e-10 * abs(base.log_partition(theta))
    single = TorchOracle(base, "cpu", "float32", fused=True)  # the device loop's float32 calibration
    mu = single._calibrate(single._tensor(theta), 1000.0).double().numpy()
    assert np.abs(mu - want).max() <= 1e-4 * 1000.0

device = backends.DEVICES["torch-cpu"]
backends.register(backends.Device("torch-cpu", device.check, device.present,
                                  lambda base, dtype: TorchOracle(base, "cpu", dtype, fused=True), device.gbp))
data = rng.integers(0, 3, size=(500, 3))
small = Domain(["a", "b", "c"], [3, 3, 3])
ms = []
for cl, idx in [(("a", "b"), [0, 1]), (("b", "c"), [1, 2])]:
    counts = np.histogramdd(data[:, idx], bins=[3, 3], range=[(0, 3), (0, 3)])[0].ravel()
    ms.append(Measurement(cl, counts + rng.normal(0.0, 5.0, 9), 5.0))
ref = estimate(small, ms, method="mirror", iters=12)
got = estimate(small, ms, method="mirror", iters=12, backend="torch-cpu")
assert got.iterations == ref.iterations and abs(got.loss - ref.loss) <= 1e-9 * ref.loss
print("fused ok")
"""


@pytest.mark.skipif(not (HAVE_TORCH and importlib.util.find_spec("triton")),
                    reason="triton is not installed (torch's CUDA builds bring it)")
def test_fused_kernels_equal_the_numba_oracle_in_the_triton_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1")
    out = subprocess.run([sys.executable, "-c", FUSED_CHECK], capture_output=True, text=True, env=env, timeout=900)
    assert out.returncode == 0 and "fused ok" in out.stdout, out.stderr[-3000:]


@needs_torch
def test_failing_fused_kernels_fall_back_to_torch_operations(monkeypatch):
    from ektelo_pgm.pgm import torch_oracle

    monkeypatch.setattr(torch_oracle, "fuses", lambda device: True)
    monkeypatch.setitem(sys.modules, "ektelo_pgm.pgm.torch_fused", None)  # the kernels' import fails
    monkeypatch.setattr(torch_oracle, "FUSED_FAILURES", [])
    domain, cliques = random_model([3, 4, 2, 5], [[0, 1], [1, 2], [2, 3]])
    base = MarginalOracle(domain, cliques)
    with pytest.warns(UserWarning, match="no fused kernels"):
        oracle = torch_oracle.TorchOracle(base)
    assert not oracle.fused and len(torch_oracle.FUSED_FAILURES) == 1
    theta = np.random.default_rng(0).normal(size=base.size)
    assert np.abs(oracle.marginals(theta, 100.0) - base.marginals(theta, 100.0)).max() <= 1e-10 * 100.0
    with pytest.raises(ImportError):  # asked for explicitly, the failure is the caller's
        torch_oracle.TorchOracle(base, fused=True)


@needs_torch
def test_float32_calibrates_close_and_answers_the_host_in_float64():
    domain, cliques = random_model([3, 4, 2, 5], [[0, 1], [1, 2], [2, 3], [0]])
    base = MarginalOracle(domain, cliques)
    theta = np.random.default_rng(0).normal(size=base.size)
    oracle = torch_oracle(base, dtype="float32")
    want = base.marginals(theta, 100.0)
    loop = oracle._calibrate(oracle._tensor(theta), 100.0)
    assert loop.dtype == torch.float32 and np.abs(loop.double().numpy() - want).max() <= 1e-4 * 100.0
    assert np.abs(oracle.marginals(theta, 100.0) - want).max() <= 1e-10 * 100.0
    assert oracle.log_partition(theta) == pytest.approx(base.log_partition(theta), rel=1e-12)


# ------------------------------------------------------------------ the optimisers on the torch oracle

@pytest.fixture(scope="module")
def small_problem():
    rng = np.random.default_rng(0)
    domain = Domain([f"a{i}" for i in range(7)], [2, 3, 4, 2, 5, 3, 4])
    data = Dataset(np.stack([rng.integers(0, n, 3000) for n in domain.shape], 1), domain)
    cliques = [("a0", "a1"), ("a1", "a2", "a3"), ("a3", "a4"), ("a2", "a5"), ("a6",), ("a5", "a6"), ("a4", "a6")]
    return domain, noisy(data, cliques, 10.0, rng)


@needs_torch
@pytest.mark.parametrize("backend", TORCH_BACKENDS)
@pytest.mark.parametrize("method,loss", [("mirror", "l2"), ("mirror", "l1"), ("lbfgs", "l2"), ("accelerated", "l2")])
def test_loop_reaches_the_same_loss(small_problem, method, loss, backend):
    domain, ms = small_problem
    ref = estimate(domain, ms, method=method, loss=loss, iters=150)
    got = estimate(domain, ms, method=method, loss=loss, iters=150, backend=backend)
    assert got.loss == pytest.approx(ref.loss, rel=1e-9)
    assert np.abs(got.project(("a1", "a2")) - ref.project(("a1", "a2"))).max() <= 1e-6 * ref.total
    if method == "mirror" and loss == "l2":  # the device loop takes the numba loop's steps
        assert got.iterations == ref.iterations


@needs_torch
def test_float32_loop_ends_near_the_float64_loss(small_problem):
    domain, ms = small_problem
    ref = estimate(domain, ms, method="mirror", iters=100)
    got = estimate(domain, ms, method="mirror", iters=100, backend="torch-cpu", dtype="float32")
    assert got.loss == pytest.approx(ref.loss, rel=1e-3)


@needs_torch
@pytest.mark.parametrize("backend", TORCH_BACKENDS)
def test_float32_reports_float64_answers_and_finishes_its_loop_in_float64(backend):
    # A million records: float32 resolves a marginal of 1e5 to about 0.1, so its line search ran out
    # after 28 iterations, and the loss it reported, from its own marginals, lay 0.3% below the optimum.
    rng = np.random.default_rng(0)
    domain = Domain([f"a{i}" for i in range(7)], [2, 3, 4, 2, 5, 3, 4])
    data = Dataset(np.stack([rng.integers(0, n, 1_000_000) for n in domain.shape], 1), domain)
    ms = noisy(data, [("a0", "a1"), ("a1", "a2", "a3"), ("a3", "a4"), ("a2", "a5"), ("a6",), ("a5", "a6"),
                      ("a4", "a6")], 10.0, rng)
    seen = []
    got = estimate(domain, ms, method="mirror", iters=1000, backend=backend, dtype="float32",
                   callback=lambda t, v: seen.append(t))
    ref = estimate(domain, ms, method="mirror", iters=1000)
    optimum = estimate(domain, ms, method="lbfgs", iters=1000).loss
    exact = assess(got.oracle, Objective(got.oracle, ms, "l2"), got.theta, got.total, got.iterations)
    assert got.loss == pytest.approx(exact.loss, rel=1e-9) and got.gap == pytest.approx(exact.gap, rel=1e-6)
    assert got.loss >= optimum * (1 - 1e-9) and got.loss == pytest.approx(ref.loss, rel=1e-6)
    assert seen == list(range(1, got.iterations + 1)) and got.iterations > 28


@needs_torch
@pytest.mark.parametrize("backend", TORCH_BACKENDS)
def test_device_loop_reports_every_iteration(small_problem, backend):
    from ektelo_pgm.pgm import torch_oracle

    domain, ms = small_problem
    seen, want = [], []
    estimate(domain, ms, method="mirror", iters=40, callback=lambda t, v: want.append((t, v)))
    failures = len(torch_oracle.GRAPH_FAILURES), len(torch_oracle.FUSED_FAILURES)
    estimate(domain, ms, method="mirror", iters=40, backend=backend, callback=lambda t, v: seen.append((t, v)))
    # the CUDA graph captured and, on CUDA with triton, the fused kernels ran
    assert (len(torch_oracle.GRAPH_FAILURES), len(torch_oracle.FUSED_FAILURES)) == failures, \
        (torch_oracle.GRAPH_FAILURES[-1:], torch_oracle.FUSED_FAILURES[-1:])
    assert [t for t, _ in seen] == [t for t, _ in want] == list(range(1, 41))
    np.testing.assert_allclose([v for _, v in seen], [v for _, v in want], rtol=1e-9)


@needs_torch
def test_non_identity_queries_run_the_host_loop(small_problem):
    domain, ms = small_problem
    prefix = np.tril(np.ones((4, 4)))
    ms = ms + [Measurement(("a2",), prefix @ np.full(4, 750.0) + 5.0, 10.0, query=prefix)]
    ref = estimate(domain, ms, method="mirror", iters=60)
    got = estimate(domain, ms, method="mirror", iters=60, backend="torch-cpu")
    assert got.loss == pytest.approx(ref.loss, rel=1e-9)


@needs_torch
@pytest.mark.parametrize("backend", TORCH_BACKENDS)
def test_same_seed_same_synthetic_data(small_problem, backend):
    domain, ms = small_problem
    runs = [PGM(iters=80, method="mirror", backend=backend).reconstruct(domain, ms).synthetic_data(500, rng=3)
            for _ in range(2)]
    np.testing.assert_array_equal(runs[0].records, runs[1].records)


@needs_torch
def test_appgm_backend(small_problem):
    domain, ms = small_problem
    ref = APPGM(region_graph="tree", method="lbfgs", iters=100).reconstruct(domain, ms)
    got = APPGM(region_graph="tree", method="lbfgs", iters=100, backend="torch-cpu").reconstruct(domain, ms)
    assert got.project(("a1", "a2")) == pytest.approx(ref.project(("a1", "a2")), rel=1e-6, abs=1e-6 * 3000)
    ref = APPGM(method="mirror", iters=40).reconstruct(domain, ms)
    got = APPGM(method="mirror", iters=40, backend="torch-cpu").reconstruct(domain, ms)
    assert got.iterations == ref.iterations
    np.testing.assert_allclose(got.project(("a1", "a2", "a3")), ref.project(("a1", "a2", "a3")), rtol=1e-8, atol=1e-8)
    with pytest.raises(InputError, match="method='mirror'"):
        APPGM(method="augmented", iters=5, backend="torch-cpu").reconstruct(domain, ms)


@needs_torch
@pytest.mark.parametrize("kind", ["saturated", "factor"])
def test_convex_gbp_equals_numba(kind):
    from ektelo_pgm.pgm.appgm.inference import ConvexGBP, consistent_beliefs
    from ektelo_pgm.pgm.region_graph import RegionGraph
    from ektelo_pgm.pgm.torch_gbp import TorchConvexGBP

    rng = np.random.default_rng(5)
    domain = Domain([f"c{i}" for i in range(8)], [3, 2, 4, 3, 2, 3, 2, 4])
    cliques = list(dict.fromkeys(tuple(f"c{i}" for i in sorted(rng.choice(8, 3, replace=False))) for _ in range(8)))
    graph = RegionGraph.build(kind, domain, cliques)
    for kappa in (None, rng.uniform(0.5, 2.0, len(graph.regions))):
        if kappa is not None:
            graph.kappa = kappa
        ref, got = ConvexGBP(graph, 0.5), TorchConvexGBP(graph, 0.5)
        theta = rng.normal(0.0, 2.0, graph.cells)
        for extrapolate in (False, True, False):
            want = ref(theta, 100.0, iters=3, extrapolate=extrapolate)
            np.testing.assert_allclose(got(theta, 100.0, iters=3, extrapolate=extrapolate), want, rtol=0, atol=1e-10)
            assert got.violation(want) == pytest.approx(ref.violation(want), rel=1e-9, abs=1e-12)
        back = got.to_numba()
        np.testing.assert_allclose(back.beliefs(theta, 100.0), ref.beliefs(theta, 100.0), rtol=0, atol=1e-10)
        np.testing.assert_allclose(consistent_beliefs(got, theta, 100.0, 50, 1e-9),
                                   consistent_beliefs(ref, theta, 100.0, 50, 1e-9), rtol=0, atol=1e-9)


@needs_torch
def test_aim_end_to_end_gives_the_numba_records():
    from ektelo_pgm import Budget
    from ektelo_pgm.mechanisms import AIM

    data = sample_data.load("titanic")
    records = []
    for backend in ("cpu", "torch-cpu"):
        aim = AIM(estimator=PGM(method="mirror", backend=backend), rounds=20)
        result = aim.run(data, Budget.approx(3.0, 1e-9), rng=0)
        records.append(result.estimate.synthetic_data(300, rng=0).records)
    np.testing.assert_array_equal(records[0], records[1])
