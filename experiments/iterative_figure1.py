"""Liu, Vietri and Wu 2021, Figures 1 and 2 (ADULT): max and mean error of 3-way marginals.

Set-up (sec. 7): ``../shared/data/adult`` split at random (seed 0) into a private 90% and a
public 10%; every algorithm runs on the private part.  The workload is every 3-way marginal:
on ADULT reduced to 7 attributes (sex, race, relationship, marital-status, workclass,
education-num, income>50K: 35 marginals, 120,960 cells) for MWEM (:class:`PMW`), PEP and their
public-data variants PMW-Pub and PEP-Pub (over the public records); on the full ADULT (15
attributes, 455 marginals) for RAP-softmax, GEM, GEM-Pub (pretrained on the public part) and
GEM-Pub (reduced) (pretrained on the public part cut to the paper's 7 attributes: sex, race,
relationship, marital-status, occupation, education-num, age).  Budgets: ``epsilon`` in
{0.1, 0.15, 0.2, 0.25, 0.5, 1} with ``delta = 1/n^2``, converted to zCDP by the paper's bound
``epsilon = rho + 2 sqrt(rho log(1/delta))`` (Theorem 1; ``approx_to_zcdp_simple``);
the private record count ``n`` is treated as public, as in the paper.  Errors are absolute
differences of the answers as fractions of ``n`` (max and mean over every query of the
workload).  No hyperparameter search: one setting per algorithm (``SETTINGS``), scaled to a
2-core machine (``--quick`` shrinks them further for a smoke run).

    python experiments/iterative_figure1.py [--quick] [--epsilons 0.1 0.25 1] [--runs 2]
                                            [--algorithms GEM PEP] [--out runs.json] [--plot fig.png]
    python experiments/iterative_figure1.py --load runs1.json runs2.json --plot fig.png

Prints a markdown table (means over the runs, the max error's standard error when there are
several, and the wall and CPU seconds per run: on a shared machine the CPU time is the steadier
measure).
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import Doc  # noqa: E402

from ektelo_pgm import Budget, Dataset  # noqa: E402
from ektelo_pgm.privacy import approx_to_zcdp_simple  # noqa: E402
from ektelo_pgm.workload import kway_marginals  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
REDUCED = ["sex", "race", "relationship", "marital-status", "workclass", "education-num", "income>50K"]
PUBLIC_REDUCED = ["sex", "race", "relationship", "marital-status", "occupation", "education-num", "age"]
EPSILONS = [0.1, 0.15, 0.2, 0.25, 0.5, 1.0]
GEM_NET = dict(hidden=(64, 128), embedding=16, batch=100, lr=1e-3, max_steps=30)
SETTINGS = {  # (domain, constructor arguments); the quick run divides rounds and steps by 5
    "MWEM": ("reduced", dict(rounds=60)),
    "PEP": ("reduced", dict(rounds=30, max_steps=25)),
    "PMW-Pub": ("reduced", dict(rounds=60)),
    "PEP-Pub": ("reduced", dict(rounds=30, max_steps=25)),
    "RAP-softmax": ("full", dict(rounds=8, k=5, rows=200, steps=50)),
    "GEM": ("full", dict(rounds=40, **GEM_NET)),
    "GEM-Pub": ("full", dict(rounds=10, pretrain_steps=200, **GEM_NET)),
    "GEM-Pub (reduced)": ("full", dict(rounds=20, pretrain_steps=200, **GEM_NET)),
}

DOC = Doc(
    title="Iterative methods: Adaptive Measurements, PEP, GEM (Liu, Vietri and Wu 2021)",
    setup="""
MWEM as the paper runs it (`PMW`), `PEP`, `RAPSoftmax`, `GEM` and their public-data variants, all
`AdaptiveMeasurements` with a different family and loss.  ADULT (48,842 records) split at random
(seed 0) into a private 90% (n = 43,957) and a public 10%; workload every 3-way marginal of ADULT
reduced to 7 attributes (35 marginals) for MWEM, PEP and their variants, of the full ADULT (455
marginals) for RAP-softmax and the GEMs.  Budget: epsilon as in the table, delta = 1/n^2, converted
to zCDP by the paper's bound (Theorem 1), n public.  Scaled to a 2-core machine: one setting each
(`SETTINGS`; GEM a (64, 128) MLP on 100 noise vectors, the paper's (512, 1024, 1024) on 1,000), no
grid search; single-threaded beside other work, so CPU seconds are the steadier figure.""",
    rerun="python experiments/iterative_figure1.py --runs 5 --out experiments/results/iterative_figure1.json "
          "--plot docs/iterative_figure1.png",
    reading="""
PEP is below MWEM from epsilon 0.25 on, not at 0.1 to 0.2, where its exact projection fits the noise
while MWEM's fixed step barely moves (its error does not fall with epsilon); PMW-Pub is the best of all.
GEM is above RAP-softmax at every epsilon (the paper has it below): our GEM is far smaller and stops
updating early.  GEM-Pub is the lowest of the full-domain algorithms in mean error at small epsilon
but not in max error; 200 pretraining steps leave its worst marginals far off.""",
    results=("experiments/results/iterative_figure1.json",))


def mechanism(name: str, workload, public: Dataset, n: int, options: dict):
    """The algorithm ``name`` with its settings, the private count ``n`` declared public."""
    from ektelo_pgm.mechanisms.pep import PEP
    from ektelo_pgm.mechanisms.pmw import PMW

    if name in ("MWEM", "PMW-Pub"):
        return PMW(workload, total=n, public=public if name == "PMW-Pub" else None, **options)
    if name in ("PEP", "PEP-Pub"):
        return PEP(workload, total=n, public=public if name == "PEP-Pub" else None, **options)
    if name == "RAP-softmax":
        from ektelo_pgm.mechanisms.rap import RAPSoftmax
        return RAPSoftmax(workload, total=n, **options)
    from ektelo_pgm.mechanisms.gem import GEM
    if name == "GEM":
        return GEM(workload, total=n, **options)
    source = public if name == "GEM-Pub" else public.project(PUBLIC_REDUCED)
    return GEM(workload, total=n, public=source, **options)


def errors(workload, data: Dataset, estimate) -> tuple[float, float]:
    """Max and mean absolute error over every query of the workload, as fractions of the records."""
    diffs = np.concatenate([np.abs(data.marginal(c) - estimate.project(c)).ravel() for c in workload.cliques])
    return float(diffs.max() / len(data)), float(diffs.mean() / len(data))


def quick(options: dict) -> dict:
    out = dict(options)
    for key in ("rounds", "steps", "max_steps", "pretrain_steps"):
        if key in out:
            out[key] = max(2, out[key] // 5)
    return out


def run(names, epsilons, runs: int, fast: bool, out: Path | None = None, meta: dict | None = None) -> list[dict]:
    """Every (algorithm, epsilon, run); the rows so far are rewritten to ``out`` after each."""
    adult = Dataset.load(DATA / "adult.csv", DATA / "adult-domain.json")
    order = np.random.default_rng(0).permutation(len(adult))
    cut = int(0.9 * len(adult))
    private = {"full": Dataset(adult.records[order[:cut]], adult.domain)}
    public = {"full": Dataset(adult.records[order[cut:]], adult.domain)}
    private["reduced"], public["reduced"] = private["full"].project(REDUCED), public["full"].project(REDUCED)
    n = len(private["full"])
    delta = 1.0 / n ** 2
    rows = []
    for name in names:
        kind, options = SETTINGS[name]
        options = quick(options) if fast else options
        data = private[kind]
        workload = kway_marginals(data.domain, 3)
        for epsilon in epsilons:
            for r in range(runs):
                budget = Budget.zcdp(approx_to_zcdp_simple(epsilon, delta))
                start, cpu = time.perf_counter(), time.process_time()
                result = mechanism(name, workload, public[kind], n, options).run(data, budget, rng=r)
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
                worst, mean = errors(workload, data, result.estimate)
                rows.append(dict(algorithm=name, domain=kind, epsilon=epsilon, run=r, max_error=worst,
                                 mean_error=mean, seconds=seconds, cpu_seconds=cpu, rho=budget.total,
                                 spent=float(result.spent)))
                print(f"{name:18s} eps={epsilon:<5g} run={r} max={worst:.4f} mean={mean:.5f} {seconds:.1f}s wall "
                      f"{cpu:.1f}s cpu", flush=True)
                if out is not None:
                    out.write_text(json.dumps(dict(meta=meta, runs=rows), indent=1))
    return rows


def summary(rows: list[dict]) -> dict:
    """``{(algorithm, epsilon): (max mean, max se, mean mean, mean se, wall seconds, runs, CPU seconds)}``
    (means over the runs; se: standard error)."""
    out = {}
    for key in dict.fromkeys((r["algorithm"], r["epsilon"]) for r in rows):
        group = [r for r in rows if (r["algorithm"], r["epsilon"]) == key]
        stats = []
        for field in ("max_error", "mean_error"):
            values = np.array([r[field] for r in group])
            stats += [values.mean(), values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0]
        out[key] = (*stats, float(np.mean([r["seconds"] for r in group])), len(group),
                    float(np.mean([r["cpu_seconds"] for r in group])))
    return out


def markdown(rows: list[dict]) -> str:
    table = summary(rows)
    epsilons = sorted({e for _, e in table})
    names = list(dict.fromkeys(a for a, _ in table))
    lines = ["| algorithm | data | " + " | ".join(f"eps={e:g} max / mean" for e in epsilons) +
             " | runs | s / run: wall (CPU) |", "|---|---|" + "---|" * len(epsilons) + "---|---|"]
    for name in names:
        cells, seconds, cpu, count = [], [], [], set()
        for e in epsilons:
            if (name, e) not in table:
                cells.append("")
                continue
            worst, worst_se, mean, _, secs, runs, cpu_secs = table[(name, e)]
            spread = f"±{worst_se:.3f}" if runs > 1 else ""
            cells.append(f"{worst:.3f}{spread} / {mean:.5f}")
            seconds.append(secs)
            cpu.append(cpu_secs)
            count.add(runs)
        kind = SETTINGS[name][0]
        lines.append(f"| {name} | {kind} | " + " | ".join(cells) +
                     f" | {'/'.join(map(str, sorted(count)))} | {np.mean(seconds):.0f} ({np.mean(cpu):.0f}) |")
    return "\n".join(lines)


def ordered(rows: list[dict]) -> list[dict]:
    """The runs by algorithm (in the order of ``SETTINGS``), epsilon and run."""
    order = {name: i for i, name in enumerate(SETTINGS)}
    return sorted(rows, key=lambda r: (order[r["algorithm"]], r["epsilon"], r["run"]))


def tables(results: dict) -> str:
    """The table of docs/results.md (and the figure's link) from the stored runs."""
    rows = ordered(results["iterative_figure1.json"]["runs"])
    runs = sorted({n for *_, n, _ in summary(rows).values()})
    return (f"Max / mean error (fractions of n; mean over the {'/'.join(map(str, runs))} runs, ± the max error's "
            f"standard error):\n\n{markdown(rows)}\n\n![max and mean error](iterative_figure1.png)")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = summary(rows)
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    for col, kind in enumerate(("reduced", "full")):
        for row, (field, label) in enumerate(((0, "max error"), (2, "mean error"))):
            ax = axes[row, col]
            for name in dict.fromkeys(a for a, _ in table):
                if SETTINGS[name][0] != kind:
                    continue
                eps = sorted(e for a, e in table if a == name)
                ax.errorbar(eps, [table[(name, e)][field] for e in eps], yerr=[table[(name, e)][field + 1] for e in eps],
                            marker="o", capsize=3, label=name)
            ax.set_xscale("log")
            ax.set_title(f"ADULT {'(reduced, 35 marginals)' if kind == 'reduced' else '(455 marginals)'}: {label}")
            if row == 1:
                ax.set_xlabel("epsilon (delta = 1/n^2)")
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one epsilon, one run, rounds and steps / 5")
    parser.add_argument("--epsilons", type=float, nargs="+", default=None)
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--algorithms", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a shared machine)")
    parser.add_argument("--out", type=Path, default=None, help="write the runs as JSON")
    parser.add_argument("--load", type=Path, nargs="+", default=None,
                        help="tabulate and plot the runs of these JSON files (written by --out) instead of running")
    parser.add_argument("--plot", type=Path, default=None, help="write the figure (PNG)")
    args = parser.parse_args()
    epsilons = args.epsilons or ([1.0] if args.quick else EPSILONS)
    runs = args.runs or (1 if args.quick else 5)
    if not args.load and any(SETTINGS[a][0] == "full" for a in args.algorithms):
        try:
            import torch
            torch.set_num_threads(args.threads)
        except ImportError:
            sys.exit("GEM and RAP-softmax need torch: pip install 'ektelo_pgm[gem]'")
    if args.load:
        rows = ordered([r for path in args.load for r in json.loads(path.read_text())["runs"]])
    else:
        meta = dict(date=datetime.now(timezone.utc).isoformat(timespec="seconds"), machine=platform.platform(),
                    python=platform.python_version(), quick=args.quick,
                    settings={a: SETTINGS[a][1] for a in args.algorithms})
        rows = run(args.algorithms, epsilons, runs, args.quick, args.out, meta)
    print(markdown(rows))
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
