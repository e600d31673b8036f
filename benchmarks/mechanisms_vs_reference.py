"""Side by side: this project's MST and AIM against their author's reference scripts
(``mechanisms/mst.py`` and ``mechanisms/aim.py`` of the private-pgm repository) on mbi 2.0.0, on the
same integer tables (adult, salary, nltcs, titanic and two random Bayesian networks): mean 2-way and
3-way total variation distance, wall and CPU seconds and peak memory of each run.

Data: ../shared/data adult, salary, nltcs and titanic, each column re-coded to the values it
takes (as in ``mechanisms_vs_smartnoise.py``), and two samples of random Bayesian networks made
here from a fixed seed: ``bn20`` and ``bn40`` (20 and 40 attributes, 50,000 rows; see
``bayes_net``), re-coded the same way.  Both sides get the same integer table and domain.
Privacy: (epsilon, delta=1e-9)-DP, converted to rho-zCDP by each side.  AIM's workload: every
3-way marginal with weight 1 on both sides, model-size cap 80 MB on both sides.  Each run draws
as many synthetic records as the table has (ours: ``method="round"``; the reference: mbi's own
``synthetic_data``, whose default is also rounding).

Measured per run, in a fresh process per run, inside that process: wall-clock and CPU seconds
(every thread) of fitting plus sampling, after the packages are imported (ours includes loading
numba's cached kernels; the reference includes JAX compiling mbi's programs), and the process's
peak resident memory (``harness.peak_mb``, interpreter and imports included).  Then, in this process,
the mean total-variation distance between real and synthetic records over every 2-way and
every 3-way marginal.  Both sides draw their noise from seeded generators, so a seed is a seed on
both (the reference from numpy's global generator, seeded before the run).

Set-up, once, from the repository root:

    bash benchmarks/setup_peers.sh                 # ../venvs/peers: mbi 2.0.0 with jax
    mkdir -p ../venvs/private-pgm-mechanisms       # the author's scripts, never committed here
    git --git-dir=/work/.mirror/ryan112358+private-pgm/repo archive HEAD mechanisms \\
        | tar -x -C ../venvs/private-pgm-mechanisms --strip-components=1

(``--git-dir`` may be any clone of https://github.com/ryan112358/private-pgm, e.g.
``path/to/private-pgm/.git``.  The results record the git blob hash of each script used, so the
version can be told afterwards).  The
scripts were written for an older mbi: ``REFERENCE_EDITS`` lists the few textual replacements
that make them run on mbi 2.0.0; they are applied in memory when the worker loads them, the files
stay as the author wrote them.  The reference runs on JAX's CPU backend in float64
(``JAX_PLATFORMS=cpu``, ``jax_enable_x64``, as ``pgm_vs_mbi.py`` runs mbi).

    .venv/bin/python benchmarks/mechanisms_vs_reference.py                        # the full grid
    .venv/bin/python benchmarks/mechanisms_vs_reference.py --sides ours --mechanisms mst --datasets bn20
    .venv/bin/python benchmarks/mechanisms_vs_reference.py --table                # only print the table

Results accumulate in benchmarks/results/mechanisms_vs_reference.json (a run already there is
skipped unless --force).  A part of the grid can record into another file (``--results``) and be
folded in afterwards with ``--merge``.  ``--timeout`` bounds one run (default 1800 s); a run cut off is recorded as such, its time as a
lower bound.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import sys
import tempfile
import types
from pathlib import Path

import numpy as np

import harness
from harness import merge_runs
from mechanisms_vs_smartnoise import (dataset, grid_parser, key, recoded, run_grid, run_ours, show, summary,
                                      total_variations)

DOC = harness.Doc(
    title="MST and AIM against their author's reference scripts",
    rerun=".venv/bin/python benchmarks/mechanisms_vs_reference.py       # set-up of the peers: the script's docstring",
    reading="""
Every run pinned to one core.  Our MST matches the reference script's accuracy within the seeds' spread and
is 30-200x faster.  The reference's AIM finished one cell (titanic at epsilon 1: 519 s against our 1 s, as
accurate within the spread); its other AIM runs were cut off at 900 s or ran out of memory while JAX compiled
mbi's programs (adult, bn40), so the speed-ups there are lower bounds or missing.  Our AIM runs every cell,
adult at epsilon 10 in about 110 s and bn40 in 164 s.""",
    results=("mechanisms_vs_reference.json",))


REPO = harness.REPO
RESULTS = harness.RESULTS / "mechanisms_vs_reference.json"
PEERS_PYTHON = harness.peer_python("mbi")
REFERENCE_DIR = harness.VENVS / "private-pgm-mechanisms"
OURS_PYTHON = Path(sys.executable)
SIDES = ("ours", "reference")
CSV_DATASETS = ("adult", "salary", "nltcs", "titanic")
BAYES_NETS = {"bn20": 20, "bn40": 40}  # name: number of attributes
DATASETS = CSV_DATASETS + tuple(BAYES_NETS)
EPSILONS = (0.3, 1.0, 3.0, 10.0)
DELTA = 1e-9  # the same as mechanisms_vs_smartnoise's, which run_ours uses
MAX_MODEL_MB = 80.0

# The Bayesian networks: a fixed seed, 50,000 rows, 2 or 3 parents per node (fewer for the first
# nodes), 2 to 6 values per attribute, conditional tables drawn from Dirichlet(0.5).
BN_SEED = 20_260
BN_ROWS = 50_000
BN_PARENTS = (2, 3)
BN_SIZES = (2, 6)
BN_CONCENTRATION = 0.5


# ----------------------------------------------------------------------------------------------
# The reference scripts on mbi 2.0.0: (file, old text, new text, why), applied in memory
# ----------------------------------------------------------------------------------------------

# No edit adds or removes a line, so tracebacks point at the right lines of the author's files.
REFERENCE_EDITS = (
    ("cdp2adp.py", "import matplotlib.pyplot as plt\n", "\n",
     "an unused import; matplotlib is not in the peers' venv"),
    ("mst.py", "estimation.mirror_descent(", "estimation.MirrorDescent().estimate(",
     "mbi 2.0 replaced the estimation functions by Estimator classes with an estimate method"),
    ("mst.py", "domain.attrs", "domain.attributes", "Domain.attrs was renamed in mbi 2.0"),
    ("mst.py", "import argparse\n", "import argparse, pandas as pd\n",
     "the two edits below build the DataFrames that mbi's Dataset no longer holds"),
    ("mst.py", "data.df.copy()", "pd.DataFrame(data.to_dict()).astype(np.int64)",
     "mbi 2.0's Dataset holds a dict of column arrays, no .df; int64, because mbi 2.0 samples small "
     "integer types and pandas 3 refuses to write the larger original codes into them"),
    ("mst.py", "Dataset(df, newdom)", "Dataset({c: df[c].to_numpy(dtype=np.int64) for c in df.columns}, newdom)",
     "mbi 2.0's Dataset is built from a dict of integer column arrays (pandas 3's map leaves objects)"),
    ("mst.py", "est.synthetic_data()", "est.synthetic_data(rows=data.records)",
     "draw as many records as the table has (the script draws the model's noisy total; "
     "aim.py takes the number as an argument)"),
    ("aim.py", "estimation.mirror_descent(", "estimation.MirrorDescent().estimate(",
     "mbi 2.0 replaced the estimation functions by Estimator classes with an estimate method"),
    ("aim.py", "potentials=potentials", "warm_start=potentials",
     "the warm-start keyword was renamed in mbi 2.0"),
    ("aim.py", "model.cliques + [cl]", "list(model.cliques) + [cl]",
     "a model's cliques are a tuple in mbi 2.0"),
)
# mst.py imports cdp2adp; aim.py imports mechanism, which imports cdp2adp: load in this order.
REFERENCE_MODULES = {"mst": ("cdp2adp", "mst"), "aim": ("cdp2adp", "mechanism", "aim")}


def blob_hash(path: Path) -> str:
    """Git's blob hash of a file, the one ``git ls-tree`` shows for it upstream."""
    content = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def load_reference(directory: Path, mechanism: str) -> types.ModuleType:
    """The author's script for ``mechanism``, with ``REFERENCE_EDITS`` applied to it and to the
    modules it imports, each registered in ``sys.modules`` under its own name."""
    for name in REFERENCE_MODULES[mechanism]:
        path = directory / f"{name}.py"
        source = path.read_text()
        for file, old, new, _ in REFERENCE_EDITS:
            if file == path.name:
                if old not in source:
                    raise RuntimeError(f"{path}: expected {old!r}; not the version these edits were written for")
                source = source.replace(old, new)
        module = types.ModuleType(name)
        module.__file__ = str(path)
        sys.modules[name] = module
        exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the author's script, edited above
    return sys.modules[mechanism]


# ----------------------------------------------------------------------------------------------
# Data: the same integer table for both sides
# ----------------------------------------------------------------------------------------------


def bayes_net(attributes: int, rows: int = BN_ROWS, seed: int = BN_SEED, families: list | None = None):
    """``(columns, records)``: ``rows`` records forward-sampled from a random Bayesian network on
    ``attributes`` attributes.  Node ``j`` takes 2 or 3 parents among nodes ``0..j-1`` (all of
    them when there are fewer), 2 to 6 values, and, per value of its parents, a distribution drawn
    from a Dirichlet with concentration 0.5 (below 1: skewed tables, so children depend on their
    parents).  Deterministic in ``(attributes, rows, seed)``.  Given a list ``families``, each
    node's family (its parents' columns, then its own) is appended to it."""
    rng = np.random.default_rng([seed, attributes])
    sizes = rng.integers(BN_SIZES[0], BN_SIZES[1] + 1, size=attributes)
    records = np.zeros((rows, attributes), dtype=np.int64)
    for j in range(attributes):
        count = min(j, int(rng.integers(BN_PARENTS[0], BN_PARENTS[1] + 1)))
        parents = np.sort(rng.choice(j, size=count, replace=False)) if count else np.zeros(0, dtype=np.int64)
        tables = rng.dirichlet(np.full(sizes[j], BN_CONCENTRATION), size=int(np.prod(sizes[parents])))
        config = (np.ravel_multi_index(tuple(records[:, parents].T), sizes[parents]) if count
                  else np.zeros(rows, dtype=np.int64))
        cdf = np.cumsum(tables, axis=1)[config]
        records[:, j] = np.minimum((rng.random(rows)[:, None] >= cdf).sum(axis=1), sizes[j] - 1)
        if families is not None:
            families.append(tuple(f"x{p:02d}" for p in parents) + (f"x{j:02d}",))
    return [f"x{j:02d}" for j in range(attributes)], records


def load_table(data_dir: Path, name: str):
    """``(columns, records)`` of a dataset, every column re-coded to the values it takes."""
    if name not in BAYES_NETS:
        return recoded(data_dir, name)
    columns, records = bayes_net(BAYES_NETS[name])
    return columns, np.stack([np.unique(c, return_inverse=True)[1] for c in records.T], axis=1).astype(np.int64)


# ----------------------------------------------------------------------------------------------
# Workers: one run each, in a fresh process (ours in this interpreter, the reference in the peers')
# ----------------------------------------------------------------------------------------------


def prepare_reference(mechanism: str, directory: Path):
    """Import mbi on JAX's CPU backend in float64 and load the reference script (untimed)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_enable_compilation_cache", False)
    import mbi  # noqa: F401 - imported before the clock starts

    return load_reference(directory, mechanism)


def run_reference(script, mechanism: str, columns, records, epsilon: float, seed: int):
    import mbi

    np.random.seed(seed)  # both scripts and mbi's sampler draw from numpy's global generator
    data = mbi.Dataset({c: records[:, j] for j, c in enumerate(columns)},
                       mbi.Domain(columns, (records.max(axis=0) + 1).tolist()))
    if mechanism == "mst":
        synthetic = script.MST(data, epsilon, DELTA)
    else:
        workload = [(clique, 1.0) for clique in itertools.combinations(columns, 3)]
        mech = script.AIM(epsilon, DELTA, max_model_size=MAX_MODEL_MB)
        _, synthetic = mech.run(data, workload, num_synth_rows=len(records))
    return np.stack([np.asarray(synthetic.data[c]) for c in columns], axis=1).astype(np.int64)


def versions(side: str) -> dict:
    from importlib.metadata import version

    return {name: version(name) for name in (("mbi", "jax") if side == "reference" else ("numba",))}


def worker(args) -> None:
    table = np.load(args.table_file)
    columns = json.loads(Path(args.columns).read_text())
    if args.worker == "reference":
        script = prepare_reference(args.mechanism, args.reference)

        def run(*inputs):
            return run_reference(script, *inputs)
    else:
        import ektelo_pgm.mechanisms  # noqa: F401 - imported before the clock starts
        run = run_ours
    synthetic, wall, cpu = harness.timed(lambda: run(args.mechanism, columns, table, args.epsilon, args.seed))
    peak_mb = harness.peak_mb()
    np.savez(args.out, records=synthetic, wall=wall, cpu=cpu, peak_mb=peak_mb,
             versions=json.dumps(versions(args.worker)))


# ----------------------------------------------------------------------------------------------
# Orchestration
# ----------------------------------------------------------------------------------------------


def meta(reference: Path = REFERENCE_DIR) -> dict:
    """What the results file records about the settings and the reference scripts (the provenance
    goes beside it)."""
    scripts = {p.name: blob_hash(p) for p in sorted(reference.glob("*.py"))
               if p.stem in {*itertools.chain(*REFERENCE_MODULES.values())}}
    return {"delta": DELTA, "max_model_mb": MAX_MODEL_MB,
            "bayes_nets": {"seed": BN_SEED, "rows": BN_ROWS, "parents": BN_PARENTS, "sizes": BN_SIZES,
                           "concentration": BN_CONCENTRATION},
            "reference_scripts": scripts, "reference_edits": [edit[:3] for edit in REFERENCE_EDITS]}


def one_run(side, mechanism, name, epsilon, seed, columns, table_path, columns_path, args):
    python = OURS_PYTHON if side == "ours" else args.peers_python
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.npz"
        row = {"side": side, "mechanism": mechanism, "dataset": name, "epsilon": epsilon, "seed": seed,
               "when": harness.now()}
        done = harness.child(__file__, "--worker", side, "--mechanism", mechanism, "--epsilon", epsilon, "--seed", seed,
                             "--table-path", table_path, "--columns", columns_path, "--reference", args.reference,
                             "--out", out, python=python, timeout=args.timeout,
                             env={"JAX_PLATFORMS": "cpu"} if side == "reference" else None)
        if done.cut:
            # the process's whole life, imports included: a lower bound on what the run needed
            return {**row, "status": "timeout", "wall": done.wall}
        if not done.ok or not out.exists():
            return {**row, "status": "error", "error": done.tail()}
        with np.load(out) as result:
            synthetic = result["records"]
            measured = {field: float(result[field]) for field in ("wall", "cpu", "peak_mb")}
            used = json.loads(str(result["versions"]))
    from ektelo_pgm import Dataset

    real = dataset(columns, np.load(table_path))
    tv2, tv3 = total_variations(real, Dataset(synthetic, real.domain))
    return {**row, "status": "ok", **measured, "tv2": tv2, "tv3": tv3, "versions": used}


# ----------------------------------------------------------------------------------------------
# Table
# ----------------------------------------------------------------------------------------------


def cut_off(rows) -> float | None:
    """The shortest time at which one of ``rows`` was cut off, if any was."""
    cut = [r["wall"] for r in rows if r["status"] == "timeout"]
    return min(cut) if cut else None


def wall_cell(rows) -> str:
    text = show(summary(rows, "wall"), 1)
    cut = [r for r in rows if r["status"] == "timeout"]
    failed = sum(r["status"] == "error" for r in rows)
    if cut:
        text += f"; {len(cut)} cut off at > {cut_off(rows):.0f}"
    if failed:
        text += f"; {failed} failed"
    return text


def tables(results: dict) -> str:
    runs = results["mechanisms_vs_reference.json"]["runs"]
    lines = ["| mechanism | data | epsilon | TV 2-way ours | TV 2-way reference | TV 3-way ours | TV 3-way reference "
             "| wall s ours | wall s reference | speed-up | CPU s ours | CPU s reference | peak MB ours "
             "| peak MB reference |",
             "|---|---|---:|---|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    cells = sorted({(r["mechanism"], r["dataset"], r["epsilon"]) for r in runs},
                   key=lambda c: (c[0], DATASETS.index(c[1]) if c[1] in DATASETS else len(DATASETS), c[2]))
    for mechanism, name, epsilon in cells:
        side = {s: [r for r in runs if key(r)[:4] == (s, mechanism, name, epsilon)] for s in SIDES}
        wall = {s: summary(side[s], "wall") for s in SIDES}
        # a run cut off counts at the time it was cut off: then the mean is a lower bound
        theirs = [r["wall"] for r in side["reference"] if r["status"] in ("ok", "timeout")]
        speed = "-"
        if wall["ours"] and theirs:
            bound = "> " if cut_off(side["reference"]) else ""
            speed = f"{bound}{np.mean(theirs) / wall['ours'][0]:.1f}x"
        cpu = [f"{c[0]:.1f}" if c else "-" for c in (summary(side[s], "cpu") for s in SIDES)]
        peak = [f"{max(r['peak_mb'] for r in side[s] if r['status'] == 'ok'):.0f}" if summary(side[s], "peak_mb")
                else "-" for s in SIDES]
        lines.append(f"| {mechanism.upper()} | {name} | {epsilon:g} | {show(summary(side['ours'], 'tv2'))} | "
                     f"{show(summary(side['reference'], 'tv2'))} | {show(summary(side['ours'], 'tv3'))} | "
                     f"{show(summary(side['reference'], 'tv3'))} | {wall_cell(side['ours'])} | "
                     f"{wall_cell(side['reference'])} | {speed} | {cpu[0]} | {cpu[1]} | {peak[0]} | {peak[1]} |")
    lines += ["", "TV and wall seconds: mean ± std over the runs that finished (their number); CPU seconds: mean; "
              "peak MB: the largest peak resident memory of a run's process.  Speed-up: the reference's mean wall "
              "time over ours; a lower bound (\"> x\") when a reference run was cut off, counted at the time it "
              "was cut off."]
    return "\n".join(lines)


def parse_args(argv=None):
    parser = grid_parser(__doc__.split("\n\n")[0], DATASETS, EPSILONS, 3, SIDES, RESULTS)
    parser.add_argument("--reference", type=Path, default=REFERENCE_DIR,
                        help="directory holding the author's mst.py, aim.py, mechanism.py and cdp2adp.py")
    parser.add_argument("--peers-python", type=Path, default=PEERS_PYTHON, help="python of the venv with mbi 2.0.0")
    return parser.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return
    if args.merge:
        merge_runs(RESULTS, args.merge, key, meta(args.reference))
    elif not args.table:
        run_grid(args, load=load_table, run=lambda *cell: one_run(*cell, args),
                 settings=lambda: meta(args.reference))
        if args.results.resolve() != RESULTS.resolve():
            return  # recorded elsewhere: the table follows the default file, folded in with --merge
    print(tables(harness.read(RESULTS)))


if __name__ == "__main__":
    main()
