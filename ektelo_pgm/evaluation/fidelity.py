"""Fidelity scores of a synthetic table, as SDMetrics's quality report defines them: how well
each column's distribution (column shapes) and each pair's trend (column pair trends) survive.

Every score is in [0, 1], 1 when the two tables agree on it:

- per column (:func:`column_shapes`): *KSComplement*, 1 minus the two-sample
  Kolmogorov-Smirnov statistic (the largest gap between the two empirical CDFs, each number
  rounded to 14 decimals first so that float noise makes no gap) for a numeric column, a
  date/time column as nanoseconds since 1970; *TVComplement*, 1 minus the total variation
  distance of the two tables' category shares, for a categorical one.  Missing values (NaN,
  None, NaT) are left out of each table.
- per pair of columns (:func:`column_pair_trends`): *CorrelationSimilarity*,
  ``1 - |r_real - r_synthetic| / 2`` with r Pearson's correlation over the rows where both
  are present, for two numeric columns; *ContingencySimilarity*, 1 minus the total variation
  distance of the two tables' contingency tables (shares of rows, a missing value a category
  of its own) for the others, a numeric column cut, in both tables, into the ten equal-width
  bins between the *real* table's minimum and maximum, the two end bins open (values beyond
  the real range fall in them).  Both as SDMetrics defines them (its ``ContingencySimilarity``
  with ``continuous_column_names``).  SDMetrics's quality report instead cuts each table on its
  own range: a column whose outliers differ (a real maximum far above the synthetic one) then
  falls in different bins in each table, and a pair scores near 0 however alike its rows are
  (CPS1988's wage against each category: 0.26, where its 2-way TVD is at most 0.09).
- :func:`quality`: their means.  Column pair trends averages, by default, only the pairs
  whose trend in the real table is strong (|r| above 0.5, Cramér's V above 0.3), as
  SDMetrics's quality report does since 2026; thresholds of 0 average every pair, as it did
  before.  The overall score is the mean of the two.

A score that is undefined (a column without values in one table, a column constant in a
correlation) is NaN and left out of the means.  Unlike SDMetrics, which samples 50,000 rows of
larger tables for a contingency score, every row counts.

Not private, like :mod:`ektelo_pgm.evaluation.report`: the scores read the real table freely.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError
from .discretisation import Discretisation, kinds_of

#: Decimals kept of a number before its KS statistic.
DECIMALS = 14
#: Equal-width bins of a numeric column in a contingency score.
PAIR_BINS = 10
#: Defaults of :func:`quality`: a pair counts in the pair-trends mean when its real |r|, or its
#: real Cramér's V, exceeds these.
CORRELATION_THRESHOLD = 0.5
ASSOCIATION_THRESHOLD = 0.3


@dataclass(frozen=True)
class _Column:
    """One column of both tables: ``numbers`` (float64, NaN missing; numeric columns) or
    ``codes`` (category indices shared by both tables, -1 missing; categorical columns), each a
    ``(real, synthetic)`` pair, and ``time`` when the numbers are nanoseconds since 1970."""

    kind: str
    numbers: tuple = ()
    codes: tuple = ()
    categories: int = 0
    time: bool = False

    def cells(self) -> tuple[tuple[np.ndarray, np.ndarray], int]:
        """``((real, synthetic), size)``: each row's cell of a contingency table, in 0..size-1."""
        if self.kind == "categorical":  # missing: a cell of its own, after the categories
            return tuple(np.where(c < 0, self.categories, c) for c in self.codes), self.categories + 1
        edges = _pair_edges(self.numbers[0])
        return tuple(np.digitize(x, edges) for x in self.numbers), PAIR_BINS + 2


def _pair_edges(real: np.ndarray) -> np.ndarray:
    """The PAIR_BINS equal-width bins over the range of the ``real`` numbers (NaN left out), its
    first and last edges moved to -inf and inf: numpy's ``digitize`` over them puts a number in
    cell 1..PAIR_BINS, NaN in cell PAIR_BINS+1 (cell 0 stays empty)."""
    edges = np.histogram_bin_edges(real[~np.isnan(real)], bins=PAIR_BINS)
    edges[0], edges[-1] = -np.inf, np.inf
    return edges


def _numbers(column, name: str, what: str) -> tuple[np.ndarray, bool]:
    """``(values, time)``: ``column`` as float64 (NaN: missing), date/times as nanoseconds
    since 1970 (``time`` True)."""
    if pd.api.types.is_datetime64_any_dtype(column):
        if getattr(column.dt, "tz", None) is not None:
            column = column.dt.tz_convert("UTC").dt.tz_localize(None)
        stamps = column.to_numpy(dtype="datetime64[ns]")
        values = stamps.astype(np.int64).astype(float)
        values[np.isnat(stamps)] = np.nan
        return values, True
    try:
        values = pd.to_numeric(column).to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError):
        raise InputError(f"column {name!r} is numeric but the {what} holds values that are not numbers "
                         "(date/times: convert them with pandas.to_datetime first)") from None
    if np.isinf(values).any():
        raise InputError(f"column {name!r}: the {what} holds infinite numbers")
    return values, False


def _kinds(real, kinds) -> dict:
    """``{column: kind}``: ``kinds`` read by :func:`~ektelo_pgm.evaluation.discretisation.kinds_of`,
    or, None, the kinds :class:`~ektelo_pgm.evaluation.discretisation.Discretisation` gives the real
    table's columns, a column it takes for numeric staying so only when its type is a number's;
    date/time columns numeric."""
    if kinds is not None:
        return kinds_of(kinds)
    numeric = set(Discretisation(real).edges)
    out = {}
    for column in real.columns:
        values = real[column]
        number = str(column) in numeric and pd.api.types.is_numeric_dtype(values)
        time = pd.api.types.is_datetime64_any_dtype(values)
        out[str(column)] = "numeric" if number or time else "categorical"
    return out


def _prepare(real, synthetic, kinds) -> dict:
    """``{name: _Column}`` of the columns of ``kinds``, in its order, after checking both tables."""
    for what, frame in (("real", real), ("synthetic", synthetic)):
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"the {what} table must be a pandas DataFrame, got {type(frame).__name__}")
        if len(frame) == 0:
            raise InputError(f"the {what} table has no rows")
    kinds = _kinds(real, kinds)
    if not kinds:
        raise InputError("no columns to compare")
    tables = {}
    for what, frame in (("real", real), ("synthetic", synthetic)):
        names = {str(c): c for c in frame.columns}
        absent = [c for c in kinds if c not in names]
        if absent:
            raise InputError(f"the {what} table lacks the columns {absent}")
        tables[what] = {c: frame[names[c]] for c in kinds}
    columns = {}
    for name, kind in kinds.items():
        pair = tables["real"][name], tables["synthetic"][name]
        if kind == "numeric":
            (x, time), (y, _) = (_numbers(c, name, what) for c, what in zip(pair, ("real table", "synthetic table")))
            columns[name] = _Column(kind, numbers=(x, y), time=time)
        else:
            codes, categories = pd.factorize(pd.concat([pd.Series(c.to_numpy(dtype=object)) for c in pair],
                                                       ignore_index=True))
            codes = np.asarray(codes, dtype=np.int64)
            columns[name] = _Column(kind, codes=(codes[:len(pair[0])], codes[len(pair[0]):]),
                                    categories=len(categories))
    return columns


# ----------------------------------------------------------------------------------------------
# The scores
# ----------------------------------------------------------------------------------------------


def _ks_complement(real: np.ndarray, synthetic: np.ndarray) -> float:
    """1 minus the two-sample Kolmogorov-Smirnov statistic of two samples of numbers (NaN:
    missing, left out), in [0, 1]; NaN when either has no number."""
    a, b = (np.sort(np.asarray(x, dtype=float)) for x in (real, synthetic))
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if not a.size or not b.size:
        return float("nan")
    points = np.concatenate([a, b])
    gap = np.searchsorted(a, points, side="right") / a.size - np.searchsorted(b, points, side="right") / b.size
    return 1.0 - float(np.abs(gap).max())


def shares_distance(real: np.ndarray, synthetic: np.ndarray, cells: int) -> float:
    """The TVD of the shares of two arrays of cell codes in ``0..cells-1``: counted over every
    cell where there are at most as many cells as codes, else over the cells present (memory in
    proportion to the rows: the pairs of two columns of 9,000 categories have 81 million cells)."""
    if cells <= real.size + synthetic.size:
        return 0.5 * float(np.abs(_shares(real, cells) - _shares(synthetic, cells)).sum())
    present, at = np.unique(np.concatenate([real, synthetic]), return_inverse=True)
    weights = np.concatenate([np.full(real.size, 1.0 / real.size), np.full(synthetic.size, -1.0 / synthetic.size)])
    return 0.5 * float(np.abs(np.bincount(at, weights, minlength=present.size)).sum())


def _shares(codes: np.ndarray, size: int) -> np.ndarray | None:
    counts = np.bincount(codes, minlength=size).astype(float)
    total = counts.sum()
    return counts / total if total else None


def _tv_complement(real: np.ndarray, synthetic: np.ndarray, size: int) -> float:
    """1 - TVD of the shares of the category codes 0..size-1 (negative codes left out)."""
    p, q = _shares(real[real >= 0], size), _shares(synthetic[synthetic >= 0], size)
    if p is None or q is None:
        return float("nan")
    return 1.0 - 0.5 * float(np.abs(p - q).sum())


def _correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r over the rows where both are present; NaN under two rows or a constant."""
    both = ~(np.isnan(x) | np.isnan(y))
    x, y = x[both], y[both]
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    x, y = x - x.mean(), y - y.mean()
    x, y = x / np.abs(x).max(), y / np.abs(y).max()  # tiny or huge numbers neither underflow nor overflow
    r = float(x @ y) / float(np.sqrt(x @ x) * np.sqrt(y @ y))
    return min(1.0, max(-1.0, r))


def _cramers_v(a: np.ndarray, b: np.ndarray, a_size: int, b_size: int) -> float:
    """Cramér's V (no continuity correction) of the pairs of codes ``a`` (in 0..a_size-1) and
    ``b``; NaN under two rows or columns holding counts.  Its chi-square is summed over the
    cells present, ``n (sum O^2 / (R C) - 1)``: memory in proportion to the rows."""
    rows, columns = np.bincount(a, minlength=a_size).astype(float), np.bincount(b, minlength=b_size).astype(float)
    shape = min(np.count_nonzero(rows), np.count_nonzero(columns))
    if shape < 2:
        return float("nan")
    present, counts = np.unique(a * b_size + b, return_counts=True)
    chi2 = a.size * (float((counts.astype(float) ** 2 / (rows[present // b_size] * columns[present % b_size])).sum())
                     - 1.0)
    return float(np.sqrt(max(chi2, 0.0) / a.size / (shape - 1)))


def _pair(first: _Column, second: _Column) -> tuple[str, float, float]:
    """``(metric, score, real association)`` of two prepared columns."""
    if first.kind == second.kind == "numeric":
        r, s = (_correlation(x, y) for x, y in zip(first.numbers, second.numbers))
        return "CorrelationSimilarity", 1.0 - abs(r - s) / 2, r
    (a_real, a_fake), a_size = first.cells()
    (b_real, b_fake), b_size = second.cells()
    score = 1.0 - shares_distance(a_real * b_size + b_real, a_fake * b_size + b_fake, a_size * b_size)
    return "ContingencySimilarity", score, _cramers_v(a_real, b_real, a_size, b_size)


def _shapes_table(columns: dict):
    rows = []
    for name, column in columns.items():
        if column.kind == "numeric":
            x, y = column.numbers if column.time else (np.round(v, DECIMALS) for v in column.numbers)
            rows.append((name, "KSComplement", _ks_complement(x, y)))
        else:
            rows.append((name, "TVComplement", _tv_complement(*column.codes, column.categories)))
    return pd.DataFrame(rows, columns=["column", "metric", "score"]).astype({"score": float})


def _pairs_table(columns: dict):
    rows = [((a, b), *_pair(columns[a], columns[b])) for a, b in itertools.combinations(columns, 2)]
    table = pd.DataFrame(rows, columns=["columns", "metric", "score", "real_association"])
    return table.astype({"score": float, "real_association": float})


def column_shapes(real, synthetic, kinds=None):
    """Per column, how alike its distribution is in ``real`` and ``synthetic`` (DataFrames with
    the original column types): a DataFrame with ``column``, ``metric`` (KSComplement for a
    numeric column, TVComplement for a categorical one) and ``score`` in [0, 1] (1: identical;
    NaN: undefined), as SDMetrics's quality report defines them (see the module's docstring).

    ``kinds``: ``{column: "numeric" | "categorical"}``, a TableEncoder or the path of a saved
    schema (:func:`~ektelo_pgm.evaluation.discretisation.kinds_of`) names the columns scored; None
    scores every column of ``real``, of the kind the report's discretisation gives it.  Extra
    columns of ``synthetic`` are ignored; one it lacks is an error."""
    return _shapes_table(_prepare(real, synthetic, kinds))


def column_pair_trends(real, synthetic, kinds=None):
    """Per pair of columns, how alike its trend is in ``real`` and ``synthetic``: a DataFrame
    with ``columns`` (a tuple of two names, in the order of ``kinds``), ``metric``
    (CorrelationSimilarity for two numeric columns, ContingencySimilarity otherwise), ``score``
    in [0, 1] (1: identical; NaN: undefined) and ``real_association``, the pair's trend in the
    real table (Pearson's r, in [-1, 1], or Cramér's V, in [0, 1]), as SDMetrics's quality report
    defines them (see the module's docstring).  ``kinds`` as for :func:`column_shapes`."""
    return _pairs_table(_prepare(real, synthetic, kinds))


@dataclass(frozen=True, eq=False)
class Quality:
    """The scores of :func:`quality`: the per-column and per-pair tables (the pairs' with a
    column ``counted``: whether it enters the mean) and their means, all in [0, 1] (1: the
    synthetic table matches the real one on every score; NaN: nothing to average)."""

    column_shapes: object  # pandas.DataFrame: column, metric, score
    column_pair_trends: object  # pandas.DataFrame: columns, metric, score, real_association, counted
    column_shapes_score: float
    column_pair_trends_score: float
    score: float  # the mean of the two above (of the one that is a number)


def _mean(scores) -> float:
    scores = np.asarray(scores, dtype=float)
    scores = scores[~np.isnan(scores)]
    return float(scores.mean()) if scores.size else float("nan")


def quality(real, synthetic, kinds=None, correlation_threshold: float = CORRELATION_THRESHOLD,
            association_threshold: float = ASSOCIATION_THRESHOLD) -> Quality:
    """Column shapes, column pair trends and the overall score of ``synthetic`` against
    ``real``, means as SDMetrics's quality report takes them: column shapes over every column,
    pair trends over the pairs whose real |Pearson's r| exceeds ``correlation_threshold``
    (numeric pairs) or whose real Cramér's V exceeds ``association_threshold`` (the others); a
    threshold of 0 counts every pair of its metric.  ``kinds`` as for :func:`column_shapes`."""
    for name, value in (("correlation_threshold", correlation_threshold),
                        ("association_threshold", association_threshold)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise InputError(f"{name} must be a number in [0, 1], got {value!r}")
    columns = _prepare(real, synthetic, kinds)
    shapes, pairs = _shapes_table(columns), _pairs_table(columns)
    strength = pairs["real_association"].to_numpy(dtype=float)
    correlated = pairs["metric"].to_numpy() == "CorrelationSimilarity"
    threshold = np.where(correlated, correlation_threshold, association_threshold)
    with np.errstate(invalid="ignore"):
        strong = np.where(correlated, np.abs(strength), strength) > threshold
    pairs["counted"] = (threshold <= 0) | strong
    shapes_score = _mean(shapes["score"])
    trends_score = _mean(pairs.loc[pairs["counted"], "score"])
    return Quality(shapes, pairs, shapes_score, trends_score, _mean([shapes_score, trends_score]))
