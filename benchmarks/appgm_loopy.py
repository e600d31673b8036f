"""APPGM's defaults on loopy region graphs of adult against the proximal loop and exact Private-PGM.

Cases (saturated region graphs, none of them a junction tree): every 1-way marginal plus three
3-way marginals in a cycle, (age, education, sex), (sex, race, income>50K), (income>50K,
hours-per-week, age) (3,319 cells), measured (1) at std 10, (2) AIM-like (1-way at std 100, the
triples at 80, 40, 20), (3) by HDMM's Gaussian strategy for the three triples (rho = 1); and (4)
all 105 2-way marginals at std 20 (35,570 cells; exact Private-PGM refuses its junction tree).
Methods: APPGM's default (``method="auto"``: the augmented Lagrangian on these graphs),
``method="mirror"`` (the proximal loop, the default before), both at APPGM's default of 1000
iterations, and exact Private-PGM's default, whose loss over the marginal polytope bounds the
relaxation's optimum from above.  "bound" is the largest certified lower bound on the
relaxation's optimum (the default's loss minus its gap).

    PYTHONPATH=. python benchmarks/appgm_loopy.py    (JSON in benchmarks/results/appgm_loopy.json)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from datetime import datetime, timezone
from itertools import combinations
from pathlib import Path

import numpy as np

from ektelo_pgm import Budget, Dataset
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.measure import Gaussian
from ektelo_pgm.operators.reconstruct import APPGM, PGM
from ektelo_pgm.operators.select import HDMMMarginals
from ektelo_pgm.pgm.appgm import MeasuredCliques

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "appgm_loopy.json"
DOCS = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- appgm_loopy:start -->", "<!-- appgm_loopy:end -->"
CYCLE = [("age", "education", "sex"), ("sex", "race", "income>50K"), ("income>50K", "hours-per-week", "age")]


def noisy_marginals(data, cliques, stds, rng):
    return [Measurement(c, data.marginal(c).ravel() + rng.normal(0.0, s, data.domain.size(c)), s)
            for c, s in zip(cliques, stds)]


def cases(data):
    ones = [(a,) for a in data.domain.attrs]
    pairs = list(combinations(data.domain.attrs, 2))
    return {
        "cycle, std 10": noisy_marginals(data, ones + CYCLE, [10.0] * 18, np.random.default_rng(0)),
        "cycle, AIM-like": noisy_marginals(data, ones + CYCLE, [100.0] * 15 + [80.0, 40.0, 20.0],
                                           np.random.default_rng(4)),
        "cycle, HDMM strategy": Gaussian(1.0).measure(data, HDMMMarginals(CYCLE, noise="gaussian").select(data.domain),
                                                      Budget.zcdp(1.0), rng=2),
        "all 2-way, std 20": noisy_marginals(data, pairs, [20.0] * len(pairs), np.random.default_rng(5)),
    }


def timed(run):
    start, cpu = time.perf_counter(), time.process_time()
    out = run()
    return out, time.perf_counter() - start, time.process_time() - cpu


def run_case(data, measurements):
    domain, total = data.domain, float(len(data.records))
    row = {}
    for label, method in (("default", "auto"), ("mirror", "mirror")):
        est, seconds, cpu = timed(lambda: APPGM(method=method).reconstruct(domain, measurements, total))
        objective = MeasuredCliques(est.graph, measurements)
        row[label] = {"loss": objective(est.beliefs)[0], "gap": est.gap, "iterations": est.iterations,
                      "converged": bool(est.converged), "seconds": seconds, "cpu_seconds": cpu,
                      "cells": est.graph.cells}
    try:
        model, seconds, cpu = timed(lambda: PGM().reconstruct(domain, measurements, total))
        marginals = np.concatenate([model.project(r).ravel() for r in est.graph.regions])
        row["exact"] = {"loss": objective(marginals)[0], "seconds": seconds, "cpu_seconds": cpu,
                        "iterations": model.iterations}
    except (MemoryError, ValueError) as error:
        row["exact"] = {"refused": str(error).split("\n")[0]}
    return row


def table(results):
    lines = ["| case | cells | default: loss / gap (relative) / converged / iterations / s | "
             "mirror (before): loss, above the bound / s | exact PGM: loss / s | default vs exact |",
             "|---|---:|---|---|---|---|"]
    for case, r in results.items():
        d, m, e = r["default"], r["mirror"], r["exact"]
        bound = d["loss"] - d["gap"]
        exact = "refused" if "refused" in e else f"{e['loss']:.4f} / {e['seconds']:.1f}"
        versus = "-" if "refused" in e else f"{(d['loss'] - e['loss']) / e['loss']:+.1e}"
        lines.append(f"| {case} | {d['cells']:,} | {d['loss']:.4f} / {d['gap'] / d['loss']:.1e} / "
                     f"{'yes' if d['converged'] else 'no'} / {d['iterations']} / {d['seconds']:.1f} | "
                     f"{m['loss']:.2f}, {(m['loss'] - bound) / bound:+.1%} / {m['seconds']:.1f} | {exact} | {versus} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = parser.parse_args()
    data = Dataset.load(args.data / "adult.csv", args.data / "adult-domain.json")
    started, start_load = datetime.now(timezone.utc), os.getloadavg()[0]
    APPGM(iters=5).reconstruct(data.domain, cases(data)["cycle, std 10"], float(len(data.records)))  # kernels loaded
    results = {}
    for name, measurements in cases(data).items():
        results[name] = run_case(data, measurements)
        print(name, results[name], flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    conditions = (f"Run {started:%Y-%m-%d %H:%M} UTC on commit {commit.strip()}, {platform.machine()}, "
                  f"{os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {start_load:.1f} at the "
                  f"start and {os.getloadavg()[0]:.1f} at the end; wall seconds.")
    RESULTS.write_text(json.dumps({"conditions": conditions, "results": results}, indent=1))
    text = f"{START}\n{conditions}\n\n{table(results)}\n{END}"
    print(text)
    doc = DOCS.read_text()
    if START in doc:
        DOCS.write_text(doc[:doc.index(START)] + text + doc[doc.index(END) + len(END):])


if __name__ == "__main__":
    main()
