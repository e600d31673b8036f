"""AIM on a wide table (issue 53): AIM with the steward's model cap (``max_mb=32``) on a
75-attribute network sample, with every 3-way marginal as its workload and at most AIM's
``max_candidates`` (4,000) candidates scored a round: every 1- and 2-way one and a uniform sample
of the 3-way ones (``3-way``), or only the 3-way ones the measured cliques link (``linked``:
``AIM(linked_only=True)``), against the steward's AIM on tables above 16 columns: every 2-way
marginal, every candidate (``2-way``).

Data: ``mechanisms_vs_reference.bayes_net`` with 75 attributes and 50,000 rows (its fixed seed),
each column re-coded to the values it takes.  Privacy: (epsilon, delta = 1e-9), seed per run.
Each run is a fresh process (``--worker``); inside it, wall and CPU seconds (every thread) of
the fit and of drawing as many records as the table has (``method="round"``), the rounds and the
largest junction tree; then, outside the clock, the mean total-variation distance over every
2-way and every 3-way marginal (as ``mechanisms_vs_reference`` computes them), and over the 3-way
marginals inside a family of the network (a node and its 2 or 3 parents: where the data has 3-way
structure; 181 of the 67,525).

    .venv/bin/python benchmarks/aim_wide.py --settings linked 3-way 2-way --seeds 0
    .venv/bin/python benchmarks/aim_wide.py --table      # only print the table
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import harness
from harness import load_runs, save_runs

DOC = harness.Doc(
    title="AIM on a wide table: 3-way candidates within a budget against 2-way only",
    rerun=".venv/bin/python benchmarks/aim_wide.py --settings linked 3-way 2-way --seeds 0",
    reading="""
Over three seeds the linked 3-way candidates (`linked`) did not lower the mean 3-way TVD over all 67,525 triples
(0.0253, 0.0266, 0.0283 against 0.0259, 0.0259, 0.0263 for 2-way only) and raised the 2-way TVD (0.0117-0.0130
against 0.0116-0.0118); over the 181 triples inside the network's families, where the data has 3-way structure,
they cut it from 0.140 to 0.084, 0.091, 0.103.  A uniform sample of the 3-way candidates (one seed) was worse.
Runs took 87-352 CPU s.  The steward keeps every 2-way marginal above 16 columns.""",
    results=("aim_wide.json",))

REPO = harness.REPO
RESULTS = harness.RESULTS / "aim_wide.json"
ATTRIBUTES, ROWS, DELTA = 75, 50_000, 1e-9
SETTINGS = ("linked", "3-way", "2-way")


def key(row) -> tuple:
    return row["setting"], row["epsilon"], row["seed"], row["code"]


def table(families: list | None = None):
    """``(columns, records)`` of the 75-attribute network sample, re-coded; given a list
    ``families``, the network's families are appended to it (``bayes_net``)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from mechanisms_vs_reference import bayes_net

    columns, records = bayes_net(ATTRIBUTES, ROWS, families=families)
    return columns, np.stack([np.unique(c, return_inverse=True)[1] for c in records.T], axis=1).astype(np.int64)


def family_triples(families) -> list[tuple[str, ...]]:
    """Every 3-way marginal inside a family of the network: those where it has 3-way structure."""
    return sorted({t for family in families for t in itertools.combinations(sorted(family), 3)})


def mechanism(setting: str, domain):
    """AIM on ``domain`` with the steward's model cap; ``3-way``: its default workload and candidate
    budget; ``linked``: the same with ``linked_only``; ``2-way``: every 2-way
    marginal, every candidate, errors reused only where exact (as the steward's AIM above 16
    columns ran before)."""
    from ektelo_pgm.mechanisms import AIM
    from ektelo_pgm.workload import kway_marginals

    options = {"3-way": {}, "linked": {"linked_only": True},
               "2-way": {"workload": kway_marginals(domain, 2), "max_candidates": None, "reuse_tolerance": 0.0}}
    return AIM(max_mb=32.0, **options[setting])


def worker(setting: str, epsilon: float, seed: int, out: Path) -> None:
    from mechanisms_vs_smartnoise import dataset, total_variations

    from ektelo_pgm import Budget
    from ektelo_pgm.metrics import total_variation

    families = []
    data = dataset(*table(families))
    rounds = []
    aim = mechanism(setting, data.domain)

    def callback(state):
        rounds.append(int(state.estimate.tree.cells))
        print(json.dumps({"round": state.round, "cpu": time.process_time(), "cells": rounds[-1],
                          "reused": state.memo.get("reused")}), flush=True)  # progress, read while it runs

    aim.callback = callback
    with harness.clock() as whole:
        result = aim.run(data, Budget.approx(epsilon, DELTA), rng=seed)
        synthetic = result.estimate.synthetic_data(len(data), rng=seed, method="round")
    tvd2, tvd3 = total_variations(data, synthetic)
    triples = family_triples(families)
    out.write_text(json.dumps({"wall": whole.wall, "cpu": whole.cpu, "rounds": len(rounds),
                               "largest_tree": max(rounds, default=0), "max_candidates": aim.max_candidates,
                               "chosen_3way": sum(len(q.attrs) == 3 for q in result.queries),
                               "tvd2": tvd2, "tvd3": tvd3, "families": len(triples),
                               "tvd3_families": total_variation(triples, data, synthetic)}))


def measure(args) -> None:
    runs = load_runs(args.results)
    for seed in args.seeds:
        for setting in args.settings:
            with tempfile.TemporaryDirectory() as folder:
                out = Path(folder) / "run.json"
                load = os.getloadavg()[0]
                harness.child(Path(__file__).resolve(), "--worker", "--settings", setting, "--epsilon",
                              repr(args.epsilon), "--seeds", seed, "--out", out, check=True)
                row = {"setting": setting, "epsilon": args.epsilon, "seed": seed, "code": harness.code_state(),
                       "attributes": ATTRIBUTES, "rows": ROWS, "load_before": load, "when": harness.now(),
                       **json.loads(out.read_text())}
            runs = [r for r in load_runs(args.results) if key(r) != key(row)] + [row]
            print(json.dumps(row), flush=True)
            save_runs(args.results, runs, key, {"delta": DELTA, "attributes": ATTRIBUTES, "rows": ROWS})
    print(tables(harness.read(args.results, name=RESULTS.name)))


def tables(results: dict) -> str:
    runs = results["aim_wide.json"]["runs"]
    lines = ["| setting | epsilon | seed | date | candidates a round | rounds | 3-way chosen | largest tree (cells) | "
             "wall s | CPU s | 2-way TVD | 3-way TVD | families' 3-way TVD | load |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in harness.newest(runs, lambda r: key(r)[:3]):  # the JSON keeps earlier code's runs
        budget = "all" if r["max_candidates"] is None else f"{r['max_candidates']:,}"
        lines.append(f"| {r['setting']} | {r['epsilon']:g} | {r['seed']} | {r['when'][:10]} | {budget} | "
                     f"{r['rounds']} | {r['chosen_3way']} | {r['largest_tree']:,} | {r['wall']:.1f} | {r['cpu']:.1f} | "
                     f"{r['tvd2']:.4f} | {r['tvd3']:.4f} | "
                     + (f"{r['tvd3_families']:.4f}" if "tvd3_families" in r else "-") + f" | {r['load_before']:.1f} |")
    return (f"A {ATTRIBUTES}-attribute network sample, {ROWS:,} rows, AIM with max_mb 32, delta 1e-9; one "
            "process per run on the shared 2-core machine (load: its 1-minute load average when the run began, "
            "other work ran beside: CPU seconds are the steadier measure).\n\n" + "\n".join(lines))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="only print the table")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.settings[0], args.epsilon, args.seeds[0], args.out)
    elif args.table:
        print(tables(harness.read(args.results, name=RESULTS.name)))
    else:
        measure(args)


if __name__ == "__main__":
    main()
