"""Counting at disk speed: every 1- and 2-way marginal of a 50M-row Parquet table of integer codes
on one machine, by several engines (issue 32).

1. Generate ``--rows`` records (skipped when ``--out`` already holds them), ``--part-rows`` per
   Parquet file of uint8 codes under ``--out`` (outside the repository): the 10 attributes of
   ``sample_data.census_network()`` (``synthetic_data(rows, part, method="sample")``) and an 11th,
   ``weekday`` (7 values, uniform), with ``domain.json`` and ``reference.npz``, the exact counts of
   all 66 marginals summed over the parts' in-memory ``Dataset.marginals``.
2. Each engine counts all 66 marginals of the whole table in a fresh process, its counts checked
   for exact equality with the reference:

   - ``dask_bincount``: ``DaskDataset.load(folder, domain.json).marginals(cliques)`` (threaded
     scheduler; it counts the 55 pairs and sums the 1-way marginals from them) with each partition
     counted by ``np.bincount`` per marginal, as ``dask_dataset._count`` did before the kernel;
   - ``arrow_kernel``: ``pyarrow.parquet`` record batches, file after file, read one batch ahead
     in a thread and gathered into blocks of ``--arrow-batch-rows`` records, codes checked against
     their sizes, counted by ``kernels.counting.count_marginals``;
   - ``dask_kernel``: the same with ``dask_dataset._count`` as it is, counting each partition with
     the kernel (serial in each of Dask's threads, which already share the cores);
   - ``duckdb_grouping_sets`` (one query, ``GROUP BY GROUPING SETS`` of the 66 sets) and
     ``duckdb_per_marginal`` (66 queries), reading the Parquet folder;
   - ``polars_collect_all`` (66 lazy ``group_by(...).len()`` queries collected together) and
     ``polars_per_marginal`` (collected one by one), on the streaming engine.

   Per engine: wall seconds of the counting and of the whole process (start, imports and kernel
   cache loading included), CPU seconds (user + system) of the process, its peak resident memory
   (``os.wait4``: the process and any it waited for), and the CPUs other processes wanted during
   the run (runnable threads not the engine's, sampled every second).
3. ``in_memory``: on the first 1M-row part, ``count_marginals`` (serial and parallel) against the
   in-memory ``Dataset(records, domain).marginals(cliques)`` (``np.bincount``).

duckdb and polars are not dependencies of the project: run this with an environment that has
them (``python -m venv /work/venvs/engines && /work/venvs/engines/bin/pip install -e
'.[dask,parquet]' duckdb polars``).  Writes ``benchmarks/results/counting_engines.json``.

    nice -n 10 /work/venvs/engines/bin/python benchmarks/counting_engines.py [--out /work/runs/codes50m]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np

import harness

DOC = harness.Doc(
    title="Counting at disk speed",
    rerun="nice -n 10 /work/venvs/engines/bin/python benchmarks/counting_engines.py    # duckdb, polars: their own venv",
    reading="""
Every engine's counts are exact.  Parquet batches read into the project's counting kernel count the 66
marginals of 50 million rows in about 8 s on two cores, 4-8x faster than DuckDB and Polars and 5x faster
than Dask with `np.bincount` per partition; `DaskDataset` with the kernel per partition takes 29 s.""",
    results=("counting_engines.json",))


REPO = harness.REPO
sys.path.insert(0, str(REPO))  # this checkout's ektelo_pgm, not an installed one
RESULTS = harness.RESULTS / "counting_engines.json"
ENGINES = ["in_memory", "dask_bincount", "arrow_kernel", "dask_kernel", "duckdb_grouping_sets",
           "duckdb_per_marginal", "polars_collect_all", "polars_per_marginal"]
PACKAGES = ("pyarrow", "dask", "pandas", "duckdb", "polars")  # whose versions the results record
WEEKDAY_SEED = 7  # the weekday column of part i is drawn with default_rng([WEEKDAY_SEED, i])


def table_domain():
    """The census network's domain plus ``weekday`` (7 values)."""
    from ektelo_pgm import Domain
    from ektelo_pgm.sample_data import census_network

    census = census_network().domain
    return Domain(list(census.attrs) + ["weekday"], list(census.shape) + [7])


def cliques(domain) -> list[tuple[str, ...]]:
    return [(a,) for a in domain.attrs] + list(itertools.combinations(domain.attrs, 2))


def generate(out: Path, rows: int, part_rows: int) -> dict:
    """The Parquet parts, ``domain.json`` and ``reference.npz`` under ``out``, one part at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ektelo_pgm import Dataset
    from ektelo_pgm.sample_data import census_network

    network, domain = census_network(), table_domain()
    out.mkdir(parents=True, exist_ok=True)
    sizes = [min(part_rows, rows - start) for start in range(0, rows, part_rows)]
    clock, reference = harness.Clock(), None
    for part, n in enumerate(sizes):
        census = network.synthetic_data(n, part, method="sample").records
        weekday = np.random.default_rng([WEEKDAY_SEED, part]).integers(0, 7, n)
        records = np.column_stack([census, weekday])
        pq.write_table(pa.table({a: records[:, j].astype(np.uint8) for j, a in enumerate(domain.attrs)}),
                       out / f"part-{part:04d}.parquet")
        counts = [m.astype(np.int64) for m in Dataset(records, domain).marginals(cliques(domain))]
        reference = counts if reference is None else [r + c for r, c in zip(reference, counts)]
    (out / "domain.json").write_text(json.dumps(dict(zip(domain.attrs, map(int, domain.shape)))))
    np.savez(out / "reference.npz", *reference)
    (out / "complete").write_text(json.dumps({"rows": rows, "parts": len(sizes)}))
    return {"seconds_wall": round(clock.elapsed(), 1), "parts": len(sizes)}


def plan_of(domain, wanted):
    """The kernel's plan (axes, shape) and zeroed flat int64 tables of the marginals ``wanted``."""
    plan = [(domain.axes(c), domain.project(c).shape) for c in wanted]
    return plan, [np.zeros(int(np.prod(shape)), dtype=np.int64) for _, shape in plan]


def prefetched(items, depth: int = 1):
    """The items of an iterator, produced ``depth`` ahead by a background thread (pyarrow reads
    and the kernel both release the GIL, so reading and counting overlap)."""
    ready, done = queue.Queue(maxsize=depth), object()

    def produce():
        try:
            for item in items:
                ready.put(item)
        except BaseException as error:  # handed to the consumer
            ready.put(error)
        ready.put(done)

    threading.Thread(target=produce, daemon=True).start()
    while (item := ready.get()) is not done:
        if isinstance(item, BaseException):
            raise item
        yield item


def count_arrow(folder: Path, domain, batch_rows: int) -> tuple[list, dict]:
    """The Parquet files' record batches (``ParquetFile.iter_batches``, read one batch ahead)
    copied into a reused (attributes x ``batch_rows``) block of the table's dtype; each full
    block's codes are checked against their sizes and counted."""
    import pyarrow.parquet as pq

    from ektelo_pgm.kernels.counting import count_marginals

    files = sorted(folder.glob("*.parquet"))
    attrs = list(domain.attrs)
    schema = pq.read_schema(files[0])
    dtype = np.result_type(*[schema.field(a).type.to_pandas_dtype() for a in attrs])
    plan, out = plan_of(domain, cliques(domain))
    sizes = np.array(domain.shape)[:, None]
    block, filled = np.empty((len(attrs), batch_rows), dtype=dtype), 0

    def count(n):
        codes = block[:, :n]
        if n and (codes.max(axis=1, keepdims=True) >= sizes).any():  # unsigned codes: no check below 0
            raise ValueError("a code lies outside its attribute's size")
        count_marginals(codes, plan, out)

    batches = (batch for file in files for batch in pq.ParquetFile(file).iter_batches(batch_rows, columns=attrs))
    for batch in prefetched(batches):
        start = 0
        while start < batch.num_rows:
            take = min(batch.num_rows - start, batch_rows - filled)
            for k in range(len(attrs)):
                block[k, filled:filled + take] = batch.column(k).to_numpy()[start:start + take]
            filled, start = filled + take, start + take
            if filled == batch_rows:
                count(filled)
                filled = 0
    count(filled)
    return out, {"batch_rows": batch_rows, "dtype": str(dtype), "read_ahead_batches": 1}


def _count_with_bincount(part, index, domain, plan):
    """``dask_dataset._count`` as it counted before the kernel: ``np.bincount`` per marginal (the
    kernel's reference twin)."""
    from ektelo_pgm import dask_dataset
    from ektelo_pgm.kernels.counting import count_marginals_reference

    columns = np.ascontiguousarray(dask_dataset._codes(part, index, domain).T)
    tables = [np.zeros(int(np.prod(shape)), dtype=np.int64) for _, shape in plan]
    count_marginals_reference(columns, plan, tables)
    return [np.int64(columns.shape[1]), *tables]


def count_dask(folder: Path, domain, kernel: bool) -> tuple[list, dict]:
    """``DaskDataset.marginals`` (threaded scheduler), its partitions counted by the kernel (as
    ``dask_dataset._count`` does) or by ``np.bincount``."""
    import dask

    from ektelo_pgm import dask_dataset

    if not kernel:
        dask_dataset._count = _count_with_bincount
    data = dask_dataset.DaskDataset.load(folder, folder / "domain.json")
    counted = data.marginals(cliques(domain))
    return counted, {"partitions": data.frame.npartitions, "scheduler": dask.config.get("scheduler", "threads"),
                     "threads": os.cpu_count()}


def count_duckdb(folder: Path, domain, grouping_sets: bool) -> tuple[list, dict]:
    """DuckDB over the Parquet folder: one GROUPING SETS query, or one GROUP BY per marginal."""
    import duckdb

    connection = duckdb.connect()
    source = f"read_parquet('{folder}/*.parquet')"
    plan, out = plan_of(domain, cliques(domain))
    attrs = list(domain.attrs)

    def fill(table, axes, shape, result):
        cells = np.ravel_multi_index(tuple(result[attrs[a]].astype(np.int64) for a in axes), shape)
        table[cells] = result["n"]

    if grouping_sets:
        sets = ", ".join("(" + ", ".join(c) + ")" for c in cliques(domain))
        result = connection.execute(f"SELECT {', '.join(attrs)}, GROUPING({', '.join(attrs)}) AS absent, "
                                    f"COUNT(*) AS n FROM {source} GROUP BY GROUPING SETS ({sets})").fetchnumpy()
        absent = np.asarray(result["absent"])
        for (axes, shape), table in zip(plan, out):
            mask = sum(1 << (len(attrs) - 1 - a) for a in range(len(attrs)) if a not in axes)  # first attr: top bit
            rows = absent == mask
            fill(table, axes, shape, {key: np.asarray(value)[rows] for key, value in result.items()})
    else:
        for (axes, shape), table in zip(plan, out):
            names = ", ".join(attrs[a] for a in axes)
            fill(table, axes, shape, connection.execute(
                f"SELECT {names}, COUNT(*) AS n FROM {source} GROUP BY {names}").fetchnumpy())
    threads = connection.execute("SELECT current_setting('threads')").fetchone()[0]
    return out, {"threads": int(threads), "memory_limit": connection.execute(
        "SELECT current_setting('memory_limit')").fetchone()[0]}


def count_polars(folder: Path, domain, together: bool) -> tuple[list, dict]:
    """Polars' streaming engine: one ``group_by(...).len()`` per marginal, collected together or
    one by one."""
    import polars as pl

    scan = pl.scan_parquet(folder / "*.parquet")
    plan, out = plan_of(domain, cliques(domain))
    queries = [scan.group_by(list(c)).len() for c in cliques(domain)]
    frames = (pl.collect_all(queries, engine="streaming") if together
              else [query.collect(engine="streaming") for query in queries])
    for (axes, shape), table, frame, c in zip(plan, out, frames, cliques(domain)):
        cells = np.ravel_multi_index(tuple(frame[a].to_numpy().astype(np.int64) for a in c), shape)
        table[cells] = frame["len"].to_numpy()
    return out, {"threads": pl.thread_pool_size()}


def in_memory(folder: Path, domain) -> dict:
    """The kernel against ``Dataset.marginals`` on the first part, in memory."""
    import pyarrow.parquet as pq

    from ektelo_pgm import Dataset
    from ektelo_pgm.kernels.counting import count_marginals

    part = pq.read_table(sorted(folder.glob("*.parquet"))[0], columns=list(domain.attrs))
    codes = np.stack([part.column(a).to_numpy() for a in domain.attrs])
    dataset = Dataset(codes.T.astype(np.int64), domain)
    expected, wall, _ = harness.timed(lambda: [m.astype(np.int64).ravel() for m in dataset.marginals(cliques(domain))])
    result = {"rows": codes.shape[1], "seconds_dataset_marginals": round(wall, 3)}
    for parallel in (False, True):
        plan, out = plan_of(domain, cliques(domain))
        count_marginals(codes[:, :1000], plan, [t.copy() for t in out], parallel=parallel)  # compiled or loaded
        _, wall, _ = harness.timed(lambda: count_marginals(codes, plan, out, parallel=parallel))
        key = "parallel" if parallel else "serial"
        result[f"seconds_kernel_{key}"] = round(wall, 3)
        result[f"kernel_{key}_equals_dataset"] = all(np.array_equal(o, e) for o, e in zip(out, expected))
    return result


def child(engine: str, folder: Path, batch_rows: int) -> dict:
    """Count with ``engine`` in this process; print and return its measurements."""
    from ektelo_pgm.dataset import read_domain

    domain = read_domain(folder / "domain.json")
    if engine == "in_memory":
        return in_memory(folder, domain)
    runs = {"dask_bincount": lambda: count_dask(folder, domain, kernel=False),
            "dask_kernel": lambda: count_dask(folder, domain, kernel=True),
            "arrow_kernel": lambda: count_arrow(folder, domain, batch_rows),
            "duckdb_grouping_sets": lambda: count_duckdb(folder, domain, grouping_sets=True),
            "duckdb_per_marginal": lambda: count_duckdb(folder, domain, grouping_sets=False),
            "polars_collect_all": lambda: count_polars(folder, domain, together=True),
            "polars_per_marginal": lambda: count_polars(folder, domain, together=False)}
    (counted, settings), wall, cpu = harness.timed(runs[engine])
    with np.load(folder / "reference.npz") as reference:
        exact = all(np.array_equal(np.ravel(c), reference[f"arr_{i}"].ravel()) for i, c in enumerate(counted))
    return {"seconds_wall_counting": round(wall, 1), "seconds_cpu_counting": round(cpu, 1),
            "marginals": len(counted), "exact": bool(exact), **settings}


def run_engine(engine: str, args) -> dict:
    """``engine`` in a fresh process, with its process's wall, CPU and peak memory."""
    done = harness.child(__file__, "--child", engine, "--out", args.out, "--batch-rows", args.batch_rows,
                         timeout=args.timeout, watch=True)
    others = done.cpus_wanted_elsewhere
    result = done.result() if done.ok else None
    if result is None:
        result = {"failed": f"exit {done.returncode}" if not done.cut else f"exit after the {args.timeout} s limit",
                  "stderr_tail": done.errors.strip().splitlines()[-3:]}
    result.update(seconds_wall_process=round(done.wall, 1), seconds_cpu=round(done.cpu, 1),
                  peak_mb=round(done.peak_mb, 1),
                  cpus_wanted_elsewhere_mean=round(float(np.mean(others)), 2) if others else None)
    return result


def tables(results: dict) -> str:
    data = results["counting_engines.json"]
    lines = [f"All 66 1- and 2-way marginals of {data['rows']:,} rows ({data['parquet_mb_on_disk']:,} MB of Parquet); "
             "each engine in a fresh process; `in_memory` counts one 1M-row part.", "",
             "| engine | counting wall s | process wall s | CPU s | peak MB | exact | CPUs wanted elsewhere |",
             "|---|---:|---:|---:|---:|---|---:|"]
    for name, r in data["engines"].items():
        counting = r.get("seconds_wall_counting", r.get("seconds_kernel_parallel"))
        exact = r.get("exact", r.get("kernel_parallel_equals_dataset"))
        lines.append(f"| {name} | {'-' if counting is None else counting} | {r['seconds_wall_process']} | "
                     f"{r['seconds_cpu']} | {r['peak_mb']:,.0f} | {'-' if exact is None else 'yes' if exact else 'NO'} | "
                     f"{r['cpus_wanted_elsewhere_mean']} |")
    return "\n".join(lines)


def rows_label(rows: int) -> str:
    """``rows`` as 250k, 1M, 4M."""
    return f"{rows // 10**6}M" if rows % 10**6 == 0 else f"{rows // 1000}k"


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--part-rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/work/runs/codes50m"))
    parser.add_argument("--engines", nargs="*", default=ENGINES, choices=ENGINES)
    parser.add_argument("--arrow-batch-rows", type=int, nargs="*", default=[250_000, 1_000_000, 4_000_000])
    parser.add_argument("--batch-rows", type=int, default=1_000_000, help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per engine")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--child", choices=["generate"] + ENGINES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child == "generate":
        print(json.dumps(generate(args.out, args.rows, args.part_rows)))
        return {}
    if args.child:
        print(json.dumps(child(args.child, args.out, args.batch_rows)))
        return {}
    if REPO in args.out.resolve().parents or args.out.resolve() == REPO:
        parser.error("--out must lie outside the repository")
    result = json.loads(args.results.read_text()) if args.results.is_file() else {}
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "ektelo_pgm"], capture_output=True,
                           text=True).stdout.split("\n")
    result.update(uncommitted=[line[3:] for line in dirty if line], rows=args.rows, niceness=os.nice(0))
    marker = args.out / "complete"
    if not marker.is_file() or json.loads(marker.read_text())["rows"] != args.rows:
        # in a child, so that this process stays small: a child's peak memory counts its parent's at the fork
        result["generate"] = harness.child(__file__, "--child", "generate", "--out", args.out, "--rows", args.rows,
                                           "--part-rows", args.part_rows, check=True).result()
        harness.save(args.results, result, *PACKAGES)
    result["parquet_mb_on_disk"] = round(sum(p.stat().st_size for p in args.out.glob("*.parquet")) / 2**20, 1)
    engines = result.setdefault("engines", {})
    for engine in args.engines:
        for batch_rows in (args.arrow_batch_rows if engine == "arrow_kernel" else [args.batch_rows]):
            args.batch_rows = batch_rows
            name = f"{engine}_{rows_label(batch_rows)}" if engine == "arrow_kernel" else engine
            load = os.getloadavg()
            engines[name] = run_engine(engine, args)
            engines[name].update(load_average_1_5_15_before=[round(x, 2) for x in load],
                                 date=harness.now())
            wanted = engines[name]["cpus_wanted_elsewhere_mean"]
            engines[name]["machine_shared"] = bool((wanted or 0) > 0.5)
            print(name, json.dumps(engines[name]), flush=True)
            harness.save(args.results, result, *PACKAGES)
    return result


if __name__ == "__main__":
    main()
