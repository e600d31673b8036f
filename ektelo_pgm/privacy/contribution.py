"""Contribution bounding: at most ``K`` rows of each person, so that neighbouring tables differ by
one person's rows, at most ``K`` of them (the relation :class:`~ektelo_pgm.privacy.budget.Person`).

Which rows of a person are kept depends only on that person's rows and on fresh randomness,
never on other people's: removing or adding one person changes the kept table by that person's
kept rows alone, so every guarantee of what reads the kept table holds per person under
``Person(K)``.  The random choice only keeps the kept rows an unbiased sample of each person's.

:func:`rows_histogram` releases how many persons have how many rows, so that the steward can
choose ``K`` from a private release rather than from the table.
"""
from __future__ import annotations

import json
import os
from zlib import crc32

import numpy as np

from ..errors import InputError
from ..files import atomic_write, private_file
from ..table_io import Partitions, canonical
from .budget import Budget, Person
from .noise import gaussian, gaussian_std
from .samplers import Source

#: the buckets of :func:`rows_histogram`: ``(least, most)`` rows of a person (None: no most)
BUCKETS = (*((n, n) for n in range(1, 21)), (21, 50), (51, None))
#: the share of what remains of the budget that :func:`rows_histogram` spends
HISTOGRAM_SHARE = 0.1


def person_relation(person, max_rows) -> Person | None:
    """``Person(max_rows)`` when the column ``person`` is named, None when neither is given; refused
    when only one is, or ``max_rows`` is not a positive integer."""
    if (person is None) != (max_rows is None):
        raise InputError("--person and --max-rows-per-person go together: give both or neither")
    return None if person is None else Person(max_rows)


def bound_rows(frame, person: str, max_rows: int, rng=None, secure: bool = False, folder=None):
    """The rows of the DataFrame ``frame`` with at most ``max_rows`` of each value of its column
    ``person`` (blanks: one person), chosen uniformly at random among that person's rows (a
    uniformly random order of all rows, from :class:`~ektelo_pgm.privacy.samplers.Source` with
    ``rng`` or, ``secure=True``, the operating system's secure generator: the first ``max_rows``
    of each person in it), in their order in ``frame``, without the column ``person``.  A table
    read part by part (:class:`~ektelo_pgm.table_io.Partitions`) is bounded by
    :func:`bound_parts` in the private ``folder``; refused without one, and for a Dask DataFrame."""
    import pandas as pd

    if isinstance(frame, Partitions) and folder is not None:
        return bound_parts(frame, person, max_rows, rng, secure, folder)
    if not isinstance(frame, pd.DataFrame):
        raise InputError("--person: a table read part by part (--engine parts, a folder or glob, a Dask DataFrame) "
                         "cannot be grouped by person here: read it whole (--engine memory)")
    if person not in frame.columns:
        raise InputError(f"--person {person!r}: no such column in the table")
    max_rows = Person(max_rows).max_rows
    order = Source(rng, secure=secure).permutation(len(frame))
    ids = person_keys(frame[person]).iloc[order]
    rank = ids.groupby(ids, dropna=False, sort=False).cumcount().to_numpy()
    kept = np.sort(order[rank < max_rows])
    return frame.iloc[kept].drop(columns=[person]).reset_index(drop=True)


class PersonParts(Partitions):
    """A table read part by part once bounded by person (:func:`bound_parts`): its bounded groups,
    pickled DataFrames in a private folder, read one at a time in parts of at most ``rows`` rows
    (selecting columns as :class:`~ektelo_pgm.table_io.Partitions` does)."""

    def __init__(self, files, columns, rows: int, cap: int):
        self.files, self.columns, self.rows, self.cap = list(files), list(columns), int(rows), cap
        self.bytes, self.parquet, self._names = sum(os.path.getsize(p) for p in self.files), False, self.columns

    def __iter__(self):
        import pandas as pd

        for path in self.files:
            group = pd.read_pickle(path)
            for start in range(0, len(group), self.rows):
                yield group.iloc[start:start + self.rows][self.columns].reset_index(drop=True)


def bound_parts(parts, person: str, max_rows: int, rng, secure: bool, folder) -> PersonParts:
    """:func:`bound_rows` over a table read part by part, its memory bounded as the table's: the
    rows are split by a hash of the person into groups of about a quarter of the memory cap each
    (every row of a person in one group), written to ``folder`` (private: the caller's
    :func:`~ektelo_pgm.files.private_folder`, files 0600), then each group is read whole and
    bounded alone.  One person's rows stay in one group, so each person's kept rows are still a
    uniform choice of theirs (one person's rows past a group's memory are not planned for)."""
    import pandas as pd

    if person not in parts.columns:
        raise InputError(f"--person {person!r}: no such column in the table")
    groups = max(1, int(np.ceil(8 * parts.bytes / parts.cap)))  # text on disk takes about twice in memory
    pieces = [[] for _ in range(groups)]
    for k, part in enumerate(parts):
        group = _groups_of(part[person], groups)
        for g in np.unique(group):
            pieces[g].append(_pickled(part[group == g], os.path.join(folder, f"person-{g:05d}-{k:05d}.pkl")))
    files, columns = [], [c for c in parts.columns if c != person]
    for g, paths in enumerate(pieces):
        if paths:
            rows = pd.concat([pd.read_pickle(p) for p in paths], ignore_index=True)
            for p in paths:
                os.remove(p)
            files.append(_pickled(bound_rows(rows, person, max_rows, rng, secure),
                                  os.path.join(folder, f"person-{g:05d}.pkl")))
    if not files:
        raise InputError("the table has no rows")
    return PersonParts(files, columns, parts.rows, parts.cap)


def person_keys(ids):
    """The person of each row as :func:`~ektelo_pgm.table_io.canonical` reads any raw value (``7``,
    ``7.0``, ``"7"`` and an Int64 7 are one person, whichever part or format holds them; blanks:
    None, one person), so that a table read whole and part by part group alike."""
    import pandas as pd

    return pd.Series(canonical(ids, frozenset()), index=ids.index, dtype=object)


def _groups_of(ids, groups: int) -> np.ndarray:
    """The group of each row: a hash of its person's canonical value (:func:`person_keys`) that is
    the same in every process, so that a seeded run keeps the same rows; no person is split."""
    return np.fromiter((crc32(repr(key).encode()) % groups for key in person_keys(ids)), dtype=np.int64,
                       count=len(ids))


def _pickled(frame, path: str) -> str:
    """``path``, a new file only this user can read (0600) holding the DataFrame ``frame``."""
    with private_file(path) as f:
        frame.to_pickle(f)
    return path


def rows_per_person(table, person: str) -> np.ndarray:
    """Exact number of persons (:func:`person_keys`) of ``table``, a DataFrame or a table read part
    by part (its persons' counts merged over the parts: memory in proportion to the persons), in
    each bucket of :data:`BUCKETS` by their number of rows: private, only :func:`rows_histogram`
    releases it."""
    import pandas as pd

    parts = table[[person]] if isinstance(table, Partitions) else [table]
    rows = pd.concat([person_keys(part[person]).value_counts(dropna=False) for part in parts])
    rows = rows.groupby(level=0, dropna=False, sort=False).sum().to_numpy()
    bucket = np.searchsorted([least for least, _ in BUCKETS], rows, side="right") - 1
    return np.bincount(bucket, minlength=len(BUCKETS))


def rows_histogram(frame, person: str | None, budget: Budget, rng=None, path=None) -> str:
    """Release the number of persons with 1, 2, ..., 20, 21-50 and 51 or more rows in ``frame``
    (:func:`rows_per_person`; its column ``person``, read before any row is left out): each count plus discrete
    Gaussian noise, spending :data:`HISTOGRAM_SHARE` of what remains of the zCDP ``budget`` in one
    charge.  Its L2 sensitivity is 1 whatever the budget's relation: one person, whatever their
    number of rows, is counted once, in one bucket.  Noisy counts below zero become zero
    (post-processing).  Written to ``path`` as JSON (buckets, noisy persons, the noise's std in
    persons) when given; returns the line that the command line prints."""
    if person is None:
        raise InputError("--rows-per-person-histogram needs --person and --max-rows-per-person")
    if person not in frame.columns:
        raise InputError(f"--person {person!r}: no such column in the table")
    rho = budget.fraction(HISTOGRAM_SHARE)
    noisy = gaussian(rows_per_person(frame, person), 1.0, rho, rng, budget=budget, label="rows per person histogram")
    labels = [f"{least}" if least == most else f"{least}+" if most is None else f"{least}-{most}"
              for least, most in BUCKETS]
    persons, std = [max(int(n), 0) for n in noisy], gaussian_std(1.0, rho)
    if path is not None:
        with atomic_write(path) as f:
            json.dump({"person": person, "rows": labels, "persons": persons, "noise_std": std}, f, indent=1)
    return f"persons by their rows (noisy, std {std:.3g} persons): " + ", ".join(
        f"{rows}: {n}" for rows, n in zip(labels, persons))
