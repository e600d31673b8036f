"""The bins of numbers and dates placed privately, against PrivTree's (issue 56): on each numeric
and date column of the corpus of ``real_tables.py`` with its bounds declared, as a metadata file
declares them, the schema's bins (:func:`ektelo_pgm.schema.learn`, as ``synth --metadata`` places
them) and PrivTree's, at the same privacy, scored on the real deciles.

Each side codes the real values into its bins and draws every value back inside its own bin, so
the bins' counts are exact and the score is the binning's alone (what a mechanism's noise adds
is on top of it): the 1-way total variation distance on the real deciles (``EvaluationCoding``
of ``real_tables.py``) between the real values and the drawn ones.

- *Ours*: the schema of the table's columns of declared bounds (``Metadata.ranges``), learnt as
  ``synth`` learns it with a metadata file declaring every column (``amount="auto"``, the
  approximate-DP budget of ``(epsilon, 1e-9)``, delta's schema share), values drawn as
  ``synth`` draws them (its within-bin density, decimals, units); ``ours, even``: drawn evenly
  inside the same bins.
- *PrivTree* (Zhang, Xiao and Xie, SIGMOD 2016, Algorithm 2, fanout 2, as dpmm bins a column):
  a binary split of the declared bounds, a node split where its count less ``depth * delta``
  (at least ``theta - delta``) plus Laplace noise of scale ``lambda = 3 / epsilon`` passes
  ``theta``, with ``delta = lambda ln 2`` and ``theta`` the column's number of values over
  ``BINS`` (read exactly, as dpmm reads it: a favour to the peer), splits stopped once the
  leaves would pass ``BINS``, nodes taken breadth first; each column gets the pure
  ``epsilon = sqrt(2 rho)`` of an equal share of all the rho our schema spent, its count of the
  records included (another favour; epsilon-DP implies
  ``epsilon^2 / 2``-zCDP: Bun and Steinke 2016, Prop. 1.4), and draws evenly inside its leaves
  (``NumericColumn.decode``: whole numbers among a leaf's integers).

    .venv/bin/python benchmarks/numeric_bins.py          # corpus tables x epsilon 0.3, 1, 3 x 3 seeds
"""
from __future__ import annotations

import argparse
import math
from collections import deque
from dataclasses import replace
from pathlib import Path

import numpy as np

import harness
from real_tables import CORPUS, DELTA, EPSILONS, EVAL_BINS, load_manifest, metadata_of, read_table

DOC = harness.Doc(
    title="Numeric bins against PrivTree's",
    rerun=".venv/bin/python benchmarks/numeric_bins.py [--tables weather cps1988] [--seeds 3]",
    reading="""
At the same privacy, our schema's bins leave the lower mean decile TVD on 11 of 12 tables at epsilon 1 and 3 (1.2-57x)
and on 9 of 12 at 0.3; PrivTree's is lower on police_force (0.68x) and, at 0.3, on seattle_pets and txhousing.  Its
halved leaves cannot follow heavy tails (movies, tweets, who: 3.2-57x), where ours follows the decades.  It wins small
counts on short tables at 0.3 (loans: 18 columns to 14), where the noise placed ours over part of the range.
Ours is kept.""",
    results=("numeric_bins.json",))

RESULTS = harness.RESULTS / "numeric_bins.json"
#: Columns whose mean TVDs differ by at most this much are counted on neither side.
TIE = 0.002


def privtree_edges(values: np.ndarray, lo: float, hi: float, epsilon: float, bins: int, rng) -> np.ndarray:
    """The leaf edges of PrivTree (module docstring) over ``[lo, hi]`` on sorted ``values``."""
    scale = 3.0 / epsilon
    decay = scale * math.log(2.0)
    theta = values.size / bins
    queue, leaves = deque([(lo, hi, 0)]), []
    while queue:
        a, b, depth = queue.popleft()
        count = np.searchsorted(values, b, side="right" if b == hi else "left") - np.searchsorted(values, a)
        biased = max(count - depth * decay, theta - decay) + rng.laplace(0.0, scale)
        if biased > theta and len(leaves) + len(queue) + 2 <= bins:
            middle = a + (b - a) / 2
            queue.extend([(a, middle, depth + 1), (middle, b, depth + 1)])
        else:
            leaves.append(a)
    return np.array(sorted(leaves) + [hi])


def decile_tvd(real: np.ndarray, drawn: np.ndarray, bins: int) -> float:
    """1-way TVD of ``drawn`` against ``real`` on the cells of ``EvaluationCoding`` (real quantiles)."""
    edges = np.unique(np.quantile(real, np.arange(1, bins) / bins))
    size = edges.size + 1
    real_shares = np.bincount(np.searchsorted(edges, real, side="left"), minlength=size) / real.size
    drawn_shares = np.bincount(np.searchsorted(edges, drawn, side="left"), minlength=size) / drawn.size
    return float(0.5 * np.abs(real_shares - drawn_shares).sum())


def table_runs(name: str, entry: dict, corpus: Path, epsilon: float, seed: int, eval_bins: int) -> list[dict]:
    """One row per column of declared bounds of the table: its scores on each side."""
    import pandas as pd

    from ektelo_pgm import schema as schemas
    from ektelo_pgm.columns import NumericColumn
    from ektelo_pgm.privacy import Budget
    from ektelo_pgm.privacy.budget import approx_to_zcdp
    from ektelo_pgm.schema.kinds import BINS
    from ektelo_pgm.synthesizer import AUTO_DELTA_SHARE
    from ektelo_pgm.table_io import as_frame, open_table
    from ektelo_pgm.times import as_times

    metadata = schemas.Metadata.read(metadata_of(entry, read_table(corpus / entry["file"])))
    ranged = list(metadata.ranges)
    if not ranged:
        return []
    frame = as_frame(open_table(corpus / entry["file"], header=True, quoted_newlines=True))[ranged]
    schema_delta = AUTO_DELTA_SHARE * DELTA
    budget = Budget.zcdp(approx_to_zcdp(epsilon, DELTA - schema_delta))
    rng = np.random.default_rng(seed)
    encoder = schemas.learn(frame, budget, schemas.AUTO, schema_delta, rng, BINS,
                            kinds={c: metadata.kinds[c] for c in ranged}, ranges=metadata.ranges)
    codes = schemas.encoded(frame, encoder).records
    column_epsilon = math.sqrt(2.0 * budget.spent / len(ranged))
    rows = []
    for j, column_name in enumerate(ranged):
        column = encoder.columns[column_name]
        present = codes[:, j] != column.bins
        fmt = column.time_format

        def numbers(series):
            if fmt is None:
                return pd.to_numeric(series, errors="coerce").to_numpy(float)
            return np.array([t if isinstance(t, int) else np.nan for t in
                             as_times(series.to_numpy(dtype=object), fmt)], dtype=float)

        real = numbers(frame[column_name][present].astype(object))
        kept = ~np.isnan(real)
        real, own = real[kept], codes[present, j][kept]
        ours = numbers(column.decode(own, "uniform", rng).astype(object))
        even = numbers(replace(column, density=None).decode(own, "uniform", rng).astype(object))
        tree = privtree_edges(np.sort(real), real.min(), real.max(), column_epsilon, BINS, rng)  # the declared bounds
        leaves = NumericColumn(column_name, tuple(tree[:-1]) + (tree[-1] + 1 if column.integer else tree[-1],),
                               bool(column.integer), False)  # a whole-number column's last bin holds its bound
        theirs = leaves.decode(leaves.encode(pd.Series(real), clip=True), "uniform", rng).to_numpy(dtype=float)
        rows.append({"table": name, "column": column_name, "kind": "date" if fmt else "numeric", "epsilon": epsilon,
                     "seed": seed, "values": int(real.size), "column_epsilon": column_epsilon,
                     "bins_ours": column.bins, "bins_privtree": int(tree.size - 1),
                     "tv1_ours": decile_tvd(real, ours[~np.isnan(ours)], eval_bins),
                     "tv1_ours_even": decile_tvd(real, even[~np.isnan(even)], eval_bins),
                     "tv1_privtree": decile_tvd(real, theirs, eval_bins)})
    return rows


def key(row: dict) -> tuple:
    return row["table"], row["epsilon"], row["seed"], row["column"]


def document(rows: list[dict]) -> str:
    """Per table and epsilon: the mean decile TVD over its columns of declared bounds on each side
    (mean over the seeds), and in how many columns each side's mean is lower by more than ``TIE``."""
    cells = {}
    for row in rows:
        cells.setdefault((row["table"], row["epsilon"]), []).append(row)
    lines = ["| table | epsilon | columns | seeds | bins ours / PrivTree | ours | ours, even | PrivTree | "
             "PrivTree / ours | columns lower: ours / PrivTree |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for (table, epsilon), group in sorted(cells.items()):
        columns = sorted({r["column"] for r in group})
        seeds = sorted({r["seed"] for r in group})

        def mean(field, column=None):
            return float(np.mean([r[field] for r in group if column in (None, r["column"])]))

        gaps = [mean("tv1_privtree", c) - mean("tv1_ours", c) for c in columns]
        lines.append(f"| {table} | {epsilon:g} | {len(columns)} | {len(seeds)} | {mean('bins_ours'):.1f} / "
                     f"{mean('bins_privtree'):.1f} | {mean('tv1_ours'):.4f} | {mean('tv1_ours_even'):.4f} | "
                     f"{mean('tv1_privtree'):.4f} | {mean('tv1_privtree') / mean('tv1_ours'):.2f}x | "
                     f"{sum(g > TIE for g in gaps)} / {sum(g < -TIE for g in gaps)} |")
    return "\n".join(lines)


def tables(results: dict) -> str:
    data = results["numeric_bins.json"]
    return ("Mean 1-way TVD on the real deciles over each table's numeric and date columns, every value drawn back "
            f"inside its own bin (exact bin counts: the binning's error alone), {data['meta']['bins']} bins a side "
            "(ours adds one per point mass); PrivTree at the pure epsilon of each column's share of the rho our "
            f"schema spent; a column counts as lower on one side by more than {TIE}:\n\n" + document(data["runs"]))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="folder written by real_tables_fetch.py")
    parser.add_argument("--tables", nargs="+", help="table names, updated in the recorded results (default: every "
                                                    "table of the corpus, recorded anew)")
    parser.add_argument("--epsilons", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1")
    parser.add_argument("--eval-bins", type=int, default=EVAL_BINS, help="quantile bins (deciles)")
    args = parser.parse_args(argv)
    from ektelo_pgm.schema.kinds import BINS

    manifest = load_manifest(args.corpus)
    names = args.tables or list(manifest)
    runs = [r for r in harness.load_runs(RESULTS) if args.tables and r["table"] not in names]
    for name in names:
        for epsilon in args.epsilons:
            for seed in range(args.seeds):
                runs += table_runs(name, manifest[name], args.corpus, epsilon, seed, args.eval_bins)
                print(name, epsilon, seed, flush=True)
    harness.save_runs(RESULTS, runs, key, {"bins": BINS, "delta": DELTA, "eval_bins": args.eval_bins,
                                           "code": harness.code_state(), "when": harness.now()})
    print(document(runs))


if __name__ == "__main__":
    main()
