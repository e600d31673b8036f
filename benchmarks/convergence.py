"""Iterations and seconds to reach a relative loss gap of 1e-3 and 1e-6, per reconstruction, on
the same measurements: ektelo_pgm's PGM (its default, which is ``lbfgs`` on these L2 losses, then
``mirror`` and ``accelerated``), APPGM with its defaults on the saturated region graph and on the
junction tree (every case's cliques form a junction tree, so both are exact and run exact
Private-PGM's L-BFGS), MultiplicativeWeights, and mbi 2.0's MirrorDescent.

Run in the peers environment, from the repository root:

    PYTHONPATH=. ../venvs/peers/bin/python benchmarks/convergence.py [--quick] [--only LABEL ...]

``--only`` reruns the named rows (e.g. ``APPGM "APPGM tree (lbfgs)"``) against the stored ``f*``
and keeps the others.

Cases (all L2 losses weighted by 1/std):

(a) ``hetero``: the heterogeneous-noise family of tests/test_pgm_convergence.py (3-6 attributes of
    size 2-4, 2-5 marginals, std log-uniform in [1e-2, 1e2], noiseless answers), seeds 0-9;
(b) ``adult``: adult, every 1-way marginal plus 3 random 3-way marginals, Gaussian noise std 10;
(c) ``hdmm``: adult, HDMM's optimised marginal strategy (``select.HDMMMarginals``) for 4 random
    3-way marginals, Gaussian mechanism at rho = 1 (one std per strategy marginal);
(d) ``aim``: adult, AIM-like budget annealing: every 1-way marginal at std 100, then 6 random
    2- and 3-way marginals with std halving from 80 to 2.5.

Each run records ``(seconds since its start, loss)`` after every iteration (mbi: every 50, its
fused block); the reference optimum ``f*`` of a case is the lowest loss any exact method reached
(APPGM's local-polytope relaxation may go below it and is not used).  The gap is ``(f - f*) /
max(f*, 1)`` (loss units: half a squared noise std; ektelo_pgm.convergence).  Times include each
side's set-up and compilation (numba kernels load from the on-disk cache; mbi's XLA programs are
compiled per clique structure) and the per-iteration callback.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import numpy as np

import harness
from adult_cases import adult_cases
from ektelo_pgm.domain import Domain
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights
from ektelo_pgm.operators.reconstruct import APPGM, PGM

DOC = harness.Doc(
    title="Convergence",
    rerun="PYTHONPATH=. ../venvs/peers/bin/python benchmarks/convergence.py     # --only LABEL reruns rows",
    reading="""
PGM's default (L-BFGS on the log-potentials) is the only PGM method that reaches 1e-3 on every case and the
only one that reaches 1e-6 at all; mirror descent, ours or mbi's, reaches 1e-3 on none within 3000
iterations.  APPGM on these junction-tree cases follows the default iteration for iteration.  MW with
Gauss-Newton steps certifies the small family in a few steps.  Wall seconds ran on a shared machine (load
about 5): the CPU column is steadier.""",
    results=("convergence.json",))


RESULTS = harness.RESULTS / "convergence.json"
TARGETS = (1e-3, 1e-6)
DEFAULT = "PGM default (lbfgs)"
TREE = "APPGM tree (lbfgs)"


def heterogeneous(seed: int, total: float = 1000.0):
    """The family of tests/test_pgm_convergence.py (noiseless)."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 7))
    domain = Domain([f"x{i}" for i in range(d)], rng.integers(2, 5, size=d).tolist())
    cube = total * rng.dirichlet(np.ones(domain.size())).reshape(domain.shape)
    out = []
    for _ in range(int(rng.integers(2, 6))):
        attrs = tuple(domain.attrs[i] for i in sorted(rng.choice(d, size=int(rng.integers(1, min(3, d) + 1)),
                                                                 replace=False)))
        y = cube.sum(axis=tuple(i for i, a in enumerate(domain.attrs) if a not in attrs)).ravel()
        out.append(Measurement(attrs, y, float(np.exp(rng.uniform(np.log(1e-2), np.log(1e2))))))
    return domain, out, total


def l2_loss(project, domain, measurements) -> float:
    loss = 0.0
    for m in measurements:
        residual = (m.query_for(domain) @ np.asarray(project(m.attrs)).ravel() - m.y) * m.weights
        loss += 0.5 * float(residual @ residual)
    return loss


def traced(run):
    """``(trace, seconds, cpu seconds)``: ``run(callback)`` with ``callback(t, loss)`` recording
    ``(t, s, loss)`` (wall seconds since the start); CPU seconds of the whole process (all threads)."""
    trace = []
    with harness.clock() as clock:
        run(lambda t, value: trace.append((int(t), clock.elapsed(), float(value))))
    return trace, clock.wall, clock.cpu


def ours(domain, ms, total, method, iters):
    return traced(lambda cb: PGM(iters=iters, method=method, tol=0.0).reconstruct(domain, ms, total, callback=cb))


def appgm(domain, ms, total, iters, region_graph="saturated"):
    return traced(lambda cb: APPGM(iters=iters, region_graph=region_graph).reconstruct(domain, ms, total, callback=cb))


def mw(domain, ms, total, iters):
    return traced(lambda cb: MultiplicativeWeights(iters=iters, tol=0.0).reconstruct(domain, ms, total, callback=cb))


def mbi_md(domain, ms, total, iters):
    import jax

    jax.config.update("jax_enable_x64", True)
    import mbi
    from mbi.estimation import MirrorDescent

    mdomain = mbi.Domain(domain.attrs, domain.shape)
    linear = [mbi.LinearMeasurement(m.y, m.attrs, stddev=m.std) for m in ms]
    blocks = []

    def run(cb):
        def every_block(marginals):
            blocks.append(None)
            project = lambda attrs: np.asarray(marginals.project(tuple(attrs)).transpose(tuple(attrs)).datavector(  # noqa: E731
                flatten=False))
            cb(50 * len(blocks), l2_loss(project, domain, ms))
        MirrorDescent().estimate(mdomain, linear, known_total=total, iters=iters, callback_fn=every_block)
    return traced(run)


def first_reach(trace, best, target):
    for t, seconds, value in trace:
        if (value - best) / max(best, 1.0) <= target:
            return t, seconds
    return None


def run_case(name, domain, ms, total, iters, small, only=None, best=None):
    """Every method on one case (``only``: those labels alone, against the stored ``best``)."""
    methods = {DEFAULT: lambda: ours(domain, ms, total, "auto", iters),
               "PGM mirror": lambda: ours(domain, ms, total, "mirror", iters),
               "PGM accelerated": lambda: ours(domain, ms, total, "accelerated", iters),
               "mbi MirrorDescent": lambda: mbi_md(domain, ms, total, iters),
               "APPGM": lambda: appgm(domain, ms, total, iters),
               TREE: lambda: appgm(domain, ms, total, iters, "tree")}
    if small:
        methods["MW"] = lambda: mw(domain, ms, total, 10 * iters)
    runs = {label: run() for label, run in methods.items() if only is None or label in only}
    if best is None:
        best = min(v for k in runs if not k.startswith("APPGM") for _, _, v in runs[k][0])
    out = {}
    for label, (trace, seconds, cpu) in runs.items():
        out[label] = {"final_loss": trace[-1][2] if trace else None, "iterations": trace[-1][0] if trace else 0,
                      "seconds": seconds, "cpu_seconds": cpu, "best": best,
                      "reach": {str(t): first_reach(trace, best, t) for t in TARGETS}}
    return out


def fmt(hit):
    return "-" if hit is None else f"{hit[0]} / {hit[1]:.2f}"


def table(results):
    labels = [DEFAULT, "PGM mirror", "PGM accelerated", "mbi MirrorDescent", "APPGM", TREE, "MW"]
    lines = ["| case | method | to 1e-3: iterations / s | to 1e-6: iterations / s | ran: iterations / s / CPU s | "
             "final gap |", "|---|---|---|---|---|---|"]
    for case, runs in results.items():
        for label in labels:
            if label not in runs:
                continue
            r = runs[label]
            gap = (r["final_loss"] - r["best"]) / max(r["best"], 1.0)
            lines.append(f"| {case} | {label} | {fmt(r['reach']['0.001'])} | {fmt(r['reach']['1e-06'])} | "
                         f"{r['iterations']} / {r['seconds']:.2f} / {r['cpu_seconds']:.2f} | {gap:.1e} |")
    return "\n".join(lines)


def tables(results: dict) -> str:
    return ("Seconds from the start of each run (set-up and compilation included), CPU seconds of the whole "
            "process; \"-\": not reached within the run.  When each row ran, and under what load, is in the "
            "JSON.\n\n" + table(results["convergence.json"]["results"]))


def family_row(hetero, label):
    """The heterogeneous family as one row: summed iterations and seconds (reached only if every case did)."""
    reach = {}
    for target in map(str, TARGETS):
        hits = [h[label]["reach"][target] for h in hetero]
        reach[target] = None if None in hits else (sum(h[0] for h in hits), sum(h[1] for h in hits))
    return {"final_loss": sum(h[label]["final_loss"] for h in hetero), "best": sum(h[label]["best"] for h in hetero),
            "iterations": sum(h[label]["iterations"] for h in hetero),
            "seconds": sum(h[label]["seconds"] for h in hetero),
            "cpu_seconds": sum(h[label]["cpu_seconds"] for h in hetero), "reach": reach}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=harness.DATA)
    parser.add_argument("--iters", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=10, help="cases of the heterogeneous family")
    parser.add_argument("--quick", action="store_true",
                        help="3 family cases, 300 iterations, adult only; results in the temporary directory")
    parser.add_argument("--only", nargs="+", metavar="LABEL",
                        help="rerun only these methods (e.g. APPGM) against the stored f*, keeping the other rows")
    args = parser.parse_args()
    results_file = Path(tempfile.gettempdir()) / "convergence_quick.json" if args.quick else RESULTS
    iters, seeds = (300, 3) if args.quick else (args.iters, args.seeds)
    only = None if args.only is None else set(args.only)
    stored = json.loads(RESULTS.read_text()) if only else {"results": {}, "family_cases": [None] * seeds}
    started, start_load = harness.now(), os.getloadavg()[0]
    domain, ms, total = heterogeneous(99)  # load every numba kernel from its cache before timing
    for method in ("auto", "mirror", "accelerated"):
        ours(domain, ms, total, method, 5)
    appgm(domain, ms, total, 5), appgm(domain, ms, total, 5, "tree"), mw(domain, ms, total, 5)
    results = stored["results"]
    hetero = stored["family_cases"]
    for s in range(seeds):
        best = None if hetero[s] is None else hetero[s][DEFAULT]["best"]
        hetero[s] = {**(hetero[s] or {}), **run_case(f"hetero {s}", *heterogeneous(s), iters, True, only, best)}
    family = f"(a) hetero, {seeds} cases summed"
    for label in hetero[0]:
        results.setdefault(family, {})[label] = family_row(hetero, label)
    for name, (domain, ms, total) in adult_cases(args.data).items():
        if args.quick and name != "adult":
            continue
        key = {"adult": "(b) adult 1-way + 3-way, std 10", "hdmm": "(c) adult HDMM strategy",
               "aim": "(d) adult AIM-like annealed"}[name]
        best = results[key][DEFAULT]["best"] if only else None
        results[key] = {**results.get(key, {}), **run_case(name, domain, ms, total, iters, False, only, best)}
        print(key, flush=True)
        harness.save(results_file, {"conditions": "partial", "results": results}, "mbi", "jax")
    load = os.getloadavg()
    run = (f"{started[:16]} UTC, load average at the start {start_load:.1f} and at the end {load[0]:.1f} "
           f"(shared machine: other jobs running)")
    if only:
        conditions = f"{stored['conditions']}  Rows {', '.join(sorted(only))} rerun {run}."
    else:
        conditions = f"Run {run}, one run per method, maximum {iters} iterations (MW {10 * iters})."
    harness.save(results_file, {"conditions": conditions, "results": results, "family_cases": hetero}, "mbi", "jax")
    print(f"{conditions}\n\n{table(results)}")


if __name__ == "__main__":
    main()
