"""Which method ``"auto"`` should pick for APPGM and PGM: wall-clock time to a given quality, from
small problems to the largest of the papers.

APPGM cases (saturated region graph, McKenna et al. 2021, sec. 5): records of the random
chain-structured model of ``appgm_scaling.synthetic_data``, every cell of each measured triple
with Gaussian noise of std 5,

- ``tiny``: 8 attributes of size 4, 8 random triples, 10,000 records (Fig. 2a-b's domain);
- ``small``: 10 attributes of size 10, 20 random triples, 20,000 records;
- ``medium``: 30 attributes of size 10, 100 random triples, 20,000 records;
- ``large``: 50 attributes of size 10, 300 random triples, 20,000 records;
- ``fig2c``: 100 attributes of size 10, 1000 random triples, 20,000 records (Fig. 2c's scale).

PGM cases (McKenna et al. 2019, sec. 5.2, Fig. 2b): attributes of size 10 following a random walk
(as ``pgm_scale.py``), 20,000 records, every triple of adjacent attributes measured with Gaussian
noise of std 5; ``chain10``, ``chain100`` and ``chain1000`` attributes.

Each method runs in its own process (``NUMBA_NUM_THREADS=1``; run the script under ``taskset -c
0``), its kernels compiled on a tiny problem first, then on the case with at most ``--iters``
iterations and a wall-clock cap (``--cap`` s, the process is killed past it, set-up included).
Every callback logs the loss against the seconds since the call began; at times growing by 20%
the error on the measured marginals is computed from the marginals the loss last saw (the time
this takes is left out of the clock).  Error: the mean over the measured triples of the total
variation distance ``sum |estimate - true| / (2 records)`` (the noisy measurements' own is
``std sqrt(2 / pi) cells / (2 records)``, about 0.1 on the size-10 cases).  PGM's mirror descent
(Algorithm 1) runs compiled and shows no marginals on the way: it is rerun at iteration budgets
1, 3, 10, ... (each run timed alone, set-up included) and its error is that of each run's model.
For the augmented Lagrangian the marginals on the way are those of its (not yet locally
consistent) iterates; its final estimate's are exact.

Per case and method: time to (a) the noisy measurements' error and (b) a loss within 1% (and 0.1%)
of the lowest loss any method reached on the case: the losses of returned estimates and those on the way,
except the augmented Lagrangian's on the way, whose iterates are not locally consistent until it
ends and may lie far below the optimum (its own times to a loss are those of these iterates, so
optimistic).  The proximal loop's iterates are consistent up to one message update (their loss
dipped up to 0.4% below its final one), L-BFGS's to 1e-12.

    taskset -c 0 .venv/bin/python benchmarks/defaults_by_time.py [--cases ...] [--methods ...] [--cap 120]
        [--calls mirror:100 augmented:20 ...] [--out FILE] [--table]

``--calls`` also times whole calls with those iteration budgets (final message passing included)
and scores the estimates they return.  The committed figures were run as
``--cases tiny small medium fig2c``, ``--cases large --methods augmented mirror --calls
augmented:20 mirror:100``, ``--cases chain10 chain100 chain1000`` and calls-only runs
(``--methods none --calls ...``: fig2c augmented:20 mirror:100, medium augmented:100 mirror:300
augmented:1000 mirror:1000, chain1000 mirror:300 accelerated:300 lbfgs:300), merged into one file.

Results go to benchmarks/results/defaults_by_time.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import harness

DOC = harness.Doc(
    title="Default methods by time to quality",
    rerun="taskset -c 0 .venv/bin/python benchmarks/defaults_by_time.py [--cases ...] [--calls mirror:100 ...]",
    reading="""
APPGM's `auto`: L-BFGS up to 1,000 region cells; the augmented Lagrangian from 1,000 to 250,000 (1% of the
best loss in 1.0 s and 4.5 s on small and medium, the proximal loop never and 39 s); the proximal loop above,
where 20 augmented-Lagrangian iterations return an estimate worse than the noisy measurements.  PGM's
`auto`: L-BFGS below 100,000 junction-tree cells, mirror descent above (300 iterations on the 1000-attribute
chain return 0.0175 after 20 s, L-BFGS 0.0218 after 133 s).""",
    results=("defaults_by_time.json",))


RESULTS = harness.RESULTS / "defaults_by_time.json"
ONE_THREAD = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
STD = 5.0
APPGM_CASES = {"tiny": (8, 4, 8, 10_000), "small": (10, 10, 20, 20_000), "medium": (30, 10, 100, 20_000),
               "large": (50, 10, 300, 20_000), "fig2c": (100, 10, 1000, 20_000)}  # attributes, size, triples, records
PGM_CASES = {"chain10": 10, "chain100": 100, "chain1000": 1000}
APPGM_METHODS = ("lbfgs", "augmented", "mirror")
PGM_METHODS = ("lbfgs", "mirror", "accelerated")
BUDGETS = (1, 3, 10, 30, 100, 300, 1000, 3000, 10000)  # iterations of PGM's compiled mirror descent, one run each
GROWTH = 1.2  # error checkpoints at times growing by this factor


def appgm_case(name: str, seed: int = 0):
    """(domain, measurements, true marginals in measurement order, records) of an APPGM case."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from appgm_scaling import random_triples, synthetic_data
    from ektelo_pgm.measurement import Measurement

    d, size, k, records = APPGM_CASES[name]
    rng = np.random.default_rng(seed)
    data = synthetic_data(d, size, records, rng)
    triples = random_triples(d, k, np.random.default_rng(seed + 1))
    noise = np.random.default_rng(seed + 2)
    measurements, truth = [], []
    for t in triples:
        attrs = tuple(data.domain.attrs[i] for i in t)
        y = data.marginal(attrs).ravel()
        measurements.append(Measurement(attrs, y + noise.normal(0, STD, y.size), STD))
        truth.append(y.astype(float))
    return data.domain, measurements, truth, float(records)


def pgm_case(name: str, seed: int = 0, records: int = 20_000):
    """The Fig. 2b chain (McKenna et al. 2019): a random walk over attributes of size 10, every
    adjacent triple measured."""
    from ektelo_pgm.dataset import Dataset
    from ektelo_pgm.domain import Domain
    from ektelo_pgm.measurement import Measurement

    d = PGM_CASES[name]
    rng = np.random.default_rng(seed)
    domain = Domain([f"a{i}" for i in range(d)], [10] * d)
    steps = rng.integers(-1, 2, size=(records, d))
    steps[:, 0] = rng.integers(0, 10, size=records)
    data = Dataset(np.cumsum(steps, axis=1) % 10, domain)
    measurements, truth = [], []
    for i in range(d - 2):
        attrs = (f"a{i}", f"a{i + 1}", f"a{i + 2}")
        y = data.marginal(attrs).ravel().astype(float)
        measurements.append(Measurement(attrs, y + rng.normal(0, STD, y.size), STD))
        truth.append(y)
    return domain, measurements, truth, float(records)


def error_of(estimates, truth, records) -> float:
    """Mean total variation distance over the measured marginals (flat, in measurement order)."""
    return float(np.mean([np.abs(e - t).sum() for e, t in zip(estimates, truth)]) / (2 * records))


class Stop(Exception):
    pass


def emit(**row):
    print(json.dumps(row), flush=True)


def child(family: str, case: str, method: str, iters: int, cap: float) -> None:
    """One method on one case: prints JSON lines ``{"t", "loss"}`` and ``{"t", "error"}``, then
    ``{"final": ...}``."""
    from ektelo_pgm.operators.reconstruct import APPGM, PGM
    from ektelo_pgm.pgm import estimation

    domain, measurements, truth, records = (appgm_case if family == "appgm" else pgm_case)(case)
    build = (lambda n: APPGM(iters=n, method=method)) if family == "appgm" else (lambda n: PGM(iters=n, method=method))
    tiny_domain, tiny_ms, _, tiny_n = appgm_case("tiny")
    build(3).reconstruct(tiny_domain, tiny_ms[:3], tiny_n)  # kernels compiled (and cached) before timing
    truth_flat = np.concatenate(truth)
    sizes = np.cumsum([t.size for t in truth])[:-1]

    def error(answers):
        return error_of(np.split(answers, sizes), truth, records)

    emit(noisy=error(np.concatenate([m.y for m in measurements])))
    if family == "pgm" and method == "mirror":  # compiled: no marginals on the way, so rerun per budget
        clock = time.perf_counter()
        for budget in BUDGETS:
            if budget > iters or time.perf_counter() - clock > cap:
                break
            log = []
            start = time.perf_counter()
            model = build(budget).reconstruct(domain, measurements, records, callback=lambda t, v: log.append(
                (time.perf_counter() - start, v)))
            seconds = time.perf_counter() - start
            for t, v in log[:: max(1, len(log) // 200)]:
                emit(t=t, loss=v, budget=budget)
            emit(t=seconds, error=error_of([model.project(m.attrs).ravel() for m in measurements], truth, records),
                 loss=float(model.loss), budget=budget)
        emit(final=True)
        return
    seen = {}
    original = estimation.Objective.__call__

    def spy(self, mu, grad=None):
        seen["objective"], seen["mu"] = self, mu
        return original(self, mu, grad)

    estimation.Objective.__call__ = spy
    state = {"excluded": 0.0, "next": 0.05, "logged": 0}
    start = time.perf_counter()

    def callback(t, value):
        now = time.perf_counter()
        elapsed = now - start - state["excluded"]
        if state["logged"] < 2000 or t % 10 == 0:
            emit(t=elapsed, loss=value)
            state["logged"] += 1
        if elapsed >= state["next"] and "mu" in seen:
            objective = seen["objective"]
            if objective.index.size == truth_flat.size:
                emit(t=elapsed, error=error(seen["mu"][objective.index]), loss=value)
            state["next"] = elapsed * GROWTH
        state["excluded"] += time.perf_counter() - now
        if elapsed > cap:
            raise Stop

    try:
        est = build(iters).reconstruct(domain, measurements, records, callback=callback)
    except Stop:
        emit(final=False)
        return
    seconds = time.perf_counter() - start - state["excluded"]
    estimation.Objective.__call__ = original
    answers = [np.asarray(est.project(m.attrs)).ravel() for m in measurements]
    loss = 0.5 * sum(float(((a - m.y) / STD) @ ((a - m.y) / STD)) for a, m in zip(answers, measurements))
    emit(t=seconds, error=error_of(answers, truth, records), loss=loss, final=True,
         iterations=int(getattr(est, "iterations", 0) or 0))


def returned(family: str, case: str, method: str, iters: int) -> None:
    """The estimate a call with at most ``iters`` iterations returns (final message passing
    included): its wall seconds and error, as one JSON line."""
    from ektelo_pgm.operators.reconstruct import APPGM, PGM

    build = (lambda n: APPGM(iters=n, method=method)) if family == "appgm" else (lambda n: PGM(iters=n, method=method))
    tiny_domain, tiny_ms, _, tiny_n = appgm_case("tiny")
    build(3).reconstruct(tiny_domain, tiny_ms[:3], tiny_n)
    domain, measurements, truth, records = (appgm_case if family == "appgm" else pgm_case)(case)
    stamps = []
    start = time.perf_counter()
    est = build(iters).reconstruct(domain, measurements, records,
                                   callback=lambda t, v: stamps.append(time.perf_counter() - start))
    seconds = time.perf_counter() - start
    emit(method=method, iters=iters, seconds=seconds, first_callback=stamps[0] if stamps else None,
         last_callback=stamps[-1] if stamps else None, iterations=int(getattr(est, "iterations", 0) or 0),
         error=error_of([np.asarray(est.project(m.attrs)).ravel() for m in measurements], truth, records))


def run_child(family, case, method, iters, cap) -> dict:
    done = harness.child(__file__, "--child", family, case, method, iters, cap, env=ONE_THREAD, timeout=cap + 60)
    killed = done.cut
    if not done.ok and not killed:
        print(done.tail(3000), file=sys.stderr)
    rows = [json.loads(line) for line in done.output.splitlines() if line.startswith("{")]
    losses = [(r["t"], r["loss"]) for r in rows if "loss" in r and "t" in r]
    errors = [(r["t"], r["error"]) for r in rows if "error" in r]
    final = next((r for r in rows if "final" in r), {})
    noisy = next((r["noisy"] for r in rows if "noisy" in r), None)
    return {"noisy": noisy, "losses": losses, "errors": errors, "finished": final.get("final") is True,
            "capped": killed or final.get("final") is False, "final": final,
            "process_seconds": done.wall}


def thinned(pairs, most: int = 300):
    """At most about ``most`` of the (time, value) pairs, the first and last kept (for the JSON file)."""
    step = max(1, len(pairs) // most)
    return pairs[::step] + ([pairs[-1]] if pairs and (len(pairs) - 1) % step else [])


def run_call(family, case, method, iters) -> dict:
    """:func:`returned` in its own process (one thread, as :func:`run_child`)."""
    return harness.child(__file__, "--returned", family, case, method, iters, 0, env=ONE_THREAD, check=True).result()


def first_time(pairs, ok):
    """Seconds of the first (time, value) pair with ok(value), else None."""
    return next((t for t, v in sorted(pairs) if ok(v)), None)


def summarise(runs: dict, appgm: bool) -> dict:
    noisy = next(r["noisy"] for r in runs.values() if r["noisy"] is not None)
    finals = [r["final"]["loss"] for r in runs.values() if r["finished"] and "loss" in r["final"]]
    on_way = [v for method, r in runs.items() if not (appgm and method == "augmented") for _, v in r["losses"]]
    best = min(finals + on_way)
    out = {"noisy_error": noisy, "best_loss": best}
    for method, r in runs.items():
        out[method] = {
            "to_noisy_error": first_time(r["errors"], lambda e: e <= noisy),
            "to_1pct_loss": first_time(r["losses"], lambda v: v <= 1.01 * best),
            "to_01pct_loss": first_time(r["losses"], lambda v: v <= 1.001 * best),
            "last_error": r["errors"][-1][1] if r["errors"] else None,
            "last_seconds": max([t for t, _ in r["losses"] + r["errors"]], default=None),
            "first_callback": min([t for t, _ in r["losses"]], default=None),
            "finished": r["finished"], "capped": r["capped"]}
    return out


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def table(results) -> str:
    lines = ["| case | method | first callback s | to noisy error s | to 1% of best loss s | to 0.1% s | "
             "last error (noisy) at s | ended |", "|---|---|---:|---:|---:|---:|---|---|"]
    for case, r in results.items():
        s = r["summary"]
        for method in r["methods"]:
            m = s[method]
            ended = "finished" if m["finished"] else ("cap" if m["capped"] else "failed")
            lines.append(f"| {case} ({r['describe']}) | {method} | {fmt(m['first_callback'], '.2f')} | "
                         f"{fmt(m['to_noisy_error'], '.2f')} | {fmt(m['to_1pct_loss'], '.2f')} | "
                         f"{fmt(m.get('to_01pct_loss'), '.2f')} | "
                         f"{fmt(m['last_error'], '.3f')} ({s['noisy_error']:.3f}) at {fmt(m['last_seconds'])} | "
                         f"{ended} |")
    return "\n".join(lines)


def calls_table(results) -> str:
    lines = ["| case | method, iterations | call s (first, last callback) | error of the estimate returned (noisy) | "
             "load average |", "|---|---|---:|---|---|"]
    for case, r in results.items():
        for c in r.get("calls", []):
            lines.append(f"| {case} | {c['method']}, {c['iters']} | {c['seconds']:.1f} ({fmt(c['first_callback'])}, "
                         f"{fmt(c['last_callback'])}) | {c['error']:.4f} ({r['summary']['noisy_error']:.4f}) | "
                         f"{c['load_average'][0]:.1f}-{c['load_average'][1]:.1f} |")
    return "\n".join(lines)


def tables(results: dict) -> str:
    """The conditions, the time-to-quality table and the whole calls' table, cases in order."""
    results = results["defaults_by_time.json"]["results"]
    ordered = {c: results[c] for c in list(APPGM_CASES) + list(PGM_CASES) if c in results}
    first = next(iter(ordered.values()))
    conditions = "; ".join(f"{c}: load average {r['load_average'][0][0]:.1f} at its start, "
                           f"{r['load_average'][1][0]:.1f} at its end" for c, r in ordered.items())
    return (f"One core (`taskset -c 0`, `NUMBA_NUM_THREADS=1`), wall seconds since the call began (set-up "
            f"included; compilation not), cap {first['cap_s']:.0f} s a run, at most {first['iters']} iterations; the "
            f"noisy error is the measurements' own (mean total variation distance over the measured marginals). "
            f"Runs: {conditions}.\n\n{table(ordered)}\n\nWhole calls (the estimate a call returns, its final "
            f"message passing included), one core:\n\n{calls_table(ordered)}")


def describe(family, case):
    if family == "appgm":
        d, size, k, records = APPGM_CASES[case]
        return f"APPGM, {d} attributes of size {size}, {k} triples, {records:,} records"
    return f"PGM, chain of {PGM_CASES[case]} attributes"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(APPGM_CASES) + list(PGM_CASES))
    parser.add_argument("--cap", type=float, default=120.0, help="wall-clock seconds per run")
    parser.add_argument("--iters", type=int, default=3000)
    parser.add_argument("--methods", nargs="+", default=None)
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--returned", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--calls", nargs="+", default=[], metavar="METHOD:ITERS",
                        help="also time whole calls of these methods and budgets on the cases (final message "
                             "passing included) and score the estimates they return")
    parser.add_argument("--table", action="store_true", help="run nothing: print the tables of the JSON file")
    parser.add_argument("--out", type=Path, default=RESULTS, help="JSON file, its other cases kept")
    args = parser.parse_args()
    if args.child:
        family, case, method, iters, cap = args.child
        child(family, case, method, int(iters), float(cap))
        return
    if args.returned:
        family, case, method, iters, _ = args.returned
        returned(family, case, method, int(iters))
        return
    saved = json.loads(args.out.read_text()) if args.out.exists() else {}
    results = saved.get("results", {})
    for case in [] if args.table else args.cases:
        family = "appgm" if case in APPGM_CASES else "pgm"
        methods = (APPGM_METHODS if family == "appgm" else PGM_METHODS) if args.methods is None else [
            m for m in args.methods if m in (APPGM_METHODS if family == "appgm" else PGM_METHODS)]
        load = os.getloadavg()
        runs = {}
        for method in methods:
            runs[method] = run_child(family, case, method, args.iters, args.cap)
            print(case, method, {k: v for k, v in runs[method].items() if k not in ("losses", "errors")}, flush=True)
        calls = []
        for call in args.calls:
            method, iters = call.split(":")
            start_load = os.getloadavg()[0]
            outcome = run_call(family, case, method, int(iters))
            calls.append(dict(outcome, load_average=[start_load, os.getloadavg()[0]]))
            print(case, calls[-1], flush=True)
        if runs:
            results[case] = {"describe": describe(family, case), "methods": list(methods),
                             "load_average": [load, os.getloadavg()], "cap_s": args.cap, "iters": args.iters,
                             "when": harness.now(), "code": harness.code_state(),
                             "summary": summarise(runs, family == "appgm"),
                             "runs": {m: dict(r, losses=thinned(sorted(r["losses"]))) for m, r in runs.items()},
                             "calls": calls or results.get(case, {}).get("calls", [])}
        else:
            results.setdefault(case, {})["calls"] = calls
        harness.save(args.out, {"results": results})
    print(tables({RESULTS.name: {"results": results}}))


if __name__ == "__main__":
    main()
