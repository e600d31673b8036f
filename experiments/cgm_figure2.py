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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ektelo_pgm import Budget  # noqa: E402
from ektelo_pgm.learning import (CGMEM, NaiveMLE, PGMLearner, PrivateSGD, UndirectedModel, chain,  # noqa: E402
                                 dirichlet_model, erdos_renyi, fit_mle, noisy_statistics,
                                 variables)

NONPRIVATE_LAM = 1e-4
CGM = dict(lam=1e-4, iters=10, mstep_iters=20, nlbp_iters=50)  # capped: the machine is shared


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
        naive = np.mean([summary[(model, n, e, "Naive MLE")][2] for n in sizes for e in epsilons])
        times = {m: np.mean([summary[(model, n, e, m)][2] for n in sizes for e in epsilons]) for m in METHODS}
        lines.append("\nMean seconds per fit: " + ", ".join(
            f"{m} {t:.2f} s ({t / naive:.1f}x Naive MLE)" for m, t in times.items()))
        wins = sum(summary[(model, n, e, "CGM-EM")][0] < summary[(model, n, e, "Naive MLE")][0]
                   for n in sizes for e in epsilons)
        lines.append(f"\nCGM-EM below Naive MLE in {wins} of {len(sizes) * len(epsilons)} (N, epsilon) points.")
    return "\n".join(lines)


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
    mse = fig1["mse"]
    ns = sorted({r["N"] for r in mse})
    axes[0].plot(ns, [np.mean([r["mse"] for r in mse if r["N"] == n]) for n in ns], "o-", label="measured")
    axes[0].plot(ns, [np.mean([r["predicted"] for r in mse if r["N"] == n]) for n in ns], "k--", label="Eq. 4")
    axes[0].set(xscale="log", yscale="log", xlabel="N", ylabel="MSE of y/N", title="(a) chain, epsilon=1")
    axes[0].legend(fontsize=7)
    for project in (True, False):
        pts = [r for r in fig1["projection"] if r["project"] == project]
        axes[1].plot(ns, [np.mean([r["kl"] for r in pts if r["N"] == n]) for n in ns], "o-",
                     label="projected" if project else "not projected")
    axes[1].set(xscale="log", yscale="log", xlabel="N", ylabel="KL", title="(b) Naive MLE, ER, epsilon=0.5")
    axes[1].legend(fontsize=7)
    lams = sorted({r["lambda"] for r in fig1["lambda"]})
    for key, label in [("noisy", "noisy statistics"), ("true", "true statistics")]:
        axes[2].plot(lams, [np.mean([r[key] for r in fig1["lambda"] if r["lambda"] == lam]) for lam in lams], "o-",
                     label=label)
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
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "docs" / "figures")
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
