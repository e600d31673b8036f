"""APPGM against exact Private-PGM, the experiments of McKenna et al. 2021, sec. 5, Figure 2: seconds
per iteration as the measured triples grow to 10,000, accuracy in and out of the model, and how
closely records sampled from APPGM follow its pseudo-marginals.

Scalability (Fig. 2c): 100 attributes of size 10, k 3-way marginals of a synthetic dataset
measured with Laplace noise (epsilon = 1 in total, scale k per cell), chosen

* ``random``: uniformly random distinct triples;
* ``greedy``: each next triple keeps the junction tree as small as a few candidates allow
  (see :func:`greedy_triples`).

For each k the seconds per iteration of APPGM (saturated region graph and factor graph) and of
exact PGM (mirror descent, Algorithm 1), from the callbacks' timestamps (median gap), plus the
one-off set-up seconds.  Exact PGM is run until it refuses (junction tree above ``--exact-mb``)
or its per-iteration time passes ``--exact-seconds``; the larger k of that scheme are skipped.

Accuracy (Fig. 2a-b): 8 attributes of size 4, k random triples of the 56 measured (epsilon = 1,
Laplace scale k), ``--iters`` iterations of each method, average L1 error per marginal divided
by the number of records, on the measured and on the 56 - k unmeasured triples, over
``--trials`` trials; the noisy answers themselves are the baseline for the measured ones.

Synthetic data: how closely records sampled from APPGM estimates reproduce the pseudo-marginals
of the measured triples, against the sampling noise expected at that number of records.

Writes ``benchmarks/results/appgm_scaling.json`` and prints markdown tables.

    PYTHONPATH=. python benchmarks/appgm_scaling.py [--ks 1 10 100 1000 10000] [--trials 3]
        [--iters 2000] [--sections scalability accuracy synthetic]
"""
from __future__ import annotations

import argparse
import json
import time
from itertools import combinations
from pathlib import Path

import numpy as np

import harness
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.domain import Domain
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.reconstruct import APPGM, PGM
from ektelo_pgm.pgm.junction_tree import JunctionTree

DOC = harness.Doc(
    title="APPGM against exact Private-PGM at scale",
    rerun="PYTHONPATH=. python benchmarks/appgm_scaling.py      # --sections scalability accuracy synthetic",
    reading="""
Exact PGM refuses between 30 and 100 random triples and between 300 and 1000 greedy ones (the paper: about
50 and 1000); APPGM runs 10,000 triples in both schemes in about a second an iteration, its cost following
the region cells.  On measured marginals exact PGM is best, then the saturated region graph, then the factor
graph.  Records sampled from saturated estimates match the pseudo-marginals to sampling noise up to k = 32;
factor-graph pseudo-marginals cannot be matched once triples overlap in pairs.""",
    results=("appgm_scaling.json",))


RESULTS = harness.RESULTS / "appgm_scaling.json"


def synthetic_data(d: int, size: int, records: int, rng) -> Dataset:
    """Records of a random chain-structured distribution: each attribute copies a random earlier
    one (shifted) with probability 0.5, else is uniform."""
    domain = Domain([f"a{i}" for i in range(d)], [size] * d)
    x = np.zeros((records, d), dtype=np.int64)
    x[:, 0] = rng.integers(0, size, records)
    for j in range(1, d):
        source = rng.integers(0, j)
        copy = rng.random(records) < 0.5
        x[:, j] = np.where(copy, (x[:, source] + rng.integers(0, 2, records)) % size, rng.integers(0, size, records))
    return Dataset(x, domain)


def random_triples(d: int, k: int, rng) -> list[tuple[int, ...]]:
    chosen: set[tuple[int, ...]] = set()
    while len(chosen) < k:
        chosen.add(tuple(sorted(rng.choice(d, 3, replace=False).tolist())))
    return sorted(chosen, key=lambda t: rng.random())


def greedy_triples(domain: Domain, k: int, rng, candidates: int = 12, give_up_mb: float = 1e5) -> list[tuple[int, ...]]:
    """Triples chosen to keep the junction tree small (McKenna et al. 2021, sec. 5, "greedy").

    The junction tree of the triples so far is kept; an unmeasured triple inside one of its cliques
    costs nothing and is taken when random draws find one; otherwise, of ``candidates`` triples
    (two attributes of a random clique plus one more, or fully random), the one whose addition
    gives the smallest junction tree (cells) is taken.  Once the tree passes ``give_up_mb`` (far
    beyond exact inference), candidates are ranked by the number of new attribute pairs instead.
    """
    d = len(domain)
    names = domain.attrs
    cliques: list[tuple[int, ...]] = []
    pairs: set[tuple[int, int]] = set()
    chosen: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()
    big = False

    def tree(extra):
        jt = JunctionTree(domain, [tuple(names[i] for i in c) for c in cliques + extra], max_mb=float("inf"))
        return jt

    while len(chosen) < k:
        t = None
        wide = [c for c in cliques if len(c) >= 3]
        for _ in range(30 if wide else 0):
            c = wide[rng.integers(len(wide))]
            trial = tuple(sorted(rng.choice(c, 3, replace=False).tolist()))
            if trial not in seen:
                t = trial
                break
        if t is None:
            pool = []
            for _ in range(candidates):
                if cliques and rng.random() < 0.5:
                    c = cliques[rng.integers(len(cliques))]
                    two = rng.choice(c, min(2, len(c)), replace=False).tolist()
                    rest = [a for a in range(d) if a not in two]
                    trial = tuple(sorted(set(two + rng.choice(rest, 3 - len(two), replace=False).tolist())))
                else:
                    trial = tuple(sorted(rng.choice(d, 3, replace=False).tolist()))
                if trial not in seen:
                    pool.append(trial)
            if not pool:
                continue
            if big:
                t = min(pool, key=lambda c: sum(1 for e in combinations(c, 2) if e not in pairs))
                cliques.append(t)
            else:
                t = min(pool, key=lambda c: tree([c]).cells)
                jt = tree([t])
                cliques = [tuple(sorted(names.index(a) for a in c)) for c in jt.cliques if len(c) > 1]
                big = jt.mb > give_up_mb
        seen.add(t)
        chosen.append(t)
        pairs.update(combinations(t, 2))
    return chosen


def measure(data: Dataset, triples, epsilon: float, rng) -> list[Measurement]:
    """Laplace(k / epsilon) noise on every cell of every measured marginal (std sqrt(2) k / epsilon)."""
    scale = len(triples) / epsilon
    out = []
    for t in triples:
        attrs = tuple(data.domain.attrs[i] for i in t)
        y = data.marginal(attrs).ravel()
        out.append(Measurement(attrs, y + rng.laplace(0, scale, y.size), np.sqrt(2) * scale))
    return out


def timed(kind: str, iters: int, domain, measurements, total, exact_mb: float = 1024.0):
    """(set-up seconds, median seconds per iteration, estimate) of one reconstruction.

    ``kind`` is "exact" (PGM) or a region graph of APPGM; set-up is the time to the first callback.
    """
    stamps = []
    start = time.perf_counter()
    tick = lambda t, loss: stamps.append(time.perf_counter())
    if kind == "exact":
        estimate = PGM(iters=iters, max_mb=exact_mb).reconstruct(domain, measurements, total=total,
                                                                   callback=tick)
    else:
        estimate = APPGM(iters=iters, region_graph=kind, final_iters=0).reconstruct(
            domain, measurements, total=total, callback=tick)
    return stamps[0] - start, float(np.median(np.diff(stamps))), estimate


def scalability(ks, iters: int, exact_mb: float, exact_seconds: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    data = synthetic_data(100, 10, 10_000, rng)
    rows = []
    for scheme in ("random", "greedy"):
        if scheme == "random":
            triples = random_triples(100, max(ks), np.random.default_rng(seed + 1))
        else:
            triples = greedy_triples(data.domain, max(ks), np.random.default_rng(seed + 1))
        exact_alive = True
        for k in ks:
            ms = measure(data, triples[:k], 1.0, np.random.default_rng(seed + k))
            row = {"scheme": scheme, "k": k}
            for kind in ("saturated", "factor"):
                setup, per_iter, est = timed(kind, iters, data.domain, ms, float(len(data)))
                row[kind] = {"seconds_per_iter": per_iter, "setup_seconds": setup, "regions": len(est.graph.regions),
                             "cells": est.graph.cells}
            if exact_alive:
                try:
                    setup, per_iter, _ = timed("exact", iters, data.domain, ms, float(len(data)), exact_mb)
                    row["exact"] = {"seconds_per_iter": per_iter, "setup_seconds": setup}
                    exact_alive = per_iter <= exact_seconds
                except MemoryError as err:
                    row["exact"] = {"refused": str(err).split(";")[0]}
                    exact_alive = False
            else:
                row["exact"] = {"skipped": "refused or too slow at a smaller k"}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def l1(estimate, truth, total):
    return float(np.abs(estimate - truth).sum() / total)


def accuracy(ks, trials: int, iters: int, seed: int) -> list[dict]:
    rows = []
    all_triples = list(combinations(range(8), 3))
    for k in ks:
        errs = {m: {"in": [], "out": []} for m in ("noisy", "exact", "saturated", "factor")}
        seconds = {m: [] for m in ("exact", "saturated", "factor")}
        for trial in range(trials):
            rng = np.random.default_rng(seed + 1000 * trial + k)
            data = synthetic_data(8, 4, 10_000, rng)
            order = rng.permutation(len(all_triples))
            measured = [all_triples[i] for i in order[:k]]
            unmeasured = [all_triples[i] for i in order[k:]]
            ms = measure(data, measured, 1.0, rng)
            total = float(len(data))
            names = lambda ts: [tuple(data.domain.attrs[i] for i in t) for t in ts]
            for m in ms:
                errs["noisy"]["in"].append(l1(m.y, data.marginal(m.attrs).ravel(), total))
            ops = {"exact": PGM(iters=iters), "saturated": APPGM(iters=iters), "factor": APPGM(iters=iters, region_graph="factor")}
            for name, op in ops.items():
                est, wall, _ = harness.timed(lambda: op.reconstruct(data.domain, ms, total=total))
                seconds[name].append(wall)
                errs[name]["in"] += [l1(est.project(c), data.marginal(c), total) for c in names(measured)]
                errs[name]["out"] += [l1(est.project(c), data.marginal(c), total) for c in names(unmeasured)]
        row = {"k": k, "trials": trials, "iters": iters}
        for name, e in errs.items():
            row[name] = {"in_model": float(np.mean(e["in"])) if e["in"] else None,
                         "out_of_model": float(np.mean(e["out"])) if e["out"] else None}
            if name in seconds:
                row[name]["seconds"] = float(np.mean(seconds[name]))
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def synthetic_fit(ks, trials: int, iters: int, seed: int) -> list[dict]:
    """How closely APPGM's synthetic records reproduce its pseudo-marginals on the measured triples.

    Same set-up as :func:`accuracy`; ``n`` = 10,000 and 100,000 records from
    ``estimate.synthetic_data``.  Reports the average L1 distance per measured triple between the
    records' marginal and the pseudo-marginal (both as probabilities), the L1 expected from
    sampling noise alone (``sum sqrt(2 p (1 - p) / (pi n))``), and the pseudo-marginals' own
    error against the data, for scale.
    """
    rows = []
    all_triples = list(combinations(range(8), 3))
    for k in ks:
        for kind in ("saturated", "factor"):
            gap = {10_000: [], 100_000: []}
            noise = {10_000: [], 100_000: []}
            error = []
            for trial in range(trials):
                rng = np.random.default_rng(seed + 1000 * trial + k)
                data = synthetic_data(8, 4, 10_000, rng)
                order = rng.permutation(len(all_triples))
                measured = [tuple(data.domain.attrs[i] for i in all_triples[j]) for j in order[:k]]
                ms = measure(data, [all_triples[j] for j in order[:k]], 1.0, rng)
                est = APPGM(iters=iters, region_graph=kind).reconstruct(data.domain, ms, total=float(len(data)))
                for n in gap:
                    records = est.synthetic_data(n=n, rng=trial)
                    for c in measured:
                        p = est.project(c) / est.total
                        gap[n].append(float(np.abs(records.marginal(c) / n - p).sum()))
                        noise[n].append(float(np.sum(np.sqrt(2 * p * (1 - p) / (np.pi * n)))))
                error += [l1(est.project(c), data.marginal(c), len(data)) for c in measured]
            row = {"k": k, "region_graph": kind, "pseudo_marginal_error": float(np.mean(error))}
            for n in gap:
                row[f"n={n}"] = {"synthetic_gap": float(np.mean(gap[n])), "sampling_noise": float(np.mean(noise[n]))}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def fmt(x, spec=".3g"):
    return "-" if x is None else format(x, spec)


def tables(results: dict) -> str:
    result = results["appgm_scaling.json"]
    lines = ["| scheme | k | saturated s/iter | factor s/iter | exact s/iter | saturated regions (cells) |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in result["scalability"]:
        e = r["exact"]
        exact = fmt(e["seconds_per_iter"]) if "seconds_per_iter" in e else ("refused" if "refused" in e else "skipped")
        lines.append(f"| {r['scheme']} | {r['k']} | {fmt(r['saturated']['seconds_per_iter'])} | "
                     f"{fmt(r['factor']['seconds_per_iter'])} | {exact} | "
                     f"{r['saturated']['regions']:,} ({r['saturated']['cells']:,}) |")
    lines += ["", "| k | noisy (in) | exact in / out | saturated in / out | factor in / out |",
              "|---:|---:|---:|---:|---:|"]
    for r in result["accuracy"]:
        cell = lambda m: f"{fmt(r[m]['in_model'])} / {fmt(r[m]['out_of_model'])}"
        lines.append(f"| {r['k']} | {fmt(r['noisy']['in_model'])} | {cell('exact')} | {cell('saturated')} | {cell('factor')} |")
    lines += ["", "| k | region graph | records vs pseudo-marginals, n=10k (noise) | n=100k (noise) | pseudo-marginals vs data |",
              "|---:|---|---:|---:|---:|"]
    for r in result.get("synthetic", []):
        cell = lambda n: f"{fmt(r[n]['synthetic_gap'])} ({fmt(r[n]['sampling_noise'])})"
        lines.append(f"| {r['k']} | {r['region_graph']} | {cell('n=10000')} | {cell('n=100000')} | "
                     f"{fmt(r['pseudo_marginal_error'])} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[1, 3, 10, 30, 100, 300, 1000, 3000, 10000])
    parser.add_argument("--scale-iters", type=int, default=6, help="iterations timed per scalability case")
    parser.add_argument("--exact-mb", type=float, default=512.0, help="largest junction tree exact PGM may build")
    parser.add_argument("--exact-seconds", type=float, default=20.0, help="stop exact PGM past this s/iter")
    parser.add_argument("--accuracy-ks", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 56])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--iters", type=int, default=2000, help="iterations of each method for accuracy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--synthetic-ks", type=int, nargs="+", default=[8, 32, 56])
    parser.add_argument("--sections", nargs="+", default=["scalability", "accuracy", "synthetic"],
                        help="sections to run; the others are kept from an existing --out file")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    clock = harness.Clock()
    result = json.loads(args.out.read_text()) if args.out.exists() else {}
    result.update({"args": {k: str(v) for k, v in vars(args).items()}})
    if "scalability" in args.sections:
        result["scalability"] = scalability(args.ks, args.scale_iters, args.exact_mb, args.exact_seconds, args.seed)
    if "accuracy" in args.sections:
        result["accuracy"] = accuracy(args.accuracy_ks, args.trials, args.iters, args.seed)
    if "synthetic" in args.sections:
        result["synthetic"] = synthetic_fit(args.synthetic_ks, args.trials, args.iters, args.seed)
    result[f"seconds_{'_'.join(args.sections)}"] = clock.elapsed()
    harness.save(args.out, result)
    print(tables({RESULTS.name: result}))


if __name__ == "__main__":
    main()
