"""Records past one machine's memory: a :class:`Dataset` whose integer codes are a partitioned
Dask DataFrame (the optional ``dask`` extra, ``pip install 'ektelo_pgm[dask]'``).

A mechanism reads records only to count them: marginals (``Dataset.marginal`` and
``Dataset.marginals``) and, for the few computations that marginals cannot express, sums of a
per-record quantity (``Dataset.sum_rows``).  A :class:`DaskDataset` counts every partition with
the compiled counting kernel (:func:`~ektelo_pgm.kernels.counting.count_marginals`) and adds
the partitions' int64 counts, so its marginals are exactly those of the in-memory Dataset and
every mechanism and plan runs on it unchanged.
The work runs wherever Dask runs: threads by default, a ``dask.distributed`` cluster when a
``Client`` is active; the client only ever holds marginal tables.

A raw partitioned table is encoded by :class:`~ektelo_pgm.encoding.TableEncoder` partition by
partition (:func:`encode`); its private fit sums the partitions' exact counts before the noise
(:func:`sum_partitions`), as the in-memory fit counts the whole table.

Dask is imported on first use: this module, and the package, import without it.
"""
from __future__ import annotations

import numpy as np

from .dataset import CountedDataset, Dataset, validate_records, check_recoded, read_domain
from .domain import Domain
from .errors import DEFAULT_MAX_MB, InputError

#: Partial results added together per task when partitions' counts are summed (a tree).
FAN_IN = 8


def dask_module():
    """dask, with its DataFrame collection, imported on first use."""
    try:
        import dask
        import dask.dataframe  # noqa: F401 (registers the collection)
    except ImportError:
        raise ImportError("partitioned data needs dask: pip install 'ektelo_pgm[dask]' "
                          "(or pip install 'dask[dataframe]')") from None
    return dask


def _pandas():
    import pandas

    return pandas


def is_dask_collection(table) -> bool:
    """Whether ``table`` is a Dask DataFrame or Series (decided without importing dask)."""
    return type(table).__module__.split(".")[0] == "dask"


def _codes(part, index, domain: Domain) -> np.ndarray:
    """The (n, d) int64 codes of one partition, checked against ``domain`` (the error names the
    partition, the column and the row within the partition)."""
    if len(part) == 0:
        return np.empty((0, len(domain)), dtype=np.int64)
    return validate_records(part.to_numpy(), domain, f"partition {index}")


def _count(part, index, domain: Domain, plan) -> list:
    """The partition's number of rows and, for each ``(axes, shape)`` of ``plan``, its int64
    counts over the raveled (C order) codes of those columns, all in one pass of the counting
    kernel (serial: Dask already counts partitions side by side)."""
    from .kernels.counting import count_marginals

    columns = np.ascontiguousarray(_codes(part, index, domain).T)  # checked: every code within its size
    tables = [np.zeros(int(np.prod(shape)), dtype=np.int64) for _, shape in plan]
    count_marginals(columns, plan, tables, parallel=False)
    return [np.int64(columns.shape[1]), *tables]


def _add(*blocks) -> list:
    """Elementwise sum of lists of partial results."""
    return [sum(parts) for parts in zip(*blocks)]


def _summed(tasks) -> list:
    """The elementwise sum of delayed lists of partial results, added in a tree of fan-in
    ``FAN_IN`` (so that no task holds more than a few partial results) and computed."""
    dask = dask_module()
    add = dask.delayed(_add, pure=True)
    while len(tasks) > 1:
        tasks = [add(*tasks[i:i + FAN_IN]) for i in range(0, len(tasks), FAN_IN)]
    return dask.compute(tasks[0])[0]


def _apply(part, index, func, prepare) -> list:
    block = prepare(part, index)
    try:
        return [np.asarray(func(block))]
    except ValueError as error:
        raise InputError(f"partition {index}: {error}") from None


def sum_partitions(collection, func, prepare=lambda part, index: part) -> np.ndarray:
    """``func(prepare(partition, index))`` summed over the partitions of a Dask collection:
    ``func`` must return a sum over the partition's rows (an array, e.g. counts), so that the
    total is the sum over all rows.  A ValueError raised by ``func`` is re-raised naming the
    partition."""
    apply = dask_module().delayed(_apply, pure=True)
    return _summed([apply(part, i, func, prepare) for i, part in enumerate(collection.to_delayed())])[0]


def _recode(part, domain: Domain, lookups: dict, partition_info=None):
    pd = _pandas()
    codes = _codes(part, (partition_info or {}).get("number", "?"), domain)
    return pd.DataFrame({a: lookups[a][codes[:, j]] for j, a in enumerate(domain.attrs)}, index=part.index)


def int_meta(attrs):
    """An empty frame of int64 columns ``attrs``."""
    pd = _pandas()
    return pd.DataFrame({a: np.empty(0, dtype=np.int64) for a in attrs})


def _encode(part, encoder, partition_info=None):
    attrs = list(encoder.domain.attrs)
    if len(part) == 0:
        return int_meta(attrs)
    try:
        records = encoder.transform(part).records
    except ValueError as error:
        raise InputError(f"partition {(partition_info or {}).get('number', '?')}: {error}") from None
    return _pandas().DataFrame(records, columns=attrs, index=part.index)


def encode(encoder, table) -> "DaskDataset":
    """The codes of a raw Dask DataFrame under a fitted ``encoder``, computed partition by
    partition when counted (``TableEncoder.transform`` of a Dask DataFrame comes here)."""
    attrs = list(encoder.domain.attrs)
    frame = table.map_partitions(_encode, encoder, meta=int_meta(attrs))
    return DaskDataset(frame, encoder.domain)


class DaskDataset(CountedDataset):
    """A Domain plus integer codes held in a partitioned Dask DataFrame (one column per
    attribute, named as in the domain; any integer dtype).

    Nothing is read until something is counted, and counts are kept
    (:class:`~ektelo_pgm.dataset.CountedDataset`).  Codes are checked as partitions are read: a
    code outside its attribute's domain, or not an integer, raises naming the partition, the
    column and the row within the partition."""

    def __init__(self, frame, domain: Domain):
        dask_module()
        super().__init__(domain)
        if not is_dask_collection(frame) or not hasattr(frame, "columns"):
            raise TypeError(f"DaskDataset: expected a Dask DataFrame, got {type(frame).__name__}")
        missing = [a for a in domain.attrs if a not in frame.columns]
        if missing:
            raise InputError(f"DaskDataset: columns {missing} of the domain are missing from the table "
                             f"{list(frame.columns)}")
        self.frame = frame[list(domain.attrs)]

    @classmethod
    def load(cls, path, domain_json_path, **options) -> "DaskDataset":
        """Integer-coded records from partitioned Parquet (a directory, a file or a glob) or CSV
        files with a header row (a path or glob ending in ``.csv``), and a ``{name: size}`` JSON
        domain file; other keywords go to ``dask.dataframe.read_parquet`` or ``read_csv``.  Read
        from shared storage, the same call works on every worker of a cluster."""
        dd = dask_module().dataframe
        domain = read_domain(domain_json_path)
        attrs = list(domain.attrs)
        if str(path).endswith(".csv"):
            frame = dd.read_csv(path, usecols=attrs, **options)
        else:
            frame = dd.read_parquet(path, columns=attrs, **options)
        return cls(frame, domain)

    @classmethod
    def from_dataframe(cls, df, domain: Domain) -> "DaskDataset":
        """A DaskDataset over a Dask DataFrame of integer codes holding the domain's columns."""
        return cls(df, domain)

    def to_dataframe(self):
        """The records as the (lazy) Dask DataFrame of integer codes."""
        return self.frame

    def to_memory(self, max_mb: float = DEFAULT_MAX_MB) -> Dataset:
        """The records in an in-memory :class:`Dataset`; ModelTooLargeError naming the size in MB above
        ``max_mb`` (int64 codes)."""
        self._check_memory(max_mb)
        return Dataset(self.frame.compute().to_numpy(), self.domain)

    def project(self, attrs) -> "DaskDataset":
        """The records restricted to ``attrs`` (in the order given), still partitioned."""
        attrs = self.domain.check(attrs)
        return DaskDataset(self.frame[list(attrs)], self.domain.project(attrs))

    def recode(self, codes: dict, domain: Domain) -> "DaskDataset":
        """As :meth:`Dataset.recode`, partition by partition when counted."""
        check_recoded(self.domain, domain)
        lookups = {a: np.asarray(codes[a], dtype=np.int64) for a in self.domain.attrs}
        frame = self.frame.map_partitions(_recode, self.domain, lookups, meta=int_meta(self.domain.attrs))
        return DaskDataset(frame, domain)

    def _count(self, attrs, plan) -> tuple[int, list[np.ndarray]]:
        count, sub = dask_module().delayed(_count, pure=True), self.domain.project(attrs)
        parts = self.frame[list(attrs)].to_delayed()
        rows, *tables = _summed([count(part, i, sub, plan) for i, part in enumerate(parts)])
        return rows, tables

    def sum_rows(self, func) -> np.ndarray:
        """``func`` (see :meth:`Dataset.sum_rows`) applied to every partition's codes, summed."""
        return sum_partitions(self.frame, func, lambda part, index: _codes(part, index, self.domain))

    def __repr__(self) -> str:
        rows = "" if self._rows is None else f"{self._rows} records, "
        return f"DaskDataset({rows}{self.frame.npartitions} partitions, {self.domain})"
