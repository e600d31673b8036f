"""Reconstruction operators compared on identical measurements: workload error and seconds of every
operator on titanic and adult at three epsilons, and LeastSquares against dense least squares on
domains up to 10^6 cells.

Part 1 (McKenna et al. 2019, sec. 5.1 and Fig. 1d / 2a): on ``../shared/data`` titanic and adult,
the workload of 15 random attribute triples with prefix ranges on the numeric attributes
(``workload.range_marginals``, seed 0) is measured once per epsilon in {0.1, 1, 10} with HDMM's
marginal strategy (``select.HDMMMarginals``) and the Laplace mechanism (noise seed 0).  Every
reconstruction operator then runs on those same measurements; the table gives its workload error
(``metrics.workload_error``) and seconds, or why it refused (full-vector operators check the domain
size first).  The total is unknown to the operators (estimated from the measurements).  For scale,
the error of the uniform distribution with the true total is reported too.

Part 2: ``LeastSquares`` (implicit operators; LSMR or CHOLMOD, as ``method="auto"`` picks)
against Ektelo-style dense least squares (``numpy.linalg.lstsq`` on the materialised stacked
query) on 1-D and 2-D domains of 10^2 to 10^6 cells: a hierarchical (HB) strategy measured with
epsilon = 1 on 100,000 synthetic records.  Dense is skipped when the matrix would exceed
``--dense-mb``.  Reported: seconds, the largest difference between the two solutions (counts) and
the root-mean-square error of 1,000 random range queries.

    python benchmarks/reconstruct_compare.py [--pgm-iters 100] [--appgm-iters 300] [--dense-mb 256]

Writes ``benchmarks/results/reconstruct_compare.json`` and prints the markdown tables.
"""
from __future__ import annotations

import argparse

import numpy as np

import harness

from ektelo_pgm import Dataset, Domain
from ektelo_pgm import matrix as mx
from ektelo_pgm.estimate import FactoredEstimate
from ektelo_pgm.metrics import workload_error
from ektelo_pgm.operators import select
from ektelo_pgm.operators.least_squares import weighted_system
from ektelo_pgm.operators.measure import Laplace
from ektelo_pgm.operators.reconstruct import (APPGM, PGM, LeastSquares, LocalLeastSquares, MultiplicativeWeights,
                                              NonNegativeLeastSquares)
from ektelo_pgm.plans import compare
from ektelo_pgm.workload import range_marginals

DOC = harness.Doc(
    title="Reconstruction operators on identical measurements",
    rerun="PYTHONPATH=. python benchmarks/reconstruct_compare.py --pgm-iters 300 --appgm-iters 1000",
    reading="""
The full-vector operators refuse before allocating anything (titanic's data vector has 8.9e7 cells, adult's
4.1e16).  Local least squares is instantaneous but useless at small epsilon; the graphical models beat it by
7x (adult) to 20x (titanic) there, APPGM with the lowest errors on adult at epsilon 1 and 10 in seconds.
LeastSquares agrees with dense lstsq to 1e-11 counts where both run, is 7-110x faster from 1,000 cells, and
solves 10^6 cells in 1-5 s, where the dense matrix cannot be built.""",
    results=("reconstruct_compare.json",))


DATA = harness.DATA
RESULTS = harness.RESULTS / "reconstruct_compare.json"
NUMERIC = {"titanic": ["Age", "Fare"],
           "adult": ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]}
EPSILONS = (0.1, 1.0, 10.0)


def operators(pgm_iters: int, appgm_iters: int) -> dict:
    return {"LeastSquares": LeastSquares(), "NonNegativeLeastSquares": NonNegativeLeastSquares(),
            "MultiplicativeWeights": MultiplicativeWeights(), "LocalLeastSquares": LocalLeastSquares(),
            "PGM": PGM(iters=pgm_iters, method="accelerated"), "APPGM": APPGM(iters=appgm_iters)}


def part1(pgm_iters: int, appgm_iters: int) -> list[dict]:
    rows = []
    for name, numeric in NUMERIC.items():
        data = Dataset.load(DATA / f"{name}.csv", DATA / f"{name}-domain.json")
        workload = range_marginals(data.domain, numeric, triples=15, rng=0)
        queries, strategy_seconds, _ = harness.timed(lambda: select.HDMMMarginals(workload).select(data.domain))
        baseline = workload_error(workload, data, FactoredEstimate.uniform(data.domain, len(data)))
        print(f"{name}: domain {data.domain.size():.3g} cells, HDMM strategy of {len(queries)} marginals "
              f"in {strategy_seconds:.1f} s; the uniform estimate's error is {baseline:.3f}", flush=True)
        for epsilon in EPSILONS:
            measurements = Laplace(epsilon).measure(data, queries, rng=0)
            for r in compare(data.domain, measurements, operators(pgm_iters, appgm_iters), workload, data):
                rows.append({"dataset": name, "epsilon": epsilon, "operator": r.name, "error": r.error,
                             "seconds": r.seconds, "refused": r.refused, "strategy_marginals": len(queries),
                             "strategy_seconds": strategy_seconds, "uniform_error": baseline})
                what = f"refused ({r.refused[:80]}...)" if r.refused else f"error {r.error:.4f}"
                print(f"  eps={epsilon:g} {r.name}: {what} in {r.seconds:.2f} s", flush=True)
    return rows


def synthetic(shape, records: int = 100_000, seed: int = 0) -> Dataset:
    """Records on a grid: a mixture of three correlated Gaussian bumps, rounded and clipped."""
    rng = np.random.default_rng(seed)
    shape = np.array(shape)
    centres = rng.uniform(0.2, 0.8, size=(3, shape.size)) * shape
    which = rng.integers(0, 3, records)
    spread = rng.normal(size=(records, 1)) * 0.08 + rng.normal(size=(records, shape.size)) * 0.05
    cells = np.clip(np.rint(centres[which] + spread * shape), 0, shape - 1).astype(np.int64)
    names = ["x", "y"][: shape.size]
    return Dataset(cells, Domain(names, shape.tolist()))


def random_ranges(shape, count: int = 1000, seed: int = 1) -> mx.RangeQueries:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, shape, size=(count, len(shape)))
    b = rng.integers(0, shape, size=(count, len(shape)))
    return mx.RangeQueries(shape, np.minimum(a, b), np.maximum(a, b))


def part2(dense_mb: float) -> list[dict]:
    rows = []
    shapes = [(100,), (1000,), (10_000,), (100_000,), (1_000_000,),
              (10, 10), (32, 32), (100, 100), (316, 316), (1000, 1000)]
    for shape in shapes:
        data = synthetic(shape)
        domain = data.domain
        queries = select.HB(domain.attrs).select(domain)
        measurements = Laplace(1.0).measure(data, queries, rng=0)
        ranges = random_ranges(shape)
        truth = ranges @ data.datavector()
        row = {"shape": list(shape), "cells": domain.size(), "strategy_rows": int(queries[0].local(domain).shape[0])}
        solver = LeastSquares()
        x, seconds, _ = harness.timed(lambda: solver.reconstruct(domain, measurements).vector)
        row.update(ls_seconds=seconds, ls_solver=solver.solver_,
                   ls_rmse=float(np.sqrt(np.mean((ranges @ x - truth) ** 2))))
        mb = row["strategy_rows"] * row["cells"] * 8 / 2**20
        if mb > dense_mb:
            row["dense"] = f"skipped: the dense matrix would need {mb:,.0f} MB (limit {dense_mb:,.0f} MB)"
        else:
            A, b = weighted_system(domain, measurements)
            z, seconds, _ = harness.timed(lambda: np.linalg.lstsq(A.dense(), b, rcond=None)[0])
            row.update(dense="ran", dense_seconds=seconds, dense_mb=mb,
                       max_difference=float(np.abs(z - x).max()),
                       dense_rmse=float(np.sqrt(np.mean((ranges @ z - truth) ** 2))))
        rows.append(row)
        dense = row["dense"] if row["dense"] != "ran" else f"{row['dense_seconds']:.2f} s"
        print(f"  {shape}: LS {row['ls_seconds']:.2f} s ({row['ls_solver']}), dense: {dense}", flush=True)
    return rows


def tables(results: dict) -> str:
    """The two tables: workload error (seconds) per operator; LeastSquares against dense lstsq."""
    result = results["reconstruct_compare.json"]
    lines = ["| dataset (uniform's error) | epsilon | " + " | ".join(operators(1, 1)) + " |",
             "|---|---|" + "---|" * len(operators(1, 1))]
    cells = {(r["dataset"], r["epsilon"], r["operator"]): r for r in result["reconstruct"]}
    for name in NUMERIC:
        for epsilon in EPSILONS:
            out = []
            for op in operators(1, 1):
                r = cells[(name, epsilon, op)]
                out.append("refuses (domain size)" if r["refused"] else f"{r['error']:.3f} ({r['seconds']:.1f} s)")
            baseline = cells[(name, epsilon, "PGM")]["uniform_error"]
            lines.append(f"| {name} ({baseline:.3f}) | {epsilon:g} | " + " | ".join(out) + " |")
    lines += ["", "| shape | cells | LeastSquares s (solver) | LS range RMSE | dense lstsq s | dense RMSE | "
                  "max difference |", "|---|---|---|---|---|---|---|"]
    for r in result["least_squares"]:
        shape = " x ".join(str(s) for s in r["shape"])
        head = f"| {shape} | {r['cells']:,} | {r['ls_seconds']:.2f} ({r['ls_solver']}) | {r['ls_rmse']:.1f} |"
        if r["dense"] == "ran":
            lines.append(f"{head} {r['dense_seconds']:.2f} | {r['dense_rmse']:.1f} | {r['max_difference']:.1e} |")
        else:
            lines.append(f"{head} {r['dense']} | | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pgm-iters", type=int, default=100, help="PGM iterations (accelerated, Algorithm 2)")
    parser.add_argument("--appgm-iters", type=int, default=300, help="APPGM proximal iterations")
    parser.add_argument("--dense-mb", type=float, default=256.0, help="largest dense matrix for numpy lstsq")
    args = parser.parse_args()
    clock = harness.Clock()
    print("Part 1: reconstruction operators on identical measurements", flush=True)
    reconstruct = part1(args.pgm_iters, args.appgm_iters)
    print("Part 2: LeastSquares against dense lstsq on range workloads", flush=True)
    least_squares = part2(args.dense_mb)
    result = {"settings": {"pgm_iters": args.pgm_iters, "appgm_iters": args.appgm_iters,
                           "dense_mb": args.dense_mb, "epsilons": list(EPSILONS), "numeric": NUMERIC,
                           "workload": "range_marginals(triples=15, rng=0)", "noise_seed": 0},
              "seconds": clock.elapsed(),
              "reconstruct": reconstruct, "least_squares": least_squares}
    harness.save(RESULTS, result)
    print(tables({RESULTS.name: result}))


if __name__ == "__main__":
    main()
