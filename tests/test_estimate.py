import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm import Domain, Estimate, VectorEstimate
from ektelo_pgm.estimate import BayesNet, round_conditional
from ektelo_pgm.matrix import Prefix


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_project_matches_brute_force(shape, data):
    domain = Domain([f"x{i}" for i in range(len(shape))], shape)
    vector = np.random.default_rng(data.draw(st.integers(0, 99))).random(domain.size())
    attrs = data.draw(st.permutations(domain.attrs))[: data.draw(st.integers(0, len(shape)))]
    expected = np.zeros(domain.project(attrs).shape)
    for flat, value in enumerate(vector):
        cell = np.unravel_index(flat, domain.shape)
        expected[tuple(cell[domain.attrs.index(a)] for a in attrs)] += value
    np.testing.assert_allclose(VectorEstimate(domain, vector).project(attrs), expected)


def test_answer_total_and_synthetic_data():
    domain = Domain(["a", "b"], [3, 2])
    est = VectorEstimate(domain, [10, 0, 5, 5, -1, 20])
    assert est.total == 39
    np.testing.assert_allclose(est.answer(Prefix(3), ["a"]), [10, 20, 39])
    with pytest.raises(ValueError, match="2 columns but the marginal on \\['a'\\] has 3 cells"):
        est.answer(np.ones((1, 2)), ["a"])
    sample = est.synthetic_data(200_000, rng=1)
    assert len(sample) == 200_000
    freq = sample.datavector() / 200_000
    expected = np.array([10, 0, 5, 5, 0, 20]) / 40  # negative counts are clipped to zero
    np.testing.assert_allclose(freq, expected, atol=4 * np.sqrt(0.25 / 200_000))
    np.testing.assert_array_equal(est.synthetic_data(50, rng=7).records, est.synthetic_data(50, rng=7).records)


def test_refusals():
    with pytest.raises(ValueError, match="5 cells but the domain has 6"):
        VectorEstimate(Domain(["a", "b"], [3, 2]), np.ones(5))
    with pytest.raises(MemoryError, match="MB"):
        VectorEstimate(Domain(["a", "b"], [10**6, 10**6]), np.ones(1))
    with pytest.raises(ValueError, match="no positive mass"):
        VectorEstimate(Domain(["a"], [2]), [-1.0, 0.0]).synthetic_data(5)


def test_a_bayes_net_is_an_estimate_of_its_total():
    """project = total times the exact probabilities (probabilities for total 1), answer follows,
    synthetic_data draws the rounded total by default and matches the network's marginals."""
    domain = Domain(["a", "b", "c"], [2, 3, 2])
    cpts = {"a": np.array([0.25, 0.75]), "b": np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]]),
            "c": np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])}
    parents = {"b": ("a",), "c": ("b",)}
    probabilities = BayesNet(domain, parents, cpts)
    counts = BayesNet(domain, parents, cpts, total=1000)
    joint = np.einsum("a,ab,bc->abc", cpts["a"], cpts["b"], cpts["c"])
    assert isinstance(counts, Estimate) and counts.total == 1000 and probabilities.total == 1
    np.testing.assert_allclose(probabilities.project(("c", "a")), joint.sum(axis=1).T, atol=1e-15)
    np.testing.assert_allclose(counts.project(("c", "a")), 1000 * joint.sum(axis=1).T, atol=1e-12)
    np.testing.assert_allclose(counts.answer(Prefix(2), ("c",)), np.cumsum(1000 * joint.sum(axis=(0, 1))))
    assert counts.project(()) == 1000
    sample = counts.synthetic_data(rng=3)
    assert len(sample) == 1000 and sample.domain == domain
    np.testing.assert_array_equal(sample.records, counts.synthetic_data(rng=3).records)
    big = counts.synthetic_data(100_000, rng=4)
    np.testing.assert_allclose(big.marginal(("a", "c")) / 100_000, joint.sum(axis=1), atol=0.01)
    with pytest.raises(ValueError, match="total"):
        BayesNet(domain, parents, cpts, total=0)
    with pytest.raises(ValueError, match="total"):
        BayesNet(domain, parents, cpts, total=None)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 40), st.integers(1, 7), st.integers(0, 2**32 - 1))
def test_rounded_values_meet_each_group_within_one_record(groups, width, seed):
    """round_conditional: every group's count of every value is the floor or the ceiling of its
    expectation, and the group keeps its records."""
    rng = np.random.default_rng(seed)
    cond = rng.dirichlet(np.full(width, 0.3), size=groups)
    members = rng.integers(0, groups, size=int(rng.integers(1, 300)))
    values = round_conditional(members, cond, np.random.default_rng(seed))
    counts = np.zeros((groups, width))
    np.add.at(counts, (members, values), 1)
    target = np.bincount(members, minlength=groups)[:, None] * cond
    assert np.all((counts >= np.floor(target) - 1e-9) & (counts <= np.ceil(target) + 1e-9))


def test_rounding_keeps_the_rare_values_of_small_groups():
    """Groups of one record each: a value still comes out as often as its probability says (the
    records left after the floors are not all given to the likeliest values)."""
    cond = np.tile([0.5, 0.3, 0.15, 0.05], (40_000, 1))
    values = round_conditional(np.arange(40_000), cond, np.random.default_rng(0))
    share = np.bincount(values, minlength=4) / 40_000
    assert np.all(np.abs(share - cond[0]) <= 5 * np.sqrt(cond[0] * (1 - cond[0]) / 40_000))


def test_a_bayes_net_rounds_every_table_to_within_one_record_per_cell():
    """method="round": the root's counts are within one of n p(a); the records of every parent
    configuration get the child's values in counts within one of their expectation given that
    configuration's (already fixed) count; seeded; an unknown method is refused."""
    rng = np.random.default_rng(5)
    domain = Domain(["a", "b", "c"], [3, 4, 5])
    parents = {"b": ("a",), "c": ("a", "b")}
    cpts = {a: rng.dirichlet(np.ones(domain[a]), size=domain.project(parents.get(a, ())).size()).reshape(
        domain.project(parents.get(a, ())).shape + (domain[a],)) for a in domain.attrs}
    cpts["a"] = cpts["a"].reshape(3)
    net = BayesNet(domain, parents, cpts, total=1234)
    data = net.synthetic_data(rng=1, method="round")
    assert len(data) == 1234
    assert np.all(np.abs(data.marginal(("a",)) - 1234 * cpts["a"]) < 1)
    for child in ("b", "c"):
        pa = parents[child]
        given = data.marginal(pa)
        counts = data.marginal(pa + (child,))
        assert np.all(np.abs(counts - given[..., None] * cpts[child]) < 1)
    np.testing.assert_array_equal(data.records, net.synthetic_data(rng=1, method="round").records)
    assert net.sampling_methods == ("round", "sample")  # its default first
    np.testing.assert_array_equal(net.synthetic_data(rng=1).records, data.records)
    with pytest.raises(ValueError, match="method must be one of"):
        net.synthetic_data(5, method="bogus")


def test_every_estimate_of_the_package_is_listed_in_one_place():
    """ektelo_pgm.estimate names every Estimate the package defines (the graphical ones are
    re-exported from their engines), so a user finds them all in one module."""
    import importlib
    import pkgutil

    import ektelo_pgm
    from ektelo_pgm import estimate

    for info in pkgutil.walk_packages(ektelo_pgm.__path__, "ektelo_pgm."):
        try:
            importlib.import_module(info.name)
        except ImportError as missing:  # a module behind an optional extra
            if missing.name not in ("torch", "triton", "sksparse", "dask", "matplotlib"):
                raise

    def subclasses(cls):
        return {cls} | {s for sub in cls.__subclasses__() for s in subclasses(sub)}

    defined = {c for c in subclasses(Estimate) if c.__module__.startswith("ektelo_pgm.")}
    assert {c.__name__ for c in defined} == set(estimate.__all__)
    assert all(getattr(estimate, c.__name__) is c for c in defined)


def test_saved_estimates_come_back_exactly(tmp_path):
    """Every estimate a Synthesizer can hold survives to_state / from_state (and a GraphicalModel
    save / load) with the same marginals."""
    import json

    from ektelo_pgm import Budget
    from ektelo_pgm.estimate import MixtureEstimate
    from ektelo_pgm.mechanisms import MST, PrivBayes
    from ektelo_pgm.pgm.model import GraphicalModel
    from ektelo_pgm.sample_data import synthetic_bayes_net

    data = synthetic_bayes_net(2000, rng=0)
    rng = np.random.default_rng(0)
    mixture = MixtureEstimate(data.domain, [rng.dirichlet(np.ones(n), 3) for n in data.domain.shape], 2000.0)
    estimates = [MST().run(data, Budget.zcdp(1.0), rng=0).estimate,
                 PrivBayes().run(data, Budget.pure(1.0, neighbours="substitute"), rng=0).estimate, mixture]
    for estimate in estimates:
        meta, arrays = estimate.to_state()
        back = Estimate.from_state(json.loads(json.dumps(meta)), arrays)
        assert type(back) is type(estimate) and back.domain == estimate.domain
        for attrs in [data.domain.attrs[:2], data.domain.attrs[-1:]]:
            np.testing.assert_array_equal(back.project(attrs), estimate.project(attrs))
    model = estimates[0] if isinstance(estimates[0], GraphicalModel) else estimates[0].estimate
    model.save(tmp_path / "m")
    np.testing.assert_array_equal(GraphicalModel.load(tmp_path / "m.npz").project(data.domain.attrs[:2]),
                                  model.project(data.domain.attrs[:2]))
    with pytest.raises(ValueError, match="unknown saved estimate kind"):
        Estimate.from_state({"kind": "pickle", "domain": []}, {})
    with pytest.raises(ValueError, match="cannot be saved"):
        VectorEstimate(Domain(["a"], [2]), np.ones(2)).to_state()


def test_a_saved_kind_without_its_state_is_refused_at_definition():
    with pytest.raises(TypeError, match=r"names the saved kind 'half' but does not define \['_from_state'\]"):
        class Half(VectorEstimate):
            kind = "half"

            def _state(self):
                return {}, {"vector": self.vector}


def test_synthetic_data_has_the_base_signature_and_checks_in_the_base():
    """Every estimate draws records with ``synthetic_data(n=None, rng=None, method=None)`` (the
    graphical ones also take ``attrs``): ``n`` and ``method`` are checked by the base class
    (``record_count``, ``sampling_method``), with one message each."""
    import inspect

    from ektelo_pgm import estimate
    from ektelo_pgm.learning import UndirectedModel
    from ektelo_pgm.pgm import GraphicalModel
    from ektelo_pgm.pgm.appgm.model import APPGMEstimate

    classes = [getattr(estimate, name) for name in estimate.__all__ if name not in estimate.ENGINE_ESTIMATES]
    for cls in [*classes, UndirectedModel, GraphicalModel, APPGMEstimate]:
        parameters = list(inspect.signature(cls.synthetic_data).parameters.values())
        assert [(p.name, p.default) for p in parameters[1:4]] == [("n", None), ("rng", None), ("method", None)], cls
        assert [p.name for p in parameters[4:]] in ([], ["attrs"]), cls
    domain = Domain(["a", "b"], [2, 3])
    vector = VectorEstimate(domain, np.arange(1.0, 7.0))
    assert vector.sampling_method(None) == "sample"
    with pytest.raises(ValueError, match="method must be one of"):
        vector.synthetic_data(5, method="round")
    with pytest.raises(ValueError, match="positive integer"):
        vector.synthetic_data(0)


def test_synthetic_without_draws_from_the_estimate_given_the_value_absent():
    """No record holds the excluded value; the rest follow the estimate's joint given it absent
    (a's other values with their own b), and an estimate almost all on it still gives n records."""
    from ektelo_pgm.estimate import synthetic_without

    domain = Domain(["a", "b"], [3, 2])
    vector = np.array([[30.0, 10.0], [5.0, 15.0], [25.0, 15.0]])  # a = 2: 40% of the mass
    records = synthetic_without(VectorEstimate(domain, vector.ravel()), 40_000, np.random.default_rng(0),
                                {"a": 2}).records
    assert len(records) == 40_000 and not (records[:, 0] == 2).any()
    joint = np.bincount(records[:, 0] * 2 + records[:, 1], minlength=6).reshape(3, 2) / 40_000
    np.testing.assert_allclose(joint[:2], vector[:2] / vector[:2].sum(), atol=0.01)
    almost = VectorEstimate(domain, np.array([1e-9, 0, 0, 0, 1.0, 1.0]))
    records = synthetic_without(almost, 500, np.random.default_rng(1), {"a": 2}).records
    assert len(records) == 500 and not (records[:, 0] == 2).any()
