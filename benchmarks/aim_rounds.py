"""Where one AIM run spends its time, round by round (issue 29): our ``AIM(max_mb=80)`` on a
dataset of ``mechanisms_vs_reference`` (adult, ..., bn20, bn40) at (epsilon, delta = 1e-9), AIM's
default workload (every 3-way marginal), then ``synthetic_data(method="round")``, as that
benchmark runs it.

Each run is a fresh process (``--worker``) that wraps three phases with a timer and records,
after every round, its wall seconds, the junction tree's cells, the measurement's share (rho)
the cliques it chose and the seconds of each phase:

- ``fits``: the size filter (the junction tree with each candidate added, ``aim.fits``);
- ``quality``: the scores of the allowed candidates (the model's marginal on each, against the
  data's, reused from an earlier round within AIM's ``reuse_tolerance``: ``AIM.errors``, the
  data's counts and the clique drifts included);
- ``fit``: the round's refit (``Adaptive.fit``, 50 mirror-descent iterations by default).

The rest of a round is the selection's and measurement's own work.  Each round also records how
many candidates were scored and how many of their errors were reused.  The run's totals add the
wall and CPU seconds of the whole run (the final fit and the sampling included), then, outside
the clock, the mean total-variation distance of the synthetic records over every 2-way and
every 3-way marginal (as ``mechanisms_vs_reference`` computes it).  Timings depend
on the machine's load: run one at a time on an otherwise idle machine.

    .venv/bin/python benchmarks/aim_rounds.py --data bn40 --epsilon 1 --seeds 0
    .venv/bin/python benchmarks/aim_rounds.py --table      # only print the table
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import harness
from harness import load_runs, save_runs

DOC = harness.Doc(
    title="Where AIM's time goes, round by round",
    rerun=".venv/bin/python benchmarks/aim_rounds.py --data bn40 --epsilon 1 --seeds 0     # alone on an idle machine",
    reading="""
Each row is the latest run of its data, epsilon and seed (earlier runs are in the JSON).  On adult the refits take
most of a run.  On bn40 (about 100 rounds) scoring dominated; scoring at most 4,000 candidates a round (every 1-
and 2-way one, a sample of the 3-way ones) takes 151-176 s on the idle machine (270-313 CPU s, against 365-952
scoring every one), 2-way TVD 0.0094, 0.0094, 0.0095 on seeds 0-2 against 0.0092, 0.0098, 0.0090 (the same mean
within the seeds' spread).  Errors reused within the 5% tolerance were 2%: each refit moves the model.""",
    results=("aim_rounds.json", "aim_bn40_every_candidate.json"))


REPO = harness.REPO
RESULTS = harness.RESULTS / "aim_rounds.json"
EVERY_CANDIDATE = harness.RESULTS / "aim_bn40_every_candidate.json"
DELTA, MAX_MB = 1e-9, 80.0
PHASES = ("fits", "quality", "fit")


def key(row) -> tuple:
    return row["data"], row["epsilon"], row["seed"], row["code"]


def worker(name: str, epsilon: float, seed: int, out: Path) -> None:
    """One AIM run with its phases timed; its rounds and totals written to ``out`` (JSON)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from mechanisms_vs_reference import load_table
    from mechanisms_vs_smartnoise import dataset, total_variations

    import ektelo_pgm.mechanisms.aim as aim
    from ektelo_pgm import Budget
    from ektelo_pgm.mechanisms.adaptive import Adaptive

    spent = dict.fromkeys(PHASES, 0.0)

    def timed(phase, function):
        def run(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[phase] += time.perf_counter() - start
        return run

    scoring = timed("quality", aim.AIM.errors)
    scored = {}

    def errors(self, state, data, candidates, *rest):
        scored["count"] = len(candidates)
        return scoring(self, state, data, candidates, *rest)

    aim.fits, aim.AIM.errors = timed("fits", aim.fits), errors
    aim.AIM.fit = timed("fit", Adaptive.fit)
    data = dataset(*load_table(REPO.parent / "shared" / "data", name))
    rounds, last = [], {"at": time.perf_counter(), **spent}

    def callback(state):
        now = time.perf_counter()
        rounds.append({"round": state.round, "wall": now - last["at"], "cells": int(state.estimate.tree.cells),
                       "share": float(state.share.measure), "chosen": [list(q.attrs) for q in state.chosen],
                       "scored": scored.get("count", 0), "reused": state.memo.get("reused", 0),
                       **{p: spent[p] - last[p] for p in PHASES}})
        last.update(at=now, **spent)
        print(json.dumps({"cpu": time.process_time(), **rounds[-1]}), flush=True)  # progress, read while it runs

    with harness.clock() as whole:
        result = aim.AIM(max_mb=MAX_MB, callback=callback).run(data, Budget.approx(epsilon, DELTA), rng=seed)
        synthetic = result.estimate.synthetic_data(len(data), rng=seed, method="round")
    tvd2, tvd3 = total_variations(data, synthetic)
    out.write_text(json.dumps({"wall": whole.wall, "cpu": whole.cpu, **spent, "tvd2": tvd2, "tvd3": tvd3,
                               "rounds": rounds}))


def measure(args) -> None:
    runs = load_runs(args.results)
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "run.json"
            load = os.getloadavg()[0]
            harness.child(Path(__file__).resolve(), "--worker", "--data", args.data, "--epsilon", repr(args.epsilon),
                          "--seeds", seed, "--out", out, check=True)
            row = {"data": args.data, "epsilon": args.epsilon, "seed": seed, "code": harness.code_state(),
                   "cores": os.cpu_count(), "load_before": load, "when": harness.now(), **json.loads(out.read_text())}
        runs = [r for r in runs if key(r) != key(row)] + [row]
        print(json.dumps({k: v for k, v in row.items() if k != "rounds"}), flush=True)
        save_runs(args.results, runs, key, {"delta": DELTA, "max_mb": MAX_MB})
    print(tables(harness.read(args.results, name=RESULTS.name) | harness.read(EVERY_CANDIDATE)))


def reused(rounds) -> str:
    """The share of the candidates' errors reused, over the run's rounds ('-' before it was recorded)."""
    scored = sum(x.get("scored", 0) for x in rounds)
    return f"{sum(x.get('reused', 0) for x in rounds) / scored:.0%}" if scored else "-"


def optional(row: dict, name: str) -> str:
    return f"{row[name]:.4f}" if name in row else "-"


def tables(results: dict) -> str:
    runs = results["aim_rounds.json"]["runs"]
    lines = ["| data | epsilon | seed | date | rounds | largest tree (cells) | wall s | CPU s | size filter s | "
             "scoring s | refits s | rest s | slowest round s | errors reused | 2-way TVD | 3-way TVD |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in harness.newest(runs, lambda r: key(r)[:3]):
        rounds = r["rounds"]
        rest = r["wall"] - sum(r[p] for p in PHASES)
        lines.append(f"| {r['data']} | {r['epsilon']:g} | {r['seed']} | {r['when'][:10]} | {len(rounds)} | "
                     f"{max(x['cells'] for x in rounds):,} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['fits']:.1f} | "
                     f"{r['quality']:.1f} | {r['fit']:.1f} | {rest:.1f} | {max(x['wall'] for x in rounds):.1f} | "
                     f"{reused(rounds)} | {optional(r, 'tvd2')} | {optional(r, 'tvd3')} |")
    return ("One run at a time on the otherwise idle 2-core machine (numba's kernels and the size filter use both "
            "cores when they are idle).  Size filter, scoring and refits: seconds summed over the rounds; rest: the "
            "1-way measurements, selections, measurements, the final fit and the sampling.\n\n" + "\n".join(lines)
            + "\n\n" + before_and_after(results))


def before_and_after(results: dict) -> str:
    """bn40 at epsilon 1, seed by seed: the code that scored every candidate a round (its runs of
    ``mechanisms_vs_reference.py``, the same data, settings and seeds) beside this one."""
    before = {r["seed"]: r for r in results["aim_bn40_every_candidate.json"]["runs"]}
    after = {r["seed"]: r for r in harness.newest(results["aim_rounds.json"]["runs"], lambda r: key(r)[:3])
             if r["data"] == "bn40" and r["epsilon"] == 1.0 and "tvd2" in r}
    lines = ["| seed | 2-way TVD, every candidate | 2-way TVD, at most 4,000 | 3-way TVD, every candidate | "
             "3-way TVD, at most 4,000 | CPU s, every candidate | CPU s, at most 4,000 |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for seed in sorted(before.keys() & after.keys()):
        b, a = before[seed], after[seed]
        lines.append(f"| {seed} | {b['tv2']:.4f} | {a['tvd2']:.4f} | {b['tv3']:.4f} | {a['tvd3']:.4f} | "
                     f"{b['cpu']:.0f} | {a['cpu']:.0f} |")
    return "AIM on bn40 at epsilon 1, scoring every candidate a round against at most 4,000:\n\n" + "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="bn40")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="only print the table")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args.data, args.epsilon, args.seeds[0], args.out)
    elif args.table:
        print(tables(harness.read(args.results, name=RESULTS.name) | harness.read(EVERY_CANDIDATE)))
    else:
        measure(args)


if __name__ == "__main__":
    main()
