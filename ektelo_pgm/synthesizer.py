"""From a raw table to differentially private synthetic records, in the scikit-learn shape.

``Synthesizer(mechanism="aim", epsilon=1.0, delta=1e-9).fit(table).sample()`` reads a table of
strings and numbers, learns its schema privately (or takes a declared one), runs a published
mechanism on the integer-coded records, and decodes the mechanism's synthetic records back to
the table's columns and value types.

Privacy: the whole fit is (epsilon, delta)-DP.  On the zCDP mechanisms (all but PrivBayes) the
budget is ``rho = approx_to_zcdp(epsilon, (1 - d) delta)``, ``d`` the schema's share of delta
(``schema_share``, or ``AUTO_DELTA_SHARE`` when it is ``"auto"``); the private schema
(:mod:`ektelo_pgm.schema`) spends ``schema_share`` of rho (``"auto"``: the share its columns need,
:func:`ektelo_pgm.schema.needed_share`, from a noisy count of the records charged first) and is
``d * delta``-approximately zCDP, and the mechanism spends the rest of rho; approximate zCDP composes by
adding rho and delta (Bun and Steinke 2016, sec. 8), and converts to (epsilon, delta)-DP by
Canonne, Kamath and Steinke (2020, Cor. 13).  PrivBayes is pure epsilon-DP with a public record
count (substitute neighbours): its budget is ``epsilon`` (pure), of which the schema spends
``schema_share`` with Laplace noise, ``d * delta``-approximately.  With a declared
schema that fixes every column nothing is spent on it, the whole budget goes to the mechanism
and, on zCDP, to ``delta`` itself; one that fixes some columns leaves the others to the private
schema, which spends ``schema_share`` on them.  Every charge is in :attr:`Synthesizer.ledger`, exactly (fractions).
With ``person`` and ``max_rows`` the guarantee is per person: at most ``max_rows`` rows of each
person are kept (:func:`~ektelo_pgm.privacy.contribution.bound_rows`) before anything reads the
table, and every sensitivity is taken under ``Person(max_rows)`` (zCDP mechanisms only).

``save``/``load`` write and read one ``.npz`` file of numpy arrays and JSON text; loading
never unpickles anything (``allow_pickle=False``).
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Callable

import numpy as np

from . import progress as progresses
from . import schema as schemas
from .domain import Domain
from .encoding import TableEncoder
from .errors import InputError, NotFittedError
from .estimate import SAMPLING, Estimate, synthetic_without
from .files import atomic_write, private_folder
from .number_formats import whole_as_ints
from .params import as_data
from .privacy import ADD_REMOVE, Budget, Charge, Person, approx_to_zcdp
from .privacy.contribution import bound_rows, person_relation
from .table_io import PART_ROWS, Partitions, as_frame, is_parquet, open_table, pandas_module, typed, write_parts
from .uncertainty import LEVEL, ErrorBars

_FORMAT = "ektelo_pgm.Synthesizer"
#: Default share of the budget that infers the schema when none is declared: ``"auto"``, what its
#: columns need (:func:`ektelo_pgm.schema.needed_share`: a noise std of a fixed share of a noisy
#: count of the records in each column's counts, between a tenth and a half of the budget, and a
#: second draw for categorical columns that show they need more, up to 4/5 where most columns
#: do).  A fixed half starved the mechanism on long tables: AER's CPS1988 (7 columns, 28,155
#: rows) at epsilon 1 with AIM has a mean 2-way TVD of 0.034 at share 0.5, 0.026 with "auto" (3
#: seeds; at epsilon 3, 0.021 and 0.018); wide, short tables (ames: 75 columns, 2,930 rows) need
#: the half and get it.  A number fixes the share.
SCHEMA_SHARE = "auto"
#: The schema's share of delta when ``schema_share`` is ``"auto"`` (fixed before any count: the
#: mechanism's rho is set by the rest of delta).
AUTO_DELTA_SHARE = 0.5
#: A column whose missing code the schema did not infer (public categories, declared columns) has it
#: drawn only where the mechanism's measurements show blanks at this many noise stds, the bar of one
#: column: with several in doubt, their bar shares its tail among them (:func:`blank_bar`), so that
#: noise alone draws blanks in some column without any at most once in 740 fits, not once in 740
#: columns (ames with public categories, 43 columns in doubt: Bsmt_Exposure, never blank, shown at
#: 3.34 stds in one AIM run and drawn 7.7% blank; at its bar of 4.00 stds, none).  Without the test,
#: the code got mass from noise alone, and seattle_pets' species gained blanks; at the schema's bar
#: (4.5 stds) ames' Mas_Vnr_Type, 61% blank, lost every blank in one AIM run (at 3.5 stds of AIM's
#: 1-way noise, std 298 on 2,930 rows), and 1%-blank columns theirs in 5 of 132 runs.  The schema's
#: count that put a column in doubt is weighed given that it did (:meth:`~ektelo_pgm.uncertainty.Prior.tail`):
#: weighed as if not, hotel_rates' reserved_room_type, never blank, its count 2.4 stds up, passed at
#: 3.07 stds and drew 1% blanks.
BLANK_Z = 3.0


def blank_bar(columns: int) -> float:
    """The noise stds at which the measurements must show the blanks of one of ``columns`` columns
    in doubt: ``BLANK_Z``'s one-sided normal tail divided among them (Bonferroni)."""
    normal = NormalDist()
    return -normal.inv_cdf(normal.cdf(-BLANK_Z) / max(columns, 1))


@dataclass(frozen=True)
class Entry:
    """A mechanism the Synthesizer can run: the class ``name`` of :mod:`ektelo_pgm.mechanisms`, built
    with its own defaults except for the steward's ``settings(domain)``; ``notion`` is the
    budget it needs (``"zcdp"``, or ``"pure"`` with substitute neighbours)."""

    name: str
    notion: str
    summary: str
    settings: Callable = lambda domain: {}

    def build(self, domain: Domain, options: dict):
        """The mechanism on ``domain``: the steward's settings, then the user's ``options``."""
        from . import mechanisms as mechanism_classes

        return getattr(mechanism_classes, self.name)(**{**self.settings(domain), **options})


def _pairs(domain: Domain):
    from .workload import kway_marginals

    return kway_marginals(domain, min(2, len(domain)))


# Where the steward's settings differ from the classes' (the papers') defaults, and why: raw
# tables have many wide columns, so models are capped at 32 MB (AIM's selection, MWEM's and
# PEP's graphical models) and the workload-free mechanisms get the workload of every 2-way
# marginal; MWEM measures with Gaussian noise (the budget is zCDP) and refits Private-PGM (the
# full vector of multiplicative weights does not fit), 250 mirror-descent steps a round; fewer
# iterations or rounds keep a fit within minutes (MST 1,000 iterations, PEP 20 rounds, GEM 30).
# AIM keeps its every 3-way marginal up to AIM_TRIPLES_UP_TO columns and takes every 2-way
# marginal on wider tables (the default of its author's script and of smartnoise-synth): each
# round scores every candidate, whose number grows as the cube of the columns.
def _mwem(domain: Domain) -> dict:
    from .operators.reconstruct import PGM

    return {"workload": _pairs(domain), "noise": "gaussian", "estimator": PGM(iters=250, method="mirror", max_mb=32.0)}


#: The widest table (columns) on which the steward's AIM takes every 3-way marginal.
AIM_TRIPLES_UP_TO = 16


def _aim(domain: Domain) -> dict:
    return {"max_mb": 32.0, **({"workload": _pairs(domain)} if len(domain) > AIM_TRIPLES_UP_TO else {})}


def mechanisms() -> dict[str, Entry]:
    """The mechanisms by name (GEM only where torch is installed)."""
    table = {
        "aim": Entry("AIM", "zcdp", f"AIM (McKenna et al. 2022): adaptive 3-way marginals (2-way above "
                                    f"{AIM_TRIPLES_UP_TO} columns), Private-PGM", _aim),
        "mst": Entry("MST", "zcdp", "MST (McKenna et al. 2021): a private tree of 2-way marginals, Private-PGM",
                     lambda domain: {"iters": 1000}),
        "privbayes": Entry("PrivBayes", "pure", "PrivBayes (Zhang et al. 2017): a private Bayesian network"),
        "mwem": Entry("MWEM", "zcdp", "MWEM (Hardt et al. 2012) on 2-way marginals with Private-PGM updates", _mwem),
        "pep": Entry("PEP", "zcdp", "PEP (Liu et al. 2021): 2-way marginals, entropy projection",
                     lambda domain: {"workload": _pairs(domain), "rounds": 20, "representation": "graphical",
                                     "max_mb": 32.0}),
    }
    if importlib.util.find_spec("torch") is not None:
        table["gem"] = Entry("GEM", "zcdp", "GEM (Liu et al. 2021): 2-way marginals, a generative network",
                             lambda domain: {"workload": _pairs(domain), "rounds": 30})
    return table


def mechanism_entry(name: str) -> Entry:
    """The registry entry of ``name``; a ValueError listing the choices otherwise."""
    table = mechanisms()
    if name not in table:
        hint = " (GEM needs torch: pip install 'ektelo_pgm[gem]')" if name == "gem" else ""
        raise InputError(f"unknown mechanism {name!r}{hint}; choose from {', '.join(sorted(table))}")
    return table[name]


def _person(mechanism: str, person, max_rows) -> tuple:
    """``(person, max_rows)`` checked (:func:`~ektelo_pgm.privacy.contribution.person_relation`);
    refused with a pure mechanism (PrivBayes needs substitute neighbours, a public record count,
    which one person's rows change)."""
    relation = person_relation(person, max_rows)
    if relation is not None and mechanism_entry(mechanism).notion == "pure":
        raise InputError(f"--person: {mechanism} needs a public record count (substitute neighbours), which "
                         "one person's rows change: choose a zCDP mechanism")
    return (None, None) if relation is None else (str(person), relation.max_rows)


def _generators(seed):
    """Independent generators for the fit and for the sampling, spawned from ``seed`` (an int, or
    a Generator whose next draw seeds them): what the sampling draws tells nothing of the fit's
    state.  None: fresh ones from the operating system's entropy."""
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(2 ** 63))
    return tuple(np.random.default_rng(child) for child in np.random.SeedSequence(seed).spawn(2))


class Synthesizer:
    """Differentially private synthetic data from a raw table (see the module docstring).

    Parameters
    ----------
    mechanism : a name of :func:`mechanisms` (``aim``, ``mst``, ``privbayes``, ``mwem``, ``pep``,
        ``gem`` with torch).
    epsilon, delta : the (epsilon, delta)-DP guarantee of the whole fit.
    schema_share : share of the budget and of delta that infers the columns a declared schema does
        not fix (all of them when none is declared), a number in (0, 1); or ``"auto"`` (default):
        the share they need (:func:`ektelo_pgm.schema.needed_share`), of which a noisy count of
        the records spends ``ROWS_SHARE``, and ``AUTO_DELTA_SHARE`` of delta.
    bins : most bins of an inferred numeric column (besides one per point mass).
    sampling : how :meth:`sample` draws records from the fitted estimate: ``"round"`` (default)
        keeps the counts of each of its conditional tables at roundings of their expected counts,
        assigning values to records at random (less sampling error; where the estimate cannot,
        as GEM's mixture, records are drawn i.i.d.); ``"sample"`` draws i.i.d. records.  Both
        are post-processing: no privacy cost.
    seed : None (default): the noise comes from the operating system's secure generator
        (``Budget(secure=True)``) and the sampling from a fresh generator, so nothing can replay
        them.  An int (or a Generator): every random step is reproducible from it (same seed, same
        output); the noise and the sampling then draw from two independent streams spawned from
        it, and the seed is as secret as the data.  Nothing saved holds a generator's state.
    progress : progress bars on standard error for the schema, the mechanism's rounds, the
        estimation and the sampling: True, False, or None (as the caller's
        :func:`ektelo_pgm.progress.reporting` says; by default only on a terminal, never in tests).
    drop : columns of the table left out.
    kinds : ``{column: "categorical" | "numeric"}``, the kinds of inferred columns the user fixes
        (a numeric code of a category; numbers with few values to bin).
    other : the label of an inferred categorical column's values too rare to release (a
        category of their own, never a blank).
    regenerate : identifier columns left out of the model and written afresh in the output
        (1, 2, ..., n: unique, unrelated to the input's).
    public : columns whose categories the user declares public knowledge: read from the table as
        they are, without noise (:func:`ektelo_pgm.schema.public_column`; a declared assumption,
        not a private release, listed in :attr:`public`).
    metadata : SDV's metadata of the table (a path of its JSON, a dict, or a
        :class:`~ektelo_pgm.schema.Metadata`), read as :mod:`ektelo_pgm.schema.metadata` says: its
        declared columns cost nothing, its kinds, public categories and ids join ``kinds``,
        ``public`` and ``regenerate``, and the columns of other sdtypes are left out (in
        :attr:`left_out`); not with a ``schema`` given to :meth:`fit`.
    person, max_rows : the column naming each row's person and the most rows of a person kept
        (both or neither): the rows of each person beyond ``max_rows`` are left out at random
        before anything reads the table, the column is left out of the model (written afresh
        if also in ``regenerate``), and the guarantee holds per person (``Person(max_rows)``
        neighbours) instead of per row.  A table read part by part is grouped by person in the
        fit's private folder (:func:`~ektelo_pgm.privacy.contribution.bound_parts`); not for a
        Dask DataFrame, nor PrivBayes.

    After :meth:`fit`, :attr:`left_out` says why each column left out was, and :attr:`thresholds`
    the noisy count a category needed to be released, for each inferred column with an
    ``other`` code (set by the budget and the column's noisy kind: post-processing), and
    :attr:`params` the mechanism's settings as plain data (its ``get_params()``; saved with it),
    and :attr:`blankless` the columns whose missing code the schema did not surely infer (declared,
    public, or not sure: :func:`~ektelo_pgm.schema.kinds.has_missing`) and the measurements, with
    the schema's noisy count of the blanks where it has one (given that it put the code in doubt:
    :func:`~ektelo_pgm.schema.kinds.blank_count`), do not show (:func:`blank_bar`):
    :meth:`sample` draws none of their blanks
    (:func:`~ektelo_pgm.estimate.synthetic_without`), and :attr:`blank_records` the noisy count
    of the records blank in every column inferred where it is clearly positive, else 0 (with
    ``schema_share="auto"``: :func:`~ektelo_pgm.schema.learn`'s ``found``).
    mechanism_options : keyword arguments of the mechanism's class (e.g. ``rounds=``).
    """

    def __init__(self, mechanism: str = "aim", epsilon: float = 1.0, delta: float = 1e-9,
                 schema_share: float | str = SCHEMA_SHARE, bins: int = schemas.BINS, sampling: str = "round", seed=None,
                 progress: bool | None = None, drop=(), kinds: dict | None = None, other: str = schemas.OTHER,
                 regenerate=(), public=(), metadata=None, person: str | None = None, max_rows: int | None = None,
                 **mechanism_options):
        mechanism_entry(mechanism)
        self.person, self.max_rows = _person(mechanism, person, max_rows)
        if sampling not in SAMPLING:
            raise InputError(f"sampling must be one of {', '.join(SAMPLING)}, got {sampling!r}")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not math.isfinite(epsilon) \
                or epsilon <= 0:
            raise InputError(f"epsilon must be a positive number, got {epsilon!r}")
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta < 1:
            raise InputError(f"delta must lie in (0, 1), got {delta!r}")
        if schema_share != schemas.AUTO and (isinstance(schema_share, bool) or not isinstance(schema_share, (int, float))
                                             or not 0 < schema_share < 1):
            raise InputError(f"schema_share must be {schemas.AUTO!r} or lie in (0, 1), got {schema_share!r}")
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
            raise InputError(f"bins must be a positive integer, got {bins!r}")
        self.mechanism, self.epsilon, self.delta = mechanism, float(epsilon), float(delta)
        self.schema_share = schema_share if schema_share == schemas.AUTO else float(schema_share)
        self.bins, self.progress = int(bins), progress
        self.sampling = sampling
        self.drop, self.kinds, self.other, self.regenerate = tuple(drop), dict(kinds or {}), str(other), \
            tuple(regenerate)
        self.public = tuple(public)
        self.metadata = None if metadata is None else schemas.Metadata.read(metadata).without(self.drop)
        if self.metadata is not None:
            self.kinds, self.public, self.regenerate = self.metadata.joined(self.kinds, self.public, self.regenerate)
        self.left_out: dict[str, str] = {}
        self.thresholds: dict[str, float] = {}
        self.blank_records = 0.0
        self.order: list[str] = []
        self.mechanism_options = dict(mechanism_options)
        self.params: dict | None = None
        self.secure = seed is None
        self.fit_rng, self.rng = _generators(seed)
        self.encoder: TableEncoder | None = None
        self.estimate = None
        self.error_bars: ErrorBars | None = None
        self.blankless: tuple = ()
        self.ledger: list[Charge] = []
        self.total: Fraction | None = None
        self.unit: str | None = None
        self.schema_inferred: bool | None = None
        self.schema_declared: bool | None = None

    # fitting -----------------------------------------------------------------
    def fit(self, table, schema=None, header: bool | None = None, cache=None) -> "Synthesizer":
        """Learn from ``table`` spending the whole budget: a pandas DataFrame, a Dask DataFrame
        (read partition by partition where Dask runs), a
        :class:`~ektelo_pgm.table_io.Partitions` (read part by part in this process), or the
        path of a CSV or Parquet file, folder or glob (:func:`~ektelo_pgm.table_io.open_table`:
        read whole, or part by part when large).

        ``schema``: None (inferred privately, spending ``schema_share``), a TableEncoder, a
        dict, or the path of a JSON file (see :meth:`ektelo_pgm.schema.Declared.read`).  ``header``:
        whether a CSV path's first line names its columns (:func:`~ektelo_pgm.table_io.read_table`).
        ``cache``: the folder in which a table read part by part has its integer codes written
        once for the mechanism's passes (default: the system's temporary folder).  The codes are
        the private records: they go to a new folder inside it that only this user can open
        (0700, files 0600), removed when the fit ends, however it ends; ``cache`` itself is created
        (0700) if absent and then removed too."""
        with self._reporting():
            if isinstance(table, (str, os.PathLike)):
                table = open_table(table, header)
            if not isinstance(table, Partitions):
                return self._fit(table, schema, None)
            with private_folder(cache, prefix="ektelo-codes-") as folder:
                return self._fit(table, schema, folder)

    def _reporting(self):
        """Progress as ``progress`` says; None leaves the caller's setting (e.g. the CLI's --quiet)."""
        return contextlib.nullcontext() if self.progress is None else progresses.reporting(self.progress)

    def _fit(self, table, schema, cache) -> "Synthesizer":
        frame = as_frame(table)
        entry = mechanism_entry(self.mechanism)
        metadata = self.metadata
        if metadata is not None:
            metadata.check(frame.columns)
            if schema is not None:
                raise InputError(f"{metadata.source}: give a schema or metadata, not both")
        unknown = [c for c in (*self.drop, *self.kinds, *self.regenerate, *self.public) if c not in frame.columns]
        if unknown:
            raise InputError(f"columns {unknown} are not in the table {list(frame.columns)}")
        out = set(self.drop) | set(metadata.left_out if metadata else ())
        table_order = [c for c in frame.columns if c not in out]
        if self.person is not None:
            if self.person in (*self.drop, *self.kinds, *self.public):
                raise InputError(f"--person {self.person!r} is also dropped, given a kind or public categories")
            frame = bound_rows(frame, self.person, self.max_rows, self.fit_rng, self.secure, cache)
            metadata = metadata and metadata.without([self.person])
        frame = frame[[c for c in frame.columns if c not in out and c not in self.regenerate]]
        declared = metadata.declared if metadata else None if schema is None else schemas.Declared.read(schema)
        fixed = {} if declared is None else declared.columns
        twice = [c for c in self.public if c in fixed or c in self.kinds or c in self.drop or c in self.regenerate]
        if twice:
            raise InputError(f"columns {twice} have public categories and are also declared, dropped, regenerated or "
                             "given a kind")
        open_ = schemas.undeclared(frame.columns, declared, self.public)
        budget, schema_delta = self._budget(entry.notion, inferred=bool(open_))
        left_out, thresholds, found, unsure = {}, {}, {}, {}
        amount = None if not open_ else schemas.AUTO if self.schema_share == schemas.AUTO \
            else budget.fraction(self.schema_share)
        encoder = schemas.learn(frame, budget, amount, schema_delta, self.fit_rng,
                                self.bins, declared, self.public, kinds=self.kinds, other=self.other,
                                left_out=left_out, thresholds=thresholds, found=found, unsure=unsure,
                                ranges={c: r for c, r in metadata.ranges.items() if c in frame.columns}
                                if metadata else None, folder=cache)
        columns = encoder.columns
        data = schemas.encoded(frame, encoder, cache)
        mechanism = entry.build(data.domain, self.mechanism_options)
        self.params = as_data(mechanism.get_params())
        result = mechanism.run(data, budget, self.fit_rng)
        self.encoder, self.estimate, self.schema_inferred = encoder, result.estimate, bool(open_)
        self.error_bars = result.error_bars()
        sure = set(open_) - set(unsure)  # inferred columns whose missing code their noisy counts surely show
        doubt = [c for c, col in columns.items() if c not in sure and col.missing]
        bar = blank_bar(len(doubt))
        self.blankless = tuple(c for c in doubt
                               if not self.error_bars.shows(c, columns[c].size - 1, bar, unsure.get(c)))
        self.schema_declared = declared is not None
        self.left_out = {**(metadata.left_out if metadata else {}), **left_out}
        self.order = [c for c in table_order if c in columns or c in self.regenerate]
        self.thresholds = {c: t for c, t in thresholds.items() if getattr(columns.get(c), "other", None) is not None}
        self.blank_records = found.get("blank", 0.0)
        self.ledger, self.total, self.unit = list(budget.ledger), Fraction(repr(budget.total)), budget.unit
        return self

    def _budget(self, notion: str, inferred: bool) -> tuple[Budget, float]:
        """The mechanism's budget and the delta left to the schema (module docstring)."""
        schema_delta = self._delta_share() * self.delta if inferred else 0.0
        if notion == "pure":
            return Budget.pure(self.epsilon, neighbours="substitute", secure=self.secure), schema_delta
        neighbours = ADD_REMOVE if self.person is None else Person(self.max_rows)
        return Budget.zcdp(approx_to_zcdp(self.epsilon, self.delta - schema_delta), neighbours, self.secure), \
            schema_delta

    def _delta_share(self) -> float:
        """The schema's share of delta when it infers columns."""
        return AUTO_DELTA_SHARE if self.schema_share == schemas.AUTO else self.schema_share

    def schema_spent(self) -> Fraction:
        """The share of the budget the fit's schema spent (its charges in :attr:`ledger`, exactly)."""
        self._fitted()
        return sum((c.amount for c in self.ledger if (c.label or "").startswith("schema")), Fraction(0)) / self.total

    def _fitted(self):
        if self.estimate is None:
            raise NotFittedError("this Synthesizer is not fitted yet; call fit(table) first")

    # output ------------------------------------------------------------------
    def sample(self, n: int | None = None):
        """``n`` synthetic records (default: the estimated number of records), drawn as ``sampling``
        says, as a DataFrame with the table's column names and the value types its schema fixes
        (:func:`~ektelo_pgm.table_io.typed`); numbers are drawn uniformly inside their bins (a column of whole numbers
        among the whole numbers of each bin), categories are among those released."""
        self._fitted()
        return self._part(self._rows(n), 1)

    def _rows(self, n) -> int:
        """``n`` checked, or the estimated number of records."""
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
            raise InputError(f"the number of rows must be a positive integer, got {n!r}")
        return max(1, int(round(self.estimate.total))) if n is None else int(n)

    def _part(self, n: int, first: int, text: bool = False):
        """``n`` synthetic records (:meth:`sample`), regenerated identifiers numbered from ``first``;
        ``text``: for a text file (:meth:`decoded`)."""
        options = {"method": self.sampling} if "round" in self.estimate.sampling_methods else {}
        with self._reporting():
            records = synthetic_without(self.estimate, n, self.rng,
                                        {c: self.encoder.columns[c].size - 1 for c in self.blankless}, **options)
        frame = self.decoded(records, self.rng, text)
        for name in self.regenerate:
            frame[name] = pandas_module().Series(np.arange(first, first + n), dtype="Int64")
        return frame[self.order]

    def decoded(self, records, rng, text: bool = False):
        """The coded ``records`` (a Dataset over the schema's columns) as a DataFrame of values in the
        types the schema fixes, numbers drawn uniformly inside their bins with ``rng``; ``text``: for
        a text file, where a fractional column that writes its whole numbers plain holds them as ints
        (:attr:`~ektelo_pgm.columns.NumericColumn.plain`)."""
        frame = self.encoder.inverse_transform(records, within_bin="uniform", rng=rng)
        for name, column in self.encoder.columns.items():
            frame[name] = typed(frame[name], column)
            if text and column.kind == "numeric" and column.plain:
                frame[name] = whole_as_ints(frame[name])
        return frame

    def write(self, path, n: int | None = None, header: bool = True, rows: int = PART_ROWS) -> int:
        """Write ``n`` synthetic records (default: the estimated number of records) to ``path``
        (CSV, Parquet or JSON by extension, atomically), drawn and written ``rows`` at a time
        (each part as :meth:`sample` draws it), so that memory holds one part whatever ``n``;
        ``header``: whether a CSV gets a header line.  Returns the number of records written."""
        self._fitted()
        n = self._rows(n)
        starts, text = range(0, n, rows), not is_parquet(path)
        with self._reporting(), progresses.bar(n, "writing", "record") as shown:
            def parts():
                for start in starts:
                    part = self._part(min(rows, n - start), start + 1, text)
                    shown.update(len(part))
                    yield part
                    del part  # not held while the next part is drawn: one part in memory, not two
            write_parts(parts(), os.fspath(path), header)
        return n

    def answer(self, k: int = 2, level: float = LEVEL):
        """The estimated counts of every ``k``-way marginal of the columns with their error bars,
        as a DataFrame with one row per cell: ``marginal`` (the columns, comma-separated),
        ``cell`` (their values or bins, ``column=value`` joined by ``; ``), ``count`` (the
        estimate the interval is built around: the measurement's, cut at 0, where the basis is
        ``measured``, else the model's), ``std_error``, ``lower`` and ``upper`` (an interval for
        the cell's true count at ``level``, holding ``count``), ``basis`` (``measured``: exact,
        from the noise of a measurement holding the cell; ``model bound``: AIM's bound on the
        model's error; ``none``: nothing bounds it, NaN) and ``model_count`` (the model's
        estimate, consistent across marginals); see :mod:`ektelo_pgm.uncertainty`."""
        self._fitted()
        import itertools

        pd = pandas_module()
        names = list(self.encoder.columns)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(names):
            gone = f"; the schema left out {len(self.left_out)} of {len(names) + len(self.left_out)}: its notes and " \
                "left_out say why" if self.left_out else ""
            raise InputError(f"k must be an integer from 1 to {len(names)} (the number of columns modelled{gone}), "
                             f"got {k!r}")
        labels = {name: col.labels() for name, col in self.encoder.columns.items()}
        rows = []
        for clique in itertools.combinations(names, int(k)):
            bars = self.error_bars.marginal(clique, level)
            estimate = bars.estimate
            for cell in np.ndindex(*bars.counts.shape):
                text = "; ".join(f"{a}={labels[a][i]}" for a, i in zip(clique, cell))
                bounded = not np.isnan(bars.lower[cell])
                rows.append((",".join(clique), text, float(estimate[cell]),
                             bars.std_error if bounded else math.nan, float(bars.lower[cell]),
                             float(bars.upper[cell]), bars.basis if bounded else "none",
                             float(bars.counts[cell])))
        return pd.DataFrame(rows, columns=["marginal", "cell", "count", "std_error", "lower", "upper", "basis",
                                           "model_count"])

    @property
    def spent(self) -> Fraction:
        """Exact total of the ledger's charges, in the budget's unit (:attr:`unit`)."""
        return sum((c.amount for c in self.ledger), Fraction(0))

    def settings(self) -> str:
        """The fit's mechanism, guarantee and schema, in words (a report's first line)."""
        self._fitted()
        chosen = " (auto)" if self.schema_share == schemas.AUTO else ""
        inferred = f"inferred with {float(self.schema_spent()):.3g} of the budget{chosen}"
        schema = "schema declared" if not self.schema_inferred else \
            f"schema declared, undeclared columns {inferred}" if self.schema_declared else f"schema {inferred}"
        return f"{self.mechanism}, {self.guarantee()}, {schema}"

    def guarantee(self) -> str:
        """The privacy guarantee of the fit, in words."""
        self._fitted()
        if self.unit == "epsilon":
            extra = f", delta {self._delta_share() * self.delta:g} for the schema" if self.schema_inferred else ""
            return f"epsilon {self.epsilon:g} (pure, substitute neighbours{extra})"
        per = "" if self.max_rows is None else f", {Person(self.max_rows)}"
        return f"({self.epsilon:g}, {self.delta:g})-DP (rho {float(self.total):.6g} zCDP{per})"

    # persistence -------------------------------------------------------------
    def save(self, path) -> None:
        """Write the fitted synthesizer to one ``.npz`` file (numpy arrays and JSON text, no
        pickle), atomically; ``.npz`` is appended to ``path`` if missing.  It holds what sampling
        more records needs, all of it released privately or declared: the settings, the schema,
        the ledger, the fitted estimate and what its error bars need (the noisy answers of its
        identity measurements, AIM's selection bound); no generator state (a loaded synthesizer
        samples with fresh randomness)."""
        self._fitted()
        estimate, arrays = self.estimate.to_state()
        bars, measured = self.error_bars.to_state()
        state = {
            "format": _FORMAT, "version": 1, "mechanism": self.mechanism, "epsilon": self.epsilon,
            "delta": self.delta, "schema_share": self.schema_share, "bins": self.bins, "sampling": self.sampling,
            "options": as_data(self.mechanism_options), "params": self.params,
            "encoder": self.encoder.to_dict(), "schema_inferred": self.schema_inferred,
            "schema_declared": self.schema_declared, "order": self.order,
            "drop": list(self.drop), "column_kinds": self.kinds, "other": self.other, "regenerate": list(self.regenerate),
            "public": list(self.public), "left_out": self.left_out, "thresholds": self.thresholds,
            "blank_records": self.blank_records, "total": str(self.total), "unit": self.unit,
            "ledger": [{"label": c.label, "amount": str(c.amount), "mechanism": c.mechanism,
                        "parameter": c.parameter} for c in self.ledger],
            "estimate": estimate, "error_bars": bars, "blankless": list(self.blankless),
            **({} if self.person is None else {"person": self.person, "max_rows": self.max_rows}),
        }
        path = os.fspath(path)
        path = path if path.endswith(".npz") else path + ".npz"
        with atomic_write(path, "wb") as f:
            np.savez(f, state=np.array(json.dumps(state)), **{f"estimate/{k}": v for k, v in arrays.items()},
                     **{f"measured/{k}": v for k, v in measured.items()})

    @classmethod
    def load(cls, path) -> "Synthesizer":
        """Read a synthesizer written by :meth:`save` (only arrays and JSON: no code runs); it
        samples with a fresh generator from the operating system's entropy."""
        with np.load(path, allow_pickle=False) as data:
            state = json.loads(str(data["state"]))
            arrays = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("estimate/")}
            measured = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("measured/")}
        if state.get("format") != _FORMAT or state.get("version") != 1:
            raise InputError(f"{path}: not a saved Synthesizer")
        synth = cls.__new__(cls)
        synth.mechanism, synth.epsilon, synth.delta = state["mechanism"], state["epsilon"], state["delta"]
        synth.schema_share, synth.bins, synth.progress = state["schema_share"], state["bins"], None
        synth.sampling = state.get("sampling", "sample")  # saved before the choice existed: i.i.d.
        synth.mechanism_options = state["options"]
        synth.params = state.get("params")  # saved before settings were saved as data: none
        synth.secure, (synth.fit_rng, synth.rng) = True, _generators(None)
        synth.encoder = TableEncoder.from_dict(state["encoder"])
        synth.schema_inferred = state["schema_inferred"]
        synth.schema_declared = state.get("schema_declared", not synth.schema_inferred)
        synth.order = state.get("order", list(synth.encoder.columns))  # saved before columns were regenerated
        synth.drop, synth.kinds = tuple(state.get("drop", ())), state.get("column_kinds", {})
        synth.other, synth.regenerate = state.get("other", schemas.OTHER), tuple(state.get("regenerate", ()))
        synth.public, synth.metadata = tuple(state.get("public", ())), None  # its effects are saved
        synth.person, synth.max_rows = state.get("person"), state.get("max_rows")  # saved before: per row
        synth.left_out, synth.thresholds = state.get("left_out", {}), state.get("thresholds", {})
        synth.blank_records = state.get("blank_records", 0.0)  # saved before it was counted: none noticed
        synth.total, synth.unit = Fraction(state["total"]), state["unit"]
        synth.ledger = [Charge(c["label"], Fraction(c["amount"]), c["mechanism"], c["parameter"])
                        for c in state["ledger"]]
        synth.estimate = Estimate.from_state(state["estimate"], arrays)
        synth.blankless = tuple(state.get("blankless", ()))  # saved before: every missing code drawn
        synth.error_bars = ErrorBars.from_state(synth.estimate, state.get("error_bars", {"measurements": []}),
                                                measured)  # saved before error bars: none
        return synth

    def __repr__(self) -> str:
        state = "unfitted" if self.estimate is None else f"fitted, {len(self.encoder.columns)} columns"
        return f"Synthesizer({self.mechanism!r}, epsilon={self.epsilon:g}, delta={self.delta:g}; {state})"
