"""Fidelity scores against SDMetrics: ``ektelo_pgm.evaluation.fidelity`` and SDMetrics's QualityReport
scoring the same real and synthetic files.

Tables: the raw UCI Adult file (../shared/data/raw/adult/adult.data, ``?`` read as missing)
against synthetic tables written by ``ektelo-pgm synth`` with MST and with AIM at epsilon 1,
seed 0; Titanic (../shared/data/titanic.csv, integer-coded) and, when the real-tables corpus is
there (../venvs/real_tables, ``benchmarks/real_tables_fetch.py``), Minneapolis police use of
force (a date/time column, missing values) against MST's.  A synthetic table already in
``--work`` is reused; a missing one is made by the ``ektelo-pgm`` next to this interpreter.

Both sides read each file with the same ``read`` function of this script (times parsed to
datetime64), in their own interpreter: ours here, SDMetrics's in its own virtual environment
(``SDMETRICS_VENV``, default ../venvs/sdmetrics: ``python3 -m venv ../venvs/sdmetrics &&
../venvs/sdmetrics/bin/pip install sdmetrics pandas``), run by this script with ``--worker``.
The columns' kinds are ours (adult's declared, the others' inferred by ``fidelity``), handed to
SDMetrics as ``numerical``/``datetime``/``categorical`` sdtypes.  SDMetrics runs its
QualityReport twice: with its default thresholds (pair trends averaged over the pairs with a
real |r| above 0.5 or Cramér's V above 0.3) and with both at 0 (every pair, as before 2026),
its sampling of 50,000 rows for contingency scores off (no table here has more rows).  A pair of
a number and a category is scored by SDMetrics's ``ContingencySimilarity`` with the number in
``continuous_column_names`` (both tables cut at the real table's bins), as ours is, in place of
the QualityReport's score of it (each table cut on its own range, kept as ``quality_report``),
and the pair-trends and overall means are taken again as the QualityReport takes them.

    .venv/bin/python benchmarks/fidelity_vs_sdmetrics.py            # score, compare, write
    .venv/bin/python benchmarks/fidelity_vs_sdmetrics.py --table    # only rewrite the docs section

Writes benchmarks/results/fidelity_vs_sdmetrics.json (per table: every score of both sides and
its absolute difference, the aggregates, the largest difference) and the section "Fidelity
scores against SDMetrics" of docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import harness

DOC = harness.Doc(
    title="Fidelity scores against SDMetrics",
    rerun=".venv/bin/python benchmarks/fidelity_vs_sdmetrics.py       # SDMetrics in ../venvs/sdmetrics",
    reading="""
`ektelo_pgm.evaluation.quality` gives SDMetrics's scores on the same files, column by column and pair by pair,
to within 1e-9 (a number paired with a category as SDMetrics's ContingencySimilarity scores it, on the real
table's bins; its QualityReport cuts each table on its own range, which scores such a pair near 0 when the real
outliers are not in the synthetic table); the differences above 1e-15 are TVComplement's, where SDMetrics adds
1e-6 of a row to the real count of a category only the synthetic table has.""",
    results=("fidelity_vs_sdmetrics.json",))


REPO = harness.REPO
DATA = harness.DATA
CORPUS = harness.VENVS / "real_tables"
RESULTS = harness.RESULTS / "fidelity_vs_sdmetrics.json"
SDMETRICS_PYTHON = harness.peer_python("sdmetrics")
ACCEPT = 0.01  # the largest difference accepted
ADULT_NAMES = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,"
               "capital-gain,capital-loss,hours-per-week,native-country,income")
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
EPSILON, SEED = 1.0, 0


def cases(work: Path) -> list[dict]:
    """Each comparison: its name, the real file and how to read it, the synthetic file and the
    ``ektelo-pgm synth`` arguments that make it, and the kinds (None: inferred by ours)."""
    adult = {"path": str(DATA / "raw" / "adult" / "adult.data"), "names": ADULT_NAMES.split(","),
             "missing": ["?"], "times": {}}
    adult_kinds = {name: "numeric" if name in ADULT_NUMERIC else "categorical" for name in adult["names"]}
    out = []
    for mechanism in ("mst", "aim"):
        out.append({"name": f"adult, {mechanism.upper()}", "real": adult, "kinds": adult_kinds,
                    "synthetic": {**adult, "path": str(work / f"adult_{mechanism}.csv")},
                    "synth": [adult["path"], "--names", ADULT_NAMES, "--mechanism", mechanism]})
    titanic = {"path": str(DATA / "titanic.csv"), "names": None, "missing": [], "times": {}}
    out.append({"name": "titanic, MST", "real": titanic, "kinds": None,
                "synthetic": {**titanic, "path": str(work / "titanic_mst.csv")},
                "synth": [titanic["path"], "--header", "--mechanism", "mst"]})
    police = {"path": str(CORPUS / "police_force.csv"), "names": None, "missing": [],
              "times": {"response_datetime": "%Y/%m/%d %H:%M:%S"}}
    if Path(police["path"]).exists():
        out.append({"name": "police force, MST", "real": police, "kinds": None,
                    "synthetic": {**police, "path": str(work / "police_force_mst.csv")},
                    "synth": [police["path"], "--header", "--mechanism", "mst"]})
    return out


def read(spec: dict):
    """The table of ``spec`` as both sides read it: strings stripped of leading blanks, the
    ``missing`` markers and empty fields missing, the ``times`` columns parsed to datetime64."""
    import pandas as pd

    frame = pd.read_csv(spec["path"], header=None if spec["names"] else "infer", names=spec["names"],
                        skipinitialspace=True, na_values=spec["missing"])
    for name, fmt in spec["times"].items():
        frame[name] = pd.to_datetime(frame[name], format=fmt, errors="coerce")
    return frame


# ----------------------------------------------------------------------------------------------
# SDMetrics's side (run with --worker in its own interpreter)
# ----------------------------------------------------------------------------------------------


def sdmetrics_scores(request: dict) -> dict:
    """SDMetrics's QualityReport on ``request``'s tables, for each threshold setting."""
    import warnings

    import numpy as np
    from sdmetrics.column_pairs.statistical import ContingencySimilarity
    from sdmetrics.reports import QualityReport

    warnings.simplefilter("ignore")
    real, synthetic = read(request["real"]), read(request["synthetic"])
    sdtypes = {name: "categorical" if kind == "categorical" else
               "datetime" if name in request["real"]["times"] else "numerical"
               for name, kind in request["kinds"].items()}
    real, synthetic = real[list(sdtypes)], synthetic[list(sdtypes)]
    metadata = {"tables": {"table": {"columns": {name: {"sdtype": t} for name, t in sdtypes.items()}}}}

    def numbers(frame):  # date/times as nanoseconds since 1970 (NaN: missing), as the QualityReport takes them
        frame = frame.copy()
        for name in (n for n, t in sdtypes.items() if t == "datetime"):
            stamps = frame[name].to_numpy(dtype="datetime64[ns]")
            frame[name] = np.where(np.isnat(stamps), np.nan, stamps.astype(np.int64).astype(float))
        return frame

    real_numbers, synthetic_numbers = numbers(real), numbers(synthetic)
    out = {}
    for setting, (correlation, association) in request["thresholds"].items():
        report = QualityReport()
        report.real_correlation_threshold, report.real_association_threshold = correlation, association
        report.num_rows_subsample = None
        report.generate({"table": real}, {"table": synthetic}, metadata, verbose=False)
        shapes, pairs = report.get_details("Column Shapes"), report.get_details("Column Pair Trends")
        number = lambda x: None if x is None or (isinstance(x, float) and np.isnan(x)) else float(x)
        properties = dict(zip(report.get_properties()["Property"], report.get_properties()["Score"]))
        trends = {}
        for a, b, m, score, c in zip(pairs["Column 1"], pairs["Column 2"], pairs["Metric"], pairs["Score"],
                                     pairs["Meets Threshold?"]):
            counted = bool(c) if c is not None and c == c else False
            continuous = [n for n in (a, b) if sdtypes[n] != "categorical"]
            if m == "ContingencySimilarity" and len(continuous) == 1:  # the metric, the real table's bins
                reported = number(score)
                done = ContingencySimilarity.compute_breakdown(
                    real_numbers[[a, b]], synthetic_numbers[[a, b]], continuous_column_names=continuous,
                    real_association_threshold=association)
                score, strength = done["score"], done.get("real_association", np.nan)
                counted = association <= 0 or (not np.isnan(strength) and strength > association)
                trends[f"{a} | {b}"] = [m, number(score), counted, reported]
            else:
                trends[f"{a} | {b}"] = [m, number(score), counted]
        counted_scores = [t[1] for t in trends.values() if t[2] and t[1] is not None]
        trends_score = float(np.mean(counted_scores)) if counted_scores else None
        shapes_score = number(properties["Column Shapes"])
        both = [x for x in (shapes_score, trends_score) if x is not None]
        out[setting] = {
            "column_shapes": {row.Column: [row.Metric, number(row.Score)] for row in shapes.itertuples()},
            "column_pair_trends": trends,
            "column_shapes_score": shapes_score,
            "column_pair_trends_score": trends_score,
            "score": float(np.mean(both)) if both else None,
            "quality_report": {"column_pair_trends_score": number(properties["Column Pair Trends"]),
                               "score": number(report.get_score())},
        }
    import sdmetrics
    return {"version": sdmetrics.__version__, "settings": out}


# ----------------------------------------------------------------------------------------------
# Ours, and the comparison
# ----------------------------------------------------------------------------------------------

SETTINGS = {"default thresholds": (0.5, 0.3), "every pair": (0.0, 0.0)}


def ours(case: dict) -> tuple[dict, dict]:
    """``(kinds, scores)`` of ``ektelo_pgm.evaluation.fidelity`` on ``case``, shaped as SDMetrics's."""
    sys.path.insert(0, str(REPO))  # this checkout's ektelo_pgm
    from ektelo_pgm.evaluation import quality

    real, synthetic = read(case["real"]), read(case["synthetic"])
    out = {}
    for setting, thresholds in SETTINGS.items():
        q = quality(real, synthetic, case["kinds"], *thresholds)
        number = lambda x: None if x != x else float(x)
        out[setting] = {
            "column_shapes": {c: [m, number(s)] for c, m, s in q.column_shapes.itertuples(index=False)},
            "column_pair_trends": {f"{a} | {b}": [m, number(s), bool(c)] for (a, b), m, s, _, c
                                   in q.column_pair_trends.itertuples(index=False)},
            "column_shapes_score": number(q.column_shapes_score),
            "column_pair_trends_score": number(q.column_pair_trends_score),
            "score": number(q.score),
        }
    kinds = {c: "numeric" if m == "KSComplement" else "categorical"
             for c, m, _ in q.column_shapes.itertuples(index=False)}
    return kinds, out


def difference(a, b) -> float:
    """|a - b|; 0 when both are undefined, infinite when only one is."""
    if a is None or b is None:
        return 0.0 if a is None and b is None else float("inf")
    return abs(a - b)


def compare(mine: dict, theirs: dict) -> dict:
    """Per setting: every score of both sides with its difference, and the largest difference.
    A pair below SDMetrics's thresholds has no score of its (None, no difference): only whether
    both sides leave it out of the mean is compared."""
    out = {}
    for setting, m in mine.items():
        t = theirs[setting]
        rows, differences = {}, []
        for part in ("column_shapes", "column_pair_trends"):
            rows[part] = {}
            for key, (metric, score, *counted) in m[part].items():
                their_metric, their_score, *their_counted = t[part][key]
                row = {"metric": metric, "same_metric": metric == their_metric, "ours": score, "sdmetrics": their_score}
                if len(their_counted) > 1:  # a number against a category: the QualityReport's own score of it
                    row["quality_report"] = their_counted[1]
                if counted:
                    row.update(counted=counted[0], same_counted=counted[0] == their_counted[0])
                    if not row["same_counted"]:
                        differences.append(float("inf"))
                if counted and not their_counted[0] and their_score is None:
                    row["difference"] = None
                else:
                    row["difference"] = difference(score, their_score)
                    differences.append(row["difference"] if row["same_metric"] else float("inf"))
                rows[part][key] = row
        for name in ("column_shapes_score", "column_pair_trends_score", "score"):
            rows[name] = {"ours": m[name], "sdmetrics": t[name], "difference": difference(m[name], t[name]),
                          "quality_report": t["quality_report"].get(name, t[name])}
            differences.append(rows[name]["difference"])
        rows["max_difference"] = max(differences)
        out[setting] = rows
    return out


def make_synthetic(case: dict) -> None:
    path = Path(case["synthetic"]["path"])
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).parent / "ektelo-pgm"), "synth", *case["synth"], "-o", str(path),
               "--epsilon", str(EPSILON), "--seed", str(SEED), "--quiet"]
    print("making", path.name, flush=True)
    harness.run(command, check=True)


def run(work: Path) -> dict:
    results = []
    for case in cases(work):
        make_synthetic(case)
        kinds, mine = ours(case)
        request = {"real": case["real"], "synthetic": case["synthetic"], "kinds": kinds,
                   "thresholds": SETTINGS}
        with tempfile.NamedTemporaryFile("w", suffix=".json") as asked:
            json.dump(request, asked)
            asked.flush()
            done = harness.child(__file__, "--worker", asked.name, python=SDMETRICS_PYTHON)
        if not done.ok:
            raise SystemExit(f"SDMetrics's side failed on {case['name']}:\n{done.tail(3000)}")
        theirs = done.result()
        compared = compare(mine, theirs["settings"])
        worst = max(s["max_difference"] for s in compared.values())
        print(f"{case['name']}: largest |difference| {worst:.2e}", flush=True)
        results.append({"table": case["name"], "real": os.path.relpath(case["real"]["path"], REPO),
                        "synthetic": f"ektelo-pgm synth {' '.join(case['synth'][1:])} --epsilon {EPSILON:g} "
                                     f"--seed {SEED}",
                        "kinds": kinds, "sdmetrics_version": theirs["version"], "settings": compared,
                        "max_difference": worst})
    return {"accept": ACCEPT, "tables": results,
            "max_difference": max(r["max_difference"] for r in results)}


def tables(results: dict) -> str:
    record = results["fidelity_vs_sdmetrics.json"]
    lines = [f"SDMetrics {record['tables'][0]['sdmetrics_version']}'s QualityReport (a number paired with a category "
             "scored by its ContingencySimilarity metric, both tables cut at the real table's bins) and "
             "`ektelo_pgm.evaluation.quality` on the same files.  Largest |difference| over every "
             f"column, pair and aggregate of every table: {record['max_difference']:.1e} (accepted: "
             f"{record['accept']:g}).  Pair trends with SDMetrics's default thresholds (pairs with a real |r| above "
             "0.5 or Cramér's V above 0.3) and over every pair (thresholds 0); the same pairs counted on both sides.  "
             "The last columns: the QualityReport as it is, which cuts each table on its own range, and its largest "
             "gap to the metric on one pair.",
             "", "| table | score | ours | SDMetrics | max \\|difference\\| | QualityReport as is | "
                 "max \\|gap\\| of a pair |", "|---|---|---:|---:|---:|---:|---:|"]
    for table in record["tables"]:
        for setting, rows in table["settings"].items():
            parts = (("Column Shapes", "column_shapes_score", "column_shapes"),
                     ("Column Pair Trends", "column_pair_trends_score", "column_pair_trends"),
                     ("overall", "score", None))
            for label, key, part in parts:
                if setting != "default thresholds" and key == "column_shapes_score":
                    continue  # the same with every threshold
                worst, gap = rows[key]["difference"], None
                if part is not None:
                    worst = max([worst] + [r["difference"] for r in rows[part].values() if r["difference"] is not None])
                    gaps = [abs(r["quality_report"] - r["sdmetrics"]) for r in rows[part].values()
                            if r.get("quality_report") is not None and r["sdmetrics"] is not None]
                    gap = max(gaps, default=0.0) if part == "column_pair_trends" else None
                shown = label if key == "column_shapes_score" else f"{label} ({setting})"
                ours_score, theirs, as_is = rows[key]["ours"], rows[key]["sdmetrics"], rows[key]["quality_report"]
                lines.append(f"| {table['table']} | {shown} | {ours_score:.6f} | {theirs:.6f} | {worst:.1e} | "
                             f"{as_is:.6f} | {'' if gap is None else f'{gap:.3f}'} |")
    lines += ["", "The max over a property includes its every column or pair.  The differences above 1e-15 are "
              "TVComplement's: SDMetrics adds 1e-6 of a row to the real count of each category that only the "
              "synthetic table has (here the synthesizer's `(other)`); ours counts it as 0.  The QualityReport as it "
              "is bins a number paired with a category on each table's own range: a column whose real outliers the "
              "synthetic table lacks (adult's fnlwgt) falls in different bins in the two tables, and the pair scores "
              "near 0 however alike its rows are.  The synthetic tables are made by `ektelo-pgm synth` into `--work` "
              "unless there."]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/fidelity_vs_sdmetrics"),
                        help="folder of the synthetic tables (made there when absent)")
    parser.add_argument("--table", action="store_true", help="only print the table of the results")
    parser.add_argument("--worker", metavar="REQUEST", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:  # SDMetrics's interpreter: a request in the file named, the scores on stdout
        print(json.dumps(sdmetrics_scores(json.loads(Path(args.worker).read_text()))))
        return
    if args.table:
        record = json.loads(RESULTS.read_text(encoding="utf-8"))
    else:
        record = run(args.work)
        harness.save(RESULTS, record, "sdmetrics")
    print(tables({RESULTS.name: record}))
    print(f"largest |difference| {record['max_difference']:.2e} (accepted: {ACCEPT:g})")


if __name__ == "__main__":
    main()
