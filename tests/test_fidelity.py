"""Fidelity scores (column shapes, column pair trends, their means): each score against a value
worked out by hand on a tiny table, the KS statistic and Cramér's V against scipy, properties
over random tables (identical tables score 1, disjoint ones 0, both arguments alike), missing
values as SDMetrics's quality report handles them, and the errors."""
import numpy as np
import pandas as pd
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st
from scipy.stats import ks_2samp
from scipy.stats.contingency import association

from ektelo_pgm.evaluation import Quality, column_pair_trends, column_shapes, quality
from ektelo_pgm.evaluation.fidelity import _cramers_v

NAN = float("nan")


def scores(table) -> dict:
    """``{column or (a, b): score}`` of a column-shapes or pair-trends table."""
    key = "column" if "column" in table.columns else "columns"
    return dict(zip(table[key], table["score"]))


# ----------------------------------------------------------------------------------------------
# Each score against a hand-computed value
# ----------------------------------------------------------------------------------------------


def test_ks_complement_is_one_minus_the_largest_gap_between_the_cdfs():
    # CDFs at 1, 2, 3, 4: real 1/3, 2/3, 1, 1; synthetic 0, 1/2, 3/4, 1: largest gap 1/3
    real, fake = pd.DataFrame({"x": [1.0, 2, 3]}), pd.DataFrame({"x": [2.0, 2, 3, 4]})
    table = column_shapes(real, fake, {"x": "numeric"})
    assert list(table["metric"]) == ["KSComplement"]
    assert table["score"][0] == pytest.approx(2 / 3, abs=1e-15)


def test_tv_complement_drops_missing_values_and_counts_new_categories():
    # real shares a 2/3, b 1/3 (the missing row left out); synthetic a 1/4, b 1/2, c 1/4
    real = pd.DataFrame({"c": ["a", "a", "b", None]})
    fake = pd.DataFrame({"c": ["a", "b", "b", "c"]})
    table = column_shapes(real, fake, {"c": "categorical"})
    assert list(table["metric"]) == ["TVComplement"]
    tvd = 0.5 * (abs(2 / 3 - 1 / 4) + abs(1 / 3 - 1 / 2) + 1 / 4)
    assert table["score"][0] == pytest.approx(1 - tvd, abs=1e-15)  # 7/12


def test_correlation_similarity_uses_the_rows_where_both_are_present():
    # real r = 1 over the three complete rows (the fourth has y missing); synthetic r = -1
    real = pd.DataFrame({"x": [1.0, 2, 3, 50], "y": [2.0, 4, 6, NAN]})
    fake = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [3.0, 2, 1, 0]})
    table = column_pair_trends(real, fake, {"x": "numeric", "y": "numeric"})
    assert list(table["metric"]) == ["CorrelationSimilarity"]
    assert table["score"][0] == pytest.approx(0.0, abs=1e-15)
    assert table["real_association"][0] == pytest.approx(1.0)
    half = pd.DataFrame({"x": [1.0, 2, 3, 4], "y": [1.0, 3, 2, 4]})  # r = 4 / 5
    assert column_pair_trends(real, half, {"x": "numeric", "y": "numeric"})["score"][0] == pytest.approx(0.9)


def test_contingency_similarity_counts_a_missing_value_as_a_cell():
    # real: (a,x) (a,y) (b,-) (b,x), a quarter each; synthetic: (a,x) half, (b,-) and (-,x) a quarter
    real = pd.DataFrame({"u": ["a", "a", "b", "b"], "v": ["x", "y", None, "x"]})
    fake = pd.DataFrame({"u": ["a", "a", "b", None], "v": ["x", "x", None, "x"]})
    table = column_pair_trends(real, fake, {"u": "categorical", "v": "categorical"})
    assert list(table["metric"]) == ["ContingencySimilarity"]
    tvd = 0.5 * (abs(0.25 - 0.5) + 0.25 + 0 + 0.25 + 0.25)
    assert table["score"][0] == pytest.approx(1 - tvd)


def test_a_numeric_column_paired_with_a_category_is_cut_in_ten_bins_of_the_real_table():
    x = np.arange(10, dtype=float)
    real = pd.DataFrame({"x": x, "c": ["p"] * 5 + ["q"] * 5})
    # ten bins over the real [0, 9], one value in each; the shifted values all past 9, in the last
    # (open) bin: only the real row (9, q) finds its cell in the synthetic table
    shifted = pd.DataFrame({"x": x * 3 + 100, "c": ["p"] * 5 + ["q"] * 5})
    table = column_pair_trends(real, shifted, {"x": "numeric", "c": "categorical"})
    assert list(table["metric"]) == ["ContingencySimilarity"] and table["score"][0] == pytest.approx(0.1)
    other = pd.DataFrame({"x": x, "c": ["p"] * 4 + ["q"] * 6})  # row 4 moves from (bin 5, p) to (bin 5, q)
    assert column_pair_trends(real, other, {"x": "numeric", "c": "categorical"})["score"][0] == pytest.approx(0.9)


@pytest.mark.parametrize("second, expected", [(1.0, 1 / 3), (0.95, 1.0)])
def test_the_bins_are_ten_of_equal_width(second, expected):
    # over [0, 10] the bins are 1 wide: 0 and 1 fall in two (the categories swapped between them:
    # TVD 2/3), 0 and 0.95 in one (nothing changes)
    real = pd.DataFrame({"x": [0.0, second, 10], "c": ["p", "q", "p"]})
    fake = pd.DataFrame({"x": [0.0, second, 10], "c": ["q", "p", "p"]})
    assert column_pair_trends(real, fake, {"x": "numeric", "c": "categorical"})["score"][0] == pytest.approx(expected)


def test_a_missing_number_has_a_cell_of_its_own():
    # real: 0, 10, missing; synthetic: 0, 10, 10.  The real max is in the last bin, the missing
    # value in a cell of its own (the quality report's own-range bins put both in one cell)
    real = pd.DataFrame({"x": [0.0, 10, NAN], "c": ["p", "p", "p"]})
    fake = pd.DataFrame({"x": [0.0, 10, 10], "c": ["p", "p", "p"]})
    table = column_pair_trends(real, fake, {"x": "numeric", "c": "categorical"})
    assert table["score"][0] == pytest.approx(2 / 3)


def brute_contingency(real, fake, number, category) -> float:
    """1 - TVD of the two tables' (bin of ``number``, ``category``) contingency tables, counted row
    by row: ten equal-width bins over the real range (1 wide around a constant), the two end bins
    open, a missing number or category a cell of its own."""
    values = [v for v in real[number] if v == v]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)  # numpy's range of no numbers
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    inner = np.linspace(lo, hi, 11)[1:-1]
    shares = []
    for frame in (real, fake):
        counts = {}
        for x, c in zip(frame[number], frame[category]):
            cell = ("missing" if x != x else sum(x >= e for e in inner), "missing" if c is None or c != c else c)
            counts[cell] = counts.get(cell, 0) + 1
        shares.append({cell: k / len(frame) for cell, k in counts.items()})
    cells = set(shares[0]) | set(shares[1])
    return 1 - 0.5 * sum(abs(shares[0].get(c, 0) - shares[1].get(c, 0)) for c in cells)


def test_two_near_constant_columns_score_one_minus_their_brute_force_tvd():
    """Two near-constant columns (days on a waiting list: 97% zeros, a few up to 391; a flag: 96%
    "no"), the synthetic table without the real outliers and with its own few spread values: the
    pair's score is 1 - TVD of its contingency table on the real table's bins, close to 1, where
    cutting each table on its own range (SDMetrics's quality report) put the zeros in different
    bins and scored it near 0."""
    rng = np.random.default_rng(0)
    n = 4000
    days = np.where(rng.random(n) < 0.97, 0.0, rng.integers(1, 392, n).astype(float))
    flag = np.where(rng.random(n) < 0.96, "no", "yes")
    real = pd.DataFrame({"days": days, "flag": flag})
    fake = pd.DataFrame({"days": np.where(rng.random(n) < 0.98, 0.0, rng.integers(-30, 40, n).astype(float)),
                         "flag": np.where(rng.random(n) < 0.93, "no", "yes")})
    fake.loc[:20, "days"] = NAN
    kinds = {"days": "numeric", "flag": "categorical"}
    score = column_pair_trends(real, fake, kinds)["score"][0]
    assert score == pytest.approx(brute_contingency(real, fake, "days", "flag"), abs=1e-12)
    assert score > 0.9
    constant = fake.assign(days=0.0)  # the synthetic column constant: each its own range, still the real bins
    assert column_pair_trends(real, constant, kinds)["score"][0] == pytest.approx(
        brute_contingency(real, constant, "days", "flag"), abs=1e-12)
    flat = real.assign(days=5.0)  # a real constant: ten bins 0.1 wide around it
    assert column_pair_trends(flat, fake, kinds)["score"][0] == pytest.approx(
        brute_contingency(flat, fake, "days", "flag"), abs=1e-12)


def test_quality_means_follow_the_thresholds():
    rng = np.random.default_rng(0)
    n = 400
    a = rng.normal(size=n)
    real = pd.DataFrame({"a": a, "b": a + 0.3 * rng.normal(size=n), "c": rng.normal(size=n),
                         "k": np.where(a > 0, "hi", "lo")})
    fake = real.sample(frac=1.0, random_state=1).reset_index(drop=True)
    fake["c"] = rng.normal(size=n) + 0.5
    kinds = {"a": "numeric", "b": "numeric", "c": "numeric", "k": "categorical"}
    q = quality(real, fake, kinds)
    assert isinstance(q, Quality)
    pairs = q.column_pair_trends.set_index("columns")
    # strong in the real table: a-b (r ~ 0.96) and a-k, b-k (Cramér's V of a split at 0: ~1, ~0.8)
    assert set(pairs.index[pairs["counted"]]) == {("a", "b"), ("a", "k"), ("b", "k")}
    assert q.column_shapes_score == pytest.approx(q.column_shapes["score"].mean())
    assert q.column_pair_trends_score == pytest.approx(pairs.loc[pairs["counted"], "score"].mean())
    assert q.score == pytest.approx((q.column_shapes_score + q.column_pair_trends_score) / 2)
    every = quality(real, fake, kinds, correlation_threshold=0, association_threshold=0)
    assert every.column_pair_trends["counted"].all()
    assert every.column_pair_trends_score == pytest.approx(every.column_pair_trends["score"].mean())
    # a category constant in the real table: Cramér's V undefined, counted only with a threshold of 0
    real["one"], fake["one"] = "x", np.where(np.arange(n) < 100, "y", "x")
    kinds["one"] = "categorical"
    assert not quality(real, fake, kinds).column_pair_trends.set_index("columns")["counted"][("a", "one")]
    assert quality(real, fake, kinds, 0, 0).column_pair_trends.set_index("columns")["counted"][("a", "one")]
    del kinds["one"]
    only_numbers = quality(real, fake, kinds, correlation_threshold=0.5, association_threshold=1)
    assert only_numbers.column_pair_trends_score == pytest.approx(pairs.loc[[("a", "b")], "score"].mean())


# ----------------------------------------------------------------------------------------------
# Against scipy, and properties over random tables
# ----------------------------------------------------------------------------------------------

numbers = st.lists(st.one_of(st.integers(-5, 5).map(float), st.just(NAN)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(numbers, numbers)
def test_ks_complement_matches_scipy(x, y):
    real, fake = pd.DataFrame({"x": x}), pd.DataFrame({"x": y})
    score = column_shapes(real, fake, {"x": "numeric"})["score"][0]
    a, b = np.array(x), np.array(y)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if not a.size or not b.size:
        assert np.isnan(score)
    else:
        assert score == pytest.approx(1 - ks_2samp(a, b).statistic, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 30), min_size=2, max_size=4), min_size=2, max_size=4).filter(
    lambda rows: len({len(r) for r in rows}) == 1))
def test_cramers_v_matches_scipy(rows):
    counts = np.array(rows, dtype=np.int64)
    kept = counts[counts.sum(axis=1) > 0][:, counts.sum(axis=0) > 0]
    cells = np.repeat(np.arange(counts.size), counts.ravel())  # one code pair per row, as a pair of columns has
    v = _cramers_v(cells // counts.shape[1], cells % counts.shape[1], *counts.shape)
    if min(kept.shape) < 2:
        assert np.isnan(v)
    else:
        assert v == pytest.approx(association(kept, method="cramer", correction=False), abs=1e-12)


def frame(draw, kinds):
    """A random table of the columns ``kinds`` (numbers, categories; either with missing ones)."""
    rows = draw(st.integers(1, 25))
    out = {}
    for name, kind in kinds.items():
        if kind == "numeric":
            values = st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.just(NAN))
        else:
            values = st.one_of(st.sampled_from(["a", "b", "c"]), st.none())
        out[name] = draw(st.lists(values, min_size=rows, max_size=rows))
    return pd.DataFrame(out)


@st.composite
def tables(draw, count=1):
    """``count`` random tables of the same 1-4 columns, and their kinds."""
    kinds = draw(st.lists(st.sampled_from(["numeric", "categorical"]), min_size=1, max_size=4))
    kinds = {f"c{j}": kind for j, kind in enumerate(kinds)}
    return [frame(draw, kinds) for _ in range(count)], kinds


@settings(max_examples=60, deadline=None)
@given(tables())
def test_a_table_scores_one_against_itself(drawn):
    (real,), kinds = drawn
    shapes, pairs = column_shapes(real, real.copy(), kinds), column_pair_trends(real, real.copy(), kinds)
    for table in (shapes, pairs):
        defined = table["score"].dropna()
        assert np.allclose(defined, 1.0)
    # undefined only where the scores are: a column without values, a constant pair of numbers
    for name, score in scores(shapes).items():
        assert np.isnan(score) == real[name].isna().all()
    for (a, b), metric, score in zip(pairs["columns"], pairs["metric"], pairs["score"]):
        assert np.isnan(score) == (metric == "CorrelationSimilarity" and (
            real[[a, b]].dropna().nunique().min() < 2))


@settings(max_examples=60, deadline=None)
@given(tables(count=2))
def test_the_scores_are_symmetric_in_the_two_tables_but_a_number_against_a_category(drawn):
    """Each score is symmetric in the two tables, but a number paired with a category, cut at the
    real table's bins: that one is its brute-force count."""
    (real, fake), kinds = drawn
    a, b = column_shapes(real, fake, kinds), column_shapes(fake, real, kinds)
    assert np.allclose(a["score"], b["score"], equal_nan=True, atol=1e-12)
    a, b = column_pair_trends(real, fake, kinds), column_pair_trends(fake, real, kinds)
    for (first, second), one, other in zip(a["columns"], a["score"], b["score"]):
        if kinds[first] == kinds[second]:
            assert np.allclose(one, other, equal_nan=True, atol=1e-12)
        else:
            number, category = (first, second) if kinds[first] == "numeric" else (second, first)
            assert one == pytest.approx(brute_contingency(real, fake, number, category), abs=1e-12)


def test_disjoint_categories_score_zero():
    real = pd.DataFrame({"u": ["a", "b", "a"], "v": ["x", "x", "y"]})
    fake = pd.DataFrame({"u": ["c", "d", "d", "c"], "v": ["z", "z", "w", "w"]})
    q = quality(real, fake, {"u": "categorical", "v": "categorical"}, 0, 0)
    assert list(q.column_shapes["score"]) == [0.0, 0.0]
    assert q.column_pair_trends["score"][0] == pytest.approx(0.0, abs=1e-15)
    assert q.score == pytest.approx(0.0, abs=1e-15)


def test_numbers_far_apart_score_zero_on_their_shape():
    real, fake = pd.DataFrame({"x": [1.0, 2, 3]}), pd.DataFrame({"x": [10.0, 20]})
    assert column_shapes(real, fake, {"x": "numeric"})["score"][0] == 0.0


# ----------------------------------------------------------------------------------------------
# Missing values, times, kinds
# ----------------------------------------------------------------------------------------------


def test_missing_values_are_left_out_of_the_shapes_but_are_a_cell_of_the_contingency_tables():
    real = pd.DataFrame({"x": [1.0, 2, 3, 4], "c": ["a", "b", "a", "b"]})
    fake = pd.DataFrame({"x": [1.0, 2, 3, 4, NAN, NAN], "c": ["a", "b", "a", "b", None, None]})
    kinds = {"x": "numeric", "c": "categorical"}
    assert list(column_shapes(real, fake, kinds)["score"]) == [1.0, 1.0]
    # the synthetic table's third of missing rows: a cell the real table lacks, TVD 1/3
    assert column_pair_trends(real, fake, kinds)["score"][0] == pytest.approx(2 / 3)


def test_a_column_without_values_or_a_constant_one_is_nan_and_left_out_of_the_means():
    real = pd.DataFrame({"x": [1.0, 2, 3], "y": [1.0, 2, 4], "c": ["a", "b", "a"]})
    fake = pd.DataFrame({"x": [1.0, 1, 1], "y": [NAN, NAN, NAN], "c": ["a", "b", "b"]})
    kinds = {"x": "numeric", "y": "numeric", "c": "categorical"}
    q = quality(real, fake, kinds, 0, 0)
    shapes = scores(q.column_shapes)
    assert np.isnan(shapes["y"]) and not np.isnan(shapes["x"])
    assert q.column_shapes_score == pytest.approx((shapes["x"] + shapes["c"]) / 2)
    pairs = scores(q.column_pair_trends)
    assert np.isnan(pairs[("x", "y")])
    assert q.column_pair_trends_score == pytest.approx(np.nanmean(list(pairs.values())))


def test_date_times_are_scored_as_nanoseconds_since_1970():
    stamps = pd.to_datetime(["2020-01-01 00:00", "2020-01-02 12:00", None, "2021-06-01 08:30"])
    other = pd.to_datetime(["2020-01-01 00:00", "2022-01-01 00:00", "2020-01-02 12:00"])
    real = pd.DataFrame({"t": stamps, "v": [1.0, 5, 2, 3]})
    fake = pd.DataFrame({"t": other, "v": [1.0, 2, 6]})
    kinds = {"t": "numeric", "v": "numeric"}
    as_numbers = lambda f: f.assign(t=[NAN if pd.isna(s) else s.value for s in f["t"]])
    ours, numeric = quality(real, fake, kinds, 0, 0), quality(as_numbers(real), as_numbers(fake), kinds, 0, 0)
    assert np.allclose(ours.column_shapes["score"], numeric.column_shapes["score"])
    assert np.allclose(ours.column_pair_trends["score"], numeric.column_pair_trends["score"])
    zoned = real.assign(t=real["t"].dt.tz_localize("Europe/Paris"))
    assert np.allclose(column_shapes(zoned, fake.assign(t=fake["t"].dt.tz_localize("Europe/Paris")), kinds)["score"],
                       ours.column_shapes["score"])


def test_kinds_default_to_the_reports_discretisation_and_accept_a_schema_mapping():
    n = 60
    real = pd.DataFrame({"age": np.arange(n) % 40 + 20, "code": np.arange(n) % 3, "name": ["x", "y"] * 30,
                         "when": pd.date_range("2020-01-01", periods=n, freq="D")})
    table = column_shapes(real, real, None)
    assert dict(zip(table["column"], table["metric"])) == {
        "age": "KSComplement", "code": "TVComplement", "name": "TVComplement", "when": "KSComplement"}
    declared = column_shapes(real, real, {"columns": {"code": {"kind": "numeric"}}})
    assert list(declared["column"]) == ["code"] and list(declared["metric"]) == ["KSComplement"]


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------


def test_a_column_the_synthetic_table_lacks_is_named():
    real = pd.DataFrame({"x": [1.0, 2], "secret_col": ["a", "b"]})
    with pytest.raises(ValueError, match=r"synthetic table lacks the columns \['secret_col'\]"):
        quality(real, real[["x"]], {"x": "numeric", "secret_col": "categorical"})
    with pytest.raises(ValueError, match=r"real table lacks the columns \['y'\]"):
        column_shapes(real, real, {"y": "numeric"})


def test_errors_never_echo_a_value_of_the_real_table():
    real = pd.DataFrame({"x": ["1", "hunter2", "3"]})
    with pytest.raises(ValueError, match="column 'x' is numeric but the real table") as err:
        column_shapes(real, pd.DataFrame({"x": [1.0]}), {"x": "numeric"})
    assert "hunter2" not in str(err.value) and err.value.__cause__ is None and err.value.__suppress_context__
    with pytest.raises(ValueError, match="infinite"):
        column_shapes(pd.DataFrame({"x": [1.0, np.inf]}), pd.DataFrame({"x": [1.0]}), {"x": "numeric"})


@pytest.mark.parametrize("kwargs, message", [
    ({"correlation_threshold": 1.5}, "correlation_threshold must be a number in"),
    ({"association_threshold": -0.1}, "association_threshold must be a number in"),
    ({"association_threshold": True}, "association_threshold must be a number in"),
])
def test_thresholds_are_checked(kwargs, message):
    table = pd.DataFrame({"x": [1.0, 2]})
    with pytest.raises(ValueError, match=message):
        quality(table, table, {"x": "numeric"}, **kwargs)


def test_bad_tables_and_kinds_are_refused():
    table = pd.DataFrame({"x": [1.0, 2]})
    with pytest.raises(TypeError, match="synthetic table must be a pandas DataFrame"):
        quality(table, [[1.0]], {"x": "numeric"})
    with pytest.raises(ValueError, match="synthetic table has no rows"):
        quality(table, table.iloc[:0], {"x": "numeric"})
    with pytest.raises(ValueError, match="use 'numeric' or 'categorical'"):
        quality(table, table, {"x": "continuous"})
