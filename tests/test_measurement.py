import numpy as np
import pytest

from ektelo_pgm import Domain, Measurement
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.matrix import Identity, Prefix, Kronecker


DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])


def test_identity_query_and_full_query_against_dense():
    rng = np.random.default_rng(0)
    records = np.stack([rng.integers(0, n, 200) for n in DOMAIN.shape], axis=1)
    data = Dataset(records, DOMAIN)
    m = Measurement(("c", "a"), data.marginal(["c", "a"]).ravel(), 2.0)
    assert isinstance(m.query_for(DOMAIN), Identity) and m.query_for(DOMAIN).shape == (8, 8)
    full = m.full_query(DOMAIN)
    assert full.shape == (8, 24)
    np.testing.assert_allclose(full @ data.datavector(), m.y)
    np.testing.assert_allclose(full.dense() @ data.datavector(), m.y)
    np.testing.assert_array_equal(m.weights, np.full(8, 0.5))


def test_custom_query_and_per_answer_std():
    query = Kronecker([Prefix(3), Identity(4)])
    m = Measurement(("b", "c"), np.arange(12.0), np.linspace(1, 2, 12), query)
    m.check(DOMAIN)
    assert m.full_query(DOMAIN).shape == (12, 24)
    np.testing.assert_allclose(m.weights, 1 / np.linspace(1, 2, 12))
    dense = Measurement("b", [1.0, 2.0], 1.0, np.ones((2, 3)))
    assert dense.query_for(DOMAIN).shape == (2, 3) and dense.attrs == ("b",)


@pytest.mark.parametrize(
    "args, message",
    [
        ((("a",), [1.0, np.nan], 1.0), "NaN or infinity"),
        ((("a",), [1.0, 2.0], [1.0, 2.0, 3.0]), "one per answer"),
        ((("a",), [1.0, 2.0], 0.0), "positive and finite"),
        ((("a",), [1.0, 2.0], -1.0), "positive and finite"),
        ((("a",), [1.0, 2.0], 1.0, np.ones((3, 2))), "3 rows but there are 2 answers"),
    ],
)
def test_bad_measurements(args, message):
    with pytest.raises(ValueError, match=message):
        Measurement(*args)


def test_check_against_domain():
    with pytest.raises(KeyError, match="'z'"):
        Measurement(("z",), [1.0], 1.0).check(DOMAIN)
    with pytest.raises(ValueError, match="2 answers but the marginal has 3 cells"):
        Measurement(("b",), [1.0, 2.0], 1.0).check(DOMAIN)
    with pytest.raises(ValueError, match="query has 4 columns but the marginal has 3 cells"):
        Measurement(("b",), [1.0], 1.0, np.ones((1, 4))).check(DOMAIN)
