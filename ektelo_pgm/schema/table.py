"""A whole table's schema: :func:`infer`, every column learnt privately from its noisy histograms
(the budget shared among the columns, then among the charges that refine their numbers), and
:func:`learn`, the one way in (the declared columns, the public ones, the others inferred)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from .. import progress
from ..encoding import TableEncoder
from ..errors import InputError
from ..privacy import Budget
from ..table_io import MISSING, as_frame
from .counts import tallies, timed
from .declared import Declared, undeclared
from .histogram import Unreleasable, float_below, release
from .kinds import BINS, OTHER, column_from, names_codes, public_column
from .numbers import fine_charges, refine

#: Share of the schema's amount that refines the numbers where their mass is (:func:`refine`).
FINE_SHARE = Fraction(1, 4)


def infer(table, budget: Budget, amount, delta: float, rng=None, bins: int = BINS,
          missing=MISSING, kinds: dict | None = None, other: str = OTHER,
          left_out: dict | None = None, thresholds: dict | None = None, counts: dict | None = None) -> TableEncoder:
    """A TableEncoder for ``table`` learnt privately (package docstring), spending ``amount`` (in
    the budget's unit; None: all that remains) and ``delta``: one histogram per column, each
    spending an equal part of ``1 - FINE_SHARE`` of ``amount`` and of ``delta``; then the columns
    binned as numbers share the rest to :func:`refine` their bins, an equal part per charge each
    can make (:func:`fine_charges`: a column of small whole numbers makes one, a fractional one
    ``FINE_DEPTH + 1``; what no charge spends is not spent).  ``kinds`` fixes the kind of the
    columns it names (``"categorical"`` or ``"numeric"``; a column whose name says it holds codes,
    :func:`names_codes`, is categorical unless named) and ``other`` labels a categorical
    column's values not released (see :func:`column_from`).  A column of which nothing can be
    released raises :class:`Unreleasable`; given a dict ``left_out``, it is left out of the
    encoder instead and ``left_out[name]`` says why.  Given a dict ``thresholds``,
    ``thresholds[name]`` is the noisy count a value of the column needed to be released (set by
    the budget and the column's noisy kind).  ``counts``: the columns' :func:`tallies`, where
    the caller has them (else read from ``table``, a pandas or partitioned table).  The encoder
    clips numbers outside a column's range into its end bins; :func:`encoded` codes the rows."""
    frame = as_frame(table)
    kinds = dict(kinds or {})
    wrong = {c: k for c, k in kinds.items() if c not in frame.columns or k not in ("categorical", "numeric")}
    if wrong:
        raise InputError(f"kinds {wrong}: each must name a column of the table {list(frame.columns)} and be "
                         "'categorical' or 'numeric'")
    kinds = {**{c: "categorical" for c in frame.columns if names_codes(str(c))}, **kinds}
    rng = np.random.default_rng(rng)
    d = len(frame.columns)
    total = Fraction(repr(budget.fraction(1.0) if amount is None else float(amount)))
    counted = tallies(frame, frozenset(missing)) if counts is None else counts
    releases, columns, why = {}, {}, {}
    with progress.bar(d, "schema", "column") as shown:
        for name in frame.columns:
            releases[name] = release(name, counted[name], budget,
                                     float_below(total * (1 - FINE_SHARE) / d), delta / d, rng, kinds.get(name))
            try:
                columns[name] = column_from(releases[name], bins, kinds.get(name), other)
            except Unreleasable as reason:
                why[name] = reason
            shown.update()
    charges = {name: fine_charges(releases[name], column.integer) for name, column in columns.items()
               if column.kind == "numeric"}
    each = float_below(total * FINE_SHARE / max(sum(charges.values()), 1))
    with progress.bar(len(charges), "schema digits", "column") as shown:
        for name, count in charges.items():
            if count:
                fmt = releases[name].time_format
                refined = refine(releases[name], counted[name] if fmt is None else timed(counted[name], fmt),
                                 budget, each, rng, columns[name].integer)
                try:
                    columns[name] = column_from(refined, bins, kinds.get(name), other)
                except Unreleasable as reason:
                    why[name] = reason
                    del columns[name]
            shown.update()
    if why and left_out is None:
        raise next(iter(why.values()))
    if why:
        left_out.update({name: str(reason) for name, reason in why.items()})
    if thresholds is not None:
        thresholds.update({name: r.threshold for name, r in releases.items()})
    encoder = TableEncoder(bins=bins, missing=missing, clip=True)
    encoder.columns = {name: columns[name] for name in frame.columns if name in columns}
    return encoder


def learn(table, budget: Budget | None, amount, delta: float, rng=None, bins: int = BINS, declared=None,
          public=(), missing=MISSING, kinds: dict | None = None, other: str = OTHER,
          left_out: dict | None = None, thresholds: dict | None = None) -> TableEncoder:
    """The schema of ``table``, the one way in: the ``declared`` columns as declared (anything
    :meth:`Declared.read` takes, or None), the ``public`` ones read as they are
    (:func:`public_column`), every other column inferred privately by :func:`infer` (spending
    ``amount`` of ``budget`` and ``delta``; nothing when no column is left, and ``budget`` may
    then be None), in table order.  ``kinds``, ``other``, ``left_out`` and ``thresholds`` are
    :func:`infer`'s.  The encoder has the declared schema's settings, else ``bins`` and
    clipping; :func:`encoded` codes the rows."""
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
    counted = tallies(frame[read], frozenset(missing)) if read else {}
    fixed.update({c: public_column(c, counted[c]) for c in public})
    inferred = infer(frame[open_], budget, amount, delta, rng, bins, missing, kinds=kinds, other=other,
                     left_out=left_out, thresholds=thresholds, counts=counted) if open_ else None
    columns = {**fixed, **(inferred.columns if inferred else {})}
    if not columns:
        reasons = "; ".join((left_out or {}).values())
        raise InputError("no column can be released privately at this budget: " + reasons)
    ordered = {c: columns[c] for c in frame.columns if c in columns}
    if declared is not None:
        return declared.encoder(ordered)
    encoder = inferred or TableEncoder(bins=bins, clip=True)
    encoder.columns = ordered
    return encoder
