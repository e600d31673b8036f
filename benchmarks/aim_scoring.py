"""One AIM round's candidate scoring (issue 29), side by side for several checkouts of the
project: the model's counts on every candidate (``GraphicalModel.projections``) and the size
filter (``mechanisms.aim.fits``), on the same saved AIM states.

A state is AIM's measurements after ``round`` rounds on a dataset of ``mechanisms_vs_reference``
(adult, ..., bn20, bn40) at (epsilon, delta = 1e-9), seed 0, AIM's default workload (every 3-way
marginal), made once by this checkout (an AIM run stopped by its callback) and kept outside the
repository (``--states``, default ../venvs/aim_states).  Every side (this checkout, and each
``--code DIR``, another checkout) runs in a fresh process with its own code first on the path,
refits the model from the state (PGM, 50 mirror-descent iterations, as AIM's rounds do) and
times, on one core's worth of work (no other run of this script at once):

- ``projections``: the model's counts on every candidate of the workload's downward closure;
- ``fits``: the junction tree's size with each candidate added (a fresh memo).

Sides run alternately, ``--repeat`` times each, and the best time is kept: the machine may be
shared.  Each side's projections are saved and compared with the first side's (largest
difference, counts).

    .venv/bin/python benchmarks/aim_scoring.py --data bn40 --rounds 30 55 --code ../aim-base
    .venv/bin/python benchmarks/aim_scoring.py --table     # only print the table
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np

import harness
from harness import load_runs, save_runs

DOC = harness.Doc(
    title="AIM's candidate scoring, side by side for several checkouts",
    rerun=".venv/bin/python benchmarks/aim_scoring.py --data bn40 --rounds 30 55 --code ../aim-base",
    reading="""
Each side is a checkout (this one, or another one named by its folder) timed on the same saved AIM states on
the date given, so a change of the scoring is measured alone (each side's commit is in the JSON), with the
largest difference of its counts against the first side (rounding only).  The scoring of bn40's late rounds
is where AIM spends most of its time ("Where AIM's time goes").""",
    results=("aim_scoring.json",))


REPO = harness.REPO
RESULTS = harness.RESULTS / "aim_scoring.json"
STATES = harness.VENVS / "aim_states"
EPSILON, DELTA, ROUND_ITERS = 1.0, 1e-9, 50


def key(row) -> tuple:
    return row["data"], row["round"], row["side"]


def load_data(name: str):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from mechanisms_vs_reference import load_table
    from mechanisms_vs_smartnoise import dataset

    return dataset(*load_table(REPO.parent / "shared" / "data", name))


def make_state(name: str, rounds: int, path: Path) -> None:
    """AIM's measurements after ``rounds`` rounds (this checkout), pickled to ``path``."""
    from ektelo_pgm import Budget
    from ektelo_pgm.mechanisms import AIM

    data = load_data(name)
    result = AIM(iters=ROUND_ITERS, final_iters=1, callback=lambda state: state.round >= rounds).run(
        data, Budget.approx(EPSILON, DELTA), rng=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump({"measurements": result.measurements, "domain": data.domain, "total": len(data)}, f)


def worker(state_path: Path, out: Path) -> None:
    """Refit the state's model and time the round's scoring with the code first on the path."""
    from ektelo_pgm.mechanisms.aim import AIM, fits
    from ektelo_pgm.operators.reconstruct import PGM

    with open(state_path, "rb") as f:
        state = pickle.load(f)
    model = PGM(iters=ROUND_ITERS, method="mirror").reconstruct(state["domain"], state["measurements"],
                                                                 total=state["total"])
    candidates = list(AIM().candidates(state["domain"]))
    tables, projections, _ = harness.timed(lambda: [t.ravel() for t in model.projections(candidates)])
    _, sizes, _ = harness.timed(lambda: fits(model, candidates, float("inf")))
    np.save(out.with_suffix(".npy"), np.concatenate(tables))
    out.write_text(json.dumps({"projections": projections, "fits": sizes, "tree_cells": int(model.tree.cells),
                               "cliques": len(model.tree.cliques), "candidates": len(candidates)}))


def run_side(code: Path, state: Path, folder: Path, label: str) -> dict:
    out = folder / f"{label}.json"
    harness.run([sys.executable, "-P", Path(__file__).resolve(), "--worker", "--state", state, "--out", out],
                env={"PYTHONPATH": f"{code}{os.pathsep}{REPO / 'benchmarks'}"}, check=True)
    return json.loads(out.read_text())


def measure(args) -> None:
    sides = {harness.code_state(): REPO,
             **{f"{Path(c).name}@{harness.commit_of(Path(c))}": Path(c).resolve() for c in args.code}}
    runs = load_runs(args.results)
    for rounds in args.rounds:
        state = args.states / f"{args.data}_eps{EPSILON:g}_round{rounds}.pkl"
        if not state.exists():
            make_state(args.data, rounds, state)
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            best: dict[str, dict] = {}
            for _ in range(args.repeat):
                for i, (label, code) in enumerate(sides.items()):
                    row = run_side(code, state, folder, f"side{i}")
                    if label not in best or row["projections"] + row["fits"] < best[label]["projections"] + \
                            best[label]["fits"]:
                        best[label] = row
            first = np.load(folder / "side0.npy")
            for i, (label, row) in enumerate(best.items()):
                runs = [r for r in runs if key(r) != (args.data, rounds, label)]
                runs.append({"data": args.data, "round": rounds, "side": label, **row,
                             "max_difference": float(np.abs(np.load(folder / f"side{i}.npy") - first).max()),
                             "load": os.getloadavg()[0], "when": harness.now()})
                print(json.dumps(runs[-1]), flush=True)
    save_runs(args.results, runs, key, {"epsilon": EPSILON, "delta": DELTA, "round_iters": ROUND_ITERS})
    print(tables(harness.read(args.results, name=RESULTS.name)))


def tables(results: dict) -> str:
    rows = results["aim_scoring.json"]["runs"]
    lines = ["| data | round | tree cells | candidates | checkout | date | projections s | fits s | "
             "largest difference | load |",
             "|---|---:|---:|---:|---|---|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: (r["data"], r["round"], r["when"])):
        checkout = r["side"].split("@")[0] if "@" in r["side"] else "this one"  # a label is folder@commit
        lines.append(f"| {r['data']} | {r['round']} | {r['tree_cells']:,} | {r['candidates']:,} | {checkout} | "
                     f"{r['when'][:10]} | "
                     f"{r['projections']:.2f} | {r['fits']:.2f} | {r['max_difference']:.1e} | {r['load']:.1f} |")
    return ("Epsilon 1, seed 0, every 3-way marginal; best of the repeats, sides alternating, wall seconds of one "
            "process; load: the 2-core machine's 1-minute load average (other work ran beside).  Largest "
            "difference: counts, against the first side.\n\n" + "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="bn40")
    parser.add_argument("--rounds", type=int, nargs="+", default=[30])
    parser.add_argument("--code", nargs="*", default=[], help="other checkouts to time beside this one")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--states", type=Path, default=STATES)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="only print the table")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.state, args.out)
    elif args.table:
        print(tables(harness.read(args.results, name=RESULTS.name)))
    else:
        measure(args)


if __name__ == "__main__":
    main()
