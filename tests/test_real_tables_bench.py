"""benchmarks/real_tables.py: the grid of sides, mechanisms and epsilons it runs, and the values a
real column cannot hold that it counts in a synthetic table."""
import sys
import types
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

pd = pytest.importorskip("pandas")
import real_tables  # noqa: E402


def test_values_a_real_column_cannot_hold_are_counted():
    hours = pd.Series(["2013-01-01T05:00:00Z", "2013-01-02T06:00:00Z", "2013-01-03T07:00:00Z"])
    real = pd.DataFrame({"count": [1, 2, 3], "rate": [0.5, 1.5, 2.0], "time": hours, "kind": ["a", "b", None]})
    synthetic = pd.DataFrame({
        "count": [2.5, 4, 1, np.nan],  # a fraction in a column of whole numbers, one beyond the range
        "rate": [0.75, 1.0, 1.5, 2.0],  # fractions inside the range: fine
        "time": ["2013-01-01T05:00:00Z", "2013-01-01T05:30:07Z", "soon", None],  # off the hour, not a date
        "kind": ["a", "c", "c", "(other)"]})  # a category the real column lacks, twice; the (other) cell
    columns = [{"name": "count", "kind": "numeric"}, {"name": "rate", "kind": "numeric"},
               {"name": "time", "kind": "date", "format": "%Y-%m-%dT%H:%M:%SZ"},
               {"name": "kind", "kind": "categorical"}]
    result = real_tables.evaluate(real, synthetic, columns, bins=2)
    assert {c["column"]: c["impossible"] for c in result["columns"]} == {"count": 2, "rate": 0, "time": 2, "kind": 2}
    assert result["impossible"] == 6 and result["other"] == 1  # the (other) cell says a category was not released
    assert result["blanks_gained"] == ["count", "time"]  # blanks where the real column has none
    few = pd.DataFrame({"count": [1] * 199 + [np.nan], "rate": [1.0] * 200, "time": hours[[0] * 200],
                        "kind": ["a"] * 200})  # one blank in 200: under issue 27's slack, still a blank gained
    assert real_tables.evaluate(pd.concat([real] * 67), few, columns, bins=2)["blanks_gained"] == ["count"]


def test_a_column_left_out_is_counted_apart_from_the_columns_gaining_blanks():
    real = pd.DataFrame({"count": [1, 2, 3, 4], "kind": ["a", "b", "a", "b"]})
    synthetic = pd.DataFrame({"count": [1, 2, np.nan, 4]})  # "kind" left out, as ours says in a note
    columns = [{"name": "count", "kind": "numeric"}, {"name": "kind", "kind": "categorical"}]
    result = real_tables.evaluate(real, synthetic, columns, bins=2)
    assert result["blanks_gained"] == ["count"]
    run = {"side": "ours", "mechanism": "aim", "table": "t", "variant": "as-is", "seed": 0, "epsilon": 1.0,
           "status": "ok", "cpu": 1.0, **result}
    header, _, row = real_tables.peers_table([run], ["t"]).splitlines()
    cells = dict(zip(header.split(" | "), row.split(" | ")))
    assert cells["columns gaining blanks"] == "1: count" and cells["columns left out"] == "1: kind"


def test_the_grid_runs_every_epsilon_and_each_peer_its_mechanisms():
    manifest = {"t": {"columns": [{"name": "x", "kind": "numeric"}]}}
    args = types.SimpleNamespace(seeds=1, epsilons=[0.3, 1.0], sides=["ours", "smartnoise", "dpmm"],
                                 variants=["as-is", "cut"], tables=["t"], mechanisms=["mst", "aim"], force=False)
    recorded = [{"side": "ours", "mechanism": "aim", "table": "t", "seed": 0, "status": "ok"},  # issue 27's: epsilon 1
                {"side": "dpmm", "mechanism": "aim", "table": "t", "seed": 0, "epsilon": 0.3, "status": "timeout"}]
    cells = real_tables.grid(args, recorded, manifest)
    assert sorted((side, mechanism, epsilon) for side, mechanism, _, _, _, epsilon in cells) == [
        ("dpmm", "aim", 1.0), ("dpmm", "mst", 0.3), ("dpmm", "mst", 1.0), ("ours", "aim", 0.3), ("ours", "mst", 0.3),
        ("ours", "mst", 1.0), ("smartnoise", "mst", 0.3), ("smartnoise", "mst", 1.0)]
    assert {variant for _, _, _, variant, _, _ in cells} == {"as-is"}  # nothing to cut


def test_the_public_variant_is_ours_alone_beside_the_peers_runs_on_the_table_they_read():
    manifest = {"t": {"columns": [{"name": "x", "kind": "numeric"}, {"name": "note", "kind": "text"}]}}
    args = types.SimpleNamespace(seeds=1, epsilons=[1.0], sides=["ours", "dpmm"], variants=["cut", "public"],
                                 tables=["t"], mechanisms=["aim"], force=False)
    assert sorted((side, variant) for side, _, _, variant, _, _ in real_tables.grid(args, [], manifest)) == [
        ("dpmm", "cut"), ("ours", "cut"), ("ours", "public")]
    runs = [{"side": side, "mechanism": "aim", "table": "t", "variant": variant, "seed": 0, "epsilon": 1.0,
             "status": "ok", "tv2": tv2, "cpu": 1.0, "columns": []}
            for side, variant, tv2 in (("ours", "cut", 0.3), ("ours", "public", 0.1), ("dpmm", "cut", 0.2))]
    rows = [line.split(" | ") for line in real_tables.peers_table(runs, ["t"]).splitlines()[2:]]
    assert [(row[1], row[3], row[6]) for row in rows] == [
        ("cut", "ours AIM (default)", "0.3000"), ("cut", "dpmm AIM", "0.2000"),
        ("public", "ours AIM (default)", "0.1000"), ("public", "dpmm AIM", "0.2000")]


def test_ours_runs_the_library_of_the_command_given(monkeypatch, tmp_path):
    """``--ours`` pointing at another checkout's command runs that checkout's library: the harness
    put this checkout first on PYTHONPATH, so a "before" run imported the code under test."""
    seen = {}

    def run(command, env=None, **_):
        seen["env"] = env
        return types.SimpleNamespace(usage=lambda: {}, wall=0.0, cpu=0.0, peak_mb=0.0, cut=False, ok=False,
                                     returncode=1, output="")

    monkeypatch.setattr(real_tables.harness, "run", run)
    args = types.SimpleNamespace(code="base", nice=0, memory_limit=0, timeout=1.0, corpus=tmp_path,
                                 ours=Path("/elsewhere/ektelo-pgm"))
    row = real_tables.one_run(args, "ours", "mst", "t", "as-is", 0, 1.0, {"file": "t.csv"})
    assert row["status"] == "error" and seen["env"] == {"PYTHONPATH": ""}


def test_the_bins_alone_are_the_real_table_drawn_back_inside_the_bins_of_the_saved_model(tmp_path):
    """What the floor's table calls ours' bins alone: every real record keeps its codes under the
    saved model's schema (categories as they are, numbers redrawn inside their own bins), so the
    1-way TVD left is the bins' alone."""
    from ektelo_pgm.schema import encoded
    from ektelo_pgm.synthesizer import Synthesizer

    rng = np.random.default_rng(0)
    real = pd.DataFrame({"age": rng.integers(18, 90, 4000), "income": np.round(rng.lognormal(10, 1, 4000), 2),
                         "kind": rng.choice(["a", "b", "c"], 4000)})
    fitted = Synthesizer("mst", epsilon=1.0, delta=1e-9, seed=0).fit(real)
    fitted.save(tmp_path / "model.npz")
    drawn = real_tables.bins_alone(real, tmp_path / "model.npz", tmp_path)
    assert list(drawn["kind"]) == list(real["kind"])
    assert np.array_equal(encoded(drawn, fitted.encoder).records, encoded(real, fitted.encoder).records)
    assert np.mean(drawn["income"].to_numpy() != real["income"].to_numpy()) > 0.9  # drawn afresh, not copied
    columns = [{"name": "age", "kind": "numeric"}, {"name": "income", "kind": "numeric"},
               {"name": "kind", "kind": "categorical"}]
    scores = {c["column"]: c["tv1"] for c in real_tables.evaluate(real, drawn, columns, bins=10)["columns"]}
    assert scores["kind"] == 0.0 and 0.0 < scores["income"] < 0.1
