"""A whole table's schema: :func:`infer`, every column learnt privately from its noisy histograms
(the budget shared among the columns, then among the charges that refine their numbers),
:func:`learn`, the one way in (the declared columns, the public ones, the others inferred), and
:func:`needed_share`, the share of a budget the columns inferred need (``amount=AUTO``)."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .. import progress
from ..encoding import TableEncoder
from ..errors import InputError
from ..privacy import Budget
from ..table_io import MISSING, as_frame
from .counts import tallies
from .declared import Declared, undeclared
from .grid import LEVELS
from .histogram import DECADE_MISS, DECADE_Z, KIND_SHARE, Unreleasable, float_below, noise_bar, noisy_counts, release
from .kinds import (BINS, DRAW_AGAIN_Z, OTHER, OTHER_Z, blank_count, column_from, has_missing, names_codes,
                    public_column, unreleased_stds)
from .metadata import shown_beyond, within
from .notes import left_out_reasons
from .numbers import fine_charges, refine, whole_counts

#: Share of the schema's amount that refines the numbers where their mass is (:func:`refine`).
FINE_SHARE = Fraction(1, 4)
#: ``amount=AUTO`` (:func:`learn`): the schema's share of the budget chosen by :func:`needed_share`.
AUTO = "auto"
#: Share of the budget that counts the records for :func:`needed_share` (noise std 65 records at
#: epsilon 1, delta 1e-9).
ROWS_SHARE = Fraction(1, 100)
#: The noise std, as a share of the records, that each inferred column's counts of values need
#: (:func:`needed_share`).
RESOLUTION = 0.004
#: Least and most share of the budget :func:`needed_share` gives the schema, its record count included.
SHARE_BOUNDS = (Fraction(1, 10), Fraction(1, 2))
#: Most share of the budget the schema takes with its second draws (:func:`learn`) when every
#: column it infers is categorical with values its first histogram could not release: their
#: records lose their categories whatever the mechanism does, so the table's error is mostly
#: theirs.  Between ``SHARE_BOUNDS[1]`` and this in proportion to the share of such columns
#: (seattle_pets, 3 of 4 columns breeds and ZIP codes, 3 seeds: 2-way TVD 0.238 / 0.144 / 0.102
#: at epsilon 0.3 / 1 / 3 with half at most, 0.221 / 0.137 / 0.101 with this; hotel_rates, 3 of
#: 27 at epsilon 3: 0.0435 / 0.0447; a fixed 4/5 took it to 0.050).
SHARE_AGAIN = Fraction(4, 5)


def weight(kind: str | None) -> int:
    """Counts a record adds to at most in a column's histogram of values (:func:`release`): one
    in a column whose kind is fixed categorical, one per level of the grid more for numbers (or
    a column whose kind is not known before its noisy kinds are read).  :func:`infer` shares its
    amount among the columns in proportion to it: the same noise std in every column's counts."""
    return 1 if kind == "categorical" else 1 + len(LEVELS)


def fixed_kinds(columns, kinds: dict | None) -> dict:
    """``{column: kind}`` of the ``columns`` whose kind is fixed before any count: those ``kinds``
    names (the user's), and the others whose name says they hold codes (:func:`names_codes`),
    categorical.  :func:`infer` reads the columns as these kinds, and :func:`needed_share` weighs
    them so (a ZIP code column weighed as numbers asked for four counts per record, one spent)."""
    return {**{c: "categorical" for c in columns if names_codes(str(c))}, **(kinds or {})}


def needed_share(kinds: list, rows: float, total: float, notion: str) -> Fraction:
    """The share of a budget of ``total`` (its unit; ``notion`` ``"zcdp"`` or ``"pure"``) that
    the schema of columns of fixed ``kinds`` (one per column inferred, each ``"categorical"``,
    ``"numeric"`` or None) needs on a table of ``rows`` records (a noisy count): the amount at
    which every column's counts of values have a noise std of ``RESOLUTION * rows`` (its
    :func:`weight` counts per record, ``KIND_SHARE`` of its histograms' amount on the kinds,
    ``FINE_SHARE`` of the schema's on refining numbers), plus ``ROWS_SHARE`` for the count of
    rows, between the ``SHARE_BOUNDS``.  A function of public settings and a noisy count only:
    post-processing, no privacy cost (docs/privacy.md)."""
    std = RESOLUTION * max(float(rows), 1.0)
    values = (1 - KIND_SHARE) * (1 - FINE_SHARE)  # share of a column's amount on its values
    if notion == "zcdp":  # discrete Gaussian, L2 sensitivity sqrt(weight): rho = weight / (2 std^2)
        amounts = [Fraction(weight(k)) / Fraction(repr(2 * std * std)) for k in kinds]
    else:  # discrete Laplace, L1 sensitivity weight: std = sqrt(2) weight / epsilon
        amounts = [Fraction(weight(k)) * Fraction(repr(math.sqrt(2.0) / std)) for k in kinds]
    need = ROWS_SHARE + sum(amounts, Fraction(0)) / values / Fraction(repr(float(total)))
    return min(max(need, SHARE_BOUNDS[0]), SHARE_BOUNDS[1])


def infer(table, budget: Budget, amount, delta: float, rng=None, bins: int = BINS,
          missing=MISSING, kinds: dict | None = None, other: str = OTHER,
          left_out: dict | None = None, thresholds: dict | None = None, counts: dict | None = None,
          extra=None, ranges: dict | None = None, unsure: dict | None = None) -> TableEncoder:
    """A TableEncoder for ``table`` learnt privately (package docstring), spending ``amount`` (in
    the budget's unit; None: all that remains) and ``delta``: one histogram per column, each
    spending a part of ``1 - FINE_SHARE`` of ``amount`` in proportion to its :func:`weight` (the
    same noise std in every column's counts) and an equal part of ``delta``; then the columns
    binned as numbers share the rest to :func:`refine` their bins, an equal part per charge each
    can make (:func:`fine_charges`: a column of whole numbers coded one by one makes only its
    digits', a fractional one ``FINE_DEPTH + 1``; what no charge spends is not spent).  ``kinds``
    fixes the kind of the columns it names (``"categorical"`` or ``"numeric"``; a column whose
    name says it holds codes, :func:`names_codes`, is categorical unless named) and ``other``
    labels a categorical column's values not released (see :func:`column_from`).  A column of
    which nothing can be released raises :class:`Unreleasable`; given a dict ``left_out``, it is
    left out of the encoder instead and ``left_out[name]`` says why.  Given a dict ``thresholds``,
    ``thresholds[name]`` is the noisy count a value of the column needed to be released (set by
    the budget and the column's noisy kind).  ``counts``: the columns' :func:`tallies`, where
    the caller has them (else read from ``table``, a pandas or partitioned table).  ``extra``:
    ``(least, most)``, amounts more (the budget's unit) for the columns whose first histograms
    need it, where a categorical column's values not released number ``DRAW_AGAIN_Z`` stds
    (:func:`~.kinds.unreleased_stds`) or a column releases nothing: those, and the categorical
    columns whose values not released number ``OTHER_Z`` stds (an other code), have their
    histograms drawn again, sharing by :func:`weight` ``least`` and ``most - least``
    times the share of the table's columns that are categorical and draw again, and replace the
    first (a categorical column's noisy kinds kept, its whole share on its values); each
    histogram then spends half of a column's part of ``delta``.  Which columns draw again
    depends on the first noisy counts only, and the amounts add up to at most ``amount + most``
    whatever they are (a privacy filter, as for :func:`refine`).  ``ranges``: ``{column: Ranged}``
    of numeric columns whose bounds are declared (:class:`~ektelo_pgm.schema.metadata.Metadata`):
    their bins as placed, clipped to the bounds (:func:`~ektelo_pgm.schema.metadata.within`;
    where nothing can be placed, the bins of the bounds alone: never left out; beyond the placed
    bins, where the noisy counts show numbers, the bounds' bins there: :func:`~.metadata.shown_beyond`).  Given a dict
    ``unsure``, the columns whose missing code their noisy counts do not surely show join it,
    in doubt (:func:`~.kinds.has_missing`), each with its :func:`~.kinds.blank_count`, or declared
    with a range, with None.  The encoder clips numbers outside a column's range into its end
    bins; :func:`encoded` codes the rows."""
    frame = as_frame(table)
    kinds = dict(kinds or {})
    wrong = {c: k for c, k in kinds.items() if c not in frame.columns or k not in ("categorical", "numeric")}
    if wrong:
        raise InputError(f"kinds {wrong}: each must name a column of the table {list(frame.columns)} and be "
                         "'categorical' or 'numeric'")
    kinds = fixed_kinds(frame.columns, kinds)
    rng = np.random.default_rng(rng)
    d = len(frame.columns)
    total = Fraction(repr(budget.fraction(1.0) if amount is None else float(amount)))
    weights = {name: weight(kinds.get(name)) for name in frame.columns}
    counted = tallies(frame, frozenset(missing)) if counts is None else counts
    topping = extra is not None and float(extra[1]) > 0
    each_delta = delta / (2 * d) if topping else delta / d
    releases, columns, why = {}, {}, {}
    with progress.bar(d, "schema", "column") as shown:
        for name in frame.columns:
            releases[name] = release(name, counted[name], budget,
                                     float_below(total * (1 - FINE_SHARE) * weights[name] / sum(weights.values())),
                                     each_delta, rng, kinds.get(name))
            try:
                columns[name] = column_from(releases[name], bins, kinds.get(name), other)
            except Unreleasable as reason:
                why[name] = reason
            shown.update()
    short = {name: unreleased_stds(releases[name]) for name, column in columns.items()
             if getattr(column, "other", None) is not None}
    asked = bool(why) or any(z >= DRAW_AGAIN_Z for z in short.values())
    needy = [name for name in frame.columns if name in why or short.get(name, 0.0) >= OTHER_Z] if asked else []
    if topping and needy:
        least, most = (Fraction(repr(float(e))) for e in extra)
        more = least + (most - least) * sum(name in columns for name in needy) / d
        for name in needy:
            releases[name] = release(name, counted[name], budget,
                                     float_below(more * weights[name] / sum(weights[c] for c in needy)),
                                     each_delta, rng, kinds.get(name), releases[name] if name in columns else None)
            columns.pop(name, None)
            why.pop(name, None)
            try:
                columns[name] = column_from(releases[name], bins, kinds.get(name), other)
            except Unreleasable as reason:
                why[name] = reason
    whole = {name: whole_counts(releases[name], column, name in kinds) for name, column in columns.items()}
    charges = {name: fine_charges(releases[name], column.integer, whole[name]) for name, column in columns.items()
               if column.kind == "numeric"}
    each = float_below(total * FINE_SHARE / max(sum(charges.values()), 1))
    with progress.bar(len(charges), "schema digits", "column") as shown:
        for name, count in charges.items():
            if count:
                refined = refine(releases[name], counted[name], budget, each, rng, columns[name].integer, whole[name])
                try:
                    columns[name] = column_from(refined, bins, kinds.get(name), other)
                except Unreleasable as reason:
                    why[name] = reason
                    del columns[name]
            shown.update()
    for name, ranged in (ranges or {}).items():
        columns[name] = within(columns.get(name), ranged, shown_beyond(releases[name], columns.get(name), ranged))
        why.pop(name, None)
    if why and left_out is None:
        raise next(iter(why.values()))
    if why:
        left_out.update({name: str(reason) for name, reason in why.items()})
    if thresholds is not None:
        thresholds.update({name: r.threshold for name, r in releases.items()})
    if unsure is not None:
        unsure.update({name: None if name in (ranges or {}) else blank_count(releases[name], column.kind == "numeric")
                       for name, column in columns.items() if column.missing and (
                           name in (ranges or {}) or not has_missing(releases[name], column.kind == "numeric"))})
    encoder = TableEncoder(bins=bins, missing=missing, clip=True)
    encoder.columns = {name: columns[name] for name in frame.columns if name in columns}
    return encoder


def learn(table, budget: Budget | None, amount, delta: float, rng=None, bins: int = BINS, declared=None,
          public=(), missing=MISSING, kinds: dict | None = None, other: str = OTHER,
          left_out: dict | None = None, thresholds: dict | None = None, ranges: dict | None = None,
          folder=None, found: dict | None = None, unsure: dict | None = None) -> TableEncoder:
    """The schema of ``table``, the one way in: the ``declared`` columns as declared (anything
    :meth:`Declared.read` takes, or None), the ``public`` ones read as they are
    (:func:`public_column`), every other column inferred privately by :func:`infer` (spending
    ``amount`` of ``budget`` and ``delta``; nothing when no column is left, and ``budget`` may
    then be None), in table order.  ``amount=AUTO``: the share of the budget those columns need
    (:func:`needed_share`), from a noisy count of the records that spends ``ROWS_SHARE`` of it
    first (the exact count where the budget's neighbours keep it public, at no cost), and up to
    ``SHARE_BOUNDS[1]``, or ``SHARE_AGAIN`` as more of the columns are categorical with values not
    released, for the columns that show they need more (:func:`infer`'s ``extra``).
    ``kinds``, ``other``, ``left_out``, ``thresholds``, ``ranges`` and ``unsure`` are :func:`infer`'s; ``folder``, a
    private folder where a column with more distinct values than the memory cap holds is kept
    (:func:`tallies`).  Given a dict ``found``, with ``amount=AUTO``, ``found["blank"]`` is the
    noisy count of the records blank in every column read, where it is clearly positive (a CSV
    read line by line reads so the first line of a record whose quoted field holds a line break).
    The encoder has
    the declared schema's settings, else ``bins`` and clipping; :func:`encoded` codes the rows."""
    frame = as_frame(table)
    declared = None if declared is None else Declared.read(declared)
    fixed = {} if declared is None else dict(declared.columns)
    absent = [c for c in [*fixed, *public] if c not in frame.columns]
    if absent:
        raise InputError(f"columns {absent} of the schema are not in the table {list(frame.columns)}")
    both = [c for c in (kinds or {}) if c in fixed or c in public]
    if both:
        raise InputError(f"columns {both} are declared in the schema; kinds= (--categorical, --numeric) fix "
                         "the kinds of the columns inferred")
    open_ = undeclared(frame.columns, declared, public)
    read = [c for c in frame.columns if c in open_ or c in public]
    counted = tallies(frame[read], frozenset(missing), folder) if read else {}
    fixed.update({c: public_column(c, counted[c]) for c in public})
    extra = None
    if open_ and amount == AUTO:
        rng = np.random.default_rng(rng)
        fixed_open = fixed_kinds(open_, kinds)
        amount, extra, blank = _needed_amount(counted[open_[0]].records, counted.blank, budget,
                                              [fixed_open.get(c) for c in open_], rng)
        if found is not None and blank:
            found["blank"] = blank
    inferred = infer(frame[open_], budget, amount, delta, rng, bins, missing, kinds=kinds, other=other,
                     left_out=left_out, thresholds=thresholds, counts=counted, extra=extra,
                     ranges=ranges, unsure=unsure) if open_ else None
    columns = {**fixed, **(inferred.columns if inferred else {})}
    if not columns:
        reasons = "; ".join(left_out_reasons(left_out or {}))
        raise InputError("no column can be released privately at this budget: " + reasons)
    ordered = {c: columns[c] for c in frame.columns if c in columns}
    if declared is not None:
        return declared.encoder(ordered)
    encoder = inferred or TableEncoder(bins=bins, clip=True)
    encoder.columns = ordered
    return encoder


def _needed_amount(records: int, blank: int, budget: Budget, kinds: list,
                   rng) -> tuple[float, tuple[float, float] | None, float]:
    """``(amount, extra, blank)`` of ``budget`` (its unit) for :func:`infer`: what the schema of
    columns of ``kinds`` needs (:func:`needed_share` of what remains), from the number of
    ``records`` of the table: counted with noise, spending ``ROWS_SHARE`` of what remains, as two
    counts to one of which a record adds one, the ``blank`` ones (blank in every column,
    :attr:`~.counts.Tallies.blank`) and the others (where the number is public, ``budget.public_total``, it
    is exact and the blank ones are counted alone), a charge that is part of the share;
    ``(least, most)``, what is left up to the most share, ``SHARE_BOUNDS[1]``, and up to
    ``SHARE_AGAIN``, for columns whose values need more; and ``blank``, the noisy count of the
    records blank in every column where noise alone passes it as rarely as an empty decade
    (``DECADE_Z``), else 0.  Where ``extra`` is less than the share itself (None), the most
    share at once: a second draw that replaces a first holding more would lose (a column of 120
    towns of 72 records, some released at half the budget, none in two draws)."""
    remaining = Fraction(repr(budget.remaining))
    amount = float_below(remaining * ROWS_SHARE)
    if budget.public_total:
        rows = float(records)
        noisy, scale, _ = noisy_counts(np.array([blank]), 1, budget, amount, rng,
                                       "schema: records blank in every column")
    else:
        noisy, scale, _ = noisy_counts(np.array([records - blank, blank]), 1, budget, amount, rng,
                                       "schema: number of records")
        rows = float(noisy.sum())
    blank = float(noisy[-1]) if noisy[-1] > noise_bar(budget.notion, scale, DECADE_Z, DECADE_MISS) else 0.0
    share = needed_share(kinds, rows, float(remaining), budget.notion)
    counted = remaining - Fraction(repr(budget.remaining))
    if share > SHARE_BOUNDS[1] / 2:
        return float_below(remaining * SHARE_BOUNDS[1] - counted), None, blank
    return float_below(remaining * share - counted), (float_below(remaining * (SHARE_BOUNDS[1] - share)),
                                                      float_below(remaining * (SHARE_AGAIN - share))), blank
