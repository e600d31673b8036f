"""How often the error bars of ``ektelo_pgm.uncertainty`` cover the truth: the simulated coverage of
measured intervals against the noise law's exact coverage, and how often AIM's model bounds hold.

Measured intervals: on a real table's largest 3-way marginals, every run measures one marginal
with the Gaussian (zCDP) or Laplace (pure) operator at several noise scales, and every cell's
95% interval of the marginal and of each of its 2-way and 1-way sub-marginals is checked
against the true count; the exact coverage the noise law gives is printed beside the
simulated one.

AIM's model bound: AIM runs at several budgets and seeds; for every 2-way marginal whose
interval is a model bound, the true L1 error of the model is compared with the bound (held
or not, and the ratio error / bound).

    .venv/bin/python benchmarks/error_bars_coverage.py --runs 400 --seeds 10

Results go to benchmarks/results/error_bars_coverage.json and the table to docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import itertools
import json

import numpy as np

import harness

DOC = harness.Doc(
    title="Error bars: coverage of the intervals",
    rerun=".venv/bin/python benchmarks/error_bars_coverage.py",
    reading="""
The measured intervals cover the true counts at the level asked: the simulated coverage matches the noise
law's exact coverage, for Gaussian and Laplace noise and for sums of cells.  AIM's model bounds on the 2-way
marginals it did not measure held in every run (bound held 1.000), most errors well below their bound.""",
    results=("error_bars_coverage.json",))


RESULTS = harness.RESULTS / "error_bars_coverage.json"
DATA = harness.DATA


def load(name: str):
    from ektelo_pgm.dataset import Dataset

    return Dataset.load(DATA / f"{name}.csv", DATA / f"{name}-domain.json")


def exact_coverage(law, count: int, level: float) -> float:
    """The probability that the interval of ``count`` summed draws of ``law`` covers."""
    from ektelo_pgm.uncertainty import half_width, sum_law

    width = half_width(law, count, level) / law.unit
    low, p = sum_law(*law.probabilities(), count)
    return float(p[np.abs(np.arange(low, low + p.size)) <= width].sum())


def measured(data, runs: int, level: float) -> list[dict]:
    from ektelo_pgm.estimate import FactoredEstimate
    from ektelo_pgm.operators.measure import Gaussian, Laplace
    from ektelo_pgm.privacy import Budget
    from ektelo_pgm.uncertainty import ErrorBars
    from ektelo_pgm.workload import Query

    triple = max(itertools.combinations(data.domain.attrs, 3), key=data.domain.size)
    subsets = [triple, *itertools.combinations(triple, 2), *((a,) for a in triple)]
    estimate = FactoredEstimate.uniform(data.domain, len(data))
    out = []
    for noise, operator, budget in [("gaussian", Gaussian, lambda: Budget.zcdp(1e9)),
                                    ("laplace", Laplace, lambda: Budget.pure(1e9))]:
        parameters = (0.1, 0.01, 0.001) if noise == "gaussian" else (1.0, 0.3, 0.1)
        for parameter in parameters:
            clock = harness.Clock()
            hits = {attrs: [] for attrs in subsets}
            for seed in range(runs):
                bars = ErrorBars(estimate, operator(parameter).measure(data, [Query(triple)], budget(), seed))
                for attrs in subsets:
                    interval = bars.marginal(attrs, level)
                    truth = data.marginal(attrs)
                    hits[attrs].append(((truth >= interval.lower) & (truth <= interval.upper)).ravel())
            law = operator(parameter).measure(data, [Query(triple)], budget(), 0)[0].noise
            for attrs, h in hits.items():
                h = np.concatenate(h)
                summed = data.domain.size(triple) // data.domain.size(attrs)
                out.append({"noise": noise, "parameter": parameter, "std": law.std, "attrs": list(attrs),
                            "cells_summed": summed, "cells_checked": int(h.size), "coverage": float(h.mean()),
                            "exact": exact_coverage(law, summed, level), "seconds": clock.elapsed()})
    return out


def model_bounds(data, epsilons, seeds: int, level: float) -> list[dict]:
    from ektelo_pgm.mechanisms import AIM
    from ektelo_pgm.privacy import Budget

    out = []
    for epsilon in epsilons:
        for seed in range(seeds):
            clock = harness.Clock()
            result = AIM().run(data, Budget.approx(epsilon, 1e-9), rng=seed)
            bars = result.error_bars()
            for attrs in itertools.combinations(data.domain.attrs, 2):
                interval = bars.marginal(attrs, level)
                if interval.basis != "model bound":
                    continue
                error = float(np.abs(data.marginal(attrs) - interval.counts).sum())
                out.append({"epsilon": epsilon, "seed": seed, "attrs": list(attrs), "error": error,
                            "bound": interval.l1_bound, "held": error <= interval.l1_bound,
                            "seconds": clock.elapsed()})
    return out


def tables(results: dict) -> str:
    report = results["error_bars_coverage.json"]
    lines = [f"Data: {report['data']}; level {report['level']}.  Measured intervals: one "
             "noisy 3-way marginal per run (the table's largest), its cells and those of its 2- and 1-way "
             "sub-marginals checked against the true counts; the exact coverage is the noise law's.  Model bounds: "
             "AIM's bound on the L1 error of every 2-way marginal it did not measure, against the true error.", "",
             "| noise | std (counts) | marginal cells summed | cells checked | simulated coverage | exact coverage |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in report["measured"]:
        lines.append(f"| {r['noise']} | {r['std']:.2f} | {r['cells_summed']} | {r['cells_checked']:,} | "
                     f"{r['coverage']:.4f} | {r['exact']:.4f} |")
    lines += ["", "| AIM epsilon | 2-way marginals with a model bound (all seeds) | bound held | "
              "median error / bound | max error / bound |", "|---:|---:|---:|---:|---:|"]
    for epsilon in sorted({r["epsilon"] for r in report["model"]}):
        rows = [r for r in report["model"] if r["epsilon"] == epsilon]
        ratios = [r["error"] / r["bound"] for r in rows]
        lines.append(f"| {epsilon:g} | {len(rows)} | {np.mean([r['held'] for r in rows]):.3f} | "
                     f"{np.median(ratios):.3f} | {max(ratios):.3f} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="titanic", help="a table of ../shared/data (default titanic)")
    parser.add_argument("--runs", type=int, default=400, help="measurements per noise scale")
    parser.add_argument("--seeds", type=int, default=10, help="AIM runs per epsilon")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--table", action="store_true", help="only print the tables of the JSON")
    args = parser.parse_args(argv)
    if args.table:
        report = json.loads(RESULTS.read_text())
    else:
        data = load(args.data)
        report = {"data": args.data, "level": args.level, "code": harness.code_state(),
                  "measured": measured(data, args.runs, args.level),
                  "model": model_bounds(data, args.epsilons, args.seeds, args.level)}
        harness.save(RESULTS, report)
    print(tables({RESULTS.name: report}))


if __name__ == "__main__":
    main()
