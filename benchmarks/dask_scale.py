"""Data past one machine's memory: marginal counting, MST and AIM on a 50M-row partitioned table
with a bounded worker memory (a ``dask.distributed`` LocalCluster).

1. Generate ``--rows`` records of the built-in census network (``sample_data.census_network``,
   10 attributes) as Parquet files of ``--partition-rows`` rows each under ``--out`` (outside
   the repository), on the cluster's workers; every part also returns its in-memory
   ``Dataset.marginal`` counts of every 1- and 2-way marginal, the reference the partitioned counts
   must equal exactly.  Skipped when ``--out`` already holds the table.
2. On a fresh cluster (so that the workers' peak memory is that of the next steps), open the table as
   a :class:`~ektelo_pgm.dask_dataset.DaskDataset` and count all 1- and 2-way marginals in one
   pass; check them against the reference.
3. MST (epsilon 1, delta 1e-9) and AIM (``--aim-rounds`` rounds, ``--aim-iters`` PGM iterations)
   on fresh DaskDatasets (no counts carried over), with their mean 2-way total variation distance
   to the true marginals.

Records wall and CPU seconds (client plus workers), the workers' and the client's peak resident
memory, the memory limit, the table's size on disk and in memory (int64 codes, as an in-memory
Dataset holds them), and the load average.  Writes ``benchmarks/results/dask_scale.json``.

    nice -n 10 python benchmarks/dask_scale.py [--rows 50000000] [--out /work/runs/dask50m]
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's ektelo_pgm, not an installed one
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))  # workers'

import harness  # noqa: E402
from ektelo_pgm import Budget, Dataset  # noqa: E402
from ektelo_pgm.dask_dataset import DaskDataset  # noqa: E402
from ektelo_pgm.mechanisms import AIM, MST  # noqa: E402
from ektelo_pgm.sample_data import census_network  # noqa: E402

DOC = harness.Doc(
    title="Dask path at 50M rows",
    rerun="nice -n 10 python benchmarks/dask_scale.py [--rows 50000000] [--out /work/runs/dask50m]   # the dask extra",
    reading="""
Fifty million rows (3.8 GB as an in-memory dataset) are counted, and MST and AIM run, with two workers of
1 GiB each: the counts equal the in-memory ones exactly and neither worker passed 700 MB.  The run shared a
machine with a load average of 10-20, so its wall seconds are several times its CPU seconds.""",
    results=("dask_scale.json",))


RESULTS = harness.RESULTS / "dask_scale.json"


def cliques(domain):
    return [(a,) for a in domain.attrs] + list(itertools.combinations(domain.attrs, 2))


def generate_part(path: str, rows: int, seed: int) -> list[np.ndarray]:
    """One Parquet part (uint8 codes) of ``rows`` records drawn with ``seed``; returns the part's
    in-memory 1- and 2-way marginal counts (int64)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data: Dataset = census_network().synthetic_data(rows, seed, method="sample")
    table = pa.table({a: data.records[:, j].astype(np.uint8) for j, a in enumerate(data.domain.attrs)})
    pq.write_table(table, path)
    return [data.marginal(c).astype(np.int64) for c in cliques(data.domain)]


def generate(client, out: Path, rows: int, part_rows: int) -> dict:
    domain = census_network().domain
    out.mkdir(parents=True, exist_ok=True)
    sizes = [min(part_rows, rows - start) for start in range(0, rows, part_rows)]
    clock = harness.Clock()
    futures = [client.submit(generate_part, str(out / f"part-{i:04d}.parquet"), n, i, pure=False)
               for i, n in enumerate(sizes)]
    reference = None
    for future in futures:
        counts = future.result()
        reference = counts if reference is None else [r + c for r, c in zip(reference, counts)]
        future.release()
    (out / "domain.json").write_text(json.dumps(dict(zip(domain.attrs, domain.shape))))
    np.savez(out / "reference.npz", *reference)
    (out / "complete").write_text(json.dumps({"rows": rows, "partitions": len(sizes)}))
    return {"seconds_wall": clock.elapsed(), "partitions": len(sizes)}


def worker_usage(client) -> dict:
    """Per worker: CPU seconds (user + system) and peak resident memory (MB) since it started."""
    def usage():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime, r.ru_maxrss / 1024
    return client.run(usage)


def timed(client, step):
    """``step()``'s result, wall seconds and CPU seconds of the client and the workers."""
    before = worker_usage(client)
    with harness.clock() as clock:
        result = step()
    wall, cpu = clock.wall, clock.cpu
    after = worker_usage(client)
    workers = sum(after[w][0] - before[w][0] for w in after if w in before)
    return result, {"seconds_wall": round(wall, 1), "seconds_cpu_client": round(cpu, 1),
                    "seconds_cpu_workers": round(workers, 1)}


def mean_tvd(estimate, truth: dict) -> float:
    """Mean total variation distance over the 2-way marginals (probabilities)."""
    out = []
    for c, counts in truth.items():
        if len(c) == 2:
            p = counts / counts.sum()
            q = np.clip(estimate.project(c), 0, None)
            out.append(0.5 * np.abs(p - q / q.sum()).sum())
    return float(np.mean(out))


def tables(results: dict) -> str:
    data = results["dask_scale.json"]
    peaks = " and ".join(f"{mb:,.0f}" for mb in data["peak_mb_workers"])
    lines = [(f"{data['rows']:,} rows in {data['partitions']} Parquet parts ({data['parquet_mb_on_disk']:,} MB on "
              f"disk, {data['in_memory_dataset_mb']:,} MB as an in-memory dataset); {data['workers']} workers of "
              f"{data['memory_limit_per_worker']}, one thread each; peak MB of the workers {peaks}, of the client "
              f"{data['peak_mb_client']:,.0f}."), "",
             "| step | wall s | CPU s client | CPU s workers | mean 2-way TVD |", "|---|---:|---:|---:|---:|"]
    for step in ("count", "MST", "AIM"):
        if step in data:
            r = data[step]
            tvd = f"{r['mean_2way_tvd']:.4f}" if "mean_2way_tvd" in r else (
                "exact" if r.get("equal_to_in_memory_counts") else "-")
            lines.append(f"| {step} | {r['seconds_wall']:,.1f} | {r['seconds_cpu_client']:,.1f} | "
                         f"{r['seconds_cpu_workers']:,.1f} | {tvd} |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--partition-rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/work/runs/dask50m"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="1GiB", help="per worker")
    parser.add_argument("--mechanisms", nargs="*", default=["MST", "AIM"], choices=["MST", "AIM"])
    parser.add_argument("--aim-rounds", type=int, default=20)
    parser.add_argument("--aim-iters", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if REPO in args.out.resolve().parents:
        parser.error("--out must lie outside the repository")
    from dask.distributed import Client, LocalCluster

    def cluster():
        return LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
                            processes=True, dashboard_address=None)

    load = [os.getloadavg()]
    result = {"code": harness.code_state(), "rows": args.rows, "workers": args.workers, "threads_per_worker": 1,
              "memory_limit_per_worker": args.memory_limit}
    marker = args.out / "complete"
    if not marker.is_file() or json.loads(marker.read_text())["rows"] != args.rows:
        with cluster() as generating, Client(generating) as client:
            result["generate"] = generate(client, args.out, args.rows, args.partition_rows)
    # fresh workers, so that their peak memory is that of the steps below
    measuring = cluster()
    client = Client(measuring)
    result["partitions"] = json.loads(marker.read_text())["partitions"]
    result["parquet_mb_on_disk"] = round(sum(p.stat().st_size for p in args.out.glob("*.parquet")) / 2**20, 1)
    domain = census_network().domain
    result["in_memory_dataset_mb"] = round(args.rows * len(domain) * 8 / 2**20, 1)

    open_table = lambda: DaskDataset.load(args.out, args.out / "domain.json")  # noqa: E731
    counted, result["count"] = timed(client, lambda: open_table().marginals(cliques(domain)))
    with np.load(args.out / "reference.npz") as reference:
        exact = all(np.array_equal(c, reference[f"arr_{i}"]) for i, c in enumerate(counted))
    result["count"].update(marginals=len(counted), equal_to_in_memory_counts=bool(exact))
    truth = dict(zip(cliques(domain), counted))
    load.append(os.getloadavg())

    runs = {"MST": lambda: MST().run(open_table(), Budget.approx(1.0, 1e-9), rng=args.seed),
            "AIM": lambda: AIM(rounds=args.aim_rounds, iters=args.aim_iters).run(
                open_table(), Budget.approx(1.0, 1e-9), rng=args.seed)}
    def save():  # after every step, so that a run cut short keeps what it measured
        peaks = {w: round(mb, 1) for w, (_, mb) in worker_usage(client).items()}
        result["peak_mb_workers"] = sorted(peaks.values())
        result["peak_mb_client"] = round(harness.peak_mb(), 1)
        result["load_average_1_5_15"] = [[round(x, 2) for x in entry] for entry in load]
        harness.save(RESULTS, result, "dask", "distributed", "pyarrow")

    save()
    for name in args.mechanisms:
        run_result, result[name] = timed(client, runs[name])
        result[name]["mean_2way_tvd"] = round(mean_tvd(run_result.estimate, truth), 4)
        if name == "AIM":
            result[name].update(rounds=args.aim_rounds, iters=args.aim_iters)
        load.append(os.getloadavg())
        save()
    client.close()
    measuring.close()
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
