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

The columns are :mod:`ektelo_pgm.columns`' :class:`CategoricalColumn` and
:class:`NumericColumn`; dates and times are read and written by :mod:`ektelo_pgm.times`, and a
column of times has attributes of its own for its hour of the day and day of the week where it
holds them (:attr:`TableEncoder.clocks`).
"""
from __future__ import annotations

import json
from fractions import Fraction
from typing import Iterable

import numpy as np

from .columns import CategoricalColumn, NumericColumn, check_bounds, json_value
from .dask_dataset import encode, is_dask_collection, sum_partitions
from .dataset import Dataset
from .domain import Domain
from .errors import InputError, NotFittedError, UnknownNameError
from .files import atomic_write
from .privacy import Budget
from .table_io import MISSING, as_frame, clean, pandas_module
from .times import TIME_FORMATS, ClockColumn, as_times, time_formats, time_text, time_texts

__all__ = ["TableEncoder", "CategoricalColumn", "NumericColumn", "json_value", "BINNINGS", "WITHIN_BIN",
           "TIME_FORMATS", "time_formats", "as_times", "time_text", "time_texts"]

BINNINGS = ("uniform", "quantile")
WITHIN_BIN = ("midpoint", "uniform")
_FORMAT = "ektelo_pgm.TableEncoder"


def _tally(frame, name: str, markers: frozenset):
    """``tally(func)``: ``func`` of the cleaned column ``name`` of ``frame``, where ``func``
    returns a sum over rows (counts); for a Dask DataFrame, summed over its partitions, so
    that the private fit reads a partitioned table exactly as a whole one."""
    if is_dask_collection(frame):
        return lambda func: sum_partitions(frame[name], func, lambda part, index: clean(part, markers))
    values = clean(frame[name], markers)
    return lambda func: func(values)


def _column_from_dict(spec: dict):
    if spec.get("kind") == "categorical":
        return CategoricalColumn(spec["name"], tuple(spec["categories"]), bool(spec["missing"]),
                                 bool(spec.get("others_missing", False)), spec.get("other"),
                                 bool(spec.get("public", False)), spec.get("fallback"),
                                 bool(spec.get("pointed", False)))
    if spec.get("kind") == "numeric":
        return NumericColumn(spec["name"], tuple(spec["edges"]), bool(spec["integer"]), bool(spec["missing"]),
                             spec.get("decimals"), spec.get("time_format"),
                             spec.get("unit", spec.get("time_unit")), spec.get("fallback"),  # earlier: time_unit
                             spec.get("number_format"), spec.get("density"), bool(spec.get("pointed", False)),
                             bool(spec.get("plain", False)), spec.get("whole_share"), spec.get("calendar"))
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
            check_bounds(name, spec)
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
    def clocks(self) -> dict:
        """``{name: ClockColumn}``: the hour of the day and day of the week of each column of times
        that holds them (:meth:`ClockColumn.of`), attributes of the encoded data after the columns,
        decoded into their column's times."""
        clocks = (clock for column in self._fitted().values() for clock in ClockColumn.of(column))
        return {c.name: c for c in clocks if c.name not in self.columns}

    @property
    def domain(self) -> Domain:
        """The domain of the encoded data: one attribute per column, in table order, then the clocks."""
        attributes = {**self._fitted(), **self.clocks}
        return Domain(list(attributes), [c.size for c in attributes.values()])

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
        pd, markers = pandas_module(), frozenset(self.missing)
        values = {name: clean(frame[name], markers) for name in columns}
        records = np.column_stack([col.encode(values[name], self.clip or name in self.bounds)
                                   for name, col in columns.items()]
                                  + [clock.codes(pd.to_numeric(values[clock.source]).to_numpy())
                                     for clock in self.clocks.values()])
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
        ``whole``): columns of integers binned at fractional edges.  A clock's codes (:attr:`clocks`) set
        the hour or day of the week of its column's times, and it is not a column of the result.
        """
        pd = pandas_module()
        columns, clocks = self._fitted(), self.clocks
        if within_bin not in WITHIN_BIN:
            raise InputError(f"within_bin must be one of {WITHIN_BIN}, got {within_bin!r}")
        rng = np.random.default_rng(rng)
        attributes = {**columns, **clocks}
        for attr, size in zip(dataset.domain.attrs, dataset.domain.shape):
            if attr not in attributes:
                raise UnknownNameError(f"attribute {attr!r} is not a column of the encoder {list(attributes)}")
            if size != attributes[attr].size:
                raise InputError(f"attribute {attr!r} has size {size} in the dataset "
                                 f"but {attributes[attr].size} in the encoder")
        for attr in whole:
            if attr not in columns or columns[attr].kind != "numeric":
                raise InputError(f"whole: {attr!r} is not a numeric column of the encoder")
        codes = {attr: np.asarray(dataset.records[:, i], dtype=np.int64) for i, attr in enumerate(dataset.domain.attrs)}
        phases = {}  # each column's clocks and their codes, hours first: moving to a day keeps the hour
        for clock in sorted((clocks[a] for a in codes if a in clocks), key=lambda c: c.step):
            phases.setdefault(clock.source, []).append((clock, np.where(codes[clock.name] < clock.phases,
                                                                        codes[clock.name], -1)))
        decoded = {}
        for attr in (a for a in codes if a in columns):
            options = {"whole": True} if attr in whole else {}
            if attr in phases:
                options["clocks"] = phases[attr]
            decoded[attr] = columns[attr].decode(codes[attr], within_bin, rng, **options)
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
