"""The one coding of a real table and of tables compared with it: which columns are numeric
(:func:`kinds_of`, or guessed) and which hold times or numbers written with symbols
(:func:`time_columns`, :func:`number_columns`, :func:`category_columns`), the real table's
quantile bins and categories (:class:`Discretisation`), and the readings of raw values every
evaluation shares (the distinct values of a column, a category's label, a value as a number, a
table as the scores read it: :func:`as_compared`, :func:`read_in_formats`).

Not private: it reads the real table freely (its quantiles, categories and formats of times).
"""
from __future__ import annotations

import json
import os

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..table_io import MISSING as MISSING_MARKERS  # strings read as missing, as every step reads them
from ..table_io import canonical_value

MISSING = "(missing)"  # one cell for NaN and the missing markers
OTHER = "(other)"  # one cell for what the real table lacks: a new category, a non-number in a numeric column


def distinct(series) -> tuple[np.ndarray, list]:
    """``(index, values)``: the column's distinct values (strings stripped, missing ones dropped)
    and, per row, the index of its value in them, -1 for a missing one (NaN, ``""``, ``"?"``)."""
    import pandas as pd

    index, uniques = pd.factorize(series)  # index -1: NaN or None
    kept, where, position = [], {}, np.full(len(uniques) + 1, -1)  # position[-1] for index -1
    for k, value in enumerate(uniques):
        value = value.strip() if isinstance(value, str) else value
        if isinstance(value, str) and value in MISSING_MARKERS:
            continue
        if value not in where:
            where[value] = len(kept)
            kept.append(value)
        position[k] = where[value]
    return position[index], kept


def label(value) -> str:
    """A category's label: the value as every step reads it (:func:`~ektelo_pgm.table_io.canonical_value`),
    so a whole number has no decimal point whether it is written ``3``, ``3.0`` or ``3e0``."""
    return str(canonical_value(value))


def number(value) -> float:
    """``value`` as a float, NaN when it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def edge_label(x: float) -> str:
    """A bin edge without thousands separators (they would read as the interval's comma)."""
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.4g}"


def _category_order(text: str) -> tuple:
    """The sort key of a category: numbers first, in numeric order, then text alphabetically."""
    x = number(text)
    return (True, 0.0, text) if np.isnan(x) else (False, x, text)


def kinds_of(schema) -> dict:
    """``{column: "numeric" | "categorical"}`` from a schema: a fitted TableEncoder, a mapping
    ``{column: kind}`` or ``{"columns": {column: {"kind": kind, ...}}}``, or the path of a JSON
    file holding a saved TableEncoder or such a mapping."""
    from ..encoding import NumericColumn, TableEncoder

    if isinstance(schema, (str, os.PathLike)):
        with open(schema, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as err:
                raise InputError(f"{os.fspath(schema)}: not a JSON schema ({err})") from None
        if not isinstance(data, dict):
            raise InputError(f"{os.fspath(schema)}: not a JSON schema (a JSON {type(data).__name__}, not an object)")
        schema = TableEncoder.from_dict(data) if isinstance(data, dict) and "format" in data else data
    if isinstance(schema, TableEncoder):
        return {name: "numeric" if isinstance(column, NumericColumn) else "categorical"
                for name, column in schema._fitted().items()}
    if isinstance(schema, dict) and isinstance(schema.get("columns"), dict):
        schema = schema["columns"]
    if not isinstance(schema, dict):
        raise TypeError(f"schema must be a TableEncoder, a {{column: kind}} mapping or a JSON path, "
                        f"got {type(schema).__name__}")
    kinds = {}
    for name, kind in schema.items():
        kind = kind.get("kind") if isinstance(kind, dict) else kind
        if kind not in ("numeric", "categorical"):
            raise InputError(f"schema: column {name!r} has kind {kind!r}; use 'numeric' or 'categorical'")
        kinds[str(name)] = kind
    return kinds


def time_columns(real, kinds: dict | None = None) -> dict:
    """``{column: time format}`` for each column of the DataFrame ``real`` not declared in
    ``kinds`` whose values that are not missing are text read in one of
    :data:`~ektelo_pgm.times.TIME_FORMATS`, but for at most the schema's ``TEXT_SHARE`` of them
    (a column of times as the schema takes it, read here from the real table itself): the format
    reading most of them."""
    from ..schema.histogram import TEXT_SHARE
    from ..table_io import canonical
    from ..times import TIME_FORMATS, time_formats

    found = {}
    for column in real.columns:
        if str(column) in (kinds or {}):
            continue
        values = canonical(real[column], frozenset(MISSING_MARKERS))
        formats = time_formats(values[values != None])  # noqa: E711 (elementwise)
        counts = np.bincount(formats + 1, minlength=len(TIME_FORMATS) + 1)[1:]
        if counts.max() > 0 and counts.max() >= (1 - TEXT_SHARE) * formats.size:
            found[str(column)] = TIME_FORMATS[int(np.argmax(counts))]
    return found


def number_columns(real, kinds: dict | None = None) -> dict:
    """``{column: number format}`` for each column of the DataFrame ``real`` not declared in
    ``kinds`` that holds numbers written with symbols (:data:`~ektelo_pgm.number_formats.NUMBER_FORMATS`),
    all but at most the schema's ``TEXT_SHARE`` of its values read in the format that reads the
    most of them (:func:`~ektelo_pgm.number_formats.most_read`: a column of such numbers as the
    schema takes it, read here from the real table itself)."""
    from ..number_formats import NUMBER_FORMATS, as_numbers, most_read, number_formats
    from ..schema.histogram import TEXT_SHARE
    from ..table_io import canonical

    found = {}
    for column in real.columns:
        if str(column) in (kinds or {}):
            continue
        values = canonical(real[column], frozenset(MISSING_MARKERS))
        values = values[values != None]  # noqa: E711 (elementwise)
        fmt = most_read(np.bincount(number_formats(values) + 1, minlength=3 * len(NUMBER_FORMATS) + 1)[1:])
        if fmt is not None and (as_numbers(values, fmt) != None).sum() >= (1 - TEXT_SHARE) * values.size:  # noqa: E711
            found[str(column)] = fmt
    return found


def category_columns(synthetic, kinds: dict | None = None) -> dict:
    """``{column: "categorical"}`` for each column of the DataFrame ``synthetic`` not declared in
    ``kinds`` that holds a value that is neither missing nor a number: a column the synthesizer
    wrote as categories (ids, codes with a label for the rare ones), compared by value however
    the real table holds it."""
    found = {}
    for column in synthetic.columns:
        values = distinct(synthetic[column])[1]
        if str(column) not in (kinds or {}) and any(np.isnan(number(v)) and str(v).lower() != "nan" for v in values):
            found[str(column)] = "categorical"
    return found


class Discretisation:
    """One coding of a real table and of tables compared with it, fitted on the real table.

    A numeric column is cut at the real table's quantiles ``k / bins`` (k = 1..bins-1) into
    right-closed bins, so a point mass (capital-gain's 92% of zeros) is a bin of its own and
    values beyond the real range fall in the end bins; a categorical column keeps the real
    table's values.  Every column also has a cell for missing values (NaN, ``""``, ``"?"``) and
    one ("(other)") for anything the real table lacks: a new category, a non-number in a numeric
    column.  A column is numeric when ``kinds`` says so, or, undeclared, when every value of
    the real table is a number and it has more than ``bins`` distinct ones.
    """

    def __init__(self, real, bins: int = 16, kinds: dict | None = None):
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 2:
            raise InputError(f"bins must be an integer of at least 2, got {bins!r}")
        kinds = dict(kinds or {})
        unknown = sorted(set(kinds) - {str(c) for c in real.columns})
        if unknown:
            raise InputError(f"schema columns {unknown} are not in the real table {[str(c) for c in real.columns]}")
        self.columns = [str(c) for c in real.columns]
        self.time_formats: dict[str, str] = {}  # numeric columns of seconds, shown as times
        self.edges: dict[str, np.ndarray] = {}
        self.categories: dict[str, list[str]] = {}
        for name, column in zip(self.columns, real.columns):
            index, values = distinct(real[column])
            numbers = np.array([number(v) for v in values], dtype=float)
            parses = not np.isnan(numbers).any()
            kind = kinds.get(name) or ("numeric" if parses and numbers.size > bins else "categorical")
            if kind == "numeric":
                if not parses:
                    raise InputError(f"column {name!r} is declared numeric but holds "
                                     f"{values[int(np.flatnonzero(np.isnan(numbers))[0])]!r}")
                if not values:
                    raise InputError(f"column {name!r} is declared numeric but has no values")
                rows = numbers[index[index >= 0]]
                self.edges[name] = np.unique(np.quantile(rows, np.arange(1, bins) / bins))
            else:
                self.categories[name] = sorted({label(v) for v in values}, key=_category_order)

    def labels(self, column: str) -> list[str]:
        """The cells of ``column`` in code order: bins or categories, then missing and other.
        The bins of a column in :attr:`time_formats` (seconds since 1970) show times."""
        if column in self.edges:
            e = [self.value_label(column, x) for x in self.edges[column]]
            cells = [f"≤ {e[0]}"] + [f"({a}, {b}]" for a, b in zip(e, e[1:])]
            cells.append(f"> {e[-1]}")
        else:
            cells = list(self.categories[column])
        return cells + [MISSING, OTHER]

    def value_label(self, column: str, x: float) -> str:
        """A number of the numeric ``column`` as its bins show it: a time for a column in
        :attr:`time_formats`, else :func:`edge_label`."""
        from ..encoding import time_text

        fmt = self.time_formats.get(column)
        return edge_label(x) if fmt is None else time_text(x, fmt)

    @property
    def domain(self) -> Domain:
        return Domain(self.columns, [len(self.labels(c)) for c in self.columns])

    def codes(self, frame, what: str = "table") -> Dataset:
        """``frame`` (with the real table's columns, in any order) as a Dataset over
        :attr:`domain`; ``what`` names the table in errors."""
        names = {str(c): c for c in frame.columns}
        absent = [c for c in self.columns if c not in names]
        if absent:
            raise InputError(f"the {what} lacks the columns {absent} of the real table")
        records = np.empty((len(frame), len(self.columns)), dtype=np.int64)
        for j, name in enumerate(self.columns):
            index, values = distinct(frame[names[name]])
            size = len(self.labels(name))
            if name in self.edges:
                numbers = np.array([number(v) for v in values], dtype=float)
                code = np.searchsorted(self.edges[name], numbers, side="left")
                code = np.where(np.isnan(numbers), size - 1, code)  # a non-number: other
            else:
                known = {label: k for k, label in enumerate(self.categories[name])}
                code = np.array([known.get(label(v), size - 1) for v in values], dtype=np.int64)
            records[:, j] = np.append(code, size - 2)[index]  # index -1: missing
        return Dataset(records, self.domain)


def as_compared(frame, kinds: dict):
    """``frame`` as the scores read it: each value of a column ``kinds`` calls categorical as its
    :func:`label` (``"3.0"`` and ``3`` one category, as every step reads them), the missing
    markers (:data:`MISSING_MARKERS`, around spaces) as NaN."""
    frame = frame.copy()
    for name in list(frame.columns):
        column = frame[name]
        if kinds[str(name)] == "categorical":
            index, values = distinct(column)
            frame[name] = np.array([label(v) for v in values] + [np.nan], dtype=object)[index]
        elif column.dtype == object or str(column.dtype) in ("str", "string"):
            frame[name] = column.mask(column.astype(str).str.strip().isin(MISSING_MARKERS))
    return frame


def read_in_formats(frame, formats: dict):
    """``frame`` with each column of ``formats`` (name -> time or number format) as its numbers,
    times as seconds since 1970 (text that its format does not read: missing)."""
    from ..schema import column_values

    frame = frame.copy()
    for name, fmt in formats.items():
        numbers = column_values(frame[name], frozenset(MISSING_MARKERS), fmt)
        frame[name] = np.array([np.nan if x is None else float(x) for x in numbers])
    return frame
