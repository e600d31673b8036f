"""Reports for a data steward: how close a synthetic table is to the real one, and how
reconstruction operators compare on the same measurements.

:func:`evaluate` puts both tables on one discretisation fitted on the real table
(:class:`Discretisation`) and computes the total variation distance (TVD, between the
normalised marginals, in [0, 1]) of every 1-way and 2-way (optionally 3-way) marginal, and
SDMetrics's scores; both are set beside those of a reference measured on the same real table,
its columns shuffled apart (:func:`shuffled_apart`).  It names the release (:func:`release`,
given the model) and, for each column far from the real one, a cause read from the model's
schema or from the synthetic values themselves (:func:`advise`).  Its
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

import html
import itertools
import math
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..dataset import Dataset
from ..errors import InputError
from ..files import atomic_write
from .discretisation import (MISSING, OTHER, Discretisation, as_compared, category_columns, distinct, edge_label,
                             kinds_of, label, number, number_columns, read_in_formats, time_columns)
from .fidelity import quality, shares_distance
from .figures import comparison_figure, evaluation_figures, matplotlib_figure, png_tag
from .holdout import disclosure, ml_efficacy


def total_variation(real: Dataset, synthetic: Dataset, attrs: tuple) -> float:
    """The TVD of the two tables' marginals on ``attrs`` (shares of rows, in [0, 1]), over the
    cells present where the marginal is larger than the tables (:func:`.fidelity.shares_distance`)."""
    shape = real.domain.project(attrs).shape
    axes = list(real.domain.axes(attrs))
    return shares_distance(*(np.ravel_multi_index(data.records[:, axes].T, shape) for data in (real, synthetic)),
                           math.prod(shape))


#: The seed of the reference table: the real table with each column shuffled on its own
#: (:func:`shuffled_apart`), scored like the synthetic one.
REFERENCE_SEED = 0
#: A column whose 1-way TVD exceeds this gets a line of advice.
ADVICE_TVD = 0.10
#: Shares above which a numeric column's real values are clipped by its range, and a categorical
#: column's synthetic rows are its other category, enough to name as the cause.
CLIPPED_SHARE = 0.02
OTHER_SHARE = 0.05


def _trends(score: float) -> str:
    """A pair trends score as the headline writes it; NaN, where SDMetrics counts no pair (none of
    the real table's is associated past its thresholds), in words."""
    return "none counted (no pair of the real table associated enough)" if np.isnan(score) else f"{score:.3f}"


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
    ``tvd``, and ``shuffled``, the TVD of the reference table; worst first); ``release``, the
    fit's settings and ledger in words where the model was given (:func:`release`); ``advice``,
    per column far from the real one or absent (:func:`advise`); ``quality``, the scores as
    SDMetrics defines them (:func:`~ektelo_pgm.evaluation.fidelity.quality`), and ``reference``,
    the same scores of the real table with its columns shuffled apart (:func:`shuffled_apart`:
    exact 1-way marginals, no association between columns); ``efficacy`` and ``disclosure``,
    the checks against a real holdout (:mod:`ektelo_pgm.evaluation.holdout`) when one was given."""

    discretisation: Discretisation
    real: Dataset
    synthetic: Dataset
    errors: object  # pandas.DataFrame
    release: str | None = None
    advice: tuple = ()
    quality: object = None  # ektelo_pgm.evaluation.fidelity.Quality
    reference: object = None  # ektelo_pgm.evaluation.fidelity.Quality of the columns shuffled apart
    efficacy: object = None  # ektelo_pgm.evaluation.holdout.MLEfficacy, with a target and a holdout
    disclosure: object = None  # ektelo_pgm.evaluation.holdout.Disclosure, with a holdout

    def summary(self):
        """Per marginal order: how many marginals, mean, median and max TVD, and the mean TVD of
        the reference table (``shuffled``: the real columns shuffled apart)."""
        grouped = self.errors.groupby("order")
        table = grouped["tvd"].agg(marginals="size", mean="mean", median="median", max="max")
        return table.assign(shuffled=grouped["shuffled"].mean()).reset_index()

    def marginals(self, attrs, cells=None) -> tuple[np.ndarray, np.ndarray]:
        """The real and synthetic marginals (shares of rows) on ``attrs``, or their parts on the
        codes ``cells`` (an array per attribute), counted without the whole marginal."""
        if cells is None:
            p, q = self.real.marginal(tuple(attrs)), self.synthetic.marginal(tuple(attrs))
            return p / p.sum(), q / q.sum()
        shape = tuple(len(kept) for kept in cells)
        out = []
        for data in (self.real, self.synthetic):
            codes = []
            for attr, kept in zip(attrs, cells):
                position = np.full(data.domain.project((attr,)).shape[0], -1)
                position[kept] = np.arange(len(kept))
                codes.append(position[data.records[:, data.domain.axes((attr,))[0]]])
            codes = np.array(codes)
            inside = (codes >= 0).all(axis=0)
            flat = np.ravel_multi_index(codes[:, inside], shape)
            out.append(np.bincount(flat, minlength=math.prod(shape)).reshape(shape) / len(data))
        return out[0], out[1]

    def headline(self, worst: int = 3) -> list[str]:
        """The one-screen summary that opens the report: the release, the sizes, the quality
        scores with what to compare them to, the worst columns and pairs, and the holdout checks."""
        q = self.quality
        shapes = q.column_shapes.sort_values("score", kind="stable").head(worst)
        pairs = q.column_pair_trends.sort_values("score", kind="stable").head(worst)
        r = self.reference
        given = self.release or ("not given (pass the saved model with --model: its epsilon, delta, mechanism "
                                 "and ledger)")
        lines = [f"release: {given}",
                 f"real: {len(self.real):,} rows, synthetic: {len(self.synthetic):,} rows, "
                 f"{len(self.discretisation.columns)} columns compared",
                 f"quality (SDMetrics's scores; 1 = identical): overall {q.score:.3f}, "
                 f"column shapes {q.column_shapes_score:.3f}, column pair trends {_trends(q.column_pair_trends_score)}",
                 f"reference, the real table with its columns shuffled apart (seed {REFERENCE_SEED}; exact columns, "
                 f"no association; not private): overall {r.score:.3f}, column shapes {r.column_shapes_score:.3f}, "
                 f"column pair trends {_trends(r.column_pair_trends_score)}",
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
                 "total variation distance per marginal (0 = identical, 1 = disjoint; shuffled: the reference's "
                 "mean):",
                 f"{'order':>5}  {'marginals':>9}  {'mean':>6}  {'median':>6}  {'max':>6}  {'shuffled':>8}"]
        for row in self.summary().itertuples():
            lines.append(f"{row.order:>5}  {row.marginals:>9}  {row.mean:6.3f}  {row.median:6.3f}  {row.max:6.3f}  "
                         f"{row.shuffled:8.3f}")
        for order in sorted(self.errors["order"].unique()):
            rows = self.errors[self.errors["order"] == order].head(worst)
            lines.append(f"worst {order}-way: " + ", ".join(f"{' x '.join(m)} {t:.3f}"
                                                           for m, t in zip(rows["marginal"], rows["tvd"])))
        if self.advice:
            source = "the schema of --model, else the synthetic table" if self.release else \
                "the synthetic table (--model adds its schema's)"
            lines.append(f"what to do (columns with a 1-way TVD above {ADVICE_TVD:g}, or left out; causes read from "
                         f"{source}):")
            lines += [f"  {advice.text()}" for advice in self.advice]
        for check in (self.efficacy, self.disclosure):
            if check is not None:
                lines += ["", check.text()]
        return "\n".join(lines)

    # figures and writing -------------------------------------------------------------------------
    def figures(self, worst: int = 4) -> dict:
        """The report's matplotlib Figures by name
        (:func:`~ektelo_pgm.evaluation.figures.evaluation_figures`)."""
        return evaluation_figures(self, worst)

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
                 "<h2>Error distribution</h2>", png_tag(figures["errors"]),
                 "<h2>1-way marginals</h2>", png_tag(figures["oneway"]), png_tag(figures["oneway_all"])]
        if "twoway" in figures:
            parts += ["<h2>2-way marginals</h2>", png_tag(figures["twoway"])]
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
    (:func:`advise`), its columns of times are compared on the time axis and those of numbers
    written with symbols as numbers (without it, those the real table holds: :func:`time_columns`,
    :func:`number_columns`), those it writes as categories (codes, ids; without it, those the
    synthetic table writes with text: :func:`category_columns`) by value, and the columns it was
    told to drop or regenerate are not compared.  ``holdout``: real rows the synthesizer
    never saw (a DataFrame or a path), for the privacy sanity checks and, with ``target`` (a
    column), the machine-learning efficacy (:mod:`ektelo_pgm.evaluation.holdout`; ``real`` is
    then the training part).  Writes the HTML report to ``out`` and the figures as PNGs
    ``{png}-{name}.png`` when given (``png`` ending in ``.png`` loses that suffix).  Not
    private: see the module's docstring.
    """
    orders = sorted(set(int(k) for k in orders))
    if not orders or orders[0] < 1 or orders[-1] > 3:
        raise InputError(f"orders must be among 1, 2 and 3, got {orders}")
    if out is not None or png is not None:
        matplotlib_figure()  # refuse before any work when the figures cannot be drawn
    import pandas as pd

    from ..table_io import has_header, is_parquet, read_table

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
        from ..synthesizer import Synthesizer
        model = Synthesizer.load(model)
    chosen = set() if model is None else set(model.regenerate) | set(model.drop)  # the user's choice
    present = {str(c) for c in synthetic.columns} - chosen
    absent = [str(c) for c in real.columns if str(c) not in present and str(c) not in chosen]
    real_compared = real[[c for c in real.columns if str(c) in present]]
    if real_compared.shape[1] == 0:
        raise InputError("the synthetic table has none of the real table's columns")
    kinds = {} if schema is None else {c: k for c, k in kinds_of(schema).items() if c in present}
    if model is not None:  # what the model writes as categories (codes, ids) compared by value
        kinds = {**{name: "categorical" for name, column in model.encoder.columns.items()
                    if column.kind == "categorical" and name in present}, **kinds}
    # columns of times, and of numbers written with symbols, compared as numbers (times on the
    # time axis): the model's, else those of the real table
    fitted = {} if model is None else {name: column for name, column in model.encoder.columns.items()
                                       if column.kind == "numeric" and name in present}
    times = time_columns(real_compared, kinds) if model is None else \
        {name: column.time_format for name, column in fitted.items() if column.time_format is not None}
    formats = {**times, **(number_columns(real_compared, {**kinds, **times}) if model is None else
                           {name: column.number_format for name, column in fitted.items()
                            if column.number_format is not None})}
    if model is None:  # what the synthetic table writes as categories (ids with a label for the rare ones)
        kinds = {**category_columns(synthetic[[c for c in synthetic.columns if str(c) in present]],
                                    {**kinds, **formats}), **kinds}
    real_compared, synthetic = (read_in_formats(frame, formats) for frame in (real_compared, synthetic))
    coding = Discretisation(real_compared, bins, {**kinds, **{name: "numeric" for name in formats}})
    coding.time_formats = times
    truth, fake = coding.codes(real_compared, "real table"), coding.codes(synthetic, "synthetic table")
    shuffled = Dataset(shuffled_apart(pd.DataFrame(truth.records)).to_numpy(), truth.domain)
    rows = []
    for k in orders:
        for attrs in itertools.combinations(coding.columns, k):
            rows.append((k, attrs, total_variation(truth, fake, attrs), total_variation(truth, shuffled, attrs)))
    errors = pd.DataFrame(rows, columns=["order", "marginal", "tvd", "shuffled"])
    errors = errors.sort_values(["order", "tvd"], ascending=[True, False], kind="stable").reset_index(drop=True)
    evaluation = Evaluation(coding, truth, fake, errors)
    evaluation.release = None if model is None else release(model)
    evaluation.advice = advise(evaluation, real_compared, synthetic, absent, model)
    kinds = {name: "numeric" if name in coding.edges else "categorical" for name in coding.columns}
    columns = list(real_compared.columns)
    train, made = as_compared(real_compared, kinds), as_compared(synthetic[columns], kinds)
    evaluation.quality = quality(train, made, kinds)
    evaluation.reference = quality(train, shuffled_apart(train), kinds)
    if holdout is not None:
        held = as_compared(read_in_formats(holdout[columns], formats), kinds)
        evaluation.disclosure = disclosure(train, held, made, kinds)
        if target is not None:
            evaluation.efficacy = ml_efficacy(train, held, made, target, kinds)
    if out is not None or png is not None:
        figures = evaluation.figures()
        if out is not None:
            evaluation.write_html(out, figures)
        if png is not None:
            png = os.fspath(png)
            evaluation.save_figures(png[:-4] if png.endswith(".png") else png, figures)
    return evaluation


def shuffled_apart(frame, seed: int = REFERENCE_SEED):
    """A copy of the DataFrame ``frame`` with each column permuted on its own (numpy's generator
    seeded with ``seed``, one permutation per column in order): every 1-way marginal as in
    ``frame``, any association between columns gone.  The reference a synthetic table's scores
    are read against; two frames of as many rows get the same permutations."""
    rng = np.random.default_rng(seed)
    return frame.apply(lambda column: column.iloc[rng.permutation(len(frame))].reset_index(drop=True)
                       ).set_axis(frame.index)


def release(model) -> str:
    """The release a fitted :class:`~ektelo_pgm.synthesizer.Synthesizer` made, in words: its
    settings (mechanism, epsilon, delta, schema) and its ledger, the budget spent by the schema,
    the measurements and the private selections, in the budget's unit."""
    parts = {}
    for charge in model.ledger:
        part = ("schema" if (charge.label or "").startswith("schema") else
                "selection" if charge.mechanism == "exponential" else "measurements")
        amount, count = parts.get(part, (0, 0))
        parts[part] = amount + charge.amount, count + 1
    spent = ", ".join(f"{part} {float(amount):.6g} ({count} charge{'s' * (count != 1)})"
                      for part, (amount, count) in parts.items())
    return (f"{model.settings()}; ledger: {model.unit} {float(model.spent):.6g} spent of {float(model.total):.6g}"
            f"{': ' + spent if spent else ''}")



def advise(evaluation: Evaluation, real, synthetic, absent: Sequence[str], model=None) -> tuple:
    """:class:`Advice` for each column of ``absent`` (not in the synthetic table) and each whose
    1-way TVD exceeds ``ADVICE_TVD``, worst first.  The cause is read from the fitted ``model``
    where given (why a column was left out; a numeric column's range that clips more than
    ``CLIPPED_SHARE`` of the real values and half its TVD, or bins too few for it where it is
    compared in bins; a categorical column whose categories too rare to release make more than
    ``OTHER_SHARE`` of the synthetic rows, or without an other code of the real rows, written as
    its fallback); else, and where none of these shows, from the synthetic table itself
    (:func:`_table_cause`)."""
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
        binned = name in evaluation.discretisation.edges  # else compared value by value
        found = _model_cause(columns.get(name), real[name], synthetic[name], tvd, binned)
        out.append(Advice(name, float(tvd), *(found or _table_cause(evaluation, name, real[name], synthetic[name]))))
    return tuple(out)


#: Remedies of the causes found (:func:`_model_cause`, :func:`_table_cause`).
NOISE = "most likely the mechanism's noise: raise --epsilon, or leave out columns you do not need (--drop)"
BOUNDS = "declare its bounds (--metadata, or --schema), or raise --schema-share"
CATEGORIES = ("declare its categories public (--public-categories) if they are, or in a schema; "
              "or raise --schema-share")


def _model_cause(column, real, synthetic, tvd: float, binned: bool) -> tuple[str, str] | None:
    """``(cause, remedy)`` of a column far from the real one (1-way TVD ``tvd``; ``binned``: compared
    in bins, not value by value) that its schema ``column`` (None without a model) explains, or None."""
    if column is None:
        return None
    if column.kind == "numeric" and column.time_format is None:
        numbers = _as_numbers(real)
        numbers = numbers[~np.isnan(numbers)]
        lo, hi = float(column.edges[0]), float(column.largest)  # the values it writes, as its note says
        clipped = float(np.mean((numbers < lo) | (numbers > hi))) if numbers.size else 0.0
        if clipped > max(CLIPPED_SHARE, tvd / 2):
            return f"its range [{edge_label(lo)}, {edge_label(hi)}] clips {clipped:.0%} of the real values", BOUNDS
        if column.bins < 8 and binned:
            return (f"bins too coarse for its range ({column.bins} over [{edge_label(lo)}, {edge_label(hi)}])",
                    "declare its bounds and bins in a schema (--schema), or raise --schema-share")
    if column.kind == "categorical" and column.other is not None:
        share = float(np.mean(synthetic.astype(object) == column.other))
        if share > OTHER_SHARE:
            return (f"categories too rare to release are {share:.0%} of the synthetic rows, as {column.other!r}",
                    CATEGORIES)
    if column.kind == "categorical" and column.other is None and not column.others_missing:
        index, values = distinct(real)
        known = {label(c) for c in column.categories}
        share = float(np.mean(np.isin(index, [k for k, v in enumerate(values) if label(v) not in known])))
        if share > OTHER_SHARE:
            return (f"categories too rare to release, {share:.0%} of the real rows, are written as "
                    f"{label(column.categories[column.fallback_code])!r}", CATEGORIES)
    return None


def _table_cause(evaluation: Evaluation, name: str, real, synthetic) -> tuple[str, str]:
    """``(cause, remedy)`` of column ``name`` read from its ``real`` and ``synthetic`` values: a
    synthetic column holding one value; else what accounts for at least half of its TVD: real
    numbers beyond the synthetic range (clipped: they pile up in the bin of the range's end), or
    the cell of its 1-way marginal whose share differs most, named by what it is (values the
    real table lacks: the other label or non-numbers; blanks; an end bin of a numeric column,
    values piled at or clipped from the end of its range; another bin or category); a gap spread
    over many cells (most likely noise) otherwise."""
    coding = evaluation.discretisation
    labels = coding.labels(name)
    p, q = evaluation.marginals((name,))
    index, values = distinct(synthetic)
    if len(values) == 1 and np.count_nonzero(p[:-2]) > 1:
        held = float(np.mean(index >= 0))
        return (f"the synthetic column holds one value, {label(values[0])!r} ({held:.0%} of its rows, the rest "
                "blank)" if held < 1 else f"the synthetic column holds one value, {label(values[0])!r}",
                "declare it in a schema (--schema), or raise --epsilon")
    gaps = np.abs(q - p)
    tvd = 0.5 * float(gaps.sum())
    cell = int(np.argmax(gaps))
    numeric = name in coding.edges
    if numeric:  # the real numbers the synthetic range leaves out
        made = _as_numbers(synthetic)
        made = made[~np.isnan(made)]
        if made.size:
            lo, hi = float(made.min()), float(made.max())
            truth = _as_numbers(real)
            truth = truth[~np.isnan(truth)]
            beyond = float(np.mean((truth < lo) | (truth > hi))) if truth.size else 0.0
            other_cause = labels[cell] in (OTHER, MISSING) and gaps[cell] > beyond  # the clipped pile in a bin
            if beyond > CLIPPED_SHARE and beyond >= tvd / 2 and not other_cause:
                return (f"the synthetic values stay within [{coding.value_label(name, lo)}, "
                        f"{coding.value_label(name, hi)}], beyond which lie {beyond:.0%} of the real values: clipped",
                        BOUNDS)
    shares = f"{_percent(q[cell])} of the synthetic rows against {_percent(p[cell])} of the real ones"
    what = "bin" if numeric else "category"
    if gaps[cell] < tvd / 2:
        return (f"the gap is spread over its {np.count_nonzero(gaps)} cells (the largest: {what} {labels[cell]} "
                f"holds {shares})", NOISE)
    if labels[cell] == OTHER:
        counts = np.bincount(index[index >= 0], minlength=len(values))
        unknown = [k for k, v in enumerate(values) if _is_other(coding, name, v)]
        most = label(values[max(unknown, key=lambda k: counts[k])]) if unknown else OTHER
        what = "values that are not numbers" if numeric else "values the real table lacks"
        return f"{what} are {q[cell]:.0%} of the synthetic rows (most often {most!r})", CATEGORIES
    if labels[cell] == MISSING:
        return f"blanks are {shares}", "declare its range or categories in a schema (--schema), or raise --schema-share"
    if numeric and cell in (0, len(labels) - 3):
        end = "lowest" if cell == 0 else "highest"
        how = "values piled at the end of its range" if q[cell] > p[cell] else "values clipped from its range"
        return f"its {end} bin ({labels[cell]}) holds {shares}: {how}", BOUNDS
    return f"its {what} {labels[cell]} holds {shares}", NOISE


def _percent(share: float) -> str:
    """A share in percent: whole ones from 10%, one decimal below (a small cell shows)."""
    return f"{share:.0%}" if share >= 0.1 or share == 0 else f"{share:.1%}"


def _as_numbers(column) -> np.ndarray:
    """A column's values as float64, NaN where missing or not a number."""
    index, values = distinct(column)
    numbers = np.array([number(v) for v in values] + [np.nan], dtype=float)
    return numbers[index]  # index -1 (missing): the NaN appended


def _is_other(coding: Discretisation, name: str, value) -> bool:
    """Whether ``value`` (a column's distinct value, not missing) falls in the other cell of
    ``name``: a category the real table lacks, or a non-number in a numeric column."""
    if name in coding.edges:
        return bool(np.isnan(number(value)))
    return label(value) not in coding.categories[name]


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

    from ..operators import measure, select
    from ..plans import compare as compare_operators
    from ..privacy import Budget
    from ..workload import kway_marginals

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
        fig = comparison_figure(table, title)
        path = os.fspath(out)
        if path.endswith(".html"):
            with atomic_write(path) as f:
                f.write(f"<!doctype html><html><head><meta charset='utf-8'><title>Reconstructions compared</title>"
                        f"</head><body style='font-family:sans-serif'><h1>Reconstructions compared</h1>"
                        f"<p>{html.escape(title)}</p>{png_tag(fig)}"
                        f"{table.to_html(index=False, float_format=lambda x: f'{x:.4g}')}</body></html>")
        else:
            with atomic_write(path, "wb") as f:
                fig.savefig(f, format="png", dpi=100)
    return table
