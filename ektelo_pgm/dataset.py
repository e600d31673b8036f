"""Integer-coded records over a Domain."""
from __future__ import annotations

import csv
import json
import lzma
import os
from abc import ABCMeta, abstractmethod
from typing import Iterable

import numpy as np

from .domain import Domain
from .errors import DEFAULT_MAX_MB, InputError, ModelTooLargeError
from .files import atomic_write


def _mb(cells: int) -> float:
    return cells * 8 / 2**20


def _amount(x) -> str:
    """``x`` with thousands separators, or in scientific notation when astronomically large."""
    return f"{x:,.1f}" if isinstance(x, float) and x < 1e15 else f"{x:,}" if x < 1e15 else f"{float(x):.3g}"


#: Cells counted at most in one pass of :meth:`Dataset.marginals` (128 MB of int64 scratch).
COUNT_BATCH = 1 << 24
#: What to do instead when a full data vector is refused for its size.
FULL_VECTOR_ADVICE = ("instead, reconstruct over marginals (PGM, APPGM, LocalLeastSquares or "
                      "MultiplicativeWeights(factored=True)) or keep fewer attributes (Dataset.project)")


def check_dense_size(domain: Domain, attrs: Iterable[str], max_mb: float, what: str, advice: str = "") -> int:
    """Number of cells over ``attrs``; raise ModelTooLargeError naming the size in MB above ``max_mb``
    (followed by ``advice``, what to do instead, when given)."""
    attrs = domain.check(attrs)
    cells = domain.size(attrs)
    if _mb(cells) > max_mb:
        raise ModelTooLargeError(
            f"{what} over {list(attrs)} has {_amount(cells)} cells ({_amount(_mb(cells))} MB as float64), "
            f"above the limit of {max_mb:,.1f} MB" + (f"; {advice}" if advice else "")
        )
    return cells


def validate_records(values: np.ndarray, domain: Domain, source: str) -> np.ndarray:
    """Return ``values`` as int64 codes, raising ValueError naming the column and row of a bad code."""
    if values.ndim != 2:
        raise InputError(f"{source}: records must be a 2-D array (rows, attributes), got {values.ndim} dimensions")
    if values.shape[1] != len(domain):
        raise InputError(f"{source}: {values.shape[1]} columns but the domain has {len(domain)} attributes {list(domain.attrs)}")
    if values.shape[0] == 0:
        raise InputError(f"{source}: the table is empty (no records)")
    if values.dtype == object or values.dtype.kind in "fUSb":
        for j, attr in enumerate(domain.attrs):
            column = values[:, j]
            try:
                numeric = column.astype(np.float64)
            except (TypeError, ValueError):
                row = next(i for i, v in enumerate(column) if not _is_number(v))
                raise InputError(f"{source}: column {attr!r} row {row} holds {_show(column[row])}, not an integer code") from None
            bad = ~np.isfinite(numeric) | (numeric != np.round(numeric))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise InputError(f"{source}: column {attr!r} row {row} holds {_show(column[row])}, not an integer code")
        values = values.astype(np.float64).astype(np.int64)
    elif values.dtype.kind not in "iu":
        raise InputError(f"{source}: records of dtype {values.dtype} are not integer codes")
    values = np.ascontiguousarray(values, dtype=np.int64)
    for j, (attr, size) in enumerate(zip(domain.attrs, domain.shape)):
        bad = (values[:, j] < 0) | (values[:, j] >= size)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{source}: column {attr!r} row {row} holds {values[row, j]}, outside its domain 0..{size - 1}"
            )
    return values


def _unique_keys(path):
    """A ``json.load`` hook building a dict that refuses a repeated key (naming it)."""
    def build(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise InputError(f"{path}: the key {key!r} appears twice")
            seen[key] = value
        return seen
    return build


def read_domain(path) -> Domain:
    """The Domain of a ``{name: size}`` JSON file (a repeated name is refused, naming it)."""
    with open(path, encoding="utf-8-sig") as f:
        return Domain.fromdict(json.load(f, object_pairs_hook=_unique_keys(path)))


def _show(value) -> str:
    return repr(value.item() if isinstance(value, np.generic) else value)


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


class Dataset:
    """A Domain plus an (N, d) array of integer codes, columns in domain order."""

    def __init__(self, records, domain: Domain):
        if not isinstance(domain, Domain):
            raise TypeError(f"Dataset: domain must be a Domain, got {type(domain).__name__}")
        if len(domain) == 0:
            raise InputError("Dataset: the domain has no attributes")
        self.domain = domain
        self.records = validate_records(np.asarray(records), domain, "Dataset")

    @classmethod
    def load(cls, csv_path, domain_json_path) -> "Dataset":
        """Read an integer-coded CSV (xz-compressed when its name ends in ``.xz``) with a header row
        and a ``{name: size}`` JSON domain file.

        Columns are taken in the domain file's order; extra CSV columns are ignored.  A
        byte-order mark is skipped; a repeated key in the domain file, and a row with more
        or fewer fields than the header, are refused naming the key or the line.
        """
        domain = read_domain(domain_json_path)
        opener = lzma.open if os.fspath(csv_path).endswith(".xz") else open
        with opener(csv_path, "rt", newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if not header:
                raise InputError(f"{csv_path}: no header row")
            header = [h.strip() for h in header]
            missing = [a for a in domain.attrs if a not in header]
            if missing:
                raise InputError(f"{csv_path}: columns {missing} of the domain file are missing from the CSV header")
            rows = []
            for row in reader:
                if len(row) != len(header):
                    if not row:  # a blank line
                        continue
                    raise InputError(f"{csv_path}: line {reader.line_num} has {len(row)} fields "
                                     f"but the header has {len(header)}")
                rows.append(row)
        columns = [header.index(a) for a in domain.attrs]
        text = np.array(rows, dtype=str).reshape(len(rows), len(header))[:, columns]
        try:
            values = np.char.strip(text).astype(np.int64)
        except ValueError:  # re-checked one by one so that the error names the column and row
            values = np.char.strip(text).astype(object)
        return cls(validate_records(values, domain, str(csv_path)), domain)

    @classmethod
    def from_dataframe(cls, df, domain: Domain) -> "Dataset":
        """Dataset from a DataFrame of integer codes holding (at least) the domain's columns."""
        missing = [a for a in domain.attrs if a not in df.columns]
        if missing:
            raise InputError(f"DataFrame: columns {missing} of the domain are missing")
        return cls(validate_records(df[list(domain.attrs)].to_numpy(), domain, "DataFrame"), domain)

    def to_dataframe(self):
        """The records as a pandas DataFrame of integer codes."""
        import pandas as pd

        return pd.DataFrame(self.records, columns=list(self.domain.attrs))

    def save(self, csv_path) -> None:
        """Write the records as an integer-coded CSV with a header row, atomically (a
        temporary file renamed: an interrupted save leaves the old file or none)."""
        header = ",".join(self.domain.attrs)
        with atomic_write(csv_path) as f:
            np.savetxt(f, self.records, fmt="%d", delimiter=",", header=header, comments="")

    def project(self, attrs) -> "Dataset":
        """The records restricted to ``attrs`` (in the order given)."""
        attrs = self.domain.check(attrs)
        return Dataset(self.records[:, list(self.domain.axes(attrs))], self.domain.project(attrs))

    def marginal(self, attrs, max_mb: float = DEFAULT_MAX_MB) -> np.ndarray:
        """Counts over ``attrs``: float64 array shaped by their sizes in the order asked."""
        attrs = self.domain.check(attrs)
        cells = check_dense_size(self.domain, attrs, max_mb, "marginal")
        shape = self.domain.project(attrs).shape
        if not attrs:
            return np.array(float(len(self)))
        codes = self.records[:, list(self.domain.axes(attrs))]
        flat = np.ravel_multi_index(codes.T, shape)
        return np.bincount(flat, minlength=cells).astype(np.float64).reshape(shape)

    def marginals(self, cliques, max_mb: float = DEFAULT_MAX_MB) -> list[np.ndarray]:
        """``[marginal(c) for c in cliques]`` (counts).  Mechanisms that need many marginals ask for
        them here at once, so that a partitioned dataset (:class:`~ektelo_pgm.dask_dataset.DaskDataset`)
        counts them all in one pass over its records; here the counting kernel makes one pass per
        batch of at most ``COUNT_BATCH`` cells, on every idle core (AIM's 10,701 candidates on a
        40-attribute table of 50,000 rows: 2.7 s, against 8.3 s one at a time)."""
        from .kernels.counting import count_marginals

        cliques = [self.domain.check(c) for c in cliques]
        cells = [check_dense_size(self.domain, c, max_mb, "marginal") for c in cliques]
        columns = np.ascontiguousarray(self.records.T)
        out, start = [], 0
        while start < len(cliques):
            stop, batch = start + 1, cells[start]
            while stop < len(cliques) and batch + cells[stop] <= COUNT_BATCH:
                batch, stop = batch + cells[stop], stop + 1
            plan = [(list(self.domain.axes(c)), self.domain.project(c).shape) for c in cliques[start:stop]]
            tables = [np.zeros(n, dtype=np.int64) for n in cells[start:stop]]
            count_marginals(columns, plan, tables)
            out += [table.astype(np.float64).reshape(shape) for table, (_, shape) in zip(tables, plan)]
            start = stop
        return out

    def sum_rows(self, func) -> np.ndarray:
        """``func(records)`` for a per-record quantity summed over the rows: ``func`` maps an (n, d)
        block of int64 codes to the sum over its rows, so that a partitioned dataset can add up
        the blocks' sums (for a computation that marginal counts cannot express)."""
        return np.asarray(func(self.records))

    def recode(self, codes: dict, domain: Domain) -> "Dataset":
        """The records with every value ``v`` of attribute ``a`` replaced by ``codes[a][v]``, over
        ``domain`` (the same attributes, new sizes); e.g. rare values merged into one code."""
        check_recoded(self.domain, domain)
        return Dataset(np.column_stack([np.asarray(codes[a])[self.records[:, j]] for j, a in enumerate(self.domain.attrs)]),
                       domain)

    def datavector(self, max_mb: float = DEFAULT_MAX_MB) -> np.ndarray:
        """Counts over the full domain, raveled in C order (small domains only)."""
        return self.marginal(self.domain.attrs, max_mb=max_mb).ravel()

    def __len__(self) -> int:
        return self.records.shape[0]

    def __repr__(self) -> str:
        return f"Dataset({len(self)} records, {self.domain})"


def check_recoded(old: Domain, new: Domain) -> None:
    """Refuse a recoding (:meth:`Dataset.recode`) whose new domain has other attributes."""
    if new.attrs != old.attrs:
        raise InputError(f"recode: the new domain's attributes {list(new.attrs)} differ from {list(old.attrs)}")


class CountedDataset(Dataset, metaclass=ABCMeta):
    """A Dataset whose records are read only in passes that count them (partitioned, or on disk):
    subclasses give :meth:`_count`, one pass counting a plan of marginals.  Marginals are kept
    once counted (int64), and a marginal over a subset of a kept one's attributes is summed
    from it, so a mechanism pays one pass per batch of new marginals it asks for
    (:meth:`marginals`)."""

    def __init__(self, domain: Domain):
        if not isinstance(domain, Domain):
            raise TypeError(f"{type(self).__name__}: domain must be a Domain, got {type(domain).__name__}")
        if len(domain) == 0:
            raise InputError(f"{type(self).__name__}: the domain has no attributes")
        self.domain = domain
        self._kept: dict[tuple[str, ...], np.ndarray] = {}  # attrs in domain order -> int64 counts
        self._rows: int | None = None

    @property
    def records(self):
        raise TypeError(f"{type(self).__name__}: the records are not held in memory; count them with "
                        "marginal(attrs) / marginals(cliques) / sum_rows(func), or to_memory() a small table")

    @abstractmethod
    def _count(self, attrs: tuple[str, ...], plan) -> tuple[int, list[np.ndarray]]:
        """One pass over the records' columns ``attrs``: their number and, for each ``(axes,
        shape)`` of ``plan`` (``axes`` index ``attrs``), the int64 counts over those columns,
        flat in C order (:func:`~ektelo_pgm.kernels.counting.count_marginals`)."""

    def _key(self, attrs) -> tuple[str, ...]:
        return tuple(a for a in self.domain.attrs if a in attrs)

    def _derived(self, key):
        """Counts over ``key`` from a kept marginal over a superset of it, or None."""
        if not key and self._rows is not None:
            return np.int64(self._rows)
        for have, table in self._kept.items():
            if set(key) <= set(have):
                return table.sum(axis=tuple(i for i, a in enumerate(have) if a not in key), dtype=np.int64)
        return None

    def _pass(self, keys) -> None:
        """One pass counting the marginals over ``keys`` (attribute tuples in domain order) and the
        records, kept."""
        needed = tuple(a for a in self.domain.attrs if any(a in k for k in keys)) or self.domain.attrs[:1]
        sub = self.domain.project(needed)
        plan = [(sub.axes(k), sub.project(k).shape) for k in keys]
        rows, tables = self._count(needed, plan)
        if rows == 0:
            raise InputError(f"{type(self).__name__}: the table is empty (no records)")
        self._rows = int(rows)
        for key, table, (_, shape) in zip(keys, tables, plan):
            self._kept[key] = np.asarray(table, dtype=np.int64).reshape(shape)

    def marginals(self, cliques, max_mb: float = DEFAULT_MAX_MB) -> list[np.ndarray]:
        """Counts (float64, shaped by the attributes' sizes in the order asked) over each of
        ``cliques``, exactly as the in-memory Dataset's; those not derivable from kept marginals
        are counted together in one pass over the records."""
        cliques = [self.domain.check(c) for c in cliques]
        for c in cliques:
            check_dense_size(self.domain, c, max_mb, "marginal")
        new = [k for k in dict.fromkeys(self._key(c) for c in cliques) if self._derived(k) is None]
        widest = [k for k in new if k and not any(set(k) < set(other) for other in new)]
        if new:
            self._pass(widest)
        out = []
        for c in cliques:
            key = self._key(c)
            table = self._derived(key).astype(np.float64)
            out.append(np.ascontiguousarray(np.transpose(table, [key.index(a) for a in c])) if c else np.asarray(table))
        return out

    def marginal(self, attrs, max_mb: float = DEFAULT_MAX_MB) -> np.ndarray:
        """Counts over ``attrs``: float64 array shaped by their sizes in the order asked."""
        return self.marginals([attrs], max_mb)[0]

    def _check_memory(self, max_mb: float) -> None:
        """ModelTooLargeError naming the size in MB when the records as int64 exceed ``max_mb``."""
        size = len(self) * len(self.domain) * 8 / 2**20
        if size > max_mb:
            raise ModelTooLargeError(f"{type(self).__name__}: {len(self):,} records of {len(self.domain)} attributes "
                                     f"take {size:,.1f} MB as int64, above the limit of {max_mb:,.1f} MB")

    def __len__(self) -> int:
        if self._rows is None:
            self._pass([])
        return self._rows
