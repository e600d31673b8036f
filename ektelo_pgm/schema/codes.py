"""The integer codes of a table's rows under a private or declared schema (:func:`encoded`): every
record coded, none refused or dropped; a pandas table in memory, a Dask DataFrame partition by
partition, a table read part by part into Parquet files of codes."""
from __future__ import annotations

import os

import numpy as np

from .. import progress
from ..dataset import Dataset
from ..encoding import TableEncoder
from ..errors import InputError
from ..files import PRIVATE_FOLDER, private_file
from ..number_formats import as_written, read_numbers
from ..table_io import Partitions, arrow, as_float, canonical_value, factorized, is_dask_collection, pandas_module


def encoded(frame, encoder: TableEncoder, folder=None) -> Dataset:
    """The integer codes of every row of ``frame`` under a private or declared schema, read as
    :func:`~ektelo_pgm.table_io.canonical` values: whatever a record holds, it is coded and
    never refused or dropped, so neither the run's outcome nor the number of records the
    mechanism sees depends on one record's values (substitute neighbours stay substitute
    neighbours).  A number outside its column's range goes to the nearest end bin (infinities
    included), and in a categorical column of numbers without an other code, a number outside
    its categories to the nearest of them: numbers are clipped, never blanked; a number is binned
    as it is written, in a column with decimals rounded to them (the float32 ``12.149999618530273``
    is 12.15, so it lies in the bin that holds 12.15, as its decimal is drawn).  A missing value
    (and text in a numeric column) gets the column's missing code; a category outside the
    schema's gets the ``other`` code (in a declared column without one, the missing code).  A
    value whose code the column lacks gets its ``fallback_code``: in a categorical column the
    category with the largest noisy count (such records are too few for the noise to show, and
    in the largest they change its share the least), in a numeric one the bin of its median
    (there they move its quantiles least), or in a declared column its first code.  A pandas
    table gives a :class:`~ektelo_pgm.dataset.Dataset`; a Dask DataFrame, a
    :class:`~ektelo_pgm.dask_dataset.DaskDataset` coded partition by partition where Dask runs;
    a :class:`~ektelo_pgm.table_io.Partitions`, a :class:`~ektelo_pgm.parquet_dataset.ParquetDataset`
    whose codes are written once under ``folder``."""
    if is_dask_collection(frame):
        from ..dask_dataset import DaskDataset, int_meta

        meta = int_meta(encoder.domain.attrs)
        return DaskDataset(frame.map_partitions(_coded_part, encoder, meta=meta), encoder.domain)
    if isinstance(frame, Partitions):
        return _coded_files(frame, encoder, folder)
    return Dataset(_coded_part(frame, encoder).to_numpy(), encoder.domain)


def _coded_part(frame, encoder: TableEncoder):
    """The codes of a pandas table: a DataFrame of int64 columns named as the encoder's attributes,
    a clock's read from the values its column read (each raw value read once)."""
    markers, clocks = frozenset(encoder.missing), list(encoder.clocks.values())
    codes, phases = {}, {}
    for name, column in encoder.columns.items():
        rows, values = column_values(frame[name], column, markers)
        codes[name] = value_codes(values, column)[rows]
        phases.update({clock.name: clock.codes(values)[rows] for clock in clocks if clock.source == name})
    return pandas_module().DataFrame({**codes, **phases}, index=frame.index)


def _coded_files(parts: Partitions, encoder: TableEncoder, folder) -> "ParquetDataset":
    """The codes of a table read part by part, written once under ``folder`` as Parquet files of
    the smallest unsigned integers that hold them (read back by each pass of a mechanism), each
    a new file only this user can read (0600; an existing file is never overwritten)."""
    from ..parquet_dataset import ParquetDataset

    if folder is None:
        raise InputError("a table read part by part is coded into Parquet files: name a folder for them")
    pa, pq = arrow()
    os.makedirs(folder, mode=PRIVATE_FOLDER, exist_ok=True)
    types = {a: np.uint8 if size <= 2**8 else np.uint16 if size <= 2**16 else np.uint32
             for a, size in zip(encoder.domain.attrs, encoder.domain.shape)}
    files = []
    with progress.bar(None, "coding", "part") as shown:
        for k, part in enumerate(parts):
            codes = _coded_part(part, encoder)
            files.append(os.path.join(folder, f"codes-{k:05d}.parquet"))
            with private_file(files[-1]) as f:  # the records, coded: 0600
                pq.write_table(pa.table({a: codes[a].to_numpy().astype(t) for a, t in types.items()}), f)
            shown.update()
    if not files:
        raise InputError("the table has no rows")
    return ParquetDataset(files, encoder.domain)


def column_values(series, column, markers: frozenset) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, values)`` of a raw column in the schema's ``column``: ``values``, each distinct raw
    value read once (None last: the value of the missing rows), a numeric column's text read in its
    format, or without one (declared) each in the first number format that reads it
    (:func:`as_written`); ``rows``, each row's index into ``values``."""
    rows, values, _ = factorized(series, markers)
    values = np.append(values, None)  # the value of row code -1: missing
    if column.kind == "numeric":
        values = as_written(values) if column.written_in is None else read_numbers(values, column.written_in)
    return rows, values


def value_codes(values: np.ndarray, column) -> np.ndarray:
    """The int64 code in the schema's ``column`` of each of its read ``values`` (:func:`column_values`),
    by :func:`encoded`'s rules."""
    if column.kind == "numeric":
        number = np.array([isinstance(v, (int, float)) for v in values], dtype=bool)
        code = np.full(len(values), -1, dtype=np.int64)
        edges = np.array(column.edges, dtype=object)  # exact comparisons, whole numbers of any size
        numbers = values[number] if column.decimals is None else \
            np.array([round(v, column.decimals) for v in values[number]], dtype=object)  # as written
        code[number] = np.clip(np.searchsorted(edges, numbers, side="right") - 1, 0, column.bins - 1)
    else:
        categories = [canonical_value(c) for c in column.categories]
        code = pandas_module().Index(categories, dtype=object).get_indexer(values)
        outside = (code < 0) & np.array([v is not None for v in values], dtype=bool)  # present, not a category
        if column.other is not None:
            code[outside] = len(categories)
        elif not column.others_missing:
            code = _nearest(code, values, categories)
            code[(code < 0) & outside] = column.fallback_code
    code[code < 0] = column.size - 1 if column.missing else column.fallback_code
    return code.astype(np.int64)


def _nearest(code: np.ndarray, values: np.ndarray, categories: list) -> np.ndarray:
    """``code`` with each number not among ``categories`` given the code of the nearest number
    among them (the lower of two as near; the end one beyond them: clipped, as a numeric column
    clips), where the categories hold numbers."""
    numeric = [(as_float(c), k) for k, c in enumerate(categories) if isinstance(c, (int, float))]
    uncoded = np.flatnonzero((code < 0) & np.array([isinstance(v, (int, float)) for v in values], dtype=bool))
    if not numeric or not uncoded.size:
        return code
    points, codes = map(np.array, zip(*sorted(numeric)))
    x = np.array([as_float(v) for v in values[uncoded]], dtype=float)
    at = np.searchsorted(points, x)  # the first category at or above each number
    below, above = np.clip(at - 1, 0, points.size - 1), np.minimum(at, points.size - 1)
    pick = np.where(points[above] - x < x - points[below], above, below)
    code = code.copy()
    code[uncoded] = codes[pick]
    return code
