"""DaskDataset: marginals over any partitioning equal the in-memory ones exactly, mechanisms and
plans give the same output on both with the same seed, and a raw partitioned table is encoded
(and privately fitted) as the whole table is."""
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

dd = pytest.importorskip("dask.dataframe", reason="the Dask path needs the 'dask' extra",
                         exc_type=ImportError)  # a dask that fails to load skips too
import dask  # noqa: E402

from ektelo_pgm import Budget, Dataset, Domain, TableEncoder  # noqa: E402
from ektelo_pgm.dask_dataset import DaskDataset  # noqa: E402
from ektelo_pgm.learning.learners import PrivateSGD  # noqa: E402
from ektelo_pgm.mechanisms import AIM, MST, PrivBayes  # noqa: E402
from ektelo_pgm.operators import select  # noqa: E402
from ektelo_pgm.operators.measure import Gaussian  # noqa: E402
from ektelo_pgm.operators.reconstruct import PGM  # noqa: E402
from ektelo_pgm.plans import Plan  # noqa: E402
from ektelo_pgm.sample_data import synthetic_bayes_net  # noqa: E402
from ektelo_pgm.workload import kway_marginals  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    with dask.config.set(scheduler="synchronous"):
        yield


def partitioned(frame: pd.DataFrame, cuts) -> "dd.DataFrame":
    """``frame`` split at the row positions ``cuts`` (empty partitions allowed)."""
    bounds = [0, *sorted(cuts), len(frame)]
    pieces = [frame.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    return dd.from_map(lambda piece: piece, pieces, meta=frame.iloc[:0], enforce_metadata=False)


def as_dask(data: Dataset, parts: int, seed: int = 0) -> DaskDataset:
    rng = np.random.default_rng(seed)
    return DaskDataset(partitioned(data.to_dataframe(), rng.integers(0, len(data) + 1, parts - 1)), data.domain)


@settings(max_examples=30, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), n=st.integers(1, 60), data=st.data())
def test_marginals_over_random_partitions_equal_the_in_memory_counts(shape, n, data):
    domain = Domain([f"a{i}" for i in range(len(shape))], shape)
    rng = np.random.default_rng(data.draw(st.integers(0, 10**6)))
    records = np.stack([rng.integers(0, s, n) for s in shape], axis=1).astype(np.uint8)
    whole = Dataset(records, domain)
    cuts = data.draw(st.lists(st.integers(0, n), max_size=6))
    parts = DaskDataset(partitioned(pd.DataFrame(records, columns=list(domain.attrs)), cuts), domain)
    subsets = data.draw(st.lists(st.permutations(domain.attrs).map(lambda p: p[: rng.integers(0, len(p) + 1)]),
                                 min_size=1, max_size=4))
    for attrs, got in zip(subsets, parts.marginals(subsets)):
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, whole.marginal(attrs))
    for attrs in subsets:  # again, now from the kept (and summed-down) counts
        np.testing.assert_array_equal(parts.marginal(attrs), whole.marginal(attrs))
    assert len(parts) == n
    np.testing.assert_array_equal(parts.datavector(), whole.datavector())


def test_one_pass_per_batch_and_subsets_summed_from_kept_marginals(monkeypatch):
    data = synthetic_bayes_net(500, rng=1)
    parts = as_dask(data, 4)
    passes = []
    original = DaskDataset._pass  # one pass over the partitions per call, counting the marginals ``keys``
    monkeypatch.setattr(DaskDataset, "_pass", lambda self, keys: passes.append(keys) or original(self, keys))
    parts.marginals([("age", "sex"), ("sex",), ("income", "hours", "education"), ("hours", "income")])
    assert passes == [[("age", "sex"), ("education", "hours", "income")]]
    parts.marginal(("income", "education"))
    assert len(parts) == 500 and len(passes) == 1
    parts.marginal(("race",))
    assert passes[-1] == [("race",)]


def test_bad_codes_name_the_partition_column_and_row_and_records_stay_partitioned():
    domain = Domain(["a", "b"], [2, 3])
    frame = pd.DataFrame({"a": [0, 1, 1, 0], "b": [0, 2, 3, 1]})
    parts = DaskDataset(partitioned(frame, [2]), domain)
    with pytest.raises(ValueError, match=r"partition 1: column 'b' row 0 holds 3, outside its domain 0\.\.2"):
        parts.marginal(("b",))
    parts.marginal(("a",))  # the bad column is not read
    with pytest.raises(TypeError, match="not held in memory"):
        parts.records
    with pytest.raises(ValueError, match="missing"):
        DaskDataset(partitioned(frame[["a"]], []), domain)
    with pytest.raises(ValueError, match="empty"):
        len(DaskDataset(partitioned(frame.iloc[:0], [0]), domain))
    with pytest.raises(MemoryError, match="MB"):
        DaskDataset(partitioned(frame, []), domain).to_memory(max_mb=1e-6)


def test_load_parquet_and_csv_project_and_recode(tmp_path):
    data = synthetic_bayes_net(300, rng=2)
    frame = data.to_dataframe()
    dd.from_pandas(frame, npartitions=3).to_parquet(tmp_path / "parquet")
    frame.to_csv(tmp_path / "codes.csv", index=False)
    (tmp_path / "domain.json").write_text(pd.Series(dict(zip(data.domain.attrs, data.domain.shape))).to_json())
    for path in (tmp_path / "parquet", tmp_path / "codes.csv"):
        loaded = DaskDataset.load(path, tmp_path / "domain.json")
        np.testing.assert_array_equal(loaded.to_memory().records, data.records)
    parts = DaskDataset.load(tmp_path / "parquet", tmp_path / "domain.json")
    sub = ("hours", "sex")
    np.testing.assert_array_equal(parts.project(sub).marginal(sub), data.project(sub).marginal(sub))
    codes = {a: np.arange(n) // 2 for a, n in zip(data.domain.attrs, data.domain.shape)}
    halved = Domain(data.domain.attrs, [(n + 1) // 2 for n in data.domain.shape])
    np.testing.assert_array_equal(parts.recode(codes, halved).marginal(("age", "income")),
                                  data.recode(codes, halved).marginal(("age", "income")))


def same_result(a, b, attrs):
    assert [m.attrs for m in a.measurements] == [m.attrs for m in b.measurements]
    for x, y in zip(a.measurements, b.measurements):
        np.testing.assert_array_equal(x.y, y.y)
    assert [c.amount for c in a.charges] == [c.amount for c in b.charges]
    np.testing.assert_array_equal(a.estimate.project(attrs), b.estimate.project(attrs))


@pytest.mark.parametrize("mechanism, budget", [
    (lambda: MST(iters=100), lambda: Budget.zcdp(0.2)),
    (lambda: AIM(rounds=12, iters=50, max_mb=1.0), lambda: Budget.zcdp(0.2)),
    (lambda: PrivBayes(k=1), lambda: Budget.pure(1.0, neighbours="substitute"))], ids=["MST", "AIM", "PrivBayes"])
def test_mechanisms_give_the_same_output_on_the_partitioned_data_with_the_same_seed(mechanism, budget):
    data = synthetic_bayes_net(2000, rng=3).project(["age", "sex", "education", "hours", "income"])
    parts = as_dask(data, 5, seed=1)
    same_result(mechanism().run(data, budget(), rng=4), mechanism().run(parts, budget(), rng=4),
                ("education", "income"))


def test_a_plan_measuring_all_two_way_marginals_with_pgm_is_the_same():
    data = synthetic_bayes_net(1500, rng=5).project(["sex", "race", "marital", "income"])
    plan = Plan(select.Workload(kway_marginals(data.domain, 2)), Gaussian(), PGM(iters=100))
    same_result(plan.run(data, Budget.zcdp(0.5), rng=6), plan.run(as_dask(data, 3), Budget.zcdp(0.5), rng=6),
                ("race", "income"))


def test_private_sgd_sums_clipped_gradients_over_partitions():
    data = synthetic_bayes_net(400, rng=7).project(["sex", "race", "income"])
    learner = PrivateSGD([("sex", "race"), ("race", "income")], iters=5)
    whole = learner.fit(data, Budget.zcdp(1.0), rng=8)
    parts = learner.fit(as_dask(data, 4), Budget.zcdp(1.0), rng=8)
    np.testing.assert_allclose(parts.theta, whole.theta, rtol=1e-9, atol=1e-12)


def raw_table(n=600, seed=9):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"job": rng.choice([" clerk", "nurse ", "pilot", "?", "rare"], n, p=[.4, .3, .2, .09, .01]),
                         "income": np.round(rng.lognormal(10, 1, n)),
                         "hours": rng.integers(1, 80, n).astype(float)})


def test_encoder_private_fit_and_transform_on_partitions_equal_the_whole_table():
    table = raw_table()
    parts = partitioned(table, [0, 150, 151, 470])

    def encoder():
        return TableEncoder(bins=6, binning="quantile", bounds={"income": (0, 200_000), "hours": (0, 99)},
                            categories={"job": ["clerk", "nurse", "pilot", "rare"]})

    whole = encoder().fit(table, budget=Budget.pure(2.0), rng=10, threshold=20)
    split = encoder().fit(parts, budget=Budget.pure(2.0), rng=10, threshold=20)
    assert split.to_dict() == whole.to_dict() and "rare" not in split.columns["job"].categories
    encoded = split.transform(parts)
    assert isinstance(encoded, DaskDataset)
    np.testing.assert_array_equal(encoded.to_memory().records, whole.transform(table).records)
    np.testing.assert_array_equal(encoded.marginal(("job", "income")), whole.transform(table).marginal(("job", "income")))


def test_encoder_errors_on_partitions_name_the_partition_and_public_fit_is_refused():
    table = raw_table(200).astype({"hours": object})
    table.loc[130, "hours"] = "many"
    parts = partitioned(table, [100])
    encoder = TableEncoder(bins=4, binning="quantile", bounds={"income": (0, 200_000), "hours": (0, 99)},
                           categories={"job": ["clerk", "nurse", "pilot"]})
    with pytest.raises(ValueError, match=r"partition 1: column 'hours': value 'many' in row 30 is not a number"):
        encoder.fit(parts, budget=Budget.pure(1.0), rng=0)
    with pytest.raises(ValueError, match="public=True"):
        TableEncoder().fit(parts, public=True)
    fitted = TableEncoder(bins=4, bounds={"income": (0, 200_000), "hours": (0, 99)},
                          categories={"job": ["clerk", "nurse", "pilot"]}).fit(parts)  # uniform bins: reads nothing
    with pytest.raises(ValueError, match=r"partition 1: column 'hours': value 'many' in row 30 is not a number"):
        len(fitted.transform(parts))


def test_the_big_data_page_example_runs_on_raw_adult_and_prints_what_it_says(monkeypatch, tmp_path, capsys):
    page = (Path(__file__).resolve().parents[1] / "docs" / "big_data.md").read_text()
    monkeypatch.chdir(tmp_path)  # the page writes the example table here
    namespace = {}
    exec(compile(re.search(r"```python\n(.*?)```", page, re.S).group(1), "big_data.md", "exec"), namespace)
    stated = re.search(r"It prints `(.*?)`", page).group(1)
    assert capsys.readouterr().out.strip() == stated
    assert isinstance(namespace["data"], DaskDataset) and namespace["budget"].remaining < 1e-12
    synthetic, raw = namespace["synthetic"], namespace["raw"].compute()
    for column in ("workclass", "education", "sex", "income"):
        assert set(synthetic[column].dropna()) <= set(raw[column].str.strip())
