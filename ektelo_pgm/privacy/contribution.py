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

import numpy as np

from ..errors import InputError
from ..files import atomic_write
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


def bound_rows(frame, person: str, max_rows: int, rng=None, secure: bool = False):
    """The rows of the DataFrame ``frame`` with at most ``max_rows`` of each value of its column
    ``person`` (blanks: one person), chosen uniformly at random among that person's rows (a
    uniformly random order of all rows, from :class:`~ektelo_pgm.privacy.samplers.Source` with
    ``rng`` or, ``secure=True``, the operating system's secure generator: the first ``max_rows``
    of each person in it), in their order in ``frame``, without the column ``person``.  A table
    read part by part (a Dask DataFrame, :class:`~ektelo_pgm.table_io.Partitions`) is refused:
    grouping by person over parts is not built yet."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        raise InputError("--person: a table read part by part (--engine parts, a folder or glob, a Dask DataFrame) "
                         "cannot be grouped by person yet: read it whole (--engine memory)")
    if person not in frame.columns:
        raise InputError(f"--person {person!r}: no such column in the table")
    max_rows = Person(max_rows).max_rows
    order = Source(rng, secure=secure).permutation(len(frame))
    ids = frame[person].iloc[order]
    rank = ids.groupby(ids, dropna=False, sort=False).cumcount().to_numpy()
    kept = np.sort(order[rank < max_rows])
    return frame.iloc[kept].drop(columns=[person]).reset_index(drop=True)


def rows_per_person(frame, person: str) -> np.ndarray:
    """Exact number of persons (blanks: one person) of the DataFrame ``frame`` in each bucket of
    :data:`BUCKETS` by their number of rows: private, only :func:`rows_histogram` releases it."""
    rows = frame.groupby(frame[person], dropna=False, sort=False).size().to_numpy()
    bucket = np.searchsorted([least for least, _ in BUCKETS], rows, side="right") - 1
    return np.bincount(bucket, minlength=len(BUCKETS))


def rows_histogram(frame, person: str | None, budget: Budget, rng=None, path=None) -> str:
    """Release the number of persons with 1, 2, ..., 20, 21-50 and 51 or more rows in the DataFrame
    ``frame`` (its column ``person``, read before any row is left out): each count plus discrete
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
