"""Reports for a data steward: how close a synthetic table is to the real one, and how
reconstruction operators compare on the same measurements.

:func:`evaluate` puts both tables on one discretisation fitted on the real table
(:class:`Discretisation`) and computes the total variation distance (TVD, between the
normalised marginals, in [0, 1]) of every 1-way and 2-way (optionally 3-way) marginal.  Its
:class:`Evaluation` prints an error table and draws figures: 1-way marginals real vs synthetic,
2-way heatmaps of the worst pairs, the distribution of the errors per marginal order; it writes
them as one self-contained HTML page (PNGs embedded) or as PNG files.

:func:`compare` plots the workload error (McKenna et al. 2019, sec. 5.1) of reconstruction
operators against epsilon, each budget's measurements shared by all operators
(:func:`ektelo_pgm.plans.compare`).

Evaluation is not private: it reads the real table freely (its quantiles, categories and
marginals are in the report).  Treat a report like the real data.

The figures need matplotlib (the ``report`` extra: ``pip install ektelo_pgm[report]``); the
numbers do not.
"""
from __future__ import annotations

import base64
import html
import io
import itertools
import json
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .dataset import Dataset
from .domain import Domain
from .errors import InputError
from .files import atomic_write
from .table_io import MISSING as MISSING_MARKERS  # strings read as missing, as every step reads them

MISSING = "(missing)"  # one cell for NaN and the missing markers
OTHER = "(other)"  # one cell for what the real table lacks: a new category, a non-number in a numeric column
REAL, SYNTHETIC = "#4c72b0", "#dd8452"  # the two tables' colours in every figure


def matplotlib_figure():
    """matplotlib's Figure class; a clear error when the optional package is absent."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the report's figures need matplotlib: pip install 'ektelo_pgm[report]' "
                          "(or pip install matplotlib)") from None
    return Figure


def _distinct(series) -> tuple[np.ndarray, list]:
    """``(index, values)``: the column's distinct values (strings stripped, missing ones dropped)
    and, per row, the index of its value in them, -1 for a missing one (NaN, ``""``, ``"?"``)."""
    import pandas as pd

    index, uniques = pd.factorize(series)  # index -1: NaN or None
    kept, where, position = [], {}, np.full(len(uniques) + 1, -1)  # position[-1] for index -1
    for k, value in enumerate(uniques):
        value = value.strip() if isinstance(value, str) else value
        if isinstance(value, str) and value in MISSING_MARKERS:
            continue
        if value not in where:
            where[value] = len(kept)
            kept.append(value)
        position[k] = where[value]
    return position[index], kept


def _label(value) -> str:
    """A category's label: whole numbers without a decimal point."""
    if isinstance(value, (bool, np.bool_)):
        return str(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return str(int(value)) if float(value).is_integer() else f"{float(value):g}"
    return str(value)


def _number(value) -> float:
    """``value`` as a float, NaN when it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _edge(x: float) -> str:
    """A bin edge without thousands separators (they would read as the interval's comma)."""
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.4g}"


def kinds_of(schema) -> dict:
    """``{column: "numeric" | "categorical"}`` from a schema: a fitted TableEncoder, a mapping
    ``{column: kind}`` or ``{"columns": {column: {"kind": kind, ...}}}``, or the path of a JSON
    file holding a saved TableEncoder or such a mapping."""
    from .encoding import NumericColumn, TableEncoder

    if isinstance(schema, (str, os.PathLike)):
        with open(schema, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as err:
                raise InputError(f"{os.fspath(schema)}: not a JSON schema ({err})") from None
        schema = TableEncoder.from_dict(data) if isinstance(data, dict) and "format" in data else data
    if isinstance(schema, TableEncoder):
        return {name: "numeric" if isinstance(column, NumericColumn) else "categorical"
                for name, column in schema._fitted().items()}
    if isinstance(schema, dict) and isinstance(schema.get("columns"), dict):
        schema = schema["columns"]
    if not isinstance(schema, dict):
        raise TypeError(f"schema must be a TableEncoder, a {{column: kind}} mapping or a JSON path, "
                        f"got {type(schema).__name__}")
    kinds = {}
    for name, kind in schema.items():
        kind = kind.get("kind") if isinstance(kind, dict) else kind
        if kind not in ("numeric", "categorical"):
            raise InputError(f"schema: column {name!r} has kind {kind!r}; use 'numeric' or 'categorical'")
        kinds[str(name)] = kind
    return kinds


class Discretisation:
    """One coding of a real table and of tables compared with it, fitted on the real table.

    A numeric column is cut at the real table's quantiles ``k / bins`` (k = 1..bins-1) into
    right-closed bins, so a point mass (capital-gain's 92% of zeros) is a bin of its own and
    values beyond the real range fall in the end bins; a categorical column keeps the real
    table's values.  Every column also has a cell for missing values (NaN, ``""``, ``"?"``) and
    one ("(other)") for anything the real table lacks: a new category, a non-number in a numeric
    column.  A column is numeric when ``kinds`` says so, or, undeclared, when every value of
    the real table is a number and it has more than ``bins`` distinct ones.
    """

    def __init__(self, real, bins: int = 16, kinds: dict | None = None):
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 2:
            raise InputError(f"bins must be an integer of at least 2, got {bins!r}")
        kinds = dict(kinds or {})
        unknown = sorted(set(kinds) - {str(c) for c in real.columns})
        if unknown:
            raise InputError(f"schema columns {unknown} are not in the real table {[str(c) for c in real.columns]}")
        self.columns = [str(c) for c in real.columns]
        self.time_formats: dict[str, str] = {}  # numeric columns of seconds, shown as times
        self.edges: dict[str, np.ndarray] = {}
        self.categories: dict[str, list[str]] = {}
        for name, column in zip(self.columns, real.columns):
            index, values = _distinct(real[column])
            numbers = np.array([_number(v) for v in values], dtype=float)
            parses = not np.isnan(numbers).any()
            kind = kinds.get(name) or ("numeric" if parses and numbers.size > bins else "categorical")
            if kind == "numeric":
                if not parses:
                    raise InputError(f"column {name!r} is declared numeric but holds "
                                     f"{values[int(np.flatnonzero(np.isnan(numbers))[0])]!r}")
                if not values:
                    raise InputError(f"column {name!r} is declared numeric but has no values")
                rows = numbers[index[index >= 0]]
                self.edges[name] = np.unique(np.quantile(rows, np.arange(1, bins) / bins))
            else:
                self.categories[name] = sorted({_label(v) for v in values},
                                               key=lambda s: (np.isnan(_number(s)), _number(s), s))

    def labels(self, column: str) -> list[str]:
        """The cells of ``column`` in code order: bins or categories, then missing and other.
        The bins of a column in :attr:`time_formats` (seconds since 1970) show times."""
        if column in self.edges:
            from .encoding import time_text

            fmt = self.time_formats.get(column)
            e = [_edge(x) if fmt is None else time_text(x, fmt) for x in self.edges[column]]
            cells = [f"≤ {e[0]}"] + [f"({a}, {b}]" for a, b in zip(e, e[1:])]
            cells.append(f"> {e[-1]}")
        else:
            cells = list(self.categories[column])
        return cells + [MISSING, OTHER]

    @property
    def domain(self) -> Domain:
        return Domain(self.columns, [len(self.labels(c)) for c in self.columns])

    def codes(self, frame, what: str = "table") -> Dataset:
        """``frame`` (with the real table's columns, in any order) as a Dataset over
        :attr:`domain`; ``what`` names the table in errors."""
        names = {str(c): c for c in frame.columns}
        absent = [c for c in self.columns if c not in names]
        if absent:
            raise InputError(f"the {what} lacks the columns {absent} of the real table")
        records = np.empty((len(frame), len(self.columns)), dtype=np.int64)
        for j, name in enumerate(self.columns):
            index, values = _distinct(frame[names[name]])
            size = len(self.labels(name))
            if name in self.edges:
                numbers = np.array([_number(v) for v in values], dtype=float)
                code = np.searchsorted(self.edges[name], numbers, side="left")
                code = np.where(np.isnan(numbers), size - 1, code)  # a non-number: other
            else:
                known = {label: k for k, label in enumerate(self.categories[name])}
                code = np.array([known.get(_label(v), size - 1) for v in values], dtype=np.int64)
            records[:, j] = np.append(code, size - 2)[index]  # index -1: missing
        return Dataset(records, self.domain)


def total_variation(p: np.ndarray, q: np.ndarray) -> float:
    """``||p / sum p - q / sum q||_1 / 2`` of two count tables (probabilities, in [0, 1])."""
    return 0.5 * float(np.abs(p / p.sum() - q / q.sum()).sum())


#: What the quality scores are compared with in the summary (docs/steward.md, measured by this report).
QUALITY_REFERENCE = "raw Adult: AIM at epsilon 1 0.97, pair trends 0.96; its columns shuffled apart 0.88, 0.76"
#: A column whose 1-way TVD exceeds this gets a line of advice.
ADVICE_TVD = 0.10
#: Shares above which a numeric column's real values are clipped by its range, and a categorical
#: column's synthetic rows are its other category, enough to name as the cause.
CLIPPED_SHARE = 0.02
OTHER_SHARE = 0.05


@dataclass(frozen=True)
class Advice:
    """What a steward can do about one column: its 1-way TVD (None: not in the synthetic
    table), the likely ``cause`` and the ``remedy``, in words."""

    column: str
    tvd: float | None
    cause: str
    remedy: str

    def text(self) -> str:
        shown = "not in the synthetic table" if self.tvd is None else f"1-way TVD {self.tvd:.3f}"
        return f"{self.column} ({shown}): {self.cause}; {self.remedy}"


@dataclass
class Evaluation:
    """The outcome of :func:`evaluate`: both tables coded by ``discretisation`` and the TVD of
    every marginal in ``errors`` (a DataFrame: ``order``, ``marginal`` (a tuple of columns),
    ``tvd``; worst first); ``release``, the fit's settings in words where the model was given;
    ``advice``, per column far from the real one or absent (:func:`advise`); ``quality``, the
    scores of SDMetrics's quality report (:func:`ektelo_pgm.fidelity.quality`); ``efficacy`` and
    ``disclosure``, the checks against a real holdout (:mod:`ektelo_pgm.holdout`) when one was
    given."""

    discretisation: Discretisation
    real: Dataset
    synthetic: Dataset
    errors: object  # pandas.DataFrame
    release: str | None = None
    advice: tuple = ()
    quality: object = None  # ektelo_pgm.fidelity.Quality
    efficacy: object = None  # ektelo_pgm.holdout.MLEfficacy, with a target and a holdout
    disclosure: object = None  # ektelo_pgm.holdout.Disclosure, with a holdout

    def summary(self):
        """Per marginal order: how many marginals, mean, median and max TVD."""
        grouped = self.errors.groupby("order")["tvd"]
        return grouped.agg(marginals="size", mean="mean", median="median", max="max").reset_index()

    def marginals(self, attrs) -> tuple[np.ndarray, np.ndarray]:
        """The real and synthetic marginals (probabilities) on ``attrs``."""
        p, q = self.real.marginal(tuple(attrs)), self.synthetic.marginal(tuple(attrs))
        return p / p.sum(), q / q.sum()

    def headline(self, worst: int = 3) -> list[str]:
        """The one-screen summary that opens the report: the release, the sizes, the quality
        scores with what to compare them to, the worst columns and pairs, and the holdout checks."""
        q = self.quality
        shapes = q.column_shapes.sort_values("score", kind="stable").head(worst)
        pairs = q.column_pair_trends.sort_values("score", kind="stable").head(worst)
        lines = [f"release: {self.release or 'not given (pass the saved model with --model)'}",
                 f"real: {len(self.real):,} rows, synthetic: {len(self.synthetic):,} rows, "
                 f"{len(self.discretisation.columns)} columns compared",
                 f"quality (SDMetrics's quality report; 1 = identical; {QUALITY_REFERENCE}): overall {q.score:.3f}, "
                 f"column shapes {q.column_shapes_score:.3f}, column pair trends {q.column_pair_trends_score:.3f}",
                 "worst columns: " + ", ".join(f"{c} {m} {v:.3f}" for c, m, v in
                                               zip(shapes["column"], shapes["metric"], shapes["score"])),
                 "worst pairs: " + ", ".join(f"{' x '.join(c)} {m} {v:.3f}" for c, m, v in
                                             zip(pairs["columns"], pairs["metric"], pairs["score"]))]
        if self.efficacy is not None:
            table = self.efficacy.table
            main = table[table["metric"] == table["metric"].iloc[0]]
            lines.append(f"machine learning, target {self.efficacy.target}: {main['metric'].iloc[0]} trained on "
                         "synthetic / on real, " + ", ".join(f"{m} {r:.3f} / {t:.3f}" for m, r, t in
                                                            zip(main["model"], main["synthetic"], main["real"])))
        if self.disclosure is not None:
            table = self.disclosure.table.set_index("statistic")
            lines.append("privacy checks (heuristics, not the DP guarantee): " + ", ".join(
                f"{name} {row.synthetic:.3f} (holdout {row.holdout:.3f})" for name, row in table.iterrows()))
        elif self.efficacy is None:
            lines.append("machine-learning efficacy and privacy checks: give a real holdout the synthesizer never "
                         "saw (--holdout, and --target for the efficacy)")
        return lines

    def text(self, worst: int = 5) -> str:
        """The report printed by ``ektelo-pgm evaluate``: the summary, then the error table."""
        lines = self.headline() + ["",
                 "total variation distance per marginal (0 = identical, 1 = disjoint):",
                 f"{'order':>5}  {'marginals':>9}  {'mean':>6}  {'median':>6}  {'max':>6}"]
        for row in self.summary().itertuples():
            lines.append(f"{row.order:>5}  {row.marginals:>9}  {row.mean:6.3f}  {row.median:6.3f}  {row.max:6.3f}")
        for order in sorted(self.errors["order"].unique()):
            rows = self.errors[self.errors["order"] == order].head(worst)
            lines.append(f"worst {order}-way: " + ", ".join(f"{' x '.join(m)} {t:.3f}"
                                                           for m, t in zip(rows["marginal"], rows["tvd"])))
        if self.advice:
            lines.append(f"what to do (columns with a 1-way TVD above {ADVICE_TVD:g}, or left out):")
            lines += [f"  {advice.text()}" for advice in self.advice]
        for check in (self.efficacy, self.disclosure):
            if check is not None:
                lines += ["", check.text()]
        return "\n".join(lines)

    # figures ------------------------------------------------------------------------------------
    def figures(self, worst: int = 4) -> dict:
        """The report's matplotlib Figures by name: ``"errors"`` (TVD distribution per order),
        ``"oneway"`` (the ``worst`` columns, big), ``"oneway_all"`` (every column, small),
        ``"twoway"`` (heatmaps of the ``worst`` pairs)."""
        Figure = matplotlib_figure()
        out = {}
        out["errors"] = self._draw_errors(Figure(figsize=(8, 3.6), layout="constrained"))
        ranked = self._ranked(1)
        big = ranked[:worst]
        rows = (len(big) + 1) // 2
        out["oneway"] = self._draw_oneway(Figure(figsize=(12, 3.8 * rows), layout="constrained"), big, 2, 24,
                                          "Worst 1-way marginals: real vs synthetic")
        columns = 4
        rows = (len(ranked) + columns - 1) // columns
        out["oneway_all"] = self._draw_oneway(Figure(figsize=(14, 2.6 * rows), layout="constrained"),
                                              ranked, columns, 12, "Every 1-way marginal: real vs synthetic")
        pairs = self._ranked(2)[:worst]
        if pairs:
            out["twoway"] = self._draw_twoway(Figure(figsize=(13, 3.9 * len(pairs)), layout="constrained"), pairs)
        return out

    def _ranked(self, order: int) -> list[tuple]:
        rows = self.errors[self.errors["order"] == order]
        return [(m, t) for m, t in zip(rows["marginal"], rows["tvd"])]

    def _cells(self, column: str, p: np.ndarray, q: np.ndarray, most: int):
        """Indices of the cells of ``column`` to draw: those non-empty in either table, in code
        order (numeric bins, all; categories that are all numbers, in numeric order) or by real
        frequency (other categories); of categories, the ``most`` largest."""
        keep = np.flatnonzero((p > 0) | (q > 0))
        if column in self.discretisation.edges:
            return keep  # every bin, in order
        if not all(np.isfinite(_number(c)) for c in self.discretisation.categories[column]):
            keep = keep[np.argsort(-(p[keep] + 1e-12 * q[keep]), kind="stable")]
        if keep.size > most:
            largest = np.argsort(-np.maximum(p[keep], q[keep]), kind="stable")[:most]
            keep = keep[np.sort(largest)]
        return keep

    def _draw_oneway(self, fig, ranked, columns: int, most: int, title: str):
        rows = (len(ranked) + columns - 1) // columns
        axes = np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).ravel()
        small = columns > 2
        for ax, ((column,), tvd) in zip(axes, ranked):
            p, q = self.marginals((column,))
            cells = self._cells(column, p, q, most)
            labels = self.discretisation.labels(column)
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

    def _draw_twoway(self, fig, pairs):
        axes = fig.subplots(len(pairs), 3, squeeze=False)
        for row, ((a, b), tvd) in zip(axes, pairs):
            p, q = self.marginals((a, b))
            rows = self._cells(a, p.sum(axis=1), q.sum(axis=1), 20)
            cols = self._cells(b, p.sum(axis=0), q.sum(axis=0), 20)
            p, q = p[np.ix_(rows, cols)], q[np.ix_(rows, cols)]
            top = max(p.max(), q.max())
            diff = q - p
            span = max(abs(diff).max(), 1e-12)
            row_labels = [self.discretisation.labels(a)[i] for i in rows]
            col_labels = [self.discretisation.labels(b)[i] for i in cols]
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

    def _draw_errors(self, fig):
        ax = fig.subplots()
        orders = sorted(self.errors["order"].unique())
        groups = [self.errors.loc[self.errors["order"] == k, "tvd"].to_numpy() for k in orders]
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

    # writing ------------------------------------------------------------------------------------
    def write_html(self, path, figures: dict | None = None, title: str = "Synthetic data report") -> None:
        """One self-contained HTML page (``figures``, default :meth:`figures`, embedded as PNG),
        written atomically."""
        figures = figures or self.figures()
        parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
                 "<style>body{font-family:sans-serif;max-width:1400px;margin:2em auto;color:#222}"
                 "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;"
                 "text-align:right}td:first-child,th:first-child{text-align:left}img{max-width:100%}"
                 ".note{color:#555}pre{white-space:pre-wrap;background:#f6f6f6;padding:8px}</style></head><body>",
                 f"<h1>{html.escape(title)}</h1>",
                 "<h2>At a glance</h2><pre>" + html.escape("\n".join(self.headline())) + "</pre>",
                 f"<p>Real table: {len(self.real):,} rows; synthetic table: {len(self.synthetic):,} rows; "
                 f"{len(self.discretisation.columns)} columns.  Each marginal is compared by its total variation "
                 "distance (TVD: half the L1 distance between the two tables' shares of rows; 0 is identical, "
                 "1 disjoint).</p><p class='note'>Numeric columns are cut at the real table's quantiles, the same "
                 "bins for both tables.  This report is not private: it shows the real table's marginals and "
                 "quantiles.  Treat it like the real data.</p>",
                 *(["<h2>What to do</h2><ul>"] + [f"<li>{html.escape(a.text())}</li>" for a in self.advice] + ["</ul>"]
                   if self.advice else []),
                 "<h2>Summary</h2>", self.summary().to_html(index=False, float_format=lambda x: f"{x:.4f}"),
                 "<h2>Error distribution</h2>", _img(figures["errors"]),
                 "<h2>1-way marginals</h2>", _img(figures["oneway"]), _img(figures["oneway_all"])]
        if "twoway" in figures:
            parts += ["<h2>2-way marginals</h2>", _img(figures["twoway"])]
        shapes = self.quality.column_shapes.sort_values("score", kind="stable")
        trends = self.quality.column_pair_trends.sort_values("score", kind="stable")
        trends = trends.assign(columns=[" × ".join(c) for c in trends["columns"]])
        parts += ["<h2>Quality scores (SDMetrics's definitions, 1 = identical)</h2>",
                  "<h3>Column shapes</h3>", shapes.to_html(index=False, float_format=lambda x: f"{x:.4f}"),
                  f"<h3>Column pair trends</h3><details><summary>show the table ({len(trends)} pairs, worst "
                  "first)</summary>", trends.to_html(index=False, float_format=lambda x: f"{x:.4f}"), "</details>"]
        for heading, check in (("Machine-learning efficacy", self.efficacy), ("Privacy sanity checks", self.disclosure)):
            if check is not None:
                parts += [f"<h2>{heading}</h2><pre>{html.escape(check.text())}</pre>",
                          check.table.to_html(index=False, float_format=lambda x: f"{x:.4f}")]
        table = self.errors.assign(marginal=[" × ".join(m) for m in self.errors["marginal"]])
        parts += ["<h2>Every marginal, worst first</h2><details><summary>show the table "
                  f"({len(table)} marginals)</summary>",
                  table.to_html(index=False, float_format=lambda x: f"{x:.4f}"), "</details></body></html>"]
        with atomic_write(path) as f:
            f.write("\n".join(parts))

    def save_figures(self, stem, figures: dict | None = None, dpi: int = 100) -> list[str]:
        """Each of ``figures`` (default :meth:`figures`) as a PNG ``{stem}-{name}.png`` (``stem``
        may include a folder), written atomically; returns the paths."""
        paths = []
        for name, fig in (figures or self.figures()).items():
            path = f"{os.fspath(stem)}-{name}.png"
            with atomic_write(path, "wb") as f:
                fig.savefig(f, format="png", dpi=dpi)
            paths.append(path)
        return paths


def _img(fig, dpi: int = 100) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return f"<p><img src='data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()}'></p>"


def evaluate(real, synthetic, schema=None, orders: Sequence[int] = (1, 2), bins: int = 16,
             out=None, png=None, model=None, holdout=None, target: str | None = None) -> Evaluation:
    """Compare ``synthetic`` with ``real`` (DataFrames with the original column types, or
    paths of CSV/Parquet files) on every marginal of the given ``orders`` (1, 2, 3), over the
    real table's columns that the synthetic one has (the others are named in the advice).

    Both are coded by one :class:`Discretisation` fitted on ``real`` (``bins`` quantile bins per
    numeric column; ``schema``: a TableEncoder, a ``{column: "numeric" | "categorical"}``
    mapping or a JSON path of either, fixes the columns' kinds).  ``model``: the fitted
    :class:`~ektelo_pgm.synthesizer.Synthesizer` (or the path it was saved to) that wrote the
    synthetic table; its settings head the report, its schema explains the advice
    (:func:`advise`), its columns of times are compared on the time axis, and the columns it
    was told to drop or regenerate are not compared.  ``holdout``: real rows the synthesizer never
    saw (a DataFrame or a path), for the privacy sanity checks and, with ``target`` (a column),
    the machine-learning efficacy (:mod:`ektelo_pgm.holdout`; ``real`` is then the training
    part).  Writes the HTML report to ``out`` and the figures as PNGs ``{png}-{name}.png`` when
    given (``png`` ending in ``.png`` loses that suffix).  Not private: see the module's docstring.
    """
    orders = sorted(set(int(k) for k in orders))
    if not orders or orders[0] < 1 or orders[-1] > 3:
        raise InputError(f"orders must be among 1, 2 and 3, got {orders}")
    if out is not None or png is not None:
        matplotlib_figure()  # refuse before any work when the figures cannot be drawn
    import pandas as pd

    from .table_io import has_header, is_parquet, read_table

    def read(path):  # not private: a CSV's header line is guessed
        return read_table(path, header=None if is_parquet(path) else has_header(path))

    if target is not None and holdout is None:
        raise InputError("machine-learning efficacy needs a real holdout the synthesizer never saw (holdout=, "
                         "--holdout)")
    real = read(real) if isinstance(real, (str, os.PathLike)) else real
    synthetic = read(synthetic) if isinstance(synthetic, (str, os.PathLike)) else synthetic
    holdout = read(holdout) if isinstance(holdout, (str, os.PathLike)) else holdout
    for name, frame in (("real", real), ("synthetic", synthetic)) + ((("holdout", holdout),) if holdout is not None
                                                                      else ()):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"the {name} table must be a pandas DataFrame or a file path, got {type(frame).__name__}")
        if len(frame) == 0:
            raise InputError(f"the {name} table has no rows")
    if isinstance(model, (str, os.PathLike)):
        from .synthesizer import Synthesizer
        model = Synthesizer.load(model)
    chosen = set() if model is None else set(model.regenerate) | set(model.drop)  # the user's choice
    present = {str(c) for c in synthetic.columns} - chosen
    absent = [str(c) for c in real.columns if str(c) not in present and str(c) not in chosen]
    real_compared = real[[c for c in real.columns if str(c) in present]]
    if real_compared.shape[1] == 0:
        raise InputError("the synthetic table has none of the real table's columns")
    kinds = None if schema is None else {c: k for c, k in kinds_of(schema).items() if c in present}
    if model is not None:  # columns of times compared as numbers on the time axis
        times = {name: column.time_format for name, column in model.encoder.columns.items()
                 if column.kind == "numeric" and column.time_format is not None and name in present}
        real_compared, synthetic = (_on_time_axis(frame, times) for frame in (real_compared, synthetic))
        kinds = {**(kinds or {}), **{name: "numeric" for name in times}}
    coding = Discretisation(real_compared, bins, kinds)
    coding.time_formats = {} if model is None else times
    truth, fake = coding.codes(real_compared, "real table"), coding.codes(synthetic, "synthetic table")
    rows = []
    for k in orders:
        for attrs in itertools.combinations(coding.columns, k):
            rows.append((k, attrs, total_variation(truth.marginal(attrs), fake.marginal(attrs))))
    errors = pd.DataFrame(rows, columns=["order", "marginal", "tvd"])
    errors = errors.sort_values(["order", "tvd"], ascending=[True, False], kind="stable").reset_index(drop=True)
    evaluation = Evaluation(coding, truth, fake, errors)
    evaluation.release = None if model is None else model.settings()
    evaluation.advice = advise(evaluation, real, synthetic, absent, model)
    from . import fidelity, holdout as checks

    kinds = {name: "numeric" if name in coding.edges else "categorical" for name in coding.columns}
    columns = list(real_compared.columns)
    train, made = _missing_as_nan(real_compared), _missing_as_nan(synthetic[columns])
    evaluation.quality = fidelity.quality(train, made, kinds)
    if holdout is not None:
        held = _missing_as_nan(_on_time_axis(holdout[columns], times) if model is not None else holdout[columns])
        evaluation.disclosure = checks.disclosure(train, held, made, kinds)
        if target is not None:
            evaluation.efficacy = checks.ml_efficacy(train, held, made, target, kinds)
    if out is not None or png is not None:
        figures = evaluation.figures()
        if out is not None:
            evaluation.write_html(out, figures)
        if png is not None:
            png = os.fspath(png)
            evaluation.save_figures(png[:-4] if png.endswith(".png") else png, figures)
    return evaluation


def _missing_as_nan(frame):
    """``frame`` with the missing markers (:data:`MISSING_MARKERS`, around spaces) as NaN in its
    text columns; its other columns as they are."""
    marked = np.zeros(frame.shape, dtype=bool)
    for j, (_, column) in enumerate(frame.items()):
        if column.dtype == object or str(column.dtype) in ("str", "string"):
            marked[:, j] = column.astype(str).str.strip().isin(MISSING_MARKERS).to_numpy()
    return frame.mask(marked)


def _on_time_axis(frame, formats: dict):
    """``frame`` with each column of ``formats`` (name -> time format) as seconds since 1970
    (text that is not a time in its format: missing)."""
    from .schema import column_values

    frame = frame.copy()
    for name, fmt in formats.items():
        seconds = column_values(frame[name], frozenset(MISSING_MARKERS), fmt)
        frame[name] = np.array([np.nan if s is None else float(s) for s in seconds])
    return frame


def advise(evaluation: Evaluation, real, synthetic, absent: Sequence[str], model=None) -> tuple:
    """:class:`Advice` for each column of ``absent`` (not in the synthetic table) and each whose
    1-way TVD exceeds ``ADVICE_TVD``, worst first.  The cause is read from the fitted ``model``
    where given (why a column was left out; a numeric column's range that clips more than
    ``CLIPPED_SHARE`` of the real values, or bins too few for it; a categorical column whose
    categories too rare to release make more than ``OTHER_SHARE`` of the synthetic rows);
    else, and where none of these shows, the noise of the mechanism."""
    columns = {} if model is None else model.encoder.columns
    left_out = {} if model is None else model.left_out
    out = []
    for name in absent:
        why = left_out.get(name)  # "column 'x': why; what the schema step suggests"
        cause = why.split(": ", 1)[1].split("; ")[0] if why else "the synthesizer left it out"
        out.append(Advice(name, None, cause, "declare it in a schema (--schema), its categories public "
                                             "(--public-categories) if they are, or --regenerate an identifier"))
    oneway = evaluation.errors[evaluation.errors["order"] == 1]
    for (name,), tvd in zip(oneway["marginal"], oneway["tvd"]):
        if tvd <= ADVICE_TVD:
            continue
        out.append(Advice(name, float(tvd), *_cause(columns.get(name), real[name], synthetic[name])))
    return tuple(out)


def _cause(column, real, synthetic) -> tuple[str, str]:
    """``(cause, remedy)`` of a column far from the real one, given its schema ``column`` (or None)."""
    noise = ("the mechanism's noise on this column", "raise --epsilon, or leave out columns you do not need (--drop)")
    if column is None:
        return noise
    if column.kind == "numeric" and column.time_format is None:
        numbers = np.array([_number(v) for v in real], dtype=float)
        numbers = numbers[~np.isnan(numbers)]
        lo, hi = float(column.edges[0]), float(column.edges[-1])
        clipped = float(np.mean((numbers < lo) | (numbers > hi))) if numbers.size else 0.0
        if clipped > CLIPPED_SHARE:
            return (f"its range [{_edge(lo)}, {_edge(hi)}] clips {clipped:.0%} of the real values",
                    "declare its bounds in a schema (--schema), or raise --schema-share")
        if column.bins < 8:
            return (f"bins too coarse for its range ({column.bins} over [{_edge(lo)}, {_edge(hi)}])",
                    "declare its bounds and bins in a schema (--schema), or raise --schema-share")
    if column.kind == "categorical" and column.other is not None:
        share = float(np.mean(synthetic.astype(object) == column.other))
        if share > OTHER_SHARE:
            return (f"categories too rare to release are {share:.0%} of the synthetic rows, as {column.other!r}",
                    "declare its categories public (--public-categories) if they are, or in a schema; "
                    "or raise --schema-share")
    return noise


def compare(data: Dataset, epsilons: Sequence[float], operators: dict, k: int = 2, trials: int = 1, rng=None,
            out=None):
    """Workload error against epsilon of every reconstruction operator of ``{name: operator}``.

    For each epsilon (pure DP) and trial, every ``k``-way marginal of ``data`` is measured once
    with the Laplace mechanism and every operator reconstructs from those same measurements,
    scored by the workload error of McKenna et al. 2019, sec. 5.1 (:func:`ektelo_pgm.plans.compare`).
    Returns a DataFrame (``epsilon``, ``trial``, ``operator``, ``error``, ``seconds``,
    ``refused``: why an operator refused, e.g. the memory its full vector needs); draws the mean
    error per operator against epsilon into ``out`` (``.png``, or ``.html`` with the table).
    """
    import pandas as pd

    from .operators import measure, select
    from .plans import compare as compare_operators
    from .privacy import Budget
    from .workload import kway_marginals

    epsilons = [float(e) for e in epsilons]
    if not epsilons or min(epsilons) <= 0:
        raise InputError(f"epsilons must be positive, got {epsilons}")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise InputError(f"trials must be a positive integer, got {trials!r}")
    if out is not None:
        matplotlib_figure()
    rng = np.random.default_rng(rng)
    workload = kway_marginals(data.domain, min(int(k), len(data.domain)))
    queries = select.Workload(workload).select(data.domain)
    rows = []
    for epsilon in sorted(epsilons):
        for trial in range(int(trials)):
            measurements = measure.Laplace().measure(data, queries, Budget.pure(epsilon), rng)
            for r in compare_operators(data.domain, measurements, operators, workload, data):
                rows.append((epsilon, trial, r.name, r.error, r.seconds, r.refused))
    table = pd.DataFrame(rows, columns=["epsilon", "trial", "operator", "error", "seconds", "refused"])
    if out is not None:
        k = min(int(k), len(data.domain))
        title = (f"Workload error vs epsilon: all {k}-way marginals of {len(data):,} records over "
                 f"{len(data.domain)} attributes, Laplace noise, each reconstruction on the same measurements")
        fig = _draw_comparison(matplotlib_figure()(figsize=(8, 5), layout="constrained"), table, title)
        path = os.fspath(out)
        if path.endswith(".html"):
            with atomic_write(path) as f:
                f.write(f"<!doctype html><html><head><meta charset='utf-8'><title>Reconstructions compared</title>"
                        f"</head><body style='font-family:sans-serif'><h1>Reconstructions compared</h1>"
                        f"<p>{html.escape(title)}</p>{_img(fig)}"
                        f"{table.to_html(index=False, float_format=lambda x: f'{x:.4g}')}</body></html>")
        else:
            with atomic_write(path, "wb") as f:
                fig.savefig(f, format="png", dpi=100)
    return table


def _draw_comparison(fig, table, title: str):
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
