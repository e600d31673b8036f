"""A table's schema (kinds, categories, bins) inferred privately, or read from what a user declares.

:func:`infer` learns a :class:`~ektelo_pgm.encoding.TableEncoder` for a raw table without
any declared metadata, reading the data only through one noisy histogram per column
(discrete Gaussian noise on a rho-zCDP budget, discrete Laplace on a pure one).  Every record
adds one to at most five counts of its column, so the histogram's L2 sensitivity is sqrt(5)
(L1: 5):

* its *kind*: missing, text, whole number or fractional number;
* its *value*: one count per distinct value present (strings stripped, numbers parsed).  A
  value is released only when its noisy count reaches a threshold ``tau`` that a value held by
  one record passes with probability at most ``delta_c`` (the stability-based histogram of
  Korolova et al. 2009 / Bun, Nissim and Stemmer 2016; ``tau`` from a tail bound of the
  discrete noise, :func:`noise_tail`).  The ``delta_c`` of the columns add up
  to the ``delta`` given: the release is ``delta``-approximately rho-zCDP (Bun and Steinke
  2016, Def. 8.1), and composes with the zCDP of a mechanism by adding rho and delta;
* for numbers, its *decade* ``[10^k, 10^(k+1))``, its *tenth* ``[m 10^k, (m+1) 10^k)`` and its
  *cell* at two significant digits (``[17, 18)``, ``[1.5e4, 1.6e4)``): a fixed, data-independent
  grid (negatives mirrored, zero apart, ``k`` in DECADES).

Everything else is post-processing of those noisy counts:

* a column *of numbers* has nearly only numbers (at most ``TEXT_SHARE`` text, up to
  ``NOISE_Z`` noise stds) and released values that are all numbers; it holds *whole numbers*
  when at most ``TEXT_SHARE`` of its numbers are fractional (likewise);
* the *range* of a column of numbers: the decades whose noisy count reaches ``DECADE_Z``
  noise stds (under Laplace noise: the count that an empty decade passes as rarely,
  ``DECADE_MISS``) are kept; for a column coded integer by integer (below), where every
  integer of the range costs a code, the range starts in the lowest, in the first of its
  tenths where the running noisy count surely begins (``RANGE_Z`` stds), at the cell of that
  tenth's noisy median, and ends likewise in the highest, so that it lies inside the numbers'
  range with high probability; a binned column's range starts at the first tenth whose own
  noisy count reaches ``RANGE_Z`` stds (``RANGE_MISS`` under Laplace noise) and ends at the
  end of the last such tenth, so that no tenth surely holding numbers is clipped and the range
  passes the numbers by less than a tenth, which only widens an end bin (on Adult's fnlwgt
  at the steward's default budget 1.7% of the rows are clipped, against 8.3% with the rule of
  whole-number spans: mean of 20 seeds);
* a column of whole numbers is coded *integer by integer* when its *span*, the integers of its
  range (rounded inwards) widened to its released values, holds at most ``WHOLE_CODES * bins``
  integers: one code per integer of the span, whatever its count, numbers outside it clipped
  to its ends; unless its released values are exactly those integers, at most ``bins`` of
  them and covering it (below): then it is categorical, with the same codes.  The span
  depends on the data only through the noisy counts and the released values, so it costs
  nothing more and needs no stability threshold: a rare code inside it (a pay band or a name
  code held by a few records) keeps its identity, and the clipping of a record outside it
  depends on that record alone;
* any other column of numbers is *numeric* when its released values are either more than
  ``bins`` or cover less than ``1 - TAIL_SHARE`` of it (a long tail of rare numbers); the
  remaining columns are *categorical*, with their released values as categories;
* a numeric column's bins: a released value holding at least ``1 / bins`` of the column is a
  *point mass*, its own bin (0 in a zero-inflated column stays exactly 0); the others are
  taken out of the counts, the range placed as above, and the inner bin edges are quantiles
  of the kept counts;
* a categorical column whose values not released are surely many (``NOISE_Z`` stds of their
  noisy count) codes them together as one category, labelled ``other`` (never a blank); a
  column has a missing code only when the records it cannot code otherwise (missing, text in a
  numeric column, categories not released where there is no other code) are noticeably many; a
  value needing a code its column lacks gets the column's first code (:func:`encoded`: no
  record is ever dropped);
* a column of which nothing can be released (no value frequent enough: an identifier, free
  text, a column almost always missing) raises :class:`Unreleasable`, or is left out with its
  reason (``left_out``).

:func:`declared` reads a schema a user wrote, in either of two forms: the JSON that
:meth:`TableEncoder.to_dict` writes (``"format": "ektelo_pgm.TableEncoder"``), or the short
form ``{"columns": {name: spec}}`` where ``spec`` is
``{"kind": "categorical", "categories": [...]}`` (with ``"other": "label"``, values outside the
categories get a code of their own with that label) or
``{"kind": "numeric", "bounds": [lo, hi], "bins": 16}`` (whole numbers when both bounds are
integers; ``bins`` optional) or ``{"kind": "numeric", "edges": [...], "integer": true}``, each
with an optional ``"missing": false`` when the column is never missing (by default it may be:
values outside the categories are then encoded as missing, and missing values come out; with
false such values get the column's first code, see :func:`encoded`).
Reading a declared schema spends nothing.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from . import progress
from .dataset import Dataset
from .encoding import (CategoricalColumn, NumericColumn, TableEncoder, _as_frame, _canonical_value, _pandas, _python,
                       as_float, canonical)
from .privacy import Budget, gaussian, laplace

#: A record adds one to five counts of its column: kind, value, decade, tenth, cell.
COUNTS_PER_RECORD = 5
#: A column is numeric only if at most this share of its present values is text.
TEXT_SHARE = 0.01
#: A noisy count below this many noise stds may well be zero.
NOISE_Z = 3.0
#: A column gets a missing code when the records it cannot code otherwise number this many stds.
MISSING_Z = 1.0
#: A column whose released values miss more than this share of it has a tail: numeric.
TAIL_SHARE = 0.02
#: Noise stds a decade's count must reach to be kept under Gaussian noise (an empty one of the
#: 37 passes with probability about 1e-4).
DECADE_Z = 4.5
#: The probability with which an empty decade passes that bar; under Laplace noise, whose tails
#: are heavier, the bar is set by this probability instead (4.5 stds would let 3% of columns
#: keep a spurious decade and stretch their range by orders of magnitude).
DECADE_MISS = 0.5 * math.erfc(DECADE_Z / math.sqrt(2.0))
#: A column's range starts where the running noisy count exceeds this many of its noise stds; a
#: binned column's, at a tenth of a decade whose noisy count reaches as many (under Laplace noise:
#: the count that an empty tenth passes as rarely, ``RANGE_MISS``).
RANGE_Z = 3.0
RANGE_MISS = 0.5 * math.erfc(RANGE_Z / math.sqrt(2.0))
#: Decades ``10^k`` covered, ``k`` in this range; smaller magnitudes share one cell, larger ones another.
DECADES = range(-4, 13)
#: Default bins of a numeric column.
BINS = 32
#: Default label of the code that stands for a categorical column's values not released.
OTHER = "(other)"
#: A column of whole numbers spanning at most this many times ``bins`` integers gets one code
#: per integer (1,024 at the default 32 bins: a name or zip code, not an amount of money).  Two
#: such columns make a 2-way marginal of about a million cells (8 MB of float64), which every
#: mechanism here measures; AIM leaves out larger 3-way candidates by its model-size cap.
WHOLE_CODES = 32
KINDS = ("missing", "text", "whole", "fractional")
#: Relative slack on the noise's tail bound against floating-point rounding (of the noise
#: parameter, exp and erfc: about 1e-14 here).
TAIL_MARGIN = 1e-9


def _positive_edges() -> np.ndarray:
    """Lower edges of the positive cells (two significant digits in every decade of DECADES),
    then the top of the last decade."""
    mantissas = np.arange(10, 100) / 10.0
    return np.array([m * 10.0 ** k for k in DECADES for m in mantissas] + [10.0 ** DECADES.stop])


_P = _positive_edges()
#: Boundaries of the cells of the real line, ``(-inf, b0), [b0, b1), ..., [b_last, inf)``: the
#: negative cells mirror the positive ones, and zero is alone in ``[0, smallest positive float)``.
BOUNDARIES = np.concatenate([-_P[::-1], [0.0, np.nextafter(0.0, 1.0)], _P])
N_CELLS = len(BOUNDARIES) + 1
#: Lower and upper edge of each cell (the outer cells get the last finite boundary).
LOWER = np.concatenate([[BOUNDARIES[0]], BOUNDARIES])
UPPER = np.concatenate([BOUNDARIES, [BOUNDARIES[-1]]])


def _groups(per: int) -> np.ndarray:
    """Group index of each cell when the cells of every decade are grouped ``per`` at a time in
    order of magnitude (90: decades, 9 per decade: tenths, 1: cells); the negative groups mirror
    the positive ones; the outer cells and zero's neighbourhood are groups of their own."""
    magnitude = np.arange(len(_P) - 1) // per  # group of positive cell j, [P_j, P_j+1)
    top = int(magnitude[-1]) + 1
    # below, negatives (largest magnitude first), [-tiny, 0), zero, [tiny, P_0), positives, above
    return np.concatenate([[0], 1 + (top - 1 - magnitude[::-1]), [top + 1, top + 2, top + 3],
                           top + 4 + magnitude, [2 * top + 4]])


#: The levels of the histogram of numbers, coarse to fine: each cell's decade, tenth and cell.
LEVELS = (_groups(90), _groups(10), _groups(1))


def cell_of(numbers: np.ndarray) -> np.ndarray:
    """Cell index of each number: 0 below every boundary, ``len(BOUNDARIES)`` at or above the last."""
    return np.searchsorted(BOUNDARIES, numbers, side="right")


@dataclass(frozen=True)
class Release:
    """The noisy histogram of one column (counts): ``kinds`` (missing, text, whole, fractional),
    ``values`` (released value -> noisy count, those at or above ``threshold``), ``levels`` (the
    noisy counts of the numbers per decade, tenth and cell, see LEVELS), ``std``, the noise
    std of every count, ``decade_bar``, the noisy count a decade needs to be kept, and
    ``tenth_bar``, the noisy count that shows a tenth of a decade holds numbers."""

    name: str
    kinds: dict
    values: dict
    levels: tuple
    threshold: float
    std: float
    decade_bar: float
    tenth_bar: float


def release(name: str, values: np.ndarray, budget: Budget, amount, delta: float, rng) -> Release:
    """The noisy histogram of one column's :func:`~ektelo_pgm.encoding.canonical` values (see
    the module docstring), spending ``amount`` of ``budget`` (its unit) in one charge; values
    pass when their noisy count reaches the threshold that one record's value passes with
    probability at most ``delta``.  Infinite numbers count as fractional, in the outer cells."""
    pd = _pandas()
    present = np.array([v is not None for v in values], dtype=bool)
    whole = np.array([isinstance(v, int) for v in values], dtype=bool)
    number = whole | np.array([isinstance(v, float) for v in values], dtype=bool)
    kinds = np.array([(~present).sum(), (present & ~number).sum(), whole.sum(), (number & ~whole).sum()])
    counts = pd.Series(values[present], dtype=object).value_counts(sort=False)
    numbers = np.array([as_float(v) for v in values[number]], dtype=float)
    cells = np.bincount(cell_of(numbers), minlength=N_CELLS)
    levels = [np.bincount(group, weights=cells) for group in LEVELS]
    sizes = [4, len(counts)] + [level.size for level in levels]
    answers = np.concatenate([kinds, counts.to_numpy()] + levels).astype(float)
    label = f"schema of column {name!r}"
    if budget.notion == "zcdp":
        sensitivity = budget.sensitivity(math.sqrt(COUNTS_PER_RECORD))
        scale = sensitivity / math.sqrt(2.0 * float(amount))
        noisy = gaussian(answers, sensitivity, amount, rng, budget=budget, label=label)
        std = scale
    else:
        sensitivity = budget.sensitivity(COUNTS_PER_RECORD)
        scale = sensitivity / float(amount)
        noisy = laplace(answers, sensitivity, amount, rng, budget=budget, label=label)
        std = scale * math.sqrt(2.0)
    threshold = release_threshold(budget.notion, scale, delta)
    decade_bar = DECADE_Z * std if budget.notion == "zcdp" else release_threshold(budget.notion, scale, DECADE_MISS) - 1
    tenth_bar = RANGE_Z * std if budget.notion == "zcdp" else release_threshold(budget.notion, scale, RANGE_MISS) - 1
    kinds, values, *levels = np.split(noisy.astype(float), np.cumsum(sizes)[:-1])
    released = {key: c for key, c in zip(counts.index, values) if c >= threshold}
    return Release(name, dict(zip(KINDS, kinds)), released, tuple(levels), threshold, std, decade_bar, tenth_bar)


def release_threshold(notion: str, scale: float, delta: float) -> float:
    """The noisy count a value needs to be released: ``1 + t`` for the least whole ``t`` at which
    the noise ``X`` (integers) has ``P[X >= t] <= delta``, so that a value one record holds
    (count 1) passes with probability at most ``delta``; by :func:`noise_tail`."""
    tail = lambda t: noise_tail(notion, scale, t) * (1.0 + TAIL_MARGIN) <= delta  # noqa: E731
    hi = 1
    while not tail(hi):
        hi *= 2
    lo = 0  # tail(lo) fails or lo == 0; tail(hi) holds
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if tail(mid) else (mid, hi)
    return float(1 + (0 if tail(0) else hi))


def noise_tail(notion: str, scale: float, t: int) -> float:
    """An upper bound on ``P[X >= t]`` (``t >= 0`` whole) for the noise of the schema's counts.

    ``notion="zcdp"``: ``X`` is discrete Gaussian of parameter ``s = scale``, ``P[x] = exp(-x^2 /
    2 s^2) / Z`` (Canonne, Kamath and Steinke 2020).  Poisson summation gives ``Z = s sqrt(2 pi)
    sum_k exp(-2 pi^2 s^2 k^2) >= s sqrt(2 pi)``, and the decreasing terms after ``t`` sum to at
    most their integral from ``t``, so
    ``P[X >= t] <= exp(-t^2 / 2 s^2) / (s sqrt(2 pi)) + erfc(t / s sqrt 2) / 2``: the continuous
    Gaussian tail plus one density, below the sub-Gaussian ``exp(-t^2 / 2 s^2)`` by about
    ``t / s`` far out.  Otherwise ``X`` is discrete Laplace of scale ``s``, ``P[X >= t] = q^t /
    (1 + q)`` exactly, ``q = exp(-1 / s)``."""
    if notion == "zcdp":
        return math.exp(-t * t / (2.0 * scale * scale)) / (scale * math.sqrt(2.0 * math.pi)) \
            + 0.5 * math.erfc(t / (scale * math.sqrt(2.0)))
    return math.exp(-t / scale) / (1.0 + math.exp(-1.0 / scale))


class Unreleasable(ValueError):
    """Nothing of a column can be released privately at this budget (its message says why)."""


def column_from(r: Release, bins: int = BINS, kind: str | None = None, other: str = OTHER):
    """The column that the release ``r`` describes (post-processing only, module docstring):
    numeric with one bin per integer of its span, numeric with at most ``bins`` bins besides
    its point masses, or categorical; ``kind`` (``"categorical"`` or ``"numeric"``), where the
    user fixes it, overrides the choice (a numeric code of a category, numbers with few values).
    A categorical column whose values not released are noticeably many (``MISSING_Z`` stds of
    their noisy count) gets a code of its own for them, labelled ``other``; genuine missing
    values keep the missing code.  Raises :class:`Unreleasable` when nothing can be released.

    It gets a missing code only when the records it could not encode otherwise (missing values,
    and text in a numeric column or categories not released in a categorical one) are
    noticeably many: at least ``MISSING_Z`` stds of their noisy count (the others get the
    column's first code, see :func:`encoded`)."""
    text, whole, fractional = (max(r.kinds[k], 0.0) for k in ("text", "whole", "fractional"))
    present = max(text + whole + fractional, 1.0)
    covered = sum(r.values.values()) / present
    of_numbers = kind == "numeric" or kind is None and whole + fractional >= NOISE_Z * r.std \
        and text <= TEXT_SHARE * present + NOISE_Z * r.std and all(not isinstance(v, str) for v in r.values)
    integer = bool(fractional <= TEXT_SHARE * (whole + fractional) + NOISE_Z * r.std)
    missing = bool(r.kinds["missing"] + r.kinds["text"] >= MISSING_Z * r.std * math.sqrt(2))
    binned = of_numbers and (kind == "numeric" or len(r.values) > bins or covered < 1 - TAIL_SHARE)
    span = whole_span(r) if of_numbers and integer else None
    if span is not None and span[1] - span[0] < WHOLE_CODES * bins \
            and (binned or set(r.values) != set(range(span[0], span[1] + 1))):
        return NumericColumn(r.name, tuple(range(span[0], span[1] + 2)), True, missing)
    if binned:
        return numeric_from(r, bins, integer, missing)
    if not r.values:
        raise Unreleasable(f"column {r.name!r}: no value is frequent enough to be released privately (a value "
                           f"needs a noisy count of at least {r.threshold:.0f} records at this budget: an "
                           "identifier, free text, or a column almost always missing?); declare the column in a "
                           "schema, give more records, or a larger epsilon")
    cats = sorted(r.values, key=lambda v: (isinstance(v, str), v))
    unreleased = text + whole + fractional - sum(r.values.values())  # present, of a category not released
    other = other if unreleased >= NOISE_Z * r.std * math.sqrt(len(KINDS) - 1 + len(r.values)) else None
    if other is None:  # values not released get the missing code, where there is one
        missing = bool(r.kinds["missing"] + unreleased >= MISSING_Z * r.std * math.sqrt(len(KINDS) + len(r.values)))
    else:
        missing = bool(r.kinds["missing"] >= MISSING_Z * r.std)
    return CategoricalColumn(r.name, tuple(cats), missing, other is None, other)


def _start(counts: np.ndarray, std: float) -> int:
    """Index of the first of the noisy ``counts`` (each of noise std ``std``) at which their
    running sum exceeds ``RANGE_Z`` times its noise std: where the numbers have surely begun
    (the largest count when that never happens: the numbers are most likely there)."""
    above = np.flatnonzero(np.cumsum(counts) >= RANGE_Z * std * np.sqrt(np.arange(1, counts.size + 1)))
    return int(above[0]) if above.size else int(np.argmax(counts))


def _inner_end(levels, std: float, kept: int, reverse: bool) -> int:
    """The cell where a whole-number span starts (``reverse``: ends) inside the decade ``kept``:
    the first of its tenths (``reverse``: the last) where the numbers surely begin, then the cell
    of that tenth's noisy median (counts clipped at zero), which holds numbers with high
    probability: every integer of the span costs a code, so the span stays inside the numbers."""
    cells = np.flatnonzero(LEVELS[0] == kept)
    tenths = np.unique(LEVELS[1][cells])[::-1 if reverse else 1]
    tenth = tenths[_start(levels[1][tenths], std)]
    cells = cells[LEVELS[1][cells] == tenth][::-1 if reverse else 1]
    running = np.cumsum(np.clip(levels[2][cells], 0.0, None))
    return int(cells[min(np.searchsorted(running, running[-1] / 2), cells.size - 1)])


def _outer_end(levels, r: Release, kept: int, reverse: bool) -> int:
    """The cell where a binned column's range starts (``reverse``: ends) inside the decade
    ``kept``: the outer cell of its first tenth (``reverse``: its last) whose noisy count reaches
    ``r.tenth_bar``, so surely holds numbers (where none does, of the tenth where their running
    count surely begins, :func:`_start`).  Every sure tenth is inside the range whole: only
    the numbers of tenths too sparse to tell from the noise are clipped, and the range passes
    the numbers by less than a tenth, which widens the end bin only."""
    cells = np.flatnonzero(LEVELS[0] == kept)
    tenths = np.unique(LEVELS[1][cells])[::-1 if reverse else 1]
    sure = np.flatnonzero(levels[1][tenths] >= r.tenth_bar)
    tenth = tenths[sure[0] if sure.size else _start(levels[1][tenths], r.std)]
    cells = cells[LEVELS[1][cells] == tenth]
    return int(cells[-1] if reverse else cells[0])


def _spread(levels, kept: np.ndarray) -> np.ndarray:
    """Counts per cell: each kept decade's noisy count shared among its tenths in proportion to
    their noisy counts clipped at zero, and each tenth's among its cells likewise."""
    share = np.zeros(LEVELS[0].max() + 1)
    share[kept] = levels[0][kept]
    for parent, group, counts in zip(LEVELS[:-1], LEVELS[1:], levels[1:]):
        ids = np.unique(group)
        parent_of = np.zeros(ids.size, dtype=np.int64)
        parent_of[group] = parent
        clipped = np.clip(counts, 0.0, None)
        total = np.bincount(parent_of, weights=clipped, minlength=share.size)
        members = np.bincount(parent_of, minlength=share.size)
        part = np.where(total[parent_of] > 0, clipped / np.where(total > 0, total, 1.0)[parent_of],
                        1.0 / members[parent_of])
        share = share[parent_of] * part
    return share


def _kept(levels, bar: float) -> np.ndarray:
    """The decades whose noisy count reaches ``bar`` (a release's ``decade_bar``)."""
    return np.flatnonzero(levels[0] >= bar)


def whole_span(r: Release):
    """The integers ``(lo, hi)`` of the column's range (module docstring): from the largest
    integer of its first cell to the smallest of its last, so inside the numbers' range with
    high probability, then widened to the released whole values (each held by records); None
    when no decade is kept or when the range ends in an outer cell (beyond the grid)."""
    kept = _kept(r.levels, r.decade_bar)
    if not kept.size:
        return None
    first = _inner_end(r.levels, r.std, kept[0], reverse=False)
    last = _inner_end(r.levels, r.std, kept[-1], reverse=True)
    if first == 0 or last == N_CELLS - 1:
        return None
    lo, hi = math.ceil(UPPER[first]) - 1, math.ceil(LOWER[last])
    released = [v for v in r.values if isinstance(v, int)]
    lo, hi = min([lo] + released), max([hi] + released)
    return (lo, hi) if lo <= hi else None


def numeric_from(r: Release, bins: int, integer: bool, missing: bool = True) -> NumericColumn:
    """Bins from the noisy counts of the numbers, point masses apart (module docstring).

    Decades whose noisy count reaches the release's ``decade_bar`` are kept; the range starts in the
    lowest at its first tenth that surely holds numbers (:func:`_outer_end`) and ends likewise
    in the highest;
    the inner edges are the ``j / bins`` quantiles of the kept counts (:func:`_spread`); every
    point mass adds a bin of its own."""
    numbers = max(r.kinds["whole"] + r.kinds["fractional"], 1.0)
    points = sorted(v for v, c in r.values.items() if c >= numbers / bins and math.isfinite(as_float(v)))
    levels = [counts.copy() for counts in r.levels]
    for v in points:  # a point mass is its own bin: take it out of its cell, tenth and decade
        at = cell_of(np.array([as_float(v)]))[0]
        for group, counts in zip(LEVELS, levels):
            counts[group[at]] -= r.values[v]
    edges = [as_float(v) for v in points]
    edges += [e + 1 if integer else float(np.nextafter(e, math.inf)) for e in edges]
    kept = _kept(levels, r.decade_bar)
    if kept.size:
        lo = LOWER[_outer_end(levels, r, kept[0], reverse=False)]
        hi = UPPER[_outer_end(levels, r, kept[-1], reverse=True)]
        cumulative = np.cumsum(_spread(levels, kept))
        inner = UPPER[np.searchsorted(cumulative, cumulative[-1] * np.arange(1, bins) / bins)]
        edges += [lo, hi] + [float(e) for e in inner if lo < e < hi]
    if not edges:
        raise Unreleasable(f"column {r.name!r}: too few numbers to place its range privately at this budget; "
                         "declare its bounds in a schema, give more records, or a larger epsilon")
    edges = np.unique(np.ceil(edges) if integer else np.array(edges, dtype=float))
    if edges.size == 1:
        edges = np.append(edges, edges[0] + 1.0 if integer else np.nextafter(edges[0], math.inf))
    return NumericColumn(r.name, tuple(_python(e) for e in edges), integer, missing)


def infer(table, budget: Budget, amount, delta: float, rng=None, bins: int = BINS,
          missing=("?", ""), kinds: dict | None = None, other: str = OTHER,
          left_out: dict | None = None) -> TableEncoder:
    """A TableEncoder for ``table`` learnt privately (module docstring): one histogram per
    column, each spending an equal part of ``amount`` (in the budget's unit; None: all that
    remains) and of ``delta``.  ``kinds`` fixes the kind of the columns it names
    (``"categorical"`` or ``"numeric"``) and ``other`` labels a categorical column's values not
    released (see :func:`column_from`).  A column of which nothing can be released raises
    :class:`Unreleasable`; given a dict ``left_out``, it is left out of the encoder instead and
    ``left_out[name]`` says why.  The encoder clips numbers outside a column's range into its
    end bins; :func:`encoded` codes the rows."""
    frame = _as_frame(table)
    kinds = dict(kinds or {})
    wrong = {c: k for c, k in kinds.items() if c not in frame.columns or k not in ("categorical", "numeric")}
    if wrong:
        raise ValueError(f"kinds {wrong}: each must name a column of the table {list(frame.columns)} and be "
                         "'categorical' or 'numeric'")
    rng = np.random.default_rng(rng)
    d = len(frame.columns)
    if amount is None:
        share = budget.split(d)
    else:
        exact = Fraction(repr(float(amount))) / d
        share = float(exact)
        while Fraction(repr(share)) > exact:  # never more than the exact share
            share = float(np.nextafter(share, 0.0))
    markers = frozenset(missing)
    columns = {}
    with progress.bar(d, "schema", "column") as shown:
        for name in frame.columns:
            noisy = release(name, canonical(frame[name], markers), budget, share, delta / d, rng)
            try:
                columns[name] = column_from(noisy, bins, kinds.get(name), other)
            except Unreleasable as why:
                if left_out is None:
                    raise
                left_out[name] = str(why)
            shown.update()
    encoder = TableEncoder(bins=bins, missing=missing, clip=True)
    encoder.columns = columns
    return encoder


def encoded(frame, encoder: TableEncoder) -> Dataset:
    """The integer codes of every row of ``frame`` under a private or declared schema, read as
    :func:`~ektelo_pgm.encoding.canonical` values: whatever a record holds, it is coded and
    never refused or dropped, so neither the run's outcome nor the number of records the
    mechanism sees depends on one record's values (substitute neighbours stay substitute
    neighbours).  A number outside its column's range goes to the nearest end bin (infinities
    included); a value the column cannot code (missing, text in a numeric column, a category
    outside the schema's) gets the column's missing code, or its first code when the schema
    gives it none (a data-independent choice: such records are few, by the schema's rule or by
    the user's declaration); a column with an ``other`` code gives it to the values outside its
    categories."""
    markers = frozenset(encoder.missing)
    codes = []
    for name, column in encoder.columns.items():
        values = canonical(frame[name], markers)
        if column.kind == "numeric":
            number = np.array([isinstance(v, (int, float)) for v in values], dtype=bool)
            code = np.full(len(values), -1, dtype=np.int64)
            edges = np.array(column.edges, dtype=object)  # exact comparisons, whole numbers of any size
            code[number] = np.clip(np.searchsorted(edges, values[number], side="right") - 1, 0, column.bins - 1)
        else:
            categories = [_canonical_value(c) for c in column.categories]
            code = _pandas().Index(categories, dtype=object).get_indexer(values)
            if column.other is not None:
                code[(code < 0) & np.array([v is not None for v in values], dtype=bool)] = len(categories)
        code[code < 0] = column.size - 1 if column.missing else 0
        codes.append(code)
    return Dataset(np.column_stack(codes).astype(np.int64), encoder.domain)


def declared(schema) -> TableEncoder:
    """The encoder of a declared schema: a fitted TableEncoder, a dict, or the path of a JSON file
    holding either form of the module docstring.  Numbers outside a column's declared range are
    clipped into its end bins; values outside its declared categories are encoded as missing."""
    if isinstance(schema, TableEncoder):
        schema._fitted()
        return schema
    if isinstance(schema, (str, os.PathLike)):
        try:
            with open(schema, encoding="utf-8") as f:
                schema = json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"{os.fspath(schema)}: not a JSON schema ({err})") from None
    if not isinstance(schema, dict):
        raise TypeError(f"a schema is a TableEncoder, a dict or a JSON path, got {type(schema).__name__}")
    if "format" in schema:
        encoder = TableEncoder.from_dict(schema)
        encoder.clip = True
        return encoder
    specs = schema.get("columns")
    if not isinstance(specs, dict) or not specs:
        raise ValueError('a schema needs "columns": {name: {"kind": "categorical" or "numeric", ...}}')
    encoder = TableEncoder(bins=BINS, clip=True)
    encoder.columns = {str(name): _declared_column(str(name), spec) for name, spec in specs.items()}
    return encoder


def _declared_column(name: str, spec):
    """One column of the short schema form (module docstring)."""
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "categorical":
        categories = spec.get("categories")
        if not isinstance(categories, list) or not categories:
            raise ValueError(f"column {name!r}: a categorical column needs a non-empty list \"categories\"")
        missing, other = _flag(name, spec), spec.get("other")
        if other is not None and not isinstance(other, str):
            raise ValueError(f"column {name!r}: \"other\" must be a label (text), got {other!r}")
        return CategoricalColumn(name, tuple(dict.fromkeys(_python(c) for c in categories)), missing,
                                 missing and other is None, other)
    if kind == "numeric":
        if "edges" in spec:
            edges = spec["edges"]
            if not isinstance(edges, list) or len(edges) < 2 or any(not isinstance(e, (int, float)) for e in edges) \
                    or any(b <= a for a, b in zip(edges, edges[1:])):
                raise ValueError(f"column {name!r}: \"edges\" must be at least two increasing numbers, got {edges!r}")
            integer = bool(spec.get("integer", all(isinstance(e, int) for e in edges)))
            return NumericColumn(name, tuple(_python(e) for e in edges), integer, _flag(name, spec))
        bins = spec.get("bins", BINS)
        if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
            raise ValueError(f"column {name!r}: \"bins\" must be a positive integer, got {bins!r}")
        if "bounds" not in spec:
            raise ValueError(f"column {name!r}: a numeric column needs \"bounds\": [lo, hi] or \"edges\"")
        column = NumericColumn.from_bounds(name, spec["bounds"], bins)
        return NumericColumn(name, column.edges, column.integer, _flag(name, spec))
    raise ValueError(f"column {name!r}: \"kind\" must be \"categorical\" or \"numeric\", got {kind!r}")


def _flag(name: str, spec: dict) -> bool:
    """The ``"missing"`` flag of a declared column (default true)."""
    missing = spec.get("missing", True)
    if not isinstance(missing, bool):
        raise ValueError(f"column {name!r}: \"missing\" must be true or false, got {missing!r}")
    return missing
