import itertools
import math

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm import matrix as mx, sample_data
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.domain import Domain
from ektelo_pgm.estimate import VectorEstimate
from ektelo_pgm.workload import (Query, Workload, all_range, as_workload, counts,
                                 kway_marginals, marginals_up_to, prefix,
                                 range_marginals)

def random_dataset(shape, n, seed):
    domain = Domain([f"x{i}" for i in range(len(shape))], shape)
    rng = np.random.default_rng(seed)
    records = np.stack([rng.integers(0, s, size=n) for s in shape], axis=1)
    return Dataset(records, domain)


def brute_count(records, domain, conditions):
    """Number of records satisfying ``{attr: predicate on the column}``."""
    mask = np.ones(len(records), dtype=bool)
    for a, pred in conditions.items():
        mask &= pred(records[:, domain.attrs.index(a)])
    return int(mask.sum())


@st.composite
def workloads(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    data = random_dataset(shape, draw(st.integers(1, 30)), draw(st.integers(0, 2**16)))
    domain = data.domain
    entries = []
    for _ in range(draw(st.integers(1, 4))):
        attrs = draw(st.permutations(domain.attrs))[:draw(st.integers(1, len(domain)))]
        kind = draw(st.sampled_from(["marginal", "prefix", "range", "dense"]))
        weight = draw(st.sampled_from([1.0, 0.5, 3.0]))
        if kind == "marginal":
            query = None
        elif kind == "dense":
            rows = draw(st.integers(1, 5))
            query = mx.Dense(np.random.default_rng(len(entries)).normal(size=(rows, domain.size(attrs))))
        else:
            query = (prefix if kind == "prefix" else all_range)(domain, attrs)[0].matrix
        entries.append((tuple(attrs), query, weight))
    return data, Workload(entries)


@settings(max_examples=40, deadline=None)
@given(workloads())
def test_full_matrix_times_datavector_equals_answers(case):
    data, w = case
    x = data.datavector()
    answers = w.answer(data)
    assert np.allclose(w.full_matrix(data.domain) @ x, np.concatenate(answers))
    dense = w.full_matrix(data.domain).dense()
    assert dense.shape == (w.num_queries(data.domain), data.domain.size())
    assert np.allclose(dense @ x, np.concatenate(answers))
    estimate = VectorEstimate(data.domain, x)
    for a, b in zip(w.answer(estimate), answers):
        assert np.allclose(a, b)
    for e, a in zip(w, answers):  # brute force per entry, weights included
        local = mx.Identity(data.domain.size(e.attrs)) if e.matrix is None else e.matrix
        assert np.allclose(a, e.weight * (local.dense() @ data.marginal(e.attrs).ravel()))


def test_prefix_and_all_range_against_record_counts():
    data = random_dataset((3, 4), 60, seed=1)
    d, r = data.domain, data.records
    got = prefix(d, ("x1", "x0")).answer(data)[0]
    want = [brute_count(r, d, {"x1": lambda c, z=z1: c <= z, "x0": lambda c, z=z0: c <= z})
            for z1 in range(4) for z0 in range(3)]
    assert np.array_equal(got, want)
    got = all_range(d, ("x0", "x1")).answer(data)[0]
    intervals = [[(i, j) for i in range(n) for j in range(i, n)] for n in (3, 4)]
    want = [brute_count(r, d, {"x0": lambda c, b=b0: (b[0] <= c) & (c <= b[1]),
                               "x1": lambda c, b=b1: (b[0] <= c) & (c <= b[1])})
            for b0, b1 in itertools.product(*intervals)]
    assert np.array_equal(got, want)
    assert all_range(d, ["x1"]).num_queries(d) == 10


def test_kway_and_up_to():
    d = Domain(list("abcde"), [2, 3, 2, 2, 4])
    w = kway_marginals(d, 2)
    assert w.cliques == list(itertools.combinations("abcde", 2))
    assert all(e.matrix is None and e.weight == 1.0 for e in w)
    assert kway_marginals(d, 2, attrs=["e", "a", "c"]).cliques == [("a", "c"), ("a", "e"), ("c", "e")]
    up = marginals_up_to(d, 3)
    assert len(up) == 5 + 10 + 10 and up.cliques[:5] == [(a,) for a in "abcde"]
    assert up.num_queries(d) == sum(d.size(c) for c in up.cliques)
    for bad in (0, 6, 2.0, True):
        with pytest.raises(ValueError, match="k must be an integer between 1 and 5"):
            kway_marginals(d, bad)
    with pytest.raises(KeyError, match="'z'"):
        kway_marginals(d, 1, attrs=["a", "z"])


def test_range_marginals_structure_and_seed():
    d = Domain(["sex", "edu", "income", "age", "race"], [2, 5, 6, 7, 3])
    numeric = ["income", "age"]
    w = range_marginals(d, numeric, triples=10, rng=3)
    assert len(w) == 10 == math.comb(5, 3) and len(set(w.cliques)) == 10
    for e in w:
        assert e.attrs == d.canonical(e.attrs) and len(e.attrs) == 3
        if {"income", "age"}.isdisjoint(e.attrs):
            assert e.matrix is None
        else:
            kinds = [type(f).__name__ for f in e.matrix.factors]
            assert kinds == ["Prefix" if a in numeric else "Identity" for a in e.attrs]
    again = range_marginals(d, numeric, triples=4, rng=np.random.default_rng(7))
    assert again.cliques == range_marginals(d, numeric, triples=4, rng=7).cliques
    with pytest.raises(ValueError, match="between 1 and 10"):
        range_marginals(d, numeric, triples=11, rng=0)
    with pytest.raises(ValueError, match="at least 3 attributes; the domain has 2"):
        range_marginals(d.project(["sex", "age"]), ["age"], rng=0)
    with pytest.raises(KeyError, match="'salary'"):
        range_marginals(d, ["salary"], rng=0)


def test_range_marginals_on_adult_against_record_counts():
    data = sample_data.load("adult")
    d, r = data.domain, data.records
    numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    w = range_marginals(d, numeric, triples=15, rng=0)
    answers = w.answer(data)
    rng = np.random.default_rng(1)
    for e, a in zip(w, answers):
        sizes = d.project(e.attrs).shape
        assert a.size == math.prod(sizes)
        for row in rng.choice(a.size, size=5, replace=False):
            cell = np.unravel_index(row, sizes)
            conditions = {att: ((lambda c, v=v: c <= v) if att in numeric else (lambda c, v=v: c == v))
                          for att, v in zip(e.attrs, cell)}
            assert a[row] == brute_count(r, d, conditions)


def test_entry_forms():
    d = Domain(["a", "b", "c"], [2, 3, 4])
    w = Workload(["a", ("a", "b"), (("b", "c"), mx.Prefix(12)), ("c", mx.Total(4), 2.5),
                  Query(("c", "a"), None, 4.0), Query(("b",), mx.Ones(2, 3), 0.5)])
    assert [e.attrs for e in w] == [("a",), ("a", "b"), ("b", "c"), ("c",), ("c", "a"), ("b",)]
    assert [e.weight for e in w] == [1.0, 1.0, 1.0, 2.5, 4.0, 0.5]
    w.check(d)
    assert w.num_queries(d) == 2 + 6 + 12 + 1 + 8 + 2
    assert as_workload(w) is w and len(as_workload([("a",)])) == 1
    assert len(w + kway_marginals(d, 1)) == 9
    assert "Prefix(12)" in repr(w) and "weight=2.5" in repr(w)


def test_bad_entries():
    d = Domain(["a", "b"], [2, 3])
    with pytest.raises(ValueError, match="at least one entry"):
        Workload([])
    with pytest.raises(ValueError, match="weight must be positive"):
        Workload([("a", None, 0.0)])
    with pytest.raises(ValueError, match="weight must be positive"):
        Workload([("a", None, float("nan"))])
    with pytest.raises(ValueError, match=r"Query on \['a', 'b'\]: the matrix has 5 columns but the marginal has 6"):
        Workload([(("a", "b"), mx.Identity(5))]).check(d)
    with pytest.raises(KeyError, match="'z'"):
        Workload([("z",)]).answer(random_dataset((2, 3), 5, 0))
    with pytest.raises(TypeError, match="Dataset or an Estimate"):
        counts(np.zeros(3), ("a",))
    with pytest.raises(ValueError, match="is not attrs"):
        Workload([(("a",), None, 1.0, 2.0)])


def test_shared_marginals_computed_once():
    data = random_dataset((3, 3), 20, seed=2)
    calls = []

    class Counting(VectorEstimate):
        def project(self, attrs):
            calls.append(tuple(attrs))
            return super().project(attrs)

    w = Workload([("x0",), (("x0",), mx.Prefix(3)), (("x0",), mx.AllRange(3), 2.0)])
    w.answer(Counting(data.domain, data.datavector()))
    assert calls == [("x0",)]
