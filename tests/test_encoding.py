import dataclasses
import datetime
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm import sample_data
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.domain import Domain
from ektelo_pgm.privacy import Budget
from ektelo_pgm.encoding import (TIME_FORMATS, WITHIN_BIN, CategoricalColumn, NumericColumn, TableEncoder, as_times,
                                 time_formats, time_text, time_texts)
from ektelo_pgm.errors import InputError
from ektelo_pgm.schema import column_changes
from ektelo_pgm.table_io import canonical, read_table

ADULT_COLUMNS = list(sample_data.ADULT_COLUMNS)
NUMERIC = ["age", "fnlwgt", "capital-gain", "capital-loss", "hours-per-week"]


@pytest.fixture(scope="module")
def adult_raw(raw_adult):
    return read_table(raw_adult, names=ADULT_COLUMNS, text=False)


@pytest.fixture(scope="module")
def adult(adult_raw):
    encoder = TableEncoder(bins=32)
    return encoder, encoder.fit_transform(adult_raw, public=True)


def stripped(series):
    """The raw column as the encoder sees it: stripped strings, '?' as missing."""
    values = series.astype(object).map(lambda v: v.strip() if isinstance(v, str) else v)
    return values.mask(values == "?")


def test_adult_shape_kinds_and_sizes(adult, adult_raw):
    encoder, ds = adult
    assert len(ds) == 32561 == len(adult_raw)
    assert ds.domain.attrs == tuple(ADULT_COLUMNS)
    assert [a for a, c in encoder.columns.items() if c.kind == "numeric"] == NUMERIC
    # Same sizes as the preprocessed adult shipped with the package (32 bins; '?' its own category).
    reference = json.loads((sample_data.HERE / "adult-domain.json").read_text())
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


def test_adult_missing_values_get_the_last_code(adult, adult_raw, raw_adult):
    encoder, ds = adult
    text = raw_adult.read_text()
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
    ds = encoder.fit_transform(adult_raw[["fnlwgt", "capital-gain"]], public=True)
    counts = ds.marginal(["fnlwgt"])
    assert encoder.columns["fnlwgt"].bins == 16
    assert counts.min() > 0.8 * len(ds) / 16 and counts.max() < 1.2 * len(ds) / 16
    # capital-gain is 0 for over 90% of people: the equal quantile edges at 0 merge.
    gain = encoder.columns["capital-gain"]
    assert gain.bins < 16 and gain.edges[0] == 0
    assert ds.marginal(["capital-gain"])[0] >= 0.9 * len(ds)


def test_inference_threshold_and_overrides(adult_raw):
    table = adult_raw[["age", "education-num", "hours-per-week"]]
    inferred = TableEncoder(bins=80).fit(table, public=True)
    # age has 73 distinct values <= 80 bins: kept exactly as categories.
    assert inferred.columns["age"].kind == "categorical" and inferred.columns["age"].size == 73
    assert inferred.columns["hours-per-week"].kind == "numeric"
    forced = TableEncoder(bins=4, categorical=["age"], numeric=["education-num"]).fit(table, public=True)
    assert forced.columns["age"].kind == "categorical" and forced.columns["age"].size == 73
    assert forced.columns["education-num"].kind == "numeric" and forced.columns["education-num"].size == 4


def test_fit_on_csv_path_with_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("colour,weight\n red,1.5\nblue, 2.25\n?,NaN\nred,3.75\n")
    encoder = TableEncoder(bins=2, numeric=["weight"])
    ds = encoder.fit_transform(path, public=True)
    assert ds.domain == Domain(["colour", "weight"], [3, 3])
    np.testing.assert_array_equal(ds.records, [[1, 0], [0, 0], [2, 2], [1, 1]])
    assert encoder.columns["weight"] == NumericColumn("weight", (1.5, 2.625, 3.75), False, True)
    assert encoder.columns["weight"].labels() == ["[1.5, 2.625)", "[2.625, 3.75]", "<missing>"]
    out = encoder.inverse_transform(ds)
    assert out["colour"].tolist()[:2] == ["red", "blue"] and pd.isna(out["colour"][2])
    np.testing.assert_allclose(out["weight"].to_numpy(), [2.0625, 2.0625, np.nan, 3.1875])


def test_mixed_numbers_and_strings_are_categories():
    table = pd.DataFrame({"code": pd.Series([3, "x", 1, " x ", None], dtype=object)})
    encoder = TableEncoder().fit(table, public=True)
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
    ds = encoder.fit_transform(table, public=True)
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


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), edges=st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=12, unique=True),
       how=st.sampled_from(["midpoint", "uniform"]))
def test_whole_decoding_of_fractional_bins_keeps_integers_inside_them(seed, edges, how):
    edges = sorted(edges)
    column = NumericColumn("x", tuple(edges), False, True)
    codes = np.random.default_rng(seed).integers(0, column.size, 500)
    values = column.decode(codes, how, np.random.default_rng(seed), whole=True)
    present = codes < column.bins
    assert values.isna().to_numpy().tolist() == (~present).tolist()
    got = values[present].to_numpy(dtype=float)
    assert np.array_equal(got, np.round(got))
    lo, hi = np.asarray(edges)[codes[present]], np.asarray(edges)[codes[present] + 1]
    last = codes[present] == column.bins - 1
    holds = np.ceil(lo) < np.where(last, np.floor(hi) + 1, np.ceil(hi))  # the bin holds an integer
    inside = (lo <= got) & ((got < hi) | (last & (got == hi)))
    assert inside[holds].all()
    assert np.all(np.abs(got - (lo + hi) / 2)[~holds] <= 0.5)  # else the integer nearest its middle


def test_whole_decoding_needs_numeric_columns():
    encoder = TableEncoder().fit(pd.DataFrame({"a": ["x", "y"]}), public=True)
    with pytest.raises(ValueError, match=r"whole: 'a' is not a numeric column"):
        encoder.inverse_transform(Dataset([[0]], Domain(["a"], [2])), whole=["a"])


def test_unseen_category_names_column_value_and_row(adult, raw_adult_test):
    encoder, _ = adult
    test = pd.read_csv(raw_adult_test, names=ADULT_COLUMNS, header=None, skiprows=1,
                       skipinitialspace=True)  # its first line is a note
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
    encoder = TableEncoder(bins=2, numeric=["n"]).fit(table, public=True)
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
        TableEncoder(numeric=["zz"]).fit(table, public=True)
    with pytest.raises(ValueError, match=r"column 'a': value 'x' in row 0 is not a number"):
        TableEncoder(numeric=["a"]).fit(table, public=True)
    with pytest.raises(ValueError, match=r"column 'n' is numeric but has no values"):
        TableEncoder(numeric=["n"]).fit(pd.DataFrame({"n": ["?", None]}), public=True)
    with pytest.raises(ValueError, match="repeats the column names"):
        TableEncoder().fit(pd.DataFrame([[1, 2]], columns=["a", "a"]), public=True)
    with pytest.raises(ValueError, match="no columns"):
        TableEncoder().fit(pd.DataFrame(index=range(3)), public=True)
    with pytest.raises(RuntimeError, match="not fitted yet"):
        TableEncoder().transform(table)
    with pytest.raises(ValueError, match="not a saved TableEncoder"):
        TableEncoder.from_dict({"format": "something else"})


def test_inverse_transform_errors():
    encoder = TableEncoder().fit(pd.DataFrame({"a": ["x", "y"], "b": ["u", "v"]}), public=True)
    with pytest.raises(ValueError, match=r"attribute 'a' has size 3 in the dataset but 2 in the encoder"):
        encoder.inverse_transform(Dataset([[0]], Domain(["a"], [3])))
    with pytest.raises(KeyError, match=r"attribute 'c' is not a column"):
        encoder.inverse_transform(Dataset([[0]], Domain(["c"], [2])))
    with pytest.raises(ValueError, match="within_bin must be one of"):
        encoder.inverse_transform(Dataset([[0]], Domain(["a"], [2])), within_bin="mean")
    # A subset of the columns, in any order, decodes.
    out = encoder.inverse_transform(Dataset([[1, 0]], Domain(["b", "a"], [2, 2])))
    assert out.to_dict("list") == {"b": ["v"], "a": ["x"]}


# ---------------------------------------------------------------- private fit (issue 12 item 4)

def _income_table(n=2000, seed=0, outlier=None):
    rng = np.random.default_rng(seed)
    table = pd.DataFrame({"income": np.round(rng.lognormal(10.5, 0.6, n)).astype(int),
                          "job": rng.choice(["a", "b", "c"], n, p=[0.6, 0.39, 0.01])})
    if outlier is not None:
        table.loc[len(table)] = outlier
    return table


def test_the_default_fit_refuses_to_read_undeclared_columns():
    with pytest.raises(ValueError, match=r"columns \['income', 'job'\] have no declared categories or bounds"):
        TableEncoder().fit(_income_table())
    with pytest.raises(TypeError, match="give a Budget"):
        TableEncoder(binning="quantile", bounds={"income": (0, 10 ** 6)}, categories={"job": "abc"}) \
            .fit(_income_table())


def test_a_declared_schema_reads_nothing_and_one_outlier_changes_nothing():
    """Issue 12 item 4: an outlier used to add a category and move a bin edge to 1e7."""
    encoder = TableEncoder(bins=8, bounds={"income": (0, 200_000)}, categories={"job": ["a", "b", "c", "z"]})
    plain = encoder.fit(_income_table()).to_dict()["columns"]
    with_outlier = encoder.fit(_income_table(outlier=[10_000_000, "new"])).to_dict()["columns"]
    assert plain == with_outlier
    assert plain[0]["edges"] == [int(e) for e in np.ceil(np.linspace(0, 200_001, 9))]
    coded = encoder.transform(_income_table(outlier=[150, "new"]))
    assert coded.records[-1, 1] == encoder.columns["job"].size - 1  # an unknown category codes as missing


def test_private_quantile_bins_and_category_threshold_are_charged_and_stable():
    budget = Budget.pure(1.0)
    encoder = TableEncoder(bins=4, binning="quantile", bounds={"income": (0, 200_000)},
                           categories={"job": ["a", "b", "c", "z"]})
    encoder.fit(_income_table(), budget=budget, rng=0, amount=0.8, threshold=50)
    assert budget.spent == pytest.approx(0.8) and len(budget.ledger) == 4  # 3 quantiles + 1 histogram
    assert sum(c.amount for c in budget.ledger) <= Fraction(4, 5)
    assert encoder.columns["job"].categories == ("a", "b")  # c (1%, ~20 records) and z (none) fall below 50
    edges = encoder.columns["income"].edges
    truth = np.quantile(_income_table()["income"], [0.25, 0.5, 0.75])
    assert np.all(np.abs(np.array(edges[1:-1]) - truth) < 0.1 * truth)
    # one outlier moves no edge beyond what the noise does anyway: edges stay inside the bounds
    again = TableEncoder(bins=4, binning="quantile", bounds={"income": (0, 200_000)},
                         categories={"job": ["a", "b", "c", "z"]})
    again.fit(_income_table(outlier=[10_000_000, "new"]), budget=Budget.pure(1.0), rng=0, amount=0.8, threshold=50)
    assert again.columns["income"].edges[-1] == 200_001 and again.columns["job"].categories == ("a", "b")


def test_private_fit_is_reproducible_and_saved_encoders_keep_the_declarations(tmp_path):
    def fit():
        return TableEncoder(bins=4, binning="quantile", bounds={"income": (0.0, 2e5)},
                            categories={"job": ["a", "b"]}).fit(_income_table(), budget=Budget.zcdp(1.0), rng=3)

    assert fit().to_dict() == fit().to_dict()
    encoder = fit()
    encoder.save(tmp_path / "enc.json")
    loaded = TableEncoder.load(tmp_path / "enc.json")
    assert loaded.to_dict() == encoder.to_dict() and loaded.bounds == {"income": (0.0, 2e5)}
    assert not encoder.columns["income"].integer


@pytest.mark.parametrize("base", [2 ** 53, 2 ** 62])
@pytest.mark.parametrize("binning", ["uniform", "quantile"])
def test_whole_numbers_beyond_two_to_the_53_encode_their_own_training_data(base, binning):
    """Issue 12 item 6: fit_transform refused its own training data above 2**53."""
    table = pd.DataFrame({"id": (base + np.random.default_rng(0).integers(0, 10 ** 6, 100)).astype(np.int64)})
    encoder = TableEncoder(bins=4, binning=binning)
    codes = encoder.fit_transform(table, public=True).records[:, 0]
    edges = encoder.columns["id"].edges
    assert edges[0] == int(table["id"].min()) and edges[-1] == int(table["id"].max()) + 1
    expected = np.searchsorted(np.array(edges, dtype=object), table["id"].map(int).to_numpy(dtype=object),
                               side="right") - 1
    np.testing.assert_array_equal(codes, expected)
    if binning == "quantile":
        assert np.bincount(codes).tolist() == [25, 25, 25, 25]


# issue 52: times of any range ------------------------------------------------------------------
@pytest.mark.parametrize("text, written", [("0001-01-01 00:00:00", None), ("3000-01-01 00:00:00", None),
                                           ("9999-12-31 23:59:59", None), ("10000-01-01 00:00:00", None),
                                           ("123456789-06-30 12:00:00", None), ("0000-02-29 00:00:00", None),
                                           ("-0001-01-01 00:00:00", None),
                                           ("-001-01-01 00:00:00", "-0001-01-01 00:00:00"),
                                           ("-44-03-15 12:00:00", "-0044-03-15 12:00:00")])
def test_times_of_any_year_read_as_exact_seconds_and_written_back(text, written):
    """A time past pandas' nanosecond range (1677-2262) ended the run in OutOfBoundsDatetime, its
    message printing the value: times are whole seconds of any range, as numpy counts them."""
    fmt = "%Y-%m-%d %H:%M:%S"
    seconds = as_times(np.array([text, "2019-01-01 00:00:00", "not a time", None], dtype=object), fmt)
    assert seconds[1] == 1546300800 and seconds[2] is None and seconds[3] is None
    assert type(seconds[0]) is int and seconds[0] == np.datetime64(text.replace(" ", "T"), "s").astype(np.int64)
    assert time_text(seconds[0], fmt) == (written or text)
    assert time_formats(np.array([text], dtype=object))[0] == TIME_FORMATS.index(fmt)


def test_a_year_past_what_python_reads_as_an_int_is_an_infinite_time():
    """Like a number of thousands of digits, a year of thousands of digits is read (as +-inf
    seconds, clipped like any number), never an error."""
    huge = "9" * 5000
    times = as_times(np.array([f"{huge}-01-01", f"-{huge}-01-01", f"{huge[:40]}-01-01"], dtype=object), "%Y-%m-%d")
    assert times[0] == math.inf and times[1] == -math.inf
    assert type(times[2]) is int and time_text(times[2], "%Y-%m-%d") == f"{huge[:40]}-01-01"


def test_days_count_as_numpys_calendar_over_two_million_years():
    days = np.arange(-400_000_000, 400_000_000, 9_973, dtype=np.int64)  # years -1.1 to 1.1 million
    numpys = np.datetime_as_string(days.astype("datetime64[D]")).astype(object)
    assert (as_times(numpys, "%Y-%m-%d") == days * 86400).all()
    ours = time_texts(days * 86400 + 3723, "%Y-%m-%dT%H:%M:%SZ").astype(object)
    assert (as_times(ours, "%Y-%m-%dT%H:%M:%SZ") == days * 86400 + 3723).all()
    four = (days >= -719528) & (days < 2932897)  # years 0 to 9999, written in four digits alike
    assert (time_texts(days[four] * 86400, "%Y-%m-%d") == numpys[four]).all()


def test_a_time_column_decodes_bins_of_any_range():
    """Decoding went through pandas' nanosecond timestamps: bins beyond 2262 raised."""
    edges = tuple(int(s) for s in as_times(np.array(["0001-01-01", "1970-01-01", "3000-01-01", "10000-01-01"],
                                                     dtype=object), "%Y-%m-%d"))
    column = NumericColumn("day", edges, True, True, None, "%Y-%m-%d")
    codes = np.array([0, 1, 2, 3, 2, 0])
    for how in WITHIN_BIN:
        written = column.decode(codes, how, np.random.default_rng(0))
        assert written.isna().tolist() == [False, False, False, True, False, False]
        again = as_times(written.to_numpy(dtype=object), "%Y-%m-%d")
        assert [edges[c] <= s < edges[c + 1] for c, s in zip(codes, again) if s is not None] == [True] * 5
    assert column.labels()[2] == "[3000-01-01, 10000-01-01)"


@given(seconds=st.integers(-62_135_596_800, 253_402_300_799))  # years 1 to 9999, as datetime has them
def test_a_format_without_leading_zeros_writes_what_strftime_writes_and_reads_it_back(seconds):
    """``%-m``, ``%-d`` and ``%-H`` write months, days and hours without a leading zero, as glibc's
    strftime does; the text reads back to the same time, in that format and in the padded one."""
    fmt = "%-m/%-d/%Y %-H:%M:%S"
    text = time_text(seconds, fmt)
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    assert text == f"{moment.month}/{moment.day}/{moment.year:04d} {moment.hour}:{moment:%M}:{moment:%S}"
    for reading in (fmt, "%m/%d/%Y %H:%M:%S"):
        assert as_times(np.array([text], dtype=object), reading)[0] == seconds
    with pytest.raises(InputError, match="at most once"):
        time_text(0, "%-m/%m")
    with pytest.raises(InputError, match="without a leading zero"):
        time_text(0, "%-Y")


def test_time_formats_read_ordinary_text_as_pandas_did():
    """Over the years pandas reads (1678-2261), the time parser agrees with pandas.to_datetime
    (the reader before issue 52) on which texts each format reads, and their seconds, rounded
    down: forms with one digit, spaces, any case, leap days, seconds 60 and 61, fractions."""
    rng = np.random.default_rng(52)
    stamps = pd.Timestamp("1678-01-01") + pd.to_timedelta(rng.integers(0, 583 * 365 * 86400, 400), unit="s")
    texts = ["2019-1-5", "2019-01-05 1:2:3", "2019-01-05  01:02", "2019-02-29", "2020-02-29", "2019-04-31",
             "2019-01-05 23:59:60", "2019-01-05 23:59:61", "2019-01-05 24:00:00", "jan-2019", "SEP 2019", "Sept 2019",
             "January 2019", "1/ 5/2019", "2019- 1-05", "2019-01-05T01:02:03z", "2019-01-05t01:02:03Z",
             "2019-01-05T01:02:03.123456789Z", "2019-01-05T01:02:03.1234567891Z", "2019-01-05T01:02:03.Z",
             "1969-12-31T23:59:59.5Z", "02019-01-05", "+2019-01-05", "019-01-05", "Jan 05,2019", "5.1.2019",
             "2019-13", "2019-00-05", "00/05/2019", "2019/1/5 1:2:3", "12/31/1999 23:59", "31 Dec 1999", "Dec 31, 1999",
             "11:38:36", "7:5:0", "24:00:00"]
    texts += [s.strftime(fmt) for s in stamps for fmt in TIME_FORMATS[rng.integers(len(TIME_FORMATS)):][:2]]
    for fmt in (f for f in TIME_FORMATS if "%z" not in f):  # pandas never read offsets for us
        parsed = pd.to_datetime(pd.Series(texts, dtype=object), format=fmt, errors="coerce")
        undated = 0 if "%Y" in fmt else 2208988800  # pandas reads a time of day on 1900-01-01, ours on 1970-01-01
        theirs = [None if pd.isna(p) else
                  int(p.to_datetime64().astype("datetime64[ns]").astype(np.int64) // 10**9) + undated for p in parsed]
        assert list(as_times(np.array(texts, dtype=object), fmt)) == theirs, fmt


def test_times_at_an_offset_from_utc_are_read_as_utc_and_written_in_it():
    """Issue 56: times written with an offset from UTC (ISO 8601's +01:00; pandas writes a zoned
    time so, as a Parquet column of them is read) were not times, and their column was left out
    as an identifier.  They read as the instant pandas reads, and are written back in UTC."""
    rng = np.random.default_rng(56)
    instants = 315532800 + rng.integers(0, 60 * 365 * 86400, 300)  # 1980 to 2040
    zones = {"+01:00": 60, "-05:30": -330, "+0200": 120, "-08": -480, "Z": 0, "+14:00": 840}  # minutes east
    written = [list(zones)[k % len(zones)] for k in range(instants.size)]
    utc = pd.to_datetime(instants, unit="s", utc=True)
    texts = np.array([(t + pd.Timedelta(minutes=zones[z])).strftime("%Y-%m-%d %H:%M:%S") + z
                      for t, z in zip(utc, written)], dtype=object)
    fmt = "%Y-%m-%d %H:%M:%S%z"
    assert list(as_times(texts, fmt)) == instants.tolist() == [int(pd.Timestamp(t).timestamp()) for t in texts]
    assert set(time_formats(texts)) == {TIME_FORMATS.index(fmt)}
    assert time_text(instants[0], fmt) == utc[0].strftime("%Y-%m-%d %H:%M:%S") + "+00:00"
    zoned = pd.Series(utc).dt.tz_convert("Europe/Paris")  # a Parquet column of zoned times, as read
    read = canonical(zoned, frozenset())
    assert set(time_formats(read)) == {TIME_FORMATS.index(fmt)} and list(as_times(read, fmt)) == instants.tolist()


def test_a_time_of_day_is_read_as_the_seconds_since_midnight():
    """Issue 56: a column of times of day (a restaurant's order times, 11:38:36) was left out as an
    identifier.  It is a column of times, read as the seconds since midnight and written back."""
    fmt = "%H:%M:%S"
    texts = np.array(["11:38:36", "00:00:00", "23:59:59", "7:05:00", "24:00:00", "11:38", "2019-01-05 11:38:36"],
                     dtype=object)
    assert list(as_times(texts, fmt)) == [41916, 0, 86399, 25500, None, None, None]
    assert list(time_texts(np.array([41916, 0, 86399, 25500]), fmt)) == ["11:38:36", "00:00:00", "23:59:59", "07:05:00"]
    dated = TIME_FORMATS.index("%Y-%m-%d %H:%M:%S")
    assert list(time_formats(texts)) == [TIME_FORMATS.index(fmt)] * 4 + [-1, -1, dated]


def test_times_decode_in_their_unit_and_round_trip():
    """A column of times with ``unit`` 3600 writes each time on the hour inside its bin, a bin
    holding no hour its whole seconds (declared edges need not be on the unit), at midpoints too;
    the unit is written to and read back from the schema's JSON."""
    start = 1356998400  # 2013-01-01 00:00:00
    column = NumericColumn("at", (start + 1800, start + 7 * 3600 + 60, start + 7 * 3600 + 660, start + 9 * 3600), True,
                           False, time_format="%Y-%m-%d %H:%M:%S", unit=3600)
    codes = np.repeat([0, 1, 2], 400)
    for within in WITHIN_BIN:
        written = column.decode(codes, within, np.random.default_rng(0))
        stamps = pd.to_datetime(written, format=column.time_format)
        seconds = stamps.to_numpy().astype("datetime64[s]").astype(np.int64)
        assert (np.searchsorted(column.edges, seconds, side="right") - 1 == codes).all(), within
        on_hour = (stamps.dt.minute == 0) & (stamps.dt.second == 0)
        assert on_hour[codes != 1].all() and not on_hour[codes == 1].any(), within
    assert set(pd.to_datetime(column.decode(codes[:400], "uniform", np.random.default_rng(1)),
                              format=column.time_format).dt.hour) == set(range(1, 8))
    encoder = TableEncoder(clip=True)
    encoder.columns = {"at": column}
    assert TableEncoder.from_dict(json.loads(json.dumps(encoder.to_dict()))).columns["at"] == column


def test_a_column_of_times_has_clocks_for_its_hours_and_days_of_the_week():
    """Times written to the hour or finer over two days or more get an attribute for their hour of
    the day (codes 0-23, then missing for blanks and text), and times written to the day or finer
    over two weeks or more one for their day of the week (0 Monday to 6 Sunday), read from the raw
    text or from numbers of seconds; months, times within a day, and numbers get none.  Decoded,
    each time is moved to its clocks' hour and day inside its own bin, on its unit; the clocks are
    not columns of the result, and an encoder read back from JSON has them again."""
    from ektelo_pgm.schema import encoded
    from ektelo_pgm.times import ClockColumn

    start = 1483228800  # 2017-01-01T00:00:00
    at = NumericColumn("at", (start, start + 10 * 86400, start + 30 * 86400), True, True,
                       time_format="%Y-%m-%dT%H:%M:%SZ", unit=60)
    assert ClockColumn.of(at) == (ClockColumn("at (hour)", "at", "%Y-%m-%dT%H:%M:%SZ", True, 3600),
                                  ClockColumn("at (weekday)", "at", "%Y-%m-%dT%H:%M:%SZ", True, 86400))
    assert [c.name for c in ClockColumn.of(dataclasses.replace(at, unit=86400))] == ["at (weekday)"]  # dates
    assert [c.name for c in ClockColumn.of(dataclasses.replace(at, edges=(start, start + 86400 * 13)))] \
        == ["at (hour)"]  # under two weeks
    assert ClockColumn.of(dataclasses.replace(at, edges=(start, start + 86400))) == ()  # one day
    assert ClockColumn.of(dataclasses.replace(at, unit=86400, time_format="%Y-%m")) == ()  # months
    assert ClockColumn.of(NumericColumn("n", (0, 10 ** 9), True, False)) == ()
    encoder = TableEncoder(clip=True)
    encoder.columns = {"at": at, "kind": CategoricalColumn("kind", ("a", "b"), False)}
    assert encoder.domain.attrs == ("at", "kind", "at (hour)", "at (weekday)")
    assert encoder.domain.shape == (3, 2, 25, 8)
    raw = pd.DataFrame({"at": ["2017-01-03T07:59:00Z", " 2017-01-20T23:00:00Z", "", "soon"], "kind": ["a"] * 4})
    assert encoded(raw, encoder).records[:, 2:].tolist() == [[7, 1], [23, 4], [24, 7], [24, 7]]  # Tue, Fri
    seconds = pd.DataFrame({"at": [start + 2 * 86400 + 7 * 3600 + 59 * 60, np.nan], "kind": ["a", "a"]})
    assert encoder.transform(seconds).records[:, 2:].tolist() == [[7, 1], [24, 7]]  # numbers read as numbers
    rng = np.random.default_rng(0)
    codes = np.repeat([0, 1], 500)
    hours, days = rng.integers(0, 24, codes.size), rng.integers(0, 7, codes.size)
    data = Dataset(np.column_stack([codes, np.zeros_like(codes), hours, days]), encoder.domain)
    for within in WITHIN_BIN:
        for attrs in (encoder.domain.attrs, ("at (weekday)", "at (hour)", "at", "kind")):
            written = encoder.inverse_transform(data.project(attrs), within, rng)
            assert list(written.columns) == ["at", "kind"]
            stamps = pd.to_datetime(written["at"], format=at.time_format)
            seconds = stamps.to_numpy().astype("datetime64[s]").astype(np.int64)
            assert (np.searchsorted(at.edges, seconds, side="right") - 1 == codes).all(), within
            assert (stamps.dt.hour == hours).all() and (stamps.dt.day_of_week == days).all(), within
            assert (stamps.dt.second == 0).all(), within
    assert TableEncoder.from_dict(json.loads(json.dumps(encoder.to_dict()))).clocks == encoder.clocks


@given(seconds=st.lists(st.one_of(st.integers(-2**62, 2**62), st.floats(allow_nan=True, allow_infinity=True)),
                        min_size=1, max_size=40), step=st.sampled_from([3600, 86400]), missing=st.booleans())
def test_a_clock_codes_numbers_held_by_numpy_as_it_codes_them_one_at_a_time(seconds, step, missing):
    """A clock reads float and int64 arrays at numpy's speed, each to the code it gives the same
    numbers one at a time (floored, beyond 2**53 too; NaN and infinities the missing code)."""
    from ektelo_pgm.times import ClockColumn

    clock = ClockColumn("at (hour)", "at", "%Y-%m-%d %H:%M:%S", missing, step)
    floats = np.array([float(s) for s in seconds])
    assert clock.codes(floats).tolist() == clock.codes(floats.astype(object)).tolist()
    whole = np.array([s for s in seconds if isinstance(s, int)], dtype=np.int64)
    assert clock.codes(whole).tolist() == clock.codes(whole.astype(object)).tolist()
    one = clock.codes(np.array([seconds[0]], dtype=object))[0]
    assert one == ((math.floor(seconds[0]) // step + clock.shift) % clock.phases if math.isfinite(seconds[0])
                   else clock.size - 1 if missing else 0)


@settings(max_examples=200, deadline=None)
@given(days=st.lists(st.integers(-719_000, 2_900_000), min_size=1, max_size=30),  # years 1 to 9909
       clock=st.sampled_from([0, 0, 3600, 1800, 60, 1]), calendar=st.sampled_from(["month", "year"]))
def test_months_and_years_are_told_and_counted_as_pythons_calendar_tells_them(days, clock, calendar):
    """Times at the start of a year, of a month, at another midnight or off it are told apart as
    Python's datetime tells them (beyond int64 and at infinity too: an infinite time counts as a
    multiple of every unit); the starts of months or years in a range of seconds are those
    datetime finds, and edges moved onto them leave a start in every bin."""
    from ektelo_pgm.times import TIME_UNITS, calendar_edges, calendar_start, calendar_starts, time_units

    epoch = datetime.datetime(1970, 1, 1)
    seconds = np.array(days, dtype=np.int64) * 86400 + clock
    dates = [epoch + datetime.timedelta(seconds=int(s)) for s in seconds]
    off_midnight = 2 + next(k for k, unit in enumerate(TIME_UNITS) if clock % unit == 0)
    expected = [(0 if (d.month, d.day) == (1, 1) else 1 if d.day == 1 else 2) if clock == 0 else off_midnight
                for d in dates]
    assert time_units(seconds).tolist() == expected
    assert time_units(seconds.astype(object) + 2 ** 70 * 146097 * 86400).tolist() == expected  # 400-year cycles
    assert time_units(np.array([math.inf, -math.inf], dtype=object)).tolist() == [0, 0]
    lo, hi = min(seconds), max(seconds) + clock + 1
    first, stop = calendar_starts(np.array([lo]) - 0.5, np.array([hi], dtype=float), calendar)
    starts = calendar_start(np.arange(first[0], stop[0]), calendar)
    years = range(max(min(dates).year - 1, 1), min(max(dates).year + 2, 10000))
    found = [(datetime.datetime(y, m, 1) - epoch).total_seconds() for y in years
             for m in ((1,) if calendar == "year" else range(1, 13))]
    assert starts.tolist() == [s for s in found if lo - 0.5 <= s < hi]
    edges = calendar_edges(np.unique(seconds).astype(float), calendar)
    assert edges[0] <= seconds.min() and set(edges) <= set(found)
    first, stop = calendar_starts(edges[:-1], edges[1:], calendar)
    assert (stop - first >= 1).all()


def test_a_column_of_months_writes_starts_of_months_in_its_bins():
    """A column of times with ``calendar`` "month" writes the start of a month inside each bin that
    holds one (any day of a bin that holds none), uniformly among them or the lower middle one; its
    largest time is its last month's start, its parts count months, it has no weekday, it round-trips
    through JSON, and a calendar that is not one of months or years, or not of times, is an error."""
    from ektelo_pgm.times import ClockColumn, calendar_start

    months = calendar_start(np.array([12 * 2000, 12 * 2000 + 6, 12 * 2003, 12 * 2003 + 1]), "month").astype(int)
    edges = (int(months[0]), int(months[1]), int(months[2]), int(months[2]) + 10 * 86400, int(months[3]))
    column = NumericColumn("month", edges, True, False, None, "%Y-%m-%d", 86400, calendar="month")
    codes = np.repeat([0, 1, 2, 3], 600)
    drawn = column.decode(codes, "uniform", np.random.default_rng(0))
    stamps = pd.to_datetime(drawn, format="%Y-%m-%d")
    assert (stamps[codes < 3].dt.day == 1).all() and stamps[codes == 3].dt.day.nunique() > 15
    assert stamps[codes == 0].dt.month.value_counts().size == 6 and stamps[codes == 1].nunique() == 30
    assert (np.searchsorted(edges, as_times(drawn.to_numpy(dtype=object), "%Y-%m-%d"), side="right") - 1
            == codes).all()
    assert column.decode(np.array([0, 1]), "midpoint", None).tolist() == ["2000-03-01", "2001-09-01"]
    assert column.largest == edges[2] and column.labels()[0] == "[2000-01-01, 2000-07-01)"
    assert column.numbers_in(np.array(edges[:-1], dtype=float), np.array(edges[1:], dtype=float)).tolist() \
        == [6, 30, 1, 0]
    assert [c.name for c in ClockColumn.of(column)] == []
    encoder = TableEncoder(clip=True)
    encoder.columns = {"month": column}
    assert TableEncoder.from_dict(json.loads(json.dumps(encoder.to_dict()))).columns["month"] == column
    for bad in ({"calendar": "week"}, {"calendar": "month", "time_format": None}):
        with pytest.raises(InputError, match="column 'month': \"calendar\" must be one of year, month"):
            dataclasses.replace(column, **bad)


def test_whole_numbers_decode_in_their_unit_and_a_schema_names_a_bad_unit():
    """A column of whole numbers with ``unit`` 25 writes multiples of 25 inside each bin that holds
    one (its whole numbers in one that holds none), read back from the JSON; one written by
    earlier versions (``time_unit``) reads the same, and a unit that is not a whole number of at
    least 1 is an error naming the column."""
    column = NumericColumn("loan", (500, 1001, 1011, 35001), True, False, unit=25)
    codes = np.repeat([0, 1, 2], 400)
    values = column.decode(codes, "uniform", np.random.default_rng(0)).to_numpy(dtype=np.int64)
    assert (np.searchsorted(column.edges, values, side="right") - 1 == codes).all()
    assert (values[codes != 1] % 25 == 0).all() and set(values[codes == 1]) == set(range(1001, 1011))
    assert column.largest == 35000
    encoder = TableEncoder(clip=True)
    encoder.columns = {"loan": column}
    written = json.loads(json.dumps(encoder.to_dict()))
    spec = written["columns"][0]

    def read(**unit):
        spec.pop("unit", None)
        return TableEncoder.from_dict({**written, "columns": [{**spec, **unit}]}).columns["loan"]
    assert read(unit=25) == read(time_unit=25) == column
    for bad in (0, 2.5, "25", True):
        with pytest.raises(InputError, match="column 'loan': \"unit\" must be a whole number"):
            read(unit=bad)


def test_a_numeric_columns_fallback_is_the_bin_of_its_number_and_a_schema_names_a_bad_one():
    """A numeric column's ``fallback`` codes to the bin holding it (an end bin beyond them; the first
    without one), is written to and read back from the JSON, and one that is not a finite number
    is an error naming the column."""
    column = NumericColumn("income", (0, 50, 100, 200), True, False, fallback=120.5)
    assert column.fallback_code == 2 and NumericColumn("income", (0, 50, 100, 200), True, False).fallback_code == 0
    assert dataclasses.replace(column, fallback=-7).fallback_code == 0
    encoder = TableEncoder(clip=True)
    encoder.columns = {"income": column}
    written = json.loads(json.dumps(encoder.to_dict()))
    assert TableEncoder.from_dict(written).columns["income"] == column
    for bad in ("120", True, float("inf")):
        written["columns"][0]["fallback"] = bad
        with pytest.raises(InputError, match="column 'income': \"fallback\" must be a finite number"):
            TableEncoder.from_dict(written)


def test_a_bin_holding_one_number_is_labelled_by_it():
    """A point mass (one float wide), a closed last bin of one number, or a bin holding one number
    of the column's decimals reads as that number, and the bin after a point mass opens at it;
    the note on a column's blanks then says the number (the car table's pollution: "[0,
    4.94066e-324)", its acceleration "[4, 4)")."""
    zero = float(np.nextafter(0.0, 1.0))
    assert NumericColumn("x", (0.0, zero, 0.1, 0.3), False, False).labels() == ["0", "(0, 0.1)", "[0.1, 0.3]"]
    assert NumericColumn("x", (2.5, 4.0, 4.0001, 6.0), False, True, decimals=4).labels() == \
        ["[2.5, 4)", "4", "[4.0001, 6]", "<missing>"]
    assert NumericColumn("x", (0.7, 1.0, 1.0), False, False).labels() == ["[0.7, 1)", "1"]
    assert NumericColumn("x", (0, 1, 2, 5), True, False).labels() == ["[0, 1)", "[1, 2)", "[2, 5)"]
    pollution = NumericColumn("pollution", (0.0, zero, 0.3), False, False, fallback=0.0)
    assert column_changes(pollution, None, False)[-1] == "no blanks: a blank would be written as 0"


def test_decoded_numbers_of_a_few_decimals_stay_in_their_bins():
    """With ``decimals`` a bin's numbers are drawn among those it holds at that many decimals: a
    bin one hundredth wide gives its one number (rounding a uniform draw gave the next bin's half
    the time), and the closed last bin its upper edge too."""
    rng = np.random.default_rng(0)
    column = NumericColumn("wage", (237.42, 237.43, 240.0, 241.0), False, False, decimals=2)
    codes = np.repeat([0, 1, 2], 2000)
    values = column.decode(codes, "uniform", rng)
    assert np.array_equal(column.encode(values), codes)
    assert set(values[codes == 0]) == {237.42}
    assert set(np.round(values[codes == 2], 2)) == set(np.round(np.arange(240.0, 241.001, 0.01), 2))


def test_a_density_draws_heaped_numbers_on_their_values_and_the_rest_evenly():
    """A bin ``[600, 720)`` whose density puts 815 of its 1,000 numbers on 712.25 draws about that
    share there (a binomial band of 4.5 stds) and the rest evenly over the parts around it; a
    bin without density is drawn evenly; the density is written to and read back from the JSON."""
    density = ((600, 712.25, 150), (712.25, 712.26, 815), (712.26, 720, 35))
    column = NumericColumn("wage", (500, 600, 720), False, False, decimals=2, density=density)
    codes = np.repeat([0, 1], 20000)
    values = column.decode(codes, "uniform", np.random.default_rng(0)).to_numpy()
    assert np.array_equal(column.encode(pd.Series(values)), codes)
    heaped = values[codes == 1] == 712.25
    assert abs(heaped.mean() - 0.815) <= 4.5 * math.sqrt(0.815 * 0.185 / heaped.size)
    below = values[codes == 1][values[codes == 1] < 712.25]
    assert abs(below.size / heaped.size - 0.150) <= 4.5 * math.sqrt(0.15 * 0.85 / heaped.size)
    assert abs(np.mean(below) - 656.125) <= 4.5 * 112.25 / math.sqrt(12 * below.size)  # evenly over [600, 712.25)
    assert (values[codes == 0] == 712.25).sum() == 0 and abs(values[codes == 0].mean() - 550) < 2
    after = float(np.nextafter(712.25, np.inf))  # a released number: a part one float wide
    exact = dataclasses.replace(column, density=((600, 712.25, 150), (712.25, after, 815), (after, 720, 35)))
    values = exact.decode(codes, "uniform", np.random.default_rng(1)).to_numpy()
    assert abs(np.mean(values[codes == 1] == 712.25) - 0.815) <= 4.5 * math.sqrt(0.815 * 0.185 / heaped.size)
    encoder = TableEncoder(clip=True)
    encoder.columns = {"wage": column}
    written = json.loads(json.dumps(encoder.to_dict()))
    assert TableEncoder.from_dict(written).columns["wage"] == column
    bad_densities = ([[600, 700, 5], [650, 720, 1]], [[700, 600, 5]], [[600, 700, -1]], [[600, 700]], "600-700",
                     [[0, 1, True]], [])
    for bad in bad_densities:
        written["columns"][0]["density"] = bad
        with pytest.raises(InputError, match="column 'wage': \"density\" must be"):
            TableEncoder.from_dict(written)


@given(ends=st.lists(st.integers(-60, 60), min_size=2, max_size=2, unique=True), unit=st.sampled_from([None, 3, 10]),
       shift=st.sampled_from(["none", "up", "down"]), kind=st.sampled_from(["whole", "decimals"]))
@settings(max_examples=200, deadline=None)
def test_a_column_counts_the_numbers_it_writes_in_a_part(ends, unit, shift, kind):
    """``numbers_in`` against counting them one by one: the multiples of the unit (whole numbers)
    or the numbers of one decimal in ``[x, y)``, with either end a float above or below a
    number (``[5e-324, 10)`` holds no multiple of 10; a part one float wide is how a released
    number is held: ``[0, 5e-324)`` holds 0, ``[5e-324, 1e-323)`` nothing of one decimal)."""
    x, y = sorted(ends)
    step = 1 if kind == "whole" else 10
    x, y = x / step, y / step
    move = {"none": lambda v: v, "up": lambda v: np.nextafter(v, np.inf), "down": lambda v: np.nextafter(v, -np.inf)}
    x, y = move[shift](x), move[shift](y)
    one_float = np.nextafter(x, np.inf)
    if kind == "whole":
        column = NumericColumn("x", (-100, 100), True, False, unit=unit)
        written = np.arange(-100, 101) * 1.0
        written = written[written % (unit or 1) == 0]
    else:
        column = NumericColumn("x", (-10.0, 10.0), False, False, decimals=1)
        written = np.arange(-100, 101) / 10
    assert column.numbers_in(np.array([x]), np.array([y]))[0] == np.sum((written >= x) & (written < y))
    held = np.sum(written == x) if kind == "whole" else int(np.round(x, 1) == x)  # a float-wide part: its number
    assert column.numbers_in(np.array([x]), np.array([one_float]))[0] == held


@given(seed=st.integers(0, 2**32 - 1), edges=st.lists(st.integers(-50, 50), min_size=2, max_size=8, unique=True),
       cuts=st.lists(st.floats(-60, 60), min_size=2, max_size=12, unique=True),
       weights=st.lists(st.floats(0, 100), min_size=11, max_size=11),
       kind=st.sampled_from(["whole", "unit", "decimals", "any"]))
@settings(max_examples=120, deadline=None)
def test_numbers_drawn_by_a_density_stay_in_their_bins_and_are_written_as_the_column_writes(seed, edges, cuts,
                                                                                           weights, kind):
    """Whatever its density, every number drawn re-encodes to its own code and is one the column
    writes: a whole number (a multiple of its unit), one of its decimals, or any inside its bin."""
    edges, cuts = sorted(edges), sorted(cuts)
    density = tuple((a, b, w) for a, b, w in zip(cuts, cuts[1:], weights))
    integer = kind in ("whole", "unit")
    column = NumericColumn("x", tuple(edges), integer, False, decimals=1 if kind == "decimals" else None,
                           unit=3 if kind == "unit" else None, density=density)
    codes = np.random.default_rng(seed).integers(0, column.bins, 300)
    values = column.decode(codes, "uniform", np.random.default_rng(seed)).to_numpy(dtype=float)
    assert np.array_equal(column.encode(pd.Series(values)), codes)
    if kind == "decimals":
        assert np.array_equal(values, np.round(values, 1))
    if kind == "unit":  # a multiple of 3 wherever its bin holds one
        holds = np.ceil(np.array(edges[:-1]) / 3) * 3 < np.array(edges[1:])
        assert (values[holds[codes]] % 3 == 0).all()
