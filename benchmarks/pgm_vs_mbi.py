"""Side by side: this project's PGM reconstruction against mbi 2.0 (Private-PGM) on the same noisy
measurements of adult (every 1-way marginal plus k random 3-way marginals): first-call and
per-iteration seconds, the loss and L1 errors reached, and the time end to end.

Both estimators get the same noisy measurements of ../shared/data/adult -- every 1-way marginal
plus k random 3-way marginals, Gaussian noise of a fixed std (counts) -- and run mirror descent
with Armijo line search (McKenna et al. 2019, sec. 3.2, Algorithm 1) for the same number of
iterations, in the same process, in float64.  Every (k, seed) case runs in its own subprocess so
that first-call times include each side's just-in-time compilation.

Reported per side: first-call time (estimate, compilation included), time per iteration (from two
warm runs, so fixed set-up costs cancel), the L2 loss reached, L1 error / N on the measured
marginals and on all 2-way marginals, and end-to-end time (first estimate, then every 2-way
marginal).  Loss and errors are computed by the functions below from each estimate's marginals,
identically for both sides.

Run with the peers virtual environment (see benchmarks/setup_peers.sh):
    ../venvs/peers/bin/python benchmarks/pgm_vs_mbi.py [--quick]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path

import networkx as nx
import numpy as np
from networkx.algorithms.approximation import treewidth_min_fill_in

import harness
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.reconstruct import PGM

DOC = harness.Doc(
    title="PGM against mbi 2.0",
    rerun="../venvs/peers/bin/python benchmarks/pgm_vs_mbi.py          # --quick: a two-minute smoke test",
    reading="""
Loss and both errors are no worse than mbi's on every case, and an iteration is 2-4x faster.  End to end
ours is 5-160x faster where its kernels come from numba's disk cache; a first run on a fresh installation
pays about 11 s of compilation, and a case whose cache was invalidated during the run (k = 5, seed 0) or
that ran on one core beside another job (k = 20, seed 1) falls below 5x.  Rechecked on an idle machine
(second table) k = 20, seed 1 is 6.7x end to end.""",
    results=("pgm_vs_mbi.json", "pgm_vs_mbi_recheck.json"))


REPO = harness.REPO


def mbi():
    """mbi, with JAX in float64 and without its compilation cache: settings of the benchmark
    process, never of ektelo_pgm."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    import mbi as package

    return package


# ----------------------------------------------------------------------------------------------
# Measurements
# ----------------------------------------------------------------------------------------------


def load_adult(data_dir: Path) -> Dataset:
    """The integer-coded adult data set from the shared data directory."""
    return Dataset.load(data_dir / "adult.csv", data_dir / "adult-domain.json")


def tree_cells(domain, cliques) -> int:
    """Cells (sum over bags of the product of sizes) of a min-fill tree decomposition."""
    graph = nx.Graph()
    graph.add_nodes_from(domain.attrs)
    for clique in cliques:
        graph.add_edges_from(itertools.combinations(clique, 2))
    _, tree = treewidth_min_fill_in(graph)
    return sum(domain.size(bag) for bag in tree.nodes)


def choose_triples(domain, count: int, max_cells: float, rng) -> list[tuple[str, ...]]:
    """``count`` random 3-way cliques, in random order, skipping any that would push the
    min-fill junction tree of the accepted ones above ``max_cells`` cells.

    Uniformly random triples of adult reach 10^9 cells by k = 20, which neither side could
    estimate; the cap keeps every case feasible while still reaching millions of cells.  The
    choice is sequential, so for one seed the k = 10 cliques are the first 10 of the k = 40 ones.
    """
    rng = np.random.default_rng(rng)
    candidates = list(itertools.combinations(domain.attrs, 3))
    chosen: list[tuple[str, ...]] = []
    for index in rng.permutation(len(candidates)):
        if len(chosen) == count:
            break
        if tree_cells(domain, chosen + [candidates[index]]) <= max_cells:
            chosen.append(candidates[index])
    if len(chosen) < count:
        raise ValueError(
            f"only {len(chosen)} 3-way cliques fit under {max_cells:.3g} junction-tree cells, "
            f"{count} asked: raise --max-cells or lower k"
        )
    return chosen


def measure(data: Dataset, cliques, sigma: float, rng) -> list[Measurement]:
    """Noisy marginals (counts, Gaussian noise of std ``sigma``) on each clique."""
    rng = np.random.default_rng(rng)
    out = []
    for clique in cliques:
        marginal = data.marginal(clique).ravel()
        out.append(Measurement(clique, marginal + rng.normal(0.0, sigma, marginal.size), sigma))
    return out


# ----------------------------------------------------------------------------------------------
# One scoring of both sides
# ----------------------------------------------------------------------------------------------


def l2_loss(project, domain, measurements) -> float:
    """sum over measurements of ||(Q mu - y) / std||^2 / 2, mu from ``project(attrs)`` (counts)."""
    loss = 0.0
    for m in measurements:
        residual = (m.query_for(domain) @ project(m.attrs).ravel() - m.y) * m.weights
        loss += 0.5 * float(residual @ residual)
    return loss


def l1_error(marginals, truths, records: int) -> float:
    """Mean over cliques of ||estimate - truth||_1 / N (N = true number of records)."""
    return float(np.mean([np.abs(m - t).sum() / records for m, t in zip(marginals, truths)]))


class Ours:
    """ektelo_pgm.operators.reconstruct.PGM, mirror descent."""

    name = "ektelo_pgm"

    def __init__(self, domain, measurements):
        self.domain, self.measurements = domain, measurements

    def fit(self, iters: int):
        """The estimate after at most ``iters`` iterations; ``self.iterations`` says how many ran
        (ours stops early when no step decreases the loss any more)."""
        model = PGM(iters=iters, method="mirror").reconstruct(self.domain, self.measurements, total=None)
        self.iterations = model.iterations
        return model

    @staticmethod
    def project(model, attrs) -> np.ndarray:
        return np.asarray(model.project(attrs), dtype=np.float64)

    @staticmethod
    def total(model) -> float:
        return float(model.total)


class Mbi:
    """mbi 2.0 MirrorDescent (Armijo line search, default oracle) on the same measurements."""

    name = "mbi"

    def __init__(self, domain, measurements):
        self.mbi = mbi()
        self.domain = self.mbi.Domain(domain.attrs, domain.shape)
        self.measurements = [self.mbi.LinearMeasurement(m.y, m.attrs, stddev=m.std) for m in measurements]

    def fit(self, iters: int):
        """The estimate after ``iters`` iterations, rounded up to mbi's blocks of fused steps."""
        import jax
        from mbi.estimation import CALLBACK_EVERY, MirrorDescent

        model = MirrorDescent().estimate(self.domain, self.measurements, iters=iters)
        self.iterations = CALLBACK_EVERY * -(-iters // CALLBACK_EVERY)
        return jax.block_until_ready(model)

    @staticmethod
    def project(model, attrs) -> np.ndarray:
        return np.asarray(model.project(tuple(attrs)).transpose(tuple(attrs)).datavector(flatten=False))

    @staticmethod
    def total(model) -> float:
        return float(model.total)

    def tree_cells(self) -> int:
        """Cells of mbi's own junction tree for these cliques."""
        tree, _ = self.mbi.junction_tree.make_junction_tree(self.domain, [m.clique for m in self.measurements])
        return sum(self.domain.size(clique) for clique in tree.nodes)


def timed(call):
    """``(call(), wall seconds)``."""
    value, wall, _ = harness.timed(call)
    return value, wall


def per_iteration(side, short: int, long: int, budget: float) -> tuple[float, int]:
    """Seconds per iteration of warm estimates: (best long run - best short run) / (iterations
    the long run did - iterations the short run did).

    The pair of runs repeats until ``budget`` seconds are spent (at least once, at most 20 times);
    the fastest of each length is kept, so fixed per-call costs cancel and the load of a shared
    machine is filtered out where runs are cheap.
    """
    best_short = best_long = float("inf")
    spent, repeats = 0.0, 0
    while repeats == 0 or (spent < budget and repeats < 20):
        _, short_seconds = timed(lambda: side.fit(short))
        short_done = side.iterations
        _, long_seconds = timed(lambda: side.fit(long))
        long_done = side.iterations
        best_short, best_long = min(best_short, short_seconds), min(best_long, long_seconds)
        spent, repeats = spent + short_seconds + long_seconds, repeats + 1
    if long_done <= short_done:
        raise RuntimeError(f"{side.name} stopped after {long_done} iterations: raise --timing-iters' first value")
    return (best_long - best_short) / (long_done - short_done), repeats


def bench_side(side, domain, measurements, truths, pairs, pair_truths, records, iters, timing_iters, budget):
    """Time and score one side on one case (units: seconds, counts)."""
    model, first_call = timed(lambda: side.fit(iters))
    iterations = side.iterations
    two_way, two_way_seconds = timed(lambda: [side.project(model, pair) for pair in pairs])
    per_iter, repeats = per_iteration(side, *timing_iters, budget)
    measured = [side.project(model, m.attrs) for m in measurements]
    return {
        "iterations": iterations,
        "first_call_s": first_call,
        "first_call_overhead_s": first_call - iterations * per_iter,
        "per_iter_ms": 1000.0 * per_iter,
        "timing_repeats": repeats,
        "two_way_s": two_way_seconds,
        "end_to_end_s": first_call + two_way_seconds,
        "loss": l2_loss(lambda attrs: side.project(model, attrs), domain, measurements),
        "err_measured": l1_error(measured, truths, records),
        "err_2way": l1_error(two_way, pair_truths, records),
        "total": side.total(model),
    }


def run_case(args, k: int, seed: int) -> dict:
    """Build the measurements of case (k, seed) and benchmark both sides on them."""
    data = load_adult(args.data)
    domain = data.domain
    clique_seed, noise_seed = np.random.SeedSequence(seed).spawn(2)
    triples = choose_triples(domain, k, args.max_cells, clique_seed)
    cliques = [(a,) for a in domain.attrs] + triples
    measurements = measure(data, cliques, args.sigma, noise_seed)
    truths = [data.marginal(m.attrs) for m in measurements]
    pairs = list(itertools.combinations(domain.attrs, 2))[: args.max_pairs]
    pair_truths = [data.marginal(pair) for pair in pairs]
    noisy = [m.y.reshape(t.shape) for m, t in zip(measurements, truths)]
    mbi_side = Mbi(domain, measurements)
    case = {
        "k": k,
        "seed": seed,
        "cliques": [list(c) for c in triples],
        "tree_cells_mbi": mbi_side.tree_cells(),
        "err_measured_noisy_y": l1_error(noisy, truths, len(data)),
        "load_before": os.getloadavg()[0],
    }
    for side in (Ours(domain, measurements), mbi_side):
        case[side.name] = bench_side(
            side, domain, measurements, truths, pairs, pair_truths, len(data), args.iters, args.timing_iters,
            args.timing_budget,
        )
    case["load_after"] = os.getloadavg()[0]
    return case


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------


def compare(case: dict, tolerance: float) -> dict:
    """Ratios (ours / mbi; speed-ups mbi / ours) and the issue's targets for one case."""
    ours, peer = case["ektelo_pgm"], case["mbi"]
    ratios = {
        "loss": ours["loss"] / peer["loss"],
        "err_measured": ours["err_measured"] / peer["err_measured"],
        "err_2way": ours["err_2way"] / peer["err_2way"],
        "per_iter_speedup": peer["per_iter_ms"] / ours["per_iter_ms"],
        "first_call_speedup": peer["first_call_s"] / ours["first_call_s"],
        "end_to_end_speedup": peer["end_to_end_s"] / ours["end_to_end_s"],
    }
    targets = {
        "loss_no_worse": ratios["loss"] <= 1 + tolerance,
        "errors_no_worse": max(ratios["err_measured"], ratios["err_2way"]) <= 1 + tolerance,
        "per_iter_no_slower": ratios["per_iter_speedup"] >= 1.0,
        "end_to_end_5x": ratios["end_to_end_speedup"] >= 5.0,
    }
    return {"ratios": ratios, "targets": targets}


def markdown(results: dict) -> str:
    """The results table (one row per case) and a line of targets, as markdown."""
    cfg = results["config"]
    lines = [
        f"adult ({cfg['records']} records, {cfg['attributes']} attributes), every 1-way marginal plus "
        f"k random 3-way marginals (junction tree capped at {cfg['max_cells']:.3g} cells by min-fill), "
        f"Gaussian noise std {cfg['sigma']:g}, {cfg['iters']} iterations of mirror descent each, "
        f"float64, both sides in one process per case.  Ratios are ours / mbi; speed-ups mbi / ours.",
        "",
        "| k | seed | tree cells (mbi) | iterations (ours / mbi) | first call s (ours / mbi) | of which set-up s | ms / iter (ours / mbi, speed-up) "
        "| loss (ours / mbi, ratio) | L1/N measured (ours / mbi) | L1/N all 2-way (ours / mbi) "
        "| end-to-end s (ours / mbi, speed-up) |",
        "|---:|---:|---:|---|---|---|---|---|---|---|---|",
    ]
    for case in results["cases"]:
        o, m, r = case["ektelo_pgm"], case["mbi"], case["compare"]["ratios"]
        lines.append(
            f"| {case['k']} | {case['seed']} | {case['tree_cells_mbi']:,} | {o['iterations']} / {m['iterations']} "
            f"| {o['first_call_s']:.2f} / {m['first_call_s']:.2f} "
            f"| {o['first_call_overhead_s']:.2f} / {m['first_call_overhead_s']:.2f} "
            f"| {o['per_iter_ms']:.2f} / {m['per_iter_ms']:.2f}, {r['per_iter_speedup']:.2f}x "
            f"| {o['loss']:.6g} / {m['loss']:.6g}, {r['loss']:.5f} "
            f"| {o['err_measured']:.5f} / {m['err_measured']:.5f} "
            f"| {o['err_2way']:.5f} / {m['err_2way']:.5f} "
            f"| {o['end_to_end_s']:.2f} / {m['end_to_end_s']:.2f}, {r['end_to_end_speedup']:.1f}x |"
        )
    met = results["summary"]["targets_met"]
    lines += [
        "",
        "Targets (issue 3) met on every case: "
        + ", ".join(f"{name.replace('_', ' ')}: {'yes' if ok else 'NO'}" for name, ok in met.items())
        + f" (loss and errors compared with relative tolerance {cfg['tolerance']:g}).",
    ]
    return "\n".join(lines)


def tables(results: dict) -> str:
    """The full run's table, then the recheck's."""
    return "\n\n".join([markdown(results["pgm_vs_mbi.json"]), "Recheck on an idle machine:",
                         markdown(results["pgm_vs_mbi_recheck.json"])])


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="shared data directory")
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 5, 10, 20, 40], help="numbers of 3-way marginals")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument(
        "--cases", nargs="+", metavar="K:SEED",
        help="explicit (k, seed) cases instead of every k with every seed, e.g. 0:0 40:0 40:1",
    )
    parser.add_argument("--sigma", type=float, default=10.0, help="noise std (counts)")
    parser.add_argument("--iters", type=int, default=1000, help="mirror-descent iterations per estimate")
    parser.add_argument(
        "--timing-iters", type=int, nargs=2, default=[50, 150],
        help="iterations of the two warm runs whose difference gives the time per iteration",
    )
    parser.add_argument(
        "--timing-budget", type=float, default=10.0,
        help="seconds per side after which the timing runs stop repeating",
    )
    parser.add_argument("--max-cells", type=float, default=2e6, help="junction-tree cap when choosing cliques")
    parser.add_argument("--max-pairs", type=int, default=None, help="score only the first this many 2-way marginals")
    parser.add_argument("--tolerance", type=float, default=1e-3, help="relative slack for 'no worse' loss and errors")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "pgm_vs_mbi.json")
    parser.add_argument("--quick", action="store_true", help="smoke test: k in {0, 3}, one seed, 100 iterations")
    parser.add_argument("--worker", type=int, nargs=2, metavar=("K", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.ks, args.seeds, args.iters, args.timing_iters, args.max_pairs = [0, 3], [0], 100, [50, 100], 15
        args.timing_budget, args.cases = 2.0, None
        args.out = Path(tempfile.gettempdir()) / "pgm_vs_mbi_quick.json"
    if args.cases is None:
        args.cases = list(itertools.product(args.ks, args.seeds))
    else:
        try:
            args.cases = [tuple(int(x) for x in case.split(":")) for case in args.cases]
        except ValueError:
            parser.error("--cases: each case is K:SEED, two integers")
        if any(len(case) != 2 for case in args.cases):
            parser.error("--cases: each case is K:SEED, two integers")
    if args.timing_iters[1] <= args.timing_iters[0]:
        parser.error("--timing-iters: the second run must be longer than the first")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker is not None:
        print(json.dumps(run_case(args, *args.worker)))
        return
    passthrough = list(argv if argv is not None else sys.argv[1:])
    data = load_adult(args.data)
    code_before = harness.code_state()
    cases = []
    for k, seed in args.cases:
        print(f"case k={k} seed={seed} ...", file=sys.stderr, flush=True)
        worker = harness.child(Path(__file__).resolve(), *passthrough, "--worker", k, seed)
        if not worker.ok:
            sys.exit(f"case k={k} seed={seed} failed:\n{worker.errors}")
        case = worker.result()
        case["compare"] = compare(case, args.tolerance)
        cases.append(case)
    results = {
        "config": {
            "data": "adult",
            "records": len(data),
            "attributes": len(data.domain),
            "cases": args.cases,
            "sigma": args.sigma,
            "iters": args.iters,
            "timing_iters": args.timing_iters,
            "timing_budget_s": args.timing_budget,
            "max_cells": args.max_cells,
            "max_pairs": args.max_pairs,
            "tolerance": args.tolerance,
            "code": {"before": code_before, "after": harness.code_state()},
        },
        "cases": cases,
        "summary": {
            "targets_met": {
                name: all(c["compare"]["targets"][name] for c in cases) for name in cases[0]["compare"]["targets"]
            },
            "geomean": {
                name: float(np.exp(np.mean([np.log(c["compare"]["ratios"][name]) for c in cases])))
                for name in cases[0]["compare"]["ratios"]
            },
        },
    }
    harness.save(args.out, results, "mbi", "jax")
    print(markdown(results))


if __name__ == "__main__":
    main()
