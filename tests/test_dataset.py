import json
from unittest import mock

import numpy as np
import pandas as pd
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm import sample_data
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.domain import Domain


def brute_marginal(records, domain, attrs):
    out = np.zeros(domain.project(attrs).shape)
    for row in records:
        out[tuple(row[domain.attrs.index(a)] for a in attrs)] += 1
    return out


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    n=st.integers(1, 50),
    data=st.data(),
)
def test_marginal_matches_brute_force(shape, n, data):
    domain = Domain([f"a{i}" for i in range(len(shape))], shape)
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    records = np.stack([rng.integers(0, s, n) for s in shape], axis=1)
    attrs = data.draw(st.permutations(domain.attrs))[: data.draw(st.integers(0, len(shape)))]
    ds = Dataset(records, domain)
    np.testing.assert_array_equal(ds.marginal(attrs), brute_marginal(records, domain, attrs))
    assert ds.marginal(attrs).dtype == np.float64


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    n=st.integers(1, 50),
    batch=st.integers(1, 64),
    data=st.data(),
)
def test_marginals_at_once_match_one_at_a_time(shape, n, batch, data):
    """Many marginals counted together, in batches of at most ``batch`` cells (one marginal alone
    when it is larger), equal each marginal counted alone: values, shape and dtype."""
    domain = Domain([f"a{i}" for i in range(len(shape))], shape)
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    ds = Dataset(np.stack([rng.integers(0, s, n) for s in shape], axis=1), domain)
    subsets = st.permutations(domain.attrs).flatmap(lambda order: st.integers(0, len(order)).map(lambda k: order[:k]))
    cliques = data.draw(st.lists(subsets, min_size=0, max_size=8))
    with mock.patch("ektelo_pgm.dataset.COUNT_BATCH", batch):
        together = ds.marginals(cliques)
    assert len(together) == len(cliques)
    for clique, counts in zip(cliques, together):
        alone = ds.marginal(clique)
        assert counts.dtype == alone.dtype == np.float64 and counts.shape == alone.shape
        np.testing.assert_array_equal(counts, alone)


def test_datavector_and_project():
    domain = Domain(["a", "b"], [2, 3])
    ds = Dataset([[0, 2], [1, 0], [1, 0]], domain)
    np.testing.assert_array_equal(ds.datavector(), [0, 0, 1, 2, 0, 0])
    sub = ds.project(["b"])
    assert sub.domain == Domain(["b"], [3]) and len(sub) == 3
    np.testing.assert_array_equal(sub.marginal(["b"]), [2, 0, 1])


def test_load_compressed_adult():
    """An xz-compressed CSV (the shipped adult) reads as pandas reads it."""
    ds = Dataset.load(sample_data.HERE / "adult.csv.xz", sample_data.HERE / "adult-domain.json")
    sizes = json.loads((sample_data.HERE / "adult-domain.json").read_text())
    assert len(ds) == 48842 and ds.domain == Domain.fromdict(sizes)
    raw = pd.read_csv(sample_data.HERE / "adult.csv.xz")
    np.testing.assert_array_equal(ds.records, raw[list(ds.domain.attrs)].to_numpy())
    assert ds.marginal(["sex", "income>50K"]).sum() == 48842


def test_from_dataframe_and_round_trip(tmp_path):
    domain = Domain(["x", "y"], [3, 2])
    df = pd.DataFrame({"y": [1, 0, 1], "x": [2, 2, 0], "extra": ["u", "v", "w"]})
    ds = Dataset.from_dataframe(df, domain)
    np.testing.assert_array_equal(ds.records, [[2, 1], [2, 0], [0, 1]])
    ds.save(tmp_path / "t.csv")
    (tmp_path / "t.json").write_text(json.dumps({"x": 3, "y": 2}))
    again = Dataset.load(tmp_path / "t.csv", tmp_path / "t.json")
    np.testing.assert_array_equal(again.records, ds.records)
    pd.testing.assert_frame_equal(again.to_dataframe(), ds.to_dataframe())


@pytest.mark.parametrize(
    "records, message",
    [
        ([[0, 5]], "column 'y' row 0 holds 5, outside its domain 0..1"),
        ([[0, 1], [-1, 0]], "column 'x' row 1 holds -1"),
        ([[0.5, 1]], "column 'x' row 0 holds 0.5, not an integer code"),
        ([["a", 1]], "column 'x' row 0 holds 'a'"),
        (np.zeros((0, 2), dtype=int), "empty"),
        ([[0, 1, 2]], "3 columns but the domain has 2"),
    ],
)
def test_bad_records(records, message):
    with pytest.raises(ValueError, match=message):
        Dataset(records, Domain(["x", "y"], [3, 2]))


def test_bad_csv_names_column_and_row(tmp_path):
    (tmp_path / "d.json").write_text(json.dumps({"x": 3, "y": 2}))
    (tmp_path / "bad.csv").write_text("x,y\n0,1\n1,zz\n")
    with pytest.raises(ValueError, match="column 'y' row 1 holds 'zz'"):
        Dataset.load(tmp_path / "bad.csv", tmp_path / "d.json")
    (tmp_path / "range.csv").write_text("y,x\n0,1\n1,3\n")
    with pytest.raises(ValueError, match="column 'x' row 1 holds 3, outside its domain 0..2"):
        Dataset.load(tmp_path / "range.csv", tmp_path / "d.json")
    (tmp_path / "missing.csv").write_text("x\n0\n")
    with pytest.raises(ValueError, match="columns \\['y'\\]"):
        Dataset.load(tmp_path / "missing.csv", tmp_path / "d.json")
    with pytest.raises(ValueError, match="columns \\['y'\\]"):
        Dataset.from_dataframe(pd.DataFrame({"x": [0]}), Domain(["x", "y"], [3, 2]))


def test_marginal_refuses_huge_before_allocating():
    ds = sample_data.load("adult")
    with pytest.raises(MemoryError, match="MB"):
        ds.datavector()


# ---------------------------------------------------------------- bad files (issue 12 items 5 and 6)


def _write(path, text, bom=False):
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return path


def test_a_row_with_an_extra_or_missing_field_is_refused_naming_the_line(tmp_path):
    domain = _write(tmp_path / "d.json", '{"a": 3, "b": 2}')
    good = _write(tmp_path / "good.csv", "a,b\n0,1\n2,0\n\n")
    assert len(Dataset.load(good, domain)) == 2
    for body, line in [("a,b\n0,1\n2,0,1\n", 3), ("a,b\n0\n", 2)]:
        with pytest.raises(ValueError, match=f"line {line} has"):
            Dataset.load(_write(tmp_path / "bad.csv", body), domain)


def test_a_duplicate_key_in_the_domain_file_is_refused(tmp_path):
    csv_path = _write(tmp_path / "x.csv", "a,b\n0,1\n")
    with pytest.raises(ValueError, match="the key 'a' appears twice"):
        Dataset.load(csv_path, _write(tmp_path / "d.json", '{"a": 3, "b": 2, "a": 5}'))


def test_byte_order_marks_are_skipped(tmp_path):
    data = Dataset.load(_write(tmp_path / "x.csv", "a,b\n0,1\n2,0\n", bom=True),
                        _write(tmp_path / "d.json", '{"a": 3, "b": 2}', bom=True))
    assert data.domain.attrs == ("a", "b") and data.records.tolist() == [[0, 1], [2, 0]]


def test_the_empty_domain_is_refused_at_construction(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        Domain.fromdict({})
    with pytest.raises(ValueError, match="no attributes"):
        Dataset(np.zeros((3, 0), dtype=int), Domain([], []))
    with pytest.raises(ValueError, match="empty"):
        Dataset.load(_write(tmp_path / "x.csv", "a\n0\n"), _write(tmp_path / "d.json", "{}"))


def test_an_interrupted_save_leaves_the_old_file_whole(tmp_path, monkeypatch):
    domain = Domain(["a", "b"], [3, 2])
    path = tmp_path / "data.csv"
    Dataset(np.array([[0, 1], [2, 0]]), domain).save(path)
    before = path.read_bytes()

    def interrupted(f, records, **kwargs):
        f.write("a,b\n1,")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savetxt", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Dataset(np.array([[1, 1]] * 1000), domain).save(path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["data.csv"]
    monkeypatch.undo()
    Dataset(np.array([[1, 1]]), domain).save(path)
    assert len(Dataset.load(path, _write(tmp_path / "d.json", '{"a": 3, "b": 2}'))) == 1
