"""Machine-learning efficacy and disclosure checks on adult: models trained on synthetic data (ours
and smartnoise-synth's) scored on a real holdout, and how close the synthetic rows come to the
training rows.

The raw UCI adult table (``raw/adult/adult.data``, 32,561 rows, 15 columns, read as
``steward_vs_smartnoise.load_table`` reads it; the six columns adult.names calls continuous are
numeric, the others categorical) is split 80/20 with ``ektelo_pgm.evaluation.split(seed=0)``.  Each
synthesizer sees the training part only and draws as many rows as it has:

- ours: ``Synthesizer("mst" | "aim", epsilon, delta=1e-9, seed).fit(train).sample(len(train))``;
- smartnoise-synth 1.0.8's ``mst`` in its own virtual environment, as
  ``steward_vs_smartnoise.run_smartnoise`` runs it (10% of epsilon for its private bounds of the
  continuous columns; OpenDP's noise takes no seed: its seeds are repetitions).

Then ``ml_efficacy(train, holdout, synthetic, "income")`` (logistic regression, random forest,
histogram gradient boosting: train on synthetic vs train on real, both tested on the holdout)
and ``disclosure(train, holdout, synthetic)`` (exact-match share, distance to closest record
against the training part with the holdout as baseline), both with seed 0.  Each synthesis runs
in a fresh process; the checks run here.

    .venv/bin/python benchmarks/ml_efficacy.py                    # the grid (resumes)
    .venv/bin/python benchmarks/ml_efficacy.py --sides ours --epsilons 1 --seeds 1
    .venv/bin/python benchmarks/ml_efficacy.py --table            # only print the tables

Runs accumulate in benchmarks/results/ml_efficacy.json (a run recorded is skipped unless
--force).
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import harness
import steward_vs_smartnoise as steward
from harness import load_runs, save_runs

DOC = harness.Doc(
    title="Machine-learning efficacy on adult",
    rerun="taskset -c 1 .venv/bin/python benchmarks/ml_efficacy.py     # the ml extra; smartnoise-synth in ../venvs/smartnoise",
    reading="""
Our AIM comes closest to training on the real rows (ROC AUC 0.90-0.91 at epsilon 3 against 0.91-0.93), ahead
of our MST and of smartnoise's MST, whose ROC AUC stays at 0.66-0.76.  No synthetic table copies a training
row, and every synthesizer's rows lie farther from the training rows than the real holdout's do: a sanity
check, never a substitute for the DP guarantee.""",
    results=("ml_efficacy.json",))


REPO = harness.REPO
sys.path.insert(0, str(REPO))  # this checkout's ektelo_pgm, not an installed one
RESULTS = harness.RESULTS / "ml_efficacy.json"
SYNTHESIZERS = (("ours", "mst"), ("ours", "aim"), ("smartnoise", "mst"))
EPSILONS = (1.0, 3.0)
TARGET = "income"
SPLIT_SEED = 0


def adult(data: Path):
    """``(train, holdout, kinds)``: adult's 80/20 split and its documented column kinds."""
    from ektelo_pgm.evaluation import split

    frame, continuous = steward.load_table(data, "adult")
    train, holdout = split(frame, share=0.2, seed=SPLIT_SEED)
    return train, holdout, {c: "numeric" if c in continuous else "categorical" for c in frame.columns}


def worker(args) -> None:
    """Synthesize from the training part at ``args.train`` (a CSV) into ``args.out``."""
    import pandas as pd

    train = pd.read_csv(args.train, keep_default_na=False, na_values=[""])
    continuous = args.continuous.split(",")
    steward.EPSILON = args.epsilon  # the steward's runners read their budget from the module
    run = steward.run_ours if args.worker == "ours" else steward.run_smartnoise
    synthetic, _ = run(args.mechanism, train, continuous, args.seed, {"preprocessor_share": 0.1})
    synthetic.to_csv(Path(args.out) / "synthetic.csv", index=False)


def key(row) -> tuple:
    return row["side"], row["mechanism"], float(row["epsilon"]), int(row["seed"])


def meta() -> dict:
    return {"delta": steward.DELTA, "split": f"holdout 20%, seed {SPLIT_SEED}", "target": TARGET}


def one_run(args, side, mechanism, epsilon, seed, train, holdout, kinds) -> dict:
    """Synthesize in a fresh process, then score the synthetic table."""
    import pandas as pd

    from ektelo_pgm.evaluation import disclosure, ml_efficacy

    row = {"side": side, "mechanism": mechanism, "epsilon": epsilon, "seed": seed, "commit": harness.code_state(),
           "when": harness.now(), "load_before": os.getloadavg()[0]}
    python = sys.executable if side == "ours" else args.smartnoise_python
    with tempfile.TemporaryDirectory() as out:
        path = Path(out) / "train.csv"
        train.to_csv(path, index=False)
        done = harness.child(__file__, "--worker", side, "--mechanism", mechanism, "--epsilon", epsilon,
                             "--seed", seed, "--train", path, "--out", out,
                             "--continuous", ",".join(c for c, k in kinds.items() if k == "numeric"),
                             python=python, log=Path(out) / "log.txt", timeout=args.timeout)
        row.update(done.usage())
        if done.cut:
            return {**row, "status": "timeout"}
        if not done.ok:
            return {**row, "status": "error", "error": done.tail()}
        synthetic = pd.read_csv(Path(out) / "synthetic.csv", keep_default_na=False, na_values=[""])
    efficacy = ml_efficacy(train, holdout, synthetic, TARGET, kinds, seed=0)
    checks = disclosure(train, holdout, synthetic, kinds, seed=0)
    print(efficacy.text(), checks.text(), sep="\n", flush=True)
    return {**row, "status": "ok", "rows_out": len(synthetic), "efficacy": efficacy.table.to_dict("records"),
            "chance": efficacy.chance, "disclosure": checks.table.to_dict("records")}


def run_grid(args) -> None:
    """Every (seed, epsilon, synthesizer) not yet recorded, seed by seed."""
    train, holdout, kinds = adult(args.data)
    runs = load_runs(RESULTS)
    done = {key(r) for r in runs if r["status"] == "ok"}
    for seed, epsilon, (side, mechanism) in itertools.product(range(args.seeds), args.epsilons, SYNTHESIZERS):
        if side not in args.sides or ((side, mechanism, epsilon, seed) in done and not args.force):
            continue
        print(f"{side} {mechanism} epsilon={epsilon:g} seed={seed}", flush=True)
        row = one_run(args, side, mechanism, epsilon, seed, train, holdout, kinds)
        runs = [r for r in runs if key(r) != key(row)] + [row]
        save_runs(RESULTS, runs, key, meta())
        print(f"  {row['status']} synthesis {row['process_wall']:.0f} s", flush=True)


def mean_std(values, digits: int = 3) -> str:
    if not values:
        return "-"
    return f"{np.mean(values):.{digits}f}" + (f" ± {np.std(values):.{digits}f}" if len(values) > 1 else "")


def tables(results: dict) -> str:
    """Two tables, TSTR per synthesizer (TRTR once) and the disclosure checks, then the conditions."""
    runs = results["ml_efficacy.json"]["runs"]
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        return "No runs recorded yet."
    metrics = ("accuracy", "macro F1", "ROC AUC")
    models = list(dict.fromkeys(e["model"] for e in ok[0]["efficacy"]))
    real = {(e["model"], e["metric"]): e["real"] for e in ok[0]["efficacy"]}
    head = " | ".join(f"{model} {metric}" for model in models for metric in ("accuracy", "ROC AUC"))
    lines = ["Target `income` (2 classes); scores on the real holdout (20% of the rows: 6,512) of models trained "
             "on the synthetic table (TSTR), and on the real training part (TRTR, first row).  Mean ± std over seeds.",
             "", f"| trained on | epsilon | runs | {head} |", "|---|---|---|" + "---|" * 2 * len(models)]
    lines.append("| real training part (TRTR) | - | - | "
                 + " | ".join(f"{real[(m, metric)]:.3f}" for m in models for metric in ("accuracy", "ROC AUC")) + " |")
    groups = {}
    for r in ok:
        groups.setdefault((r["side"], r["mechanism"], r["epsilon"]), []).append(r)
    order = sorted(groups, key=lambda g: (g[2], SYNTHESIZERS.index(g[:2])))
    for group in order:
        cells = []
        for m in models:
            for metric in ("accuracy", "ROC AUC"):
                cells.append(mean_std([e["synthetic"] for r in groups[group] for e in r["efficacy"]
                                       if (e["model"], e["metric"]) == (m, metric)]))
        lines.append(f"| {group[0]} {group[1].upper()} | {group[2]:g} | {len(groups[group])} | {' | '.join(cells)} |")
    chance = ok[0]["chance"]
    lines += ["", f"Chance (the majority class): accuracy {chance['accuracy']:.3f}, ROC AUC 0.5.  Macro F1 per run "
              f"is in the JSON ({', '.join(metrics)} for every model).", ""]
    stats = [d["statistic"] for d in ok[0]["disclosure"]]
    shown = ("exact-match share", "DCR median", "share closer than the holdout's median DCR")
    lines += [f"| synthetic from | epsilon | {' | '.join(shown)} |", "|---|---|" + "---|" * len(shown)]
    holdout = {d["statistic"]: d["holdout"] for d in ok[0]["disclosure"]}
    digits = {s: 4 if s == "exact-match share" else 3 for s in shown}
    lines.append("| real holdout (baseline) | - | " + " | ".join(f"{holdout[s]:.{digits[s]}f}" for s in shown) + " |")
    for group in order:
        cells = [mean_std([d["synthetic"] for r in groups[group] for d in r["disclosure"] if d["statistic"] == s],
                          digits[s]) for s in shown]
        lines.append(f"| {group[0]} {group[1].upper()} | {group[2]:g} | {' | '.join(cells)} |")
    assert set(shown) <= set(stats)
    loads = [r["load_before"] for r in ok]
    when = sorted(r["when"] for r in ok)
    lines += ["", "DCR: mean over columns of |a - b| / training range (at most 1) for numbers and 0/1 mismatch for "
              "categories, on 5,000 sampled rows; a share closer near the holdout's means the synthetic rows are no "
              "closer to the training rows than unseen real rows are.  These checks are sanity checks, never a "
              "substitute for the DP guarantee.",
              "", f"Runs from {when[0][:10]} to {when[-1][:10]}; delta {steward.DELTA:g}; "
              f"1-minute load average {min(loads):.1f} to {max(loads):.1f} before a run on the 2-core machine.  "
              "Rerun: `taskset -c 1 .venv/bin/python benchmarks/ml_efficacy.py` (needs the `ml` extra and "
              "smartnoise-synth in ../venvs/smartnoise)."]
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=harness.DATA, help="shared data directory")
    parser.add_argument("--sides", nargs="+", default=["ours", "smartnoise"], choices=["ours", "smartnoise"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--seeds", type=int, default=2, help="seeds 0..N-1 (repetitions for smartnoise)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one synthesis may take")
    parser.add_argument("--smartnoise-python", type=Path, default=steward.SMARTNOISE_PYTHON)
    parser.add_argument("--force", action="store_true", help="re-run runs already recorded")
    parser.add_argument("--table", action="store_true", help="only print the tables of the results")
    # worker mode (internal)
    parser.add_argument("--worker", choices=["ours", "smartnoise"], help=argparse.SUPPRESS)
    parser.add_argument("--mechanism", help=argparse.SUPPRESS)
    parser.add_argument("--epsilon", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--train", help=argparse.SUPPRESS)
    parser.add_argument("--continuous", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    if not args.table:
        run_grid(args)
    print(tables(harness.read(RESULTS)))


if __name__ == "__main__":
    main()
