"""The column a column's noisy histograms describe (:func:`column_from`, post-processing only):
numbers with one code per integer of their span, numbers in bins, an identifier (left out), or
categories with an other and a missing code where they need them; and a column whose categories
the user declares public knowledge (:func:`public_column`)."""
from __future__ import annotations

import math
import re
from dataclasses import replace

import numpy as np

from ..columns import CategoricalColumn, NumericColumn
from ..errors import InputError
from ..table_io import as_float
from ..uncertainty import Prior
from .counts import Tally, whole
from .ends import TAIL_SHARE
from .grid import LOWER, UPPER, cell_of
from .histogram import DECADE_Z, KINDS, NOISE_Z, Release, Unreleasable, shows_numbers, whole_numbers
from .numbers import median_number, numeric_from, whole_span

#: A categorical column gets an other code when its values not released number this many stds
#: (noise alone passes 2.3% of the time), or when it has a missing code: values not released are
#: never coded as missing.
OTHER_Z = 2.0
#: Stds at which a column of numbers whose released values (two or more) leave more than TAIL_SHARE of
#: it unreleased is binned (:func:`column_from`), short of ``OTHER_Z``: at 2 stds ames' wood decks, 48%
#: not released (noisy count 1.9 stds), would be written as 0; at none, usa_migration's seven years, all
#: released, were binned from noise alone in 35 schemas of 100 (one drew 27 years from 2058 to 3999).
#: One released value is binned at any stds: as a category it would be constant (Chicago's wind gusts,
#: 10% not calm, and ames' screen porches, 9% not 0, at 0.3-0.9 stds would be written all 0).
TAIL_Z = 1.0
#: Stds at which a categorical column's values not released call for the histograms to be drawn again
#: (:func:`~.table.infer`'s ``extra``, which costs up to the rest of the schema's share): noise alone
#: asks once in 740 columns, where at ``OTHER_Z`` it asked once in 44 (CPS1988's region, its 4 values
#: all released, drew again at epsilon 1, seeds 1 and 2, and the schema took half the budget, not 13%).
#: Once one column asks, those at ``OTHER_Z`` are drawn again with it, the second draw's cost paid
#: (seattle_pets at epsilon 0.3, seed 1: its ZIP codes at 2.8 stds beside two columns of breeds
#: drawn again, 2-way TVD 0.257 drawn once, 0.218 with them).
DRAW_AGAIN_Z = 3.0
#: Stds (under Gaussian noise; under Laplace noise, the kinds' bar scaled alike) at which a column's
#: blanks get a missing code that is not sure (:func:`has_missing`): its blanks are drawn only where
#: the mechanism's measurements show them too (:attr:`~ektelo_pgm.synthesizer.Synthesizer.blankless`).
MAYBE_MISSING_Z = 2.0
#: Words of a column's name that say it holds the codes of a codebook (:func:`names_codes`): ZIP
#: and postal codes, the census' areas (FIPS, "fip" too, PUMA, GEOID, tract, CBSA and MSA),
#: industry and occupation codes (NAICS, SIC, ISIC, NACE, ISCO) and ICD codes, whose numbers are
#: labels, not amounts.
CODE_WORDS = frozenset({"zip", "zipcode", "postal", "postcode", "fips", "fip", "puma", "geoid", "tract", "cbsa",
                        "msa", "naics", "sic", "isic", "nace", "isco", "icd", "code", "codes"})
#: Words of a column's name that say it holds identifiers (:func:`names_ids`), labels too: binned
#: as amounts, nafld1's case ids came out 78% ids no case has, and whether its unique ids were
#: left out changed from seed to seed.
ID_WORDS = frozenset({"id", "ids", "uid", "rownames"})
#: Default bins of a numeric column (each point mass adds a code), and the most integers a column
#: of whole numbers coded integer by integer spans.  AIM scores a marginal by its error less the noise
#: its measurement would add over its cells, so at 32 bins and one code per integer up to 1,024
#: integers the 2-way marginals of two numbers (CPS1988's wage by experience: 31 x 45 cells, noise
#: std 20-80 per cell at epsilon 1 against 20 records on average) were never measured: 2-way
#: TVD 0.14 on them, 0.029 on the table.  At 20 codes at most, mean 2-way TVD over 3 seeds at
#: epsilon 1 (benchmarks/real_tables.py): CPS1988 0.0290 -> 0.0239, txhousing 0.368 -> 0.327,
#: weather (cut) 0.080 -> 0.069, hotel_rates (cut) 0.079 -> 0.078, mpls_stops 0.0514 -> 0.0511;
#: at 16, mpls_stops' coordinates lost (0.057).
BINS = 20
#: Default label of the code that stands for a categorical column's values not released.
OTHER = "(other)"
#: A column of whole numbers spanning at most ``bins`` integers gets one code per integer when
#: it holds at least this many numbers per integer of the span on average, and at least
#: the noise std of a count of the schema's values (a proxy of the mechanism's, set by the same
#: budget and columns): fewer, and a code per integer holds mostly noise (counts of cases over
#: 1-999, three per integer), which bins pool.  Hotel bookings' lead times (0-399 days, 38
#: bookings a day, noise std 116 at epsilon 1) came out of MST as noise spread over 400 codes,
#: their median 141 days for 45.  Identifiers (:func:`names_ids`: labels, never binned) over a
#: wider span get one code per integer too when each holds on average what a released category
#: needs (the release threshold): as categories, the ids under it were one ``(other)`` (ratdat's
#: plots 1-24, 255-433 records each against a threshold of 532: 12% of a column of numbers).
WHOLE_DENSITY = 10
#: Noise stds of their sum under which the cells of a run of integers between the values a column's
#: counts show hold none (:func:`_shown_codes`): an empty run passes 93% of the time, one holding
#: GAP_Z stds of records half the time, its records then written as its neighbours (in 5 columns
#: of 756 schemas of 72 tables, 0.4-8% of their records; at two stds, about twice as many).
GAP_Z = 1.5
#: Integers a span may hold for its column to be coded on the values its counts show alone
#: (:func:`_shown_codes`), each integer's cell tested.
SHOWN_SPAN = 10_000
#: A column of whole numbers of which no value is released and at least this share is distinct
#: (noisy counts, surely: by ID_Z noise stds of the difference) is an identifier: left out, or
#: regenerated.  An amount 95% distinct (Lending Club's credit utilised) stays a number.
ID_SHARE = 0.99
ID_Z = 2.0


def unreleased_stds(r: Release) -> float:
    """How many noise stds the present values of ``r`` that no released value holds number: the
    noisy counts of its present kinds (text, whole, fractional; unclipped, so unbiased) less those
    of its released values, over the std of that difference."""
    unreleased = sum(r.kinds[k] for k in KINDS if k != "missing") - sum(r.values.values())
    return unreleased / math.sqrt((len(KINDS) - 1) * r.kind_std ** 2 + len(r.values) * r.std ** 2)


def column_from(r: Release, bins: int = BINS, kind: str | None = None, other: str = OTHER):
    """The column that the release ``r`` describes (:func:`_coded`), whose whole numbers, of a
    column of plain numbers, are written with a decimal point where ``r`` says most are
    (:attr:`~.histogram.Release.pointed`: ``61.0``, as pandas writes a column of whole numbers
    with blanks; nlswork's and GSSvocab's had lost it), and those of a fractional one without
    where ``r`` says so (:attr:`~.histogram.Release.plain`: ``0``, as R writes Weather's
    precipitations), drawn whole at the share of its whole numbers (:func:`whole_share`).
    Post-processing only."""
    column = _coded(r, bins, kind, other)
    if column.kind == "numeric":
        whole = column.edges if column.integer and column.written_in is None else ()
    else:
        whole = column.categories if all(isinstance(c, int) for c in column.categories) else ()
    exact = bool(whole) and max(map(abs, whole)) <= 2 ** 53  # written as floats, which hold them exactly
    if r.pointed and exact:
        return replace(column, pointed=True)
    if column.kind != "numeric" or column.integer:
        return column
    return replace(column, plain=r.plain, whole_share=whole_share(r, column))  # r.plain: of a column of no format


def whole_share(r: Release, column: NumericColumn) -> float | None:
    """The share of whole numbers among the numbers of the fractional ``column`` that the release ``r``
    left unreleased (a released one is drawn at its value): the noisy count of its whole numbers less
    those of its released whole numbers, over that of its numbers less those of its released numbers,
    at most 1 (three decimals); None where those unreleased whole numbers are not noticeable
    (the kinds' bar, scaled to the noise of that difference: weather's wind speeds, 5% calm and
    released, were drawn whole in 16% of the rest).  Alcohol's cigarette taxes, 86% written ``10.0``
    among ``10.5``, came out whole in 35% of the records, drawn inside their bins on the grid of one
    decimal.  Post-processing of the counts."""
    released = [(v, c) for v, c in r.values.items()
                if isinstance(v, (int, float)) and column.edges[0] <= as_float(v) <= column.edges[-1]]
    whole = [c for v, c in released if isinstance(v, int)]
    rest_whole = r.kinds["whole"] - sum(whole)
    rest = rest_whole + r.kinds["fractional"] - sum(c for v, c in released if not isinstance(v, int))
    if rest_whole < r.kind_bar * math.sqrt(1.0 + len(whole) * (r.std / r.kind_std) ** 2) or rest <= 0:
        return None
    return round(min(rest_whole / rest, 1.0), 3)


def _coded(r: Release, bins: int, kind: str | None, other: str):
    """The column that the release ``r`` describes (post-processing only, package docstring):
    numeric with one bin per integer of its span, numeric with at most ``bins`` bins besides
    its point masses, or categorical; ``kind`` (``"categorical"`` or ``"numeric"``), where the
    user fixes it, overrides the choice (a numeric code of a category, numbers with few values).
    A categorical column whose values not released are noticeably many (``OTHER_Z`` stds of
    their noisy count) gets a code of its own for them, labelled ``other``; genuine missing
    values keep the missing code.  A column of numbers that would need one is numeric instead
    (one code per integer of its span, or bins with its released values as point masses):
    numbers are never labelled ``other``.  Raises :class:`Unreleasable` when nothing can be
    released.

    It gets a missing code only where the noisy count of its missing values (and, in a numeric
    column, text) is clearly positive or in doubt (:func:`has_missing`), never for the values not released;
    without an other code those get its category of the largest noisy count, its ``fallback``,
    or in a column of numbers the nearest (see :func:`encoded`): an other code in every column
    with blanks, the rule before, held the mechanism's noise where no value was rare (STAR's
    free lunch, free or not, came out 1% ``(other)``, as did 13 more of its columns of 2-4
    values, each held by at least 482 records);
    a numeric column's ``fallback`` is its median (:func:`median_number`)."""
    text, whole, fractional = (max(r.kinds[k], 0.0) for k in ("text", "whole", "fractional"))
    present = max(text + whole + fractional, 1.0)
    covered = sum(r.values.values()) / present
    timed, written = r.time_format is not None, r.written_in is not None
    of_numbers = kind == "numeric" or written or kind is None and shows_numbers(r.kinds, r.kind_std, r.kind_bar) \
        and all(not isinstance(v, str) for v in r.values)
    integer = timed or whole_numbers(r.kinds, r.kind_std)
    missing = has_missing(r, True, sure=False)
    unreleased_z = unreleased_stds(r)
    noticed = unreleased_z >= OTHER_Z
    ids = kind is None and not timed and names_ids(r.name)  # labels: categories, or codes of a dense span
    # numbers are binned where, as categories, they would need a missing code or an other one, or lose a tail
    as_numbers = of_numbers and not ids and (kind == "numeric" or written or len(r.values) > bins
                                             or has_missing(r, True))
    binned = as_numbers or of_numbers and not ids and (noticed or covered < 1 - TAIL_SHARE
                                                       and (len(r.values) < 2 or unreleased_z >= TAIL_Z))
    span = whole_span(r) if of_numbers and integer and not timed else None
    per_integer = (whole + fractional) / (span[1] - span[0] + 1) if span else 0.0
    dense = span is not None and per_integer >= max(WHOLE_DENSITY, r.std) \
        and (span[1] - span[0] < bins or ids and per_integer >= r.threshold)
    shown = _shown_codes(r, span, bins) if span is not None and not as_numbers and (dense or not ids) else None
    if shown is not None and (ids or sum(shown.values()) >= (1 - TAIL_SHARE) * present):  # the rest: nearest
        return CategoricalColumn(r.name, tuple(shown), ids and has_missing(r, False, sure=False),
                                 fallback=max(shown, key=shown.get))
    if dense:
        median = median_number([(v, c) for v, c in r.values.items() if isinstance(v, int)])
        return NumericColumn(r.name, tuple(range(span[0], span[1] + 2)), True, missing,
                             fallback=None if missing else median, number_format=r.number_format)
    if binned and kind is None and r.distinct is not None and not r.values and r.distinct - ID_SHARE * whole \
            >= ID_Z * math.sqrt(r.fine_std ** 2 + (ID_SHARE * r.whole_std) ** 2):
        raise Unreleasable(f"column {r.name!r}: almost every value is distinct (an identifier?); nothing of it can be "
                           "released privately (declare it --numeric to keep it as numbers)")
    if binned:
        try:
            return numeric_from(r, bins, integer, missing)
        except Unreleasable as reason:
            if kind != "numeric" or shows_numbers(r.kinds, r.kind_std, r.kind_bar):
                raise
            raise Unreleasable(f"{reason} (its kind was fixed numeric, --numeric: are its values numbers?)") from None
    if not r.values:
        raise Unreleasable(f"column {r.name!r}: no value is frequent enough to be released privately (a value "
                           f"needs a noisy count of at least {r.threshold:.0f} records at this budget: an "
                           "identifier, free text, a column almost always missing, or numbers in a form the "
                           "schema does not read: it reads them plain or as in $1,234.5, 1,234.5% or 1.234,5 €?); "
                           "declare the column in a schema, give more records, or a larger epsilon"
                           + (" (its name reads as codes, so categories: --numeric bins it as numbers)"
                              if kind == "categorical" and names_codes(r.name) else ""))
    cats = sorted(r.values, key=lambda v: (isinstance(v, str), v))
    missing = (ids or not of_numbers) and has_missing(r, False, sure=False)
    other = other if noticed else None
    fallback = None if other else max(cats, key=lambda v: r.values[v])
    return CategoricalColumn(r.name, tuple(cats), missing, other=other, fallback=fallback)


def _shown_codes(r: Release, span: tuple, bins: int) -> dict | None:
    """``{whole number: noisy count}`` of the values the noisy counts show in the span ``(lo, hi)``:
    the released values, and each integer alone in its cell (below 100) whose count reaches
    ``NOISE_Z`` noise stds; None unless both ends are among them, at most ``bins`` of them, and
    the cells of each run of the span's other integers hold under ``NOISE_Z`` stds each and under
    ``GAP_Z`` stds of their sum together (a thinning tail of pay bands, 1.2-3 stds each, is a
    run).  InstEval's student ages 2, 4, 6 and 8, coded integer by integer, drew 0.3% odd ones;
    Computers' RAM sizes 2, 4, 8, 16 and 24 MB (2 and 24 under the release threshold), binned,
    drew 1.3% of 3, 5, 6 and 7.  Post-processing of the counts."""
    if not all(isinstance(v, int) for v in r.values) or span[1] - span[0] >= SHOWN_SPAN:
        return None
    integers = np.arange(span[0], span[1] + 1)
    cells = cell_of(integers.astype(float))
    alone = (np.ceil(LOWER[cells]) == integers) & (UPPER[cells] <= integers + 1)
    counts = r.levels[2][cells]
    shown = {int(v): float(c) for v, c, a in zip(integers, counts, alone) if a and c >= NOISE_Z * r.std}
    shown.update((v, float(c)) for v, c in r.values.items() if span[0] <= v <= span[1])
    if not {span[0], span[1]} <= set(shown) or len(shown) > bins:
        return None
    gaps = np.flatnonzero([int(v) not in shown for v in integers])
    for gap in np.split(gaps, np.flatnonzero(np.diff(gaps) > 1) + 1) if gaps.size else []:
        held = r.levels[2][np.unique(cells[gap])]
        if np.any(held >= NOISE_Z * r.std) or held.sum() >= GAP_Z * r.std * math.sqrt(held.size):
            return None
    return dict(sorted(shown.items()))


def has_missing(r: Release, of_numbers: bool, sure: bool = True) -> bool:
    """Whether the column of the release ``r`` surely gets a missing code: the noisy count of what
    it would code (blanks; in a column of numbers, ``of_numbers``, text too: two counts summed)
    reaches the kinds' bar (:attr:`Release.kind_bar`: ``DECADE_Z`` stds under Gaussian noise,
    the count an empty one passes as rarely under Laplace noise) times the square root of the
    counts summed, which noise alone passes about once in 300,000 columns; with ``sure=False``,
    whether it gets one at all: ``MAYBE_MISSING_Z`` stds (the bar scaled alike), a code in doubt
    whose blanks the Synthesizer draws only where the mechanism's measurements show them too
    (:attr:`~ektelo_pgm.synthesizer.Synthesizer.blankless`, at
    :func:`~ektelo_pgm.synthesizer.blank_bar` stds).  Two stds alone, a rule before, let 2.3% of the
    columns without blanks gain a missing code that the model filled with noise: 1-6% blank cells
    (hotel rates' stays_in_weekend_nights 64, CPS1988's wage 56); the sure bar alone lost the blanks
    beneath it, about 97 sqrt(d) blanks in a categorical column of a table of d columns at epsilon 1
    and 137 sqrt(d) in one of numbers (1,015 at 55): in the 12 tables of benchmarks/real_tables.py
    (3 schemas each), 33 of the 180 columns with blanks, 26 at two stds (loans' emp_length, 817 of
    10,000, lost them in 4 of 6 runs).  The sure bar still decides how the column is coded
    (:func:`column_from`)."""
    blanks = _blanks(r, of_numbers)
    return bool(blanks.count >= (blanks.high if sure else blanks.low))


def _blanks(r: Release, of_numbers: bool) -> Prior:
    """The noisy count of what the missing code of the release ``r``'s column codes (:func:`has_missing`),
    its noise std, and the bars at which the column gets a code in doubt (``low``) and a sure one
    (``high``); a prior to weigh only under Gaussian noise (:func:`blank_count`)."""
    kinds = ("missing", "text") if of_numbers else ("missing",)
    bar = r.kind_bar * math.sqrt(len(kinds))
    return Prior(sum(r.kinds[k] for k in kinds), r.kind_std * math.sqrt(len(kinds)), bar * MAYBE_MISSING_Z / DECADE_Z,
                 bar)


def blank_count(r: Release, of_numbers: bool) -> Prior | None:
    """The noisy count of what the missing code of the release ``r``'s column codes (blanks; in a
    column of numbers, ``of_numbers``, text too), its noise std, and the counts between
    :func:`has_missing`'s bars that put the code in doubt, for the Synthesizer to weigh with the
    mechanism's measurements given that selection (:meth:`~ektelo_pgm.uncertainty.ErrorBars.shows`);
    None under Laplace noise."""
    return _blanks(r, of_numbers) if r.notion == "zcdp" else None


def names_codes(name: str) -> bool:
    """Whether the column name ``name`` (public: it heads the output) says the column holds codes
    (one of ``CODE_WORDS``, or a word ending in "code", words split at what is not a letter or a
    digit and where a capital follows a small letter, less their ending digits: ``zip_code``,
    ``ZIPCode``, ``postcode``, ``icd10``):
    :func:`~ektelo_pgm.schema.infer` reads such a column as categories unless its kind is given,
    so that no synthetic ZIP code is one no record holds."""
    return any(w in CODE_WORDS or w.endswith("code") for w in _words(name))


def names_ids(name: str) -> bool:
    """Whether the column name ``name`` says the column holds identifiers (one of ``ID_WORDS``,
    words as :func:`names_codes` reads them: ``case.id``, ``record_id``, ``idNum``): numbers that
    :func:`column_from` never bins as amounts, unless their kind is given."""
    return any(w in ID_WORDS for w in _words(name))


def _words(name: str) -> list[str]:
    """The words of a column name, split at what is not a letter or a digit and where a capital
    follows a small letter, in lower case, less their ending digits."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in (w.rstrip("0123456789") for w in re.split(r"[^a-z0-9]+", words.lower())) if w]


def public_column(name: str, t: Tally) -> CategoricalColumn:
    """The column ``name`` whose categories the user declares public knowledge (the cities of a
    state, the codes of a codebook), from its Tally ``t``: every value present is a category
    (numbers first, then text, each sorted), and a missing code always, whether or not a value
    is missing: the categories are vouched for as public, whether someone's value is missing is
    not, so it is never read from the data (a column declared in a schema, ``"public": true``,
    says ``"missing": false`` when it has none); the Synthesizer writes its blanks only where the
    mechanism's measurements show them (:attr:`~ektelo_pgm.synthesizer.Synthesizer.blankless`).
    Read from the table as it is, without noise: a declared assumption that the set of values is
    known without the table, which the user vouches for; no privacy is spent and none is claimed
    for the set (docs/privacy.md)."""
    categories = sorted(whole(t).values, key=lambda v: (isinstance(v, str), v))
    if not categories:
        raise InputError(f"column {name!r} is declared to have public categories but has no value")
    return CategoricalColumn(name, tuple(categories), True, public=True)
