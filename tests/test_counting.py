"""The marginal counting kernel agrees with its numpy twin, serial or parallel, batch by batch."""
import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st

from ektelo_pgm.kernels.counting import count_marginals, count_marginals_reference

DTYPES = [np.uint8, np.uint16, np.int32, np.int64, np.uint64]


def _tables(plan):
    return [np.zeros(int(np.prod(shape)), dtype=np.int64) for _, shape in plan]


def _case(seed, d, n, m, dtype):
    """Random codes (d, n) of ``dtype`` and a plan of ``m`` 1- to 3-way marginals (attributes
    repeated across marginals, in any order)."""
    rng = np.random.default_rng(seed)
    top = min(np.iinfo(dtype).max + 1, 60)
    sizes = rng.integers(1, top, d)
    columns = np.stack([rng.integers(0, s, n) for s in sizes]).astype(dtype) if d else np.empty((0, n), dtype)
    plan = []
    for _ in range(m):
        axes = tuple(int(a) for a in rng.choice(d, size=rng.integers(1, min(3, d) + 1), replace=False))
        plan.append((axes, tuple(int(sizes[a]) for a in axes)))
    return columns, plan


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), d=st.integers(1, 6), n=st.sampled_from([0, 1, 7, 500, 5000]),
       m=st.integers(0, 8), dtype=st.sampled_from(DTYPES), split=st.floats(0, 1))
def test_kernel_matches_reference_serial_parallel_and_batches(seed, d, n, m, dtype, split):
    columns, plan = _case(seed, d, n, m, dtype)
    expected = _tables(plan)
    count_marginals_reference(columns, plan, expected)
    for parallel in (False, True):
        got = _tables(plan)
        count_marginals(columns, plan, got, parallel=parallel)
        assert all(np.array_equal(g, e) for g, e in zip(got, expected))
    cut = int(split * n)
    batched = _tables(plan)
    count_marginals(columns[:, :cut], plan, batched)
    count_marginals(columns[:, cut:], plan, batched)
    assert all(np.array_equal(b, e) for b, e in zip(batched, expected))
    assert all(t.sum() == n for t in expected)


def test_counts_are_added_to_the_tables():
    columns = np.array([[0, 1, 1], [2, 0, 2]], dtype=np.uint8)
    out = [np.array([10, 20], dtype=np.int64), np.zeros(6, dtype=np.int64)]
    count_marginals(columns, [((0,), (2,)), ((1, 0), (3, 2))], out)
    assert out[0].tolist() == [11, 22]
    assert out[1].reshape(3, 2).tolist() == [[0, 1], [0, 0], [1, 1]]


def test_a_plan_that_does_not_fit_is_refused():
    columns = np.zeros((2, 4), dtype=np.uint8)
    with pytest.raises(ValueError, match="do not fit"):
        count_marginals(columns, [((2,), (3,))], [np.zeros(3, dtype=np.int64)])
    with pytest.raises(ValueError, match="flat int64 of 6 cells"):
        count_marginals(columns, [((0, 1), (2, 3))], [np.zeros(5, dtype=np.int64)])
    with pytest.raises(TypeError, match="integer"):
        count_marginals(columns.astype(float), [((0,), (2,))], [np.zeros(2, dtype=np.int64)])
