"""What a schema does to each column's values, in words: one note per column that the command
line prints (:func:`column_changes`), read from the schema alone (post-processing of its release),
one per reason columns were left out for (:func:`left_out_reasons`), and one about the records
blank in every column where their noisy count shows them (:func:`blank_records`)."""
from __future__ import annotations

from ..columns import json_value
from ..times import ClockColumn, time_text
from .kinds import names_codes


def column_changes(column, threshold: float | None, fixed: bool, blankless: bool = False) -> list[str]:
    """What the schema does to a column's values, from the schema alone (its kind, range,
    categories, other and missing codes; ``threshold``, the release threshold of a column with
    an other code; ``fixed``, whether the user gave its kind; ``blankless``, whether its missing
    code is drawn nowhere, :attr:`~ektelo_pgm.synthesizer.Synthesizer.blankless`): numbers written with symbols read
    in a format, numbers read as categories by the column's name, numbers clipped to the range or
    to the nearest category, whole numbers written in multiples of a unit, times on the first day
    of a month or year, times' hours of the day
    and days of the week learnt apart, rare values written as the other label, blanks kept or not
    (and where not, what a blank and a value not released are written as)."""
    changes = []
    if column.kind == "numeric":
        if column.number_format is not None:
            changes.append(f"numbers written with symbols read and written as {column.number_format} writes 1234.5")
        ends = [str(json_value(e)) if column.time_format is None else time_text(e, column.time_format)
                for e in (column.edges[0], column.largest)]
        values = "times" if column.time_format else "numbers"
        changes.append(f"every {values[:-1]} written as {ends[0]}" if ends[0] == ends[1] else
                       f"{values} clipped to [{ends[0]}, {ends[1]}]")
        if column.unit is not None and column.time_format is None:
            changes.append(f"written in multiples of {column.unit}")
        if column.calendar is not None:
            changes.append(f"written on the first day of a {column.calendar}")
        clocks = ClockColumn.of(column)
        if clocks:
            changes.append(f"its {' and '.join(c.meaning for c in clocks)} learnt as "
                           f"{'a column' if len(clocks) == 1 else 'columns'} of their own")
    else:
        numbers = [c for c in column.categories if isinstance(c, (int, float))]
        if numbers and not fixed and names_codes(column.name):
            changes.append("number-like codes read as categories (--numeric to bin them as numbers)")
        if column.other is not None and threshold is not None:
            changes.append(f"categories held by fewer than about {threshold:.0f} records (the release threshold at "
                           f"this budget) are written as {column.other!r}; --public-categories keeps them if they are "
                           "public")
        elif column.other is not None:
            changes.append(f"values outside its {len(column.categories)} categories are written as {column.other!r}")
        elif numbers and not column.missing:
            lo, hi = min(numbers), max(numbers)
            changes.append(f"every number written as {lo}" if lo == hi else
                           f"numbers clipped to [{lo}, {hi}], each written as the nearest of its {len(numbers)} values")
    if column.missing:
        changes.append("no blanks drawn: the mechanism's measurements do not show them beyond its noise" if blankless
                       else "blanks kept")
        if column.kind == "categorical" and column.fallback is not None:
            changes.append(f"a value too rare to release would be written as {json_value(column.fallback)!r}")
    elif column.kind == "numeric":
        where = "its first bin" if column.fallback is None else "the bin of its median"
        label = column.labels()[column.fallback_code]
        changes.append(f"no blanks: a blank would be written in {where}, {label}" if label[0] in "[(" else
                       f"no blanks: a blank would be written as {label}")
    else:
        rare = "" if column.other is not None else ", or a value too rare to release,"
        fallback = json_value(column.categories[column.fallback_code])
        changes.append(f"no blanks: a blank{rare} would be written as {fallback!r}")
    return changes


def left_out_reasons(left_out: dict) -> list[str]:
    """One line per reason in ``left_out`` (``{column: "column 'x': why"}``), naming every column
    left out for it, in the order first seen: a wide table whose columns are all too rare to
    release reads as one reason, not one paragraph per column."""
    columns = {}
    for name, why in left_out.items():
        columns.setdefault(why.removeprefix(f"column {name!r}: "), []).append(name)
    return [f"column {names[0]!r}: {why}" if len(names) == 1 else
            f"{len(names)} columns ({', '.join(map(repr, names))}): {why}" for why, names in columns.items()]


def blank_records(count: float, lines: bool) -> str:
    """The note on ``count`` records blank in every column (a noisy count, :func:`~.table.learn`'s
    ``found``); ``lines``: whether the table is a CSV read line by line, where the first line of a
    record whose quoted field holds a line break reads so, and its other lines as records of
    their own (:mod:`~ektelo_pgm.csv_dialect`)."""
    note = f"about {count:,.0f} records (a noisy count) are blank in every column"
    if lines:
        note += (": a CSV read line by line (the default) reads so the first line of a record whose quoted field holds "
                 "a line break, and its other lines as records of their own; if the file's fields hold line breaks, "
                 "read it with --quoted-newlines")
    return note
