"""Reports: the shared discretisation of a real and a synthetic table, total variation per
marginal against a brute-force count, the HTML/PNG report and the error-vs-epsilon comparison,
and the ``evaluate`` / ``compare`` commands (exit codes, one-line errors, no partial files)."""
import importlib.util
import re
import sys

import numpy as np
import pandas as pd
import pytest

from ektelo_pgm.cli import main
from ektelo_pgm.errors import InputError
from ektelo_pgm.operators.least_squares import LeastSquares
from ektelo_pgm.operators.reconstruct import PGM
from ektelo_pgm.evaluation import MISSING, OTHER, Discretisation, compare, evaluate, kinds_of
from ektelo_pgm.evaluation.discretisation import edge_label
from ektelo_pgm.evaluation.figures import _cells

from conftest import toy


def table(n=400, seed=0):
    """A raw table: a zero-inflated number, a continuous one, strings with a missing marker."""
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2]).astype(object)
    colour[rng.random(n) < 0.05] = " ?"
    gain = np.where(rng.random(n) < 0.9, 0, rng.integers(1, 10_000, n))
    age = rng.integers(17, 90, n)
    size = np.where(colour == "red", "big", "small")
    return pd.DataFrame({"colour": colour, "gain": gain, "age": age, "size": size})


def brute_tvd(real: pd.DataFrame, fake: pd.DataFrame, columns) -> float:
    """TVD between the two tables' shares of rows on ``columns``, counted by pandas."""
    p = real.groupby(list(columns)).size() / len(real)
    q = fake.groupby(list(columns)).size() / len(fake)
    p, q = p.align(q, fill_value=0)
    return 0.5 * float(np.abs(p - q).sum())


def test_categories_are_numbers_in_numeric_order_then_text_in_alphabetical_order():
    """The same cells in the same order for the same table, whatever the order of its rows and
    Python's string hashing: with text in the order of a set, a report's figures and the last
    digits of its TVDs changed from run to run."""
    text = [f"c{k:02d}" for k in range(20)]
    column = list(np.random.default_rng(0).permutation(text)) + ["10", "9", "2.5"]
    coding = Discretisation(pd.DataFrame({"c": column}), kinds={"c": "categorical"})
    assert coding.categories["c"] == ["2.5", "9", "10"] + text


def test_numeric_columns_are_cut_at_the_real_quantiles_keeping_a_point_mass():
    real = table()
    coding = Discretisation(real, bins=8)
    assert set(coding.edges) == {"gain", "age"} and set(coding.categories) == {"colour", "size"}
    assert coding.edges["gain"][0] == 0  # 90% zeros: "<= 0" is a bin of its own
    codes = coding.codes(pd.DataFrame({"colour": ["red", "?", None, "purple"], "gain": [0, 5, -3, "lots"],
                                       "age": [17, 200, 50, np.nan], "size": ["big"] * 4}))
    labels = {c: coding.labels(c) for c in coding.columns}
    decoded = [[labels[c][v] for c, v in zip(coding.columns, row)] for row in codes.records]
    assert [row[0] for row in decoded] == ["red", MISSING, MISSING, OTHER]  # missing markers; a new colour
    assert [row[1] for row in decoded][:3] == ["≤ 0", labels["gain"][1], "≤ 0"]  # below the range: first bin
    assert decoded[3][1] == OTHER  # not a number
    assert decoded[1][2] == labels["age"][-3] and decoded[3][2] == MISSING  # beyond the range: last bin


def test_total_variation_matches_a_brute_force_count_on_every_marginal():
    real, fake = table(400, 0), table(300, 1)
    coding = Discretisation(real, bins=4)
    binned = {name: pd.DataFrame({c: coding.codes(frame).records[:, j] for j, c in enumerate(coding.columns)})
              for name, frame in (("real", real), ("fake", fake))}
    evaluation = evaluate(real, fake, bins=4, orders=(1, 2, 3))
    assert len(evaluation.errors) == 4 + 6 + 4
    for marginal, tvd in zip(evaluation.errors["marginal"], evaluation.errors["tvd"]):
        assert tvd == pytest.approx(brute_tvd(binned["real"], binned["fake"], marginal), abs=1e-12)
    for k in (1, 2, 3):  # worst first within each order
        order = evaluation.errors[evaluation.errors["order"] == k]["tvd"].to_numpy()
        assert np.all(np.diff(order) <= 0)


def test_identical_tables_score_zero_and_disjoint_ones_one():
    real = table()
    assert evaluate(real, real.sample(frac=1, random_state=0)).errors["tvd"].max() == pytest.approx(0, abs=1e-12)
    other = real.assign(colour="purple", size="huge")
    errors = evaluate(real, other).errors.set_index("marginal")["tvd"]
    assert errors[("colour",)] == pytest.approx(1) and errors[("colour", "age")] == pytest.approx(1)


def test_a_schema_fixes_column_kinds_and_bad_ones_are_named(tmp_path):
    real = table()
    assert set(Discretisation(real, kinds={"age": "categorical"}).categories) == {"colour", "size", "age"}
    with pytest.raises(ValueError, match="column 'colour' is declared numeric but holds '(red|green|blue)'"):
        Discretisation(real, kinds={"colour": "numeric"})
    with pytest.raises(ValueError, match=r"schema columns \['height'\]"):
        Discretisation(real, kinds={"height": "numeric"})
    path = tmp_path / "schema.json"
    path.write_text('{"gain": "categorical"}')
    assert kinds_of(str(path)) == {"gain": "categorical"}
    assert kinds_of({"columns": {"gain": {"kind": "numeric", "bins": 8}}}) == {"gain": "numeric"}
    with pytest.raises(ValueError, match="column 'gain' has kind 'text'"):
        kinds_of({"gain": "text"})
    path.write_text("[1]")  # evaluate --schema on a JSON list ended in a TypeError traceback
    with pytest.raises(InputError, match=r"schema.json: not a JSON schema \(a JSON list, not an object\)"):
        kinds_of(str(path))


def test_the_error_table_names_the_worst_marginals():
    real = table()
    fake = real.assign(gain=np.random.default_rng(0).integers(0, 10_000, len(real)))  # zeros lost
    evaluation = evaluate(real, fake)
    assert evaluation.errors.iloc[0]["marginal"] == ("gain",)
    text = evaluation.text()
    assert "worst 1-way: gain" in text and f"{evaluation.errors.iloc[0]['tvd']:.3f}" in text
    summary = evaluation.summary().set_index("order")
    assert summary.loc[2, "marginals"] == 6 and summary.loc[1, "max"] == evaluation.errors["tvd"].iloc[0]


def test_html_report_is_one_self_contained_file_and_pngs_are_written(tmp_path):
    pytest.importorskip("matplotlib", reason="the report's figures need matplotlib (the 'report' extra)",
                        exc_type=ImportError)
    real = table()
    out, stem = tmp_path / "report.html", tmp_path / "figures" / "r.png"
    stem.parent.mkdir()
    evaluate(real, table(300, 1), out=out, png=stem)
    page = out.read_text()
    assert page.count("data:image/png;base64,") == 4 and "src='http" not in page
    assert "Worst" not in page or "colour" in page
    assert "not private" in page
    written = sorted(p.name for p in stem.parent.iterdir())
    assert written == ["r-errors.png", "r-oneway.png", "r-oneway_all.png", "r-twoway.png"]
    for name in written:
        data = (stem.parent / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_without_matplotlib_the_figures_refuse_clearly_before_any_work(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'ektelo_pgm\[report\]'"):
        evaluate(table(), table(), out=tmp_path / "r.html")
    assert list(tmp_path.iterdir()) == []
    assert evaluate(table(), table()).errors["tvd"].max() == 0  # the numbers need no matplotlib


def test_compare_runs_every_operator_on_shared_measurements_and_plots_error_vs_epsilon(tmp_path):
    pytest.importorskip("matplotlib", reason="the comparison figure needs matplotlib (the 'report' extra)",
                        exc_type=ImportError)
    out = tmp_path / "compare.png"
    rows = compare(toy(2000), [0.05, 50.0], {"least-squares": LeastSquares(), "pgm": PGM(iters=200)}, k=2,
                   trials=2, rng=0, out=out)
    assert len(rows) == 2 * 2 * 2 and rows["refused"].isna().all()
    means = rows.groupby(["operator", "epsilon"])["error"].mean()
    for name in ("least-squares", "pgm"):
        assert means[(name, 50.0)] < means[(name, 0.05)] / 5  # far less noise, far less error
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_evaluate_command_prints_the_table_and_writes_the_report(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the report's figures need matplotlib (the 'report' extra)",
                        exc_type=ImportError)
    real, fake = tmp_path / "real.csv", tmp_path / "fake.csv"
    table().to_csv(real, index=False)
    table(300, 1).to_csv(fake, index=False)
    assert main(["evaluate", str(real), str(fake), "-o", str(tmp_path / "r.html"), "--three-way"]) == 0
    out = capsys.readouterr().out
    assert "order  marginals" in out and "worst 3-way:" in out and "wrote" in out
    assert (tmp_path / "r.html").stat().st_size > 10_000


@pytest.mark.parametrize("problem, message", [
    ("missing", "nowhere.csv: no such file"),
    ("columns", "the synthetic table has none of the real table's columns"),
    ("schema", "column 'colour' is declared numeric but holds 'green'"),
])
def test_evaluate_command_bad_input_is_one_line_exit_1_and_no_file(tmp_path, capsys, problem, message):
    pytest.importorskip("matplotlib", reason="-o needs matplotlib (the 'report' extra)",
                        exc_type=ImportError)
    real, fake = tmp_path / "real.csv", tmp_path / "fake.csv"
    table().to_csv(real, index=False)
    fake_table = table(300, 1)
    (fake_table.rename(columns=str.upper) if problem == "columns" else fake_table).to_csv(fake, index=False)
    args = ["evaluate", str(real), str(tmp_path / "nowhere.csv") if problem == "missing" else str(fake),
            "-o", str(tmp_path / "r.html")]
    if problem == "schema":
        (tmp_path / "schema.json").write_text('{"colour": "numeric"}')
        args += ["--schema", str(tmp_path / "schema.json")]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ektelo-pgm: error: ") and message in err
    assert not (tmp_path / "r.html").exists()


def test_compare_command_writes_the_figure(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the comparison figure needs matplotlib (the 'report' extra)",
                        exc_type=ImportError)
    out = tmp_path / "c.html"
    assert main(["compare", "--records", "2000", "--attrs", "sex,race,income", "--epsilons", "0.5", "5",
                 "--reconstruct", "least-squares", "pgm", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "epsilon 0.5:" in text and "epsilon 5:" in text and "| pgm |" in text
    assert "data:image/png;base64," in out.read_text()
    assert main(["compare", "--records", "500", "--reconstruct", "magic", "-o", str(out)]) == 1


def test_the_report_says_what_to_do_about_columns_far_from_the_real_ones(tmp_path, capsys):
    """A synthesizer fitted with a thin schema share: the report names each column left out or
    far from the real one, with the cause its schema shows and the remedy, under the fit's
    settings; columns left out are compared on what the synthetic table has."""
    from ektelo_pgm.synthesizer import Synthesizer

    rng = np.random.default_rng(0)
    n = 6000
    real = pd.DataFrame({"id": [f"R{i:05d}" for i in range(n)],
                         "town": rng.choice([f"t{i:02d}" for i in range(60)], n),  # 100 rows each: too rare
                         "amount": np.round(rng.lognormal(6, 2.5, n)),  # seven decades, thin at both ends
                         "flag": rng.choice(["yes", "no"], n)})
    model = Synthesizer("mst", epsilon=1.0, schema_share=0.02, seed=0).fit(real)
    synthetic = model.sample()
    evaluation = evaluate(real, synthetic, model=model)
    assert evaluation.release.startswith(model.settings() + "; ledger: ") and "mst, (1, 1e-09)-DP" in evaluation.release
    advice = {a.column: a for a in evaluation.advice}
    assert list(advice) == ["id", "town", "amount"]  # left out, then worst first; flag is close
    assert advice["id"].tvd is None and advice["id"].cause.startswith("no value is frequent enough")
    assert advice["town"].tvd is None and "--public-categories" in advice["town"].remedy
    amount = model.encoder.columns["amount"]  # whole numbers: the range the note gives ends at the largest written
    assert advice["amount"].tvd > 0.1 and amount.integer and advice["amount"].cause.startswith(
        f"its range [{edge_label(amount.edges[0])}, {edge_label(amount.largest)}] clips")
    assert "declare its bounds" in advice["amount"].remedy and "--schema-share" in advice["amount"].remedy
    model.save(tmp_path / "m.npz")
    real.to_csv(tmp_path / "real.csv", index=False)
    synthetic.to_csv(tmp_path / "fake.csv", index=False)
    assert main(["evaluate", str(tmp_path / "real.csv"), str(tmp_path / "fake.csv"), "--model",
                 str(tmp_path / "m.npz")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("release: mst, (1, 1e-09)-DP") and "what to do" in out and "id (not in the synthetic" in out


def test_the_cause_of_a_column_whose_rare_values_took_its_fallback_names_it():
    """Planes' makers: 9% of the real rows hold makers too rare to release, written as the
    category of the largest noisy count; the report named "the mechanism's noise"."""
    from ektelo_pgm.columns import CategoricalColumn
    from ektelo_pgm.evaluation.report import _model_cause

    column = CategoricalColumn("maker", ("AIRBUS", "BOEING"), False, fallback="BOEING")
    real = pd.Series(["AIRBUS"] * 30 + ["BOEING"] * 61 + ["CESSNA", "PIPER", "MOONEY"] * 3)
    synthetic = pd.Series(["AIRBUS"] * 30 + ["BOEING"] * 70)
    cause, remedy = _model_cause(column, real, synthetic, 0.09, False)
    assert cause == "categories too rare to release, 9% of the real rows, are written as 'BOEING'"
    assert "--public-categories" in remedy
    assert _model_cause(column, real[:91], synthetic, 0.09, False) is None  # every real maker released


def test_a_column_of_few_numbers_drawn_inside_bins_is_blamed_on_the_values_it_lacks():
    """mathpnl's cpi: 7 prices of 550 records each, none released (a threshold of 1,065), so drawn
    inside bins, none a real price: compared value by value, 1-way TVD 1.000, which the report put
    down to its bins ("too coarse", 7 of them) and before that to a range clipping 14% of them.
    Either holds only where it can account for the gap: a clip for half of it at least, bins only
    where the column is compared in bins.  The cause is then read from the synthetic table."""
    from types import SimpleNamespace

    from ektelo_pgm.columns import NumericColumn
    from ektelo_pgm.evaluation.report import _model_cause, advise

    column = NumericColumn("cpi", (1.44, 1.48, 1.52, 1.56, 1.6, 1.65, 1.7), False, False)
    prices = (1.403, 1.445, 1.482, 1.524, 1.569, 1.605, 1.63)
    real = pd.Series(np.repeat(prices, 550))
    synthetic = pd.Series(np.random.default_rng(0).uniform(1.44, 1.7, 3850))
    assert _model_cause(column, real, synthetic, 1.0, False) is None
    assert _model_cause(column, real, synthetic, 1.0, True)[0] == "bins too coarse for its range (6 over [1.44, 1.7])"
    assert _model_cause(column, real, synthetic, 0.2, False)[0] == "its range [1.44, 1.7] clips 14% of the real values"
    tables = pd.DataFrame({"cpi": real}), pd.DataFrame({"cpi": synthetic})
    model = SimpleNamespace(encoder=SimpleNamespace(columns={"cpi": column}), left_out={})
    (advice,) = advise(evaluate(*tables), *tables, (), model=model)
    assert advice.tvd == 1.0 and advice.cause.startswith("values the real table lacks are 100% of the synthetic rows")


def test_with_the_model_times_are_compared_on_the_time_axis_and_chosen_columns_not_at_all():
    """A timestamp column (every value distinct: as text, no two tables share a category) is
    compared on the time axis; the columns the fit was told to drop or regenerate are not
    compared and get no advice."""
    from ektelo_pgm.synthesizer import Synthesizer

    rng = np.random.default_rng(1)
    n = 5000
    stamps = pd.Timestamp("2017-01-01") + pd.to_timedelta(rng.integers(0, 365 * 86400, n), unit="s")
    real = pd.DataFrame({"row": np.arange(n), "note": [f"n{i}" for i in range(n)],
                         "at": stamps.strftime("%Y-%m-%dT%H:%M:%SZ"), "kind": rng.choice(["a", "b"], n)})
    model = Synthesizer("mst", epsilon=2.0, seed=0, drop=["note"], regenerate=["row"]).fit(real)
    synthetic = model.sample()
    evaluation = evaluate(real, synthetic, model=model)
    assert evaluation.discretisation.columns == ["at", "kind"] and evaluation.advice == ()
    assert "at" in evaluation.discretisation.edges  # numeric, on the time axis, its bins shown as times
    assert evaluation.discretisation.labels("at")[1].startswith("(2017-")
    assert evaluation.errors.query("order == 1")["tvd"].max() < 0.05


def test_with_the_model_its_columns_of_codes_are_compared_as_categories():
    """Number-like codes the model writes as categories, rare ones as its other label, are compared
    by value: as numbers, evaluate stopped ("'movieId' is numeric but the synthetic table holds
    values that are not numbers")."""
    from ektelo_pgm.synthesizer import Synthesizer

    rng = np.random.default_rng(2)
    n = 6000
    codes = np.concatenate([rng.choice(np.arange(10001, 10021), n - 1500), 20000 + np.arange(1500)])
    real = pd.DataFrame({"zip_code": codes, "kind": rng.choice(["a", "b"], n)})
    model = Synthesizer("mst", epsilon=1.0, seed=0).fit(real)
    synthetic = model.sample()
    assert model.encoder.columns["zip_code"].other == OTHER and (synthetic["zip_code"] == OTHER).any()
    evaluation = evaluate(real, synthetic, model=model)
    assert "zip_code" in evaluation.discretisation.categories
    assert evaluation.quality.column_shapes.set_index("column").loc["zip_code", "metric"] == "TVComplement"


def test_without_the_model_ids_the_synthetic_table_writes_as_categories_are_compared_by_value(tmp_path):
    """No model: a column of numbers (ids) that the synthetic table writes with its other label for
    the rare ones is compared by value and its advice names the label; evaluate used to stop
    ("'movieId' is numeric but the synthetic table holds values that are not numbers (date/times:
    ...)")."""
    rng = np.random.default_rng(3)
    n = 4000
    real = pd.DataFrame({"movieId": rng.integers(1, 3000, n), "rating": rng.choice([1.0, 2.5, 4.0], n)})
    fake = real.copy()
    fake["movieId"] = np.where(np.arange(n) < 0.9 * n, OTHER, fake["movieId"].astype(str))
    fake.to_csv(tmp_path / "fake.csv", index=False)
    real.to_csv(tmp_path / "real.csv", index=False)
    evaluation = evaluate(tmp_path / "real.csv", tmp_path / "fake.csv")
    assert "movieId" in evaluation.discretisation.categories
    assert evaluation.quality.column_shapes.set_index("column").loc["movieId", "metric"] == "TVComplement"
    advice = {a.column: a for a in evaluation.advice}
    assert "values the real table lacks are 90% of the synthetic rows (most often '(other)')" in advice["movieId"].cause
    assert "rating" not in advice


def test_a_pair_of_thousands_of_categories_is_counted_over_the_cells_present(tmp_path):
    """Two columns of 11,600 values each (134 million cells; movielens' movieId x title has 80
    million: over the size limit of a marginal, where evaluate stopped): the pair's TVD,
    ContingencySimilarity and Cramér's V are those of the cells present, as pandas and scipy
    count them; the figures draw it."""
    from scipy.stats.contingency import association

    rng = np.random.default_rng(3)
    n = 40000
    first = rng.integers(0, 12000, n)
    real = pd.DataFrame({"a": [f"a{i}" for i in first], "b": [f"b{i}" for i in (first + rng.integers(0, 3, n))]})
    fake = pd.DataFrame({"a": [f"a{i}" for i in rng.integers(0, 12000, n)],
                         "b": real["b"].sample(frac=1, random_state=0)})
    evaluation = evaluate(real, fake)
    tvd = evaluation.errors.set_index("marginal").loc[[("a", "b")], "tvd"].iloc[0]
    assert tvd == pytest.approx(brute_tvd(real, fake, ["a", "b"]), abs=1e-12)
    pair = evaluation.quality.column_pair_trends.iloc[0]
    assert pair["score"] == pytest.approx(1 - tvd, abs=1e-12)
    assert pair["real_association"] == pytest.approx(association(pd.crosstab(real["a"], real["b"]).to_numpy(),
                                                                 method="cramer", correction=False), abs=1e-9)
    if importlib.util.find_spec("matplotlib") is not None:  # the figures draw the pair's largest cells
        evaluate(real, fake, out=tmp_path / "report.html")
        assert "data:image/png;base64," in (tmp_path / "report.html").read_text()


def test_without_the_model_the_real_tables_columns_of_times_are_compared_on_the_time_axis():
    """Dates and times of day that the real table holds (a stray text among a hundred, a blank)
    are compared as times without the model: as text, each a category of its own, the synthetic
    times of a faithful table had nothing in common with the real ones (1-way TVD near 1)."""
    n = 3000

    def times(seed):
        r = np.random.default_rng(seed)
        stamps = pd.Timestamp("2016-01-01") + pd.to_timedelta(r.integers(0, 365 * 86400, n), unit="s")
        return pd.DataFrame({"day": stamps.strftime("%m/%d/%Y %H:%M:%S"), "clock": stamps.strftime("%H:%M:%S"),
                             "kind": r.choice(["a", "b"], n)})

    real, synthetic = times(0), times(1)
    real.loc[:9, "clock"] = ["unknown"] * 9 + ["?"]
    evaluation = evaluate(real, synthetic)
    assert evaluation.discretisation.time_formats == {"day": "%m/%d/%Y %H:%M:%S", "clock": "%H:%M:%S"}
    tvd = evaluation.errors.query("order == 1").set_index("marginal")["tvd"]
    assert tvd[("day",)] < 0.1 and tvd[("clock",)] < 0.1  # two samples of 3,000: about 0.04 apart
    assert re.fullmatch(r"\(\d\d:\d\d:\d\d, \d\d:\d\d:\d\d\]", evaluation.discretisation.labels("clock")[1])
    assert evaluate(real, synthetic, schema={"clock": "categorical"}).errors.query("order == 1").set_index(
        "marginal").loc[[("clock",)], "tvd"].item() > 0.9  # declared categories stay categories
    real.loc[:99, "clock"] = "unknown"  # past the schema's share of text: a column of text
    assert "clock" not in evaluate(real, synthetic).discretisation.time_formats


def test_without_the_model_numbers_written_with_symbols_are_compared_as_numbers():
    """Prices written as $1,234.50 and shares as 12.5% are compared as numbers, at the real
    table's quantiles: as text, each value a category of its own, two samples of one table had
    almost nothing in common (1-way TVD near 1)."""
    n = 3000

    def table(seed):
        r = np.random.default_rng(seed)
        return pd.DataFrame({"price": [f"${x:,.2f}" for x in r.lognormal(7.0, 1.0, n)],
                             "share": [f"{x:.1f}%" for x in r.uniform(0, 100, n)]})

    real, synthetic = table(0), table(1)
    evaluation = evaluate(real, synthetic)
    assert set(evaluation.discretisation.edges) == {"price", "share"}
    tvd = evaluation.errors.query("order == 1").set_index("marginal")["tvd"]
    assert tvd[("price",)] < 0.1 and tvd[("share",)] < 0.1  # two samples of 3,000: about 0.04 apart
    assert evaluate(real, synthetic, schema={"price": "categorical"}).errors.query("order == 1").set_index(
        "marginal").loc[[("price",)], "tvd"].item() > 0.9  # declared categories stay categories


def test_a_clipped_column_of_dates_is_named_with_dates():
    """Without the model, a column of dates whose synthetic values stop short of the real ones
    is said to be clipped to a range of dates (the polls' start dates: [1468195200, 1765756800])."""
    rng = np.random.default_rng(2)
    days = pd.Timestamp("2015-11-01") + pd.to_timedelta(rng.integers(0, 370, 4000), unit="D")
    real = pd.DataFrame({"start": days.strftime("%Y-%m-%d"), "kind": rng.choice(["a", "b"], 4000)})
    synthetic = real.assign(start=np.maximum(days, pd.Timestamp("2016-07-11")).strftime("%Y-%m-%d"))
    advice = {a.column: a for a in evaluate(real, synthetic).advice}
    assert advice["start"].cause.startswith("the synthetic values stay within [2016-07-11, 2016-11-0")


def test_whole_numbers_written_with_a_decimal_point_are_the_categories_written_without():
    """A column of codes that a writer spelled ``3.0`` (R and pandas, in a column with blanks)
    and the synthesizer ``3`` is one column to the report: on the text, every score said the two
    tables had nothing in common (anes' educat: 1-way TVD 1.000, overall quality 0.36)."""
    rng = np.random.default_rng(3)
    codes = rng.choice([1, 2, 3, 4], 4000, p=[0.1, 0.2, 0.3, 0.4])
    real = pd.DataFrame({"educat": [f"{c}.0" for c in codes], "side": rng.choice(["l", "r"], 4000)})
    real.loc[:99, "educat"] = "NA"
    synthetic = real.assign(educat=[f"{c}" for c in codes])
    synthetic.loc[:99, "educat"] = ""
    evaluation = evaluate(real, synthetic)
    assert evaluation.discretisation.labels("educat") == ["1", "2", "3", "4", MISSING, OTHER]
    assert evaluation.errors["tvd"].max() == pytest.approx(0.0) and evaluation.advice == ()
    assert evaluation.quality.score == pytest.approx(1.0)


def test_figures_order_categories_that_are_numbers_numerically():
    """Codes 1..12 as categories are drawn 1, 2, ..., 12, not by frequency; text categories by
    frequency."""
    rng = np.random.default_rng(0)
    real = pd.DataFrame({"month": rng.choice(np.arange(1, 13), 3000, p=np.arange(1, 13) / 78),  # 12 most often
                         "colour": rng.choice(["red", "green", "blue"], 3000, p=[0.2, 0.3, 0.5])})
    evaluation = evaluate(real, real.sample(frac=1.0, random_state=1), schema={"month": "categorical"})
    p, q = evaluation.marginals(("month",))
    labels = evaluation.discretisation.labels("month")
    shown = _cells(evaluation.discretisation, "month", p, q, 24)
    assert [labels[i] for i in shown] == [str(m) for m in range(1, 13)]
    p, q = evaluation.marginals(("colour",))
    labels = evaluation.discretisation.labels("colour")
    assert [labels[i] for i in _cells(evaluation.discretisation, "colour", p, q, 24)] == ["blue", "green", "red"]


def test_the_report_opens_with_the_quality_scores_and_the_worst_columns():
    real = table()
    fake = real.assign(gain=np.random.default_rng(0).integers(0, 10_000, len(real)))  # zeros lost
    evaluation = evaluate(real, fake)
    shapes = evaluation.quality.column_shapes.set_index("column")["score"]
    assert shapes["gain"] < 0.2 and shapes["colour"] == pytest.approx(1.0) and shapes["age"] == pytest.approx(1.0)
    lines = evaluation.text().splitlines()
    assert lines[0].startswith("release: not given") and lines[2].startswith("quality (SDMetrics")
    assert lines[3].startswith("reference, the real table with its columns shuffled apart (seed 0;")
    assert lines[4].startswith("worst columns: gain KSComplement") and "give a real holdout" in lines[6]
    assert 0 <= evaluation.quality.score <= 1


def test_the_quality_scores_do_not_depend_on_the_column_order():
    """A table whose first column holds numbers (adult's age, a column of times) is scored as with
    a text column first: the missing markers are read in the text columns alone (reading them
    once made every value missing, and every score NaN, when a number came first)."""
    real = table()
    fake = real.assign(gain=np.random.default_rng(0).integers(0, 10_000, len(real)))
    order = ["age", "colour", "gain", "size"]
    first, numbers_first = evaluate(real, fake).quality, evaluate(real[order], fake[order]).quality
    assert np.isfinite(numbers_first.score) and numbers_first.score == pytest.approx(first.score)
    shapes = numbers_first.column_shapes.set_index("column")["score"]
    assert shapes["age"] == pytest.approx(1.0) and shapes["gain"] < 0.2


def test_a_holdout_adds_the_privacy_checks_and_a_target_the_efficacy(tmp_path):
    pytest.importorskip("sklearn", reason="machine-learning efficacy needs scikit-learn (the 'ml' extra)")
    train, holdout = table(600, 0), table(300, 1)
    with pytest.raises(ValueError, match="needs a real holdout"):
        evaluate(train, train, target="size")
    evaluation = evaluate(train, train.sample(frac=1.0, random_state=0), holdout=holdout, target="size")
    exact = evaluation.disclosure.table.set_index("statistic").loc["exact-match share"]
    assert exact["synthetic"] == 1.0 and exact["holdout"] < 1.0  # a copy of the training part: every row matches
    assert set(evaluation.efficacy.table["model"]) == {"linear", "random forest", "gradient boosting"}
    text = evaluation.text()
    assert "machine learning, target size" in text and "privacy checks (heuristics, not the DP guarantee)" in text
    train.to_csv(tmp_path / "train.csv", index=False)
    holdout.to_csv(tmp_path / "holdout.csv", index=False)
    assert main(["evaluate", str(tmp_path / "train.csv"), str(tmp_path / "train.csv"), "--holdout",
                 str(tmp_path / "holdout.csv"), "--target", "size"]) == 0


def test_without_a_model_the_cause_is_read_from_the_synthetic_table():
    """No model: each column far from the real one gets the cause its synthetic values show (a
    quarter of the rows the other label, blanks in a complete column, numbers clipped at a range
    narrower than the real one, a single value), and only a gap spread over many cells is put
    down to the mechanism's noise."""
    rng = np.random.default_rng(0)
    n = 5000
    real = pd.DataFrame({"town": rng.choice([f"t{i}" for i in range(8)], n),
                         "amount": np.round(rng.lognormal(5, 1, n), 2),
                         "hours": rng.integers(0, 100, n).astype(float),
                         "rooms": rng.integers(1, 9, n),
                         "flag": rng.choice(["yes", "no"], n),
                         "age": rng.integers(18, 90, n)})
    fake = real.sample(frac=1.0, random_state=1).reset_index(drop=True)
    other = np.arange(n) < 0.24 * n  # the rows are shuffled: any quarter
    fake["town"] = np.where(other, "(other)", fake["town"])
    fake["amount"] = np.minimum(fake["amount"], np.quantile(real["amount"], 0.75))  # the top quarter clipped
    fake["hours"] = np.where(np.arange(n) % 5 == 0, np.nan, fake["hours"])  # a complete column gains blanks
    fake["flag"] = "no"
    fake["age"] = np.round(rng.triangular(18, 53.5, 89, n))  # every bin a little off
    evaluation = evaluate(real, fake, schema={"rooms": "categorical"})
    advice = {a.column: a for a in evaluation.advice}
    assert set(advice) == {"town", "amount", "hours", "flag", "age"}  # rooms is as real
    assert "values the real table lacks are 24% of the synthetic rows (most often '(other)')" in advice["town"].cause
    assert "--public-categories" in advice["town"].remedy
    assert "25% of the real values: clipped" in advice["amount"].cause and "bounds" in advice["amount"].remedy
    assert advice["hours"].cause == "blanks are 20% of the synthetic rows against 0% of the real ones"
    assert advice["flag"].cause == "the synthetic column holds one value, 'no'"
    assert advice["age"].cause.startswith("the gap is spread over") and "noise" in advice["age"].remedy
    assert not any("noise" in a.remedy for name, a in advice.items() if name != "age")
    assert "causes read from the synthetic table" in evaluation.text()


def test_with_the_model_the_report_states_the_release_and_its_ledger(tmp_path, capsys):
    """The model's mechanism, epsilon and delta, and what its ledger holds: every charge, summed
    by the step that spent it, in the budget's unit."""
    from ektelo_pgm.synthesizer import Synthesizer

    real = table(2000)
    model = Synthesizer("mst", epsilon=1.0, seed=0).fit(real)
    evaluation = evaluate(real, model.sample(), model=model)
    settings, ledger = evaluation.release.split("; ledger: ")
    assert settings == model.settings() and settings.startswith("mst, (1, 1e-09)-DP")
    assert ledger.startswith(f"rho {float(model.spent):.6g} spent of {float(model.total):.6g}: schema ")
    charges = [int(part.split("(")[1].split(" ")[0]) for part in ledger.split(": ", 1)[1].split("), ")]
    assert sum(charges) == len(model.ledger) and "measurements" in ledger and "selection" in ledger
    model.save(tmp_path / "m.npz")
    real.to_csv(tmp_path / "real.csv", index=False)
    model.sample().to_csv(tmp_path / "fake.csv", index=False)
    assert main(["evaluate", str(tmp_path / "real.csv"), str(tmp_path / "fake.csv"), "--model",
                 str(tmp_path / "m.npz")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"release: {evaluation.release}"


def test_the_reference_is_the_table_evaluated_with_its_columns_shuffled_apart():
    """The reference is measured on the real table evaluated, its columns permuted each on its
    own with a fixed seed: exact 1-way marginals, its 2-way TVDs those of the shuffled table
    counted by pandas, its scores those of the shuffled table scored as a synthetic one; another
    table, another reference."""
    from ektelo_pgm.evaluation import quality
    from ektelo_pgm.evaluation.report import shuffled_apart

    real = table(600)
    fake = real.assign(gain=np.random.default_rng(0).integers(0, 10_000, len(real)))
    evaluation = evaluate(real, fake)
    shuffled = shuffled_apart(real)
    assert (shuffled.index == real.index).all() and not shuffled.equals(real)
    for name in real.columns:  # each column a permutation of itself
        assert sorted(map(str, shuffled[name])) == sorted(map(str, real[name]))
    assert shuffled_apart(real).equals(shuffled)  # seeded
    errors = evaluation.errors.set_index("marginal")
    assert (errors.loc[errors["order"] == 1, "shuffled"] == 0).all()
    coded = lambda frame: pd.DataFrame(evaluation.discretisation.codes(frame).records, columns=list(real.columns))
    assert errors.loc[[("colour", "size")], "shuffled"].item() == pytest.approx(
        brute_tvd(coded(real), coded(shuffled), ("colour", "size")))
    scored = evaluate(real, shuffled).quality
    assert evaluation.reference.score == pytest.approx(scored.score)
    assert evaluation.reference.column_pair_trends_score == pytest.approx(scored.column_pair_trends_score)
    text = evaluation.text()
    assert "raw Adult" not in text and f"column pair trends {scored.column_pair_trends_score:.3f}" in text
    assert "columns shuffled apart" in text and "seed 0" in text
    other = evaluate(real.assign(size=np.random.default_rng(1).choice(["big", "small"], len(real))), fake)
    assert other.reference.column_pair_trends_score != pytest.approx(evaluation.reference.column_pair_trends_score)


def test_pair_trends_that_count_no_pair_are_said_in_words():
    """SDMetrics counts a pair's trend only where the real pair is associated; a table of
    independent columns has none, and the headline said "column pair trends nan"."""
    rng = np.random.default_rng(0)
    real = pd.DataFrame({"a": rng.choice(["x", "y"], 500), "b": rng.normal(0, 1, 500), "c": rng.integers(0, 5, 500)})
    evaluation = evaluate(real, real.sample(frac=1.0, random_state=1, ignore_index=True))
    assert np.isnan(evaluation.quality.column_pair_trends_score)
    text = evaluation.text()
    assert "nan" not in text.split("worst columns")[0]
    assert text.count("column pair trends none counted (no pair of the real table associated enough)") == 2
