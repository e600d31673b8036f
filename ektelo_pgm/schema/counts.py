"""A raw column as the private schema reads it, before any noise: its :class:`Tally`, the
distinct :func:`~ektelo_pgm.table_io.canonical` values with the records holding each and the
records missing, of a pandas column (:func:`tally`), of a table's parts merged in order
(:func:`merged`, :func:`tallies`) or read as numbers in a format (:func:`timed`); a column with more distinct
values than the memory cap holds is kept on disk by ranges of a fixed hash of its values
(:class:`Spilled`), and every step reads a column range by range (:func:`chunks`, in the order
of :func:`hash_order`).  Never released itself: each count the schema releases is a noisy sum
of these (:mod:`.histogram`)."""
from __future__ import annotations

import os
import pickle
import tempfile
import zlib
from dataclasses import dataclass

import numpy as np

from .. import progress
from ..errors import InputError
from ..files import private_file
from ..table_io import Partitions, canonical, factorized, is_dask_collection, pandas_module
from ..number_formats import read_numbers

#: Bytes a run takes per distinct value of a column held in its tally, from the tally to the
#: schema's release: 2M unique whole numbers took 838 and 857 MB more than the table without them
#: (``synth --mechanism mst`` part by part, benchmarks/big_synth.py, docs/big_data.md).
VALUE_BYTES = 450


@dataclass(frozen=True)
class Tally:
    """A raw column as the private schema reads it: ``values``, its distinct present
    :func:`~ektelo_pgm.table_io.canonical` values in order of first appearance (an object
    array), ``counts``, the records holding each (int64), ``missing``, the records missing, and
    ``pointed`` and ``plain``, the records of whole numbers written as text with a decimal point
    (``61.0``) and without (``61``; :func:`~ektelo_pgm.table_io.factorized`), which ``values``
    holds as ints.  Every count of :func:`release` and :func:`refine` is a sum of these, so the
    tallies of a table's partitions, :func:`merged` in order, give exactly the whole table's
    release."""

    values: np.ndarray
    counts: np.ndarray
    missing: int
    pointed: int = 0
    plain: int = 0

    @property
    def records(self) -> int:
        """The records of the column, missing or not."""
        return int(self.counts.sum()) + self.missing


def _grouped(values: np.ndarray, counts: np.ndarray, missing: int, pointed: int = 0, plain: int = 0) -> Tally:
    """The Tally of ``values`` (canonical, None for missing, repeats allowed) held by ``counts``
    records each, repeats added in order of first appearance, ``pointed`` and ``plain`` of them
    whole numbers written with a point and without (:class:`Tally`)."""
    present = np.array([v is not None for v in values], dtype=bool)
    pd = pandas_module()
    codes, uniques = pd.factorize(np.asarray(values[present], dtype=object))
    summed = np.zeros(len(uniques), dtype=np.int64)
    np.add.at(summed, codes, counts[present])
    kept = np.empty(len(uniques), dtype=object)
    kept[:] = list(uniques)
    return Tally(kept, summed, int(missing + counts[~present].sum()), int(pointed), int(plain))


class Tallies(dict):
    """``{column: Tally}`` of a table (:func:`tallies`), in the table's order, with ``blank``: the
    records missing in every one of its columns (never released itself: :mod:`.table` counts
    them with noise)."""

    def __init__(self, columns=(), blank: int = 0):
        super().__init__(columns)
        self.blank = int(blank)


def tally(series, markers: frozenset) -> Tally:
    """The Tally of one raw column (a pandas Series), as :func:`~ektelo_pgm.table_io.canonical`
    reads it (``markers``: the missing markers)."""
    return _tally_of(*factorized(series, markers))


def _tally_of(codes: np.ndarray, values: np.ndarray, forms: np.ndarray) -> Tally:
    """The Tally of a column given as its :func:`~ektelo_pgm.table_io.factorized` ``codes``, ``values``
    and ``forms``."""
    counts = np.bincount(codes[codes >= 0], minlength=len(values)).astype(np.int64)
    return _grouped(values, counts, int((codes < 0).sum()), int(counts[forms == 1].sum()),
                    int(counts[forms == 0].sum()))


def merged(tallies) -> Tally:
    """The Tally of the concatenation of the parts whose ``tallies`` are given in order."""
    tallies = list(tallies)
    values = np.concatenate([t.values for t in tallies]) if tallies else np.empty(0, dtype=object)
    counts = np.concatenate([t.counts for t in tallies]) if tallies else np.empty(0, dtype=np.int64)
    return _grouped(values, counts, sum(t.missing for t in tallies), sum(t.pointed for t in tallies),
                    sum(t.plain for t in tallies))


def timed(t: Tally, fmt: str) -> Tally:
    """``t`` read in the time or number format ``fmt``: whole seconds, or numbers written with
    symbols (:func:`~ektelo_pgm.number_formats.read_numbers`), values that it does not read
    counted as missing."""
    return _grouped(read_numbers(t.values, fmt), t.counts, t.missing)


def tallies(frame, markers: frozenset, folder=None) -> Tallies:
    """The :class:`Tallies` of a pandas or partitioned table (a Dask DataFrame, read partition by
    partition where Dask runs, or an iterable of pandas DataFrames such as
    :class:`~ektelo_pgm.table_io.Partitions`): the partitions' tallies merged in order.  Where
    the distinct values held for a Partitions would take more than half its memory ``cap``
    (``VALUE_BYTES`` each: a column of identifiers), the column holding the most is written to a
    private ``folder`` from then on and given as a :class:`Spilled`, read back a range of its
    values at a time; without a ``folder``, a note says so where progress bars are shown
    (:func:`~ektelo_pgm.progress.note`: their number is the data's), naming that column.  Which
    columns are spilled changes the memory a run takes, never a count (:func:`chunks`)."""
    if is_dask_collection(frame):
        from ..dask_dataset import dask_module

        dask = dask_module()
        parts = dask.compute(*[dask.delayed(_part_tallies)(p, markers) for p in frame.to_delayed()])
    elif isinstance(frame, pandas_module().DataFrame):
        return _part_tallies(frame, markers)
    else:
        parts = (_part_tallies(part, markers) for part in frame)
    columns: dict[str, list] = {}
    spilled: dict[str, Spilled] = {}
    held: dict[str, int] = {}  # distinct values held per column, over the parts read
    cap = frame.cap if isinstance(frame, Partitions) else None
    most = None if cap is None else max(cap // (2 * VALUE_BYTES), 1)  # distinct values held at most
    names: list = []  # the columns, in the table's order
    blank = 0
    with progress.bar(None, "schema counts", "part") as shown:
        for part in parts:
            names, blank = names or list(part), blank + part.blank
            for name, t in part.items():
                if name in spilled:
                    spilled[name].add(t)
                    continue
                columns.setdefault(name, []).append(t)
                held[name] = held.get(name, 0) + len(t.values)
            if most is not None and held and sum(held.values()) > most:
                for name in held:  # the parts' repeats merged: the distinct values themselves
                    columns[name] = [merged(columns[name])]
                    held[name] = len(columns[name][0].values)
            while most is not None and folder is not None and held and sum(held.values()) > most:
                name = max(held, key=held.get)
                spilled[name] = Spilled(tempfile.mkdtemp(prefix="tally-", dir=folder), most)
                for t in columns.pop(name):
                    spilled[name].add(t)
                del held[name]
            if most is not None and sum(held.values()) > most:
                name = max(held, key=held.get)
                progress.note(f"note: the schema's counts hold {sum(held.values()):,} distinct values (about "
                              f"{sum(held.values()) * VALUE_BYTES / 2**20:,.0f} MB), past the memory cap of "
                              f"{cap / 2**20:,.0f} MB; column {name!r} holds {held[name]:,}: an identifier? leave "
                              "it out (--drop) or write it afresh (--regenerate)")
                most = None
            shown.update()
    if not columns and not spilled:
        raise InputError("the table has no rows")
    out = {**{name: merged(ts) for name, ts in columns.items()}, **spilled}
    return Tallies({name: out[name] for name in names}, blank)


#: Groups of the values by the top bits of :func:`value_hashes` in which a :class:`Spilled` column
#: is kept on disk; a chunk of it holds one group or more.
GROUPS = 256


def value_hashes(values) -> np.ndarray:
    """A fixed 32-bit hash of each :func:`~ektelo_pgm.table_io.canonical` value (an int, a float,
    a str; a time's seconds), CRC-32 of its type and text: the same wherever and however the
    value is read (uint32)."""
    return np.fromiter((zlib.crc32(_hashed(v)) for v in values), dtype=np.uint32, count=len(values))


def _hashed(value) -> bytes:
    if isinstance(value, str):
        return b"s" + value.encode("utf-8", "surrogatepass")
    if isinstance(value, int):
        return b"i%d" % value
    return b"f" + repr(value).encode()


def hash_order(values) -> np.ndarray:
    """The indices that sort distinct ``values`` by :func:`value_hashes`, equal hashes by text
    after numbers, then by value: an order of a column's values that is the same whether they
    are read at once or in chunks of ranges of the hash (:func:`chunks`)."""
    hashes = value_hashes(values)
    order = np.argsort(hashes, kind="stable")
    ranked = hashes[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    ends = np.r_[starts[1:], ranked.size]
    for a, b in zip(starts[ends - starts > 1], ends[ends - starts > 1]):  # a hash shared by values
        order[a:b] = sorted(order[a:b], key=lambda k: (isinstance(values[k], str), values[k]))
    return order


class Spilled:
    """A column's Tally kept on disk (:func:`tallies` past the memory cap): each part's tally
    written to a private file of its own under ``folder``, grouped by the top bits of
    :func:`value_hashes` (``GROUPS``), and read back a range of groups at a time, each range
    holding at most ``most`` entries (or one group) (:meth:`chunks`).  ``missing``: the records
    missing; ``pointed`` and ``plain``: those of whole numbers written with a point and without
    (:class:`Tally`);
    :attr:`records`: all the column's."""

    def __init__(self, folder: str, most: int):
        self.folder, self.most, self.missing, self.present, self.pointed, self.plain = folder, most, 0, 0, 0, 0
        self.files: list = []  # (path, byte offset of each group and the end)
        self.sizes = np.zeros(GROUPS, dtype=np.int64)  # entries per group, over the parts

    @property
    def records(self) -> int:
        """The records of the column, missing or not."""
        return self.present + self.missing

    def add(self, t: Tally) -> None:
        """The part of the column whose Tally is ``t``, written after those added before."""
        groups = value_hashes(t.values) >> 24
        order = np.argsort(groups, kind="stable")
        bounds = np.searchsorted(groups[order], np.arange(GROUPS + 1))
        path = os.path.join(self.folder, f"part-{len(self.files):06d}.pickle")
        offsets = []
        with private_file(path) as f:  # a column's values: 0600, in the fit's private folder
            for g in range(GROUPS):
                offsets.append(f.tell())
                rows = order[bounds[g]:bounds[g + 1]]
                pickle.dump((t.values[rows], t.counts[rows]), f, protocol=pickle.HIGHEST_PROTOCOL)
            offsets.append(f.tell())
        self.files.append((path, offsets))
        self.sizes += np.diff(bounds)
        self.missing += t.missing
        self.pointed += t.pointed
        self.plain += t.plain
        self.present += int(t.counts.sum())

    def chunks(self, fmt: str | None = None):
        """The column's Tally range by range of groups (each exact for its values, ``missing`` 0);
        ``fmt``: read as numbers in that time or number format (:func:`timed`), grouped anew by
        their own hash, in a folder beside this one."""
        source = self
        if fmt is not None:
            source = Spilled(tempfile.mkdtemp(prefix="timed-", dir=os.path.dirname(self.folder)), self.most)
            for chunk in self.chunks():
                source.add(timed(chunk, fmt))
        first = 0
        while first < GROUPS:
            last = first + 1
            while last < GROUPS and source.sizes[first:last + 1].sum() <= source.most:
                last += 1
            yield merged(source._read(first, last))
            first = last

    def _read(self, first: int, last: int):
        for path, offsets in self.files:
            with open(path, "rb") as f:
                f.seek(offsets[first])
                for _ in range(first, last):
                    values, counts = pickle.load(f)
                    yield Tally(values, counts, 0)


def chunks(t, fmt: str | None = None):
    """A column's Tally or :class:`Spilled` ``t`` (read as numbers in the time or number format
    ``fmt``: :func:`timed`) as Tallies that each hold their distinct values once and together all of
    them: ``t`` itself, or a Spilled range by range.  Sorted by :func:`hash_order`, the chunks'
    values in turn give the same order as the whole column's."""
    if isinstance(t, Spilled):
        return t.chunks(fmt)
    return iter([t if fmt is None else timed(t, fmt)])


def whole(t) -> Tally:
    """A column's Tally or :class:`Spilled` ``t`` as one Tally, in memory."""
    if isinstance(t, Tally):
        return t
    read = merged(chunks(t))
    return Tally(read.values, read.counts, t.missing, t.pointed, t.plain)


def _part_tallies(part, markers: frozenset) -> Tallies:
    columns, blank = {}, np.ones(len(part), dtype=bool)
    for name in part.columns:
        codes, values, forms = factorized(part[name], markers)
        columns[str(name)] = _tally_of(codes, values, forms)
        blank &= np.append(np.array([v is None for v in values], dtype=bool), True)[codes]  # -1: NaN or None
    return Tallies(columns, int(blank.sum()) if len(part.columns) else 0)


def column_values(series, markers: frozenset, fmt: str | None = None) -> np.ndarray:
    """A raw column as the schema reads it: :func:`~ektelo_pgm.table_io.canonical` values, or
    for a column of times or of numbers written with symbols, its numbers in the format ``fmt``
    (:func:`~ektelo_pgm.number_formats.read_numbers`)."""
    values = canonical(series, markers)
    return values if fmt is None else read_numbers(values, fmt)
