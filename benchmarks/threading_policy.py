"""Serial against parallel kernels beside CPU-bound competitors: PGM (Algorithm 1, fixed
iterations) on adult, every 1-way marginal plus k random 3-way marginals at std 10, in fresh
processes with ``NUMBA_NUM_THREADS`` 1 or 2 under the kernels' own policy
(``ektelo_pgm.kernels.tree.parallel_cells``: parallel only with an idle core per extra thread)
and with parallel forced (the policy's load reading replaced by an idle machine).

    python benchmarks/threading_policy.py [--competitors 0 1 2] [--repeats 2]

Each run reports wall and CPU seconds of the estimate alone (kernels loaded from the on-disk
cache, one warm-up call first); a competitor is a Python busy loop, started before and stopped
after the runs of its row.  Results: ``benchmarks/results/threading_policy.json`` and the table in
docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import harness

DOC = harness.Doc(
    title="Serial or parallel kernels on a busy machine",
    rerun="python benchmarks/threading_policy.py [--competitors 0 1 2] [--repeats 2]",
    reading="""
On the idle machine the policy goes parallel, about 1.3x faster than one thread, as forcing does.  Beside
one or two busy loops it stays serial, within the timing noise of one thread, where forced parallel kernels
take 2-3x (one competitor) and 7-30x (two) the wall time.""",
    results=("threading_policy.json",))


RESULTS = harness.RESULTS / "threading_policy.json"
CASES = ((10, 300), (13, 100))  # (3-way marginals, iterations): 245k- and 957k-cell junction trees

CHILD = """
import json, sys, time
import numpy as np
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.kernels import tree
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.reconstruct import PGM
k, iters, forced, data_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
if forced:
    tree.idle_cores = lambda: float("inf")
data = Dataset.load(f"{data_dir}/adult.csv", f"{data_dir}/adult-domain.json")
rng = np.random.default_rng(0)
attrs = data.domain.attrs
cliques = [(a,) for a in attrs] + [tuple(attrs[i] for i in sorted(rng.choice(len(attrs), 3, replace=False)))
                                   for _ in range(k)]
ms = []
for clique in cliques:
    counts = data.marginal(clique).ravel()
    ms.append(Measurement(clique, counts + rng.normal(0, 10, counts.size), 10.0))
PGM(iters=2, method="mirror").reconstruct(data.domain, ms)
wall, cpu = time.perf_counter(), time.process_time()
model = PGM(iters=iters, method="mirror").reconstruct(data.domain, ms)
print(json.dumps({"cells": int(model.oracle.layout.clique_off[-1]), "iterations": model.iterations,
                  "parallel": tree.parallel_cells() != tree.SERIAL,
                  "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}))
"""

BUSY = "import time\nend = time.time() + 3600\nwhile time.time() < end:\n    pass\n"


def run(k: int, iters: int, threads: int, forced: bool, data_dir: Path) -> dict:
    result = harness.run([sys.executable, "-c", CHILD, k, iters, 1 if forced else 0, data_dir],
                         env={"NUMBA_NUM_THREADS": str(threads)}, cwd=harness.REPO, check=True).result()
    return {**result, "k": k, "threads": threads, "forced": forced, "load": os.getloadavg()[0]}


def tables(results: dict) -> str:
    rows = results["threading_policy.json"]["runs"]
    lines = ["| competitors | 3-way marginals / tree cells | iterations | 1 thread: wall / CPU s | "
             "2 threads, policy: wall / CPU s (parallel?) | 2 threads, forced parallel: wall / CPU s | load |",
             "|---:|---|---:|---|---|---|---|"]
    keyed = {}
    for r in rows:
        keyed.setdefault((r["competitors"], r["k"]), []).append(r)

    def cell(runs):
        return ", ".join(f"{r['wall']:.2f} / {r['cpu']:.2f}" for r in runs)

    for (competitors, k), runs in keyed.items():
        one = [r for r in runs if r["threads"] == 1]
        policy = [r for r in runs if r["threads"] == 2 and not r["forced"]]
        forced = [r for r in runs if r["forced"]]
        loads = [r["load"] for r in runs]
        lines.append(f"| {competitors} | {k} / {runs[0]['cells']:,} | {runs[0]['iterations']} | {cell(one)} | "
                     f"{cell(policy)} ({'yes' if any(r['parallel'] for r in policy) else 'no'}) | {cell(forced)} | "
                     f"{min(loads):.1f}-{max(loads):.1f} |")
    lines += ["", "Wall and CPU seconds of the estimate alone; load: the 1-minute load average after each run, "
              "competitors included."]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=harness.DATA)
    parser.add_argument("--competitors", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for competitors in args.competitors:
        busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(competitors)]
        try:
            time.sleep(2.0 if busy else 0.0)
            for k, iters in CASES:
                for _ in range(args.repeats):
                    for threads, forced in ((1, False), (2, False), (2, True)):
                        rows.append({**run(k, iters, threads, forced, args.data), "competitors": competitors})
                        print(rows[-1], flush=True)
        finally:
            for process in busy:
                process.kill()
                process.wait()
    conditions = (f"Load column: the 1-minute load average after each run, competitors included; {args.repeats} "
                  "runs per cell.")
    harness.save(RESULTS, {"conditions": conditions, "runs": rows})
    print(tables(harness.read(RESULTS)))


if __name__ == "__main__":
    main()
