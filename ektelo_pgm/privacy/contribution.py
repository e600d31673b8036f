"""Contribution bounding: at most ``K`` rows of each person, so that neighbouring tables differ by
one person's rows, at most ``K`` of them (the relation :class:`~ektelo_pgm.privacy.budget.Person`).

Which rows of a person are kept depends only on that person's rows and on fresh randomness,
never on other people's: removing or adding one person changes the kept table by that person's
kept rows alone, so every guarantee of what reads the kept table holds per person under
``Person(K)``.  The random choice only keeps the kept rows an unbiased sample of each person's.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .budget import Person
from .samplers import Source


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
