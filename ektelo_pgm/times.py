"""Dates and times written as text: the formats a column of times is read in (TIME_FORMATS),
the first format that reads each value (:func:`time_formats`), values read as whole seconds
since 1970-01-01T00:00:00 (:func:`as_times`) and seconds written back (:func:`time_text`)."""
from __future__ import annotations

import numpy as np

from .table_io import pandas_module

#: Date and time formats (``strftime`` codes) a column's text is read in; a value is read in the
#: first that matches it whole.
TIME_FORMATS = ("%Y-%m-%d", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%fZ",
                "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d", "%Y/%m/%d %H:%M:%S", "%m/%d/%Y",
                "%m/%d/%Y %H:%M:%S", "%m/%d/%Y %H:%M", "%d.%m.%Y", "%Y-%m", "%b-%Y", "%b %Y", "%d %b %Y",
                "%b %d, %Y")


def time_formats(values: np.ndarray) -> np.ndarray:
    """For each :func:`~ektelo_pgm.table_io.canonical` value, the index in TIME_FORMATS of the first format that reads
    it whole (-1: none, or not text); each distinct text is parsed once per format."""
    pd = pandas_module()
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    found = np.full(len(values), -1, dtype=np.int64)
    if not text.any():
        return found
    codes, uniques = pd.factorize(pd.Series(values[text], dtype=object))
    first = np.full(len(uniques), -1, dtype=np.int64)
    for k, fmt in enumerate(TIME_FORMATS):
        open_ = first < 0
        if not open_.any():
            break
        parsed = pd.to_datetime(pd.Series(uniques[open_], dtype=object), format=fmt, errors="coerce")
        first[np.flatnonzero(open_)[parsed.notna().to_numpy()]] = k
    found[text] = first[codes]
    return found


def as_times(values: np.ndarray, fmt: str) -> np.ndarray:
    """:func:`~ektelo_pgm.table_io.canonical` values read in the time format ``fmt``: whole seconds since
    1970-01-01T00:00:00 (an int) for each text that it reads whole, None for anything else."""
    pd = pandas_module()
    out = np.empty(len(values), dtype=object)
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    codes, uniques = pd.factorize(pd.Series(values[text], dtype=object))
    parsed = pd.to_datetime(pd.Series(uniques, dtype=object), format=fmt, errors="coerce")
    seconds = ((parsed - pd.Timestamp(0)) // pd.Timedelta(seconds=1)).to_numpy(dtype=float, na_value=np.nan)
    out[text] = np.array([None if s != s else int(s) for s in seconds] + [None], dtype=object)[codes]
    return out


def time_text(seconds: float, fmt: str) -> str:
    """Whole ``seconds`` since 1970-01-01T00:00:00 written in the time format ``fmt``."""
    return pandas_module().Timestamp(int(seconds), unit="s").strftime(fmt)
