"""The steward's AIM (``Synthesizer("aim")``, every option at its default: 2-way candidates on a
table this wide) on a raw table of ``--rows`` records and 30 columns in Parquet parts, read part
by part, every candidate's data counts summed over the parts in one pass.

1. Generate, when ``--out`` does not hold it, the table outside the repository: records drawn
   from a random Bayesian network of 30 attributes made as ``mechanisms_vs_reference.bayes_net``
   makes its networks (2 to 6 values, 2 or 3 parents, Dirichlet(0.5) tables; drawn here before
   any record, so that the records come part by part), each value written as a text label
   (``x07-3``), in Parquet parts of 1M rows (dictionary-coded text); memory holds one part.  The
   exact 1- and 2-way counts of the codes drawn are kept beside it.
2. The slice check, on the first part (1M rows): the same seeded AIM (48 rounds; every
   candidate is counted in the first) through the in-memory path (the part read whole) and
   through the parts path (``Partitions``, codes counted from Parquet in passes); every
   candidate's data counts that AIM scored (its ``callback`` reads them) and the written records
   must be identical.
3. The run: ``Synthesizer("aim", epsilon=1, seed=0)`` fitted on ``Partitions(folder)`` and its
   records written part by part, in a child process: wall and CPU seconds and the peak resident
   memory of its process tree (``harness.run``: ``wait4``), the rows written, and the mean 1- and
   2-way total variation distance to the real counts.

Writes ``benchmarks/results/aim_out_of_core.json`` (one entry per table size).

    nice -n 10 python benchmarks/aim_out_of_core.py --rows 10000000 --out /work/runs/net30-10m
    nice -n 10 python benchmarks/aim_out_of_core.py --rows 100000000 --out /work/runs/net30-100m --runs aim
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np

import big_synth
import harness
from mechanisms_vs_reference import BN_CONCENTRATION, BN_PARENTS, BN_SEED, BN_SIZES

sys.path.insert(0, str(harness.REPO))

from ektelo_pgm import Domain  # noqa: E402
from ektelo_pgm.estimate import BayesNet  # noqa: E402
from ektelo_pgm.kernels.counting import count_marginals  # noqa: E402

DOC = harness.Doc(
    title="AIM out of core: 30 columns, Parquet parts",
    rerun="nice -n 10 python benchmarks/aim_out_of_core.py --rows 10000000 --out /work/runs/net30-10m; "
          "nice -n 10 python benchmarks/aim_out_of_core.py --rows 100000000 --out /work/runs/net30-100m --runs aim",
    reading="""
100M rows: 40.6 min wall and 491 CPU s at 1.6 GB (the fit 483 CPU s, 1.3 GB: one counting pass, 304 rounds), within
the issue's 45 minutes and 2 GiB with the machine's load at 10 to 20 on 2 cores, so the CPU seconds measure the work
(1M records written).  The slice check: 465 candidates' counts and the records identical in memory and part by
part.  10M rows: the fit 229 CPU s, 1.3 GB; writing all 10M records held two parts at once (2.1 GB), one since.""",
    results=("aim_out_of_core.json",))

RESULTS = harness.RESULTS / "aim_out_of_core.json"
ATTRIBUTES = 30
PART_ROWS = 1_000_000
#: AIM's rounds in the slice check (the steward's default is 16 per column): it compares counts and records, and
#: every candidate is counted in the first round.
SLICE_ROUNDS = 48


def network(attributes: int = ATTRIBUTES, seed: int = BN_SEED) -> BayesNet:
    """A random Bayesian network over ``x00..``: node ``j`` takes 2 or 3 parents among the earlier
    nodes, 2 to 6 values, and per value of its parents a distribution from a Dirichlet of
    concentration 0.5 (``mechanisms_vs_reference.bayes_net``'s recipe); deterministic in its
    arguments."""
    rng = np.random.default_rng([seed, attributes, 1])
    names = [f"x{j:02d}" for j in range(attributes)]
    sizes = rng.integers(BN_SIZES[0], BN_SIZES[1] + 1, size=attributes)
    parents, cpts = {}, {}
    for j, name in enumerate(names):
        count = min(j, int(rng.integers(BN_PARENTS[0], BN_PARENTS[1] + 1)))
        chosen = np.sort(rng.choice(j, size=count, replace=False)) if count else np.zeros(0, dtype=np.int64)
        tables = rng.dirichlet(np.full(sizes[j], BN_CONCENTRATION), size=int(np.prod(sizes[chosen])))
        parents[name] = tuple(names[p] for p in chosen)
        cpts[name] = tables.reshape(*sizes[chosen], sizes[j])
    return BayesNet(Domain(names, sizes), parents, cpts)


def labels(net: BayesNet) -> dict:
    """The raw text of each code of each column (``x07-3``)."""
    return {a: [f"{a}-{k}" for k in range(size)] for a, size in zip(net.domain.attrs, net.domain.shape)}


def generate(out: Path, rows: int) -> None:
    """The raw table of ``rows`` records: a folder ``out`` of Parquet parts of ``PART_ROWS`` rows
    (text as dictionaries), and beside it ``<out>-counts.npz``, the exact 1- and 2-way counts
    (keys ``x00`` and ``x00,x01``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    net = network()
    names, attrs, shape = labels(net), list(net.domain.attrs), net.domain.shape
    out.mkdir(parents=True, exist_ok=True)
    cliques = [(a,) for a in attrs] + list(itertools.combinations(attrs, 2))
    plan = [([attrs.index(a) for a in c], [shape[attrs.index(a)] for a in c]) for c in cliques]
    counts = [np.zeros(int(np.prod(s)), dtype=np.int64) for _, s in plan]
    for k, start in enumerate(range(0, rows, PART_ROWS)):
        n = min(PART_ROWS, rows - start)
        codes = net.synthetic_data(n, [BN_SEED, k], method="sample").records
        columns = {a: pa.DictionaryArray.from_arrays(pa.array(codes[:, j].astype(np.int32)), pa.array(names[a]))
                   for j, a in enumerate(attrs)}
        pq.write_table(pa.table(columns), out / f"part-{k:04d}.parquet")
        count_marginals(np.ascontiguousarray(codes.T), plan, counts)
        print(f"part {k}: {start + n:,} rows", flush=True)
    np.savez(out.parent / f"{out.name}-counts.npz",
             **{",".join(c): t.reshape(s) for c, t, (_, s) in zip(cliques, counts, plan)})


SLICE_SCRIPT = """
import json, sys, time, resource
import numpy as np
from ektelo_pgm.synthesizer import Synthesizer
from ektelo_pgm.table_io import Partitions, read_table
path, out, SLICE_ROUNDS = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen, report = [], {}
for engine, table in (("memory", lambda: read_table(path)), ("parts", lambda: Partitions(path))):
    kept = {}
    synth = Synthesizer("aim", epsilon=1.0, seed=0, progress=False, rounds=SLICE_ROUNDS,
                        callback=lambda state: kept.update(state.memo["marginal"]))
    began, cpu = time.perf_counter(), time.process_time()
    synth.fit(table())
    synth.write(f"{out}-{engine}.parquet")
    report[engine] = {"wall_s": round(time.perf_counter() - began, 1), "cpu_s": round(time.process_time() - cpu, 1)}
    seen.append(kept)
    with open(f"{out}-{engine}.parquet", "rb") as f:
        seen[-1] = (kept, f.read())
(memory, written_memory), (parts, written_parts) = seen
report["candidates_counted"] = len(parts)
report["counts_equal"] = memory.keys() == parts.keys() and all(np.array_equal(memory[c], parts[c]) for c in memory)
report["records_equal"] = written_memory == written_parts
print(json.dumps(report))
"""

AIM_SCRIPT = """
import json, resource, sys, time
from ektelo_pgm.synthesizer import Synthesizer
from ektelo_pgm.table_io import Partitions
def stage(name, began, cpu):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"stage": name, "wall_s": round(time.perf_counter() - began, 1),
                      "cpu_s": round(time.process_time() - cpu, 1), "peak_mb": round(usage.ru_maxrss / 1024, 1)}),
          flush=True)
began, cpu = time.perf_counter(), time.process_time()
synth = Synthesizer("aim", epsilon=1.0, seed=0, progress=True)
synth.fit(Partitions(sys.argv[1]))
stage("fit", began, cpu)
began, cpu = time.perf_counter(), time.process_time()
synth.write(sys.argv[2], n=int(sys.argv[3]) if len(sys.argv) > 3 else None)
stage("write", began, cpu)
"""


def tables(results: dict) -> str:
    data = results["aim_out_of_core.json"]
    lines = ["| rows | parts | MB on disk | wall s | CPU s | peak MB | fit wall s | fit CPU s | write wall s | "
             "write CPU s | rows written | mean 1-way TVD | mean 2-way TVD |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    checks = []
    for size in sorted(data, key=int):
        table = data[size]
        r = table["runs"].get("aim")
        if r is not None:
            stages = " | ".join(f"{r[s][k]:,.1f}" if s in r else "-"
                                for s in ("fit", "write") for k in ("wall_s", "cpu_s"))
            lines.append(f"| {table['rows']:,} | {table['parts']} | {table['bytes_on_disk'] / 2**20:,.0f} | "
                         f"{r['wall_s']:,.1f} | {r['cpu_s']:,.1f} | {r['peak_mb']:,.0f} | {stages} | "
                         f"{r.get('rows', 0):,} | {r.get('tvd_1way', float('nan')):.5f} | "
                         f"{r.get('tvd_2way', float('nan')):.5f} |")
        r = table["runs"].get("slice")
        if r is not None:
            same = {True: "identical", False: "DIFFERENT"}
            checks.append(f"{table['rows']:,}-row table, its first {r['rows']:,} rows: {r['candidates_counted']} "
                          f"candidates' counts {same[r['counts_equal']]}, records written {same[r['records_equal']]} "
                          f"(in memory {r['memory']['wall_s']:,.0f} s wall, {r['memory']['cpu_s']:,.0f} CPU s; parts "
                          f"{r['parts']['wall_s']:,.0f} s, {r['parts']['cpu_s']:,.0f} CPU s; peak of both "
                          f"{r['peak_mb']:,.0f} MB)")
    return "\n".join(lines + [""] + [f"The slice check: {c}." for c in checks])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--out", type=Path, default=Path("/work/runs/net30-10m"))
    parser.add_argument("--runs", nargs="*", default=["slice", "aim"], choices=["slice", "aim"])
    parser.add_argument("--write-rows", type=int, help="records the run writes (default: as many as the noisy "
                        "count of the table's, the steward's default)")
    parser.add_argument("--skip-fidelity", action="store_true", help="do not score the records written (reading "
                        "them back takes about as long as writing them)")
    args = parser.parse_args()
    counts = args.out.parent / f"{args.out.name}-counts.npz"
    if not counts.exists():
        _, seconds, cpu = harness.timed(lambda: generate(args.out, args.rows))
        print(f"generated in {seconds:.0f} s ({cpu:.0f} CPU s)", flush=True)
    files = sorted(args.out.glob("*.parquet"))
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    record = old.get(str(args.rows), {"runs": {}})
    record.update({"rows": args.rows, "columns": ATTRIBUTES, "parts": len(files),
                   "bytes_on_disk": sum(p.stat().st_size for p in files)})
    names, code = labels(network()), harness.code_state()  # the code each run imports, as it starts
    for run in args.runs:
        output = args.out.parent / f"{args.out.name}-{run}"
        if run == "slice":
            done = harness.run([sys.executable, "-c", SLICE_SCRIPT, str(files[0]), str(output), str(SLICE_ROUNDS)],
                               log=Path(f"{output}.log"))
            result = {"returncode": done.returncode, "rows": PART_ROWS, "wall_s": round(done.wall, 1),
                      "cpu_s": round(done.cpu, 1), "peak_mb": round(done.peak_mb, 1)}
            if done.ok:
                result.update(json.loads(done.output.strip().splitlines()[-1]))
            else:
                print(done.output[-1500:], file=sys.stderr)
        else:
            written = [] if args.write_rows is None else [str(args.write_rows)]
            result = big_synth.child([sys.executable, "-c", AIM_SCRIPT, str(args.out), f"{output}.parquet", *written],
                                     Path(f"{output}.log"))
            for line in Path(f"{output}.log").read_text().replace("\r", "\n").splitlines():  # each stage's own
                if line.startswith('{"stage"'):
                    stage = json.loads(line)
                    result[stage.pop("stage")] = stage
            if result["returncode"] == 0 and not args.skip_fidelity:
                result.update(big_synth.fidelity(Path(f"{output}.parquet"), counts, names))
        result.pop("stderr_tail", None)
        result["load"], result["code"] = os.getloadavg(), code
        record["runs"][run] = result
        print(run, {k: v for k, v in result.items() if k != "stderr_tail"}, flush=True)
        record["provenance"] = harness.provenance("pyarrow")
        now = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}  # another size's run may have ended since
        RESULTS.write_text(json.dumps({**now, str(args.rows): record}, indent=1) + "\n")


if __name__ == "__main__":
    main()
