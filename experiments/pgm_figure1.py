"""McKenna et al. 2019, sec. 5.1 and Figure 1: MWEM, PrivBayes, HDMM and DualQuery, each with
and without Private-PGM, on titanic and adult, scored by the workload error of the
range-marginal workload (15 triples, seed 0; median over trials).

Without PGM: MWEM with multiplicative weights (factored where it can), PrivBayes's noisy
network, HDMM+LLS (local least squares: global least squares cannot hold these domains),
DualQuery's synthetic records.  With PGM: the same measurements re-estimated by Private-PGM
(HDMM+PGM: its default, L-BFGS; MWEM+PGM and PrivBayes+PGM: Algorithm 2; DualQuery+PGM:
Algorithm 1 on the likelihood of its sampled queries).  DualQuery runs on the zCDP budget
implied by (epsilon, delta = 1e-3); the others on pure epsilon.  PrivBayes and DualQuery treat
the record count as public, as their papers do (substitute neighbours); MWEM and HDMM do not.  A run that refuses for lack of
memory (MWEM's full table) is reported as refused.

    python experiments/pgm_figure1.py [--quick] [--trials 5] [--epsilons 0.1 1 10] [--only MWEM] [--sides with] [--dq-eta 1]
        [--first-seed 0]
    python experiments/pgm_figure1.py --load runs1.json runs2.json     # combine, table, plot

writes ``--out`` (default experiments/results/pgm_figure1.json: the runs, or the combined runs
with ``--load``) and the plot beside it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import Doc  # noqa: E402

from ektelo_pgm import Dataset  # noqa: E402
from ektelo_pgm.mechanisms import MWEM, DualQuery, HDMM, PrivBayes  # noqa: E402
from ektelo_pgm.metrics import workload_error  # noqa: E402
from ektelo_pgm.operators.reconstruct import PGM, LocalLeastSquares  # noqa: E402
from ektelo_pgm.privacy import SUBSTITUTE, Budget  # noqa: E402
from ektelo_pgm.workload import range_marginals  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "experiments" / "results"
NUMERIC = {"titanic": ["Age", "Fare"],
           "adult": ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]}

DOC = Doc(
    title="Private-PGM inside four mechanisms (McKenna et al. 2019)",
    setup="""
The paper's Figure 1 is at epsilon = 1 alone; this also runs 0.1 and 10.  Titanic (1,304 records) and
adult (48,842); 5 trials a cell except DualQuery (3 on titanic, 2 on adult, `--dq-eta 1` on adult)
and MWEM without PGM on adult at 1 (1 trial).  PGM runs Algorithm 2 for PrivBayes and MWEM, its
default (L-BFGS, 300 iterations) for HDMM (the HDMM cells on titanic and on adult at 0.1: Algorithm 2,
200 iterations) and Algorithm 1 on DualQuery's likelihood, all far short of the paper's 10,000
iterations (each run's count is in the JSON).  A "-" was not run: MWEM without PGM on titanic at 0.1
and 10 and on adult at 10 did not finish in 14 to 18 minutes of CPU (its attribute groups reach 45
million cells: the paper's "ran out of memory or timed out"), nor did DualQuery+PGM on adult at 10 in
27.  Single-threaded on the shared 2-core machine, so seconds per trial are inflated unevenly.""",
    rerun="python experiments/pgm_figure1.py [--trials 5] [--only HDMM] [--dq-eta 1] --out runs.json\n"
          "python experiments/pgm_figure1.py --load runs*.json   # combined into experiments/results/pgm_figure1.json",
    reading="""
PrivBayes+PGM is 39-80% below PrivBayes on adult (the paper: about 30%), but worse on titanic at 0.1.
HDMM+PGM is 6.0x / 2.8x better than HDMM+LLS on titanic / adult at epsilon 1 (the paper: 6.6x / 3.2x);
on adult only with L-BFGS, as Algorithm 2 stalls on the heterogeneous noise of HDMM's strategy.
MWEM without PGM runs out of time where the paper's ran out of memory; with PGM it takes 2-10 s a trial.
DualQuery+PGM is 1.2x-2.6x better in four of five cells (the paper: 1.2x-4.4x); no grid over eta, s.""",
    results=("experiments/results/pgm_figure1.json",))


def mechanisms(workload, numeric, args) -> dict:
    """``{(mechanism, with_pgm): (object, budget factory)}``."""
    pgm = PGM(iters=args.pgm_iters, method="accelerated")
    # HDMM's strategy weights span a factor of 50: L-BFGS, not Algorithm 2 (docs/results.md, Figure 1)
    hdmm_pgm = PGM(iters=args.hdmm_pgm_iters)
    pure = lambda eps: Budget.pure(eps)  # noqa: E731
    public = lambda eps: Budget.pure(eps, neighbours=SUBSTITUTE)  # noqa: E731
    approx = lambda eps: Budget.approx(eps, 1e-3, neighbours=SUBSTITUTE)  # noqa: E731
    dq_length = {"rounds": args.dq_rounds} if args.dq_eta is None else {"eta": args.dq_eta}
    return {
        ("PrivBayes", False): (PrivBayes(k=2), public),
        ("PrivBayes", True): (PrivBayes(k=2, estimator=pgm), public),
        ("HDMM", False): (HDMM(workload, estimator=LocalLeastSquares()), pure),
        ("HDMM", True): (HDMM(workload, estimator=hdmm_pgm), pure),
        ("DualQuery", False): (DualQuery(workload, samples=args.dq_samples, **dq_length), approx),
        ("DualQuery", True): (DualQuery(workload, samples=args.dq_samples, **dq_length,
                                        estimator=PGM(iters=args.dq_pgm_iters, method="mirror")), approx),
        ("MWEM", False): (MWEM(workload, rounds=args.rounds), pure),
        ("MWEM", True): (MWEM(workload, rounds=args.rounds, estimator=pgm), pure),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="titanic only, 1 trial, epsilon 1, few iterations")
    parser.add_argument("--datasets", nargs="+", default=["titanic", "adult"])
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seed of the first trial (the trials take seeds first-seed, first-seed + 1, ...)")
    parser.add_argument("--pgm-iters", type=int, default=1000)
    parser.add_argument("--hdmm-pgm-iters", type=int, default=300, help="PGM (L-BFGS) iterations after HDMM")
    parser.add_argument("--rounds", type=int, default=10, help="MWEM rounds")
    parser.add_argument("--dq-rounds", type=int, default=100)
    parser.add_argument("--dq-eta", type=float, default=None,
                        help="DualQuery's learning rate, its rounds then following from the budget "
                        "(instead of --dq-rounds)")
    parser.add_argument("--dq-samples", type=int, default=20)
    parser.add_argument("--dq-pgm-iters", type=int, default=200)
    parser.add_argument("--only", nargs="+", default=None, help="mechanism names to run")
    parser.add_argument("--sides", nargs="+", default=["without", "with"], choices=["without", "with"],
                        help="run each mechanism without PGM, with PGM, or both")
    parser.add_argument("--out", type=Path, default=OUT / "pgm_figure1.json", help="where the runs go (JSON)")
    parser.add_argument("--load", type=Path, nargs="+", default=None,
                        help="tabulate and plot the runs of these JSON files instead of running")
    args = parser.parse_args()
    if args.load:
        rows = combined([row for path in args.load for row in loaded_rows(path)])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"settings": {"loaded": [str(p) for p in args.load]}, "rows": rows}, indent=1))
        plot(rows, args.out.with_suffix(".png"))
        print(table(rows))
        return
    if args.quick:
        args.datasets, args.epsilons, args.trials = ["titanic"], [1.0], 1
        args.pgm_iters, args.hdmm_pgm_iters, args.rounds, args.dq_rounds, args.dq_pgm_iters = 200, 30, 5, 30, 30
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    for name in args.datasets:
        data = Dataset.load(DATA / f"{name}.csv", DATA / f"{name}-domain.json")
        workload = range_marginals(data.domain, NUMERIC[name], triples=15, rng=0)
        for (mech, with_pgm), (obj, budget) in mechanisms(workload, NUMERIC[name], args).items():
            if (args.only and mech not in args.only) or ("with" if with_pgm else "without") not in args.sides:
                continue
            for epsilon in args.epsilons:
                row = {"dataset": name, "mechanism": mech, "pgm": with_pgm, "epsilon": epsilon,
                       "pgm_iters": pgm_iters(mech, with_pgm, settings),
                       "dq_eta": args.dq_eta if mech == "DualQuery" else None,
                       "seeds": [], "errors": [], "median": None, "seconds": [], "refused": None}
                rows.append(row)
                for seed in range(args.first_seed, args.first_seed + args.trials):
                    start = time.perf_counter()
                    try:
                        result = obj.run(data, budget(epsilon), rng=seed)
                    except MemoryError as why:
                        row["refused"] = str(why)
                        break
                    row["seconds"].append(time.perf_counter() - start)
                    row["errors"].append(workload_error(workload, data, result.estimate))
                    row["seeds"].append(seed)
                    row["median"] = statistics.median(row["errors"])
                    # stored after every trial: a run stopped midway keeps the trials it finished
                    args.out.write_text(json.dumps({"settings": settings, "rows": rows}, indent=1))
                what = f"refused ({row['refused'][:70]})" if row["refused"] else f"median error {row['median']:.4f}"
                print(f"{name} eps={epsilon:g} {mech}{'+PGM' if with_pgm else ''}: {what} "
                      f"in {sum(row['seconds']):.1f} s", flush=True)
                args.out.write_text(json.dumps({"settings": settings, "rows": rows}, indent=1))
    plot(rows, args.out.with_suffix(".png"))
    print(table(rows))


def pgm_iters(mech: str, with_pgm: bool, settings: dict) -> int | None:
    """PGM iterations of a run (None without PGM)."""
    if not with_pgm:
        return None
    own = {"DualQuery": "dq_pgm_iters", "HDMM": "hdmm_pgm_iters"}.get(mech, "pgm_iters")
    return settings.get(own, settings["pgm_iters"])


def loaded_rows(path: Path) -> list:
    """The runs stored in ``path``, each with its PGM iterations (from the file's settings if absent)
    and its seeds (0, 1, ... if absent: runs before ``--first-seed``)."""
    stored = json.loads(path.read_text())
    rows = stored["rows"]
    for row in rows:
        if "pgm_iters" not in row:
            row["pgm_iters"] = pgm_iters(row["mechanism"], row["pgm"], stored["settings"])
        row.setdefault("dq_eta", None)
        row.setdefault("seeds", list(range(len(row["errors"]))))
    return rows


def combined(rows: list) -> list:
    """One row per cell (dataset, mechanism, side, epsilon): the trials of rows with the same
    settings (PGM iterations, DualQuery's eta) pooled by seed, a later row's trial replacing an
    earlier one of the same seed; a row with other settings replaces the cell's earlier rows."""
    cells: dict = {}
    for row in rows:
        if not row["errors"] and not row["refused"]:
            continue  # stopped before its first trial
        key = (row["dataset"], row["mechanism"], row["pgm"], row["epsilon"])
        same = key in cells and all(cells[key][k] == row[k] for k in ("pgm_iters", "dq_eta"))
        trials = dict(zip(cells[key]["seeds"], zip(cells[key]["errors"], cells[key]["seconds"]))) if same else {}
        trials.update(zip(row["seeds"], zip(row["errors"], row["seconds"])))
        seeds = sorted(trials)
        errors = [trials[s][0] for s in seeds]
        cells[key] = {**row, "seeds": seeds, "errors": errors, "seconds": [trials[s][1] for s in seeds],
                      "median": statistics.median(errors) if errors else None}
    return list(cells.values())


def plot(rows, path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return
    datasets = sorted({r["dataset"] for r in rows})
    mechs = list(dict.fromkeys(r["mechanism"] for r in rows))
    fig, axes = plt.subplots(1, len(mechs), figsize=(3.2 * len(mechs), 3), squeeze=False)
    for ax, mech in zip(axes[0], mechs):
        for d, name in enumerate(datasets):
            for with_pgm, style in ((False, "--o"), (True, "-s")):
                pts = sorted((r["epsilon"], r["median"]) for r in rows if r["dataset"] == name
                             and r["mechanism"] == mech and r["pgm"] == with_pgm and r["median"])
                if pts:  # one colour per dataset and side in every panel
                    ax.plot(*zip(*pts), style, color=f"C{2 * d + with_pgm}",
                            label=f"{name}{' +PGM' if with_pgm else ''}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(mech)
        ax.set_xlabel("epsilon")
    axes[0][0].set_ylabel("workload error (median)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def table(rows) -> str:
    """Markdown table: per mechanism, dataset and epsilon the median error without and with PGM,
    their ratio and the number of trials (``refused`` where memory ran out)."""
    lines = ["| mechanism | dataset | epsilon | without PGM | with PGM | without / with | trials |",
             "|---|---|---:|---:|---:|---:|---|"]
    keyed = {(r["mechanism"], r["dataset"], r["epsilon"], r["pgm"]): r for r in rows}
    mechs = list(dict.fromkeys(r["mechanism"] for r in rows))
    cells = sorted({k[:3] for k in keyed}, key=lambda k: (mechs.index(k[0]), k[1] != "titanic", k[2]))
    for mech, name, eps in cells:
        sides = [keyed.get((mech, name, eps, with_pgm)) for with_pgm in (False, True)]
        shown = ["-" if r is None else "refused (memory)" if r["refused"] else f"{r['median']:.4f}" for r in sides]
        done = [r for r in sides if r is not None and not r["refused"]]
        ratio = f"{sides[0]['median'] / sides[1]['median']:.2f}x" if len(done) == 2 else "-"
        trials = " / ".join("-" if r is None else str(len(r["errors"])) for r in sides)
        lines.append(f"| {mech} | {name} | {eps:g} | {shown[0]} | {shown[1]} | {ratio} | {trials} |")
    return "\n".join(lines)


def tables(results: dict) -> str:
    """The table of docs/results.md (and the figure's link) from the combined runs."""
    return (table(results["pgm_figure1.json"]["rows"]) +
            "\n\n![Figure 1: each mechanism with and without PGM](figures/pgm_figure1.png)")


if __name__ == "__main__":
    main()
