"""A raw column as the private schema reads it, before any noise: its :class:`Tally`, the
distinct :func:`~ektelo_pgm.table_io.canonical` values with the records holding each and the
records missing, of a pandas column (:func:`tally`), of a table's parts merged in order
(:func:`merged`, :func:`tallies`) or read as times (:func:`timed`).  Never released itself:
each count the schema releases is a noisy sum of these (:mod:`.histogram`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import progress
from ..errors import InputError
from ..table_io import Partitions, canonical, factorized, is_dask_collection, pandas_module
from ..times import as_times

#: Bytes a run takes per distinct value of a column held in its tally, from the tally to the
#: schema's release: 2M unique whole numbers took 838 and 857 MB more than the table without them
#: (``synth --mechanism mst`` part by part, benchmarks/big_synth.py, docs/big_data.md).
VALUE_BYTES = 450


@dataclass(frozen=True)
class Tally:
    """A raw column as the private schema reads it: ``values``, its distinct present
    :func:`~ektelo_pgm.table_io.canonical` values in order of first appearance (an object
    array), ``counts``, the records holding each (int64), and ``missing``, the records missing.
    Every count of :func:`release` and :func:`refine` is a sum of these, so the tallies of a
    table's partitions, :func:`merged` in order, give exactly the whole table's release."""

    values: np.ndarray
    counts: np.ndarray
    missing: int


def _grouped(values: np.ndarray, counts: np.ndarray, missing: int) -> Tally:
    """The Tally of ``values`` (canonical, None for missing, repeats allowed) held by ``counts``
    records each, repeats added in order of first appearance."""
    present = np.array([v is not None for v in values], dtype=bool)
    pd = pandas_module()
    codes, uniques = pd.factorize(np.asarray(values[present], dtype=object))
    summed = np.zeros(len(uniques), dtype=np.int64)
    np.add.at(summed, codes, counts[present])
    kept = np.empty(len(uniques), dtype=object)
    kept[:] = list(uniques)
    return Tally(kept, summed, int(missing + counts[~present].sum()))


def tally(series, markers: frozenset) -> Tally:
    """The Tally of one raw column (a pandas Series), as :func:`~ektelo_pgm.table_io.canonical`
    reads it (``markers``: the missing markers)."""
    codes, values = factorized(series, markers)
    counts = np.bincount(codes[codes >= 0], minlength=len(values)).astype(np.int64)
    return _grouped(values, counts, int((codes < 0).sum()))


def merged(tallies) -> Tally:
    """The Tally of the concatenation of the parts whose ``tallies`` are given in order."""
    tallies = list(tallies)
    values = np.concatenate([t.values for t in tallies]) if tallies else np.empty(0, dtype=object)
    counts = np.concatenate([t.counts for t in tallies]) if tallies else np.empty(0, dtype=np.int64)
    return _grouped(values, counts, sum(t.missing for t in tallies))


def timed(t: Tally, fmt: str) -> Tally:
    """``t`` read in the time format ``fmt``: whole seconds (:func:`~ektelo_pgm.encoding.as_times`),
    values that it does not read counted as missing."""
    return _grouped(as_times(t.values, fmt), t.counts, t.missing)


def tallies(frame, markers: frozenset) -> dict[str, Tally]:
    """The Tally of every column of a pandas or partitioned table (a Dask DataFrame, read
    partition by partition where Dask runs, or an iterable of pandas DataFrames such as
    :class:`~ektelo_pgm.table_io.Partitions`): the partitions' tallies merged in order.  Where
    the distinct values held for a Partitions would take more than its memory ``cap``
    (``VALUE_BYTES`` each: a column of identifiers), a note says so where progress bars are
    shown (:func:`~ektelo_pgm.progress.note`: their number is the data's), naming the column
    holding the most."""
    if is_dask_collection(frame):
        from ..dask_dataset import dask_module

        dask = dask_module()
        parts = dask.compute(*[dask.delayed(_part_tallies)(p, markers) for p in frame.to_delayed()])
    elif isinstance(frame, pandas_module().DataFrame):
        return _part_tallies(frame, markers)
    else:
        parts = (_part_tallies(part, markers) for part in frame)
    columns: dict[str, list] = {}
    held: dict[str, int] = {}  # distinct values held per column, over the parts read
    cap = frame.cap if isinstance(frame, Partitions) else None
    with progress.bar(None, "schema counts", "part") as shown:
        for part in parts:
            for name, t in part.items():
                columns.setdefault(name, []).append(t)
                held[name] = held.get(name, 0) + len(t.values)
            if cap is not None and sum(held.values()) * VALUE_BYTES > cap:
                most = max(held, key=held.get)
                progress.note(f"note: the schema's counts hold {sum(held.values()):,} distinct values (about "
                              f"{sum(held.values()) * VALUE_BYTES / 2**20:,.0f} MB), past the memory cap of "
                              f"{cap / 2**20:,.0f} MB; column {most!r} holds {held[most]:,}: an identifier? leave "
                              "it out (--drop) or write it afresh (--regenerate)")
                cap = None
            shown.update()
    if not columns:
        raise InputError("the table has no rows")
    return {name: merged(ts) for name, ts in columns.items()}


def _part_tallies(part, markers: frozenset) -> dict[str, Tally]:
    return {str(name): tally(part[name], markers) for name in part.columns}


def column_values(series, markers: frozenset, time_format: str | None = None) -> np.ndarray:
    """A raw column as the schema reads it: :func:`~ektelo_pgm.table_io.canonical` values, or
    for a column of times, seconds (:func:`~ektelo_pgm.encoding.as_times`)."""
    values = canonical(series, markers)
    return values if time_format is None else as_times(values, time_format)
