"""Bernstein et al. 2017, sec. 4.1 (Figures 1 and 2): private learning of pairwise models on
synthetic data.

Third-order chains and connected Erdos-Renyi graphs over 10 attributes, Dirichlet(1) edge
potentials; for every population size N and epsilon, nested trials as in sec. 5 (``--trials``
populations, each released ``--releases`` times): KL divergence from the true model of Naive MLE,
CGM-EM, PGMLearner (Private-PGM on the same release), private SGD at (epsilon, 1/N), the
non-private MLE and the random estimator, with the wall-clock time of each learner.  Figure 1's
three panels: MSE of the noisy marginals against N, Naive MLE with and without projection, and
the effect of the L2 penalty.

    python experiments/cgm_figure2.py --quick          # a few minutes
    python experiments/cgm_figure2.py                  # the docs run

Writes ``<out>/cgm_figure2.json``, ``cgm_figure2.png``, ``cgm_figure1.png`` and prints the
markdown tables of docs/results.md.
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness import Doc  # noqa: E402

from ektelo_pgm import Budget  # noqa: E402
from ektelo_pgm.learning import (CGMEM, NaiveMLE, PGMLearner, PrivateSGD, UndirectedModel, chain,  # noqa: E402
                                 dirichlet_model, erdos_renyi, fit_mle, noisy_statistics,
                                 variables)

NONPRIVATE_LAM = 1e-4
CGM = dict(lam=1e-4, iters=10, mstep_iters=20, nlbp_iters=50)  # capped: the machine is shared
DOC = Doc(
    title="Private learning of undirected models (Bernstein et al. 2017)",
    setup="""
Pairwise models over 10 attributes of 3 values with Dirichlet(1) edge potentials, a third-order chain
(24 edges) and a connected Erdos-Renyi graph (p = 0.3, 15 edges); KL(true || learned) in nats; N in
{1e3, 1e4, 1e5}, epsilon in {0.1, 1}, 25 nested trials a point (5 populations, each released 5 times;
Figure 1's panels 2 trials).  All learners but PSGD use one Laplace release of the clique tables
(scale |C| / epsilon, Proposition 3); PSGD runs at (epsilon, 1/N) through `Budget.approx`.  Naive MLE
projected, lambda = 1e-2; CGM-EM started from it, capped at 10 EM rounds; PGMLearner: Private-PGM's
L1 fit, then the MLE on its marginals.  Run at the lowest CPU priority beside other jobs: only the
ratios of the seconds mean anything.""",
    rerun="python experiments/cgm_figure2.py   # writes docs/figures/cgm_figure2.json and the figures",
    reading="""
CGM-EM beats Naive MLE but for one tie within the spread, by 10-16x at N = 1e5, epsilon = 1, at about
5x its time (the paper: 4x / 8x).  PSGD is 56-71x slower (the paper: 27x / 40x) and worse than CGM-EM
but at N <= 1e4 with much noise, where its near-uniform start is near-optimal.  PGMLearner (the same
release handed to Private-PGM) is as fast as Naive MLE and the best at N = 1e5, epsilon = 0.1.
Differences: exact inference on the ER graph (the paper: loopy BP), NLBP in its dual form, capped EM.""",
    results=("docs/figures/cgm_figure2.json",))


def learners(cliques, lam):
    return {"Naive MLE": NaiveMLE(cliques, lam=lam), "CGM-EM": CGMEM(cliques, init_lam=lam, **CGM),
            "PGMLearner": PGMLearner(cliques, iters=500)}


def random_estimator(truth, rng):
    """MLE on random marginals (sec. 4.1): each clique's table a uniform draw from the simplex."""
    s = truth.structure
    targets = s.join([rng.dirichlet(np.ones(int(np.prod(shape)))).reshape(shape)
                      for shape in (s.domain.project(cl).shape for cl in s.cliques)])
    return UndirectedModel(s, fit_mle(s, targets, NONPRIVATE_LAM, maxiter=300)[0])


def figure2(models, sizes, epsilons, trials, releases, lam, seed):
    rows = []
    for name, (truth, cliques) in models.items():
        for n in sizes:
            for t in range(trials):
                rng = np.random.default_rng([seed, n, t])
                data = truth.synthetic_data(n, rng)
                s = truth.structure
                start = time.perf_counter()
                mle = UndirectedModel(s, fit_mle(s, s.statistics(data) / n, NONPRIVATE_LAM, maxiter=300)[0])
                base = {"model": name, "N": n, "trial": t}
                rows.append({**base, "epsilon": None, "method": "non-private MLE", "kl": truth.kl_divergence(mle),
                             "seconds": time.perf_counter() - start})
                rows.append({**base, "epsilon": None, "method": "random", "seconds": 0.0,
                             "kl": truth.kl_divergence(random_estimator(truth, rng))})
                for eps, r in itertools.product(epsilons, range(releases)):
                    private = {**base, "release": r, "epsilon": eps}
                    release = noisy_statistics(data, cliques, eps, rng=rng)
                    for method, learner in learners(cliques, lam).items():
                        start = time.perf_counter()
                        model = learner.fit_release(truth.domain, release)
                        rows.append({**private, "method": method, "kl": truth.kl_divergence(model),
                                     "seconds": time.perf_counter() - start})
                    start = time.perf_counter()
                    model = PrivateSGD(cliques, iters=50, lr=1.0, clip=1.0).fit(data, Budget.approx(eps, 1.0 / n), rng)
                    rows.append({**private, "method": "PSGD", "kl": truth.kl_divergence(model),
                                 "seconds": time.perf_counter() - start})
                print(f"{name} N={n} trial {t} done", flush=True)
    return rows


def figure1(chain_truth, er_truth, sizes, lams, trials, seed):
    """(a) MSE of the noisy marginals vs N (chain, eps 1, Proposition 4); (b) Naive MLE with and
    without projection (ER, eps 0.5); (c) KL vs lambda with noisy and true statistics (chain,
    eps 0.1, N = the largest size)."""
    out = {"mse": [], "projection": [], "lambda": []}
    cliques = chain_truth.cliques
    s = chain_truth.structure
    mu = s.join(chain_truth.marginals)
    for n in sizes:
        for t in range(trials):
            rng = np.random.default_rng([seed, 1, n, t])
            data = chain_truth.synthetic_data(n, rng)
            noisy = np.concatenate([m.y for m in noisy_statistics(data, cliques, 1.0, rng=rng)])
            out["mse"].append({"N": n, "trial": t, "mse": float(np.mean((noisy / n - mu) ** 2)),
                               "predicted": float(np.mean(mu * (1 - mu) / n + 2 * len(cliques) ** 2 / (n * n)))})
            er_data = er_truth.synthetic_data(n, rng)
            release = noisy_statistics(er_data, er_truth.cliques, 0.5, rng=rng)
            for project in (True, False):
                model = NaiveMLE(er_truth.cliques, project=project, lam=1e-2).fit_release(er_truth.domain, release)
                out["projection"].append({"N": n, "trial": t, "project": project,
                                          "kl": er_truth.kl_divergence(model)})
    n = sizes[-1]
    for t in range(trials):
        rng = np.random.default_rng([seed, 2, t])
        data = chain_truth.synthetic_data(n, rng)
        release = noisy_statistics(data, cliques, 0.1, rng=rng)
        for lam in lams:
            noisy = NaiveMLE(cliques, lam=lam).fit_release(chain_truth.domain, release)
            true = UndirectedModel(s, fit_mle(s, s.statistics(data) / n, lam, maxiter=300)[0])
            out["lambda"].append({"lambda": lam, "trial": t, "noisy": chain_truth.kl_divergence(noisy),
                                  "true": chain_truth.kl_divergence(true)})
    return out


def summarise(rows):
    table = {}
    for r in rows:
        key = (r["model"], r["N"], r["epsilon"], r["method"])
        table.setdefault(key, []).append((r["kl"], r["seconds"]))
    return {k: (float(np.mean([v[0] for v in vs])), float(np.std([v[0] for v in vs])),
                float(np.mean([v[1] for v in vs])), len(vs)) for k, vs in table.items()}


METHODS = ["Naive MLE", "CGM-EM", "PGMLearner", "PSGD"]


def markdown(summary, sizes, epsilons):
    lines = []
    for model in dict.fromkeys(k[0] for k in summary):
        lines.append(f"\n**{model}**: mean KL (nats) over trials, std in brackets\n")
        lines.append("| epsilon | N | " + " | ".join(METHODS + ["non-private MLE", "random"]) + " |")
        lines.append("|---:|---:|" + "---:|" * (len(METHODS) + 2))
        for eps in epsilons:
            for n in sizes:
                cells = []
                for m in METHODS:
                    mean, std, _, _ = summary[(model, n, eps, m)]
                    cells.append(f"{mean:.4g} ({std:.2g})")
                for m in ["non-private MLE", "random"]:
                    mean, std, _, _ = summary[(model, n, None, m)]
                    cells.append(f"{mean:.4g} ({std:.2g})")
                lines.append(f"| {eps:g} | {n:,} | " + " | ".join(cells) + " |")
        times = {m: seconds(summary, model, m, sizes, epsilons) for m in METHODS}
        naive = times["Naive MLE"]
        lines.append("\nMean seconds per fit: " + ", ".join(
            f"{m} {t:.2f} s ({t / naive:.1f}x Naive MLE)" for m, t in times.items()))
        wins = sum(summary[(model, n, e, "CGM-EM")][0] < summary[(model, n, e, "Naive MLE")][0]
                   for n in sizes for e in epsilons)
        lines.append(f"\nCGM-EM below Naive MLE in {wins} of {len(sizes) * len(epsilons)} (N, epsilon) points.")
    return "\n".join(lines)


def seconds(summary, model, method, sizes, epsilons) -> float:
    """Mean seconds per fit of ``method`` on ``model`` over every (N, epsilon) point."""
    return float(np.mean([summary[(model, n, e, method)][2] for n in sizes for e in epsilons]))


def panel_means(fig1) -> dict:
    """Figure 1's panels averaged over trials: ``{"mse": {N: (measured, Eq. 4)}, "projection":
    {N: (projected KL, not projected KL)}, "lambda": {lambda: (KL from noisy, from true statistics)}}``."""
    def mean(rows, key, **where):
        return float(np.mean([r[key] for r in rows if all(r[k] == v for k, v in where.items())]))

    ns = sorted({r["N"] for r in fig1["mse"]})
    lams = sorted({r["lambda"] for r in fig1["lambda"]})
    return {"mse": {n: (mean(fig1["mse"], "mse", N=n), mean(fig1["mse"], "predicted", N=n)) for n in ns},
            "projection": {n: tuple(mean(fig1["projection"], "kl", N=n, project=p) for p in (True, False)) for n in ns},
            "lambda": {lam: tuple(mean(fig1["lambda"], key, **{"lambda": lam}) for key in ("noisy", "true"))
                       for lam in lams}}


def panels(means) -> str:
    """Figure 1's panels (``panel_means``) as two markdown tables: (a) and (b) by N, (c) by lambda."""
    lines = ["Figure 1's panels: (a) MSE of y/N per cell on the chain at epsilon = 1, measured (Eq. 4); (b) KL of "
             "Naive MLE on the ER graph at epsilon = 0.5, projected / not projected; (c) KL on the chain at "
             "epsilon = 0.1 and the largest N against lambda, from noisy / true statistics.", "",
             "| N | (a) MSE measured (Eq. 4) | (b) KL projected / not projected |", "|---:|---:|---:|"]
    for n, (measured, predicted) in means["mse"].items():
        projected, not_projected = means["projection"][n]
        lines.append(f"| {n:,} | {measured:.3g} ({predicted:.3g}) | {projected:.3g} / {not_projected:.3g} |")
    lines += ["", "| lambda | (c) KL noisy / true statistics |", "|---:|---:|"]
    lines += [f"| {lam:g} | {noisy:.3g} / {true:.3g} |" for lam, (noisy, true) in means["lambda"].items()]
    return "\n".join(lines)


def claims(summary, sizes, epsilons, means) -> str:
    """The paper's claims against this run, as a markdown table."""
    models = list(dict.fromkeys(k[0] for k in summary))
    points = [(model, n, e) for model in models for e in epsilons for n in sizes]
    kl = {(model, n, e, m): summary[(model, n, e, m)][:2] for model, n, e in points for m in METHODS}

    def named(model, n, e):
        return f"({model}, {n:,}, {e:g})"

    def times(method):
        ratios = [seconds(summary, m, method, sizes, epsilons) / seconds(summary, m, "Naive MLE", sizes, epsilons)
                  for m in models]
        return " / ".join(f"{ratio:.1f}x" for ratio in ratios)

    losses = [p for p in points if kl[(*p, "CGM-EM")][0] >= kl[(*p, "Naive MLE")][0]]
    top = [f"{kl[(m, sizes[-1], epsilons[-1], 'Naive MLE')][0] / kl[(m, sizes[-1], epsilons[-1], 'CGM-EM')][0]:.0f}x"
           for m in models]
    below = (f"at {len(points) - len(losses)} of {len(points)} (graph, N, epsilon) points, {' / '.join(top)} lower "
             f"KL at N = {sizes[-1]:,}, epsilon = {epsilons[-1]:g}")
    below += "".join(f"; not at {named(*p)}: {kl[(*p, 'CGM-EM')][0]:.3g} vs {kl[(*p, 'Naive MLE')][0]:.3g}, std "
                     f"{kl[(*p, 'CGM-EM')][1]:.2g} / {kl[(*p, 'Naive MLE')][1]:.2g}" for p in losses)
    wins = [p for p in points if kl[(*p, "PSGD")][0] < kl[(*p, "CGM-EM")][0]]
    best = [p for p in points if min(METHODS, key=lambda m: kl[(*p, m)][0]) == "PSGD"]
    psgd = (f"{times('PSGD')} slower; below CGM-EM at {len(wins)} of {len(points)} points" +
            "".join(f"{';' if i else ':'} {named(*p)} {kl[(*p, 'PSGD')][0]:.3g} vs {kl[(*p, 'CGM-EM')][0]:.3g}"
                    for i, p in enumerate(wins)) +
            f"; the best private learner at {len(best)} of {len(points)}")
    n = min(means["projection"])
    projected, not_projected = means["projection"][n]
    best_lam = [min(means["lambda"], key=lambda lam: means["lambda"][lam][i]) for i in (0, 1)]
    figure = (f"projection cuts KL by {100 * (1 - projected / not_projected):.0f}% at N = {n:,}; noisy statistics "
              f"are best at lambda = {best_lam[0]:g}, true statistics at {best_lam[1]:g}")
    rows = [("CGM better than Naive MLE everywhere", below),
            ("CGM about 4x / 8x slower than Naive MLE (chain / ER)", times("CGM-EM")),
            ("PSGD worse than both, 27x / 40x slower", psgd),
            ("Figure 1: projection helps, Naive MLE needs lambda tuned, true statistics do not", figure)]
    return "\n".join(["| claim of the paper | here |", "|---|---|", *(f"| {claim} | {here} |" for claim, here in rows)])


def tables(results: dict) -> str:
    """The tables of docs/results.md (and the figures' links) from the stored run."""
    stored = results["cgm_figure2.json"]
    summary, sizes, epsilons = summarise(stored["rows"]), stored["sizes"], stored["epsilons"]
    means = panel_means(stored["figure1"])
    return "\n\n".join(["![Figure 2](figures/cgm_figure2.png)", markdown(summary, sizes, epsilons).strip(),
                         "![Figure 1](figures/cgm_figure1.png)", panels(means),
                         claims(summary, sizes, epsilons, means)])


def plot(rows, summary, fig1, sizes, epsilons, out: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(len(models), len(epsilons), figsize=(4 * len(epsilons), 3.2 * len(models)),
                             squeeze=False)
    for i, model in enumerate(models):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            for m in METHODS:
                ax.plot(sizes, [summary[(model, n, eps, m)][0] for n in sizes], marker="o", label=m)
            for m, style in [("non-private MLE", "k--"), ("random", "k:")]:
                ax.plot(sizes, [summary[(model, n, None, m)][0] for n in sizes], style, label=m)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{model}, epsilon={eps:g}")
            ax.set_xlabel("N")
            ax.set_ylabel("KL")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "cgm_figure2.png", dpi=110)

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    means = panel_means(fig1)
    ns = list(means["mse"])
    axes[0].plot(ns, [means["mse"][n][0] for n in ns], "o-", label="measured")
    axes[0].plot(ns, [means["mse"][n][1] for n in ns], "k--", label="Eq. 4")
    axes[0].set(xscale="log", yscale="log", xlabel="N", ylabel="MSE of y/N", title="(a) chain, epsilon=1")
    axes[0].legend(fontsize=7)
    for i, label in enumerate(("projected", "not projected")):
        axes[1].plot(ns, [means["projection"][n][i] for n in ns], "o-", label=label)
    axes[1].set(xscale="log", yscale="log", xlabel="N", ylabel="KL", title="(b) Naive MLE, ER, epsilon=0.5")
    axes[1].legend(fontsize=7)
    lams = list(means["lambda"])
    for i, label in enumerate(("noisy statistics", "true statistics")):
        axes[2].plot(lams, [means["lambda"][lam][i] for lam in lams], "o-", label=label)
    axes[2].set(xscale="log", yscale="log", xlabel="lambda", ylabel="KL", title="(c) chain, epsilon=0.1")
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "cgm_figure1.png", dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="two sizes, one epsilon, two populations, one release")
    parser.add_argument("--trials", type=int, default=None, help="populations per point (default 5)")
    parser.add_argument("--releases", type=int, default=None, help="releases per population (default 5)")
    parser.add_argument("--states", type=int, default=3, help="values per attribute")
    parser.add_argument("--lam", type=float, default=1e-2, help="Naive MLE's L2 penalty")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "figures")
    args = parser.parse_args(argv)
    sizes = [1000, 10000] if args.quick else [1000, 10000, 100000]
    epsilons = [1.0] if args.quick else [0.1, 1.0]
    trials = args.trials or (2 if args.quick else 5)
    releases = args.releases or (1 if args.quick else 5)
    domain = variables(10, args.states)
    rng = np.random.default_rng(args.seed)
    chain_cliques = chain(domain, 3)
    er_cliques = erdos_renyi(domain, 0.3, rng)
    models = {"third-order chain": (dirichlet_model(domain, chain_cliques, rng), chain_cliques),
              "Erdos-Renyi": (dirichlet_model(domain, er_cliques, rng), er_cliques)}
    begin = time.perf_counter()
    rows = figure2(models, sizes, epsilons, trials, releases, args.lam, args.seed)
    fig1 = figure1(models["third-order chain"][0], models["Erdos-Renyi"][0], sizes,
                   [1e-4, 1e-3, 1e-2, 1e-1], max(1, trials // 2), args.seed)
    summary = summarise(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "cgm_figure2.json").write_text(json.dumps(
        {"rows": rows, "figure1": fig1, "sizes": sizes, "epsilons": epsilons, "trials": trials, "releases": releases,
         "states": args.states, "lam": args.lam, "er_edges": len(er_cliques),
         "seconds": time.perf_counter() - begin}, indent=1))
    plot(rows, summary, fig1, sizes, epsilons, args.out)
    print(markdown(summary, sizes, epsilons))
    print(f"\ntotal {time.perf_counter() - begin:.0f} s")


if __name__ == "__main__":
    main()
