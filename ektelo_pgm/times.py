"""Dates and times written as text: the formats a column of times is read in (TIME_FORMATS),
the first format that reads each value (:func:`time_formats`), values read as whole seconds
since 1970-01-01T00:00:00 over any range of years (:func:`as_times`) and seconds written back
(:func:`time_texts`, :func:`time_text`); the units times and whole numbers are written in
(TIME_UNITS, NUMBER_UNITS; the finest a format writes :func:`finest_unit`; the coarsest each time
or number is a multiple of :func:`coarsest_units`, each time of CALENDAR_UNITS too
:func:`time_units`), the starts of days, months or years in a range of times
(:func:`calendar_marks`, put among bin edges by :func:`on_calendar`), of months or years in bins
of times (:func:`calendar_starts`, :func:`calendar_edges`, :func:`calendar_drawn`), and the hour
of the day and day of the week of a column of times as model attributes of their own
(:class:`ClockColumn`)."""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .table_io import canonical_value, pandas_module

#: Date and time formats (``strftime`` codes) a column's text is read in; a value is read in the
#: first that matches it whole.  ``%H:%M:%S`` reads a time of day, as the seconds since midnight;
#: those with ``%z`` read times at an offset from UTC (ISO 8601's ``+01:00``, ``+0100``, ``+01`` or
#: ``Z``; pandas writes a zoned time so) as UTC, and write them in UTC (``+00:00``).
TIME_FORMATS = ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%fZ",
                "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d", "%Y/%m/%d %H:%M:%S", "%m/%d/%Y",
                "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%d.%m.%Y", "%Y-%m", "%b-%Y", "%b %Y", "%d %b %Y",
                "%b %d, %Y", "%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M:%S%z", "%Y-%m-%dT%H:%M:%S.%f%z",
                "%Y-%m-%d %H:%M:%S.%f%z")

#: Units a time is written in, in seconds, coarsest first, each a multiple of the next: a day, an
#: hour, half and quarter hours and five minutes (timetables: Bundesliga's kick-offs, 80% at :30,
#: 19% on the hour, were drawn at any minute), a minute, a second.
TIME_UNITS = (86400, 3600, 1800, 900, 300, 60, 1)
#: Calendar units a time may be written in, coarser than a day, coarsest first: the start of a
#: year, of a month (monthly prices and rates are dated on the 1st: drawn on any day, 1 in 30 was).
CALENDAR_UNITS = ("year", "month")
#: Seconds in an hour, a day and a week.
HOUR, DAY, WEEK = 3600, 86400, 604800
#: Units whole numbers are written in, largest first: round amounts (a loan of 12,500 is a
#: multiple of 500, a wind of 35 knots of 5).  Not 2: half of any whole numbers are even, and
#: noise alone would write planes' one engine as two.
NUMBER_UNITS = (10**6, 10**5, 10**4, 1000, 500, 100, 50, 25, 10, 5, 1)

#: English month abbreviations, as ``%b`` writes them (and reads them, in any case).
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MONTHS_LOWER = tuple(m.lower() for m in MONTHS)
_TWO_DIGITS = np.array([f"{k:02d}" for k in range(100)])  # months, days, hours, ... as written
#: What each code of a time format (these, no other) reads: the forms of Python's ``strptime``
#: (1 or 2 digits, up to 9 of a fraction, seconds 60 and 61 rolling over as pandas reads them), but
#: a year of any range: 4 digits, or more without a leading zero (``10000``), negative too
#: (``-0001``, or ``-001`` as numpy and pandas write it).
_TIME_CODES = {"Y": r"-?(?:\d{4}|[1-9]\d{4,})|-\d{1,3}", "m": r"1[0-2]|0[1-9]|[1-9]",
               "d": r"3[01]|[12]\d|0[1-9]|[1-9]| [1-9]", "H": r"2[0-3]|[01]\d|\d", "M": r"[0-5]\d|\d",
               "S": r"6[01]|[0-5]\d|\d", "f": r"\d{1,9}", "b": "|".join(MONTHS),
               "z": r"Z|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?"}
#: Codes a time format may write without a leading zero, as ``%-m``: month, day, hour.
UNPADDED = ("m", "d", "H")


@functools.lru_cache(maxsize=64)
def _time_pieces(fmt: str) -> tuple:
    """The time format ``fmt`` cut into its codes (``"%Y"``, each of ``_TIME_CODES`` at most
    once; ``"%-m"``, one of UNPADDED written without a leading zero), runs of white space and
    other text.  Raises an InputError for any other use of %."""
    pieces = tuple(re.findall(r"%-?.?|\s+|[^%\s]+", fmt, flags=re.DOTALL))
    codes = [p[-1] for p in pieces if p.startswith("%")]
    if any(p.startswith("%") and p[1:] not in _TIME_CODES and p[2:] not in UNPADDED for p in pieces) \
            or len(set(codes)) < len(codes):
        raise InputError(f"time format {fmt!r}: use each of %{', %'.join(_TIME_CODES)} at most once "
                         f"(%-{', %-'.join(UNPADDED)}: without a leading zero)")
    return pieces


def _codes(fmt: str) -> frozenset:
    """The codes the time format ``fmt`` writes, padded or not: ``{"Y", "m", "d"}`` of ``"%Y-%-m-%d"``."""
    return frozenset(p[-1] for p in _time_pieces(fmt) if p.startswith("%"))


@functools.lru_cache(maxsize=64)
def _time_pattern(fmt: str) -> re.Pattern:
    """The regular expression reading text whole in the time format ``fmt``: its codes as named
    groups (a code of UNPADDED reads one or two digits, padded or not), a run of white space for
    each in it, in any case."""
    return re.compile("".join(f"(?P<{p[-1]}>{_TIME_CODES[p[-1]]})" if p.startswith("%") else
                              r"\s+" if p.isspace() else re.escape(p) for p in _time_pieces(fmt)), re.IGNORECASE)


def finest_unit(fmt: str) -> int:
    """The finest of TIME_UNITS the time format ``fmt`` writes, in seconds: a second with %S, a
    minute with %M, an hour with %H, else a day (a date: every time it reads is a midnight)."""
    codes = _codes(fmt)
    return next((unit for code, unit in (("S", 1), ("M", 60), ("H", 3600)) if code in codes), 86400)


def unpadded(fmt: str) -> str:
    """The time format ``fmt`` writing its months, days and hours (UNPADDED) without a leading
    zero, as spreadsheets write ``9/30/1990 0:00:00``."""
    return re.sub(f"%([{''.join(UNPADDED)}])", r"%-\1", padded(fmt))


def may_be_unpadded(fmt: str) -> bool:
    """Whether text in the time format ``fmt`` may write months, days or hours without leading
    zeros: it writes one of them (UNPADDED), and it is not ISO 8601's (``%Y-%m...``), padded always."""
    return not fmt.startswith("%Y-%m") and bool(_codes(fmt) & set(UNPADDED))


def padded(fmt: str) -> str:
    """The time format ``fmt`` writing every code of UNPADDED in two digits (``%-m`` as ``%m``)."""
    return fmt.replace("%-", "%")


def written_unpadded(texts: np.ndarray, found: np.ndarray) -> np.ndarray:
    """For each :func:`~ektelo_pgm.table_io.canonical` value and the index in TIME_FORMATS of the
    format that reads it (-1: none, :func:`time_formats`), whether it writes a month, day or hour
    of one digit, as only a format without leading zeros does (``9/30/1990``, not ``09/30/1990``)."""
    pd = pandas_module()
    out = np.zeros(len(texts), dtype=bool)
    for k in np.unique(found[found >= 0]):
        pattern, at = _time_pattern(TIME_FORMATS[k]), np.flatnonzero(found == k)
        groups = [g for g in UNPADDED if g in pattern.groupindex]
        if not groups:
            continue
        codes, uniques = pd.factorize(pd.Series(texts[at], dtype=object))
        short = np.array([any(len(m.group(g)) == 1 for g in groups)
                          for m in map(pattern.fullmatch, uniques)], dtype=bool)
        out[at] = short[codes]
    return out


def coarsest_units(whole: np.ndarray, units: tuple) -> np.ndarray:
    """For ``whole`` numbers (exact ints of any size; +-inf, a year past what Python reads, counts
    as a multiple of every unit), the index in ``units`` (largest first: TIME_UNITS in seconds,
    NUMBER_UNITS) of the first unit each is a multiple of (of times: 0 a midnight, 3 a time with
    seconds)."""
    whole = np.asarray(whole, dtype=object)
    try:
        exact = whole.astype(np.int64)
    except OverflowError:  # past int64, or infinite: one at a time
        return np.array([next((k for k, unit in enumerate(units) if int(s) % unit == 0), len(units) - 1)
                         if isinstance(s, (int, np.integer)) else 0 for s in whole], dtype=np.int64)
    found = np.full(exact.size, len(units) - 1, dtype=np.int64)
    for k in range(len(units) - 2, -1, -1):  # the coarsest last
        found[exact % units[k] == 0] = k
    return found


def time_units(whole: np.ndarray) -> np.ndarray:
    """For times ``whole`` (whole seconds since 1970-01-01T00:00:00, exact ints of any size; +-inf
    counts as the start of a year), the index of the coarsest unit each is a multiple of in
    CALENDAR_UNITS, then TIME_UNITS: 0 the start of a year, 1 of a month, 2 another midnight, ...,
    8 a time with seconds."""
    found = coarsest_units(whole, TIME_UNITS) + len(CALENDAR_UNITS)
    midnight = np.flatnonzero(found == len(CALENDAR_UNITS))
    times = np.asarray(whole, dtype=object)[midnight]
    try:
        days = times.astype(np.int64) // DAY
    except OverflowError:  # past int64, or infinite (read as 1970-01-01)
        days = np.array([int(s) // DAY if isinstance(s, (int, np.integer)) else 0 for s in times], dtype=object)
    _, month, day = _date(days)
    first = np.asarray(day == 1, dtype=bool)
    found[midnight] -= first.astype(np.int64) + (first & np.asarray(month == 1, dtype=bool))
    return found


def calendar_starts(lo, hi, calendar: str) -> tuple:
    """``(first, stop)``: the starts of months (``calendar`` ``"month"``) or of years (``"year"``)
    in each range ``[lo, hi)`` of seconds (floats) are those numbered ``first, ..., stop - 1``
    (months as 12 * year + month - 1, years as years; :func:`calendar_start` gives their seconds);
    none where ``stop <= first``, as in a range past 2^53 seconds."""
    return _calendar_from(lo, calendar), _calendar_from(hi, calendar)


def _calendar_from(seconds, calendar: str) -> np.ndarray:
    """The number (:func:`calendar_starts`) of the first start of a month or year at or after each of
    ``seconds`` (floats; 0 past 2^53 seconds)."""
    seconds = np.asarray(seconds, dtype=float)
    near = np.isfinite(seconds) & (np.abs(seconds) < 2.0 ** 53)
    year, month, day = _date(np.ceil(np.where(near, seconds, 0.0) / DAY).astype(np.int64))
    after = 12 * year + month - 1 + (day > 1) if calendar == "month" else year + ((month > 1) | (day > 1))
    return np.where(near, after, 0)


def calendar_start(number, calendar: str) -> np.ndarray:
    """Seconds (floats) since 1970-01-01T00:00:00 of the starts of months or years numbered as
    :func:`calendar_starts` numbers them."""
    number = np.asarray(number, dtype=np.int64)
    one = np.ones_like(number)
    year, month = (number // 12, number % 12 + 1) if calendar == "month" else (number, one)
    return _days(year, month, one) * float(DAY)


def calendar_edges(edges: np.ndarray, calendar: str) -> np.ndarray:
    """Ascending bin edges of times (seconds) moved onto starts of months or years, so that every
    bin holds one: the first down to the start at or before it, the others up to the start at or
    after it (each once)."""
    after = _calendar_from(edges, calendar)
    after[0] -= calendar_start(after[0], calendar) > edges[0]
    return np.unique(calendar_start(after, calendar))


def calendar_drawn(seconds: np.ndarray, lo: np.ndarray, hi: np.ndarray, calendar: str, rng=None) -> np.ndarray:
    """Times ``seconds`` (each in its bin ``[lo, hi)``) replaced by a start of a month or year in
    their bin, drawn uniformly with ``rng`` (None: the lower middle one), where it holds one."""
    first, stop = calendar_starts(lo, hi, calendar)
    held = stop > first
    pick = first + (np.floor(rng.random(first.shape) * (stop - first)) if rng is not None else (stop - first - 1) // 2)
    return np.where(held, calendar_start(np.where(held, pick, 0), calendar), seconds)


def _days(year, month, day):
    """Days from 1970-01-01 to dates of the proleptic Gregorian calendar (year 0 being 1 BC),
    exactly (Hinnant's days_from_civil): elementwise on integer arrays, or on object arrays of
    Python ints of any size."""
    year = year - (month <= 2)
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + 9 - 12 * (month > 2)) + 2) // 5 + day - 1
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468


def _date(days):
    """``(year, month, day)`` of numbers of days from 1970-01-01, the inverse of :func:`_days`
    (elementwise as it is)."""
    days = days + 719468
    era = days // 146097
    of_era = days - era * 146097
    year_of_era = (of_era - of_era // 1460 + of_era // 36524 - of_era // 146096) // 365
    of_year = of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted = (5 * of_year + 2) // 153
    month = shifted + 3 - 12 * (shifted >= 10)
    return year_of_era + era * 400 + (month <= 2), month, of_year - (153 * shifted + 2) // 5 + 1


def calendar_marks(lo: float, hi: float, most: int) -> np.ndarray:
    """The starts (seconds since 1970-01-01T00:00:00) of the days strictly between ``lo`` and ``hi``
    seconds when they are at most ``most``, else of the months when they are, else of the years
    when they are; else none (and none for a range past 2^53 seconds)."""
    if not (math.isfinite(lo) and math.isfinite(hi) and max(abs(lo), abs(hi)) < 2.0 ** 53 and lo < hi):
        return np.empty(0)
    first, last = math.floor(lo / DAY) + 1, math.ceil(hi / DAY) - 1  # the days starting inside
    if last - first + 1 <= most:
        return np.arange(first, last + 1) * float(DAY)
    for calendar in CALENDAR_UNITS[::-1]:  # months, then years: those starting on those days
        start, stop = calendar_starts(first * DAY, hi, calendar)
        if stop - start <= most:
            return calendar_start(np.arange(start, stop), calendar)
    return np.empty(0)


def on_calendar(inner: np.ndarray, marks: np.ndarray) -> np.ndarray:
    """The inner edges ``inner`` of a column of times with the calendar ``marks`` (the starts of its
    days, months or years, :func:`calendar_marks`) in place of the edge nearest each (both kept
    where one edge is the nearest to two): no bin straddles a month, so a time drawn in a bin
    keeps the month its code stands for (weather's time_hour agreed with its month column in 76%
    of synthetic rows, mean of 6 seeds, where its bins alone allowed 82%; 86% with edges on its
    months, where they allow 99.5%)."""
    if not marks.size or not inner.size:
        return np.concatenate([inner, marks])
    nearest = np.abs(inner[None, :] - marks[:, None]).argmin(axis=1)
    return np.concatenate([np.delete(inner, nearest), marks])


def _read_times(texts: np.ndarray, fmt: str) -> np.ndarray:
    """Whole seconds since 1970-01-01T00:00:00 of each text (an object array of str) read whole in
    the time format ``fmt`` (a fraction of a second dropped, so rounded down): an object array of
    exact Python ints over any range of years, +-inf for a year of more digits than Python reads
    as an int (as :func:`~ektelo_pgm.table_io.canonical` reads such a number), None where the
    format does not read the text (or its day is past the end of its month).  A format without a
    date reads its times on 1970-01-01: a time of day is the seconds since midnight (on
    pandas' 1900-01-01, 2.2e9 seconds before zero, the schema's grid of five significant digits
    would tell them apart only to 28 hours)."""
    pattern = _time_pattern(fmt)
    matches = [pattern.fullmatch(v) for v in texts]
    out = np.full(len(matches), None, dtype=object)
    found = [m.groups() for m in matches if m is not None]
    if not found:
        return out
    fields = np.array(found, dtype=object)  # str of any length, never a fixed width
    field = lambda code, default: fields[:, pattern.groupindex[code] - 1] if code in pattern.groupindex \
        else np.full(len(fields), default)  # noqa: E731
    years = field("Y", "1970").astype(object)
    if max(map(len, years)) <= 11:  # years below 10**11: seconds within int64
        year, beyond = years.astype(np.int64), np.zeros(len(years), dtype=bool)
    else:  # Python ints of any size; +-inf past the digits Python reads, counted as year 0 below
        year = np.array([canonical_value(y) for y in years], dtype=object)
        beyond = np.array([isinstance(y, float) for y in year], dtype=bool)
        year[beyond] = 0
    month = np.array([MONTHS_LOWER.index(b.lower()) + 1 for b in field("b", "")]) if "b" in pattern.groupindex \
        else field("m", "1").astype(np.int64)
    day = field("d", "1").astype(np.int64)
    days = _days(year, month, day)
    seconds = (days * 86400 + field("H", "0").astype(np.int64) * 3600 + field("M", "0").astype(np.int64) * 60
               + field("S", "0").astype(np.int64)).astype(object)
    if "z" in pattern.groupindex:
        seconds = seconds - _offsets(field("z", "Z"))
    seconds[beyond] = [float(y) for y in years[beyond]]
    seconds[(day > 28) & (_date(days)[1] != month)] = None  # 31 April, 29 February 2019
    out[[m is not None for m in matches]] = seconds
    return out


def time_formats(values: np.ndarray) -> np.ndarray:
    """For each :func:`~ektelo_pgm.table_io.canonical` value, the index in TIME_FORMATS of the first format that reads
    it whole (-1: none, or not text); each distinct text is read once per format."""
    pd = pandas_module()
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    found = np.full(len(values), -1, dtype=np.int64)
    if not text.any():
        return found
    codes, uniques = pd.factorize(pd.Series(values[text], dtype=object))
    first = np.full(len(uniques), -1, dtype=np.int64)
    for k, fmt in enumerate(TIME_FORMATS):
        open_ = np.flatnonzero(first < 0)
        if not open_.size:
            break
        first[open_[pd.notna(_read_times(uniques[open_], fmt))]] = k
    found[text] = first[codes]
    return found


def as_times(values: np.ndarray, fmt: str) -> np.ndarray:
    """:func:`~ektelo_pgm.table_io.canonical` values read in the time format ``fmt``: whole seconds since
    1970-01-01T00:00:00 for each text that it reads whole (:func:`_read_times`: an exact int, over
    any range of years), None for anything else."""
    pd = pandas_module()
    out = np.empty(len(values), dtype=object)
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    codes, uniques = pd.factorize(pd.Series(values[text], dtype=object))
    out[text] = np.append(_read_times(np.asarray(uniques, dtype=object), fmt), None)[codes]
    return out


def _offsets(zones: np.ndarray) -> np.ndarray:
    """Seconds east of UTC of each offset as ``%z`` reads it (``Z``, ``+01:00``, ``-0530``, ``+01``)."""
    def seconds(zone: str) -> int:
        digits = zone[1:].replace(":", "")
        east = int(digits[:2] or 0) * 3600 + int(digits[2:] or 0) * 60
        return -east if zone.startswith("-") else east
    of = {zone: seconds(zone) for zone in set(zones)}
    return np.array([of[zone] for zone in zones], dtype=np.int64)


def time_texts(seconds: np.ndarray, fmt: str) -> np.ndarray:
    """Whole ``seconds`` since 1970-01-01T00:00:00 (an integer array, or an object array of Python
    ints of any size) written in the time format ``fmt``: a str array, a year in at least 4 digits
    (``-0001``: 2 BC), a month of ``%b`` as in :data:`MONTHS`, a fraction ``%f`` as 000000."""
    days = seconds // 86400
    clock = (seconds - days * 86400).astype(np.int64)
    year, month, day = _date(days)
    text = np.asarray(year).astype(str)
    two = lambda x: _TWO_DIGITS[np.asarray(x, dtype=np.int64)]  # noqa: E731
    fields = {"%Y": np.where(year < 0, np.char.zfill(text, 5), np.char.zfill(text, 4)), "%m": two(month),
              "%d": two(day), "%H": two(clock // 3600), "%M": two(clock // 60 % 60), "%S": two(clock % 60),
              "%f": "000000", "%b": np.array(MONTHS)[np.asarray(month, dtype=np.int64) - 1], "%z": "+00:00",
              "%-m": np.asarray(month, dtype=np.int64).astype(str), "%-d": np.asarray(day, dtype=np.int64).astype(str),
              "%-H": (clock // 3600).astype(str)}
    return functools.reduce(np.char.add, [fields.get(p, p) for p in _time_pieces(fmt)], np.full(len(days), ""))


def time_text(seconds, fmt: str) -> str:
    """Whole ``seconds`` since 1970-01-01T00:00:00 (any range) written in the time format ``fmt``
    (:func:`time_texts`)."""
    return str(time_texts(np.array([int(seconds)], dtype=object), fmt)[0])


@dataclass(frozen=True)
class ClockColumn:
    """A cycle of the times of column ``source`` (written in ``time_format``) as a model attribute of
    its own, so that a model learns it with the other columns: ``step`` HOUR, the hour of the day
    (codes 0-23), or DAY, the day of the week (codes 0 Monday to 6 Sunday); then a missing code
    where ``missing`` (the source's blanks and text).  Binned over weeks alone, a year of police
    stops came out as likely at 6 a.m. as at 6 p.m. (mpls_stops: hour-of-day TVD 0.17; tweets
    0.31), and a stock index's trading days fell on weekends in 2 of 7 rows.  Read from the
    source's values (:meth:`codes`), drawn back into its times (:meth:`moved`), never written as a
    column.  Its categories are known without the table: it costs no privacy."""

    name: str
    source: str
    time_format: str
    missing: bool
    step: int

    @classmethod
    def of(cls, column) -> tuple:
        """The clocks of a :class:`~ektelo_pgm.columns.NumericColumn` of times: its hour of the day,
        ``"<column> (hour)"``, where written to the hour or finer (its unit divides an hour) over two
        days or more; its day of the week, ``"<column> (weekday)"``, where its format writes the day
        of the month and its unit divides a day (not a column of months or years: their weekdays
        follow from their dates), over two weeks or more."""
        if getattr(column, "time_format", None) is None or not column.integer:
            return ()
        span, unit = column.edges[-1] - column.edges[0], column.unit or 1
        hour = HOUR % unit == 0 and span >= 2 * DAY
        weekday = DAY % unit == 0 and column.calendar is None and span >= 2 * WEEK \
            and "d" in _codes(column.time_format)
        return tuple(cls(f"{column.name} ({label})", column.name, column.time_format, column.missing, step)
                     for label, step, kept in (("hour", HOUR, hour), ("weekday", DAY, weekday)) if kept)

    @property
    def period(self) -> int:
        """Seconds in one turn of the cycle: a day of hours, a week of days."""
        return DAY if self.step == HOUR else WEEK

    @property
    def phases(self) -> int:
        """Number of codes that are times: 24 hours or 7 days."""
        return self.period // self.step

    @property
    def shift(self) -> int:
        """The code of the first step after 1970-01-01T00:00:00: hour 0, or a Thursday (3)."""
        return 0 if self.step == HOUR else 3

    @property
    def size(self) -> int:
        """Number of codes: the phases, then the missing code where it has one."""
        return self.phases + int(self.missing)

    @property
    def meaning(self) -> str:
        """What its codes are, in words."""
        return "hours of the day" if self.step == HOUR else "days of the week"

    def codes(self, seconds: np.ndarray) -> np.ndarray:
        """The int64 code of each of the source's values as it reads them, whole seconds since
        1970-01-01T00:00:00: the hour or day of the week of the time, or for anything else (not a
        time, a time past any year read exactly: infinite) the missing code (0 without one)."""
        none = self.size - 1 if self.missing else 0
        seconds = np.asarray(seconds)
        if seconds.dtype.kind == "i":  # numbers as numpy holds them, at its speed
            return ((seconds // self.step + self.shift) % self.phases).astype(np.int64)
        if seconds.dtype.kind == "f":
            timed = np.isfinite(seconds)
            whole = np.floor(np.where(timed, seconds, 0.0))
            if np.all(np.abs(whole) < 2.0 ** 62):  # else past int64: one at a time, below
                return np.where(timed, (whole.astype(np.int64) // self.step + self.shift) % self.phases, none)
        step, shift, phases = self.step, self.shift, self.phases
        timed = [isinstance(s, (int, np.integer)) or isinstance(s, (float, np.floating)) and math.isfinite(s)
                 for s in seconds]  # exact ints of any size, or finite floats
        return np.array([(math.floor(s) // step + shift) % phases if t else none for s, t in zip(seconds, timed)],
                        dtype=np.int64)

    def moved(self, seconds: np.ndarray, codes: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Times ``seconds`` (whole, as floats, each in its bin ``[lo, hi)``) moved to the hour or
        day of the week ``codes`` (-1: left as they are) within their day or week, keeping their
        place within the hour or day, then by whole days or weeks into ``[lo, hi)``; left as they
        are where the bin holds no such time."""
        period = float(self.period)
        moved = np.floor(seconds / period) * period + (codes - self.shift) % self.phases * self.step \
            + seconds % self.step
        moved = moved + np.ceil(np.maximum(lo - moved, 0.0) / period) * period  # up to the bin, whole turns
        moved = np.where(moved >= hi, moved - (np.floor((moved - hi) / period) + 1) * period, moved)  # down into it
        return np.where((codes >= 0) & (moved >= lo) & (moved < hi), moved, seconds)
