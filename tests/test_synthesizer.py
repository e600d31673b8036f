import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from ektelo_pgm.privacy import approx_to_zcdp
from ektelo_pgm.schema import declared
from ektelo_pgm.synthesizer import Synthesizer, mechanisms, read_table

ADULT_NAMES = ["age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
               "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
               "income"]


PEOPLE_SCHEMA = {"columns": {"city": {"kind": "categorical", "categories": ["Paris", "Lyon", "Nice", "Lille"]},
                             "age": {"kind": "numeric", "bounds": [18, 90], "bins": 8, "missing": False},
                             "income": {"kind": "numeric", "edges": [0, 0.01, 20000, 40000, 80000]},
                             "member": {"kind": "categorical", "categories": ["no", "yes"]}}}


def people(n=6000, seed=0):
    """A small table of strings and numbers: a city, a whole-number age, a zero-inflated float
    income depending on both, and a yes/no flag."""
    rng = np.random.default_rng(seed)
    city = rng.choice(["Paris", "Lyon", "Nice"], size=n, p=[0.5, 0.3, 0.2])
    age = np.clip(np.round(rng.normal(40, 12, n)), 18, 90).astype(int)
    earns = rng.random(n) < np.where(city == "Paris", 0.6, 0.3)
    income = np.where(earns, np.round(rng.lognormal(10, 0.5, n), 2), 0.0)
    member = np.where(age > 45, "yes", "no")
    return pd.DataFrame({"city": city, "age": age, "income": income, "member": member})


def test_registry_and_unknown_mechanism():
    assert {"aim", "mst", "privbayes", "mwem", "pep"} <= set(mechanisms())
    with pytest.raises(ValueError, match=r"unknown mechanism 'magic'; choose from .*aim.*mst"):
        Synthesizer("magic")


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "1"])
def test_epsilon_must_be_positive(bad):
    with pytest.raises(ValueError, match="epsilon must be a positive number"):
        Synthesizer(epsilon=bad)


def test_fit_and_sample_keep_columns_types_and_values():
    table = people()
    synth = Synthesizer("mst", epsilon=2.0, seed=0).fit(table)
    out = synth.sample(3000)
    assert list(out.columns) == list(table.columns) and len(out) == 3000
    assert set(out["city"].dropna()) <= set(table["city"]) and set(out["member"].dropna()) <= {"yes", "no"}
    assert out["age"].dtype == np.int64  # no missing code: the input had no missing age
    assert out["income"].dtype == float
    lo, hi = table["age"].min(), table["age"].max()
    assert out["age"].dropna().between(lo, hi).mean() > 0.99
    # the zero-inflated column keeps its point mass at zero
    assert abs((out["income"] == 0).mean() - (table["income"] == 0).mean()) < 0.05
    assert out["member"].notna().mean() > 0.95


def test_same_seed_same_output_and_rows_default_to_the_private_count():
    table = people(3000)
    first = Synthesizer("mst", epsilon=2.0, seed=7).fit(table).sample()
    second = Synthesizer("mst", epsilon=2.0, seed=7).fit(table).sample()
    pd.testing.assert_frame_equal(first, second)
    assert abs(len(first) - len(table)) < 200


def test_ledger_spends_the_budget_exactly():
    synth = Synthesizer("mst", epsilon=1.0, delta=1e-9, schema_share=0.25, seed=0).fit(people(3000))
    assert synth.unit == "rho"
    assert synth.total == Fraction(repr(approx_to_zcdp(1.0, 0.75e-9)))
    schema = [c for c in synth.ledger if c.label.startswith("schema of column")]
    assert [c.label for c in schema] == [f"schema of column {n!r}" for n in ("city", "age", "income", "member")]
    assert len({c.amount for c in schema}) == 1  # equal shares
    assert sum(c.amount for c in schema) <= synth.total / 4
    assert synth.total / 4 - sum(c.amount for c in schema) < synth.total * Fraction(1, 10 ** 12)
    assert synth.spent <= synth.total and synth.total - synth.spent < synth.total * Fraction(1, 10 ** 12)


def test_declared_schema_spends_nothing_on_it_and_is_kept():
    synth = Synthesizer("mst", epsilon=1.0, seed=0).fit(people(3000), schema=PEOPLE_SCHEMA)
    assert not any(c.label.startswith("schema") for c in synth.ledger)
    assert synth.total == Fraction(repr(approx_to_zcdp(1.0, 1e-9)))
    assert synth.encoder.domain.shape == (5, 8, 5, 3)
    out = synth.sample(500)
    assert out["age"].dropna().between(18, 90).all() and out["income"].dropna().between(0, 80000).all()


def test_declared_numeric_column_refuses_text():
    table = people(500).astype({"age": object})
    table.loc[17, "age"] = "forty"
    schema = {"columns": {"age": {"kind": "numeric", "bounds": [18, 90]}}}
    with pytest.raises(ValueError, match=r"column 'age': value 'forty' in row 17 is not a number"):
        Synthesizer("mst", seed=0).fit(table[["age", "city"]], schema=schema)


@pytest.mark.parametrize("schema, message", [
    ({"columns": {"a": {"kind": "date"}}}, r"column 'a': \"kind\" must be"),
    ({"columns": {"a": {"kind": "numeric"}}}, r"column 'a': a numeric column needs \"bounds\""),
    ({"columns": {"a": {"kind": "numeric", "bounds": [5, 1]}}}, r"column 'a': bounds must be"),
    ({"columns": {"a": {"kind": "categorical", "categories": []}}}, r"column 'a': a categorical column needs"),
    ({"rows": 3}, r"a schema needs \"columns\""),
])
def test_bad_declared_schemas_are_named(schema, message):
    with pytest.raises(ValueError, match=message):
        declared(schema)


@pytest.mark.parametrize("column, message", [
    (["x"] * 50, r"column 'bad' holds one value \('x'\) in every row"),
    ([None] * 49 + ["?"], r"column 'bad' is missing in all 50 rows"),
])
def test_columns_with_nothing_to_synthesise_are_refused(column, message):
    table = people(50).assign(bad=column)
    with pytest.raises(ValueError, match=message):
        Synthesizer("mst", seed=0).fit(table)


def test_too_few_records_for_a_category_says_so():
    with pytest.raises(ValueError, match=r"column 'city': no value is frequent enough .* at least \d+ records"):
        Synthesizer("mst", epsilon=0.1, seed=0).fit(people(200))


def test_save_and_load_round_trip(tmp_path):
    synth = Synthesizer("mst", epsilon=2.0, seed=3).fit(people(3000))
    synth.save(tmp_path / "model")
    loaded = Synthesizer.load(tmp_path / "model.npz")
    pd.testing.assert_frame_equal(synth.sample(400), loaded.sample(400))
    assert loaded.ledger == synth.ledger and loaded.total == synth.total
    assert loaded.guarantee() == synth.guarantee()


@pytest.mark.parametrize("mechanism", ["privbayes", "aim"])
def test_other_estimates_round_trip(tmp_path, mechanism):
    options = {"rounds": 8} if mechanism == "aim" else {}
    synth = Synthesizer(mechanism, epsilon=2.0, seed=1, **options).fit(people(3000), schema=PEOPLE_SCHEMA)
    synth.save(tmp_path / "m.npz")
    pd.testing.assert_frame_equal(synth.sample(300), Synthesizer.load(tmp_path / "m.npz").sample(300))


def test_load_runs_no_code(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, state=np.array([{"format": "x"}], dtype=object))
    with pytest.raises(ValueError, match="pickle"):
        Synthesizer.load(path)


def test_privbayes_is_pure_with_substitute_neighbours():
    synth = Synthesizer("privbayes", epsilon=2.0, seed=0).fit(people(3000), schema=PEOPLE_SCHEMA)
    assert synth.unit == "epsilon" and synth.total == 2 and not synth.schema_inferred
    assert synth.spent <= 2 and 2 - synth.spent < Fraction(1, 10 ** 12)
    assert "pure" in synth.guarantee()


def test_answer_gives_every_k_way_cell():
    synth = Synthesizer("mst", epsilon=2.0, seed=0).fit(people(3000))
    answers = synth.answer(2)
    assert list(answers.columns) == ["marginal", "cell", "count"]
    assert answers["marginal"].nunique() == 6
    sizes = dict(zip(synth.encoder.domain.attrs, synth.encoder.domain.shape))
    assert len(answers) == sum(sizes[a] * sizes[b] for a, b in
                               [(a, b) for i, a in enumerate(sizes) for b in list(sizes)[i + 1:]])
    per = answers.groupby("marginal")["count"].sum()
    assert np.allclose(per, per.iloc[0])  # one consistent total


def test_reads_parquet_and_headerless_csv(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    table = people(100)
    table.to_parquet(tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(read_table(tmp_path / "t.parquet"), table)
    table.to_csv(tmp_path / "t.csv", index=False, header=False)
    raw = read_table(tmp_path / "t.csv")
    assert list(raw.columns) == ["column_1", "column_2", "column_3", "column_4"] and len(raw) == 100
    table.to_csv(tmp_path / "h.csv", index=False)
    assert list(read_table(tmp_path / "h.csv").columns) == list(table.columns)


def test_a_file_that_is_not_a_table(tmp_path):
    (tmp_path / "x.bin").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(ValueError, match=r"x.bin: not a"):
        read_table(tmp_path / "x.bin")


def test_a_rare_whole_number_code_keeps_its_own_code():
    """A pay band 0..9 whose band 5 holds 3 of 6,000 records: far below the release threshold
    of its value, it still gets a code, and every band comes out as a band of the input."""
    rng = np.random.default_rng(1)
    band = rng.choice([0, 1, 2, 3, 4, 6, 7, 8, 9], 6000, p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.05, 0.04, 0.03, 0.03])
    band[:3] = 5
    table = people(6000).assign(band=band)
    synth = Synthesizer("mst", epsilon=1.0, seed=0).fit(table)
    column = synth.encoder.columns["band"]
    assert column.kind == "numeric" and column.integer and column.edges[0] == 0 and 5 in column.edges[:-1]
    assert column.edges == tuple(range(column.edges[0], column.edges[-1] + 1))
    out = synth.sample()
    assert out.band.dtype.kind == "i" and out.band.between(0, 9).all()


def _one_way_gap(synth, frame) -> float:
    """Records off, summed over every 1-way cell: the coded ``frame`` against the fitted model's
    expected counts for as many records."""
    records = synth.encoder.transform(frame)
    gap = 0.0
    for attr in records.domain.attrs:
        expected = synth.estimate.project([attr]) * len(frame) / synth.estimate.total
        gap += np.abs(records.marginal([attr]) - expected).sum()
    return gap


@pytest.mark.parametrize("mechanism", ["mst", "aim", "privbayes"])
def test_sampling_rounds_the_model_by_default_and_draws_iid_when_asked(mechanism):
    options = {"rounds": 8} if mechanism == "aim" else {}
    table = people(3000)
    rounded = Synthesizer(mechanism, epsilon=2.0, seed=4, **options).fit(table, schema=PEOPLE_SCHEMA)
    drawn = Synthesizer(mechanism, epsilon=2.0, seed=4, sampling="sample", **options).fit(table,
                                                                                           schema=PEOPLE_SCHEMA)
    assert rounded.sampling == "round" and "round" in rounded.estimate.sampling_methods
    # the rounded records' 1-way counts are within about a record per cell and separator value of
    # the model's (9 to 18 records in all, over 21 cells); i.i.d. ones off by sampling error (190-350)
    gap = _one_way_gap(rounded, rounded.sample(3000))
    assert gap < 30 and 5 * gap < _one_way_gap(drawn, drawn.sample(3000))
    with pytest.raises(ValueError, match="sampling must be one of sample, round, got 'exact'"):
        Synthesizer(mechanism, sampling="exact")


def test_sampling_is_saved_with_the_model(tmp_path):
    synth = Synthesizer("mst", epsilon=2.0, seed=3, sampling="sample").fit(people(3000), schema=PEOPLE_SCHEMA)
    synth.save(tmp_path / "m.npz")
    loaded = Synthesizer.load(tmp_path / "m.npz")
    assert loaded.sampling == "sample"
    pd.testing.assert_frame_equal(synth.sample(300), loaded.sample(300))


def test_negative_whole_numbers_cut_at_fractional_edges_stay_whole_unbiased_and_inside_their_bins():
    rng = np.random.default_rng(0)
    x = -rng.integers(1, 61, size=20000)
    table = pd.DataFrame({"x": x, "sign": np.where(x < -30, "low", "high")})
    edges = [-60.5, -45.25, -30.75, -15.5, -0.5]
    schema = {"columns": {"x": {"kind": "numeric", "edges": edges, "missing": False},
                          "sign": {"kind": "categorical", "categories": ["low", "high"], "missing": False}}}
    synth = Synthesizer("mst", epsilon=10.0, seed=0).fit(table, schema=schema)
    out = synth.sample(20000)
    assert out["x"].dtype == np.int64 and out["x"].between(-60, -1).all()
    # each bin's whole numbers, drawn uniformly: the expected mean, from the fitted marginal
    shares = synth.estimate.project(["x"]) / synth.estimate.total
    means = [np.mean(np.arange(np.ceil(a), np.floor(b) + 1 if k == 3 else np.ceil(b)))
             for k, (a, b) in enumerate(zip(edges, edges[1:]))]
    standard_error = out["x"].std() / np.sqrt(len(out))
    assert abs(out["x"].mean() - shares @ means) < 4 * standard_error


def test_adult_keeps_its_zero_inflated_columns(data_dir):
    table = read_table(data_dir / "raw" / "adult" / "adult.data", names=ADULT_NAMES)
    columns = ["age", "education", "sex", "capital-gain", "capital-loss", "hours-per-week", "income"]
    out = Synthesizer("mst", epsilon=1.0, seed=0).fit(table[columns]).sample()
    for name in ("capital-gain", "capital-loss"):
        real, synthetic = (table[name] == 0).mean(), (out[name] == 0).mean()
        assert abs(real - synthetic) < 0.03, (name, real, synthetic)
        assert out[name].dropna().between(0, table[name].max()).all()
    assert set(out["education"].dropna()) <= set(table["education"].str.strip())
    assert math.isclose(len(out), len(table), rel_tol=0.02)


def test_progress_is_off_in_tests_and_shown_when_asked(capsys):
    Synthesizer("mst", epsilon=2.0, seed=0).fit(people(3000)).sample(100)
    assert capsys.readouterr().err == ""
    Synthesizer("mst", epsilon=2.0, seed=0, progress=True).fit(people(3000)).sample(100)
    err = capsys.readouterr().err
    assert "schema" in err and "column" in err
