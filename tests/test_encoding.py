import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from ektelo_pgm.dataset import Dataset
from ektelo_pgm.domain import Domain
from ektelo_pgm.encoding import CategoricalColumn, NumericColumn, TableEncoder, read_table

# The column names listed in adult.names (the file itself has no header line).
ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
                 "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
                 "hours-per-week", "native-country", "income"]
NUMERIC = ["age", "fnlwgt", "capital-gain", "capital-loss", "hours-per-week"]


@pytest.fixture(scope="module")
def adult_raw(data_dir):
    return read_table(data_dir / "raw" / "adult" / "adult.data", names=ADULT_COLUMNS)


@pytest.fixture(scope="module")
def adult(adult_raw):
    encoder = TableEncoder(bins=32)
    return encoder, encoder.fit_transform(adult_raw)


def stripped(series):
    """The raw column as the encoder sees it: stripped strings, '?' as missing."""
    values = series.astype(object).map(lambda v: v.strip() if isinstance(v, str) else v)
    return values.mask(values == "?")


def test_adult_shape_kinds_and_sizes(adult, adult_raw, data_dir):
    encoder, ds = adult
    assert len(ds) == 32561 == len(adult_raw)
    assert ds.domain.attrs == tuple(ADULT_COLUMNS)
    assert [a for a, c in encoder.columns.items() if c.kind == "numeric"] == NUMERIC
    # Same sizes as the preprocessed adult of the shared data (32 bins; '?' its own category).
    reference = json.loads((data_dir / "adult-domain.json").read_text())
    reference["income"] = reference.pop("income>50K")
    assert ds.domain.config == reference
    assert encoder.columns["workclass"].missing and encoder.columns["occupation"].missing
    assert not encoder.columns["age"].missing and not encoder.columns["sex"].missing
    assert encoder.columns["sex"].categories == ("Female", "Male")
    assert encoder.columns["education-num"].categories == tuple(range(1, 17))


def test_adult_categorical_round_trip_exact(adult, adult_raw):
    encoder, ds = adult
    decoded = encoder.inverse_transform(ds)
    assert list(decoded.columns) == ADULT_COLUMNS
    for name, col in encoder.columns.items():
        if col.kind != "categorical":
            continue
        want = stripped(adult_raw[name])
        got = decoded[name].astype(object)
        assert (want.isna() == got.isna()).all(), name
        assert (want[want.notna()] == got[want.notna()]).all(), name


def test_adult_missing_values_get_the_last_code(adult, adult_raw, data_dir):
    encoder, ds = adult
    text = (data_dir / "raw" / "adult" / "adult.data").read_text()
    rows = [line.split(", ") for line in text.splitlines() if line]
    for name in ["workclass", "occupation", "native-country"]:
        j = ADULT_COLUMNS.index(name)
        raw_missing = np.array([row[j] == "?" for row in rows])
        assert raw_missing.sum() > 500
        col = encoder.columns[name]
        np.testing.assert_array_equal(ds.records[:, j] == col.size - 1, raw_missing)
        assert col.labels()[-1] == "<missing>"
    total = sum(int((ds.records[:, ADULT_COLUMNS.index(n)] == encoder.columns[n].size - 1).sum())
                for n in ["workclass", "occupation", "native-country"])
    assert total == text.count("?")


def test_adult_numeric_values_fall_inside_their_bin(adult, adult_raw):
    encoder, ds = adult
    for name in NUMERIC:
        col = encoder.columns[name]
        raw = adult_raw[name].to_numpy(dtype=float)
        codes = ds.records[:, ADULT_COLUMNS.index(name)]
        edges = np.asarray(col.edges, dtype=float)
        assert col.integer and col.bins == 32
        assert edges[0] == raw.min() and edges[-1] == raw.max() + 1
        assert np.all(edges[codes] <= raw) and np.all(raw < edges[codes + 1])
        for how in ["midpoint", "uniform"]:
            decoded = encoder.inverse_transform(ds, within_bin=how, rng=7)[name].to_numpy(dtype=float)
            assert np.all(edges[codes] <= decoded) and np.all(decoded < edges[codes + 1]), (name, how)
            assert np.all(decoded == np.round(decoded))


def test_adult_decode_then_encode_is_identity(adult):
    encoder, ds = adult
    for how in ["midpoint", "uniform"]:
        again = encoder.transform(encoder.inverse_transform(ds, within_bin=how, rng=1))
        np.testing.assert_array_equal(again.records, ds.records)


def test_uniform_decoding_is_seeded_and_spreads_inside_bins(adult):
    encoder, ds = adult
    sub = ds.project(["age", "fnlwgt"])
    a = encoder.inverse_transform(sub, within_bin="uniform", rng=3)
    b = encoder.inverse_transform(sub, within_bin="uniform", rng=np.random.default_rng(3))
    c = encoder.inverse_transform(sub, within_bin="uniform", rng=4)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    mid = encoder.inverse_transform(sub)
    assert mid["fnlwgt"].nunique() <= 32 < a["fnlwgt"].nunique()


def test_save_load_json_round_trip(adult, adult_raw, tmp_path):
    encoder, ds = adult
    path = tmp_path / "adult-encoder.json"
    encoder.save(path)
    loaded = TableEncoder.load(path)
    assert loaded.domain == encoder.domain
    assert loaded.columns == encoder.columns
    head = adult_raw.head(500)
    np.testing.assert_array_equal(loaded.transform(head).records, ds.records[:500])
    pd.testing.assert_frame_equal(loaded.inverse_transform(ds), encoder.inverse_transform(ds))


def test_quantile_binning_balances_counts(adult_raw):
    encoder = TableEncoder(bins=16, binning="quantile", numeric=["capital-gain"])
    ds = encoder.fit_transform(adult_raw[["fnlwgt", "capital-gain"]])
    counts = ds.marginal(["fnlwgt"])
    assert encoder.columns["fnlwgt"].bins == 16
    assert counts.min() > 0.8 * len(ds) / 16 and counts.max() < 1.2 * len(ds) / 16
    # capital-gain is 0 for over 90% of people: the equal quantile edges at 0 merge.
    gain = encoder.columns["capital-gain"]
    assert gain.bins < 16 and gain.edges[0] == 0
    assert ds.marginal(["capital-gain"])[0] >= 0.9 * len(ds)


def test_inference_threshold_and_overrides(adult_raw):
    table = adult_raw[["age", "education-num", "hours-per-week"]]
    inferred = TableEncoder(bins=80).fit(table)
    # age has 73 distinct values <= 80 bins: kept exactly as categories.
    assert inferred.columns["age"].kind == "categorical" and inferred.columns["age"].size == 73
    assert inferred.columns["hours-per-week"].kind == "numeric"
    forced = TableEncoder(bins=4, categorical=["age"], numeric=["education-num"]).fit(table)
    assert forced.columns["age"].kind == "categorical" and forced.columns["age"].size == 73
    assert forced.columns["education-num"].kind == "numeric" and forced.columns["education-num"].size == 4


def test_fit_on_csv_path_with_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("colour,weight\n red,1.5\nblue, 2.25\n?,NaN\nred,3.75\n")
    encoder = TableEncoder(bins=2, numeric=["weight"])
    ds = encoder.fit_transform(path)
    assert ds.domain == Domain(["colour", "weight"], [3, 3])
    np.testing.assert_array_equal(ds.records, [[1, 0], [0, 0], [2, 2], [1, 1]])
    assert encoder.columns["weight"] == NumericColumn("weight", (1.5, 2.625, 3.75), False, True)
    assert encoder.columns["weight"].labels() == ["[1.5, 2.625)", "[2.625, 3.75]", "<missing>"]
    out = encoder.inverse_transform(ds)
    assert out["colour"].tolist()[:2] == ["red", "blue"] and pd.isna(out["colour"][2])
    np.testing.assert_allclose(out["weight"].to_numpy(), [2.0625, 2.0625, np.nan, 3.1875])


def test_mixed_numbers_and_strings_are_categories():
    table = pd.DataFrame({"code": pd.Series([3, "x", 1, " x ", None], dtype=object)})
    encoder = TableEncoder().fit(table)
    assert encoder.columns["code"] == CategoricalColumn("code", (1, 3, "x"), True)
    ds = encoder.transform(table)
    np.testing.assert_array_equal(ds.records[:, 0], [1, 2, 0, 2, 3])
    assert encoder.inverse_transform(ds)["code"].tolist()[:4] == [3, "x", 1, "x"]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200), bins=st.integers(1, 40),
       binning=st.sampled_from(["uniform", "quantile"]), integer=st.booleans(),
       scale=st.sampled_from([1e-3, 1.0, 1e6]), missing=st.booleans())
def test_numeric_binning_properties(seed, n, bins, binning, integer, scale, missing):
    rng = np.random.default_rng(seed)
    values = rng.standard_exponential(n) * scale - scale / 2
    if integer:
        values = np.round(values)
    if missing:
        values[rng.random(n) < 0.2] = np.nan
    if np.isnan(values).all():
        values[0] = 1.0
    table = pd.DataFrame({"x": values})
    encoder = TableEncoder(bins=bins, binning=binning, numeric=["x"])
    ds = encoder.fit_transform(table)
    col = encoder.columns["x"]
    assert 1 <= col.bins <= bins and col.size == col.bins + int(np.isnan(values).any())
    edges = np.asarray(col.edges, dtype=float)
    assert np.all(np.diff(edges) > 0) or (col.bins == 1 and edges[0] == edges[1])
    codes = ds.records[:, 0]
    present = ~np.isnan(values)
    assert np.all(codes[~present] == col.bins)
    c, v = codes[present], values[present]
    assert np.all(edges[c] <= v) and np.all((v < edges[c + 1]) | ((v == edges[-1]) & (c == col.bins - 1)))
    for how in ["midpoint", "uniform"]:
        again = encoder.transform(encoder.inverse_transform(ds, within_bin=how, rng=seed))
        np.testing.assert_array_equal(again.records, ds.records)


def test_unseen_category_names_column_value_and_row(adult, data_dir):
    encoder, _ = adult
    test = read_table(data_dir / "raw" / "adult" / "adult.test", names=ADULT_COLUMNS, skiprows=1)
    with pytest.raises(ValueError, match=r"column 'fnlwgt': value 1490400 in row 7974 is outside "
                                         r"the fitted range \[12285, 1484706\)"):
        encoder.transform(test)
    clipping = TableEncoder.from_dict({**encoder.to_dict(), "clip": True})
    with pytest.raises(ValueError, match=r"column 'income': value '<=50K\.' in row 0 was not seen"):
        clipping.transform(test)
    test["income"] = test["income"].str.rstrip(".")
    ds = clipping.transform(test)
    assert len(ds) == 16281 and ds.domain == encoder.domain
    assert ds.records[7974, ADULT_COLUMNS.index("fnlwgt")] == 31
    bad = test.copy()
    bad.loc[5, "race"] = "Martian"
    with pytest.raises(ValueError, match=r"column 'race': value 'Martian' in row 5"):
        clipping.transform(bad)


def test_transform_errors():
    table = pd.DataFrame({"a": ["x", "y", "x"], "n": [0.0, 10.0, 20.5]})
    encoder = TableEncoder(bins=2, numeric=["n"]).fit(table)
    with pytest.raises(ValueError, match=r"column 'n': value 25 in row 1 is outside the fitted range \[0, 20.5\]"):
        encoder.transform(pd.DataFrame({"a": ["x", "x"], "n": [0.0, 25.0]}))
    with pytest.raises(ValueError, match=r"column 'n': value 'ten' in row 1 is not a number"):
        encoder.transform(pd.DataFrame({"a": ["x", "x"], "n": pd.Series([0, "ten"], dtype=object)}))
    with pytest.raises(ValueError, match=r"column 'a': missing value in row 1"):
        encoder.transform(pd.DataFrame({"a": ["x", "?"], "n": [0.0, 1.0]}))
    with pytest.raises(ValueError, match=r"column 'n': missing value in row 0"):
        encoder.transform(pd.DataFrame({"a": ["x"], "n": [np.nan]}))
    with pytest.raises(KeyError, match=r"columns \['n'\] of the encoder are not in the table"):
        encoder.transform(pd.DataFrame({"a": ["x"]}))
    with pytest.raises(ValueError, match="no rows"):
        encoder.transform(table.iloc[:0])
    with pytest.raises(TypeError, match="DataFrame or a CSV path"):
        encoder.transform(np.zeros((2, 2)))


def test_fit_and_parameter_errors():
    table = pd.DataFrame({"a": ["x", "y"], "n": [1.0, 2.0]})
    with pytest.raises(ValueError, match="bins must be a positive integer"):
        TableEncoder(bins=0)
    with pytest.raises(ValueError, match="binning must be one of"):
        TableEncoder(binning="kmeans")
    with pytest.raises(ValueError, match=r"columns \['a'\] are declared both"):
        TableEncoder(categorical=["a"], numeric=["a"])
    with pytest.raises(KeyError, match=r"columns \['zz'\] were declared"):
        TableEncoder(numeric=["zz"]).fit(table)
    with pytest.raises(ValueError, match=r"column 'a': value 'x' in row 0 is not a number"):
        TableEncoder(numeric=["a"]).fit(table)
    with pytest.raises(ValueError, match=r"column 'n' is numeric but has no values"):
        TableEncoder(numeric=["n"]).fit(pd.DataFrame({"n": ["?", None]}))
    with pytest.raises(ValueError, match="repeats the column names"):
        TableEncoder().fit(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    with pytest.raises(ValueError, match="no columns"):
        TableEncoder().fit(pd.DataFrame(index=range(3)))
    with pytest.raises(RuntimeError, match="not fitted yet"):
        TableEncoder().transform(table)
    with pytest.raises(ValueError, match="not a saved TableEncoder"):
        TableEncoder.from_dict({"format": "something else"})


def test_inverse_transform_errors():
    encoder = TableEncoder().fit(pd.DataFrame({"a": ["x", "y"], "b": ["u", "v"]}))
    with pytest.raises(ValueError, match=r"attribute 'a' has size 3 in the dataset but 2 in the encoder"):
        encoder.inverse_transform(Dataset([[0]], Domain(["a"], [3])))
    with pytest.raises(KeyError, match=r"attribute 'c' is not a column"):
        encoder.inverse_transform(Dataset([[0]], Domain(["c"], [2])))
    with pytest.raises(ValueError, match="within_bin must be one of"):
        encoder.inverse_transform(Dataset([[0]], Domain(["a"], [2])), within_bin="mean")
    # A subset of the columns, in any order, decodes.
    out = encoder.inverse_transform(Dataset([[1, 0]], Domain(["b", "a"], [2, 2])))
    assert out.to_dict("list") == {"b": ["v"], "a": ["x"]}
