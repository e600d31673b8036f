"""Scalability of PGM estimation on the chain of McKenna et al. 2019, Fig. 2b (issue 3).

Attributes of size 10, one noisy identity measurement of every triple of adjacent attributes
(i, i+1, i+2), mirror descent (Algorithm 1).  For 10, 100 and 1000 attributes, reports

* the first call (``PGM(iters=1).reconstruct``: junction tree, buffers, one iteration) in a fresh
  process with an empty numba cache (compilation included) and again with that cache warm;
* seconds per mirror-descent iteration (between the first and last callback; wall, and CPU
  summed over the threads).

Each measurement runs in its own subprocess with ``NUMBA_CACHE_DIR`` set to a private temporary
directory, so the cold runs really compile.  Writes ``benchmarks/results/pgm_scale.json``.

    python benchmarks/pgm_scale.py [--sizes 10 100 1000]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "pgm_scale.json"
ITERATIONS = {10: 1000, 100: 300, 1000: 100}


def chain_measurements(d: int, records: int = 10_000, seed: int = 0):
    """Noisy (std 10) marginals of every adjacent triple of a random-walk dataset with d attributes."""
    import numpy as np

    from ektelo_pgm.dataset import Dataset
    from ektelo_pgm.domain import Domain
    from ektelo_pgm.measurement import Measurement

    rng = np.random.default_rng(seed)
    domain = Domain([f"a{i}" for i in range(d)], [10] * d)
    steps = rng.integers(-1, 2, size=(records, d))
    steps[:, 0] = rng.integers(0, 10, size=records)
    data = Dataset(np.cumsum(steps, axis=1) % 10, domain)
    measurements = []
    for i in range(d - 2):
        attrs = (f"a{i}", f"a{i + 1}", f"a{i + 2}")
        measurements.append(Measurement(attrs, data.marginal(attrs).ravel() + rng.normal(0, 10, 1000), 10.0))
    return domain, measurements


def child(d: int, iters: int) -> dict:
    """One process: first call, then timed iterations (wall and CPU seconds)."""
    from ektelo_pgm.operators.reconstruct import PGM

    domain, measurements = chain_measurements(d)
    wall, cpu = time.perf_counter(), time.process_time()
    PGM(iters=1).reconstruct(domain, measurements)
    first = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
    stamps = []
    fitted = PGM(iters=iters).reconstruct(
        domain, measurements, callback=lambda t, loss: stamps.append((time.perf_counter(), time.process_time(), loss)))
    n = len(stamps) - 1
    return {
        "first_call_s": first,
        "iterations": len(stamps),
        "seconds_per_iteration": {"wall": (stamps[-1][0] - stamps[0][0]) / n, "cpu": (stamps[-1][1] - stamps[0][1]) / n},
        "final_loss": stamps[-1][2],
        "junction_tree_cells": fitted.tree.cells,
        "total": fitted.total,
    }


def run(d: int, iters: int, cache: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, __file__, "--child", str(d), str(iters)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--child", type=int, nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    rows = []
    for d in args.sizes:
        iters = ITERATIONS.get(d, 100)
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
            cold = run(d, iters, cache)
            warm = run(d, iters, cache)
        row = {"attributes": d, "cold_cache": cold, "warm_cache": warm}
        rows.append(row)
        print(f"d={d:5d}  first call: {cold['first_call_s']['wall']:.2f} s cold, {warm['first_call_s']['wall']:.2f} s "
              f"warm;  per iteration: {1000 * warm['seconds_per_iteration']['wall']:.1f} ms wall, "
              f"{1000 * warm['seconds_per_iteration']['cpu']:.1f} ms cpu (both cores)", flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "benchmark": "PGM mirror descent on the Fig. 2b chain (McKenna et al. 2019)",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "results": rows,
    }, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
