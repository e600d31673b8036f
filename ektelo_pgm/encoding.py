"""Raw tables (CSV or pandas DataFrame) to integer-coded Datasets and back.

A :class:`TableEncoder` learns, column by column, how to turn a raw table of
strings and numbers into the integer codes ``0..size-1`` of a
:class:`~ektelo_pgm.domain.Domain`, and how to turn codes (for instance of
synthetic records) back into values of the original kind:

* a *categorical* column gets one code per distinct value, in sorted order
  (numbers before strings);
* a *numeric* column is cut into at most ``bins`` bins, of equal width
  (``binning="uniform"``) or holding about equal numbers of records
  (``binning="quantile"``); bins with identical edges are merged, so a column
  may get fewer bins than asked;
* a value that is missing (NaN, None, or one of the ``missing`` markers such
  as ``"?"``) gets its own code, the last one of its column; a column
  without missing values at fit time has no such code.

Strings are stripped of surrounding whitespace before anything else (UCI
Adult writes ``" State-gov"``).

The codes are themselves a release: a category that appears, or a bin edge
that moves, tells something about the records.  So :meth:`TableEncoder.fit`
is private by default: every column's codes come from what the user declares
(``categories`` of a categorical column, ``bounds`` of a numeric one) and
whatever is read from the data is read through a Budget:

* ``threshold`` keeps only the declared categories whose noisy count
  (Laplace, integer noise) reaches it; the values of the others are encoded
  as missing;
* ``binning="quantile"`` places the bin edges at noisy quantiles chosen by
  the exponential mechanism among a grid of candidates inside the bounds
  (``binning="uniform"`` needs no data);
* every column has a missing code (a data-independent choice).

``fit(table, public=True)`` reads everything from the data without noise;
use it only for tables that are public.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable

import numpy as np

from .dask_dataset import encode, is_dask_collection, sum_partitions
from .dataset import Dataset
from .domain import Domain
from .errors import InputError, NotFittedError, UnknownNameError
from .files import atomic_write
from .privacy import Budget, exponential, laplace
from .table_io import MISSING, as_frame, clean, pandas_module

BINNINGS = ("uniform", "quantile")
#: Most candidate edges the exponential mechanism chooses among per quantile.
QUANTILE_CANDIDATES = 1024
WITHIN_BIN = ("midpoint", "uniform")
_FORMAT = "ektelo_pgm.TableEncoder"


def json_value(value):
    """A value as a plain, JSON-friendly Python scalar (numpy scalars unwrapped, whole floats as ints)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: Date and time formats (``strftime`` codes) a column's text is read in; a value is read in the
#: first that matches it whole.
TIME_FORMATS = ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%fZ",
                "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d", "%Y/%m/%d %H:%M:%S", "%m/%d/%Y",
                "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%d.%m.%Y", "%Y-%m", "%b-%Y", "%b %Y", "%d %b %Y",
                "%b %d, %Y")


def time_formats(values: np.ndarray) -> np.ndarray:
    """For each :func:`~ektelo_pgm.table_io.canonical` value, the index in TIME_FORMATS of the first format that reads
    it whole (-1: none, or not text); each distinct text is parsed once per format."""
    pd = pandas_module()
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    found = np.full(len(values), -1, dtype=np.int64)
    if not text.any():
        return found
    codes, uniques = pd.factorize(pd.Series(values[text], dtype=object))
    first = np.full(len(uniques), -1, dtype=np.int64)
    for k, fmt in enumerate(TIME_FORMATS):
        open_ = first < 0
        if not open_.any():
            break
        parsed = pd.to_datetime(pd.Series(uniques[open_], dtype=object), format=fmt, errors="coerce")
        first[np.flatnonzero(open_)[parsed.notna().to_numpy()]] = k
    found[text] = first[codes]
    return found


def as_times(values: np.ndarray, fmt: str) -> np.ndarray:
    """:func:`~ektelo_pgm.table_io.canonical` values read in the time format ``fmt``: whole seconds since
    1970-01-01T00:00:00 (an int) for each text that it reads whole, None for anything else."""
    pd = pandas_module()
    out = np.empty(len(values), dtype=object)
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    codes, uniques = pd.factorize(pd.Series(values[text], dtype=object))
    parsed = pd.to_datetime(pd.Series(uniques, dtype=object), format=fmt, errors="coerce")
    seconds = ((parsed - pd.Timestamp(0)) // pd.Timedelta(seconds=1)).to_numpy(dtype=float, na_value=np.nan)
    out[text] = np.array([None if s != s else int(s) for s in seconds] + [None], dtype=object)[codes]
    return out


def time_text(seconds: float, fmt: str) -> str:
    """Whole ``seconds`` since 1970-01-01T00:00:00 written in the time format ``fmt``."""
    return pandas_module().Timestamp(int(seconds), unit="s").strftime(fmt)


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


def _tally(frame, name: str, markers: frozenset):
    """``tally(func)``: ``func`` of the cleaned column ``name`` of ``frame``, where ``func``
    returns a sum over rows (counts); for a Dask DataFrame, summed over its partitions, so
    that the private fit reads a partitioned table exactly as a whole one."""
    if is_dask_collection(frame):
        return lambda func: sum_partitions(frame[name], func, lambda part, index: clean(part, markers))
    values = clean(frame[name], markers)
    return lambda func: func(values)


def _first_row(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True)
class CategoricalColumn:
    """A column coded by category: code ``i`` is ``categories[i]``; when ``other`` (a label)
    is given, the next code stands for every value outside the categories and decodes to that
    label; when ``missing`` the last code stands for a missing value.  ``public``: the categories
    were declared public knowledge and read from the table as they are (not a private release)."""

    name: str
    categories: tuple
    missing: bool
    others_missing: bool = False  # values outside the categories get the missing code (without other)
    other: str | None = None
    public: bool = False

    kind = "categorical"

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
                **({"public": True} if self.public else {})}


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
    from and written as text in that format (:func:`as_times`).
    """

    name: str
    edges: tuple
    integer: bool
    missing: bool
    decimals: int | None = None
    time_format: str | None = None

    kind = "numeric"

    @property
    def bins(self) -> int:
        """Number of bins (codes other than the missing one)."""
        return len(self.edges) - 1

    @property
    def size(self) -> int:
        """Number of codes of the column."""
        return self.bins + int(self.missing)

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
        lo, hi, integer = _check_bounds(name, bounds)
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
        lo, hi, integer = _check_bounds(name, bounds)
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

    def decode(self, codes: np.ndarray, within_bin: str, rng: np.random.Generator, whole: bool = False):
        """A value inside the bin of each code (NaN for the missing code).

        ``within_bin="midpoint"`` gives the middle of the bin (for whole
        numbers: the lower middle whole number of the bin); ``"uniform"``
        draws uniformly inside the bin with ``rng`` (for whole numbers:
        uniformly among the bin's whole numbers).  A bin one float wide (a point mass) gives
        its lower edge.  ``whole`` decodes whole numbers although the edges are not (a column of
        integers binned at fractional edges): the integers inside each bin, or the integer
        nearest its middle when it holds none, so that a value re-encodes to its code.
        """
        pd = pandas_module()
        edges = np.asarray(self.edges, dtype=float)
        absent = codes == self.bins
        bin_of = np.where(absent, 0, codes)
        lo, hi = edges[bin_of], edges[bin_of + 1]
        if self.integer or whole:
            # the integers of [lo, hi) (of [lo, hi] in a fractional column's closed last bin): the
            # bin itself where the edges are whole numbers
            first = np.ceil(lo)
            closed = not self.integer and bin_of == self.bins - 1
            stop = np.where(closed, np.floor(hi) + 1, np.ceil(hi))
            empty = stop <= first
            first = np.where(empty, np.round((lo + hi) / 2), first)
            lo, hi = first, np.where(empty, first + 1, stop)
            if within_bin == "midpoint":
                values = np.floor((lo + hi - 1) / 2)
            else:
                values = lo + np.floor(rng.random(codes.shape) * (hi - lo))
            values[absent] = np.nan
            values = pd.Series(values, name=self.name).astype("Int64")
            if self.time_format is None:
                return values
            return pd.to_datetime(values, unit="s").dt.strftime(self.time_format).astype(object)
        values = (lo + hi) / 2 if within_bin == "midpoint" else rng.uniform(lo, hi)
        if self.decimals is not None:  # as the column writes its numbers, never past its range
            values = np.clip(np.round(values, self.decimals), edges[0], edges[-1])
        values = np.where(hi == np.nextafter(lo, np.inf), lo, values)  # a one-float bin holds just lo
        values[absent] = np.nan
        return pd.Series(values, name=self.name, dtype=float)

    def labels(self) -> list[str]:
        """A readable label per code, e.g. ``"[17, 20)"`` (times in the column's format)."""
        e = [f"{x:g}" if self.time_format is None else time_text(x, self.time_format) for x in self.edges]
        out = [f"[{e[i]}, {e[i + 1]})" for i in range(self.bins)]
        if not self.integer:
            out[-1] = out[-1][:-1] + "]"
        return out + (["<missing>"] if self.missing else [])

    def to_dict(self) -> dict:
        spec = {"name": self.name, "kind": self.kind, "edges": list(self.edges),
                "integer": self.integer, "missing": self.missing}
        optional = {"decimals": self.decimals, "time_format": self.time_format}
        return {**spec, **{key: value for key, value in optional.items() if value is not None}}


def _check_bounds(name: str, bounds):
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


def _column_from_dict(spec: dict):
    if spec.get("kind") == "categorical":
        return CategoricalColumn(spec["name"], tuple(spec["categories"]), bool(spec["missing"]),
                                 bool(spec.get("others_missing", False)), spec.get("other"),
                                 bool(spec.get("public", False)))
    if spec.get("kind") == "numeric":
        return NumericColumn(spec["name"], tuple(spec["edges"]), bool(spec["integer"]), bool(spec["missing"]),
                             spec.get("decimals"), spec.get("time_format"))
    raise InputError(f"column {spec.get('name')!r} has unknown kind {spec.get('kind')!r}")


class TableEncoder:
    """Encode a raw table as an integer-coded :class:`Dataset` and decode it back.

    Parameters
    ----------
    bins : most bins per numeric column.
    categorical, numeric : column names whose kind is fixed by the user.
        Any other column is numeric when all its non-missing values parse as
        numbers and it has more than ``bins`` distinct values (so binning
        loses something); otherwise it is categorical, one code per value.
    binning : ``"uniform"`` (equal-width bins between the smallest and largest
        value) or ``"quantile"`` (edges at the quantiles of the fitted values).
    missing : strings that mean "missing" (after stripping spaces) in addition to NaN and None,
        by default :data:`~ektelo_pgm.table_io.MISSING` (the one definition for CSV, Parquet and
        DataFrames); every column with a missing value at fit time gets one extra code, its last.
    clip : put numbers outside the fitted range into the first or last bin
        instead of raising (e.g. to encode a test set with a training encoder).
    categories : ``{column: candidate values}``, the public categories of
        categorical columns (see :meth:`fit`).
    bounds : ``{column: (lo, hi)}``, the public range of numeric columns (whole
        numbers when both are ints; values outside are clipped into it; see :meth:`fit`).

    Values unseen at fit time (a new category, a number outside the fitted
    range unless ``clip``, a missing value in a column that had none) make
    ``transform`` raise, naming the column, the value and the row (0-based
    position).
    """

    def __init__(self, bins: int = 32, categorical: Iterable[str] | None = None,
                 numeric: Iterable[str] | None = None, binning: str = "uniform",
                 missing: Iterable[str] = MISSING, clip: bool = False,
                 categories: dict | None = None, bounds: dict | None = None):
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
            raise InputError(f"bins must be a positive integer, got {bins!r}")
        if binning not in BINNINGS:
            raise InputError(f"binning must be one of {BINNINGS}, got {binning!r}")
        self.bins = int(bins)
        self.categorical = tuple(categorical or ())
        self.numeric = tuple(numeric or ())
        both = sorted(set(self.categorical) & set(self.numeric))
        if both:
            raise InputError(f"columns {both} are declared both categorical and numeric")
        self.binning = binning
        self.missing = tuple(missing)
        self.clip = bool(clip)
        self.categories = {str(k): list(v) for k, v in (categories or {}).items()}
        self.bounds = {str(k): tuple(v) for k, v in (bounds or {}).items()}
        for name, spec in self.bounds.items():
            _check_bounds(name, spec)
        both = sorted(set(self.categories) & set(self.bounds))
        wrong = sorted((set(self.categories) & set(self.numeric)) | (set(self.bounds) & set(self.categorical)))
        if both or wrong:
            raise InputError(f"columns {both or wrong} are declared both categorical and numeric")
        self.columns: dict | None = None

    # fitting -----------------------------------------------------------------
    def fit(self, table, budget: Budget | None = None, rng=None, amount=None, threshold: float | None = None,
            public: bool = False) -> "TableEncoder":
        """Learn every column's codes for ``table`` (DataFrame or CSV path) from the candidates
        declared in the constructor (Ektelo style).  A raw table's schema without such
        candidates comes from :func:`ektelo_pgm.schema.learn`, the steward's one way in.

        Private (default): every column needs declared ``categories`` or ``bounds``;
        the data is read only where asked, through ``budget``: the noisy category
        ``threshold`` (counts) and ``binning="quantile"``.  Those steps share ``amount``
        (in the budget's unit; default all that remains) equally, in sequence.  Without
        such a step no data is read and no budget is needed.

        ``public=True``: learn kinds, categories, ranges and bins from the data itself,
        without noise.  Not private: only for public tables.
        """
        frame = as_frame(table)
        declared = set(self.categorical + self.numeric) | set(self.categories) | set(self.bounds)
        unknown = sorted(declared - set(frame.columns))
        if unknown:
            raise UnknownNameError(f"columns {unknown} were declared but are not in the table {list(frame.columns)}")
        markers = frozenset(self.missing)
        if public:
            self.columns = self._fit_public(frame, markers)
            return self
        bare = [c for c in frame.columns if c not in self.categories and c not in self.bounds]
        if bare:
            raise InputError(f"columns {bare} have no declared categories or bounds: declare them "
                             "(categories={...}, bounds={...}) so that the codes do not reveal the data, "
                             "or fit(table, public=True) for a public table")
        steps = sum(threshold is not None for c in frame.columns if c in self.categories) + \
            sum(self.bins - 1 for c in frame.columns if c in self.bounds and self.binning == "quantile")
        share = None
        if steps:
            if not isinstance(budget, Budget):
                raise TypeError("fit: the noisy category threshold and quantile bins read the data; give a "
                                "Budget (budget=...), or use binning='uniform' and no threshold")
            total = budget.fraction(1) if amount is None else amount
            share = Fraction(repr(float(total))) / steps
            share = float(share) if Fraction(repr(float(share))) <= share else float(np.nextafter(float(share), 0))
        rng = np.random.default_rng(rng)
        columns = {}
        for name in frame.columns:
            tally = _tally(frame, name, markers)
            if name in self.categories:
                eps = budget.parameter_for("pure", share) if threshold is not None else None
                columns[name] = CategoricalColumn.private(name, tally, self.categories[name], threshold, eps,
                                                          budget, rng)
            elif self.binning == "quantile" and self.bins > 1:
                eps = budget.parameter_for("exponential", share)
                columns[name] = NumericColumn.private_quantiles(name, tally, self.bounds[name], self.bins, eps,
                                                                budget, rng)
            else:
                columns[name] = NumericColumn.from_bounds(name, self.bounds[name], self.bins)
        self.columns = columns
        return self

    def _fit_public(self, frame, markers) -> dict:
        """Every column learnt from the data without noise (``fit(public=True)``)."""
        if is_dask_collection(frame):
            raise InputError("fit(public=True) reads whole columns (distinct values, ranges, quantiles) and is not "
                             "available for a partitioned table: declare categories and bounds (the private fit, "
                             "whose counts are summed over the partitions) or fit on a pandas sample")
        columns = {}
        for name in frame.columns:
            values = clean(frame[name], markers)
            if name in self.categories:
                columns[name] = CategoricalColumn.private(name, None, self.categories[name], None, None, None, None)
            elif name in self.bounds:
                columns[name] = NumericColumn.from_bounds(name, self.bounds[name], self.bins)
            elif self._is_numeric(name, values):
                columns[name] = NumericColumn.fit(name, values, self.bins, self.binning)
            else:
                columns[name] = CategoricalColumn.fit(name, values)
        return columns

    def _is_numeric(self, name: str, values) -> bool:
        if name in self.numeric or name in self.categorical:
            return name in self.numeric
        pd = pandas_module()
        numbers = pd.to_numeric(values, errors="coerce")
        parses = bool((numbers.notna() == values.notna()).all())
        return parses and numbers.nunique() > self.bins

    def _fitted(self) -> dict:
        if self.columns is None:
            raise NotFittedError("this TableEncoder is not fitted yet; call fit(table) first")
        return self.columns

    @property
    def domain(self) -> Domain:
        """The domain of the encoded data: one attribute per column, in table order."""
        columns = self._fitted()
        return Domain(list(columns), [c.size for c in columns.values()])

    # encoding ----------------------------------------------------------------
    def transform(self, table) -> Dataset:
        """The integer-coded Dataset of ``table``; extra columns are ignored.  A Dask DataFrame
        gives a :class:`~ektelo_pgm.dask_dataset.DaskDataset`, encoded partition by partition
        when counted (an error then names the partition and the row within it)."""
        columns = self._fitted()
        frame = as_frame(table)
        absent = [c for c in columns if c not in frame.columns]
        if absent:
            raise UnknownNameError(f"columns {absent} of the encoder are not in the table {list(frame.columns)}")
        if is_dask_collection(frame):
            return encode(self, frame)
        markers = frozenset(self.missing)
        records = np.column_stack([col.encode(clean(frame[name], markers), self.clip or name in self.bounds)
                                   for name, col in columns.items()])
        return Dataset(records, self.domain)

    def fit_transform(self, table, **fit_options) -> Dataset:
        """``fit(table, **fit_options)`` then ``transform(table)`` (the table is read once)."""
        frame = as_frame(table)
        return self.fit(frame, **fit_options).transform(frame)

    def inverse_transform(self, dataset: Dataset, within_bin: str = "midpoint", rng=None, whole=()):
        """Decode a Dataset (e.g. synthetic records) into a DataFrame of original values.

        The dataset may hold any subset of the encoder's columns, with their
        sizes.  Categorical codes become their categories; a numeric code
        becomes the bin midpoint (``within_bin="midpoint"``, deterministic)
        or a uniform draw inside its bin (``within_bin="uniform"``, using
        ``rng``); see :meth:`NumericColumn.decode`.  Missing codes become NaN.  The numeric
        columns named in ``whole`` are decoded as whole numbers inside their bins (``decode``'s
        ``whole``): columns of integers binned at fractional edges.
        """
        pd = pandas_module()
        columns = self._fitted()
        if within_bin not in WITHIN_BIN:
            raise InputError(f"within_bin must be one of {WITHIN_BIN}, got {within_bin!r}")
        rng = np.random.default_rng(rng)
        for attr, size in zip(dataset.domain.attrs, dataset.domain.shape):
            if attr not in columns:
                raise UnknownNameError(f"attribute {attr!r} is not a column of the encoder {list(columns)}")
            if size != columns[attr].size:
                raise InputError(f"attribute {attr!r} has size {size} in the dataset "
                                 f"but {columns[attr].size} in the encoder")
        for attr in whole:
            if attr not in columns or columns[attr].kind != "numeric":
                raise InputError(f"whole: {attr!r} is not a numeric column of the encoder")
        decoded = {}
        for i, attr in enumerate(dataset.domain.attrs):
            codes, column = np.asarray(dataset.records[:, i], dtype=np.int64), columns[attr]
            decoded[attr] = column.decode(codes, within_bin, rng, whole=True) if attr in whole else \
                column.decode(codes, within_bin, rng)
        return pd.DataFrame(decoded)

    # persistence -------------------------------------------------------------
    def to_dict(self) -> dict:
        """The fitted encoder as plain JSON-compatible data."""
        return {"format": _FORMAT, "version": 1, "bins": self.bins, "binning": self.binning,
                "categorical": list(self.categorical), "numeric": list(self.numeric),
                "missing": list(self.missing), "clip": self.clip, "categories": self.categories,
                "bounds": {k: list(v) for k, v in self.bounds.items()},
                "columns": [c.to_dict() for c in self._fitted().values()]}

    @classmethod
    def from_dict(cls, data: dict) -> "TableEncoder":
        """The encoder saved by :meth:`to_dict`."""
        if data.get("format") != _FORMAT or data.get("version") != 1:
            raise InputError(f"not a saved TableEncoder (format {data.get('format')!r}, version {data.get('version')!r})")
        encoder = cls(data["bins"], data["categorical"], data["numeric"], data["binning"], data["missing"],
                      data["clip"], data.get("categories"), data.get("bounds"))
        encoder.columns = {spec["name"]: _column_from_dict(spec) for spec in data["columns"]}
        return encoder

    def save(self, path) -> None:
        """Write the fitted encoder to a JSON file (atomically: a temporary file renamed)."""
        with atomic_write(path) as f:
            json.dump(self.to_dict(), f, indent=1)

    @classmethod
    def load(cls, path) -> "TableEncoder":
        """Read an encoder written by :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    def __repr__(self) -> str:
        state = "unfitted" if self.columns is None else f"{len(self.columns)} columns, {self.domain!r}"
        return f"TableEncoder(bins={self.bins}, binning={self.binning!r}; {state})"
