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

``--tables`` also runs the wide tables of ``real_tables.py``'s corpus (``real_tables_fetch.py``)
through the steward's ``Synthesizer`` at its defaults: ``2-way`` is its AIM above 16 columns,
``3-way`` and ``linked`` the same with every 3-way marginal as the workload (``workload=None``);
the 2-way and 3-way TVD over every pair and triple of the table's numeric, categorical and date
columns in ``real_tables``' evaluation coding (numbers in the real deciles).  ``ames[20:40]``
names the table of those columns 20 to 39 of ames (in the corpus' order): a table of 17 to 24
columns, just past where the steward stops taking every 3-way marginal.

    .venv/bin/python benchmarks/aim_wide.py --settings linked 3-way 2-way --seeds 0
    .venv/bin/python benchmarks/aim_wide.py --tables ames loans movies hotel_rates --seeds 0 1 2
    .venv/bin/python benchmarks/aim_wide.py --tables "ames[20:40]" "loans[30:54]" --settings 3-way 2-way
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
    rerun=""".venv/bin/python benchmarks/aim_wide.py --settings linked 3-way 2-way --seeds 0 1 2
.venv/bin/python benchmarks/aim_wide.py --tables ames loans movies hotel_rates --seeds 0 1 2
.venv/bin/python benchmarks/aim_wide.py --tables ames --settings 3-way 2-way --seeds 3 4 5 6 7 8 9
.venv/bin/python benchmarks/aim_wide.py --tables "ames[0:20]" "ames[20:40]" "ames[40:60]" "ames[54:74]" \\
    "hotel_rates[0:20]" "hotel_rates[4:28]" "loans[0:20]" "loans[20:40]" "loans[30:54]" --settings 3-way 2-way \\
    --seeds 0 1 2""",
    reading="""
With the linked 3-way candidates (`linked`), a round measuring one never growing the budget, bn75's mean 3-way TVD
over all 67,525 triples is 0.0235-0.0240 (three seeds) against 0.0259-0.0263 for 2-way only, its 181 family triples
0.065-0.069 against 0.140, in 374-456 s (644-783 CPU s against 246-352); growing it there (the paper): 0.025-0.028.
Through `synth` on the corpus' wide tables, 3-way candidates are level with 2-way (linked, by seed: ames, loans,
hotel_rates -3% to +5%, movies 0.063 against 0.067) at 1.2-3.4x the CPU; past 16 columns the steward uses 2-way.""",
    results=("aim_wide.json",))

REPO = harness.REPO
RESULTS = harness.RESULTS / "aim_wide.json"
ATTRIBUTES, ROWS, DELTA = 75, 50_000, 1e-9
SETTINGS = ("linked", "3-way", "2-way")
#: The generated network sample's name among ``--tables``.
NETWORK = "bn75"


def key(row) -> tuple:
    return row.get("table", NETWORK), row["setting"], row["epsilon"], row["seed"], row["code"]


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


def corpus_part(name: str) -> tuple[str, slice | None]:
    """The corpus table that ``name`` names and the slice of its numeric, categorical and date
    columns that ``table[lo:hi]`` takes (module docstring); None for the whole table."""
    if "[" not in name:
        return name, None
    table, bounds = name[:-1].split("[")
    lo, hi = (int(bound) for bound in bounds.split(":"))
    return table, slice(lo, hi)


def corpus_worker(name: str, setting: str, epsilon: float, seed: int, out: Path) -> None:
    """The steward's AIM on the corpus table ``name``, or on its slice of columns (module docstring)."""
    import real_tables

    from ektelo_pgm import Dataset, Domain
    from ektelo_pgm.metrics import total_variation
    from ektelo_pgm.synthesizer import AIM_TRIPLES_UP_TO, Synthesizer

    table, part = corpus_part(name)
    entry = real_tables.load_manifest(real_tables.CORPUS)[table]
    real = real_tables.read_table(real_tables.CORPUS / entry["file"])
    columns = real_tables.variant_columns(entry, "as-is")
    modelled = [c for c in columns if c["kind"] in real_tables.MODELLED]
    if part is not None:
        columns = modelled = modelled[part]
        real = real[[c["name"] for c in columns]]
    if setting == "2-way" and len(modelled) <= AIM_TRIPLES_UP_TO:
        raise SystemExit(f"aim_wide: {name} has {len(modelled)} columns; the steward's AIM takes only 2-way "
                         f"marginals past {AIM_TRIPLES_UP_TO}")
    options = {"2-way": {}, "3-way": {"workload": None}, "linked": {"workload": None, "linked_only": True}}
    synth = Synthesizer("aim", epsilon=epsilon, delta=DELTA, seed=seed, progress=False, **options[setting])
    with harness.clock() as whole:
        synthetic = synth.fit(real).sample(len(real))
    real_m, synth_m = real_tables.modelled_frame(real, columns), real_tables.modelled_frame(synthetic, columns)
    coding = real_tables.EvaluationCoding(real_m, [c["name"] for c in columns if c["kind"] in ("numeric", "date")], 10)
    domain = Domain(coding.columns, coding.sizes())
    truth, fake = Dataset(coding.codes(real_m), domain), Dataset(coding.codes(synth_m), domain)
    tvd2, tvd3 = (total_variation(list(itertools.combinations(coding.columns, k)), truth, fake) for k in (2, 3))
    out.write_text(json.dumps({"wall": whole.wall, "cpu": whole.cpu, "rows": len(real),
                               "attributes": len(coding.columns), "max_candidates": synth.params.get("max_candidates"),
                               "chosen_3way": sum(len(c) == 3 for c in synth.estimate.cliques),
                               "tvd2": tvd2, "tvd3": tvd3}))


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
    for name, seed, setting in itertools.product(args.tables, args.seeds, args.settings):
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "run.json"
            load = os.getloadavg()[0]
            harness.child(Path(__file__).resolve(), "--worker", "--tables", name, "--settings", setting,
                          "--epsilon", repr(args.epsilon), "--seeds", seed, "--out", out, check=True)
            row = {"table": name, "setting": setting, "epsilon": args.epsilon, "seed": seed,
                   "code": harness.code_state(), "attributes": ATTRIBUTES, "rows": ROWS, "load_before": load,
                   "when": harness.now(), **json.loads(out.read_text())}
        runs = [r for r in load_runs(args.results) if key(r) != key(row)] + [row]
        print(json.dumps(row), flush=True)
        save_runs(args.results, runs, key, {"delta": DELTA, "attributes": ATTRIBUTES, "rows": ROWS})
    print(tables(harness.read(args.results, name=RESULTS.name)))


def tables(results: dict) -> str:
    runs = results["aim_wide.json"]["runs"]
    lines = ["| table (columns, rows) | setting | epsilon | seed | date | candidates a round | rounds | 3-way chosen | "
             "largest tree (cells) | wall s | CPU s | 2-way TVD | 3-way TVD | families' 3-way TVD | load |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    newest = harness.newest(runs, lambda r: key(r)[:4])  # the JSON keeps earlier code's runs
    for r in sorted(newest, key=lambda r: (key(r)[0] != NETWORK, key(r)[:4])):
        budget = "all" if r["max_candidates"] is None else f"{r['max_candidates']:,}"
        lines.append(f"| {key(r)[0]} ({r['attributes']}, {r['rows']:,}) | {r['setting']} | "
                     f"{r['epsilon']:g} | {r['seed']} | {r['when'][:10]} | {budget} | {r.get('rounds', '-')} | "
                     f"{r['chosen_3way']} | " + (f"{r['largest_tree']:,}" if "largest_tree" in r else "-")
                     + f" | {r['wall']:.1f} | {r['cpu']:.1f} | {r['tvd2']:.4f} | {r['tvd3']:.4f} | "
                     + (f"{r['tvd3_families']:.4f}" if "tvd3_families" in r else "-") + f" | {r['load_before']:.1f} |")
    return (f"{NETWORK}: a {ATTRIBUTES}-attribute network sample, AIM with max_mb 32; the others: tables of the "
            "real-tables corpus through the steward's Synthesizer (3-way chosen: the released model's 3-way "
            "cliques); delta 1e-9; one process per run on the shared 2-core machine (load: its 1-minute load "
            "average when the run began, other work ran beside: CPU seconds are the steadier measure).\n\n"
            + "\n".join(lines))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", default=[NETWORK],
                        help=f"{NETWORK} (the generated network sample) or tables of real_tables.py's corpus")
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="only print the table")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker and args.tables[0] == NETWORK:
        worker(args.settings[0], args.epsilon, args.seeds[0], args.out)
    elif args.worker:
        corpus_worker(args.tables[0], args.settings[0], args.epsilon, args.seeds[0], args.out)
    elif args.table:
        print(tables(harness.read(args.results, name=RESULTS.name)))
    else:
        measure(args)


if __name__ == "__main__":
    main()
