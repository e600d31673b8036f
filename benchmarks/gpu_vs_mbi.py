"""Side by side on a GPU machine: mbi 2.0 on its JAX device, ours on the GPU (the torch oracle,
``backend="gpu"``, float64 and float32, with its fused Triton kernels and, as ``ours-gpu-unfused``,
with torch's own operations) and ours on the same machine's CPU cores (numba,
``backend="cpu"``), per iteration of mirror descent, at equal loss, and AIM end to end.

Cases (every one seeded; Gaussian noise of std ``--sigma`` counts on every measured marginal):

* ``adult-k3``, ``adult-k9``: ../shared/data adult, every 1-way marginal plus 3 or 9 random
  3-way marginals (junction tree capped at ``--max-cells``), PGM by mirror descent.
* ``adult-300k``, ``adult-1m``, ``adult-3m``, ``adult-k9-large``: 9 random 3-way marginals drawn
  together until their junction tree has about 0.3, 1 or 3 million cells (within a factor of 1.5)
  or 4 to 8 million.
* ``chain-100``, ``chain-1000``: 100 or 1000 attributes of size 10, records from a random
  Markov chain, every adjacent pair measured (a deep tree of small cliques).
* ``appgm-30x100``, ``appgm-100x1000``: 30 attributes x 100 random triples, 100 x 1000 (size
  10, records from a random Markov chain); APPGM's proximal loop on the saturated region graph
  against mbi's ``approximate_oracles.mirror_descent`` (convex GBP, fixed step).
* ``aim-adult-eps3``, ``aim-bn40-eps1``: AIM end to end on adult at epsilon 3 and on the
  40-attribute network sample of benchmarks/mechanisms_vs_reference.py at epsilon 1 (delta 1e-9),
  ours with ``PGM(method="mirror", backend=...)`` as its estimator, mbi through its author's AIM
  script (``--reference``; see benchmarks/mechanisms_vs_reference.py for where it comes from).

Per (case, side), in a fresh process: the first call (the whole estimate of ``--iters``
iterations, set-up, JIT compilation or CUDA-graph capture included), the time per iteration
(the slope of seconds against iterations over the warm estimates: two of each of
``--timing-iters`` iterations and one of each of ``--curve-iters``), and the L2 loss curve (each
estimate's), scored here from each side's marginals: at equal loss compares the time each side
takes to mbi's loss after its longest estimate.  AIM: wall seconds of the whole run.

    .venv/bin/python benchmarks/gpu_vs_mbi.py                     # every case, every side (GPU machine)
    .venv/bin/python benchmarks/gpu_vs_mbi.py --cases adult-k9-large chain-1000   # some cases (results merge)
    .venv/bin/python benchmarks/gpu_vs_mbi.py --quick --sides ours-cpu ours-torch-cpu mbi   # smoke, CPU only
    .venv/bin/python benchmarks/gpu_vs_mbi.py --missing           # only what the JSON lacks, failed or timed out
    .venv/bin/python benchmarks/gpu_vs_mbi.py --table             # only print the table of the JSON
    .venv/bin/python benchmarks/gpu_vs_mbi.py --first-call --cases chain-1000 --sides ours-gpu  # where it goes

benchmarks/gpu_session.sh runs the whole grid in one short session on a GPU machine (its bundle
carries mbi's wheel, the data and the author's scripts).  Needs there: torch with CUDA in the
interpreter running this script (ours), and JAX with CUDA plus mbi 2.0 in ``--mbi-python``
(default: ../venvs/peers/bin/python where it exists, else this interpreter).  Every (case, side)
is its own process and its own entry of benchmarks/results/gpu_vs_mbi.json, written as it ends
with the machine, versions and CUDA it ran on; a later run of some cases replaces only their
entries, so the grid can be split over sessions.  A run past ``--case-timeout`` is recorded so.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

import harness
from mechanisms_vs_reference import REFERENCE_DIR

DOC = harness.Doc(
    title="The GPU oracle against mbi 2.0 on a GPU",
    rerun="benchmarks/gpu_session.sh     # on a GPU machine, after benchmarks/gpu_session.sh bundle here",
    reading="""
On the H200 the fused Triton kernels make an iteration 2.3x faster than torch's own operations at 6.7M cells (1.49 ms
against 3.51), 2.1-4.2x on the other cases.  mbi still takes fewer ms an iteration (0.89), but ours reaches its
1000-iteration loss in 300-600, so to equal loss ours is 1.2-2.2x faster.  First call 4.3-5.4 s (3.7 s compiling on a
fresh machine).  Against numba on 8 cores the GPU wins from 50k cells (3.4x), loses on chain-100 (2.7x).  float32 ends
3.4e-6 from float64's loss at 6.7M cells, 1.8e-3 at 2M (mbi: 8.5e-3).  AIM, adult, eps 3: 31.2 s GPU, 40.6 s CPU.""",
    results=("gpu_vs_mbi.json",))


REPO = harness.REPO
RESULTS = harness.RESULTS / "gpu_vs_mbi.json"
PEERS_PYTHON = harness.peer_python("mbi")
MBI_PYTHON = PEERS_PYTHON if PEERS_PYTHON.exists() else Path(sys.executable)
# the largest model first: a device session is short (see --case-timeout and the docstring)
CASES = ("adult-k9-large", "adult-3m", "adult-1m", "adult-300k", "adult-k9", "adult-k3", "chain-100", "chain-1000",
         "appgm-30x100", "appgm-100x1000", "aim-adult-eps3", "aim-bn40-eps1")
#: junction-tree cells aimed at by the sized adult cases (9 random triples, within a factor of 1.5)
SIZED = {"adult-300k": 3e5, "adult-1m": 1e6, "adult-3m": 3e6}
SIDES = ("ours-gpu", "ours-gpu-f32", "ours-gpu-unfused", "ours-cpu", "ours-torch-cpu", "mbi", "mbi-f32")
BACKEND = {"ours-cpu": "cpu", "ours-gpu": "gpu", "ours-gpu-f32": "gpu", "ours-gpu-unfused": "gpu",
           "ours-torch-cpu": "torch-cpu"}
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


def aim_table(case: str, quick: bool) -> str:
    """The table an AIM case runs on (``aim-adult-eps3``: adult), titanic for a smoke test."""
    return "titanic" if quick else case.split("-")[1]


def problem(case: str, args):
    """``(kind, domain, measurements, data)`` of a case (``data`` only for AIM)."""
    from ektelo_pgm import Dataset, Domain
    from ektelo_pgm.measurement import Measurement

    rng = np.random.default_rng(args.seed)
    if case.startswith("aim"):
        from mechanisms_vs_reference import load_table

        columns, records = load_table(args.data, aim_table(case, args.quick))
        return "aim", None, None, (columns, records)
    if case.startswith("adult"):
        data = Dataset.load(args.data / "adult.csv", args.data / "adult-domain.json")
        if case.endswith("large"):
            triples = large_triples(data.domain, 9, 4e6, 8e6, rng)
        elif case in SIZED:
            triples = large_triples(data.domain, 9, SIZED[case] / 1.5, SIZED[case] * 1.5, rng)
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


def device_of(backend: str) -> str:
    """What ours runs on for ``backend``: numba's threads, the GPU's name or torch's CPU threads."""
    if backend == "cpu":
        import numba

        return f"numba, {numba.get_num_threads()} threads"
    import torch

    if backend == "gpu":
        return torch.cuda.get_device_name(0)
    return f"torch CPU, {torch.get_num_threads()} threads"


def dtype_of(side: str) -> str:
    return "float32" if side.endswith("-f32") else "float64"


class Ours:
    def __init__(self, kind, domain, measurements, backend, dtype):
        from ektelo_pgm.operators.reconstruct import APPGM, PGM

        self.kind, self.domain, self.measurements, self.backend = kind, domain, measurements, backend
        self.make = (lambda iters: PGM(iters=iters, method="mirror", backend=backend, dtype=dtype)) if kind == "pgm" \
            else (lambda iters: APPGM(iters=iters, method="mirror", final_iters=0, backend=backend))

    def fit(self, iters):
        model = self.make(iters).reconstruct(self.domain, self.measurements)
        self.iterations = model.iterations
        return model

    def project(self, model, attrs):
        return np.asarray(model.project(attrs), dtype=np.float64)

    def device(self):
        return device_of(self.backend)


class Mbi:
    def __init__(self, kind, domain, measurements, stepsize, dtype):
        import jax

        jax.config.update("jax_enable_x64", dtype == "float64")
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


def per_iter_ms(warm) -> float:
    """Milliseconds per iteration: the least-squares slope of seconds against iterations over the
    warm estimates ``[[iterations, loss, seconds], ...]`` (each estimate's fixed cost, planning and
    capture, is the intercept, and its jitter spreads over every estimate, not two)."""
    iterations, seconds = np.array([point[0] for point in warm], float), np.array([point[2] for point in warm])
    return 1e3 * float(np.polyfit(iterations, seconds, 1)[0])


def measure_side(side, measurements, iters, timing_iters, curve_iters) -> dict:
    """First call, ms per iteration and the loss curve ``[[iterations, loss, seconds], ...]`` of
    the estimates made (the timing runs', and one of each of ``curve_iters`` iterations)."""
    curve = []

    def fit(n):
        model, seconds = timed(lambda: side.fit(n))
        curve.append([side.iterations, l2_loss(lambda attrs: side.project(model, attrs), measurements), seconds])
        return seconds

    first = fit(iters)
    iterations, loss, _ = curve[0]
    for _ in range(2):
        for n in timing_iters:
            fit(n)
    for n in curve_iters:
        fit(n)
    return {"first_call_s": first, "iterations": iterations, "loss": loss, "per_iter_ms": per_iter_ms(curve[1:]),
            "timing_iterations": sorted({point[0] for point in curve[1:]}), "curve": sorted(curve),
            "device": side.device()}


def run_aim(side: str, columns, records, epsilon: float, seed: int, args) -> dict:
    if side.startswith("mbi"):
        from mechanisms_vs_reference import prepare_reference, run_reference

        script = prepare_reference("aim", args.reference)
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
    return {"wall_s": wall, "device": device_of(BACKEND[side])}


def profile(impl, iters: int) -> str:
    """The 15 costliest operators of one estimate of ``iters`` iterations (torch's profiler), run
    eagerly so that each kernel shows (a CUDA graph's replay is one opaque launch)."""
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    from ektelo_pgm.pgm import torch_oracle

    graph, torch_oracle._DeviceLoop._graph = torch_oracle._DeviceLoop._graph, lambda self: None
    try:
        with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            impl.fit(iters)
    finally:
        torch_oracle._DeviceLoop._graph = graph
    key = "self_cuda_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
    return prof.key_averages().table(sort_by=key, row_limit=15)


def first_call(impl, iters: int) -> dict:
    """A cold first estimate of ``iters`` iterations under cProfile: its seconds and the 30
    functions of largest cumulative time (where a first call's seconds go: torch's start, the
    plan, compiling, the CUDA graph's capture)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    _, seconds = timed(lambda: profiler.runcall(impl.fit, iters))
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(30)
    return {"first_call_s": seconds, "first_call_profile": text.getvalue()}


def worker(case: str, side: str, args) -> dict:
    kind, domain, measurements, table = problem(case, args)
    out = {"case": case, "side": side, "kind": kind}
    if kind == "aim":
        epsilon = float(case.split("eps")[1])
        return {**out, "data": aim_table(case, args.quick), **run_aim(side, *table, epsilon, args.seed, args)}
    out["measurements"] = len(measurements)
    if side == "ours-gpu-unfused":
        from ektelo_pgm.pgm import torch_oracle

        torch_oracle.fuses = lambda device: False
    if side.startswith("mbi"):
        impl = Mbi(kind, domain, measurements, args.appgm_step, dtype_of(side))
    else:
        impl = Ours(kind, domain, measurements, BACKEND[side], dtype_of(side))
    if args.first_call:
        return {**out, **first_call(impl, args.iters)}
    if kind == "pgm" and not side.startswith("mbi"):
        from ektelo_pgm.pgm.inference import MarginalOracle

        out["tree_cells"] = int(MarginalOracle(domain, [m.attrs for m in measurements]).layout.clique_off[-1])
    out.update(measure_side(impl, measurements, args.iters, args.timing_iters,
                            [] if side == "ours-cpu" else args.curve_iters))
    out["dtype"] = dtype_of(side)
    if side.startswith("ours") and side != "ours-cpu":
        from ektelo_pgm.pgm import torch_oracle

        out["graph_failures"] = sorted(set(torch_oracle.GRAPH_FAILURES))  # empty: every loop ran as a CUDA graph
        out["fused_failures"] = sorted(set(torch_oracle.FUSED_FAILURES))  # empty: the fused kernels ran (on CUDA)
        if args.profile:
            out["profile"] = profile(impl, args.timing_iters[0])
    return out


# ----------------------------------------------------------------------------------------------
# Orchestration and report
# ----------------------------------------------------------------------------------------------


def cuda_version() -> str:
    """torch's CUDA and the driver's version, as this machine has them ("none" without)."""
    import subprocess

    try:
        import torch
    except ImportError:
        return "none"
    if not torch.cuda.is_available():
        return "none"
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        driver = "?"
    return f"CUDA {torch.version.cuda}, driver {driver}"


def run_all(args) -> dict:
    """Every (case, side) asked, each in a fresh process; merged into ``args.out``'s earlier runs
    (an entry of the same case and side is replaced), which is written after every run."""
    where = harness.provenance("torch", "mbi", "jax")
    stamp = {"code": harness.code_state(), "date": harness.now(), "machine": where["machine"], "cpus": where["cpus"],
             "versions": where["versions"], "cuda": cuda_version(), "iters": args.iters,
             "timing_iters": args.timing_iters, "sigma": args.sigma, "rows": args.rows, "max_cells": args.max_cells,
             "appgm_step": args.appgm_step, "seed": args.seed, "quick": args.quick}
    previous = json.loads(args.out.read_text()) if args.out.exists() else {"runs": []}
    runs = {(r["case"], r["side"]): r for r in previous.get("runs", [])}
    order = {c: i for i, c in enumerate(CASES)}
    results = previous
    for case in args.cases:
        for side in args.sides:
            if args.missing and not args.first_call and "error" not in runs.get((case, side), {"error": "none"}):
                continue
            python = args.mbi_python if side.startswith("mbi") else Path(sys.executable)
            options = ["--worker", case, side, "--seed", args.seed, "--iters", args.iters, "--timing-iters",
                       *args.timing_iters, "--curve-iters", *args.curve_iters, "--sigma", args.sigma, "--rows",
                       args.rows, "--max-cells", args.max_cells, "--appgm-step", args.appgm_step, "--data", args.data,
                       "--reference", args.reference]
            options += ["--quick"] if args.quick else []
            options += ["--profile"] if args.profile else []
            options += ["--first-call", "--case-timeout", args.case_timeout] if args.first_call else []
            print(f"{case} / {side} ...", file=sys.stderr, flush=True)
            try:
                done = harness.child(__file__, *options, python=python, timeout=args.case_timeout)
                errors = done.errors
                if done.cut:
                    run = {"case": case, "side": side, "error": f"no result in {args.case_timeout:g} s"}
                elif not done.ok:
                    run = {"case": case, "side": side, "error": (done.errors.strip().splitlines() or ["?"])[-1]}
                else:
                    run = done.result()
            except OSError as exc:
                run, errors = {"case": case, "side": side, "error": f"{python}: {exc}"}, ""
            if args.first_call:  # a diagnosis, printed and not saved; a run cut off shows its stacks
                print(f"== {case} / {side}: {run.get('error') or format(run['first_call_s'], '.2f') + ' s'}\n"
                      + (run.get("first_call_profile") or errors[-8000:]), flush=True)
                continue
            run.update(stamp)
            print(f"  {run}", file=sys.stderr, flush=True)
            runs[(case, side)] = run
            results = {"runs": sorted(runs.values(), key=lambda r: (order.get(r["case"], 99), r["side"]))}
            harness.save(args.out, results, "torch", "mbi", "jax")
    return results


def cell(run: dict | None, key: str, fmt: str) -> str:
    if run is None:
        return "-"
    if "skipped" in run:
        return "not built" if "torch" in run["skipped"] else "skipped"
    if "error" in run:
        return "timed out" if "no result" in run["error"] else "failed"
    return format(run[key], fmt) if key in run else "-"


def to_loss(run: dict, target: float):
    """The fewest iterations of ``run``'s loss curve at or below ``target`` (None: none reached it)."""
    return next((point[0] for point in sorted(run.get("curve", [])) if point[1] <= target), None)


def drift(f64: dict, f32: dict | None) -> str:
    """float32's loss against float64's after float32's longest estimate ("-" where either lacks it)."""
    if not (f32 and f32.get("curve")):
        return "-"
    n, loss = max(f32["curve"])[:2]
    same = [point[1] for point in f64["curve"] if point[0] == n]
    return f"{loss / same[0] - 1:.1e}" if same else "-"


def tables(results: dict) -> str:
    """Per case and side: ms per iteration, first call and loss; then ours on the GPU against mbi
    at equal loss (mbi's loss after its longest estimate, and the time each side takes to it),
    float32 against float64, and AIM end to end."""
    runs = results["gpu_vs_mbi.json"]["runs"]
    by = {(r["case"], r["side"]): r for r in runs}
    sides = [s for s in SIDES if any(r["side"] == s for r in runs)]
    devices = {s: next((r.get("device") for r in runs if r["side"] == s and "device" in r), "?") for s in sides}
    first = next((r for r in runs if "iters" in r), {})
    setups = sorted({(r.get("machine", "?"), r.get("cpus", "?"), r.get("cuda", "?"),
                      ", ".join(f"{k} {v}" for k, v in r.get("versions", {}).items())) for r in runs})
    oracle_cases = [c for c in CASES if not c.startswith("aim") and any(by.get((c, s)) for s in sides)]
    lines = [f"{first.get('iters', '?')} iterations per estimate; ms / iter the slope of seconds over the warm "
             "estimates where a run recorded each one's seconds, else the difference of its 50- and 150-iteration "
             f"estimates; noise std {first.get('sigma', '?')}, each (case, side) "
             "in a fresh process.  Devices: " + "; ".join(f"{s}: {d}" for s, d in devices.items()) + ".  Runs: "
             + ", ".join(sorted({r.get("date", "?")[:10] for r in runs})) + ", on "
             + "; ".join(f"{m} ({c} CPUs; {cuda}; {v})" for m, c, cuda, v in setups) + ".",
             "", "| case | tree cells | " + " | ".join(f"ms / iter {s}" for s in sides) + " | "
             + " | ".join(f"first call s {s}" for s in sides) + " |",
             "|---|---:|" + "---:|" * (2 * len(sides))]
    for case in oracle_cases:
        found = [by.get((case, s)) for s in sides]
        cells = next((r["tree_cells"] for r in found if r and "tree_cells" in r), None)
        lines.append(f"| {case} | {'-' if cells is None else f'{cells:,}'} | "
                     + " | ".join(cell(r, "per_iter_ms", ".2f") for r in found) + " | "
                     + " | ".join(cell(r, "first_call_s", ".2f") for r in found) + " |")
    lines += ["", "At equal loss: mbi's loss after its longest estimate, the iterations each side needs to reach "
              "it (from its loss curve) and their time at its ms / iter; float32's loss against float64's after "
              "the longest estimate.", "",
              "| case | mbi loss | iterations mbi | iterations ours-gpu | ms ours-gpu | ms mbi | mbi / ours-gpu "
              "| float32 / float64 - 1, ours | same, mbi |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for case in oracle_cases:
        ours, mbi = by.get((case, "ours-gpu")), by.get((case, "mbi"))
        if not (ours and mbi and ours.get("curve") and mbi.get("curve")):
            continue
        n_mbi, target = max(mbi["curve"])[:2]
        n_ours = to_loss(ours, target)
        ms_ours = None if n_ours is None else n_ours * ours["per_iter_ms"]
        ms_mbi = n_mbi * mbi["per_iter_ms"]

        lines.append(f"| {case} | {target:.6g} | {n_mbi} | {n_ours or 'not reached'} | "
                     f"{'-' if ms_ours is None else f'{ms_ours:.1f}'} | {ms_mbi:.1f} | "
                     f"{'-' if ms_ours is None else f'{ms_mbi / ms_ours:.1f}x'} | "
                     f"{drift(ours, by.get((case, 'ours-gpu-f32')))} | {drift(mbi, by.get((case, 'mbi-f32')))} |")
    aim = [c for c in CASES if c.startswith("aim") and any(by.get((c, s)) for s in sides)]
    if aim:
        aim_sides = [s for s in sides if any(by.get((c, s)) for c in aim)]
        lines += ["", "AIM end to end (wall seconds, fit and synthetic records):", "",
                  "| case | " + " | ".join(aim_sides) + " |", "|---|" + "---:|" * len(aim_sides)]
        lines += [f"| {c} | " + " | ".join(cell(by.get((c, s)), "wall_s", ".1f") for s in aim_sides) + " |"
                  for c in aim]
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--sides", nargs="+", default=["ours-gpu", "ours-cpu", "mbi"], choices=SIDES)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--timing-iters", type=int, nargs=2, default=[50, 150])
    parser.add_argument("--curve-iters", type=int, nargs="*", default=[300, 400, 600, 1000],
                        help="more estimates of these many iterations, for the loss curve (not ours-cpu)")
    parser.add_argument("--sigma", type=float, default=10.0)
    parser.add_argument("--rows", type=int, default=50_000, help="records of the synthetic chains")
    parser.add_argument("--max-cells", type=float, default=1e7, help="junction-tree cap of the adult cases")
    parser.add_argument("--appgm-step", type=float, default=0.05, help="mbi's fixed APPGM step size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", type=Path, default=harness.DATA)
    parser.add_argument("--mbi-python", type=Path, default=MBI_PYTHON)
    parser.add_argument("--case-timeout", type=float, default=150.0, help="seconds per (case, side) run")
    parser.add_argument("--reference", type=Path, default=REFERENCE_DIR,
                        help="directory holding the author's aim.py, mechanism.py and cdp2adp.py (mbi's AIM)")
    parser.add_argument("--profile", action="store_true",
                        help="ours on torch: also the 15 costliest kernels of an estimate (torch's profiler)")
    parser.add_argument("--out", type=Path, help=f"results JSON, merged into (default {RESULTS.relative_to(REPO)})")
    parser.add_argument("--table", action="store_true", help="only print the table of --out")
    parser.add_argument("--first-call", action="store_true",
                        help="ours: only a cold first estimate each, under cProfile, printed (nothing saved)")
    parser.add_argument("--missing", action="store_true",
                        help="only the (case, side) runs --out lacks or records as failed or timed out")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 5 and (3, 6) iterations, results to a temporary file")
    parser.add_argument("--worker", nargs=2, metavar=("CASE", "SIDE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.iters, args.timing_iters, args.curve_iters, args.rows = 5, [3, 6], [10], 2000
        if args.out is None and args.worker is None:
            args.out = Path(tempfile.gettempdir()) / "gpu_vs_mbi_quick.json"
            args.out.unlink(missing_ok=True)
    args.out = args.out or RESULTS
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker is not None:
        if args.first_call:  # the stacks on standard error 5 s before the run is cut off: where a hang is
            import faulthandler

            faulthandler.dump_traceback_later(max(args.case_timeout - 5.0, 1.0))
        print(json.dumps(worker(*args.worker, args)))
        return
    if args.table:
        results = json.loads(args.out.read_text())
    else:
        results = run_all(args)
        if args.first_call:
            return
        print(f"wrote {args.out}", file=sys.stderr)
    print(tables({RESULTS.name: results}))


if __name__ == "__main__":
    main()
