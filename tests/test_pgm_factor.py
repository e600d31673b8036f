"""Factor and CliqueVector against explicit numpy arrays."""
import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from ektelo_pgm.domain import Domain
from ektelo_pgm.pgm.clique_vector import CliqueVector
from ektelo_pgm.pgm.factor import Factor

DOM = Domain(["a", "b", "c", "d"], [2, 3, 4, 5])


def _factor(rng, attrs):
    return Factor(DOM.project(attrs), rng.normal(size=[DOM[a] for a in attrs]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), perm=st.permutations(["a", "b", "c", "d"]), k=st.integers(1, 4),
       j=st.integers(1, 4))
def test_factor_operations_match_einsum(seed, perm, k, j):
    rng = np.random.default_rng(seed)
    left, right = tuple(perm[:k]), tuple(perm[-j:])
    f, g = _factor(rng, left), _factor(rng, right)
    letters = {a: chr(ord("w") + i) for i, a in enumerate(DOM.attrs)}
    union = left + tuple(a for a in right if a not in left)
    sub = lambda attrs: "".join(letters[a] for a in attrs)
    prod = f * g
    assert prod.attrs == union
    np.testing.assert_allclose(prod.values, np.einsum(f"{sub(left)},{sub(right)}->{sub(union)}", f.values, g.values))
    target = tuple(rng.permutation(list(union))[: max(1, len(union) - 1)])
    np.testing.assert_allclose(prod.project(target).values,
                               np.einsum(f"{sub(left)},{sub(right)}->{sub(target)}", f.values, g.values))
    lse = (f + g).logsumexp(target).values
    brute = np.log(np.einsum(f"{sub(left)},{sub(right)}->{sub(target)}", np.exp(f.values), np.exp(g.values)))
    np.testing.assert_allclose(lse, brute, rtol=1e-10)
    np.testing.assert_allclose((f - g).values, (f + (-g)).values)
    big = f.expand(DOM)
    assert big.attrs == DOM.attrs and np.allclose(big.project(left).values, f.values * DOM.size() / DOM.size(left))


def test_division_normalise_and_errors():
    f = Factor(DOM.project(["a", "b"]), [[1.0, 2.0, 0.0], [3.0, 0.0, 1.0]])
    g = f.project(["a"])
    cond = f / g
    np.testing.assert_allclose(cond.project(["a"]).values, [1.0, 1.0])
    zero = f / Factor.zeros(DOM.project(["b"]))
    assert np.all(zero.values == 0)
    np.testing.assert_allclose(f.normalize(10.0).total(), 10.0)
    logf = Factor(f.domain, np.log(f.values + 1.0))
    assert np.isclose(np.exp(logf.normalize(5.0, log=True).values).sum(), 5.0)
    with pytest.raises(ValueError, match="needs 6 cells"):
        Factor(DOM.project(["a", "b"]), np.zeros(5))
    with pytest.raises(ValueError, match="not in"):
        f.expand(DOM.project(["a", "c"]))
    with pytest.raises(ValueError, match="zero mass"):
        Factor.zeros(DOM.project(["a"])).normalize()
    assert np.isneginf(Factor(DOM.project(["a"]), [0.0, 1.0]).log().values[0])


def test_clique_vector_algebra():
    rng = np.random.default_rng(0)
    cliques = [("a", "b"), ("c",), ("b", "d")]
    x = CliqueVector({cl: _factor(rng, cl) for cl in cliques})
    y = CliqueVector({cl: _factor(rng, cl) for cl in cliques})
    flat = lambda v: np.concatenate([v[cl].datavector() for cl in cliques])
    np.testing.assert_allclose(flat(x + y), flat(x) + flat(y))
    np.testing.assert_allclose(flat(x - 2.0 * y), flat(x) - 2 * flat(y))
    assert np.isclose(x.dot(y), flat(x) @ flat(y))
    assert x.size() == 6 + 4 + 15
    u = CliqueVector.uniform(DOM, cliques, total=30.0)
    assert all(np.isclose(f.total(), 30.0) for f in u.values())
    grown = x.expand(DOM, [("a", "b", "d"), ("c", "d")])
    joint = sum((f.expand(DOM) for f in x.values()), Factor.zeros(DOM))
    back = sum((f.expand(DOM) for f in grown.values()), Factor.zeros(DOM))
    np.testing.assert_allclose(joint.values, back.values)
    with pytest.raises(ValueError, match="inside none"):
        x.expand(DOM, [("a", "b")])
    with pytest.raises(ValueError, match="different cliques"):
        x + CliqueVector.zeros(DOM, [("a",)])
