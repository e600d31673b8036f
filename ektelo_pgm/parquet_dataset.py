"""Records on this machine's disk: a :class:`~ektelo_pgm.dataset.CountedDataset` whose integer
codes are Parquet files, counted by streaming them (the ``parquet`` extra, pyarrow).

Each pass reads the files in batches of ``rows`` records, only the columns it needs, and adds
every marginal of the batch in one pass of the compiled counting kernel
(:func:`~ektelo_pgm.kernels.counting.count_marginals`): memory holds one batch and the tables,
whatever the number of records.  The steward's out-of-core path
(:func:`ektelo_pgm.schema.encoded` of a :class:`~ektelo_pgm.table_io.Partitions`) writes a raw
table's codes this way once, so that each pass of a mechanism reads small integers, not text.
docs/big_data.md measures it against Dask, DuckDB and Polars.
"""
from __future__ import annotations

import os

import numpy as np

from . import progress
from .dataset import CountedDataset, Dataset, check_recoded, read_domain
from .domain import Domain
from .errors import DEFAULT_MAX_MB, InputError
from .table_io import PARQUET, PART_ROWS, arrow, parquet_batches, table_files


def _within(codes: np.ndarray, size: int, attr: str) -> np.ndarray:
    """``codes`` of ``attr``, refused (naming the column) when one lies outside ``0..size-1``."""
    if codes.size and (codes.min() < 0 or codes.max() >= size):
        raise InputError(f"ParquetDataset: column {attr!r} holds codes outside its domain 0..{size - 1}")
    return codes


class ParquetDataset(CountedDataset):
    """Integer codes in Parquet ``files`` (one column per attribute, named as in ``domain``; any
    integer type), read ``rows`` records at a time when counted.  ``lookups`` (attribute ->
    int64 array) maps each stored code to the dataset's code (:meth:`recode`).  Codes are
    checked as they are read: one outside its attribute's size raises naming the column."""

    def __init__(self, files, domain: Domain, lookups: dict | None = None, rows: int = PART_ROWS):
        super().__init__(domain)
        self.files, self.rows, self.lookups = [os.fspath(f) for f in files], int(rows), dict(lookups or {})
        if not self.files or not all(f.endswith(PARQUET) for f in self.files):
            raise InputError(f"ParquetDataset: expected Parquet files (.parquet, .pq), got {self.files[:3]}")
        names = arrow()[1].read_schema(self.files[0]).names
        missing = [a for a in domain.attrs if a not in names]
        if missing:
            raise InputError(f"ParquetDataset: columns {missing} of the domain are missing from the files' columns "
                             f"{names}")

    @classmethod
    def load(cls, path, domain_json_path, rows: int = PART_ROWS) -> "ParquetDataset":
        """Integer-coded records from Parquet files (a file, a folder or a glob) and a ``{name:
        size}`` JSON domain file."""
        return cls(table_files(path), read_domain(domain_json_path), rows=rows)

    def batches(self, attrs):
        """The records' codes of ``attrs``, batch by batch: (d, n) int64 arrays, checked."""
        sizes = self.domain.project(attrs).shape
        for batch in parquet_batches(self.files, attrs, self.rows):
            columns = np.empty((len(attrs), batch.num_rows), dtype=np.int64)
            for j, a in enumerate(attrs):
                codes = batch.column(j).to_numpy(zero_copy_only=False)
                if codes.dtype.kind not in "iu":
                    raise InputError(f"ParquetDataset: column {a!r} holds {codes.dtype} values, not integer codes")
                if a in self.lookups:
                    codes = self.lookups[a][_within(codes, self.lookups[a].size, a)]
                columns[j] = _within(codes, sizes[j], a)
            yield columns

    def _count(self, attrs, plan) -> tuple[int, list[np.ndarray]]:
        from .kernels.counting import count_marginals

        tables = [np.zeros(int(np.prod(shape)), dtype=np.int64) for _, shape in plan]
        rows = 0
        with progress.bar(None, "counting", "record") as shown:
            for columns in self.batches(attrs):
                count_marginals(columns, plan, tables)
                rows += columns.shape[1]
                shown.update(columns.shape[1])
        return rows, tables

    def sum_rows(self, func) -> np.ndarray:
        """``func`` (see :meth:`Dataset.sum_rows`) applied to every batch's (n, d) codes, summed."""
        total = None
        for columns in self.batches(self.domain.attrs):
            try:
                part = np.asarray(func(columns.T))
            except ValueError as error:
                raise InputError(f"ParquetDataset: {error}") from None
            total = part if total is None else total + part
        if total is None:
            raise InputError("ParquetDataset: the table is empty (no records)")
        return total

    def project(self, attrs) -> "ParquetDataset":
        """The records restricted to ``attrs`` (in the order given), still on disk."""
        attrs = self.domain.check(attrs)
        lookups = {a: v for a, v in self.lookups.items() if a in attrs}
        return ParquetDataset(self.files, self.domain.project(attrs), lookups, self.rows)

    def recode(self, codes: dict, domain: Domain) -> "ParquetDataset":
        """As :meth:`Dataset.recode`, applied to each batch as it is read."""
        check_recoded(self.domain, domain)
        lookups = {}
        for a in self.domain.attrs:
            table = np.asarray(codes[a], dtype=np.int64)
            if table.size != self.domain[a]:
                raise InputError(f"recode: attribute {a!r} needs {self.domain[a]} codes, got {table.size}")
            lookups[a] = table[self.lookups[a]] if a in self.lookups else table
        return ParquetDataset(self.files, domain, lookups, self.rows)

    def to_memory(self, max_mb: float = DEFAULT_MAX_MB) -> Dataset:
        """The records in an in-memory :class:`Dataset`; ModelTooLargeError naming the size in MB above
        ``max_mb`` (int64 codes)."""
        self._check_memory(max_mb)
        return Dataset(np.concatenate(list(self.batches(self.domain.attrs)), axis=1).T, self.domain)

    def __repr__(self) -> str:
        rows = "" if self._rows is None else f"{self._rows} records, "
        return f"ParquetDataset({rows}{len(self.files)} files, {self.domain})"
