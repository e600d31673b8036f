"""The boundary with raw table files: reading and writing them, and reading their values.

- :func:`read_table` reads a CSV or Parquet file (CSV fields as text by default, nothing guessed
  from the data); :func:`write_table` writes a CSV, Parquet or JSON file atomically;
  :func:`has_header` guesses, for ``evaluate`` only, whether a CSV has a header line;
- :func:`as_frame` checks a table (a DataFrame, a path, a Dask DataFrame) before any step reads it;
- :func:`clean`, :func:`canonical` and :func:`canonical_value` read a raw column's values as every
  private step reads them (whatever its dtype); :func:`typed` gives a decoded column the value
  type its schema fixes.
"""
from __future__ import annotations

import copy
import csv
import glob
import importlib.util
import io
import math
import os
import warnings
from fractions import Fraction

import numpy as np

from .dask_dataset import is_dask_collection
from .errors import InputError
from .files import atomic_write


def pandas_module():
    """pandas, imported on first use (importing it takes a while)."""
    import pandas

    return pandas


PARQUET = (".parquet", ".pq")


def arrow():
    """``(pyarrow, pyarrow.parquet)``, imported on first use (the ``parquet`` extra)."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError("Parquet files (and tables read part by part, whose codes are kept as Parquet) need "
                          "pyarrow: pip install 'ektelo_pgm[parquet]'") from None
    return pyarrow, pyarrow.parquet


def check_parquet(path: str) -> None:
    """Refuse a Parquet ``path`` with a clear message when no Parquet engine is installed."""
    if path.endswith(PARQUET) and importlib.util.find_spec("pyarrow") is None:
        raise ImportError(f"{path}: Parquet needs pyarrow: pip install 'ektelo_pgm[parquet]' (or use .csv)")


#: Extensions of files whose fields are separated by tabs.
TABS = (".tsv", ".tab")


def read_table(path, header: bool | None = None, names=None, sep: str | None = None, encoding: str = "utf-8",
               text: bool = True):
    """A DataFrame from a CSV or Parquet file (by extension: ``.parquet``/``.pq`` is Parquet).

    CSV: ``header`` says whether the first line names the columns; ``names`` name the columns of
    a file without a header line (``header`` then defaults to False), which otherwise get
    ``column_1``, ``column_2``, ...  Nothing is guessed from the data: a CSV with neither is
    refused before it is read (a guess would publish a headerless file's first record as the
    column names).  ``sep`` separates the fields (default: a tab for ``.tsv`` and ``.tab``
    files, else a comma); ``encoding`` is the file's text encoding, whose invalid bytes are
    replaced.  With ``text`` (default) every field is read as text (missing markers as NaN) and
    parsed later by :func:`canonical`, so no column's type depends on one record (what every
    private step needs); ``text=False`` lets pandas type each column (a public table, or a
    TableEncoder fitted on declared categories and bounds).  A line
    with more fields than the header is cut to its width: one malformed record cannot make the
    run fail.  Repeated column names are refused, by name.
    Raises an InputError naming the file when it is not a table."""
    pd = pandas_module()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    check_parquet(path)
    if path.endswith(PARQUET):
        reader = lambda: pd.read_parquet(path)  # noqa: E731
    else:
        options = csv_options(path, header, names, sep, encoding, text)
        reader = lambda: _read_csv(path, options)  # noqa: E731
    try:
        frame = reader()
    except InputError:
        raise
    except (pd.errors.ParserError, pd.errors.EmptyDataError, OSError, ValueError) as err:
        raise InputError(f"{path}: not a readable table ({type(err).__name__})") from None  # no line of it
    if frame.shape[1] < 1 or frame.shape[0] < 1:
        raise InputError(f"{path}: not a table (found {frame.shape[0]} rows and {frame.shape[1]} columns)")
    return frame


def csv_options(path: str, header: bool | None, names, sep: str | None, encoding: str, text: bool) -> dict:
    """``pandas.read_csv``'s options for a CSV file as :func:`read_table` reads it (its arguments),
    checked: the header said, the encoding known."""
    if header is None and names is not None:
        header = False
    if header is None:
        raise InputError(f"{path}: say whether the CSV's first line names its columns (--header or --no-header, "
                         "or --names; in Python header=True or False): it is never guessed from the data")
    if header and names is not None:
        raise InputError(f"{path}: names are for a CSV without a header line (header=False)")
    try:
        "".encode(encoding)
    except LookupError:
        raise InputError(f"unknown text encoding {encoding!r} (e.g. utf-8, latin-1, cp1252)") from None
    sep = sep or ("\t" if path.lower().endswith(TABS) else ",")
    options = {"sep": sep, "skipinitialspace": True, "header": 0 if header else None,
               "dtype": str if text else None, "encoding": encoding, "encoding_errors": "replace"}
    if names is not None:
        options["names"] = list(names)
    return options


def _read_csv(path: str, options: dict):
    """``pandas.read_csv`` with the columns named first (:func:`_csv_names`).  Longer lines are
    cut to the width (the slower python parser, only where one is), shorter ones padded with
    missing values, silently."""
    pd = pandas_module()
    options = {**options, "names": _csv_names(path, options), "index_col": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pd.errors.ParserWarning)
        try:
            return pd.read_csv(path, **options)
        except pd.errors.ParserError:
            return pd.read_csv(path, engine="python", on_bad_lines=_cut(options["names"]), **options)


def _cut(names):
    """The python parser's handler of a line longer than ``names``: cut to their width."""
    return lambda fields: fields[:len(names)]


def _csv_names(path: str, options: dict) -> list[str]:
    """The columns of a CSV file, at a width that no single record decides: the header line's, the
    ``names`` option's, or else the most common number of fields among the first 1,000 lines
    (column_1, column_2, ...).  Repeated names are refused, by name."""
    names = options.get("names")
    with open(path, encoding=options["encoding"], errors="replace", newline="") as f:
        lines = csv.reader(f, delimiter=options["sep"], skipinitialspace=True)
        if options["header"] == 0:
            names = next((r for r in lines if r), [])
        elif names is None:
            widths = [len(r) for _, r in zip(range(1000), lines) if r]
            width = max(set(widths), key=lambda w: (widths.count(w), -w)) if widths else 1
            names = [f"column_{i + 1}" for i in range(width)]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"{path}: the column names {repeated} repeat; rename them (or say --names)")
    return list(names)


def write_table(frame, path: str, header: bool = True) -> None:
    """``frame`` to ``path`` (CSV, Parquet or JSON by extension), atomically; ``header``: whether a
    CSV gets a header line."""
    write_parts([frame], path, header)


def write_parts(parts, path: str, header: bool = True) -> None:
    """The DataFrames ``parts`` (an iterable, each with the same columns and value types) one
    after the other to ``path`` (CSV, Parquet or JSON by extension), atomically: CSV and Parquet
    hold one part in memory at a time (Parquet: a row group per part); ``header``: whether a CSV
    gets a header line."""
    if path.endswith(PARQUET):
        pa, pq = arrow()
        with atomic_write(path, "wb") as f:
            writer = None
            for part in parts:
                if writer is None:
                    schema = pa.Schema.from_pandas(part, preserve_index=False)
                    for k, column in enumerate(schema):  # a column missing throughout the first part: text
                        if pa.types.is_null(column.type):
                            schema = schema.set(k, pa.field(column.name, pa.string()))
                    writer = pq.ParquetWriter(f, schema)
                writer.write_table(pa.Table.from_pandas(part, schema=schema, preserve_index=False))
            if writer is not None:
                writer.close()
    elif path.endswith(".json"):
        with atomic_write(path) as f:
            pandas_module().concat(list(parts), ignore_index=True).to_json(f, orient="records", indent=1)
    else:
        with atomic_write(path, newline="") as f:
            for k, part in enumerate(parts):
                part.to_csv(f, index=False, header=header and k == 0)


#: A table whose files take more than this share of the machine's memory on disk is read part
#: by part by ``open_table(engine="auto")``: read whole, a table of text takes several times its
#: size on disk in memory (pandas' strings), and the schema's counts more again.
MEMORY_SHARE = 1 / 20
ENGINES = ("auto", "memory", "parts")


def open_table(path, header: bool | None = None, names=None, sep: str | None = None, encoding: str = "utf-8",
               engine: str = "auto"):
    """The table at ``path`` to fit on: a DataFrame read whole (``engine="memory"``,
    :func:`read_table`) or a :class:`Partitions` read part by part (``"parts"``).  ``"auto"``
    reads part by part a folder, a glob, or files taking more than ``MEMORY_SHARE`` of this
    machine's memory on disk; else whole."""
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    path = os.fspath(path)
    if engine == "auto":
        files = table_files(path)
        large = sum(os.path.getsize(p) for p in files) > MEMORY_SHARE * _memory_bytes()
        engine = "parts" if large or files != [path] else "memory"
    if engine == "memory":
        return read_table(path, header, names, sep, encoding)
    return Partitions(path, header, names, sep, encoding)


def _memory_bytes() -> int:
    """This machine's physical memory in bytes (16 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 16 * 2**30


def has_header(path) -> bool:
    """A guess, for ``evaluate`` only (not private), whether a CSV file's first line names its
    columns: some field of it is text where the lines below hold numbers, or none of its fields
    repeats a value of its column below."""
    pd = pandas_module()
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line for _, line in zip(range(50), f) if line.strip()]
        if len(lines) < 2:
            return len(lines) == 1
        rows = pd.read_csv(io.StringIO("".join(lines)), header=None, skipinitialspace=True, dtype=str)
    except (UnicodeDecodeError, pd.errors.ParserError) as err:
        raise InputError(f"{os.fspath(path)}: not a readable table ({type(err).__name__}: {err})") from None
    first, rest = rows.iloc[0], rows.iloc[1:]
    for j in range(rows.shape[1]):
        below = pd.to_numeric(rest[j], errors="coerce")
        if below.notna().all() and pd.isna(pd.to_numeric(pd.Series([first[j]]), errors="coerce")[0]):
            return True
    return not any(first[j] in set(rest[j]) for j in range(rows.shape[1]))


def typed(values, column):
    """A decoded column (a Series) in the value type its schema ``column`` (a
    :class:`~ektelo_pgm.encoding.CategoricalColumn` or ``NumericColumn``) fixes, never the raw
    table's: whole numbers
    (a numeric column of integers, or categories that are all whole numbers) as nullable
    integers, other numbers as floats, anything else (times included) as text."""
    pd = pandas_module()
    if column.kind == "numeric" and column.time_format is not None:  # text in the column's time format
        return values.astype(object)
    if column.kind == "numeric":  # Int64 holds every whole number decoded inside the edges
        return values.astype("Int64" if column.integer and max(map(abs, column.edges)) < 2 ** 62 else float)
    categories = [canonical_value(c) for c in column.categories] + ([] if column.other is None else [column.other])
    codes, uniques = pd.factorize(values)  # each distinct value converted once; -1: missing
    as_series = lambda array, dtype=None: pd.Series(array, index=values.index, name=values.name,  # noqa: E731
                                                    dtype=dtype)
    if all(isinstance(c, int) and abs(c) < 2 ** 62 for c in categories):
        whole = np.array([canonical_value(v) for v in uniques] + [0], dtype=np.int64)
        return as_series(pd.arrays.IntegerArray(whole[codes], codes < 0))
    if all(isinstance(c, (int, float)) and math.isfinite(as_float(c)) for c in categories):
        return as_series(np.array([float(canonical_value(v)) for v in uniques] + [math.nan])[codes])
    text = np.empty(len(uniques) + 1, dtype=object)
    text[:-1], text[-1] = [str(v) for v in uniques], math.nan
    return as_series(text[codes], object)

def as_frame(table):
    """The DataFrame of ``table`` checked (columns named, none repeated, rows present): a
    DataFrame, the path of a CSV file with a header line (its columns typed as pandas reads
    them, :func:`read_table` with ``text=False``) or a Parquet file, or a partitioned table (a
    Dask DataFrame or :class:`Partitions`), kept as it is (its rows are read part by part)."""
    pd = pandas_module()
    if isinstance(table, Partitions):
        return table
    if isinstance(table, (str, os.PathLike)):
        table = read_table(table, header=True, text=False)
    partitioned = is_dask_collection(table) and hasattr(table, "columns")
    if not isinstance(table, pd.DataFrame) and not partitioned:
        raise TypeError(f"expected a pandas or Dask DataFrame or a CSV path, got {type(table).__name__}")
    if len(table.columns) == 0:
        raise InputError("the table has no columns")
    if not partitioned and table.shape[0] == 0:
        raise InputError("the table has no rows")
    names = [str(c) for c in table.columns]
    if len(set(names)) != len(names):
        dup = sorted({c for c in names if names.count(c) > 1})
        raise InputError(f"the table repeats the column names {dup}")
    if partitioned:
        return table if names == list(table.columns) else table.rename(columns=dict(zip(table.columns, names)))
    return table.set_axis(names, axis=1)

def clean(series, missing: frozenset):
    """A raw column with its strings stripped and its missing markers (and NaN, None) as NaN:
    an object Series."""
    pd = pandas_module()
    values = series.astype(object)
    if series.dtype.kind in "iufcb":  # numbers or booleans: nothing to strip or to match
        return values.mask(pd.isna(values))
    text = np.array([isinstance(v, str) for v in values.to_numpy()], dtype=bool)
    if text.any():
        stripped = values[text].astype(str).str.strip()
        values = values.copy()
        values[text] = stripped
        markers = np.zeros(len(values), dtype=bool)
        markers[text] = stripped.isin(list(missing)).to_numpy()
        values = values.mask(markers)
    return values.mask(pd.isna(values))

def canonical(series, missing: frozenset) -> np.ndarray:
    """Each value of a raw column as every private step reads it, whatever the column's dtype
    (so that a raw dtype, which one record can change, never decides anything): None when
    missing (NaN, None or a ``missing`` marker, after stripping), an exact Python int for a
    whole number (``"61"``, ``61.0``, ``"1e3"``; every digit kept, beyond 2**53 too), a float
    for any other number (``"61.5"``; ``inf`` for ``"inf"`` and numbers past the float range
    such as ``"1e400"``), else the text as a str (booleans included: ``"True"``).  An object
    array, one entry per row (:func:`factorized`)."""
    codes, values = factorized(series, missing)
    return np.append(values, None)[codes]


def factorized(series, missing: frozenset) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, values)`` of a raw column: ``values``, the :func:`canonical` value of each distinct
    raw value in order of first appearance (an object array; two raw values may read as one,
    ``" 5"`` and ``"5"``, and a missing marker as None), and ``codes``, each row's index into
    ``values`` (int64, -1 where the row is NaN or None).  Each distinct raw value is parsed
    once, so the cost per row is that of hashing it."""
    pd = pandas_module()
    codes, uniques = pd.factorize(series)
    cleaned = clean(pd.Series(uniques), missing)
    values = np.empty(len(uniques), dtype=object)
    values[:] = [None if pd.isna(v) else canonical_value(v) for v in cleaned]
    return codes.astype(np.int64, copy=False), values


def canonical_value(value):
    """One present raw value as :func:`canonical` reads it (an int, a float or a str)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return int(value) if float(value).is_integer() else float(value)
    text = str(value)
    try:
        return int(text)  # exact, any number of digits Python parses
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    if number != number:
        return None
    if not number.is_integer():  # fractional, or past the float range (inf)
        return number
    if abs(number) >= 2 ** 53:  # every digit of a whole number written "9007199254740993.0"
        try:
            return int(Fraction(text))
        except ValueError:  # a form float reads and Fraction does not ("1_0e20")
            pass
    return int(number)  # "61.0", "1e3"


def as_float(value) -> float:
    """A number of :func:`canonical` as a float, whole numbers past the float range as +-inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def parquet_batches(files, columns, rows: int):
    """The non-empty record batches of ``columns`` of Parquet ``files``, ``rows`` rows at most
    each, file after file (one batch in memory at a time)."""
    _, pq = arrow()
    for path in files:
        with pq.ParquetFile(path) as f:
            for batch in f.iter_batches(batch_size=rows, columns=list(columns)):
                if batch.num_rows:
                    yield batch


#: Rows per part when a table is read part by part (:class:`Partitions`).
PART_ROWS = 1_000_000


def table_files(path) -> list[str]:
    """The files of a table: ``path`` itself, the CSV or Parquet files under a folder (in name
    order, any depth: a folder a Spark or Dask job wrote), or the files a glob matches."""
    path = os.fspath(path)
    if os.path.isdir(path):
        found = sorted(os.path.join(root, name) for root, _, names in os.walk(path) for name in names
                       if name.lower().endswith((*PARQUET, ".csv", *TABS)) and not name.startswith(("_", ".")))
    elif any(c in path for c in "*?["):
        found = sorted(p for p in glob.glob(path) if os.path.isfile(p))
    elif not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    else:
        found = [path]
    if not found:
        raise FileNotFoundError(f"{path}: no CSV or Parquet file there")
    kinds = {p.endswith(PARQUET) for p in found}
    if len(kinds) > 1:
        raise InputError(f"{path}: holds both CSV and Parquet files; give one kind")
    return found


class Partitions:
    """A table read part by part, never whole (the out-of-core path): its ``files`` (a file, a
    folder or a glob, :func:`table_files`), Parquet read in batches of ``rows`` rows, CSV in
    chunks of ``rows`` lines read as :func:`read_table` reads a CSV (its ``header``, ``names``,
    ``sep`` and ``encoding``; every field as text).  Iterating yields pandas DataFrames with the
    table's :attr:`columns`; each pass reads the files again.  :attr:`bytes`: their size on disk."""

    def __init__(self, path, header: bool | None = None, names=None, sep: str | None = None,
                 encoding: str = "utf-8", rows: int = PART_ROWS):
        self.files, self.rows = table_files(path), int(rows)
        self.bytes = sum(os.path.getsize(p) for p in self.files)
        self.parquet = self.files[0].endswith(PARQUET)
        _, pq = arrow()
        if self.parquet:
            names_of = lambda p: [str(c) for c in pq.read_schema(p).names]  # noqa: E731
        else:
            self._options = csv_options(self.files[0], header, names, sep, encoding, text=True)
            names_of = lambda p: _csv_names(p, self._options)  # noqa: E731
        self.columns = self._names = names_of(self.files[0])
        other = [p for p in self.files[1:] if names_of(p) != self._names]
        if other:
            raise InputError(f"{other[0]}: its columns differ from those of {self.files[0]}")
        repeated = sorted({c for c in self.columns if self.columns.count(c) > 1})
        if repeated:
            raise InputError(f"{path}: the column names {repeated} repeat; rename them")

    def __getitem__(self, columns) -> "Partitions":
        """The same table with only ``columns`` (a list of its columns), in that order."""
        absent = [c for c in columns if c not in self.columns]
        if absent:
            raise KeyError(f"columns {absent} are not in the table {self.columns}")
        view = copy.copy(self)
        view.columns = list(columns)
        return view

    def __iter__(self):
        if self.parquet:
            for batch in parquet_batches(self.files, self.columns, self.rows):
                yield batch.to_pandas().set_axis(self.columns, axis=1)
            return
        for path in self.files:
            for part in self._csv_parts(path):
                yield part[self.columns]

    def _csv_parts(self, path: str):
        """The parts of one CSV file: the fast parser, or from where it fails on a line longer than
        the header, the python parser (which cuts such lines, as :func:`read_table`)."""
        pd = pandas_module()
        options = {**self._options, "names": self._names, "index_col": False, "chunksize": self.rows}
        done = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pd.errors.ParserWarning)
            try:
                with pd.read_csv(path, **options) as parts:
                    for part in parts:
                        done += 1
                        yield part
                return
            except pd.errors.ParserError:
                pass
            with pd.read_csv(path, engine="python", on_bad_lines=_cut(self._names), **options) as parts:
                for k, part in enumerate(parts):
                    if k >= done:
                        yield part

    def __repr__(self) -> str:
        kind = "Parquet" if self.parquet else "CSV"
        return f"Partitions({len(self.files)} {kind} files, {self.bytes / 2**20:,.1f} MB, columns {self.columns})"
