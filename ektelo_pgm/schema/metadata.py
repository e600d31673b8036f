"""SDV's metadata read as what a steward declares (:class:`Metadata`): the single-table JSON
(``"METADATA_SPEC_VERSION": "SINGLE_TABLE_V1"``, ``"columns": {name: {"sdtype": ...}}``) or the
multi-table form of SDV 1.x (``{"tables": {name: {...}}}``) holding one table.

SDV's metadata gives kinds but no bounds or categories; a column may add them with the keys of
``EXTENSION_KEYS``.  Each sdtype maps to what the schema knows for free:

* ``numerical`` with ``"edges"``, or ``"bounds": [lo, hi]`` (or ``"min"``/``"max"``) and
  ``"bins"``: a declared numeric column (``computer_representation`` ``Int*``: whole numbers,
  ``Float``: fractional), its bounds cut into that many bins chosen from them alone
  (:func:`spread_edges`: equal, with zeros apart and decades where they span many), costing
  nothing; with bounds and no ``"bins"``: its kind fixed numeric and its range the bounds, its
  bins placed privately inside them as inference places them (point masses apart, quantiles
  of the noisy counts: the schema's charges on the column), clipped to the bounds
  (``ranges``; where nothing can be placed, the bins of the bounds alone, and where the noisy
  counts show numbers beyond the placed bins, the bounds' bins there); without either: its
  kind is fixed numeric and its range inferred privately (``--numeric``);
* ``categorical`` with ``"values"`` (or ``"categories"``): a declared categorical column; with
  ``"public": true`` and no values: its categories read from the table as public
  (``--public-categories``); else its kind is fixed categorical (``--categorical``);
* ``boolean``: a declared categorical column of two values, ``"values"`` or else ``False`` and
  ``True`` as pandas, SDV and Parquet write them;
* ``datetime``: a column of times in its ``datetime_format``; with ``"edges"`` (text in that
  format), those bins; with bounds (text in that format)
  and ``"bins"``, its bins whole periods of the finest the format writes (:func:`time_edges`);
  with bounds alone in one of :data:`~ektelo_pgm.times.TIME_FORMATS` (the ones inference
  reads; ``%-m``, ``%-d``, ``%-H`` for months, days, hours without leading zeros), placed
  privately in them as numbers are, with the unit its times hold (``ranges``);
  in another format, as with ``"bins"``; without bounds, its kind fixed numeric and its range
  inferred privately (the format then one of TIME_FORMATS);
* ``id``: regenerated (written afresh 1, 2, ..., n, as ``--regenerate``);
* any other sdtype (``email``, ``address``, ``unknown``, ...): left out, with a note.

Every declared column takes ``"missing": false`` when it is never blank (default true: a missing
code, whose blanks synthetic records hold only where the mechanism's measurements show them)
and ``"bins"``; a categorical one ``"other"``.  Reading metadata spends nothing and reads no
data; an error is one line naming the file and the column.  Bins from bounds alone put a heaped
column (movies' lengths, 1 to 5,220 minutes, most 80-120) in one or two bins: 1-way TVD 0.34
on its deciles, where placed privately 0.01."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace

import numpy as np

from ..columns import NumericColumn, check_bounds, json_value
from ..errors import InputError
from ..times import TIME_FORMATS, as_times, padded, time_text
from .declared import ColumnSpec, Declared, read_json
from .ends import NOTICE_Z, TAIL_SHARE
from .grid import LEVELS, LOWER, UPPER
from .kinds import BINS

#: The top-level keys of SDV's single-table metadata (those besides ``columns`` are not used).
TABLE_KEYS = ("METADATA_SPEC_VERSION", "columns", "primary_key", "alternate_keys", "sequence_key", "sequence_index",
              "column_relationships")
#: SDV's keys of a column (``pii`` and ``regex_format`` are not used).
SDV_KEYS = ("sdtype", "computer_representation", "datetime_format", "pii", "regex_format")
#: This project's keys of a column, which SDV's metadata lacks: what a steward knows in public.
EXTENSION_KEYS = ("values", "categories", "other", "public", "bounds", "min", "max", "bins", "edges", "missing")
#: SDV's computer representations of a numerical column.
REPRESENTATIONS = ("Float", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64")
#: The sdtypes that are synthesized; any other is left out.
SDTYPES = ("numerical", "categorical", "boolean", "datetime", "id")
#: The two values of a boolean column without ``"values"``, as pandas, SDV and Parquet write them.
BOOLEAN = ("False", "True")
#: Declared bounds ``0 <= lo < hi`` with ``hi`` above this many times ``max(lo, 0.1)`` are cut
#: by decades too (:func:`spread_edges`): equal bins would put most counts or amounts in the first.
SPREAD = 100
#: The steps of a decade that its bins start at, the finest that the column's bins allow.
DECADE_STEPS = ((1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 1.5, 2, 3, 5, 7), (1, 2, 5), (1, 3), (1,))


@dataclass(frozen=True)
class Metadata:
    """What a metadata file declares (module docstring): ``declared`` (the columns it fixes, or
    None), ``kinds`` (``{column: "categorical" | "numeric"}`` of the columns inferred with a
    fixed kind), ``ranges`` (``{column: Ranged}`` of the numbers and times with declared bounds
    and no bins, among ``kinds``: their bins placed privately and clipped to the bounds,
    :func:`within`), ``public`` (columns whose categories are read as public), ``regenerate``
    (id columns) and ``left_out`` (``{column: why}``); ``source`` names the file in errors."""

    source: str
    declared: Declared | None = None
    kinds: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    public: tuple = ()
    regenerate: tuple = ()
    left_out: dict = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        """Every column the metadata names."""
        return [*(self.declared.columns if self.declared else ()), *self.kinds, *self.public, *self.regenerate,
                *self.left_out]

    @classmethod
    def read(cls, metadata) -> "Metadata":
        """The metadata of ``metadata``: a Metadata, the path of a JSON file or its dict."""
        if isinstance(metadata, Metadata):
            return metadata
        source = os.fspath(metadata) if isinstance(metadata, (str, os.PathLike)) else "metadata"
        if isinstance(metadata, (str, os.PathLike)):
            metadata = read_json(metadata, "JSON metadata")
        if not isinstance(metadata, dict):
            raise InputError(f"{source}: metadata is a JSON object, got {type(metadata).__name__}")
        table = _one_table(source, metadata)
        unknown = sorted(str(k) for k in table if k not in TABLE_KEYS)
        if unknown:
            raise InputError(f"{source}: unknown keys {unknown}; SDV's single-table metadata takes {list(TABLE_KEYS)}")
        specs = table.get("columns")
        if not isinstance(specs, dict) or not specs:
            raise InputError(f'{source}: metadata needs "columns": {{name: {{"sdtype": ...}}}}')
        key = table.get("primary_key")
        if key is not None and key not in specs:
            raise InputError(f"{source}: the primary key {key!r} is not one of its columns")
        declared, kinds, ranges, public, regenerate, left_out = {}, {}, {}, [], [], {}
        for name, spec in specs.items():
            name = str(name)
            try:
                sdtype = _sdtype(name, spec)
                if sdtype not in SDTYPES:
                    left_out[name] = (f"column {name!r}: sdtype {sdtype!r} in {source} (personal or free-form "
                                      "data) is not synthesized")
                    continue
                unknown = sorted(str(k) for k in spec if k not in SDV_KEYS + EXTENSION_KEYS)
                if unknown:
                    raise InputError(f"column {name!r}: unknown keys {unknown}; a column takes "
                                     f"{list(SDV_KEYS + EXTENSION_KEYS)}")
                if sdtype == "id":
                    _only(name, spec, sdtype, ())
                    regenerate.append(name)
                    continue
                column = _column(name, sdtype, spec)
            except InputError as err:
                raise InputError(f"{source}: {err}") from None
            if isinstance(column, Ranged):
                kinds[name], ranges[name] = "numeric", column
            elif column in ("numeric", "categorical"):
                kinds[name] = column
            elif column == "public":
                public.append(name)
            else:
                declared[name] = column
        return cls(source, Declared(declared) if declared else None, kinds, ranges, tuple(public), tuple(regenerate),
                   left_out)

    def check(self, columns) -> None:
        """Refuse, naming the file, a column of the metadata that is not among ``columns``."""
        absent = [c for c in self.columns if c not in set(columns)]
        if absent:
            raise InputError(f"{self.source}: column {absent[0]!r} is not in the table")

    def joined(self, kinds: dict, public=(), regenerate=()) -> tuple[dict, tuple, tuple]:
        """The ``kinds``, ``public`` and ``regenerate`` columns a user gives joined with this
        metadata's; a column that both name is refused."""
        twice = sorted(c for c in (*kinds, *public, *regenerate) if c in set(self.columns))
        if twice:
            raise InputError(f"{self.source}: columns {twice} are in the metadata and also given a kind, regenerated "
                             "or public")
        return {**kinds, **self.kinds}, (*public, *self.public), (*regenerate, *self.regenerate)

    def without(self, columns) -> "Metadata":
        """This metadata less ``columns`` (dropped by the user)."""
        gone = set(columns)
        kept = None if self.declared is None else \
            {c: column for c, column in self.declared.columns.items() if c not in gone}
        return replace(self, declared=Declared(kept, self.declared.options) if kept else None,
                       kinds={c: k for c, k in self.kinds.items() if c not in gone},
                       ranges={c: r for c, r in self.ranges.items() if c not in gone},
                       public=tuple(c for c in self.public if c not in gone),
                       regenerate=tuple(c for c in self.regenerate if c not in gone),
                       left_out={c: why for c, why in self.left_out.items() if c not in gone})


def _one_table(source: str, metadata: dict) -> dict:
    """The single table of SDV's metadata (the multi-table form holding one table)."""
    if "tables" not in metadata:
        return metadata
    tables = metadata["tables"]
    if not isinstance(tables, dict) or len(tables) != 1:
        count = len(tables) if isinstance(tables, dict) else 0
        raise InputError(f'{source}: "tables" holds {count} tables; give the metadata of one table')
    relationships = metadata.get("relationships") or []
    if relationships:
        raise InputError(f"{source}: relationships between tables are not synthesized; give one table")
    table = next(iter(tables.values()))
    if not isinstance(table, dict):
        raise InputError(f"{source}: table {next(iter(tables))!r} is not a JSON object")
    return table


def _sdtype(name: str, spec) -> str:
    if not isinstance(spec, dict) or not isinstance(spec.get("sdtype"), str):
        raise InputError(f'column {name!r}: needs "sdtype" (numerical, categorical, boolean, datetime, id, ...)')
    return spec["sdtype"]


def _pick(name: str, spec: dict, first: str, second: str):
    """The value of key ``first`` or its alias ``second`` (not both)."""
    if first in spec and second in spec:
        raise InputError(f'column {name!r}: give "{first}" or "{second}", not both')
    return spec.get(first, spec.get(second))


def _bounds(name: str, spec: dict):
    """``"bounds"``, or ``"min"`` with ``"max"``, or None."""
    ends = [k for k in ("min", "max") if k in spec]
    if ends and "bounds" in spec:
        raise InputError(f'column {name!r}: give "bounds" or "min" and "max", not both')
    if ends and len(ends) < 2:
        raise InputError(f'column {name!r}: "min" needs "max" and "max" needs "min"')
    return [spec["min"], spec["max"]] if ends else spec.get("bounds")


def _only(name: str, spec: dict, sdtype: str, keys: tuple) -> None:
    """Refuse the keys of ``spec`` that its sdtype does not take."""
    wrong = sorted(k for k in spec if k in EXTENSION_KEYS and k not in keys)
    if wrong:
        raise InputError(f"column {name!r}: a {sdtype} column takes {list(keys)} of this project's keys, "
                         f"not {wrong}")


def _column(name: str, sdtype: str, spec: dict):
    """The declared column of ``spec`` (a CategoricalColumn or NumericColumn), or what the schema
    infers: ``"numeric"``, ``"categorical"`` (the kind fixed) or ``"public"``."""
    missing = spec.get("missing", True)
    if sdtype in ("categorical", "boolean"):
        values = _pick(name, spec, "values", "categories")
        if sdtype == "boolean":
            _only(name, spec, sdtype, ("values", "categories", "public", "missing"))
            values = list(BOOLEAN) if values is None else values
            if not isinstance(values, list) or len(values) != 2:
                raise InputError(f'column {name!r}: a boolean column\'s "values" are its two values, got {values!r}')
        if values is None:
            _only(name, spec, sdtype, ("public",))
            if spec.get("public", False) not in (True, False):
                raise InputError(f'column {name!r}: "public" must be true or false, got {spec["public"]!r}')
            return "public" if spec.get("public") else "categorical"
        _only(name, spec, sdtype, ("values", "categories", "other", "public", "missing"))
        return ColumnSpec(name, "categorical", categories=values, other=spec.get("other"),
                          public=spec.get("public", False), missing=missing).column()
    if sdtype == "numerical":
        _only(name, spec, sdtype, ("bounds", "min", "max", "bins", "edges", "missing", "public"))
        representation = spec.get("computer_representation")
        if representation is not None and representation not in REPRESENTATIONS:
            raise InputError(f"column {name!r}: computer_representation {representation!r} is not one of "
                             f"{list(REPRESENTATIONS)}")
        bounds, edges = _bounds(name, spec), spec.get("edges")
        if bounds is None and edges is None:
            given = sorted(k for k in spec if k in EXTENSION_KEYS)
            if given:
                raise InputError(f'column {name!r}: {given} need "bounds" or "edges" (without them its range is '
                                 "inferred privately)")
            return "numeric"
        whole = None if representation is None else representation != "Float"
        if bounds is not None and whole is not None:
            bounds = _typed(name, bounds, whole)
        column = ColumnSpec(name, "numeric", bounds=bounds, bins=spec.get("bins", BINS), edges=edges, integer=whole,
                            missing=missing).column()
        if edges is not None or "bins" in spec:
            return column if edges is not None else _spread(column, bounds, spec["bins"])
        return Ranged(_spread(column, bounds, BINS), whole)
    _only(name, spec, sdtype, ("bounds", "min", "max", "bins", "edges", "missing"))
    fmt, bounds, edges = spec.get("datetime_format"), _bounds(name, spec), spec.get("edges")
    if fmt is not None and not isinstance(fmt, str):
        raise InputError(f"column {name!r}: datetime_format must be text, got {fmt!r}")
    if not isinstance(missing, bool):
        raise InputError(f'column {name!r}: "missing" must be true or false, got {missing!r}')
    if edges is not None:
        if bounds is not None or "bins" in spec:
            raise InputError(f'column {name!r}: a datetime column takes "edges" or "bounds" (and "bins"), not both')
        return _time_bins(name, fmt, edges, missing)
    column = _times(name, fmt, bounds, spec.get("bins", BINS), missing)
    placed = isinstance(column, NumericColumn) and "bins" not in spec \
        and padded(column.time_format or "") in TIME_FORMATS
    return Ranged(column, True) if placed else column


@dataclass(frozen=True)
class Ranged:
    """A numerical or datetime column of declared bounds (:meth:`Metadata.read`): ``column``, its
    bins from the bounds alone; ``integer``, whether its representation is declared whole (None:
    not declared; times: True)."""

    column: NumericColumn
    integer: bool | None


def within(placed: NumericColumn | None, ranged: Ranged, shown: tuple = (False, False)) -> NumericColumn:
    """The bins ``placed`` privately, clipped to the declared range of ``ranged``: its edges inside
    the range, the range's ends as its ends (a point mass at the upper bound kept in a bin of its
    own); whole numbers where placed so or the representation is declared whole (a ``Float``
    column of nearly only whole numbers keeps its point masses whole: loans' late fees, 0 in
    98% of loans, were drawn uniformly in [0, 1) as fractional, 1-way TVD 0.995), the unit of
    whole numbers and times placed (times on the hour stay on the hour: weather's, declared with
    bounds, were all drawn at any second) and its calendar (monthly dates on the first), its
    heaps, the form of its whole numbers (``61.0``: :attr:`~ektelo_pgm.columns.NumericColumn.pointed`;
    ``0`` in a fractional column: ``plain``), and the declared missing code (a placement that saw
    no blanks dropped it: loans' emp_length, 8% blank, lost every blank in 6 of 6 runs; the
    Synthesizer draws its blanks only where the measurements show them); the bins from the bounds
    alone where nothing could be placed, or times were placed in another format.  Below and above
    the placed bins, where ``shown`` (:func:`shown_beyond`), the bounds' own bins there, up to their
    number: noise that placed bins over part of the range only left the rest one bin drawn evenly
    (loans' failed payments, 0-52 with 13% at 1, at epsilon 0.3: only 0 placed, decile TVD 0.13;
    the theory citations of AER's EquationCitations at epsilon 1: 0.54, now 0.05).
    Post-processing: the range is public, the edges noisy."""
    declared, integer = ranged.column, ranged.integer
    if placed is None or padded(placed.time_format or "") != padded(declared.time_format or ""):
        return declared
    lo, top = declared.edges[0], declared.edges[-1]
    whole = placed.integer or bool(integer)
    if whole and not declared.integer:
        lo, top = math.floor(lo), math.floor(top) + 1
    elif not whole and declared.integer:
        top = top - 1
    if not whole and top in placed.edges[:-1]:  # the largest number a bin of its own (a point mass)
        top = float(np.nextafter(top, math.inf))
    inner = [e for e in placed.edges if lo < e < top]
    first, last = placed.edges[0], placed.edges[-1]
    outside = [e for e in declared.edges if lo < e < top and (shown[0] and e <= first or shown[1] and e >= last)]
    room = len(declared.edges) - 2 - len(inner)  # the declared bins' inner edges the placed ones leave
    if room > 0 and outside:
        inner += [outside[k] for k in np.unique(np.linspace(0, len(outside) - 1, room).round().astype(int))]
    inner = sorted({math.ceil(e) for e in inner} - {lo, top}) if whole else sorted(set(inner))
    decimals = None if whole else placed.decimals
    return NumericColumn(placed.name, tuple(json_value(e) for e in [lo, *inner, top]), bool(whole),
                         declared.missing, decimals, declared.time_format,
                         placed.unit if whole and placed.integer else None, density=placed.density,
                         pointed=placed.pointed and whole, plain=placed.plain and not whole,
                         calendar=placed.calendar if whole and placed.integer else None)


def _spread(column: NumericColumn, bounds, bins: int) -> NumericColumn:
    """``column`` (its ``bounds`` cut into equal bins) with the bins of :func:`spread_edges`."""
    spread = spread_edges(*check_bounds(column.name, bounds), bins)
    return column if spread is None else NumericColumn(column.name, spread, column.integer, column.missing)


def spread_edges(lo, hi, integer: bool, bins: int = BINS) -> tuple | None:
    """Bin edges from ``lo`` to ``hi`` chosen from the bounds alone (no data), or None (``bins``
    equal bins; one per whole number where the span has at most ``bins`` of them).  A fractional
    column from 0 keeps 0 in a bin of its own (one float wide: zeros stay zeros); where
    ``0 <= lo`` and ``hi > SPREAD * max(lo, 0.1)`` (counts, amounts, long tails), the steps of the
    decades ``[10^k, 10^(k+1))`` between the bounds are edges too, the finest of DECADE_STEPS that
    make at most ``bins // 2`` bins (``1, 2, 5, 10, 20, ...``), and equal bins the rest: small
    numbers keep their detail, large ones their range.  Whole numbers only in a column of them
    (its last edge ``hi + 1``)."""
    if integer and hi - lo < bins:
        return None
    top = hi + 1 if integer else hi
    zero = [float(np.nextafter(0.0, 1.0))] if lo == 0 and not integer else []
    inner = []
    if lo >= 0 and hi > SPREAD * max(lo, 0.1):
        decades = range(math.floor(math.log10(max(lo, 1))), math.ceil(math.log10(hi)) + 1)
        for steps in DECADE_STEPS:
            inner = {json_value(m * 10 ** k) for k in decades for m in steps
                     if lo < m * 10 ** k < top and (not integer or float(m * 10 ** k).is_integer())}
            if len(zero) + len(inner) + 1 <= bins // 2:
                break
        else:
            inner = []
    if not zero and not inner:
        return None
    equal = NumericColumn.from_bounds("", (lo, hi), max(bins - len(zero) - len(inner), 1)).edges
    return tuple(sorted({*equal, *zero, *inner}))


#: Seconds in each period a time format may write last, finest first (months and years vary).
PERIODS = (("S", 1), ("M", 60), ("H", 3600), ("d", 86400))


def time_edges(lo: int, hi: int, fmt: str, bins: int = BINS) -> tuple:
    """At most ``bins`` bins (edges in seconds) from ``lo`` to ``hi`` made of whole periods of
    the finest the format ``fmt`` writes: seconds, minutes, hours, days, months or years, so
    that a time drawn in a bin is written as one of the periods the bin holds (a month's records
    come out in that month)."""
    codes = set(re.findall(r"%(.)", fmt))
    unit = next((seconds for code, seconds in PERIODS if code in codes), None)
    if unit is not None:
        steps = np.unique(np.ceil(np.linspace(lo // unit, hi // unit + 1, bins + 1)))
        return tuple(int(step) * unit for step in steps)
    months = 1 if codes & {"m", "b"} else 12
    year, month = (int(part) for part in time_text(lo, "%Y-%m").rsplit("-", 1))
    end_year, end_month = (int(part) for part in time_text(hi, "%Y-%m").rsplit("-", 1))
    periods = ((end_year - year) * 12 + end_month - month) // months + 1  # whole periods from lo's to hi's
    starts = np.unique(np.round(np.linspace(0, periods, min(bins, periods) + 1)).astype(int)) * months + month - 1
    texts = np.array([f"{year + s // 12:04d}-{s % 12 + 1:02d}" for s in starts], dtype=object)
    return tuple(int(t) for t in as_times(texts, "%Y-%m"))


def _typed(name: str, bounds, whole: bool):
    """Declared bounds as the computer representation says: ints (each a whole number) or floats."""
    if not isinstance(bounds, list) or any(isinstance(b, bool) or not isinstance(b, (int, float)) for b in bounds):
        return bounds  # refused by ColumnSpec, naming the column
    if whole and any(not float(b).is_integer() for b in bounds):
        raise InputError(f"column {name!r}: an integer column's bounds are whole numbers, got {bounds!r}")
    return [int(b) for b in bounds] if whole else [float(b) for b in bounds]


def _times(name: str, fmt, bounds, bins, missing):
    """A datetime column: declared over its bounds (text read in ``fmt``, or in the first format of
    TIME_FORMATS reading both), or ``"numeric"`` (inferred privately) without bounds."""
    if bounds is None:
        if fmt is not None and padded(fmt) not in TIME_FORMATS:
            raise InputError(f"column {name!r}: its datetime_format {fmt!r} is not one that a schema infers "
                             f"privately ({', '.join(TIME_FORMATS)}); declare its \"bounds\" in that format")
        if missing is not True or bins != BINS:
            raise InputError(f'column {name!r}: "missing" and "bins" of a datetime column need its "bounds"')
        return "numeric"
    if not isinstance(bounds, list) or len(bounds) != 2 or not all(isinstance(b, str) for b in bounds):
        raise InputError(f"column {name!r}: a datetime column's bounds are two times written as text, got {bounds!r}")
    seconds, fmt = _read_times(name, fmt, bounds, "bounds")
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise InputError(f'column {name!r}: "bins" must be a positive integer, got {bins!r}')
    if not seconds[0] < seconds[1]:
        raise InputError(f"column {name!r}: bounds must be two times, the first before the second, got {bounds!r}")
    return NumericColumn(name, time_edges(seconds[0], seconds[1], fmt, bins), True, missing, time_format=fmt)


def _time_bins(name: str, fmt, edges, missing) -> NumericColumn:
    """A datetime column declared by the ``edges`` of its bins (text read as :func:`_times` reads
    bounds): bin k holds the times from edge k up to, not including, edge k + 1."""
    if not isinstance(edges, list) or len(edges) < 2 or not all(isinstance(e, str) for e in edges):
        raise InputError(f"column {name!r}: a datetime column's edges are two or more times written as text, "
                         f"got {edges!r}")
    seconds, fmt = _read_times(name, fmt, edges, "edges")
    if any(b <= a for a, b in zip(seconds, seconds[1:])):
        raise InputError(f"column {name!r}: edges must be times in increasing order, got {edges!r}")
    return NumericColumn(name, tuple(seconds), True, missing, time_format=fmt)


def _read_times(name: str, fmt, texts: list, key: str) -> tuple[list, str]:
    """The seconds of the declared times ``texts`` (a column's ``key``) and the format that reads
    them: ``fmt``, or the first of TIME_FORMATS reading them all."""
    for candidate in [fmt] if fmt is not None else TIME_FORMATS:
        try:
            seconds = as_times(np.array(texts, dtype=object), candidate)
        except InputError as err:  # a format of other codes
            raise InputError(f"column {name!r}: {err}") from None
        if all(isinstance(s, int) for s in seconds):
            break
    else:
        raise InputError(f"column {name!r}: {key} {texts!r} are not times in "
                         f"{'its datetime_format ' + repr(fmt) if fmt else 'a format the schema reads'}")
    return list(seconds), candidate


def shown_beyond(r, placed: NumericColumn | None, ranged: Ranged) -> tuple[bool, bool]:
    """Whether the noisy counts of a column's grid (``r``: its :class:`~.histogram.Release`) show a
    part of its numbers in the declared range of ``ranged`` below and above the ``placed`` bins: the
    decades, tenths or else cells wholly inside that part (the coarsest level with any) sum to
    ``NOTICE_Z`` of their noise stds and to ``TAIL_SHARE`` of the numbers.  Post-processing of
    noisy counts."""
    if placed is None:
        return False, False
    numbers, shown = r.kinds["whole"] + r.kinds["fractional"], []
    for a, b in ((ranged.column.edges[0], placed.edges[0]), (placed.edges[-1], ranged.column.edges[-1])):
        inside = ((LOWER >= a) & (UPPER <= b)).astype(float)
        count, std = 0.0, r.std
        for group, counts in zip(LEVELS, r.levels):
            held = np.bincount(group, weights=inside, minlength=counts.size)
            whole = (held > 0) & (held == np.bincount(group, minlength=counts.size))
            if whole.any():
                count, std = counts[whole].sum(), r.std * math.sqrt(whole.sum())
                break
        shown.append(bool(count >= max(NOTICE_Z * std, TAIL_SHARE * numbers)))
    return shown[0], shown[1]
