"""The figures of a report (matplotlib, the ``report`` extra: ``pip install ektelo_pgm[report]``):
an evaluation's 1-way marginals real vs synthetic, heatmaps of its worst 2-way marginals and the
distribution of its errors per marginal order; a comparison's workload error against epsilon;
a figure as a PNG embedded in HTML.  Shares of rows on the y axis, TVD in [0, 1].
"""
from __future__ import annotations

import base64
import io

import numpy as np

from .discretisation import number

REAL, SYNTHETIC = "#4c72b0", "#dd8452"  # the two tables' colours in every figure


def matplotlib_figure():
    """matplotlib's Figure class; a clear error when the optional package is absent."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the report's figures need matplotlib: pip install 'ektelo_pgm[report]' "
                          "(or pip install matplotlib)") from None
    return Figure


def evaluation_figures(evaluation, worst: int = 4) -> dict:
    """The matplotlib Figures of an :class:`~ektelo_pgm.evaluation.report.Evaluation` by name:
    ``"errors"`` (TVD distribution per order), ``"oneway"`` (the ``worst`` columns, big),
    ``"oneway_all"`` (every column, small), ``"twoway"`` (heatmaps of the ``worst`` pairs)."""
    Figure = matplotlib_figure()
    out = {}
    out["errors"] = _draw_errors(Figure(figsize=(8, 3.6), layout="constrained"), evaluation.errors)
    ranked = _ranked(evaluation.errors, 1)
    big = ranked[:worst]
    rows = (len(big) + 1) // 2
    out["oneway"] = _draw_oneway(Figure(figsize=(12, 3.8 * rows), layout="constrained"), evaluation, big, 2,
                                 24, "Worst 1-way marginals: real vs synthetic")
    columns = 4
    rows = (len(ranked) + columns - 1) // columns
    out["oneway_all"] = _draw_oneway(Figure(figsize=(14, 2.6 * rows), layout="constrained"), evaluation,
                                     ranked, columns, 12, "Every 1-way marginal: real vs synthetic")
    pairs = _ranked(evaluation.errors, 2)[:worst]
    if pairs:
        out["twoway"] = _draw_twoway(Figure(figsize=(13, 3.9 * len(pairs)), layout="constrained"), evaluation,
                                     pairs)
    return out


def _ranked(errors, order: int) -> list[tuple]:
    """``[(marginal, tvd)]`` of the marginals of ``order``, in the order of ``errors`` (worst first)."""
    rows = errors[errors["order"] == order]
    return [(m, t) for m, t in zip(rows["marginal"], rows["tvd"])]


def _cells(discretisation, column: str, p: np.ndarray, q: np.ndarray, most: int):
    """Indices of the cells of ``column`` to draw: those non-empty in either table, in code
    order (numeric bins, all; categories that are all numbers, in numeric order) or by real
    frequency (other categories); of categories, the ``most`` largest."""
    keep = np.flatnonzero((p > 0) | (q > 0))
    if column in discretisation.edges:
        return keep  # every bin, in order
    if not all(np.isfinite(number(c)) for c in discretisation.categories[column]):
        keep = keep[np.argsort(-(p[keep] + 1e-12 * q[keep]), kind="stable")]
    if keep.size > most:
        largest = np.argsort(-np.maximum(p[keep], q[keep]), kind="stable")[:most]
        keep = keep[np.sort(largest)]
    return keep


def _draw_oneway(fig, evaluation, ranked, columns: int, most: int, title: str):
    rows = (len(ranked) + columns - 1) // columns
    axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).ravel()
    small = columns > 2
    for ax, ((column,), tvd) in zip(axes, ranked):
        p, q = evaluation.marginals((column,))
        cells = _cells(evaluation.discretisation, column, p, q, most)
        labels = evaluation.discretisation.labels(column)
        x = np.arange(cells.size)
        ax.bar(x - 0.2, p[cells], 0.4, color=REAL, label="real")
        ax.bar(x + 0.2, q[cells], 0.4, color=SYNTHETIC, label="synthetic")
        ax.set_xticks(x, [labels[i] for i in cells], rotation=60 if small else 45, ha="right",
                      fontsize=6 if small else 8)
        ax.tick_params(axis="y", labelsize=7 if small else 9)
        shown = "" if cells.size == int(((p > 0) | (q > 0)).sum()) else f", {cells.size} largest cells"
        ax.set_title(f"{column}  (TVD {tvd:.3f}{shown})", fontsize=9 if small else 11)
        ax.set_ylabel("share of rows", fontsize=7 if small else 9)
    for ax in axes[len(ranked):]:
        ax.set_visible(False)
    axes[0].legend(fontsize=7 if small else 9)
    fig.suptitle(title, fontsize=13)
    return fig


def _draw_twoway(fig, evaluation, pairs):
    axes = fig.subplots(len(pairs), 3, squeeze=False)
    for row, ((a, b), tvd) in zip(axes, pairs):
        rows = _cells(evaluation.discretisation, a, *evaluation.marginals((a,)), 20)
        cols = _cells(evaluation.discretisation, b, *evaluation.marginals((b,)), 20)
        p, q = evaluation.marginals((a, b), (rows, cols))
        top = max(p.max(), q.max())
        diff = q - p
        span = max(abs(diff).max(), 1e-12)
        row_labels = [evaluation.discretisation.labels(a)[i] for i in rows]
        col_labels = [evaluation.discretisation.labels(b)[i] for i in cols]
        for ax, table, name, cmap, lo, hi in ((row[0], p, "real", "Blues", 0, top),
                                              (row[1], q, "synthetic", "Blues", 0, top),
                                              (row[2], diff, "synthetic − real", "RdBu_r", -span, span)):
            image = ax.imshow(table, cmap=cmap, vmin=lo, vmax=hi, aspect="auto", interpolation="nearest")
            ax.set_xticks(np.arange(len(col_labels)), col_labels, rotation=60, ha="right", fontsize=7)
            ax.set_yticks(np.arange(len(row_labels)), row_labels, fontsize=7)
            ax.set_xlabel(b, fontsize=8)
            ax.set_ylabel(a, fontsize=8)
            ax.set_title(f"{name}: {a} × {b}" + (f"  (TVD {tvd:.3f})" if name == "real" else ""), fontsize=9)
            colorbar = fig.colorbar(image, ax=ax, shrink=0.85)
            colorbar.ax.tick_params(labelsize=6)
    fig.suptitle("Worst 2-way marginals: shares of rows, real vs synthetic", fontsize=13)
    return fig


def _draw_errors(fig, errors):
    ax = fig.subplots()
    orders = sorted(errors["order"].unique())
    groups = [errors.loc[errors["order"] == k, "tvd"].to_numpy() for k in orders]
    ax.boxplot(groups, positions=range(len(orders)), widths=0.5, showfliers=False)
    jitter = np.random.default_rng(0)  # fixed: the same report for the same tables
    for i, g in enumerate(groups):
        ax.scatter(i + jitter.uniform(-0.18, 0.18, g.size), g, s=8, alpha=0.5, color=SYNTHETIC, zorder=3)
        ax.scatter([i], [g.mean()], marker="D", color="black", zorder=4, label="mean" if i == 0 else None)
    ax.set_xticks(range(len(orders)), [f"{k}-way ({g.size})" for k, g in zip(orders, groups)])
    ax.set_ylabel("total variation distance")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.set_title("Error per marginal, by order: TVD between real and synthetic marginals")
    return fig


def png_tag(fig, dpi: int = 100) -> str:
    """``fig`` as a PNG embedded in an HTML paragraph (``dpi`` dots per inch)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return f"<p><img src='data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}'></p>"


def comparison_figure(table, title: str):
    """The mean workload error of each operator of a :func:`~ektelo_pgm.evaluation.report.compare`
    table against epsilon (log-log, a band from min to max over trials), as a matplotlib Figure."""
    fig = matplotlib_figure()(figsize=(8, 5), layout="constrained")
    ax = fig.subplots()
    for name, rows in table.groupby("operator", sort=False):
        ran = rows.dropna(subset=["error"]).groupby("epsilon")["error"]
        mean = ran.mean()
        label = name
        refused = sorted(set(rows.loc[rows["error"].isna(), "epsilon"]))
        if refused:
            label += f" (refused at epsilon {', '.join(f'{e:g}' for e in refused)})"
        line, = ax.plot(mean.index, mean.to_numpy(), marker="o", label=label)
        if ran.ngroups and (ran.size() > 1).any():
            ax.fill_between(mean.index, ran.min().to_numpy(), ran.max().to_numpy(), color=line.get_color(), alpha=0.15)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon (pure DP)")
    ax.set_ylabel("workload error (mean over trials; band: min to max)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=9)
    ax.set_title(title, fontsize=10, wrap=True)
    return fig
