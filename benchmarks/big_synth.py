"""A steward's table past memory, end to end: ``ektelo-pgm synth`` (MST) and ``Synthesizer`` (AIM,
20 rounds) on a 50M-row raw Parquet table, read part by part.

1. Generate, when ``--out`` does not hold it, a raw table of ``--rows`` records (outside the
   repository): the built-in census network (``sample_data.census_network``, 10 attributes)
   written as a steward's file would hold it (age and hours as whole numbers, the other
   attributes as text labels) plus an 11th column ``weekday`` (text, uniform), in Parquet parts
   of 1M rows.  The exact 1- and 2-way counts of the codes drawn are kept beside it.
2. MST through the command line, ``ektelo-pgm synth <folder> -o <out>.parquet --epsilon 1
   --engine parts``, in a child process; then AIM (``rounds=20``) through the Python API in
   another child process, its output written part by part as well.
3. For each run: wall and CPU seconds and the peak resident memory of the child's whole process
   tree (``harness.run``: ``wait4``, the largest of any process in it), rows written, and the mean
   1-way and 2-way total variation distance of the synthetic table to the real counts (both
   read back as codes of the census network's labels).

Writes ``benchmarks/results/big_synth.json``.

    nice -n 10 python benchmarks/big_synth.py [--rows 50000000] [--out /work/runs/raw50m]
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

import numpy as np

import harness

sys.path.insert(0, str(harness.REPO))

from ektelo_pgm.sample_data import census_network  # noqa: E402

DOC = harness.Doc(
    title="A steward's table past memory, end to end",
    rerun="nice -n 10 python benchmarks/big_synth.py [--rows 50000000] [--out /work/runs/raw50m]",
    reading="""
Both runs write 50 million rows from a 50M-row raw Parquet table read part by part, in about four minutes
each on two cores and under 1 GB of memory; the mean 2-way total variation distance to the real counts is
0.014 for MST and 0.0014 for AIM.""",
    results=("big_synth.json",))


RESULTS = harness.RESULTS / "big_synth.json"
PART_ROWS = 1_000_000
WEEKDAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


def labels() -> dict:
    """The raw value of each code of each column: numbers for age (years, from 17) and hours, text
    for the others."""
    domain = census_network().domain
    out = {a: [f"{a}-{k}" for k in range(size)] for a, size in zip(domain.attrs, domain.shape)}
    out["age"] = list(range(17, 17 + domain["age"]))
    out["hours"] = list(range(5, 5 + 5 * domain["hours"], 5))
    out["weekday"] = WEEKDAYS
    return out


def generate(out: Path, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    network, names = census_network(), labels()
    out.mkdir(parents=True, exist_ok=True)
    attrs = [*network.domain.attrs, "weekday"]
    counts = {c: 0 for c in itertools.chain(((a,) for a in attrs), itertools.combinations(attrs, 2))}
    rng = np.random.default_rng(0)
    for k, start in enumerate(range(0, rows, PART_ROWS)):
        n = min(PART_ROWS, rows - start)
        codes = network.synthetic_data(n, k, method="sample").records
        codes = np.column_stack([codes, rng.integers(0, 7, n)])
        columns = {}
        for j, a in enumerate(attrs):
            values = names[a]
            if isinstance(values[0], int):
                columns[a] = pa.array(np.asarray(values, dtype=np.int64)[codes[:, j]])
            else:
                columns[a] = pa.DictionaryArray.from_arrays(pa.array(codes[:, j].astype(np.int32)), pa.array(values))
        pq.write_table(pa.table(columns), out / f"part-{k:04d}.parquet")
        for clique in counts:
            axes = [attrs.index(a) for a in clique]
            shape = [len(names[a]) for a in clique]
            flat = np.ravel_multi_index(codes[:, axes].T, shape)
            counts[clique] = counts[clique] + np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)
        print(f"part {k}: {start + n:,} rows", flush=True)
    np.savez(out.parent / f"{out.name}-counts.npz", **{",".join(c): t for c, t in counts.items()})


def child(command: list[str], log: Path) -> dict:
    """Run ``command`` (its output to ``log``); its wall and CPU seconds and the peak resident
    memory of its process tree."""
    done = harness.run(command, log=log)
    tail = done.output[-1500:]
    if not done.ok:
        print(tail, file=sys.stderr)
    return {"returncode": done.returncode, "wall_s": round(done.wall, 1), "cpu_s": round(done.cpu, 1),
            "peak_mb": round(done.peak_mb, 1), "stderr_tail": tail}


def tables(results: dict) -> str:
    data = results["big_synth.json"]
    lines = [f"{data['rows']:,} rows, {data['columns']} columns, {data['parts']} Parquet parts "
             f"({data['bytes_on_disk'] / 2**20:,.0f} MB on disk).", "",
             "| run | wall s | CPU s | peak MB | rows written | mean 1-way TVD | mean 2-way TVD |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, r in data["runs"].items():
        lines.append(f"| {name} | {r['wall_s']:,.1f} | {r['cpu_s']:,.1f} | {r['peak_mb']:,.0f} | {r.get('rows', 0):,} | "
                     f"{r.get('tvd_1way', float('nan')):.5f} | {r.get('tvd_2way', float('nan')):.5f} |")
    return "\n".join(lines)


def fidelity(path: Path, counts_path: Path) -> dict:
    """Mean 1- and 2-way total variation distance of the synthetic table at ``path`` to the real counts."""
    import pandas as pd
    import pyarrow.parquet as pq

    names = labels()
    real = dict(np.load(counts_path))
    attrs = list(names)
    tables = {c: 0 for c in real}
    rows = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=PART_ROWS):
        frame = batch.to_pandas()
        codes = {}
        for a in attrs:  # each distinct value looked up once; -1: missing or not a label
            lookup = {str(v): k for k, v in enumerate(names[a])}
            rows_of, uniques = pd.factorize(frame[a])
            codes[a] = np.array([lookup.get(str(v), -1) for v in uniques] + [-1], dtype=np.int64)[rows_of]
        rows += len(frame)
        for key in tables:
            clique = key.split(",")
            keep = np.all([codes[a] >= 0 for a in clique], axis=0)
            index = np.ravel_multi_index([codes[a][keep] for a in clique], [len(names[a]) for a in clique])
            tables[key] = tables[key] + np.bincount(index, minlength=real[key].size)
    tvd = {k: 0.5 * np.abs(tables[k] / rows - real[k].ravel() / real[k].sum()).sum() for k in real}
    one = [v for k, v in tvd.items() if "," not in k]
    two = [v for k, v in tvd.items() if "," in k]
    return {"rows": rows, "tvd_1way": round(float(np.mean(one)), 5), "tvd_2way": round(float(np.mean(two)), 5)}


AIM_SCRIPT = """
import sys
from ektelo_pgm.synthesizer import Synthesizer
from ektelo_pgm.table_io import Partitions
synth = Synthesizer("aim", epsilon=1.0, seed=0, progress=True, rounds=20)
synth.fit(Partitions(sys.argv[1]))
synth.write(sys.argv[2])
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--out", type=Path, default=Path("/work/runs/raw50m"))
    parser.add_argument("--runs", nargs="*", default=["mst", "aim"], choices=["mst", "aim"],
                        help="the runs to make (none: only generate the table)")
    args = parser.parse_args()
    counts = args.out.parent / f"{args.out.name}-counts.npz"
    if not counts.exists():
        _, seconds, _ = harness.timed(lambda: generate(args.out, args.rows))
        print(f"generated in {seconds:.0f} s", flush=True)
    record = {"rows": args.rows, "columns": 11, "parts": len(list(args.out.glob("*.parquet"))),
              "bytes_on_disk": sum(p.stat().st_size for p in args.out.glob("*.parquet")),
              "load_before": os.getloadavg(), "runs": {}}
    python = sys.executable
    for run in args.runs:
        output = args.out.parent / f"{args.out.name}-{run}.parquet"
        if run == "mst":
            command = [python, "-m", "ektelo_pgm.cli", "synth", str(args.out), "-o", str(output), "--epsilon", "1",
                       "--mechanism", "mst", "--engine", "parts", "--seed", "0"]
        else:
            command = [python, "-c", AIM_SCRIPT, str(args.out), str(output)]
        result = child(command, args.out.parent / f"{args.out.name}-{run}.log")
        result["load_after"] = os.getloadavg()
        if result["returncode"] == 0:
            result.update(fidelity(output, counts))
        record["runs"][run] = result
        print(run, {k: v for k, v in result.items() if k != "stderr_tail"}, flush=True)
    harness.save(RESULTS, record, "pyarrow")


if __name__ == "__main__":
    main()
