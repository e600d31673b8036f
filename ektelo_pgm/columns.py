"""The columns of a :class:`~ektelo_pgm.encoding.TableEncoder`: :class:`CategoricalColumn`, one
code per category (then an other and a missing code where it has them), and
:class:`NumericColumn`, one code per bin (then a missing code); each fitted from a public table,
from declared categories or bounds, or privately (noisy category counts, noisy quantiles), and
each encoding a cleaned column to codes and decoding codes to values."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .density import check_density, cut_density
from .errors import InputError
from .number_formats import NUMBER_FORMATS, number_texts
from .privacy import Budget, exponential, laplace
from .table_io import pandas_module
from .times import CALENDAR_UNITS, calendar_drawn, calendar_start, calendar_starts, time_text, time_texts

#: Most candidate edges the exponential mechanism chooses among per quantile.
QUANTILE_CANDIDATES = 1024


def json_value(value):
    """A value as a plain, JSON-friendly Python scalar (numpy scalars unwrapped, whole floats as ints)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _numbers(name: str, values):
    """``values`` (cleaned) as float64, raising on the first one that is not a number."""
    pd = pandas_module()
    numbers = pd.to_numeric(values, errors="coerce").astype(float)
    bad = np.flatnonzero(numbers.isna().to_numpy() & values.notna().to_numpy())
    if bad.size:
        row = int(bad[0])
        raise InputError(f"column {name!r}: value {values.iloc[row]!r} in row {row} is not a number")
    return numbers.to_numpy()


def _whole_numbers(values, present: np.ndarray) -> np.ndarray:
    """The non-missing values (``present`` marks them) as exact Python ints (object array):
    integers keep every digit, even beyond 2**53 where float64 would round them."""
    pd = pandas_module()
    exact = pd.to_numeric(values[present])
    return np.array([int(v) for v in exact], dtype=object)


def _first_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True)
class CategoricalColumn:
    """A column coded by category: code ``i`` is ``categories[i]``; when ``other`` (a label)
    is given, the next code stands for every value outside the categories and decodes to that
    label; when ``missing`` the last code stands for a missing value.  ``public``: the categories
    were declared public knowledge and read from the table as they are (not a private release).
    ``fallback``: the category of a value the column has no other code for (without an other or
    a missing code; :func:`~ektelo_pgm.schema.encoded`), one of ``categories`` (None: the first).
    ``pointed``: its whole-number categories are written with a decimal point, ``61.0``, as floats
    (:func:`~ektelo_pgm.table_io.typed`)."""

    name: str
    categories: tuple
    missing: bool
    others_missing: bool = False  # values outside the categories get the missing code (without other)
    other: str | None = None
    public: bool = False
    fallback: object = None
    pointed: bool = False

    kind = "categorical"

    def __post_init__(self):
        if self.fallback is not None and self.fallback not in self.categories:
            raise InputError(f"column {self.name!r}: its fallback is not one of its categories")

    @property
    def fallback_code(self) -> int:
        """The code of :attr:`fallback`."""
        return 0 if self.fallback is None else self.categories.index(self.fallback)

    @property
    def size(self) -> int:
        """Number of codes of the column."""
        return len(self.categories) + int(self.other is not None) + int(self.missing)

    @classmethod
    def fit(cls, name: str, values) -> "CategoricalColumn":
        """Learn the categories of a cleaned column (numbers first, then strings, each sorted)."""
        present = {json_value(v) for v in values.dropna().unique()}
        cats = sorted(present, key=lambda v: (isinstance(v, str), v))
        return cls(name, tuple(cats), bool(values.isna().any()))

    @classmethod
    def private(cls, name: str, tally, universe, threshold: float | None, epsilon: float | None,
                budget: Budget | None, rng) -> "CategoricalColumn":
        """The declared categories ``universe`` (with a missing code).  With a ``threshold``,
        only those whose noisy count (integer Laplace noise, ``epsilon``; one record is in
        one category, so the counts' L1 sensitivity is 1) reaches it are kept.  ``tally``
        reads the cleaned column (see :func:`_tally`)."""
        universe = tuple(dict.fromkeys(json_value(v) for v in universe))
        if not universe:
            raise InputError(f"column {name!r}: the declared categories are empty")
        if threshold is None:
            return cls(name, universe, True, True)
        index = pandas_module().Index(list(universe), dtype=object)

        def count(values):
            codes = index.get_indexer(values.dropna().to_numpy(dtype=object))
            return np.bincount(codes[codes >= 0], minlength=len(universe))

        counts = tally(count).astype(float)
        noisy = laplace(counts, budget.sensitivity(1.0), epsilon, rng, budget=budget,
                        label=f"TableEncoder: categories of {name!r}")
        return cls(name, tuple(c for c, n in zip(universe, noisy) if n >= threshold), True, True)

    def encode(self, values, clip: bool = False) -> np.ndarray:
        """Codes of a cleaned column; raises on a value not seen at fit time
        (``clip`` concerns numeric columns only)."""
        pd = pandas_module()
        codes = pd.Index(list(self.categories), dtype=object).get_indexer(values.to_numpy(dtype=object))
        missing = values.isna().to_numpy()
        if self.other is not None:
            codes[(codes < 0) & ~missing] = len(self.categories)
        absent = missing | (self.others_missing & (codes < 0))
        if absent.any():
            if not self.missing:
                row = _first_row(absent)
                raise InputError(f"column {self.name!r}: missing value in row {row}, "
                                 "but the column had no missing values when the encoder was fitted")
            codes[absent] = self.size - 1
        if (codes < 0).any():
            row = _first_row(codes < 0)
            raise InputError(f"column {self.name!r}: value {values.iloc[row]!r} in row {row} "
                             f"was not seen when the encoder was fitted (known: {list(self.categories)[:20]})")
        return codes.astype(np.int64)

    def decode(self, codes: np.ndarray, within_bin: str, rng: np.random.Generator):
        """The category of each code (the ``other`` label for its code, NaN for the missing code)."""
        pd = pandas_module()
        lookup = np.array(list(self.categories) + ([] if self.other is None else [self.other]) + [np.nan],
                          dtype=object)
        used, at = np.unique(codes, return_inverse=True)  # typed by the values present, once each
        return pd.Series(lookup[used], dtype=object).infer_objects().take(at).reset_index(drop=True).rename(self.name)

    def labels(self) -> list[str]:
        """A readable label per code."""
        return [str(c) for c in self.categories] + ([] if self.other is None else [self.other]) + \
            (["<missing>"] if self.missing else [])

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "categories": list(self.categories),
                "missing": self.missing, "others_missing": self.others_missing, "other": self.other,
                **({"public": True} if self.public else {}),
                **({} if self.fallback is None else {"fallback": self.fallback}),
                **({"pointed": True} if self.pointed else {})}


@dataclass(frozen=True)
class NumericColumn:
    """A column coded by bin.  Code ``i`` is the bin ``[edges[i], edges[i+1])``.

    For a column of whole numbers (``integer``) the edges are whole numbers
    and the last edge is one more than the largest value, so every bin holds
    the whole numbers ``edges[i] .. edges[i+1]-1``; otherwise the last bin is
    closed, ``[edges[-2], edges[-1]]``.  When ``missing`` the last code,
    ``len(edges) - 1``, stands for a missing value.  ``decimals`` (fractional columns): decoded
    values are rounded to that many decimals, as the column's numbers are written (None: not
    rounded).  ``time_format``: the numbers are whole seconds since 1970-01-01T00:00:00, read
    from and written as text in that format (:func:`as_times`); ``unit``: decoded whole numbers
    are multiples of it (25: a loan's amount; times in seconds, 86400: midnights, 3600: on the
    hour; None: any).  ``fallback``: a value the column cannot code (without a missing code;
    :func:`~ektelo_pgm.schema.encoded`) gets the bin holding this number (None: the first bin).
    ``number_format``: the numbers are read from and written as text in that format of
    :data:`~ektelo_pgm.number_formats.NUMBER_FORMATS` (``$1,234.5``).  ``density``: where the
    numbers lie inside the bins, as ``(lower, upper, records)`` intervals, ascending and disjoint,
    each holding about ``records`` numbers spread evenly (None: each bin evenly); :meth:`decode`
    draws inside a bin by it, so that numbers heaped on a few values stay there.  ``pointed``: its
    whole numbers are written with a decimal point, ``61.0``, as floats (:func:`~ektelo_pgm.table_io.typed`);
    ``plain`` (fractional columns): its whole numbers are written without one, ``0``, in a text file.
    ``whole_share`` (fractional columns): the share of the numbers drawn inside a bin that are whole
    (None: as many as fall on the grid of its ``decimals``).  ``calendar`` (times): one of
    CALENDAR_UNITS, ``"month"`` or ``"year"``: decoded times are starts of months or years where
    their bin holds one (monthly prices, dated on the 1st; None: any multiple of ``unit``).
    """

    name: str
    edges: tuple
    integer: bool
    missing: bool
    decimals: int | None = None
    time_format: str | None = None
    unit: int | None = None
    fallback: float | None = None
    number_format: str | None = None
    density: tuple | None = None
    pointed: bool = False
    plain: bool = False
    whole_share: float | None = None
    calendar: str | None = None

    kind = "numeric"

    def __post_init__(self):
        unit, fallback, share = self.unit, self.fallback, self.whole_share
        if self.number_format is not None and self.number_format not in NUMBER_FORMATS:
            raise InputError(f"column {self.name!r}: \"number_format\" must be one of {', '.join(NUMBER_FORMATS)}, "
                             f"got {self.number_format!r}")
        if unit is not None and (not isinstance(unit, int) or isinstance(unit, bool) or unit < 1):
            raise InputError(f"column {self.name!r}: \"unit\" must be a whole number of at least 1, got {unit!r}")
        if fallback is not None and (not isinstance(fallback, (int, float)) or isinstance(fallback, bool)
                                     or not math.isfinite(fallback)):
            raise InputError(f"column {self.name!r}: \"fallback\" must be a finite number, got {fallback!r}")
        if share is not None and (not isinstance(share, (int, float)) or isinstance(share, bool)
                                  or not 0 <= share <= 1):
            raise InputError(f"column {self.name!r}: \"whole_share\" must be a number from 0 to 1, got {share!r}")
        if self.calendar is not None and (self.calendar not in CALENDAR_UNITS or self.time_format is None
                                          or not self.integer):
            raise InputError(f"column {self.name!r}: \"calendar\" must be one of {', '.join(CALENDAR_UNITS)}, in "
                             f"a column of times (\"time_format\", whole seconds), got {self.calendar!r}")
        if self.density is not None:
            check_density(self.name, self.density)
            object.__setattr__(self, "density", tuple(tuple(part) for part in self.density))

    @property
    def bins(self) -> int:
        """Number of bins (codes other than the missing one)."""
        return len(self.edges) - 1

    @property
    def written_in(self) -> str | None:
        """The format its numbers are read from and written as text in: of its times, or of its
        numbers written with symbols (None: neither, numbers)."""
        return self.time_format or self.number_format

    @property
    def size(self) -> int:
        """Number of codes of the column."""
        return self.bins + int(self.missing)

    @property
    def fallback_code(self) -> int:
        """The code of the bin holding :attr:`fallback` (an end bin for a number beyond them)."""
        if self.fallback is None:
            return 0
        at = np.searchsorted(np.asarray(self.edges, dtype=float), float(self.fallback), side="right") - 1
        return int(np.clip(at, 0, self.bins - 1))

    @property
    def largest(self) -> float:
        """The largest value :meth:`decode` gives: of whole numbers (or times), the last below the
        last edge (a multiple of ``unit``; of a ``calendar``, the last start of a month or year);
        else the last edge, or the number alone in a last bin one float wide (a point mass: 10,
        not 10.000000000000002)."""
        last = self.edges[-1]
        if self.integer:
            first, stop = calendar_starts(self.edges[0], last, self.calendar) if self.calendar else (0, 0)
            if stop > first:
                return int(calendar_start(stop - 1, self.calendar))
            unit = self.unit or 1
            return (last - 1) // unit * unit
        below = self.edges[-2]
        return below if np.nextafter(below, np.inf) == last else last

    @classmethod
    def fit(cls, name: str, values, bins: int, binning: str) -> "NumericColumn":
        """Learn at most ``bins`` bin edges of a cleaned numeric column."""
        numbers = _numbers(name, values)
        present = numbers[~np.isnan(numbers)]
        if present.size == 0:
            raise InputError(f"column {name!r} is numeric but has no values that are not missing")
        if not np.isfinite(present).all():
            row = _first_row(np.isinf(numbers))
            raise InputError(f"column {name!r}: value {numbers[row]!r} in row {row} is infinite")
        integer = bool(np.all(present == np.round(present)))
        if integer and np.abs(present).max() >= 2.0 ** 53:  # beyond float precision: exact ints
            return cls._fit_large_integers(name, values, ~np.isnan(numbers), bins, binning)
        lo, hi = float(present.min()), float(present.max())
        top = hi + 1 if integer else hi
        if binning == "uniform":
            edges = np.linspace(lo, top, bins + 1)
        else:
            edges = np.quantile(present, np.linspace(0, 1, bins + 1))
            edges[0], edges[-1] = lo, top
        if integer:
            edges = np.ceil(edges)
        edges = np.unique(edges)
        if edges.size == 1:  # a constant float column: one closed bin [lo, lo]
            edges = np.array([lo, lo])
        return cls(name, tuple(json_value(e) for e in edges), integer, bool(np.isnan(numbers).any()))

    @classmethod
    def _fit_large_integers(cls, name, values, present, bins, binning) -> "NumericColumn":
        """:meth:`fit` for whole numbers beyond 2**53, in exact integer arithmetic (edges
        rounded up as in the float path; quantiles taken as order statistics)."""
        ints = np.sort(_whole_numbers(values, present))
        lo, top = int(ints[0]), int(ints[-1]) + 1
        if binning == "uniform":
            edges = [lo - (-(top - lo) * i // bins) for i in range(bins + 1)]
        else:
            edges = [lo] + [int(ints[-(-(ints.size - 1) * i // bins)]) for i in range(1, bins)] + [top]
        return cls(name, tuple(sorted(set(edges))), True, bool((~present).any()))

    @classmethod
    def from_bounds(cls, name: str, bounds, bins: int) -> "NumericColumn":
        """``bins`` equal-width bins over the declared ``bounds = (lo, hi)`` (whole numbers
        when both bounds are ints), with a missing code; reads no data."""
        lo, hi, integer = check_bounds(name, bounds)
        edges = np.linspace(lo, hi + 1 if integer else hi, bins + 1)
        return cls._from_edges(name, edges, lo, hi, integer)

    @classmethod
    def _from_edges(cls, name, edges, lo, hi, integer) -> "NumericColumn":
        edges = np.unique(np.ceil(edges) if integer else edges)
        if edges.size == 1:
            edges = np.array([lo, hi])
        return cls(name, tuple(json_value(e) for e in edges), integer, True)

    @classmethod
    def private_quantiles(cls, name: str, tally, bounds, bins: int, epsilon: float,
                          budget: Budget, rng) -> "NumericColumn":
        """Bins whose ``bins - 1`` inner edges are noisy quantiles of a cleaned column within
        the declared ``bounds``: each edge is chosen by an ``epsilon`` exponential mechanism
        among at most ``QUANTILE_CANDIDATES`` evenly spaced candidates, scoring a candidate
        ``c`` for quantile ``q`` by ``-|(1-q) #{x < c} - q #{x >= c}|`` (counts; one record
        moves it by at most 1).  Missing values are ignored, values outside the bounds
        clipped into them; one exponential-mechanism charge per edge.  ``tally`` reads the
        cleaned column (see :func:`_tally`)."""
        lo, hi, integer = check_bounds(name, bounds)
        top = hi + 1 if integer else hi
        if integer and top - lo <= QUANTILE_CANDIDATES:
            candidates = np.arange(lo + 1, top, dtype=float)
        else:
            candidates = np.linspace(lo, top, QUANTILE_CANDIDATES + 2)[1:-1]
            candidates = np.unique(np.ceil(candidates)) if integer else candidates

        def count(values):  # the number of values present, then the number below each candidate
            numbers = _numbers(name, values)
            present = np.sort(np.clip(numbers[~np.isnan(numbers)], lo, hi))
            return np.concatenate([[present.size], np.searchsorted(present, candidates, side="left")])

        counts = tally(count).astype(float)
        below = counts[1:]
        above = counts[0] - below
        inner = []
        if candidates.size:
            for j in range(1, bins):
                q = j / bins
                scores = -np.abs((1 - q) * below - q * above)
                pick = exponential(scores, budget.sensitivity(1.0), epsilon, rng, budget=budget,
                                   label=f"TableEncoder: quantile {j}/{bins} of {name!r}")
                inner.append(candidates[pick])
        return cls._from_edges(name, np.array([lo, *sorted(inner), top], dtype=float), lo, hi, integer)

    def encode(self, values, clip: bool = False) -> np.ndarray:
        """Codes of a cleaned column.  A value outside the fitted range raises,
        or with ``clip`` goes to the first or last bin."""
        numbers = _numbers(self.name, values)
        edges = np.asarray(self.edges, dtype=float)
        absent = np.isnan(numbers)
        if absent.any() and not self.missing:
            row = _first_row(absent)
            raise InputError(f"column {self.name!r}: missing value in row {row}, "
                             "but the column had no missing values when the encoder was fitted")
        if self.integer:
            whole = np.zeros(numbers.size, dtype=object)
            whole[~absent] = _whole_numbers(values, ~absent)
            outside = ~absent & ((whole < self.edges[0]) | (whole >= self.edges[-1])).astype(bool)
        else:
            outside = ~absent & ((numbers < edges[0]) | (numbers > edges[-1]))
        if outside.any() and not clip:
            row = _first_row(outside)
            top = f"{self.edges[-1]!r})" if self.integer else f"{self.edges[-1]!r}]"
            shown = whole[row] if self.integer else json_value(numbers[row])
            raise InputError(f"column {self.name!r}: value {shown!r} in row {row} is outside "
                             f"the fitted range [{self.edges[0]!r}, {top}")
        if self.integer:  # compare whole numbers exactly, beyond 2**53 too
            codes = np.zeros(numbers.size, dtype=np.int64)
            codes[~absent] = np.searchsorted(np.array(self.edges, dtype=object),
                                             _whole_numbers(values, ~absent), side="right") - 1
        else:
            codes = np.searchsorted(edges, np.where(absent, edges[0], numbers), side="right") - 1
        codes = np.clip(codes, 0, self.bins - 1)
        codes[absent] = self.bins
        return codes.astype(np.int64)

    def decode(self, codes: np.ndarray, within_bin: str, rng: np.random.Generator, whole: bool = False,
               clocks: tuple = ()):
        """A value inside the bin of each code (NaN for the missing code).

        ``within_bin="midpoint"`` gives the middle of the bin (for whole
        numbers: the lower middle whole number of the bin); ``"uniform"``
        draws uniformly inside the bin with ``rng`` (for whole numbers:
        uniformly among the bin's whole numbers, or its multiples of ``unit`` where it holds
        some, or its starts of months or years of ``calendar`` where it holds some; with
        ``decimals``, among the bin's numbers of that many decimals, so that none is rounded into
        the next bin: a bin ``[237.42, 237.43)`` gave 237.43 half the time).  A bin
        one float wide (a point mass) gives its lower edge.  ``whole`` decodes whole numbers
        although the edges are not (a column of integers binned at fractional edges): the
        integers inside each bin, or the integer nearest its middle when it holds none, so that a
        value re-encodes to its code.  ``clocks``: ``(ClockColumn, codes)`` pairs, the hour of the day or
        day of the week of each time (-1 for none), set in turn where the bin holds it
        (:meth:`~ektelo_pgm.times.ClockColumn.moved`).
        """
        pd = pandas_module()
        edges = np.asarray(self.edges, dtype=float)
        absent = codes == self.bins
        bin_of = np.where(absent, 0, codes)
        lo, hi = edges[bin_of], edges[bin_of + 1]
        if self.density is not None and within_bin == "uniform":
            lo, hi = self._part_of_bin(bin_of, lo, hi, rng, whole)
        if self.integer or whole:
            bounds = lo, hi
            # the integers of [lo, hi) (of [lo, hi] in a fractional column's closed last bin): the
            # bin itself where the edges are whole numbers
            first = np.ceil(lo)
            closed = (hi == edges[-1]) & (not self.integer)
            stop = np.where(closed, np.floor(hi) + 1, np.ceil(hi))
            empty = stop <= first
            first = np.where(empty, np.round((lo + hi) / 2), first)
            lo, hi = first, np.where(empty, first + 1, stop)
            step = np.ones(codes.shape)
            if self.unit is not None and self.unit > 1:  # in units: the multiples of the bin
                first, stop = np.ceil(lo / self.unit), np.ceil(hi / self.unit)
                step = np.where(stop > first, float(self.unit), 1.0)
                lo, hi = np.where(stop > first, first, lo), np.where(stop > first, stop, hi)
            if within_bin == "midpoint":
                values = np.floor((lo + hi - 1) / 2) * step
            else:
                values = (lo + np.floor(rng.random(codes.shape) * (hi - lo))) * step
            if self.calendar is not None:
                values = calendar_drawn(values, *bounds, self.calendar, None if within_bin == "midpoint" else rng)
            for clock, phase in clocks:
                values = clock.moved(values, phase, edges[bin_of], edges[bin_of + 1])
            values[absent] = np.nan
            values = pd.Series(values, name=self.name).astype("Int64")
            if self.written_in is None:
                return values
            text = np.full(len(values), np.nan, dtype=object)
            present = values.notna().to_numpy()
            whole = values[present].to_numpy(dtype=np.int64)
            text[present] = time_texts(whole, self.time_format) if self.time_format is not None \
                else number_texts(whole, self.number_format, None)
            return pd.Series(text, name=self.name, dtype=object)
        values = (lo + hi) / 2 if within_bin == "midpoint" else rng.uniform(lo, hi)
        held = np.zeros(codes.shape)  # the numbers of its decimals in each part (none counted: any number)
        if self.decimals is not None and within_bin == "uniform":  # among the bin's numbers of those decimals
            first, stop = _with_decimals(lo, hi, hi == edges[-1], self.decimals)
            held = stop - first
            values = np.where(stop > first, (first + np.floor(rng.random(codes.shape) * held))
                              / 10.0 ** self.decimals, values)
        if self.whole_share is not None and within_bin == "uniform":
            values = self._whole_drawn(values, lo, hi, hi == edges[-1], held, rng)
        if self.decimals is not None:  # as the column writes its numbers, never past its range
            values = np.clip(np.round(values, self.decimals), edges[0], edges[-1])
        one_float = hi == np.nextafter(lo, np.inf)  # a one-float bin holds just lo, where the column writes it
        if self.decimals is not None:
            one_float &= np.round(lo, self.decimals) == lo
        values = np.where(one_float, lo, values)
        values[absent] = np.nan
        if self.number_format is not None:
            text = np.full(len(values), np.nan, dtype=object)
            text[~absent] = number_texts(values[~absent], self.number_format, self.decimals)
            return pd.Series(text, name=self.name, dtype=object)
        return pd.Series(values, name=self.name, dtype=float)

    def _whole_drawn(self, values: np.ndarray, lo: np.ndarray, hi: np.ndarray, closed: np.ndarray,
                     held: np.ndarray, rng) -> np.ndarray:
        """``values`` with a whole number of each one's part ``[lo, hi)`` in its place at the chance that makes
        :attr:`whole_share` of them whole, counting those among the part's ``held`` numbers of its decimals."""
        first, stop = _with_decimals(lo, hi, closed, 0)
        grid = np.divide(stop - first, held, out=np.zeros(lo.shape), where=held > 0)
        chance = (self.whole_share - grid) / np.maximum(1.0 - grid, 1e-12)
        whole = (rng.random(lo.shape) < chance) & (stop > first)
        return np.where(whole, first + np.floor(rng.random(lo.shape) * (stop - first)), values)

    def _part_of_bin(self, bin_of: np.ndarray, lo: np.ndarray, hi: np.ndarray, rng: np.random.Generator,
                     whole: bool) -> tuple:
        """``(lo, hi)``: for each code's bin ``[lo, hi)``, the part its value is drawn in, chosen by
        :attr:`density`: the bins and the density's intervals cut each other into parts, each
        weighted by its share of its interval's records (none where it holds no number the column
        writes); a bin whose parts weigh nothing is drawn in whole."""
        edges = np.asarray(self.edges, dtype=float)
        x, y, weight = cut_density(edges, *np.asarray(self.density, dtype=float).T)
        weight = np.where(self.numbers_in(x, y, whole) > 0, weight, 0.0)
        part_bin = np.searchsorted(edges, x, side="right") - 1
        first = np.searchsorted(part_bin, bin_of, side="left")
        stop = np.searchsorted(part_bin, bin_of, side="right")
        before = np.concatenate([[0.0], np.cumsum(weight)])
        total = before[stop] - before[first]
        target = before[first] + rng.random(bin_of.shape) * total
        part = np.clip(np.searchsorted(before[1:], target, side="right"), first, stop - 1)
        drawn = total > 0
        return np.where(drawn, x[part], lo), np.where(drawn, y[part], hi)

    def numbers_in(self, x: np.ndarray, y: np.ndarray, whole: bool = False) -> np.ndarray:
        """How many numbers the column writes lie in each part ``[x, y)`` (closed at the last edge):
        whole numbers (multiples of ``unit``; of a ``calendar``, its starts of months or years),
        numbers of ``decimals`` decimals (a part one float wide: its one number, where it has
        those decimals); of a column that writes any number, the part's width."""
        closed = (y == self.edges[-1]) & (not self.integer)
        if self.calendar is not None:
            first, stop = calendar_starts(x, y, self.calendar)
            return np.maximum(stop - first, 0)
        if self.integer or whole:
            step = self.unit if self.integer and self.unit else 1
            first, stop = _least_number(x, step, 1), _least_number(y, step, 1)
            return stop - first + (closed & (stop * step == y))
        if self.decimals is not None:
            per = 10.0 ** self.decimals
            first, stop = _least_number(x, 1, per), _least_number(y, 1, per)
            held = (y == np.nextafter(x, np.inf)) & (np.round(x, self.decimals) == x)  # a released number's part
            return np.maximum(stop - first + (closed & (stop / per == y)), held)
        return y - x

    def labels(self) -> list[str]:
        """A readable label per code, e.g. ``"[17, 20)"`` (times in the column's format); a bin of
        fractional numbers that holds one number only (a point mass, or one number of the
        column's ``decimals``) is labelled by it, ``"0"``, and the bin after a point mass is open
        at it, ``"(0, 0.1)"``, not ``"[4.94066e-324, 0.1)"``."""
        e = [f"{x:g}" if self.time_format is None else time_text(x, self.time_format) for x in self.edges]
        missing = ["<missing>"] if self.missing else []
        if self.integer:
            return [f"[{e[i]}, {e[i + 1]})" for i in range(self.bins)] + missing
        lo, hi = np.asarray(self.edges[:-1], dtype=float), np.asarray(self.edges[1:], dtype=float)
        closed = np.arange(self.bins) == self.bins - 1
        point = hi == np.nextafter(lo, np.inf)
        one, value = point | (closed & (hi == lo)), lo
        if self.decimals is not None:
            first, stop = _with_decimals(lo, hi, closed, self.decimals)
            one, value = one | (stop - first == 1), np.where(one, lo, first / 10.0 ** self.decimals)
        opens = ["["] + ["(" if after else "[" for after in point[:-1]]
        starts = [e[i - 1] if bracket == "(" else e[i] for i, bracket in enumerate(opens)]
        return [f"{value[i]:g}" if one[i] else f"{opens[i]}{starts[i]}, {e[i + 1]}{']' if closed[i] else ')'}"
                for i in range(self.bins)] + missing

    def to_dict(self) -> dict:
        spec = {"name": self.name, "kind": self.kind, "edges": list(self.edges),
                "integer": self.integer, "missing": self.missing}
        optional = {"decimals": self.decimals, "time_format": self.time_format, "unit": self.unit,
                    "fallback": self.fallback, "number_format": self.number_format,
                    "density": None if self.density is None else [list(part) for part in self.density],
                    "pointed": True if self.pointed else None, "plain": True if self.plain else None,
                    "whole_share": self.whole_share, "calendar": self.calendar}
        return {**spec, **{key: value for key, value in optional.items() if value is not None}}


def _with_decimals(lo: np.ndarray, hi: np.ndarray, closed: np.ndarray, decimals: int) -> tuple:
    """``(first, stop)``: the numbers of ``decimals`` decimals in each bin ``[lo, hi)`` (``[lo,
    hi]`` where ``closed``) are ``first, ..., stop - 1`` over ``10 ** decimals``; none where
    ``stop <= first``."""
    first, stop = np.ceil(np.round(lo * 10.0 ** decimals, 6)), np.round(hi * 10.0 ** decimals, 6)
    return first, np.ceil(stop) + (closed & (stop % 1 == 0))


def _least_number(x: np.ndarray, step: float, per: float) -> np.ndarray:
    """The least whole ``k`` with ``k * step / per >= x`` for each of ``x``, as floats compare
    (``5e-324 / 10`` underflows to 0, ``0.30000000000000004 * 10`` rounds to 3)."""
    k = np.ceil(np.round(x * per / step, 6))
    k = np.where(k * step / per < x, k + 1, k)
    return np.where((k - 1) * step / per >= x, k - 1, k)


def held_decimals(edges, most: int) -> int | None:
    """The fewest decimals, up to ``most`` (None: more), at which each bin of ``edges`` (the
    last closed) wider than one float holds a number."""
    edges = np.asarray(edges, dtype=float)
    lo, hi = edges[:-1], edges[1:]
    wide, closed = hi > np.nextafter(lo, np.inf), np.arange(lo.size) == lo.size - 1
    for decimals in range(most + 1):
        first, stop = _with_decimals(lo, hi, closed, decimals)
        if np.all((stop > first)[wide]):
            return decimals
    return None


def check_bounds(name: str, bounds):
    """``(lo, hi, integer)`` of declared bounds; integer when both are ints."""
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise InputError(f"column {name!r}: bounds must be a pair (lo, hi), got {bounds!r}") from None
    integer = all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in (lo, hi))
    if not all(isinstance(b, (int, float, np.integer, np.floating)) and not isinstance(b, bool) and
               np.isfinite(b) for b in (lo, hi)) or not lo < hi:
        raise InputError(f"column {name!r}: bounds must be finite numbers with lo < hi, got {bounds!r}")
    return (int(lo), int(hi), True) if integer else (float(lo), float(hi), False)
