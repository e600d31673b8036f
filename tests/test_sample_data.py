import itertools
import json
import shutil

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st
from scipy import stats

from ektelo_pgm.dataset import Dataset
from ektelo_pgm.estimate import BayesNet
from ektelo_pgm.cli import main
from ektelo_pgm.errors import InputError
from ektelo_pgm.sample_data import (ADULT_COLUMNS, HERE, available, census_network, load, synthetic_bayes_net,
                                    write_example)
from ektelo_pgm.domain import Domain

SIZES = {"age": 50, "sex": 2, "race": 5, "education": 16, "marital": 7, "relationship": 6,
         "occupation": 15, "workclass": 8, "hours": 20, "income": 2}


def brute_joint(net: BayesNet) -> np.ndarray:
    """The full joint distribution, one cell at a time."""
    joint = np.zeros(net.domain.shape)
    index = {a: i for i, a in enumerate(net.domain.attrs)}
    for cell in itertools.product(*(range(n) for n in net.domain.shape)):
        p = 1.0
        for a in net.domain.attrs:
            p *= net.cpts[a][tuple(cell[index[q]] for q in net.parents[a]) + (cell[index[a]],)]
        joint[cell] = p
    return joint


def brute_marginal(joint: np.ndarray, domain: Domain, attrs) -> np.ndarray:
    keep = [domain.attrs.index(a) for a in attrs]
    summed = joint.sum(axis=tuple(i for i in range(len(domain)) if i not in keep))
    return np.transpose(summed, np.argsort(np.argsort(keep)))


def mutual_information(p: np.ndarray) -> float:
    """Mutual information (nats) of a 2-D table of counts or probabilities."""
    p = p / p.sum()
    q = p.sum(axis=1, keepdims=True) * p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / q[nz])).sum())


def chi_square_pvalue(counts: np.ndarray, probs: np.ndarray) -> float:
    """Goodness of fit of counts to probabilities, lumping cells expected below 5."""
    counts, expected = counts.ravel(), probs.ravel() * counts.sum()
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    if len(obs) < 2:  # one cell holds every record, as it must
        return 1.0
    return float(stats.chisquare(obs, exp).pvalue)


@st.composite
def small_networks(draw):
    k = draw(st.integers(1, 5))
    sizes = draw(st.lists(st.integers(1, 3), min_size=k, max_size=k))
    domain = Domain([f"v{i}" for i in range(k)], sizes)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parents, cpts = {}, {}
    for i, a in enumerate(domain.attrs):
        earlier = list(domain.attrs[:i])
        pa = tuple(draw(st.permutations(earlier))[: draw(st.integers(0, min(2, i)))])
        shape = domain.project(pa).shape + (domain[a],)
        parents[a] = pa
        cpts[a] = rng.dirichlet(np.full(domain[a], 0.7), size=shape[:-1]).reshape(shape)
    return BayesNet(domain, parents, cpts)


@settings(max_examples=40, deadline=None)
@given(net=small_networks(), data=st.data())
def test_exact_marginal_matches_brute_force(net, data):
    joint = brute_joint(net)
    assert np.isclose(joint.sum(), 1.0)
    attrs = data.draw(st.permutations(net.domain.attrs))[: data.draw(st.integers(0, len(net.domain)))]
    np.testing.assert_allclose(net.project(attrs), brute_marginal(joint, net.domain, attrs), atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(net=small_networks(), seed=st.integers(0, 1000))
def test_sample_of_small_networks_fits_the_joint(net, seed):
    ds = net.synthetic_data(4000, seed)
    assert ds.domain == net.domain and len(ds) == 4000
    joint = brute_joint(net)
    assert np.all(ds.marginal(net.domain.attrs)[joint == 0] == 0)
    assert chi_square_pvalue(ds.marginal(net.domain.attrs), joint) > 1e-4


def test_census_domain_and_structure():
    net = census_network()
    assert net.domain == Domain.fromdict(SIZES)
    assert min(SIZES.values()) == 2 and max(SIZES.values()) == 50
    assert net.parents["income"] == ("education", "hours")
    assert all(1 <= len(net.parents[a]) <= 2 for a in SIZES if a not in ("age", "sex", "race"))
    for a in SIZES:
        shape = net.domain.project(net.parents[a]).shape + (SIZES[a],)
        assert net.cpts[a].shape == shape
        np.testing.assert_allclose(net.cpts[a].sum(axis=-1), 1.0)
    assert census_network() is net  # built once


def test_census_marginal_is_product_of_tables():
    net = census_network()
    race, age, edu = net.cpts["race"], net.cpts["age"], net.cpts["education"]  # edu: (age, race, education)
    want = race[:, None, None] * age[None, :, None] * np.transpose(edu, (1, 0, 2))
    np.testing.assert_allclose(net.project(["race", "age", "education"]), want, atol=1e-15)
    # Roots are independent; a marginal in another order is the transpose; the empty marginal is 1.
    np.testing.assert_allclose(net.project(["age", "sex"]), np.outer(age, net.cpts["sex"]), atol=1e-15)
    pair = net.project(["income", "workclass"])
    np.testing.assert_allclose(net.project(["workclass", "income"]), pair.T, atol=1e-15)
    assert net.project([]) == 1.0
    assert np.isclose(net.project(["income", "relationship", "workclass"]).sum(), 1.0)


def test_synthetic_is_seeded():
    a = synthetic_bayes_net(2000, rng=5)
    b = synthetic_bayes_net(2000, rng=np.random.default_rng(5))
    c = synthetic_bayes_net(2000, rng=6)
    assert isinstance(a, Dataset) and len(a) == 2000 and a.domain == Domain.fromdict(SIZES)
    np.testing.assert_array_equal(a.records, b.records)
    assert not np.array_equal(a.records, c.records)
    np.testing.assert_array_equal(synthetic_bayes_net(50).records, synthetic_bayes_net(50).records)


@pytest.fixture(scope="module")
def sample():
    return synthetic_bayes_net(30000, rng=0)


def test_sampled_families_fit_the_exact_conditionals(sample):
    net = census_network()
    for a in SIZES:
        family = list(net.parents[a]) + [a]
        assert chi_square_pvalue(sample.marginal(family), net.project(family)) > 1e-3, a
    # Conditionals directly: P(income | education, hours) where the parents are common.
    counts = sample.marginal(["education", "hours", "income"])
    given = counts.sum(axis=-1)
    common = given >= 300
    freq = counts[common] / given[common][:, None]
    sd = np.sqrt(net.cpts["income"][common] * (1 - net.cpts["income"][common]) / given[common][:, None])
    assert common.sum() >= 10
    assert np.all(np.abs(freq - net.cpts["income"][common]) < 5 * sd)


def test_sampled_pairs_fit_the_exact_marginals(sample):
    net = census_network()
    for pair in [("age", "income"), ("race", "occupation"), ("sex", "workclass"), ("marital", "hours")]:
        assert chi_square_pvalue(sample.marginal(pair), net.project(pair)) > 1e-3, pair


def test_dependencies_are_real(sample):
    net = census_network()
    n = len(sample)
    for child in SIZES:
        for parent in net.parents[child]:
            exact = mutual_information(net.project([parent, child]))
            empirical = mutual_information(sample.marginal([parent, child]))
            null_bias = (SIZES[parent] - 1) * (SIZES[child] - 1) / (2 * n)  # E[MI] under independence
            assert exact > 0.015, (parent, child)
            assert empirical > 5 * null_bias and abs(empirical - exact) < 0.25 * exact + 2 * null_bias
    # Roots are independent of each other.
    assert mutual_information(net.project(["age", "race"])) < 1e-12


def test_bayes_net_validation():
    d = Domain(["a", "b"], [2, 3])
    uniform = {"a": np.full(2, 0.5), "b": np.full((2, 3), 1 / 3)}
    with pytest.raises(ValueError, match=r"parents \['b'\] of 'a' do not come before it"):
        BayesNet(d, {"a": ("b",)}, {"a": np.full((3, 2), 0.5), "b": np.full(3, 1 / 3)})
    with pytest.raises(ValueError, match=r"table of 'b' has shape \(3,\), expected \(2, 3\)"):
        BayesNet(d, {"b": ("a",)}, {"a": uniform["a"], "b": np.full(3, 1 / 3)})
    with pytest.raises(ValueError, match="table of 'b' is not a conditional distribution"):
        BayesNet(d, {"b": ("a",)}, {"a": uniform["a"], "b": np.full((2, 3), 0.5)})
    with pytest.raises(KeyError, match="no conditional probability table for 'b'"):
        BayesNet(d, {}, {"a": uniform["a"]})
    with pytest.raises(KeyError, match="not in the domain"):
        BayesNet(d, {"b": ("z",)}, uniform)
    net = BayesNet(d, {"b": ("a",)}, uniform)
    with pytest.raises(ValueError, match="positive integer"):
        net.synthetic_data(0)
    with pytest.raises(MemoryError, match="MB"):
        net.project(["a", "b"], max_mb=1e-9)


def test_zero_probability_values_are_never_sampled():
    d = Domain(["a", "b"], [2, 4])
    cpt = np.array([[0.0, 0.5, 0.5, 0.0], [1.0, 0.0, 0.0, 0.0]])
    ds = BayesNet(d, {"b": ("a",)}, {"a": np.array([0.3, 0.7]), "b": cpt}).synthetic_data(5000, rng=1)
    counts = ds.marginal(["a", "b"])
    assert np.all(counts[cpt == 0] == 0) and np.all(counts[cpt > 0] > 0)


READMED = {"adult": 48842, "titanic": 1304, "nltcs": 21574, "salary": 135727}


def test_the_shipped_datasets_load_with_their_domains():
    assert available() == sorted(READMED)
    for name, rows in READMED.items():
        ds = load(name)
        assert len(ds) == rows
        assert ds.domain == Domain.fromdict(json.loads((HERE / f"{name}-domain.json").read_text()))
        assert ds.records.min() >= 0 and (ds.records.max(axis=0) < ds.domain.shape).all()


def test_a_data_dir_holds_plain_or_compressed_datasets(tmp_path):
    (tmp_path / "half-domain.json").write_text('{"a": 2}')  # no records: not a dataset
    assert available(tmp_path) == []
    (tmp_path / "pair-domain.json").write_text('{"a": 2, "b": 3}')
    (tmp_path / "pair.csv").write_text("b,a\n2,1\n0,0\n")
    shutil.copy(HERE / "titanic.csv.xz", tmp_path)
    shutil.copy(HERE / "titanic-domain.json", tmp_path)
    assert available(tmp_path) == ["pair", "titanic"]
    assert load("pair", tmp_path).records.tolist() == [[1, 2], [0, 0]]
    assert load("titanic", tmp_path).records.tolist() == load("titanic").records.tolist()


def test_load_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no dataset 'census' in .*available: \[.*'adult'"):
        load("census")
    with pytest.raises(FileNotFoundError, match="no dataset 'adult' in .*nowhere"):
        load("adult", tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        available(tmp_path / "nowhere")


def test_the_examples_are_written_as_distributed(tmp_path, capsys):
    """UCI Adult's raw files, byte for byte as UCI distributes them: 32,561 and 16,281 records of 15
    comma-separated fields after the test file's first line, '?' for missing."""
    for name, rows, first in (("adult", 32561, 0), ("adult-test", 16281, 1)):
        assert main(["example", name, "-o", str(tmp_path / f"{name}.csv")]) == 0
        lines = (tmp_path / f"{name}.csv").read_text().splitlines()[first:]
        records = [line.split(", ") for line in lines if line]
        assert len(records) == rows and {len(r) for r in records} == {len(ADULT_COLUMNS)}
        assert any("?" in r for r in records)
    assert "32,561 records" in capsys.readouterr().out
    assert (tmp_path / "adult-test.csv").read_text().startswith("|1x3 Cross validator\n25, Private, 226802,")
    assert main(["example", "adult", "-o", str(tmp_path / "adult.parquet")]) == 1
    assert "--output" in capsys.readouterr().err and not (tmp_path / "adult.parquet").exists()
    with pytest.raises(InputError, match="no example table 'census'"):
        write_example("census", tmp_path / "census.csv")
