import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm import matrix as mx
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.domain import Domain
from ektelo_pgm.estimate import VectorEstimate
from ektelo_pgm.metrics import average_l1_error, max_error, total_variation, workload_error
from ektelo_pgm.workload import Workload, kway_marginals, prefix

DOMAIN = Domain(["a", "b"], [2, 2])


def dataset(counts):
    """Records realising the data vector ``counts`` over DOMAIN."""
    cells = np.repeat(np.arange(4), counts)
    return Dataset(np.stack(np.unravel_index(cells, DOMAIN.shape), axis=1), DOMAIN)


TRUTH = dataset([3, 1, 0, 4])  # counts on (a, b): [[3, 1], [0, 4]], N = 8
SAME_TOTAL = VectorEstimate(DOMAIN, [2.0, 2.0, 1.0, 3.0])
DOUBLE = VectorEstimate(DOMAIN, [4.0, 4.0, 2.0, 6.0])


def test_hand_computed_identity_marginal():
    ab = [("a", "b")]
    assert workload_error(ab, TRUTH, SAME_TOTAL) == 4 / 16
    assert total_variation(ab, TRUTH, SAME_TOTAL) == 0.25
    assert average_l1_error(ab, TRUTH, SAME_TOTAL) == 0.5
    assert max_error(ab, TRUTH, SAME_TOTAL) == 1.0
    # one-way marginals agree exactly: a = [4, 4], b = [3, 5] for both
    assert workload_error([("a",), ("b",)], TRUTH, SAME_TOTAL) == 0.0
    assert workload_error([("a",), ("a", "b")], TRUTH, SAME_TOTAL) == 0.125


def test_hand_computed_different_total():
    ab = [("a", "b")]
    # probabilities [3, 1, 0, 4]/8 vs [4, 4, 2, 6]/16: differences 1/8 each
    assert total_variation(ab, TRUTH, DOUBLE) == 0.25
    assert average_l1_error(ab, TRUTH, DOUBLE) == (1 + 3 + 2 + 2) / 8
    assert workload_error(ab, TRUTH, DOUBLE) == 8 / 16
    assert max_error(ab, TRUTH, DOUBLE) == 3.0


def test_hand_computed_prefix_and_weights():
    # 2-D prefix sums: truth [[3, 4], [3, 8]], estimate [[2, 4], [3, 8]]
    w = prefix(DOMAIN, ("a", "b"))
    assert workload_error(w, TRUTH, SAME_TOTAL) == 1 / 36
    assert max_error(w, TRUTH, SAME_TOTAL) == 1.0
    weighted = Workload([(("a", "b"), None, 3.0)])
    assert workload_error(weighted, TRUTH, SAME_TOTAL) == 0.25  # weights cancel
    assert max_error(weighted, TRUTH, SAME_TOTAL) == 3.0  # weighted answers
    # marginal metrics use each distinct clique once, whatever the queries on it
    twice = Workload([("a", "b"), (("a", "b"), mx.Prefix(4))])
    assert total_variation(twice, TRUTH, SAME_TOTAL) == 0.25
    assert average_l1_error(twice, TRUTH, SAME_TOTAL) == 0.5


def test_estimate_as_truth_and_dataset_as_estimate():
    assert workload_error([("a", "b")], SAME_TOTAL, TRUTH) == 4 / 16
    assert total_variation([("a", "b")], DOUBLE, TRUTH) == 0.25


def test_errors_are_named():
    zero = VectorEstimate(DOMAIN, np.zeros(4))
    with pytest.raises(ValueError, match=r"true answers on \['a', 'b'\] are all zero"):
        workload_error([("a", "b")], zero, TRUTH)
    with pytest.raises(ValueError, match="no positive total"):
        total_variation([("a",)], TRUTH, zero)
    with pytest.raises(ValueError, match="no records"):
        average_l1_error([("a",)], zero, TRUTH)
    with pytest.raises(KeyError, match="'c'"):
        max_error([("c",)], TRUTH, SAME_TOTAL)


@st.composite
def pairs(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=2, max_size=3))
    domain = Domain([f"x{i}" for i in range(len(shape))], shape)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n = int(draw(st.integers(1, 50)))
    records = np.stack([rng.integers(0, s, size=n) for s in shape], axis=1)
    truth = Dataset(records, domain)
    x_hat = rng.dirichlet(np.ones(domain.size())) * n
    return truth, VectorEstimate(domain, x_hat)


@settings(max_examples=40, deadline=None)
@given(pairs())
def test_against_dense_references(case):
    truth, estimate = case
    domain = truth.domain
    x, x_hat = truth.datavector(), estimate.vector
    w = kway_marginals(domain, 2) + prefix(domain, domain.attrs[::-1])
    terms = []
    for e in w:
        W = Workload([e]).full_matrix(domain).dense()
        terms.append(np.abs(W @ x - W @ x_hat).sum() / (2 * np.abs(W @ x).sum()))
    assert np.isclose(workload_error(w, truth, estimate), np.mean(terms))
    full = w.full_matrix(domain).dense()
    assert np.isclose(max_error(w, truth, estimate), np.abs(full @ (x - x_hat)).max())
    # identity workloads with equal totals: workload error is the total variation distance
    marg = kway_marginals(domain, 2)
    assert np.isclose(workload_error(marg, truth, estimate), total_variation(marg, truth, estimate))
    assert np.isclose(average_l1_error(marg, truth, estimate), 2 * total_variation(marg, truth, estimate))
    for metric in (workload_error, total_variation, average_l1_error, max_error):
        assert metric(w, truth, VectorEstimate(domain, x)) == 0.0
