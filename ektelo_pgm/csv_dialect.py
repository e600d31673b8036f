"""The CSV dialect every reader of raw files uses (docs/privacy.md, "How files are read";
docs/privacy-details.md gives the argument).  Two readings, chosen by the steward, never by the
data:

- **Lines** (the default): a record is one physical line, whatever it holds, so that what one
  record holds changes only that record (issue 52): a quote left open ends with its line.
- **Quoted line breaks** (``quoted_newlines``, ``--quoted-newlines``: the steward's word that a
  CSV writer wrote the file, quoting every field that holds a quote, the separator or a line
  break, and doubling every quote inside it): a quoted field may hold line breaks, so a record
  runs to the first line break outside quotes, within :data:`SPAN_LINES` lines and
  :data:`SPAN_CHARS` characters.  Inside quotes only ``""`` is an escape (a backslash is itself),
  so no value a writer wrote can open a quote that it does not close: a writer's file is a
  function of each record's values alone and this reading is its exact inverse, so tables one
  record apart are read one record apart.  Where the claim fails (a quote left open), the bound
  holds the damage: a record that does not close within it is its first line alone, and the
  next record starts at the line after; a line can then take in at most ``SPAN_LINES - 1``
  lines after it (the guarantee rests on the claim, as ``--public-categories`` rests on its).
  A writer's record past the bound is read so too, line by line: the guarantee is exact for
  records within it (docs/privacy-details.md states the neighbouring relation).

In both, a record that leaves a quoted field open at its end (how the first line of a record
that spans lines reads as a line of its own) is read as a record with every field missing, never
as values in the wrong columns: the damage shows in what is released (rows blank in every
column), and no exact count of such records is shown (it would tell whether one record is there),
only the schema's noisy count of the records blank in every column
(:func:`~ektelo_pgm.schema.learn`'s ``found``).
A quote inside an unquoted field (``5'11"``) is itself, as every CSV reader reads it.

:func:`csv_fields`, :func:`record_fields` and :func:`defined_records` are the definition (the
fields of a line, of a record, the records of lines); :func:`csv_records` gives the records of a
text, read by fast parsers where they read it as the definition does (checked);
:func:`csv_frames` reads a file in blocks of whole records; :func:`csv_names` gives a table's
columns at a width that no single record decides."""
from __future__ import annotations

import csv
import io
import re
import warnings

from .errors import InputError

#: Characters of a CSV file read at a time (then up to the end of the line): a block's records are
#: read together, by a fast parser where the block is plain (:func:`_plain`).
BLOCK = 1 << 20
#: Records among which a headerless CSV's width is the most common number of fields.
WIDTH_RECORDS = 1000
#: The most lines, and characters (line breaks included), of one record read with quoted line
#: breaks: a record that does not close within them is its first line alone.
SPAN_LINES = 100
SPAN_CHARS = 1 << 20
_STOPS = {True: re.compile(r'["\\]'), False: re.compile('"')}  # in a quoted field, with escapes or not
_BLANK = re.compile(r"^[ \t]+$", re.MULTILINE)


def _scan(text: str, sep: str, escapes: bool) -> tuple[list[str], bool]:
    """``(fields, open)`` of one record's text (its trailing CRs removed; line breaks inside it
    are characters): the fields as :func:`csv_fields` defines them (``escapes``: ``\\"`` and
    ``\\\\`` are escapes in a quoted field, else only ``""``); whether a quoted field is left open
    at the end."""
    fields, i, n, stop_at = [], 0, len(text), _STOPS[escapes]
    left_open = False
    while True:
        while i < n and text[i] == " ":
            i += 1
        if i < n and text[i] == '"':
            parts, i = [], i + 1
            while True:
                stop = stop_at.search(text, i)
                if stop is None:  # no closing quote: the field ends with the text
                    parts.append(text[i:])
                    i, left_open = n, True
                    break
                j = stop.start()
                parts.append(text[i:j])
                if text[j] == "\\":
                    escaped = j + 1 < n and text[j + 1] in '"\\'
                    parts.append(text[j + 1] if escaped else "\\")
                    i = j + 2 if escaped else j + 1
                elif j + 1 < n and text[j + 1] == '"':
                    parts.append('"')
                    i = j + 2
                else:
                    i = j + 1
                    break
            end = text.find(sep, i)
            end = n if end < 0 else end
            parts.append(text[i:end])
            fields.append("".join(parts))
        else:
            end = text.find(sep, i)
            end = n if end < 0 else end
            fields.append(text[i:end])
        if end >= n:
            return fields, left_open
        i = end + len(sep)


def csv_fields(line: str, sep: str) -> list[str]:
    """The fields of one physical line of a CSV file (its line break removed), the definition of
    the dialect (docs/privacy.md): fields end at ``sep``; spaces at the start of a field are
    skipped; a field starting with ``"`` is quoted: ``""`` and ``\\"`` in it are a quote, ``\\\\``
    a backslash, and it ends at the next lone quote, what follows up to ``sep`` being appended
    as it is, or at the end of the line; any other character (a quote inside an unquoted field, a
    backslash outside quotes, a CR, a NUL) is itself.  Trailing CRs are the line break's.  (With
    quoted line breaks a backslash is itself in a quoted field too.)"""
    return _scan(line.rstrip("\r"), sep, True)[0]


def record_fields(text: str, sep: str, quoted: bool = False) -> list[str] | None:
    """The fields of one record's text (its line break removed; a line, or with ``quoted`` line
    breaks the lines of a record, the line breaks between them kept), as :func:`csv_fields`
    reads a line (with ``quoted``, a backslash is itself in a quoted field too), or None where a
    quoted field is left open at its end.  Trailing CRs are the line break's."""
    fields, left_open = _scan(text.rstrip("\r"), sep, not quoted)
    return None if left_open else fields


def defined_records(lines: list[str], sep: str, quoted: bool = False, final: bool = True) -> tuple[list, int]:
    """``(records, used)``: the records of ``lines`` (physical lines, LF removed) by the
    definition, each its :func:`record_fields`, blank lines none; ``used``: the lines read, short
    of a record that may run past ``lines`` (unless ``final``).  Without ``quoted`` a record is a
    line; with it, a record takes in lines while a quoted field is open at its end, up to
    :data:`SPAN_LINES` lines and :data:`SPAN_CHARS` characters, else it is its first line alone."""
    records, s, n = [], 0, len(lines)
    while s < n:
        k, size = 1, len(lines[s])
        left_open = quoted and '"' in lines[s] and _scan(lines[s].rstrip("\r"), sep, False)[1]
        while left_open:  # a line without a quote leaves a quoted field open, read or not
            if s + k == n and not final:
                return records, s
            if s + k == n or k == SPAN_LINES or size + 1 + len(lines[s + k]) > SPAN_CHARS:
                k = 1  # no close within the bound: the first line alone, its quote left open
                break
            size, k = size + 1 + len(lines[s + k]), k + 1
            left_open = '"' not in lines[s + k - 1] or _scan("\n".join(lines[s:s + k]).rstrip("\r"), sep, False)[1]
        fields = record_fields("\n".join(lines[s:s + k]), sep, quoted)
        if k > 1 or fields is None or len(fields) > 1 or not _blank(lines[s]):
            records.append(fields)
        s += k
    return records, n


def _fast(lines: list[str], text: str, sep: str, quoted: bool) -> list | None:
    """The records of ``lines`` as :func:`defined_records` reads them, by Python's csv module, in
    C, where it reads them as the definition does: a separator of one character but a space, no
    CR, without quoted line breaks no backslash, with them every record closed within the lines
    and the bound; else None.  Without quoted line breaks a line of an odd number of quotes is
    read by the definition (a stray quote, or a field left open); a field left open on a line of
    an even number joins the csv module's record to the next line (checked).  With them the csv
    module raises where a field is left open at the end of the lines (strict; it raises at text
    after a closing quote too, which the definition reads)."""
    if len(sep) != 1 or sep == " " or "\r" in text or (not quoted and "\\" in text):
        return None
    counts = [line.count('"') for line in lines]
    records = []
    try:
        if not quoted:
            even = [line for line, c in zip(lines, counts) if c % 2 == 0]
            read = iter(csv.reader(even, delimiter=sep, skipinitialspace=True, strict=True))
            records = [record_fields(line, sep) if c % 2 else next(read) for line, c in zip(lines, counts)]
            if next(read, None) is not None:  # a quote left open ran into the next line
                return None
            return [r for r, line in zip(records, lines) if r is None or len(r) > 1 or not _blank(line)]
        reader = csv.reader((line + "\n" for line in lines), delimiter=sep, skipinitialspace=True, strict=True)
        start = 0
        for fields in reader:
            end = reader.line_num
            if end - start > SPAN_LINES or sum(map(len, lines[start:end])) + end - start - 1 > SPAN_CHARS:
                return None
            if end - start > 1 or len(fields) > 1 or not _blank(lines[start]):
                records.append(fields)
            start = end
    except (csv.Error, StopIteration):  # open at the end, text after a closing quote, a field too long
        return None
    return records


def _records(text: str, sep: str, quoted: bool, final: bool) -> tuple[list, str]:
    """``(records, rest)``: the records of ``text`` (whole lines), each its fields or None where
    it leaves a quoted field open (:func:`defined_records`), by :func:`_fast` where it can; ``rest``: the text
    of a last record that may run past ``text`` (quoted line breaks, unless ``final``)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    records = _fast(lines, text, sep, quoted)
    if records is not None:
        return records, ""
    records, used = defined_records(lines, sep, quoted, final)
    return records, "".join(line + "\n" for line in lines[used:])


def _normal(text: str, quoted: bool) -> str:
    """``text`` with its CRLF line breaks as LF, but where a quoted field may hold a CR."""
    return text.replace("\r\n", "\n") if "\r" in text and not (quoted and '"' in text) else text


def _sized(records: list, width: int) -> list[list[str]]:
    """``records`` cut to ``width`` fields or padded with empty ones; one left open (None)
    ``width`` empty fields."""
    if width > 1 and all(r is not None and len(r) == width for r in records):
        return records
    return [[""] * width if r is None else r[:width] if len(r) >= width else r + [""] * (width - len(r))
            for r in records]


def csv_records(text: str, sep: str, width: int, quoted: bool = False) -> list[list[str]]:
    """The records of ``text`` (whole records), each of ``width`` fields: each line's
    :func:`csv_fields` (with ``quoted`` line breaks, each record's), cut to ``width`` or padded
    with empty fields; a record left open, ``width`` empty fields; a line of
    nothing but spaces (or empty) is no record."""
    return _sized(_records(_normal(text, quoted), sep, quoted, True)[0], width)


def _plain(text: str, sep: str) -> bool:
    """Whether pandas' C parser reads ``text`` (whole lines, LF line breaks) as :func:`csv_records`
    does, quotes and escapes aside: a separator of one character but a space; no quote, backslash,
    CR, NUL, byte-order mark, tab (but as the separator) or line of spaces only; a line with more
    fields than the width is seen by it."""
    return (len(sep) == 1 and sep != " " and not any(c in text for c in '"\\\r\x00\ufeff') and (sep == "\t" or "\t" not in text)
            and _BLANK.search(text) is None)


def _frame(text: str, names: list[str], sep: str, quoted: bool, final: bool):
    """``(frame, rest)``: the records of ``text`` as a DataFrame of text columns ``names``, by
    pandas' C parser where the text is :func:`_plain` and no line has more fields than
    ``names``, else by :func:`_records`; ``rest`` as there."""
    import pandas as pd
    text = _normal(text, quoted)
    if _plain(text, sep):
        try:
            with warnings.catch_warnings():  # a first line with more fields only warns: cut below
                warnings.simplefilter("error", pd.errors.ParserWarning)
                return pd.read_csv(io.StringIO(text), sep=sep, header=None, names=names, index_col=False,
                                   dtype=str, keep_default_na=False, skipinitialspace=True,
                                   quoting=csv.QUOTE_NONE, skip_blank_lines=True, engine="c"), ""
        except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError):
            pass  # a line with more fields than names (cut below), or no line
    records, rest = _records(text, sep, quoted, final)
    records = _sized(records, len(names))
    columns = list(zip(*records)) if records else [()] * len(names)
    return pd.DataFrame({name: pd.Series(column, dtype=str) for name, column in zip(names, columns)},
                        columns=names), rest


def block_frame(text: str, names: list[str], sep: str, quoted: bool = False):
    """The records of ``text`` (whole records) as a DataFrame of text columns ``names``
    (:func:`csv_records`)."""
    return _frame(text, names, sep, quoted, True)[0]


def _csv_blocks(path: str, encoding: str, skip: int = 0):
    """The text of the CSV file ``path`` in blocks of whole lines (about :data:`BLOCK` characters
    each), its first ``skip`` lines left out; invalid bytes replaced, a byte-order mark at the
    start dropped.  Lines end at LF only (a CR is a character of the line until then)."""
    with open(path, encoding=encoding, errors="replace", newline="\n") as f:
        first = True
        for _ in range(skip):
            f.readline()
            first = False
        while True:
            block = f.read(BLOCK)
            if not block:
                return
            if first and block.startswith("\ufeff"):
                block = block[1:]
            first = False
            yield block + ("" if block.endswith("\n") else f.readline())


def _decided(path: str, encoding: str, skip: int, read):
    """``read(text, final)[0]`` of each block of the CSV file ``path`` (:func:`_csv_blocks`),
    the text of a record that may run past a block (``read``'s ``rest``) read again with the
    next one: blocks of whole records, wherever the blocks end."""
    rest = ""
    for block in _csv_blocks(path, encoding, skip):
        result, rest = read(rest + block, False)
        yield result
    if rest:
        yield read(rest, True)[0]


def csv_frames(path: str, options: dict, names: list[str], rows: int | None = None):
    """The records of the CSV file ``path`` (its header line left out where it has one) as
    DataFrames of the text columns ``names``, ``rows`` records each but the last (None: one
    frame per block of the file)."""
    import pandas as pd
    sep, quoted = options["sep"], options["quoted_newlines"]
    skip = _header(path, sep, options["encoding"])[1] if options["header"] else 0
    held, count = [], 0
    for frame in _decided(path, options["encoding"], skip, lambda text, final: _frame(text, names, sep, quoted, final)):
        if rows is None:
            yield frame
            continue
        held.append(frame)
        count += len(frame)
        while count >= rows:
            whole = pd.concat(held, ignore_index=True) if len(held) > 1 else held[0]
            yield whole.iloc[:rows].reset_index(drop=True)
            held, count = [whole.iloc[rows:].reset_index(drop=True)], count - rows
    if rows is not None and count:
        yield pd.concat(held, ignore_index=True)


def _header(path: str, sep: str, encoding: str) -> tuple[list[str], int]:
    """``(names, lines)``: the fields of the first line of the CSV file ``path`` that is not blank
    (the header line) and the number of lines up to it, itself included."""
    with open(path, encoding=encoding, errors="replace", newline="\n") as f:
        for k, line in enumerate(f, 1):
            line = line[1:] if k == 1 and line.startswith("\ufeff") else line
            if not _blank(line.rstrip("\n")):
                return csv_fields(line.rstrip("\n"), sep), k
    return [], 0


def _blank(line: str) -> bool:
    """Whether a physical line (its LF removed) is no record: nothing but spaces before its
    trailing CRs."""
    return not line.rstrip("\r").strip(" ")


def csv_names(paths: list[str], options: dict) -> list[str]:
    """The columns of a CSV table of one or more files ``paths``, at a width that no single
    record decides: the header line's (each file's, which must agree), the ``names`` option's,
    or else the most common number of fields among the table's first :data:`WIDTH_RECORDS`
    records whose quotes pair (column_1, column_2, ...).  Repeated names are refused, by name."""
    sep, encoding, names = options["sep"], options["encoding"], options["names"]
    if options["header"]:
        for path in paths:
            found = _header(path, sep, encoding)[0]
            if names is None:
                names = found
            elif found != names:
                raise InputError(f"{path}: its columns differ from those of {paths[0]}")
    elif names is None:
        widths, quoted = [], options["quoted_newlines"]
        for path in paths:
            for records in _decided(path, encoding, 0,
                                    lambda text, final: _records(_normal(text, quoted), sep, quoted, final)):
                widths += [len(r) for r in records if r is not None]
                if len(widths) >= WIDTH_RECORDS:
                    break
            if len(widths) >= WIDTH_RECORDS:
                break
        widths = widths[:WIDTH_RECORDS]
        width = max(set(widths), key=lambda w: (widths.count(w), -w)) if widths else 1
        names = [f"column_{i + 1}" for i in range(width)]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"{paths[0]}: the column names {repeated} repeat; rename them (or say --names)")
    return list(names)
