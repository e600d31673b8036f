"""The declared form of a schema (:mod:`ektelo_pgm.schema`'s docstring): :class:`ColumnSpec`, one
column of the short form, validated on construction, and :class:`Declared`, the columns a user
declares in either form.  Reading a declared schema spends nothing."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ..columns import CategoricalColumn, NumericColumn, json_value
from ..encoding import TableEncoder
from ..errors import InputError
from .kinds import BINS

#: The keys of a declared column in the short form (package docstring).
SPEC_KEYS = ("kind", "categories", "other", "public", "bounds", "bins", "edges", "integer", "missing")


@dataclass(frozen=True)
class ColumnSpec:
    """One declared column of the short schema form (package docstring), validated on construction:
    an InputError names the column and what is wrong with the declaration.  ``kind``
    ``"categorical"`` takes ``categories`` (and ``other``, ``public``); ``"numeric"`` takes
    ``bounds`` (and ``bins``) or ``edges`` (and ``integer``, default: whether every edge is an
    int); ``missing`` (default true) gives the column a missing code."""

    name: str
    kind: str | None
    categories: list | tuple | None = None
    other: str | None = None
    public: bool = False
    bounds: object = None
    bins: int = BINS
    edges: list | tuple | None = None
    integer: bool | None = None
    missing: bool = True

    def __post_init__(self):
        name = self.name
        if self.kind == "categorical":
            if not isinstance(self.categories, (list, tuple)) or not self.categories:
                raise InputError(f"column {name!r}: a categorical column needs a non-empty list \"categories\"")
            self._flag("missing")
            if self.other is not None and not isinstance(self.other, str):
                raise InputError(f"column {name!r}: \"other\" must be a label (text), got {self.other!r}")
            self._flag("public")
        elif self.kind == "numeric":
            if self.edges is not None:
                edges = self.edges
                if not isinstance(edges, (list, tuple)) or len(edges) < 2 or \
                        any(not isinstance(e, (int, float)) for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
                    raise InputError(f"column {name!r}: \"edges\" must be at least two increasing numbers, got {edges!r}")
            else:
                if isinstance(self.bins, bool) or not isinstance(self.bins, int) or self.bins < 1:
                    raise InputError(f"column {name!r}: \"bins\" must be a positive integer, got {self.bins!r}")
                if self.bounds is None:
                    raise InputError(f"column {name!r}: a numeric column needs \"bounds\": [lo, hi] or \"edges\"")
                NumericColumn.from_bounds(name, self.bounds, self.bins)  # refuses bad bounds, naming the column
            self._flag("missing")
        else:
            raise InputError(f"column {name!r}: \"kind\" must be \"categorical\" or \"numeric\", got {self.kind!r}")

    def _flag(self, key: str) -> None:
        value = getattr(self, key)
        if not isinstance(value, bool):
            raise InputError(f"column {self.name!r}: \"{key}\" must be true or false, got {value!r}")

    @classmethod
    def from_json(cls, name: str, spec) -> "ColumnSpec":
        """The declaration ``{"kind": ..., ...}`` of column ``name`` (unknown keys refused)."""
        if not isinstance(spec, dict):
            return cls(name, None)
        unknown = sorted(str(k) for k in spec if k not in SPEC_KEYS)
        if unknown:
            raise InputError(f"column {name!r}: unknown keys {unknown}; a declared column takes {list(SPEC_KEYS)}")
        return cls(name, **spec)

    def column(self):
        """The encoder's column: a CategoricalColumn (values outside the categories get the
        ``other`` code, else the missing one) or a NumericColumn (its edges, or ``bins`` equal
        bins between the bounds)."""
        if self.kind == "categorical":
            return CategoricalColumn(self.name, tuple(dict.fromkeys(json_value(c) for c in self.categories)),
                                     self.missing, self.missing and self.other is None, self.other, self.public)
        if self.edges is not None:
            integer = bool(all(isinstance(e, int) for e in self.edges) if self.integer is None else self.integer)
            return NumericColumn(self.name, tuple(json_value(e) for e in self.edges), integer, self.missing)
        column = NumericColumn.from_bounds(self.name, self.bounds, self.bins)
        return NumericColumn(self.name, column.edges, column.integer, self.missing)


def read_json(path, what: str):
    """The JSON value in the file ``path``; an InputError naming the file when it is not JSON
    (``what``: what the file should hold, e.g. ``"a JSON schema"``)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as err:
        raise InputError(f"{os.fspath(path)}: not {what} ({err})") from None


@dataclass(frozen=True)
class Declared:
    """A declared schema: ``columns`` (name -> the encoder's CategoricalColumn or NumericColumn,
    each named as its key) and ``options``, the settings of the TableEncoder it gives
    (:meth:`encoder`: missing markers, bins, ...; numbers outside a column's range clipped into
    its end bins).  Validated on construction; :meth:`read` takes every form a user writes.
    Reading a declared schema spends nothing."""

    columns: dict
    options: dict = field(default_factory=lambda: {"bins": BINS, "clip": True})

    def __post_init__(self):
        if not isinstance(self.columns, dict) or not self.columns:
            raise InputError('a schema needs "columns": {name: {"kind": "categorical" or "numeric", ...}}')
        for name, column in self.columns.items():
            if not isinstance(column, (CategoricalColumn, NumericColumn)) or column.name != name:
                raise InputError(f"column {name!r}: not a declared column of that name")

    @classmethod
    def read(cls, schema) -> "Declared":
        """The declared schema of ``schema``: a Declared, a fitted TableEncoder, a dict, or the path
        of a JSON file holding either form of the package docstring."""
        if isinstance(schema, Declared):
            return schema
        if isinstance(schema, TableEncoder):
            return cls(dict(schema._fitted()), _settings(schema))
        if isinstance(schema, (str, os.PathLike)):
            schema = read_json(schema, "a JSON schema")
        if not isinstance(schema, dict):
            raise TypeError(f"a schema is a TableEncoder, a dict or a JSON path, got {type(schema).__name__}")
        if "format" in schema:
            encoder = TableEncoder.from_dict(schema)
            encoder.clip = True
            return cls(encoder.columns, _settings(encoder))
        specs = schema.get("columns")
        if "METADATA_SPEC_VERSION" in schema or "tables" in schema or isinstance(specs, dict) and any(
                isinstance(spec, dict) and "sdtype" in spec for spec in specs.values()):
            raise InputError("this is SDV's metadata (sdtypes), not a schema: give it as metadata (--metadata)")
        if not isinstance(specs, dict) or not specs:
            raise InputError('a schema needs "columns": {name: {"kind": "categorical" or "numeric", ...}}')
        return cls({str(name): ColumnSpec.from_json(str(name), spec).column() for name, spec in specs.items()})

    def encoder(self, columns: dict | None = None) -> TableEncoder:
        """A TableEncoder with this schema's settings and ``columns`` (default: the declared ones)."""
        encoder = TableEncoder(**self.options)
        encoder.columns = dict(self.columns if columns is None else columns)
        return encoder


def _settings(encoder: TableEncoder) -> dict:
    """The constructor settings of ``encoder`` (what its saved form holds besides the columns)."""
    return {"bins": encoder.bins, "categorical": encoder.categorical, "numeric": encoder.numeric,
            "binning": encoder.binning, "missing": encoder.missing, "clip": encoder.clip,
            "categories": encoder.categories, "bounds": encoder.bounds}


def undeclared(names, declared: Declared | None = None, public=()) -> list[str]:
    """The columns of ``names`` that :func:`learn` infers privately: neither declared nor public."""
    return [c for c in names if c not in set(public) and (declared is None or c not in declared.columns)]
