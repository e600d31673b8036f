"""The noisy histograms of one column (:class:`Release`, :func:`release`): the counts of its
kinds, of its values and of its numbers on the grid, to each of which a record adds one, under
discrete Gaussian noise on a zCDP budget or discrete Laplace noise on a pure one
(:func:`noisy_counts`); the threshold a value's noisy count needs to be released
(:func:`release_threshold`, by the noise's tail :func:`noise_tail`) and the noisy count that
shows a count holds records (:func:`noise_bar`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from statistics import NormalDist

import numpy as np

from ..privacy import Budget, count_noise, gaussian, laplace
from ..number_formats import FRACTIONS, NUMBER_FORMATS, most_read, number_formats, reads
from ..table_io import as_float
from ..times import TIME_FORMATS, may_be_unpadded, time_formats, unpadded, written_unpadded
from .counts import chunks, hash_order
from .grid import LEVELS, N_CELLS, cell_of

#: Share of a column's histogram amount that counts its kinds (:func:`release`).
KIND_SHARE = Fraction(1, 5)
#: Share of the rest that counts how a column writes its values, where its kinds leave a choice: in
#: a column of times whose format may write months, days or hours without leading zeros, those
#: written in one digit (:func:`_padding`); in a column that surely holds plain whole numbers, those
#: written with a decimal point (:func:`_pointed`).  Its values' and levels' noise grows by 2.6%.
FORM_SHARE = Fraction(1, 20)
#: A column is numeric only if at most this share of its present values is text.
TEXT_SHARE = 0.01
#: A noisy count below this many noise stds may well be zero.
NOISE_Z = 3.0
#: Noise stds a decade's count must reach to be kept under Gaussian noise (the outermost, orders
#: of magnitude past the others, needs more: :func:`~.numbers._sure_decades`).
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
KINDS = ("missing", "text", "whole", "fractional")
#: Relative slack on the noise's tail bound against floating-point rounding (of the noise
#: parameter, exp and erfc: about 1e-14 here).
TAIL_MARGIN = 1e-9
#: The values' noise is drawn in blocks of fixed sizes, the first ``FIRST_BLOCK``, each next twice
#: the last up to ``LAST_BLOCK``, given to the values in :func:`~.counts.hash_order`: a column
#: gets the same noise read whole or range by range (a Spilled column).
FIRST_BLOCK, LAST_BLOCK = 64, 2**20


@dataclass(frozen=True)
class Release:
    """The noisy histogram of one column (counts): ``kinds`` (missing, text, whole, fractional),
    ``values`` (released value -> noisy count, those at or above ``threshold``), ``levels`` (the
    noisy counts of the numbers per decade, tenth and cell, see LEVELS; zeros for a column not
    of numbers), ``std``, the noise std of these counts, ``kind_std``, that of the kinds,
    ``kind_bar``, the noisy count that shows a kind holds records, ``decade_bar``, the noisy
    count a decade needs to be kept, and
    ``tenth_bar``, the noisy count that shows a tenth of a decade holds numbers.  After
    :func:`refine`: ``fine``, the noisy count of each node ``(cell, depth, index)`` below the
    cells it split (the ``index``-th of the ``10 ** depth`` equal parts of the cell), ``fine_bar``,
    the noisy count that shows a node holds numbers, ``fine_std``, the noise std of those
    counts, ``decimals``, the decimals that tell the column's numbers apart (None: full
    precision), ``distinct``, the noisy number of distinct whole numbers, ``unit``, the
    unit whole numbers are written in (of a column of times: in seconds, of TIME_UNITS), and
    ``calendar``, the unit of CALENDAR_UNITS a column of times is written in (None: none).
    ``time_format``: a column of times in that format, whose numbers are whole seconds
    (:func:`column_values`); ``number_format``: a column of numbers written with symbols, in
    that format of NUMBER_FORMATS; ``pointed``: a column whose whole numbers are mostly written with
    a decimal point (``61.0``: :func:`_pointed`); ``plain``, after :func:`refine`: a fractional
    column whose whole numbers are written without one (``0``, as R writes them).
    ``notion``: the budget's, whose noise the counts have (``"zcdp"``: discrete Gaussian)."""

    name: str
    kinds: dict
    values: dict
    levels: tuple
    threshold: float
    std: float
    kind_std: float
    kind_bar: float
    decade_bar: float
    tenth_bar: float
    fine: dict = field(default_factory=dict)
    fine_bar: float = math.inf
    fine_std: float = math.inf
    decimals: int | None = None
    distinct: float | None = None
    time_format: str | None = None
    number_format: str | None = None
    unit: int | None = None
    calendar: str | None = None
    pointed: bool = False
    plain: bool = False
    notion: str = "zcdp"

    @property
    def written_in(self) -> str | None:
        """The format the column's numbers are read from text in: of its times, or of its numbers
        written with symbols (None: neither)."""
        return self.time_format or self.number_format

    @property
    def whole_std(self) -> float:
        """The noise std of ``kinds["whole"]``: one count's, or in a column of numbers written with
        symbols, that of the sum of the counts its format reads whole (:func:`_noisy_kinds`)."""
        if self.number_format is None:
            return self.kind_std
        return self.kind_std * math.sqrt(1 + (reads(self.number_format) & ~FRACTIONS).sum())


def release(name: str, t, budget: Budget, amount, delta: float, rng, kind: str | None = None,
            kinds_of: Release | None = None) -> Release:
    """The noisy histograms of one column, read through its Tally or Spilled ``t`` chunk by
    chunk (:func:`~.counts.chunks`; see the module docstring), spending ``amount`` of ``budget``
    (its unit) in two charges, each
    with one count per record and level: ``KIND_SHARE`` of it on the kinds, the rest on the
    values and, for a column of numbers (:func:`shows_numbers` of the noisy kinds, or ``kind``
    ``"numeric"``), on the numbers' decades, tenths and cells; where the kinds leave a choice of
    form, ``FORM_SHARE`` of that rest goes first, in a third charge, on how the column writes its
    values: a column of times whose format :func:`~ektelo_pgm.times.may_be_unpadded`, whether to
    write them without leading zeros (:func:`_padding`); a column whose noisy kinds surely hold
    whole numbers (the kinds' bar) and no format, whether to write them with a decimal point
    (:func:`_pointed`; where they are whole numbers, :func:`whole_numbers`: a fractional column
    writes its whole ones with a point anyway).  Given ``kinds_of``, an earlier
    release of the same column, its noisy kinds (and forms) are reused, post-processing,
    and all of ``amount`` goes to the values and levels in one charge.  Values pass when their noisy
    count reaches the threshold that the values of one neighbouring step (one record's, or one
    person's under ``Person(K)``: :func:`release_threshold` with ``budget.max_rows``) pass with
    probability at most ``delta``.  Infinite numbers count as fractional, in the outer cells.
    The values' noise comes in blocks of fixed sizes (``FIRST_BLOCK``) in
    :func:`~.counts.hash_order`, then the levels': the same release however ``t`` is split."""
    label, exact = f"schema of column {name!r}", Fraction(repr(float(amount)))
    if kinds_of is None:
        kinds, kind_std, kind_bar, time_format, number_format = _noisy_kinds(
            t, budget, float_below(exact * KIND_SHARE), rng, label, kind)
        exact *= 1 - KIND_SHARE
        pointed = False
        if time_format is not None and may_be_unpadded(time_format):
            time_format = _padding(t, time_format, budget, float_below(exact * FORM_SHARE), rng, label)
            exact *= 1 - FORM_SHARE
        elif time_format is None and number_format is None and kinds["whole"] >= kind_bar \
                and whole_numbers(kinds, kind_std):
            pointed = _pointed(t, kinds["whole"], budget, float_below(exact * FORM_SHARE), rng, label)
            exact *= 1 - FORM_SHARE
    else:
        kinds, kind_std, kind_bar, time_format, number_format, pointed = (
            kinds_of.kinds, kinds_of.kind_std, kinds_of.kind_bar, kinds_of.time_format, kinds_of.number_format,
            kinds_of.pointed)
    of_numbers = kind == "numeric" or time_format is not None or number_format is not None \
        or kind is None and shows_numbers(kinds, kind_std, kind_bar)
    draw, scale, std = noise_draws(1 + len(LEVELS) if of_numbers else 1, budget, float_below(exact), rng, label)
    threshold = release_threshold(budget.notion, scale, delta, budget.max_rows)
    blocks, released, cells = _Blocks(draw), {}, np.zeros(N_CELLS)
    for c in chunks(t, time_format or number_format):
        order = hash_order(c.values)
        values, counts = c.values[order], c.counts[order]
        noisy = (counts + blocks.take(len(values))).astype(float)
        passed = noisy >= threshold
        released.update(zip(values[passed], noisy[passed]))
        if of_numbers:
            number = np.array([isinstance(v, (int, float)) for v in values], dtype=bool)
            floats = np.array([as_float(v) for v in values[number]], dtype=float)
            cells += np.bincount(cell_of(floats), weights=counts[number], minlength=N_CELLS)
    if of_numbers:
        answers = np.concatenate([np.bincount(group, weights=cells) for group in LEVELS])
        noisy = answers + draw(answers.size).astype(float)
        levels = np.split(noisy, np.cumsum([group.max() + 1 for group in LEVELS])[:-1])
    else:
        levels = [np.zeros(group.max() + 1) for group in LEVELS]
    return Release(name, kinds, released, tuple(levels), threshold, std, kind_std, kind_bar,
                   noise_bar(budget.notion, scale, DECADE_Z, DECADE_MISS), noise_bar(budget.notion, scale, RANGE_Z, RANGE_MISS),
                   time_format=time_format, number_format=number_format, pointed=pointed, notion=budget.notion)


def _noisy_kinds(t, budget: Budget, amount: float, rng, label: str, kind: str | None) -> tuple:
    """``(kinds, kind_std, kind_bar, time_format, number_format)`` of :func:`release`: the noisy
    count of each kind of the column's values (one count per record, spending ``amount``), the
    noise std and bar of those counts, and the format of a column of times or of numbers written
    with symbols (None for one fixed ``kind`` categorical); in a column of times, its times are
    its numbers and anything else is text; in one of numbers written with symbols, the numbers
    its format reads (:func:`_number_format`)."""
    formats = len(NUMBER_FORMATS)
    kinds = np.zeros(4 + len(TIME_FORMATS) + 3 * formats)
    kinds[0] = t.missing
    for c in chunks(t):
        whole = np.array([isinstance(v, int) for v in c.values], dtype=bool)
        number = whole | np.array([isinstance(v, float) for v in c.values], dtype=bool)
        timed = time_formats(c.values)
        times = np.bincount(timed + 1, weights=c.counts, minlength=len(TIME_FORMATS) + 1)
        slot = np.where(timed < 0, number_formats(c.values), -1)
        symbols = np.bincount(slot + 1, weights=c.counts, minlength=3 * formats + 1)[1:]
        kinds += [0, times[0] - c.counts[number].sum() - symbols.sum(), c.counts[whole].sum(),
                  c.counts[number & ~whole].sum(), *times[1:], *symbols]
    kinds, kind_scale, kind_std = noisy_counts(kinds, 1, budget, amount, rng, label + ": kinds")
    kind_bar = noise_bar(budget.notion, kind_scale, DECADE_Z, DECADE_MISS)
    missing, text, numbers = kinds[0], kinds[1], kinds[2:4]
    sure = np.where(kinds[4:] >= kind_bar, kinds[4:], 0.0)  # text in a format (noise alone adds nothing)
    time_format = None if kind == "categorical" else _time_format(kinds, kind_std, kind_bar)
    if time_format is not None:
        at = 4 + TIME_FORMATS.index(time_format)
        return (dict(zip(KINDS, [missing, text + numbers.sum() + sure.sum() - sure[at - 4], kinds[at], 0.0])),
                kind_std, kind_bar, time_format, None)
    miss = DECADE_MISS / (3 * formats)  # any of a column's counts of numbers with symbols, empty, passes so rarely
    format_bar = noise_bar(budget.notion, kind_scale, NormalDist().inv_cdf(1.0 - miss), miss)
    number_format = None if kind == "categorical" else _number_format(kinds, kind_std, format_bar)
    if number_format is None:
        return dict(zip(KINDS, [missing, text + sure.sum(), *numbers])), kind_std, kind_bar, None, None
    read, symbols = reads(number_format), kinds[4 + len(TIME_FORMATS):]
    return (dict(zip(KINDS, [missing, text + sure.sum() - sure[len(TIME_FORMATS):][read].sum(),
                             numbers[0] + symbols[read & ~FRACTIONS].sum(),
                             numbers[1] + symbols[read & FRACTIONS].sum()])),
            kind_std, kind_bar, None, number_format)


def _padding(t, fmt: str, budget: Budget, amount: float, rng, label: str) -> str:
    """The time format ``fmt`` of the column read through ``t``, written without leading zeros
    (:func:`~ektelo_pgm.times.unpadded`) where the noisy count of the times it reads that write a
    month, day or hour in one digit (one count per record, spending ``amount``) surely holds some
    (the decades' bar): spreadsheets write ``9/30/1990 0:00:00``, and a padded column has none."""
    short, at = 0, TIME_FORMATS.index(fmt)
    for c in chunks(t):
        found = time_formats(c.values)
        short += c.counts[written_unpadded(c.values, np.where(found == at, found, -1))].sum()
    noisy, scale, _ = noisy_counts(np.array([short]), 1, budget, amount, rng, label + ": times without leading zeros")
    return unpadded(fmt) if noisy[0] >= noise_bar(budget.notion, scale, DECADE_Z, DECADE_MISS) else fmt


def _pointed(t, whole: float, budget: Budget, amount: float, rng, label: str) -> bool:
    """Whether the column read through ``t``, whose noisy kinds count ``whole`` whole numbers, writes
    them with a decimal point (:attr:`Release.pointed`): the noisy count of those written so (one
    count per record, spending ``amount``; :attr:`~.counts.Tally.pointed`) is past ``NOISE_Z`` stds
    and more than half of ``whole`` (pandas writes a column of whole numbers with blanks as
    ``61.0``; another writes ``61``)."""
    noisy, _, std = noisy_counts(np.array([t.pointed]), 1, budget, amount, rng, label + ": whole numbers with a point")
    return bool(noisy[0] >= NOISE_Z * std and noisy[0] > whole / 2)


def _number_format(kinds: np.ndarray, std: float, bar: float) -> str | None:
    """The format of a column of numbers written with symbols, from its noisy kinds (missing,
    text, whole, fractional, one count per TIME_FORMATS, then the counts of
    :func:`~ektelo_pgm.number_formats.number_formats`, each of noise std ``std``): the format
    that reads the most of those that surely hold some (:func:`~ektelo_pgm.number_formats.most_read`;
    each at least ``bar``: noise alone lifts any of a plain column's past it about once in
    300,000 columns, which would write its numbers with the signs), when the text it does not read
    (:func:`~ektelo_pgm.number_formats.reads`; other formats' counts too, where they reach ``bar``)
    is at most ``TEXT_SHARE`` of all that is present (up to ``NOISE_Z`` stds of two counts); else
    None."""
    counts = np.clip(kinds[1:], 0.0, None)
    counts[3:] = np.where(counts[3:] >= bar, counts[3:], 0.0)
    written = counts[3 + len(TIME_FORMATS):]
    fmt = most_read(written)
    if fmt is None:
        return None
    rest = counts[0] + counts[3:].sum() - written[reads(fmt)].sum()
    return fmt if rest <= TEXT_SHARE * counts.sum() + NOISE_Z * std * math.sqrt(2) else None


class _Blocks:
    """The values' noise, ``draw(n)`` taken in blocks of fixed sizes (``FIRST_BLOCK``), handed out in turn."""

    def __init__(self, draw):
        self.draw, self.size, self.left = draw, FIRST_BLOCK, np.empty(0, dtype=np.int64)

    def take(self, n: int) -> np.ndarray:
        drawn = [self.left]
        while sum(len(d) for d in drawn) < n:
            drawn.append(self.draw(self.size))
            self.size = min(2 * self.size, LAST_BLOCK)
        drawn = np.concatenate(drawn)
        self.left = drawn[n:]
        return drawn[:n]


def _time_format(kinds: np.ndarray, std: float, bar: float) -> str | None:
    """The format of a column of times, from its noisy kinds (missing, text, whole, fractional,
    then one count per TIME_FORMATS, then those of NUMBER_FORMATS, each of noise std ``std``):
    the time format most values are read in, when its count surely holds some (at least
    ``bar``, as every other format counted: the decades' bar, for one of many counts that noise
    alone passes about once in 10^5 columns) and all else present is at most ``TEXT_SHARE`` of
    it all (up to ``NOISE_Z`` stds of the sum of text, numbers and another format); else None."""
    counts = np.clip(kinds[1:], 0.0, None)
    counts[3:] = np.where(counts[3:] >= bar, counts[3:], 0.0)
    at = int(np.argmax(counts[3:3 + len(TIME_FORMATS)]))
    rest = counts.sum() - counts[3 + at]
    if counts[3 + at] > 0 and rest <= TEXT_SHARE * counts.sum() + NOISE_Z * std * math.sqrt(4):
        return TIME_FORMATS[at]
    return None


def shows_numbers(kinds: dict, std: float, bar: float) -> bool:
    """Whether noisy ``kinds`` (each of noise std ``std``) show a column of numbers: surely some
    numbers (``NOISE_Z`` stds), and at most ``TEXT_SHARE`` of text, up to ``bar``, the count
    that shows a kind holds records.  At three stds of text, noise alone read a column of
    numbers as text, leaving it out or coding it as categories, about once in 1,300 columns on
    ames (2,930 rows, 75 columns) and once in 3,400 on who (its year, in one schema of three),
    and once in 150 under Laplace noise at epsilon 1; at the bar, once in 600,000 on ames."""
    text, whole, fractional = (max(kinds[k], 0.0) for k in ("text", "whole", "fractional"))
    return whole + fractional >= NOISE_Z * std and text <= TEXT_SHARE * (text + whole + fractional) + bar


def whole_numbers(kinds: dict, std: float) -> bool:
    """Whether the numbers that noisy ``kinds`` (each of noise std ``std``) count are whole: at most
    ``TEXT_SHARE`` of them fractional, up to ``NOISE_Z`` stds."""
    whole, fractional = max(kinds["whole"], 0.0), max(kinds["fractional"], 0.0)
    return bool(fractional <= TEXT_SHARE * (whole + fractional) + NOISE_Z * std)


def noise_draws(per_record: int, budget: Budget, amount, rng, label: str):
    """``(draw, noise scale, noise std)`` for counts to which a record adds one to at most
    ``per_record`` of them, spending ``amount`` of ``budget`` in one charge now
    (:func:`~ektelo_pgm.privacy.count_noise`); ``draw(n)`` gives ``n`` more draws of the noise,
    as :func:`noisy_counts` adds."""
    if budget.notion == "zcdp":
        sensitivity = budget.sensitivity(math.sqrt(per_record))
        scale = sensitivity / math.sqrt(2.0 * float(amount))
        std = scale
    else:
        sensitivity = budget.sensitivity(per_record)
        scale = sensitivity / float(amount)
        std = scale * math.sqrt(2.0)
    return count_noise(sensitivity, amount, rng, budget=budget, label=label), scale, std


def noisy_counts(answers: np.ndarray, per_record: int, budget: Budget, amount, rng, label: str):
    """``(noisy answers, noise scale, noise std)`` of counts to which a record adds one to at
    most ``per_record`` of them, spending ``amount`` of ``budget`` in one charge: discrete
    Gaussian noise under zCDP, discrete Laplace under pure DP, at the sensitivity the budget's
    relation gives (``K`` records of one person: ``K`` times a record's)."""
    if budget.notion == "zcdp":
        sensitivity = budget.sensitivity(math.sqrt(per_record))
        scale = sensitivity / math.sqrt(2.0 * float(amount))
        return gaussian(answers, sensitivity, amount, rng, budget=budget, label=label).astype(float), scale, scale
    sensitivity = budget.sensitivity(per_record)
    scale = sensitivity / float(amount)
    noisy = laplace(answers, sensitivity, amount, rng, budget=budget, label=label).astype(float)
    return noisy, scale, scale * math.sqrt(2.0)


def noise_bar(notion: str, scale: float, z: float, miss: float) -> float:
    """The noisy count that shows a count holds records: ``z`` noise stds under Gaussian noise;
    under Laplace noise, whose tails are heavier, the count an empty one passes with probability
    at most ``miss`` (the Gaussian's at ``z`` stds)."""
    return z * scale if notion == "zcdp" else release_threshold(notion, scale, miss) - 1


def float_below(exact: Fraction) -> float:
    """The largest float at most ``exact``."""
    share = float(exact)
    while Fraction(repr(share)) > exact:
        share = float(np.nextafter(share, 0.0))
    return share


def release_threshold(notion: str, scale: float, delta: float, rows: int = 1) -> float:
    """The noisy count a value needs to be released: ``rows + t`` for the least whole ``t`` at
    which the noise ``X`` (integers) has ``P[X >= t] <= delta / rows``, so that the values that
    only one neighbouring step of at most ``rows`` records holds pass, together, with probability
    at most ``delta``; by :func:`noise_tail`.

    With ``rows = 1`` (one record): its one value, of count 1, passes with probability at most
    ``P[X >= t] <= delta``.  With ``rows = K`` (one person, ``Person(K)``): the person holds at
    most ``K`` values no one else holds, of counts ``c_i >= 1`` with ``sum c_i <= K``, absent
    (never released) without them; by the union bound any of them passes with probability at most
    ``sum_i P[X >= rows + t - c_i] <= K P[X >= t] <= delta``.  Every other value's count moves by
    at most ``K``, which the noise's sensitivity (``budget.sensitivity``) covers."""
    tail = lambda t: noise_tail(notion, scale, t) * (1.0 + TAIL_MARGIN) * rows <= delta  # noqa: E731
    hi = 1
    while not tail(hi):
        hi *= 2
    lo = 0  # tail(lo) fails or lo == 0; tail(hi) holds
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if tail(mid) else (mid, hi)
    return float(rows + (0 if tail(0) else hi))


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
