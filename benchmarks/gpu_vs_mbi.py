"""Side by side on a GPU machine (issue 30): mbi 2.0 on its JAX device, ours on the GPU (the torch
oracle, ``backend="gpu"``) and ours on the CPU (numba, ``backend="cpu"``), float64, one script.

Cases (every one seeded; Gaussian noise of std ``--sigma`` counts on every measured marginal):

* ``adult-k3``, ``adult-k9``: ../shared/data adult, every 1-way marginal plus 3 or 9 random
  3-way marginals (junction tree capped at ``--max-cells``), PGM by mirror descent.
* ``adult-k9-large``: 9 random 3-way marginals drawn together until their junction tree has 4 to
  8 million cells (the size of the issue's measurement: 6.1 million cells, mbi 1.14 ms per
  iteration on an H100 against 46.8 ms for ours on 16 CPU cores).
* ``chain-100``, ``chain-1000``: 100 or 1000 attributes of size 10, records from a random
  Markov chain, every adjacent pair measured; PGM by mirror descent.
* ``appgm-30x100``, ``appgm-100x1000``: 30 attributes x 100 random triples, 100 x 1000 (size
  10, records from a random Markov chain); APPGM's proximal loop on the saturated region graph
  against mbi's ``approximate_oracles.mirror_descent`` (convex GBP, fixed step).
* ``aim-adult-eps3``: AIM end to end on adult at epsilon 3 (delta 1e-9), ours with
  ``PGM(method="mirror", backend=...)`` as its estimator, mbi through its author's AIM script
  (see benchmarks/mechanisms_vs_reference.py for the set-up of ../venvs/private-pgm-mechanisms).

Per (case, side), in a fresh process: the first call (the whole estimate of ``--iters``
iterations, set-up, JIT compilation or CUDA-graph capture included), the time per iteration
(two warm estimates of ``--timing-iters`` iterations, their difference over the iterations'),
and the L2 loss at equal iterations, scored here from each side's marginals.  AIM: wall seconds
of the whole run.  APPGM on the GPU keeps convex GBP's messages on the device and its
proximal loop on the host (one copy of the pseudo-marginals per step).

    .venv/bin/python benchmarks/gpu_vs_mbi.py                     # every case, every side (GPU machine)
    .venv/bin/python benchmarks/gpu_vs_mbi.py --cases adult-k9-large chain-1000   # some cases (results merge)
    .venv/bin/python benchmarks/gpu_vs_mbi.py --quick --sides ours-cpu ours-torch-cpu mbi   # smoke, CPU only
    .venv/bin/python benchmarks/gpu_vs_mbi.py --table             # only print the table of the JSON

Needs, on the GPU machine: torch with CUDA in the interpreter running this script (ours), and JAX
with CUDA plus mbi 2.0 in ``--mbi-python`` (default: ../venvs/peers/bin/python where it exists,
else this interpreter; the JSON records JAX's devices, so a CPU-only JAX shows).  The defaults
(200 iterations, timing runs of 50 and 150, ``--case-timeout`` 150 s a run) are sized for a
short device session: every (case, side) is its own process and its own entry of
benchmarks/results/gpu_vs_mbi.json, and a later run of some cases replaces only their entries, so
the grid can be split over several sessions.  A run past the timeout is recorded as such (mbi's
AIM did not finish in 270 s on adult at epsilon 1 on an H200, issue 30).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import harness

DOC = harness.Doc(
    title="The GPU oracle against mbi 2.0 on a GPU",
    rerun=".venv/bin/python benchmarks/gpu_vs_mbi.py     # on a GPU machine; --quick --sides ours-cpu mbi: a CPU smoke test",
    reading="""
Not yet run on a GPU machine: no results are recorded.""")


REPO = harness.REPO
RESULTS = harness.RESULTS / "gpu_vs_mbi.json"
PEERS_PYTHON = harness.peer_python("mbi")
MBI_PYTHON = PEERS_PYTHON if PEERS_PYTHON.exists() else Path(sys.executable)
# the largest model first: a device session is short (see --case-timeout and the docstring)
CASES = ("adult-k9-large", "adult-k3", "adult-k9", "chain-100", "chain-1000", "appgm-30x100", "appgm-100x1000",
         "aim-adult-eps3")
SIDES = ("ours-cpu", "ours-gpu", "ours-torch-cpu", "mbi")
BACKEND = {"ours-cpu": "cpu", "ours-gpu": "gpu", "ours-torch-cpu": "torch-cpu"}
DELTA = 1e-9


# ----------------------------------------------------------------------------------------------
# Problems (deterministic from the seed)
# ----------------------------------------------------------------------------------------------


def chain_records(attrs: int, size: int, rows: int, rng) -> np.ndarray:
    """``rows`` records of a Markov chain over ``attrs`` attributes of ``size`` values, random
    (Dirichlet 0.5) transitions."""
    out = np.empty((rows, attrs), dtype=np.int64)
    out[:, 0] = rng.integers(0, size, rows)
    for a in range(1, attrs):
        cdf = np.cumsum(rng.dirichlet(np.full(size, 0.5), size), axis=1)
        u = rng.random(rows)[:, None]
        out[:, a] = np.minimum((u > cdf[out[:, a - 1]]).sum(axis=1), size - 1)
    return out


def random_triples(domain, count: int, max_cells: float, rng) -> list:
    """``count`` random 3-way cliques whose junction tree (with every attribute) stays under
    ``max_cells`` cells (candidates that push it above are skipped)."""
    import itertools

    from ektelo_pgm.pgm.junction_tree import triangulated_mb

    candidates = list(itertools.combinations(domain.attrs, 3))
    chosen = []
    for i in rng.permutation(len(candidates)):
        if len(chosen) == count:
            break
        trial = chosen + [candidates[i]]
        if triangulated_mb(domain, trial + [(a,) for a in domain.attrs]) * 2**20 / 8 <= max_cells:
            chosen.append(candidates[i])
    return chosen


def large_triples(domain, count: int, low: float, high: float, rng) -> list:
    """``count`` random 3-way cliques drawn together, again until the junction tree with every
    attribute has between ``low`` and ``high`` cells."""
    import itertools

    from ektelo_pgm.pgm.junction_tree import triangulated_mb

    candidates = list(itertools.combinations(domain.attrs, 3))
    for _ in range(10_000):
        chosen = [candidates[i] for i in rng.choice(len(candidates), count, replace=False)]
        if low <= triangulated_mb(domain, chosen + [(a,) for a in domain.attrs]) * 2**20 / 8 <= high:
            return chosen
    raise RuntimeError(f"no {count} triples with a junction tree of {low:g} to {high:g} cells in 10,000 draws")


def problem(case: str, args):
    """``(kind, domain, measurements, data)`` of a case (``data`` only for AIM)."""
    from ektelo_pgm import Dataset, Domain
    from ektelo_pgm.measurement import Measurement

    rng = np.random.default_rng(args.seed)
    if case.startswith("aim"):
        from mechanisms_vs_reference import load_table

        columns, records = load_table(args.data, args.aim_data)
        return "aim", None, None, (columns, records)
    if case.startswith("adult"):
        data = Dataset.load(args.data / "adult.csv", args.data / "adult-domain.json")
        if case.endswith("large"):
            triples = large_triples(data.domain, 9, 4e6, 8e6, rng)
        else:
            triples = random_triples(data.domain, int(case[7:]), args.max_cells, rng)
        cliques = [(a,) for a in data.domain.attrs] + triples
        kind = "pgm"
    elif case.startswith("chain"):
        n = int(case.split("-")[1])
        domain = Domain([f"c{i}" for i in range(n)], [10] * n)
        data = Dataset(chain_records(n, 10, args.rows, rng), domain)
        cliques = [(f"c{i}", f"c{i + 1}") for i in range(n - 1)]
        kind = "pgm"
    else:
        n, k = (int(x) for x in case.split("-")[1].split("x"))
        domain = Domain([f"c{i}" for i in range(n)], [10] * n)
        data = Dataset(chain_records(n, 10, args.rows, rng), domain)
        cliques = [tuple(f"c{i}" for i in sorted(rng.choice(n, 3, replace=False))) for _ in range(k)]
        cliques = list(dict.fromkeys(cliques))
        kind = "appgm"
    measurements = []
    for cl in cliques:
        x = data.marginal(cl).ravel().astype(float)
        measurements.append(Measurement(cl, x + rng.normal(0.0, args.sigma, x.size), args.sigma))
    return kind, data.domain, measurements, None


def l2_loss(project, measurements) -> float:
    """``sum_i ||(mu_i - y_i) / std_i||^2 / 2`` from ``project(attrs)`` (counts)."""
    return float(sum(0.5 * float(np.sum(((project(m.attrs).ravel() - m.y) * m.weights) ** 2)) for m in measurements))


# ----------------------------------------------------------------------------------------------
# Sides
# ----------------------------------------------------------------------------------------------


class Ours:
    def __init__(self, kind, domain, measurements, backend):
        from ektelo_pgm.operators.reconstruct import APPGM, PGM

        self.kind, self.domain, self.measurements, self.backend = kind, domain, measurements, backend
        self.make = (lambda iters: PGM(iters=iters, method="mirror", backend=backend)) if kind == "pgm" else (
            lambda iters: APPGM(iters=iters, method="mirror", final_iters=0, backend=backend))

    def fit(self, iters):
        model = self.make(iters).reconstruct(self.domain, self.measurements)
        self.iterations = model.iterations
        return model

    def project(self, model, attrs):
        return np.asarray(model.project(attrs), dtype=np.float64)

    def device(self):
        if self.backend == "cpu":
            return f"numba, {os.cpu_count()} CPUs"
        import torch

        return torch.cuda.get_device_name(0) if self.backend == "gpu" else f"torch CPU, {torch.get_num_threads()} threads"


class Mbi:
    def __init__(self, kind, domain, measurements, stepsize):
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_compilation_cache", False)
        import mbi

        self.jax, self.mbi, self.kind, self.stepsize = jax, mbi, kind, stepsize
        self.domain = mbi.Domain(domain.attrs, domain.shape)
        self.measurements = [mbi.LinearMeasurement(m.y, m.attrs, stddev=m.std) for m in measurements]

    def fit(self, iters):
        if self.kind == "pgm":
            from mbi.estimation import CALLBACK_EVERY, MirrorDescent

            model = MirrorDescent().estimate(self.domain, self.measurements, iters=iters)
            self.iterations = CALLBACK_EVERY * -(-iters // CALLBACK_EVERY)
        else:
            from mbi.approximate_oracles import mirror_descent

            model = mirror_descent(self.domain, self.measurements, stepsize=self.stepsize, iters=iters)
            self.iterations = iters
        return self.jax.block_until_ready(model)

    def project(self, model, attrs):
        attrs = tuple(attrs)
        if self.kind == "pgm":
            return np.asarray(model.project(attrs).transpose(attrs).datavector(flatten=False))
        return np.asarray(model[attrs].transpose(attrs).datavector(flatten=False))

    def device(self):
        return ", ".join(str(d) for d in self.jax.devices())


def timed(call):
    """``(call(), wall seconds)``."""
    value, wall, _ = harness.timed(call)
    return value, wall


def measure_side(side, measurements, iters, timing_iters) -> dict:
    model, first = timed(lambda: side.fit(iters))
    iterations = side.iterations
    loss = l2_loss(lambda attrs: side.project(model, attrs), measurements)
    short, long = timing_iters
    best = [float("inf"), float("inf")]
    done = [0, 0]
    for _ in range(2):
        for i, n in enumerate((short, long)):
            seconds = timed(lambda: side.fit(n))[1]
            best[i], done[i] = min(best[i], seconds), side.iterations
    per_iter = (best[1] - best[0]) / max(done[1] - done[0], 1)
    return {"first_call_s": first, "iterations": iterations, "loss": loss, "per_iter_ms": 1e3 * per_iter,
            "timing_iterations": done, "device": side.device()}


def run_aim(side: str, columns, records, epsilon: float, seed: int, args) -> dict:
    if side == "mbi":
        from mechanisms_vs_reference import REFERENCE_DIR, prepare_reference, run_reference

        script = prepare_reference("aim", REFERENCE_DIR)
        import jax

        _, wall = timed(lambda: run_reference(script, "aim", columns, records, epsilon, seed))
        return {"wall_s": wall, "device": ", ".join(str(d) for d in jax.devices())}
    from ektelo_pgm import Budget, Dataset, Domain
    from ektelo_pgm.mechanisms import AIM
    from ektelo_pgm.operators.reconstruct import PGM

    data = Dataset(records, Domain(columns, (records.max(axis=0) + 1).tolist()))
    mech = AIM(max_mb=80.0, estimator=PGM(method="mirror", backend=BACKEND[side]))
    _, wall = timed(lambda: mech.run(data, Budget.approx(epsilon, DELTA), rng=seed).estimate.synthetic_data(
        len(data), rng=seed))
    return {"wall_s": wall, "device": BACKEND[side]}


def worker(case: str, side: str, args) -> dict:
    kind, domain, measurements, table = problem(case, args)
    out = {"case": case, "side": side, "kind": kind}
    if kind == "aim":
        return {**out, "data": args.aim_data, **run_aim(side, *table, 3.0, args.seed, args)}
    out["measurements"] = len(measurements)
    if side == "mbi":
        impl = Mbi(kind, domain, measurements, args.appgm_step)
    else:
        impl = Ours(kind, domain, measurements, BACKEND[side])
    if kind == "pgm" and side != "mbi":
        from ektelo_pgm.pgm.inference import MarginalOracle

        out["tree_cells"] = int(MarginalOracle(domain, [m.attrs for m in measurements]).layout.clique_off[-1])
    out.update(measure_side(impl, measurements, args.iters, args.timing_iters))
    if side != "mbi" and side != "ours-cpu":
        from ektelo_pgm.pgm import torch_oracle

        out["graph_failures"] = sorted(set(torch_oracle.GRAPH_FAILURES))  # empty: every loop ran as a CUDA graph
    return out


# ----------------------------------------------------------------------------------------------
# Orchestration and report
# ----------------------------------------------------------------------------------------------


def run_all(args) -> dict:
    """Every (case, side) asked, each in a fresh process; merged into ``args.out``'s earlier runs
    (an entry of the same case and side is replaced)."""
    stamp = {"code": harness.code_state(), "date": harness.now(), "iters": args.iters, "timing_iters": args.timing_iters, "sigma": args.sigma, "rows": args.rows,
             "max_cells": args.max_cells, "appgm_step": args.appgm_step, "seed": args.seed, "quick": args.quick}
    previous = json.loads(args.out.read_text()) if args.out.exists() and not args.quick else {"runs": []}
    runs = {(r["case"], r["side"]): r for r in previous.get("runs", [])}
    for case in args.cases:
        for side in args.sides:
            python = args.mbi_python if side == "mbi" else Path(sys.executable)
            options = ["--worker", case, side, "--seed", args.seed, "--iters", args.iters, "--timing-iters",
                       *args.timing_iters, "--sigma", args.sigma, "--rows", args.rows, "--max-cells", args.max_cells,
                       "--appgm-step", args.appgm_step, "--data", args.data, "--aim-data", args.aim_data]
            options += ["--quick"] if args.quick else []
            print(f"{case} / {side} ...", file=sys.stderr, flush=True)
            try:
                done = harness.child(__file__, *options, python=python, timeout=args.case_timeout)
                if done.cut:
                    run = {"case": case, "side": side, "error": f"no result in {args.case_timeout:g} s"}
                elif not done.ok:
                    run = {"case": case, "side": side, "error": (done.errors.strip().splitlines() or ["?"])[-1]}
                else:
                    run = done.result()
            except OSError as exc:
                run = {"case": case, "side": side, "error": f"{python}: {exc}"}
            run.update(stamp)
            print(f"  {run}", file=sys.stderr, flush=True)
            runs[(case, side)] = run
    order = {c: i for i, c in enumerate(CASES)}
    return {"runs": sorted(runs.values(), key=lambda r: (order.get(r["case"], 99), r["side"]))}


def cell(run: dict | None, key: str, fmt: str) -> str:
    if run is None:
        return "-"
    if "skipped" in run:
        return "not built" if "torch" in run["skipped"] else "skipped"
    if "error" in run:
        return "timed out" if "no result" in run["error"] else "failed"
    return format(run[key], fmt) if key in run else "-"


def tables(results: dict) -> str:
    """The table of every case measured (per side: ms per iteration, first call, loss)."""
    runs = results["gpu_vs_mbi.json"]["runs"]
    by = {(r["case"], r["side"]): r for r in runs}
    sides = [s for s in ("ours-gpu", "ours-cpu", "ours-torch-cpu", "mbi") if any(r["side"] == s for r in runs)]
    devices = {s: next((r.get("device") for r in runs if r["side"] == s and "device" in r), "?") for s in sides}
    stamps = sorted({r.get("date", "?")[:10] for r in runs})
    first = next((r for r in runs if "iters" in r), {})
    lines = [f"{first.get('iters', '?')} iterations per estimate (ms / iter from warm runs of "
             f"{first.get('timing_iters', '?')}), noise std {first.get('sigma', '?')}, float64, each (case, side) "
             "in a fresh process.  Devices: " + "; ".join(f"{s}: {d}" for s, d in devices.items()) + ".  Runs: "
             + ", ".join(stamps) + ".",
             "", "| case | tree cells | " + " | ".join(f"ms / iter {s}" for s in sides) + " | "
             + " | ".join(f"first call s {s}" for s in sides) + " | " + " | ".join(f"loss {s}" for s in sides) + " |",
             "|---|---:|" + "---:|" * (3 * len(sides))]
    for case in CASES:
        found = [by.get((case, s)) for s in sides]
        if not any(found):
            continue
        if case.startswith("aim"):
            lines.append(f"| {case} (wall s) | - | " + " | ".join(cell(r, "wall_s", ".1f") for r in found)
                         + " |" + " - |" * (2 * len(sides)))
            continue
        cells = next((r["tree_cells"] for r in found if r and "tree_cells" in r), None)
        lines.append(f"| {case} | {'-' if cells is None else f'{cells:,}'} | "
                     + " | ".join(cell(r, "per_iter_ms", ".2f") for r in found) + " | "
                     + " | ".join(cell(r, "first_call_s", ".2f") for r in found) + " | "
                     + " | ".join(cell(r, "loss", ".6g") for r in found) + " |")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--sides", nargs="+", default=["ours-gpu", "ours-cpu", "mbi"], choices=SIDES)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--timing-iters", type=int, nargs=2, default=[50, 150])
    parser.add_argument("--sigma", type=float, default=10.0)
    parser.add_argument("--rows", type=int, default=50_000, help="records of the synthetic chains")
    parser.add_argument("--max-cells", type=float, default=1e7, help="junction-tree cap of the adult cases")
    parser.add_argument("--appgm-step", type=float, default=0.05, help="mbi's fixed APPGM step size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=harness.DATA)
    parser.add_argument("--mbi-python", type=Path, default=MBI_PYTHON)
    parser.add_argument("--case-timeout", type=float, default=150.0, help="seconds per (case, side) run")
    parser.add_argument("--aim-data", default="adult", help="the AIM case's data set (titanic for a smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="only print the table of --out")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 5 and (3, 6) iterations, results to a temporary file")
    parser.add_argument("--worker", nargs=2, metavar=("CASE", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.iters, args.timing_iters, args.rows = 5, [3, 6], 2000
        if args.worker is None:
            args.out = Path(tempfile.gettempdir()) / "gpu_vs_mbi_quick.json"
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(*args.worker, args)))
        return
    if args.table:
        results = json.loads(args.out.read_text())
    else:
        results = run_all(args)
        harness.save(args.out, results, "torch", "mbi", "jax")
        print(f"wrote {args.out}", file=sys.stderr)
    print(tables({RESULTS.name: results}))


if __name__ == "__main__":
    main()
