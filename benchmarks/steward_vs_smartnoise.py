"""A data steward's path, side by side: ``ektelo_pgm.Synthesizer`` against smartnoise-synth 1.0.8, each
given the same raw DataFrame (adult, nltcs, salary) through its one-call public API: the mean 2-way and
3-way total variation distance of the decoded outputs, wall and CPU seconds and peak memory.

Each tool gets the same raw pandas DataFrame and returns a decoded DataFrame of the same shape,
through its one-call public API, as its documentation intends:

- ours: ``Synthesizer(mechanism=..., epsilon=1, delta=1e-9, seed=...).fit(frame).sample(len(frame))``
  with the default private schema inference (it charges its own declared share of the budget);
- smartnoise: ``Synthesizer.create(mechanism, epsilon=1, delta=1e-9).fit_sample(frame,
  categorical_columns=..., continuous_columns=..., preprocessor_eps=...)``, the column types
  declared from the data's documentation and ``preprocessor_eps`` (``--preprocessor-share`` of
  epsilon, default 10%) paying for its private bounds of continuous columns; its mechanism gets
  the rest.  Its other settings are its defaults (AIM: 2-way workload, at most 10,000 cells per
  workload marginal, model cap 80 MB).

Tables (../shared/data):

- adult: the raw UCI file ``raw/adult/adult.data`` (32,561 rows, 15 columns, no header; names and
  which columns are continuous read from ``adult.names``): strings, six numeric columns, two of
  them zero-inflated (capital-gain, capital-loss), missing values written ``?``;
- nltcs: 21,574 rows of 16 binary columns (0/1 integers), categorical: many rows, tiny domain;
- salary: 135,727 rows, 9 integer-coded columns, one with 501 values (first-name), categorical:
  four times adult's rows and one wide column.

Evaluation (not private: it reads the real table freely): one discretisation, fitted on the real
table, applied identically to both outputs.  A numeric column is cut at the real table's
quantiles ``k / --eval-bins`` into right-closed bins (so a point mass at the lowest value, such as
capital-gain's 92% zeros, is a bin of its own), values beyond the real range falling in the end
bins; a categorical column keeps its values.  Missing values (NaN, ``?``) are one value; anything
a tool emits that the real table lacks (a category it invented, a non-number in a numeric
column) falls in one extra "other" cell of its column.  Reported: the mean total-variation
distance over every 2-way and every 3-way marginal of the coded tables.

Measured per run, in a fresh process per run: wall-clock and CPU seconds (all threads) of
fit plus sample, excluding the imports and the reading of the table (ours includes loading its
compiled kernels from numba's disk cache); peak resident memory of the whole process
(``harness.peak_mb``, imports and table included) and that peak before fitting (the baseline).
Smartnoise draws its noise from OpenDP's samplers, which take no seed: its seeds are repetitions.

    .venv/bin/python benchmarks/steward_vs_smartnoise.py                 # the full grid
    .venv/bin/python benchmarks/steward_vs_smartnoise.py --sides smartnoise --timeout 1500
    .venv/bin/python benchmarks/steward_vs_smartnoise.py --table         # only print the table

Results accumulate in benchmarks/results/steward_vs_smartnoise.json (a run already recorded is
skipped unless --force; ``--results`` and ``--merge`` run parts of the grid side by side).  A run past ``--timeout``
seconds is recorded as cut off and shown as a lower bound on its time.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

import harness
from harness import load_runs, merge_runs, peak_mb, save_runs

DOC = harness.Doc(
    title="A steward's synthetic data against smartnoise-synth",
    rerun=".venv/bin/python benchmarks/steward_vs_smartnoise.py     # SMARTNOISE_VENV: smartnoise-synth 1.0.8",
    reading="""
Ours is 14-66x faster in CPU seconds with a fifth to a tenth of the memory.  Our MST is ten times closer on
raw adult and closer on salary; on nltcs smartnoise's MST is slightly closer (its sampler, see "MST and AIM
against smartnoise-synth").  Smartnoise's AIM was cut off at 1,500 s on every table, where ours takes 3-4 s.
A run cut off counts at the time it was cut off, so its speed-up is a lower bound.""",
    results=("steward_vs_smartnoise.json",))


REPO = harness.REPO
sys.path.insert(0, str(REPO))  # this checkout's ektelo_pgm, not an installed one
RESULTS = harness.RESULTS / "steward_vs_smartnoise.json"
OURS_PYTHON = Path(sys.executable)
SMARTNOISE_PYTHON = harness.peer_python("smartnoise")
TABLES = ("adult", "nltcs", "salary")
MECHANISMS = ("mst", "aim")
EPSILON = 1.0
DELTA = 1e-9
MISSING = "<missing>"
OTHER = "<other>"


# ----------------------------------------------------------------------------------------------
# The raw tables (pandas only: the workers of both interpreters read them the same way)
# ----------------------------------------------------------------------------------------------


def adult_columns(names_file: Path) -> tuple[list[str], list[str]]:
    """Column names of adult.data and those documented as continuous, from adult.names."""
    names, continuous = [], []
    for line in names_file.read_text().splitlines():
        if ":" in line and not line.startswith("|") and line.endswith("."):
            name, values = (part.strip() for part in line.split(":", 1))
            names.append(name)
            if values == "continuous.":
                continuous.append(name)
    return names + ["income"], continuous


def load_table(data_dir: Path, name: str):
    """``(frame, continuous)``: the raw table as a steward reads it and its continuous columns."""
    import pandas as pd

    if name == "adult":
        folder = data_dir / "raw" / "adult"
        names, continuous = adult_columns(folder / "adult.names")
        frame = pd.read_csv(folder / "adult.data", header=None, names=names, skipinitialspace=True)
        return frame, continuous
    return pd.read_csv(data_dir / f"{name}.csv"), []


# ----------------------------------------------------------------------------------------------
# Evaluation discretisation (fitted on the real table, not private)
# ----------------------------------------------------------------------------------------------


def labels(series):
    """Category labels: whole numbers without a decimal point, truth values as written, every missing
    marker as one."""
    import pandas as pd

    def label(value):
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return MISSING
        if isinstance(value, (bool, np.bool_)):  # read as True / False where a column holds nothing else
            return str(value)
        if isinstance(value, (int, float, np.integer, np.floating)):
            return str(int(value)) if float(value).is_integer() else repr(float(value))
        text = str(value).strip()
        return MISSING if text in ("", "?") else text

    return pd.Series(series).map(label)


class EvaluationCoding:
    """The real table's evaluation discretisation: quantile bins for numeric columns, the real
    values for categorical ones, plus an "other" cell per column for anything else."""

    def __init__(self, real, numeric, bins: int):
        import pandas as pd

        self.columns = list(real.columns)
        self.edges, self.categories = {}, {}
        for column in self.columns:
            if column in numeric:
                values = pd.to_numeric(real[column], errors="coerce").dropna().to_numpy(float)
                self.edges[column] = np.unique(np.quantile(values, np.arange(1, bins) / bins))
            else:
                self.categories[column] = sorted(set(labels(real[column])))

    def sizes(self) -> list[int]:
        """Cells per column, the "other" cell included."""
        return [len(self.edges[c]) + 2 if c in self.edges else len(self.categories[c]) + 1 for c in self.columns]

    def codes(self, frame):
        """``(n, d)`` integer codes of ``frame`` (its columns must be the real table's)."""
        import pandas as pd

        if list(frame.columns) != self.columns:
            raise ValueError(f"synthetic columns {list(frame.columns)} differ from the real {self.columns}")
        out = np.empty((len(frame), len(self.columns)), dtype=np.int64)
        for j, column in enumerate(self.columns):
            if column in self.edges:
                edges = self.edges[column]
                values = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
                out[:, j] = np.where(np.isnan(values), len(edges) + 1, np.searchsorted(edges, values, side="left"))
            else:
                index = {value: k for k, value in enumerate(self.categories[column])}
                out[:, j] = labels(frame[column]).map(lambda v: index.get(v, len(index))).to_numpy(np.int64)
        return out

    def total_variations(self, real, synthetic) -> dict:
        """Mean total-variation distance over every 1-, 2- and 3-way marginal (``tv1``, ``tv2``,
        ``tv3``) and over the 2-way marginals of categorical columns only (``tv2_categorical``)."""
        from ektelo_pgm import Dataset, Domain
        from ektelo_pgm.metrics import total_variation

        domain = Domain(self.columns, self.sizes())
        truth, fake = Dataset(self.codes(real), domain), Dataset(self.codes(synthetic), domain)
        out = {f"tv{k}": total_variation(list(itertools.combinations(self.columns, k)), truth, fake)
               for k in (1, 2, 3)}
        categorical = [c for c in self.columns if c in self.categories]
        if len(categorical) >= 2:
            out["tv2_categorical"] = total_variation(list(itertools.combinations(categorical, 2)), truth, fake)
        return out


# ----------------------------------------------------------------------------------------------
# Workers: one run each, in a fresh process (ours in this interpreter, smartnoise in its venv)
# ----------------------------------------------------------------------------------------------


def run_ours(mechanism: str, frame, continuous, seed: int, options: dict):
    from ektelo_pgm.synthesizer import Synthesizer

    synthesizer = Synthesizer(mechanism=mechanism, epsilon=EPSILON, delta=DELTA, seed=seed)
    synthesizer.fit(frame)
    return synthesizer.sample(len(frame)), {}


def run_smartnoise(mechanism: str, frame, continuous, seed: int, options: dict):
    from snsynth import Synthesizer

    np.random.seed(seed)  # its workload sampling and mbi's sampler; OpenDP's noise takes no seed
    preprocessor_eps = options["preprocessor_share"] * EPSILON if continuous else 0.0
    synthesizer = Synthesizer.create(mechanism, epsilon=EPSILON, delta=DELTA)
    out = synthesizer.fit_sample(frame, categorical_columns=[c for c in frame.columns if c not in continuous],
                                 continuous_columns=list(continuous), preprocessor_eps=preprocessor_eps)
    return out, {"preprocessor_epsilon": preprocessor_eps, "mechanism_epsilon": float(synthesizer.epsilon)}


def worker(args) -> None:
    frame, continuous = load_table(args.data, args.table_name)
    run = run_ours if args.worker == "ours" else run_smartnoise
    baseline = peak_mb()
    (synthetic, budget), wall, cpu = harness.timed(lambda: run(args.mechanism, frame, continuous, args.seed,
                                                               {"preprocessor_share": args.preprocessor_share}))
    synthetic.to_csv(Path(args.out) / "synthetic.csv", index=False)
    record = {"wall": wall, "cpu": cpu, "peak_mb": peak_mb(), "baseline_mb": baseline, "budget": budget}
    (Path(args.out) / "run.json").write_text(json.dumps(record))


# ----------------------------------------------------------------------------------------------
# Orchestration
# ----------------------------------------------------------------------------------------------


def key(row) -> tuple:
    return (row["side"], row["mechanism"], row["table"], int(row["seed"]))


def meta() -> dict:
    """What the results file records about the settings (the provenance goes beside it)."""
    return {"epsilon": EPSILON, "delta": DELTA}


def save_results(runs: list[dict], path: Path = RESULTS) -> None:
    save_runs(path, runs, key, meta())


def one_run(args, side, mechanism, table, seed, real, coding):
    import pandas as pd

    python = OURS_PYTHON if side == "ours" else args.smartnoise_python
    row = {"side": side, "mechanism": mechanism, "table": table, "seed": seed, "commit": harness.code_state(),
           "when": harness.now(), "load_before": os.getloadavg()[0]}
    if side == "smartnoise":
        row["preprocessor_share"] = args.preprocessor_share
    with tempfile.TemporaryDirectory() as out:
        done = harness.child(__file__, "--worker", side, "--mechanism", mechanism, "--table-name", table,
                             "--seed", seed, "--data", args.data, "--out", out,
                             "--preprocessor-share", args.preprocessor_share, python=python,
                             log=Path(out) / "log.txt", timeout=args.timeout)
        row.update(done.usage(), load_after=os.getloadavg()[0])
        if done.cut:
            return {**row, "status": "timeout", "wall": done.wall}
        if not done.ok or not (Path(out) / "run.json").exists():
            return {**row, "status": "error", "error": done.tail()}
        measured = json.loads((Path(out) / "run.json").read_text())
        synthetic = pd.read_csv(Path(out) / "synthetic.csv")
        if args.outputs is not None:
            args.outputs.mkdir(parents=True, exist_ok=True)
            shutil.copy(Path(out) / "synthetic.csv", output_file(args.outputs, row))
    return {**row, **measured, "status": "ok", "rows_out": len(synthetic), **coding.total_variations(real, synthetic)}


def output_file(folder: Path, row) -> Path:
    """Where ``--outputs`` keeps the synthetic table of a run."""
    return folder / f"{row['side']}-{row['mechanism']}-{row['table']}-{row['seed']}.csv"


def reevaluate(args) -> None:
    """Recompute the accuracy of every recorded run whose synthetic table ``--outputs`` kept."""
    import pandas as pd

    runs, tables = load_runs(args.results), {}
    for row in runs:
        path = output_file(args.outputs, row)
        if row["status"] != "ok" or not path.exists():
            continue
        if row["table"] not in tables:
            real, continuous = load_table(args.data, row["table"])
            tables[row["table"]] = real, EvaluationCoding(real, continuous, args.eval_bins)
        real, coding = tables[row["table"]]
        row.update(coding.total_variations(real, pd.read_csv(path)))
    save_results(runs, args.results)


def run_grid(args) -> None:
    """Every (seed, table, mechanism, side) not yet recorded, seed by seed (the first seed of
    every cell comes before any second one); a cell with a run cut off gets no more runs."""
    runs = load_runs(args.results)
    done = {key(r) for r in runs if r["status"] == "ok"}
    cut = {key(r)[:3] for r in runs if r["status"] == "timeout"}
    tables = {}
    for seed, table, mechanism, side in itertools.product(range(args.seeds), args.tables, args.mechanisms, args.sides):
        if ((side, mechanism, table, seed) in done or (side, mechanism, table) in cut) and not args.force:
            continue
        if table not in tables:
            real, continuous = load_table(args.data, table)
            tables[table] = real, EvaluationCoding(real, continuous, args.eval_bins)
        real, coding = tables[table]
        row = one_run(args, side, mechanism, table, seed, real, coding)
        runs = [r for r in runs if key(r) != key(row)] + [row]
        save_results(runs, args.results)
        shown = f"{row['wall']:.1f}s" if "wall" in row else row["status"]
        print(f"{side:10s} {mechanism} {table:7s} seed={seed} {row['status']:7s} {shown}"
              + (f" cpu={row['cpu']:.1f}s peak={row['peak_mb']:.0f}MB tv2={row['tv2']:.4f} tv3={row['tv3']:.4f}"
                 if row["status"] == "ok" else ""), flush=True)


# ----------------------------------------------------------------------------------------------
# Table
# ----------------------------------------------------------------------------------------------


def mean_of(rows, field):
    """``(mean, std, count)`` of ``field`` over the finished runs, None without any."""
    values = [r[field] for r in rows if r["status"] == "ok" and field in r]
    return (float(np.mean(values)), float(np.std(values)), len(values)) if values else None


#: What a run cut off tells about each column: at least its wall, CPU seconds and peak memory.
CUT_OFF_FIELDS = {"wall": "process_wall", "cpu": "process_cpu", "peak_mb": "process_peak_mb"}


def shown(rows, field, digits) -> str:
    """The mean of ``field`` (± std over several runs); without a finished run, the lower bound
    that runs cut off give; else "-"."""
    stat = mean_of(rows, field)
    if stat is not None:
        mean, std, n = stat
        return f"{mean:.{digits}f}" + (f" ± {std:.{digits}f}" if n > 1 else "")
    bounds = [r["wall"] if field == "wall" else r[CUT_OFF_FIELDS[field]] for r in rows
              if r["status"] == "timeout" and (field == "wall" or CUT_OFF_FIELDS.get(field) in r)]
    return f"> {min(bounds):.{digits}f}" if bounds else "-"


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def tables(results: dict) -> str:
    """The comparison per table and mechanism, then the conditions."""
    runs = results["steward_vs_smartnoise.json"]["runs"]
    lines = ["| table | mechanism | runs (ours / smartnoise) | TVD 2-way ours / smartnoise | "
             "TVD 3-way ours / smartnoise | wall s ours / smartnoise | CPU s ours / smartnoise | speed-up wall / CPU | "
             "peak MB ours / smartnoise | TVD no worse, 3x faster (CPU), less memory |",
             "|---|---|---|---|---|---|---|---:|---|---|"]
    for table_name, mechanism in itertools.product(TABLES, MECHANISMS):
        side = {s: [r for r in runs if (r["side"], r["mechanism"], r["table"]) == (s, mechanism, table_name)]
                for s in ("ours", "smartnoise")}
        if not any(r["status"] in ("ok", "timeout") for rows in side.values() for r in rows):
            continue
        ours = {f: mean_of(side["ours"], f) for f in ("tv2", "tv3", "wall", "cpu", "peak_mb")}
        theirs = {f: mean_of(side["smartnoise"], f) for f in ("tv2", "tv3", "wall", "cpu", "peak_mb")}
        cut = [r for r in side["smartnoise"] if r["status"] == "timeout"]
        speed, targets = "-", "-"
        if ours["wall"] and (theirs["wall"] or cut):
            ratios = []
            for field in ("wall", "cpu"):
                bounds = [r[CUT_OFF_FIELDS[field]] if field != "wall" else r["wall"] for r in cut
                          if CUT_OFF_FIELDS[field] in r or field == "wall"]
                theirs_time = theirs[field][0] if theirs[field] else (min(bounds) if bounds else None)
                ratios.append(None if theirs_time is None else theirs_time / ours[field][0])
            bound = "" if theirs["wall"] else "> "
            speed = " / ".join("-" if r is None else f"{bound}{r:.1f}x" for r in ratios)
            accurate = "-" if not theirs["tv2"] else \
                yes_no(ours["tv2"][0] <= theirs["tv2"][0] and ours["tv3"][0] <= theirs["tv3"][0])
            peak = theirs["peak_mb"][0] if theirs["peak_mb"] else \
                max((r.get("process_peak_mb", 0.0) for r in cut), default=0.0)
            leaner = yes_no(ours["peak_mb"][0] < peak) if peak and ours["peak_mb"] else "-"
            faster = ratios[1] if ratios[1] is not None else ratios[0]
            targets = f"{accurate}, {'-' if faster is None else yes_no(faster >= 3)}, {leaner}"
        count = " / ".join(f"{sum(r['status'] == 'ok' for r in side[s])}"
                           + (f" + {n} cut off" if (n := sum(r['status'] == 'timeout' for r in side[s])) else "")
                           for s in side)
        cells = [" / ".join(shown(side[s], field, digits) for s in side)
                 for field, digits in (("tv2", 3), ("tv3", 3), ("wall", 1), ("cpu", 1))]
        lines.append(f"| {table_name} | {mechanism.upper()} | {count} | {' | '.join(cells)} | {speed} | "
                     f"{' / '.join(shown(side[s], 'peak_mb', 0) for s in side)} | {targets} |")
    return "\n".join(lines) + "\n\n" + conditions(runs)


def conditions(runs: list[dict]) -> str:
    """When, on which code, under what load the recorded runs ran."""
    measured = [r for r in runs if r["status"] in ("ok", "timeout")]
    if not measured:
        return "No runs recorded yet."
    loads = [r[k] for r in measured for k in ("load_before", "load_after") if k in r]
    shares = sorted({r["preprocessor_share"] for r in measured if r["side"] == "smartnoise"})
    when = sorted(r["when"] for r in measured)
    return (f"Runs from {when[0][:10]} to {when[-1][:10]}; smartnoise-synth "
            f"1.0.8 with {', '.join(f'{s:.0%}' for s in shares) or '-'} of epsilon for its preprocessing; "
            f"(epsilon, delta) = ({EPSILON:g}, {DELTA:g}) for both in total; 1-minute load average "
            f"{min(loads):.1f} to {max(loads):.1f} on the 2-core machine.")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=harness.DATA, help="shared data directory")
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=MECHANISMS)
    parser.add_argument("--sides", nargs="+", default=["ours", "smartnoise"], choices=["ours", "smartnoise"])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (repetitions for smartnoise)")
    parser.add_argument("--timeout", type=float, default=1500.0, help="seconds one run may take")
    parser.add_argument("--preprocessor-share", type=float, default=0.1,
                        help="share of epsilon smartnoise spends on the bounds of continuous columns")
    parser.add_argument("--eval-bins", type=int, default=16, help="quantile bins of numeric columns in the evaluation")
    parser.add_argument("--smartnoise-python", type=Path, default=SMARTNOISE_PYTHON)
    parser.add_argument("--force", action="store_true", help="re-run runs already recorded")
    parser.add_argument("--table", action="store_true", help="only print the table of the results")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where this run records its runs")
    parser.add_argument("--merge", nargs="+", default=[], help="results files to fold into the default one")
    parser.add_argument("--outputs", type=Path, default=None,
                        help="folder (outside the repository) keeping every run's synthetic table as CSV")
    parser.add_argument("--reevaluate", action="store_true",
                        help="recompute the accuracy of the recorded runs from the tables kept in --outputs")
    # worker mode (internal)
    parser.add_argument("--worker", choices=["ours", "smartnoise"], help=argparse.SUPPRESS)
    parser.add_argument("--mechanism", help=argparse.SUPPRESS)
    parser.add_argument("--table-name", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.reevaluate and args.outputs is None:
        parser.error("--reevaluate needs --outputs, the folder with the kept synthetic tables")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    if args.merge:
        merge_runs(RESULTS, args.merge, key, meta())
    elif args.reevaluate:
        reevaluate(args)
    elif not args.table:
        run_grid(args)
    if args.results == RESULTS:
        print(tables(harness.read(RESULTS)))


if __name__ == "__main__":
    main()
