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
import glob
import importlib.util
import io
import math
import os
import re
from fractions import Fraction

import numpy as np

from . import progress
from .dask_dataset import is_dask_collection
from .csv_dialect import csv_frames, csv_names, defined_records
from .errors import InputError
from .files import atomic_write
from .memory import memory_cap


def pandas_module():
    """pandas, imported on first use (importing it takes a while)."""
    import pandas

    return pandas


PARQUET = (".parquet", ".pq")


def is_parquet(path) -> bool:
    """Whether ``path`` names a Parquet file: it ends in ``.parquet`` or ``.pq``, in any case."""
    return os.fspath(path).lower().endswith(PARQUET)


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
    if is_parquet(path) and importlib.util.find_spec("pyarrow") is None:
        raise ImportError(f"{path}: Parquet needs pyarrow: pip install 'ektelo_pgm[parquet]' (or use .csv)")


#: Extensions of files whose fields are separated by tabs.
TABS = (".tsv", ".tab")

#: Text a zero and another digit open (``"02134"``, ``"01"``): a code, read as the text it is (ZIP 02134 was 2134).
LEADING_ZERO = re.compile(r"\s*[+-]?0[0-9]")
#: The spellings of a missing value, the one definition for every format: a text value of a CSV
#: field, a Parquet column or a DataFrame that is one of these once stripped of spaces is missing
#: (as are Parquet's nulls, NaN and None).  The readers keep the text as it is; :func:`clean`
#: applies the spellings, the default ``missing`` markers of every step.
MISSING = ("", "?", "NA", "N/A", "n/a", "NULL", "null", "None", "NaN", "nan", "-NaN", "-nan", "<NA>", "#N/A",
           "#N/A N/A", "#NA", "1.#IND", "-1.#IND", "1.#QNAN", "-1.#QNAN")


def read_table(path, header: bool | None = None, names=None, sep: str | None = None, encoding: str = "utf-8",
               text: bool = True, quoted_newlines: bool = False):
    """A DataFrame from a CSV or Parquet file (by extension, in any case: ``.parquet``/``.pq`` is
    Parquet), read in the one dialect of docs/privacy.md ("How files are read"), in which what one
    record holds changes only that record.

    CSV: ``header`` says whether the first line names the columns; ``names`` name the columns of
    a file without a header line (``header`` then defaults to False), which otherwise get
    ``column_1``, ``column_2``, ...  Nothing is guessed from the data: a CSV with neither is
    refused before it is read (a guess would publish a headerless file's first record as the
    column names).  ``sep`` separates the fields (default: a tab for ``.tsv`` and ``.tab``
    files, else a comma); ``encoding`` is the file's text encoding, whose invalid bytes are
    replaced.  With ``text`` (default) every field is read as text, as it is (the
    :data:`MISSING` spellings are read as missing later, by :func:`clean`), so no column's type
    depends on one record (what every private step needs); ``text=False`` types each column
    whose present values are all numbers as numbers (a public table, or a TableEncoder fitted on
    declared categories and bounds).  Each line is one record, cut or padded with empty fields
    to the table's width (:func:`~ektelo_pgm.csv_dialect.csv_records`); with ``quoted_newlines``
    (the file written by a CSV writer) a quoted field may hold line breaks and a record spans
    lines (:mod:`~ektelo_pgm.csv_dialect`).  Repeated column names are refused, by name.

    Parquet (:func:`parquet_frame`): whole numbers as nullable integers of any size, times and
    dates as text; a column of lists, structs or maps is refused by name before any value is read.
    Raises an InputError naming the file when it is not a table (never with a byte of it)."""
    pd = pandas_module()
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    check_parquet(path)
    try:
        if is_parquet(path):
            parquet_names(path)  # refuses nested columns before any value is read
            frame = parquet_frame(arrow()[1].read_table(path))
        else:
            options = csv_options(path, header, names, sep, encoding, text, quoted_newlines)
            columns = csv_names([path], options)
            frames = list(csv_frames(path, options, columns))
            frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)
            frame = frame if text else _numbers_typed(frame)
    except InputError:
        raise
    except (OSError, ValueError, NotImplementedError, EOFError) as err:  # messages may quote the file's bytes
        raise InputError(f"{path}: not a readable table ({type(err).__name__})") from None
    if frame.shape[1] < 1 or frame.shape[0] < 1:
        raise InputError(f"{path}: not a table (found {frame.shape[0]} rows and {frame.shape[1]} columns)")
    return frame


def csv_options(path: str, header: bool | None, names, sep: str | None, encoding: str, text: bool,
                quoted_newlines: bool = False) -> dict:
    """The options of a CSV file as :func:`read_table` reads it (its arguments), checked: the
    header said, the encoding known; the separator defaulted from the extension."""
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
    return {"sep": sep, "header": bool(header), "names": None if names is None else [str(n) for n in names],
            "encoding": encoding, "text": text, "quoted_newlines": bool(quoted_newlines)}


def _numbers_typed(frame):
    """A frame of text columns with each column whose present values (not :data:`MISSING`) are
    all numbers as numbers (``read_table(text=False)``), the others as text, missing spellings
    as NaN."""
    pd = pandas_module()
    out = {}
    for name, column in frame.items():
        column = column.mask(column.str.strip().isin(MISSING))
        try:
            out[name] = pd.to_numeric(column)
        except (TypeError, ValueError):
            out[name] = column
    return pd.DataFrame(out, columns=frame.columns)


def parquet_names(path: str) -> list[str]:
    """The columns of the Parquet file ``path``, from its schema (no value read); a column of
    lists, structs, maps or unions is refused by name (a value of it is no one value)."""
    pa, pq = arrow()
    schema = pq.read_schema(path)
    for name, kind in zip(schema.names, schema.types):
        if pa.types.is_nested(kind):
            raise InputError(f"{path}: column {name!r} holds nested values (lists, structs or maps); flatten it "
                             "into columns of single values, or leave it out of the file")
    return [str(n) for n in schema.names]


def parquet_frame(table):
    """A DataFrame of a pyarrow Table or RecordBatch of a Parquet file, read as every private step
    reads it, whatever the values: whole numbers as pandas' nullable integers of their size (never
    float64: 2**53 and 2**53 + 1 stay apart), times and dates as text (:func:`_time_text`, any
    range), bytes as UTF-8 text (invalid bytes replaced), the rest as pyarrow gives them."""
    pa, _ = arrow()
    pd = pandas_module()
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    for k, (name, column) in enumerate(zip(table.column_names, table.columns)):
        kind = column.type
        if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
            table = table.set_column(k, name, pa.array(_time_text(column), pa.string()))
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or pa.types.is_fixed_size_binary(kind):
            text = [None if v is None else v.decode("utf-8", errors="replace") for v in column.to_pylist()]
            table = table.set_column(k, name, pa.array(text, pa.string()))
    nullable = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
                pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
                pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype()}
    return table.to_pandas(types_mapper=nullable.get)


#: Units of Arrow times per second.
_PER_SECOND = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}
#: Seconds since 1970 of the first and last seconds of Python's calendar (years 1 to 9999), and of
#: pandas' times in nanoseconds, each two days inside (a time zone's offset is less).
_PYTHON_SECONDS = (-62135596800 + 2 * 86400, 253402300799 - 2 * 86400)
_NANOSECOND_SECONDS = (-9223372036 + 2 * 86400, 9223372036 - 2 * 86400)


def _time_text(column) -> list:
    """The values of an Arrow timestamp or date column as text, None where null: a date as
    ``YYYY-MM-DD``, a time as ``YYYY-MM-DD HH:MM:SS`` with 6 decimals of a second where it has
    a fraction of microseconds, 9 where of nanoseconds (``str`` of a pandas Timestamp), of any
    year (numpy's calendar, beyond pandas' and Python's).  A time with a time zone is its local
    time with the offset (``+01:00``) where pandas holds it, else its UTC time with ``+00:00``."""
    pa, _ = arrow()
    kind = column.type
    if pa.types.is_date(kind):
        column, unit, per_second = column.cast(pa.date32(), safe=False), "D", 1
    else:
        unit, per_second = kind.unit, _PER_SECOND[kind.unit]
    present = ~column.is_null().to_numpy(zero_copy_only=False)
    ticks = column.cast(pa.int32() if unit == "D" else pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    ticks = np.asarray(ticks, dtype=np.int64)
    stamps = ticks.astype(f"datetime64[{unit}]")
    text = np.full(len(ticks), None, dtype=object)
    fraction, micro = ticks % per_second, max(per_second // 10 ** 6, 1)
    for shown, rows in (("D" if unit == "D" else "s", fraction == 0), ("us", (fraction != 0) & (fraction % micro == 0)),
                        ("ns", fraction % micro != 0)):
        rows = rows & present
        if rows.any():
            text[rows] = np.char.replace(np.datetime_as_string(stamps[rows], unit=shown), "T", " ").tolist()
    if unit != "D" and kind.tz is not None:
        text[present] = [f"{t}+00:00" for t in text[present]]
        low, high = _NANOSECOND_SECONDS if unit == "ns" else _PYTHON_SECONDS
        seconds = ticks // per_second
        local = present & (seconds > low) & (seconds < high)
        if local.any():
            text[local] = [str(t) for t in column.take(pa.array(np.flatnonzero(local))).to_pandas()]
    return text.tolist()


def write_table(frame, path: str, header: bool = True) -> None:
    """``frame`` to ``path`` (CSV, Parquet or JSON by extension), atomically; ``header``: whether a
    CSV gets a header line."""
    write_parts([frame], path, header)


def write_parts(parts, path: str, header: bool = True) -> None:
    """The DataFrames ``parts`` (an iterable, each with the same columns and value types) one
    after the other to ``path`` (CSV, Parquet or JSON by extension), atomically: CSV and Parquet
    hold one part in memory at a time (Parquet: a row group per part); ``header``: whether a CSV
    gets a header line."""
    if is_parquet(path):
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
                del part  # not held while the next part is made
            if writer is not None:
                writer.close()
    elif path.endswith(".json"):
        with atomic_write(path) as f:
            pandas_module().concat(list(parts), ignore_index=True).to_json(f, orient="records", indent=1)
    else:
        with atomic_write(path, newline="") as f:
            first = True  # not enumerate, whose reused result would hold the last part
            for part in parts:
                part.to_csv(f, index=False, header=header and first)
                first = False
                del part  # not held while the next part is made


ENGINES = ("auto", "memory", "parts")
#: Bytes one cell of a table takes at the peak of a fit that reads it whole (pandas' values, the
#: schema's tallies, the codes), besides the interpreter's 350 MB: ``synth --mechanism mst --engine
#: memory`` on 1M and 5M rows x 11 columns of plain text categories (benchmarks/big_synth.py) took 51
#: and 42 bytes a cell (26 where the text is stored as Parquet dictionaries, read as categories).
CELL_BYTES = 48
#: Times its size on disk that a CSV file takes at that peak, read whole: the 1M rows as a CSV (95 MB,
#: about 9 bytes a field) took 5.2 times its size besides the interpreter's.
CSV_FACTOR = 6
#: The fewest rows of a part, whatever the cap (a part of fewer costs more in overhead than in data).
MIN_PART_ROWS = 10_000
def decoded_bytes(files: list[str]) -> int:
    """Bytes the table in ``files`` takes at the peak of a fit that reads it whole, estimated
    before any value is read: Parquet, from each file's metadata, rows x columns x ``CELL_BYTES``
    plus twice the columns' uncompressed size (the text, read and then cleaned); CSV, its size on
    disk times ``CSV_FACTOR``."""
    if not is_parquet(files[0]):
        return sum(os.path.getsize(p) for p in files) * CSV_FACTOR
    _, pq = arrow()
    total = 0
    for path in files:
        meta = pq.read_metadata(path)
        plain = sum(meta.row_group(g).column(c).total_uncompressed_size
                    for g in range(meta.num_row_groups) for c in range(meta.num_columns))
        total += meta.num_rows * meta.num_columns * CELL_BYTES + 2 * plain
    return total


def part_rows(columns: int, cap: int) -> int:
    """Rows of a part read part by part under the memory cap ``cap`` (bytes): ``PART_ROWS``, or as
    many as take half of ``cap`` at ``CELL_BYTES`` a cell (at least ``MIN_PART_ROWS``).  The
    part's size changes the memory a run takes, never its output (tallies, codes and counts are
    sums over the parts)."""
    return int(min(PART_ROWS, max(MIN_PART_ROWS, cap // (2 * max(columns, 1) * CELL_BYTES))))


def open_table(path, header: bool | None = None, names=None, sep: str | None = None, encoding: str = "utf-8",
               engine: str = "auto", max_memory=None, quoted_newlines: bool = False):
    """The table at ``path`` to fit on: a DataFrame read whole (``engine="memory"``,
    :func:`read_table`) or a :class:`Partitions` read part by part (``"parts"``, parts sized to the
    cap by :func:`part_rows`).  ``"auto"`` reads part by part a folder, a glob, or files whose
    table would take more than the memory cap read whole (:func:`decoded_bytes` against
    ``max_memory``, :func:`memory_cap`: by default a quarter of this machine's memory, at most 1 GiB);
    else whole.
    Either way the output of a fit is the same (docs/big_data.md): the choice, which the size of
    the files decides, changes the memory a run takes and no released byte, and what it says
    goes to :func:`~ektelo_pgm.progress.note` (a terminal only).  Part by part needs pyarrow (a
    fit keeps the table's codes as Parquet): without it a folder, a glob or ``"parts"`` is
    refused here before any record is read, and one file past the cap is read whole (a refusal
    would depend on its size)."""
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    path = os.fspath(path)
    cap, sized = memory_cap(max_memory), False  # sized: the size of the files chose to read part by part
    if engine == "auto":
        files = table_files(path)
        check_parquet(files[0])
        engine = "parts" if files != [path] else "memory"
        if engine == "memory" and decoded_bytes(files) > cap:  # the size decides: notes on a terminal only
            try:
                arrow()
                engine, sized = "parts", True
            except ImportError:  # never a refusal that the size decides: read whole, as the output is the same
                progress.note(f"note: {path} read whole would take more than the memory cap (--max-memory, "
                              f"{cap / 2**20:,.0f} MB); reading it part by part needs pyarrow: pip install "
                              "'ektelo_pgm[parquet]'")
    if engine == "memory":
        return read_table(path, header, names, sep, encoding, quoted_newlines=quoted_newlines)
    arrow()
    table = Partitions(path, header, names, sep, encoding, quoted_newlines=quoted_newlines)
    table.rows, table.cap = part_rows(len(table.columns), cap), cap
    if sized:
        progress.note(f"note: reading {path} part by part ({table.rows:,} rows at a time): read whole it would take "
                      f"more than the memory cap (--max-memory, {cap / 2**20:,.0f} MB)")
    return table


def has_header(path) -> bool:
    """A guess, for ``evaluate`` only (not private), whether a CSV file's first line names its
    columns: some field of it is text where the lines below hold numbers, or none of its fields
    repeats a value of its column below (over the records of the first 50 lines, read by pandas,
    a record whose quoted fields run past them left out)."""
    pd = pandas_module()
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line for _, line in zip(range(50), f)]
        lines = lines[:defined_records([line.rstrip("\n") for line in lines], ",", True, final=False)[1]]
        lines = [line for line in lines if line.strip()]
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
    table's: whole numbers (a numeric column of integers, or categories that are all whole
    numbers) as nullable integers, or as floats where the column writes them with a point
    (``pointed``), other numbers as floats, anything else (times included) as text."""
    pd = pandas_module()
    if column.kind == "numeric" and column.written_in is not None:  # text in the column's format
        return values.astype(object)
    if column.kind == "numeric":  # Int64 holds every whole number decoded inside the edges
        whole = column.integer and max(map(abs, column.edges)) < 2 ** 62 and not column.pointed
        return values.astype("Int64" if whole else float)
    categories = [canonical_value(c) for c in column.categories] + ([] if column.other is None else [column.other])
    codes, uniques = pd.factorize(values)  # each distinct value converted once; -1: missing
    as_series = lambda array, dtype=None: pd.Series(array, index=values.index, name=values.name,  # noqa: E731
                                                    dtype=dtype)
    if all(isinstance(c, int) and abs(c) < 2 ** 62 for c in categories) and not column.pointed:
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
    an object Series.  Numbers stored in fewer than 64 bits (float32) are read as their
    shortest digits, as written (``0.1``, not float64's ``0.10000000149011612``)."""
    pd = pandas_module()
    values = series.astype(object)
    if series.dtype.kind == "f" and series.dtype.itemsize < 8:
        narrow = np.dtype(f"f{series.dtype.itemsize}").type
        values = values.map(lambda v: float(str(narrow(v))), na_action="ignore")
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
    such as ``"1e400"``), else the text as a str (``"True"``, ``"02134"``: :data:`LEADING_ZERO`).
    An object array, one entry per row (:func:`factorized`)."""
    codes, values, _ = factorized(series, missing)
    return np.append(values, None)[codes]


def factorized(series, missing: frozenset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(codes, values, forms)`` of a raw column: ``values``, the :func:`canonical` value of each
    distinct raw value in order of first appearance (an object array; two raw values may read as
    one, ``" 5"`` and ``"5"``, and a missing marker as None), ``forms``, how each is written where
    it is a whole number written as text (int8: 1 with a decimal point, ``"61.0"``, as pandas writes
    a column of whole numbers with blanks; 0 without, ``"61"``; -1 not so: a float's form is its
    column's dtype, which one record can change, and would decide it for the others), and
    ``codes``, each row's index into ``values`` (int64, -1 where the row is NaN or None).  Each
    distinct raw value is parsed once, so the cost per row is that of hashing it."""
    pd = pandas_module()
    codes, uniques = pd.factorize(series)
    cleaned = clean(pd.Series(uniques), missing)
    values = np.empty(len(uniques), dtype=object)
    values[:] = [None if pd.isna(v) else canonical_value(v) for v in cleaned]
    forms = np.array([int("." in raw) if isinstance(value, int) and isinstance(raw, str) else -1
                      for raw, value in zip(cleaned, values)], dtype=np.int8)
    return codes.astype(np.int64, copy=False), values, forms


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
        return text if LEADING_ZERO.match(text) else int(text)  # exact, any number of digits Python parses
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
    order, any depth: a folder a Spark or Dask job wrote; extensions in any case), or the files a
    glob matches."""
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
    kinds = {is_parquet(p) for p in found}
    if len(kinds) > 1:
        raise InputError(f"{path}: holds both CSV and Parquet files; give one kind")
    return found


class Partitions:
    """A table read part by part, never whole (the out-of-core path): its ``files`` (a file, a
    folder or a glob, :func:`table_files`), Parquet read in batches of ``rows`` rows
    (:func:`parquet_frame`), CSV in parts of ``rows`` records read as :func:`read_table` reads a
    CSV (its ``header``, ``names``, ``sep``, ``encoding`` and ``quoted_newlines``; every field as text; a headerless
    table's width taken over its first records, whichever files hold them).  Iterating yields
    pandas DataFrames with the table's :attr:`columns`; each pass reads the files again.
    :attr:`bytes`: their size on disk; :attr:`cap`: the memory its run may take (bytes, the
    default of :func:`memory_cap` unless :func:`open_table` was given another)."""

    def __init__(self, path, header: bool | None = None, names=None, sep: str | None = None,
                 encoding: str = "utf-8", rows: int = PART_ROWS, quoted_newlines: bool = False):
        self.files, self.rows, self.cap = table_files(path), int(rows), memory_cap()
        self.bytes = sum(os.path.getsize(p) for p in self.files)
        self.parquet = is_parquet(self.files[0])
        if self.parquet:
            self._names = parquet_names(self.files[0])
            other = [p for p in self.files[1:] if parquet_names(p) != self._names]
            if other:
                raise InputError(f"{other[0]}: its columns differ from those of {self.files[0]}")
        else:
            self._options = csv_options(self.files[0], header, names, sep, encoding, True, quoted_newlines)
            self._names = csv_names(self.files, self._options)
        self.columns = self._names
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
                yield parquet_frame(batch).set_axis(self.columns, axis=1)
            return
        for path in self.files:
            for part in csv_frames(path, self._options, self._names, self.rows):
                yield part[self.columns]

    def __repr__(self) -> str:
        kind = "Parquet" if self.parquet else "CSV"
        return f"Partitions({len(self.files)} {kind} files, {self.bytes / 2**20:,.1f} MB, columns {self.columns})"
