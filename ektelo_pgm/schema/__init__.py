"""A table's schema (kinds, categories, bins) inferred privately, or read from what a user declares.

:func:`infer` learns a :class:`~ektelo_pgm.encoding.TableEncoder` for a raw table without
any declared metadata, reading the data only through noisy histograms (discrete Gaussian noise
on a rho-zCDP budget, discrete Laplace on a pure one) in which a record adds one to one count
per level (sensitivity 1 per level), spending ``1 - FINE_SHARE`` of the amount on each column
alike (:func:`release`) and the rest where columns of numbers need it (:func:`refine`):

* its *kind* (a ``KIND_SHARE`` of the column's first amount): missing, text, whole number,
  fractional number, text in one of the date and time formats of ``TIME_FORMATS``, or a whole
  or fractional number written with symbols in one of ``NUMBER_FORMATS`` (``$1,234.5``);
* its *form* (a ``FORM_SHARE`` of the rest), where the kinds leave a choice: of a column of
  times whose format may drop leading zeros, the times written so; of a column that surely holds
  whole numbers, those written with a decimal point (``61.0``: pandas writes a column of whole
  numbers with blanks so), which it writes so where their noisy count passes ``NOISE_Z`` stds
  and half the whole numbers;
* its *value*: one count per distinct value present (strings stripped, numbers parsed).  A
  value is released only when its noisy count reaches a threshold ``tau`` that a value held by
  one record passes with probability at most ``delta_c`` (the stability-based histogram of
  Korolova et al. 2009 / Bun, Nissim and Stemmer 2016; ``tau`` from a tail bound of the
  discrete noise, :func:`noise_tail`).  The ``delta_c`` of the columns add up
  to the ``delta`` given: the release is ``delta``-approximately rho-zCDP (Bun and Steinke
  2016, Def. 8.1), and composes with the zCDP of a mechanism by adding rho and delta;
* for a column of numbers (or of times, as seconds), with its values: each number's *decade*
  ``[10^k, 10^(k+1))``, its *tenth* ``[m 10^k, (m+1) 10^k)`` and its *cell* at two significant
  digits (``[17, 18)``, ``[1.5e4, 1.6e4)``): a fixed, data-independent grid (negatives
  mirrored, zero apart, ``k`` in DECADES);
* for a column binned as numbers, the digits past the cell's two where the mass is, the
  number of distinct whole numbers and each one's unit (zero, or the largest of NUMBER_UNITS
  it is a multiple of), the numbers' decimals, or for a column of times, each time's unit: the
  coarsest of the start of a year or month, day, hour, minute and second it is a multiple of
  (:func:`refine`).

Everything else is post-processing of those noisy counts:

* a column *of numbers* has nearly only numbers (at most ``TEXT_SHARE`` text, up to the
  kinds' bar, a count that noise alone passes as rarely as a decade's: read as text, a column
  of numbers would be lost) and released values that are all numbers; it holds *whole numbers*
  when at most ``TEXT_SHARE`` of its numbers are fractional (up to ``NOISE_Z`` noise stds); a
  column *of times* has nearly only text in one format (:func:`_time_format`): its numbers are
  whole seconds, binned, and written back in that format, in the finest unit a noticeable
  count of its times holds (the decimals' rule below: monthly dates on the first); a column *of
  numbers written with symbols* has nearly only numbers that one number format reads, plain or
  with its signs (:func:`_number_format`): binned as numbers, and written back in that format;
* the *range* of a column of numbers: the decades whose noisy count reaches ``DECADE_Z`` noise
  stds (under Laplace noise: the count that an empty decade passes as rarely, ``DECADE_MISS``)
  are kept, but the outermost at an end, past ``g >= 2`` decades farther from zero than the
  others that may well be empty, needs the bar an empty one passes with probability
  ``DECADE_MISS / 2^(g - 1)`` (an empty decade orders of magnitude past the numbers needs more
  than one next to them; one across zero from them, nearer it, does not); next to them, one at
  a time, the decade with the larger noisy count while they surely hold less than all but
  ``TAIL_SHARE`` of the numbers, so that numbers spread thin over several decades keep them
  (:func:`_kept`; a column of whole numbers only decades that can hold one); the range starts
  in the lowest, at its first tenth that surely holds numbers, alone or with the tenths below
  it (a thin tail), at bars that halve from the inner tenth out (an empty tenth far below the
  numbers needs more than one next to them; each tenth told by its count and its cells'), else
  at the lowest noticeable one (``NOTICE_Z`` stds) that is noticeable together
  with the tenths between it and the highest noticeable one, else at the lowest; a start that no
  tenth surely holds alone moves down while the tenths below it are noticeable together, to the
  lowest of them noticeable alone, else the lowest (numbers too thin to place are kept whole);
  lower while the next tenth alone or all below together surely hold numbers; then likewise at a
  cell of that tenth; then at the first of the refined parts below it that surely hold numbers
  where they hold about all of it, lower while the parts below surely hold some as the tenths'
  (:func:`.ends.end_node`, :func:`.ends.sure_parts`), and ends likewise in the
  highest; where both ends lie in one tenth (cell) and the rest of its decade (tenth) surely holds
  numbers, both sides together, the range grows by a tenth (cell) on each side while the rest
  beyond is noticeable, and takes the whole decade (tenth) where it still shows numbers
  (:func:`.ends.range_ends`): no
  part surely holding numbers is clipped, nor one next to the range that surely
  holds some, and the range passes the numbers by less than the finest part the noise tells
  apart, which only widens an end bin; where that end part surely holds fewer numbers than the
  part next to it and as wide, the range ends inside it, where its count at its neighbour's
  density ends (:func:`.ends.outer_edge`: numbers that stop mid-part, such as dates up to the day a
  table was taken, are not drawn past their end); a range held by the outer cells alone (numbers
  past the grid's largest magnitude, ids of 64 bits) cannot be placed, and its column is left out;
* a column of whole numbers has a *span*, the integers of its range (rounded inwards) widened to
  its released values; it is categorical *on the values its counts show* when those (its released
  values, and each integer alone in its cell whose noisy count reaches ``NOISE_Z`` stds) are its
  span's ends, at most ``bins`` of them and holding all but ``TAIL_SHARE`` of its values, and the
  cells of each run of the span's other integers show no numbers (each under ``NOISE_Z`` stds,
  together under ``GAP_Z`` stds of their sum): no synthetic record holds an integer the
  counts show none of, and a number off them is written as the nearest
  (:func:`.kinds._shown_codes`); else it is coded *integer by integer* when its span holds at
  most ``bins`` integers and its numbers number at least ``WHOLE_DENSITY`` per integer of it,
  and at least the noise std of a count (else the codes would hold mostly noise): one code per
  integer of the span, whatever its count, numbers outside it clipped to its ends.  The span
  and the shown values depend on the data only through the noisy counts and the released
  values, so they cost nothing more and need no stability threshold: a rare code of a span coded
  integer by integer (a pay band or a name code held by a few records) keeps its identity, and
  the clipping of a record outside it depends on that record alone;
* any other column of numbers is *numeric* when its released values are either more than
  ``bins`` or cover less than ``1 - TAIL_SHARE`` of it (a long tail of rare numbers), or when
  as a categorical column it would need an other code (below): numbers stay numbers, never an
  other label; the remaining columns are *categorical*, with their released values as
  categories;
* a column of whole numbers surely almost all distinct (``ID_SHARE``, ``ID_Z``) of which no
  value is released is an *identifier*: left out (or regenerated by the caller), unless its
  kind is given;
* a numeric column's bins: a released value holding at least ``1 / bins`` of the column is a
  *point mass*, its own bin (0 in a zero-inflated column stays exactly 0); the others are
  taken out of the counts, the range placed as above, and the inner bin edges are quantiles of
  the counts of the finest parts (:func:`_atoms`: a node holding more than a bin's share is
  shared among its parts even where not all of them surely hold numbers); a fractional column
  is written with the decimals its numbers have (the most held by a noticeable count: the
  decades' bar and ``TEXT_SHARE`` of the numbers), its whole numbers plain (``0``, as R writes
  them, not ``0.0``) where those written so as text are noticeable at 0 decimals; a column of whole
  numbers whose numbers other than zero are surely nearly all multiples of the units of its
  noticeable counts (at a tenth's bar) has its edges on multiples of their greatest common
  divisor, and is written in it (loans in 25s); a column of times has its edges on multiples
  of its unit, its inner edge nearest each start of a day, month or year (the finest of which
  it has fewer starts than bins) moved onto it (of a column of months or years: every edge),
  and is written in its unit; inside a bin,
  numbers are drawn by the noisy counts of its released numbers and finest parts where one
  surely holds more than an even share of it (numbers heaped on a few values stay on them), by
  those counts shrunk towards the even share where they differ from it by more than their
  noise explains, else evenly (:func:`.numbers._density`);
* a categorical column whose values not released are noticeably many (``OTHER_Z`` stds of
  their noisy count) codes them together as one category, labelled ``other`` (never a blank);
  a column has a missing code only where the noisy count of its missing values (for a numeric
  column: and text) is clearly positive, or in doubt at two stds, its blanks then drawn only
  where the mechanism's measurements show them too (:func:`has_missing`: a column without
  blanks never gains them); a number a column cannot code goes to the nearest end, or in a
  categorical column of numbers the nearest category (clipped, never blanked); any
  other value needing a code its column lacks gets the bin of the column's median, or in a
  categorical column its category of the largest noisy count (:func:`encoded`: no record is
  ever dropped);
* a column whose name says it holds codes (:func:`names_codes`: ZIP and postal codes, census areas, a
  codebook's) is categorical unless its kind is given, and one whose name says it holds
  identifiers (:func:`names_ids`) is never binned as amounts (categorical, or coded integer by
  integer over a dense span): the name is public, so this costs nothing;
* a column of which nothing can be released (no value frequent enough: an identifier, free
  text, a column almost always missing) raises :class:`Unreleasable`, or is left out with its
  reason (``left_out``).

:func:`learn` is the one way in: the columns a user declares (:class:`Declared`), those whose
categories are public (:func:`public_column`) and :func:`infer` for the others.  A declared
schema (:meth:`Declared.read`) is either of two forms: the JSON that
:meth:`TableEncoder.to_dict` writes (``"format": "ektelo_pgm.TableEncoder"``), or the short
form ``{"columns": {name: spec}}`` where each ``spec`` is a :class:`ColumnSpec`:
``{"kind": "categorical", "categories": [...]}`` (with ``"other": "label"``, values outside the
categories get a code of their own with that label; ``"public": true`` records that the
categories are public knowledge, :func:`public_column`) or
``{"kind": "numeric", "bounds": [lo, hi], "bins": 16}`` (whole numbers when both bounds are
integers; ``bins`` optional) or ``{"kind": "numeric", "edges": [...], "integer": true}``, each
with an optional ``"missing": false`` when the column is never missing (by default it may be:
values outside the categories are then encoded as missing, and missing values come out; with
false such values get the column's first code, see :func:`encoded`).  Each declaration is
validated when it is read; an error names the column and the problem.
Reading a declared schema spends nothing.

The package's modules, each importing only those listed before it: :mod:`.grid` (the fixed grid
of decades, tenths and cells), :mod:`.counts` (a raw column's exact tally, never released),
:mod:`.histogram` (a column's noisy histograms, their noise, thresholds and bars),
:mod:`.ends` (where a range of numbers starts and ends on the grid),
:mod:`.numbers` (a column of numbers: its refined digits, range, span and bins), :mod:`.kinds`
(the column a release describes; public categories), :mod:`.declared` (the declared form),
:mod:`.metadata` (SDV's metadata, read as declared columns, fixed kinds, ids and columns left out),
:mod:`.codes` (the rows' codes), :mod:`.notes` (what the schema does to each column, and why
columns are left out, in words) and :mod:`.table` (:func:`infer` and :func:`learn`).  This face
names what the rest of the project imports.
"""
from .codes import encoded
from .counts import Tally, column_values, merged, tallies, tally
from .declared import ColumnSpec, Declared, undeclared
from .grid import BOUNDARIES, HOLDS_WHOLE, LEVELS, N_CELLS, cell_of
from .histogram import Release, Unreleasable, noise_tail, release, release_threshold
from .kinds import BINS, OTHER, column_from, names_codes, names_ids, public_column
from .metadata import Metadata
from .numbers import fine_charges, refine
from .notes import blank_records, column_changes, left_out_reasons
from .table import AUTO, ROWS_SHARE, infer, learn, needed_share

__all__ = ["learn", "infer", "AUTO", "ROWS_SHARE", "needed_share", "encoded", "Declared", "ColumnSpec", "Metadata",
           "undeclared", "public_column", "Unreleasable", "BINS", "OTHER", "Tally", "tally", "merged",
           "tallies", "column_values", "Release", "release", "release_threshold", "noise_tail", "refine",
           "fine_charges", "column_from", "names_codes", "names_ids", "column_changes", "left_out_reasons", "blank_records", "BOUNDARIES",
           "HOLDS_WHOLE", "LEVELS", "N_CELLS", "cell_of"]
