"""The CSV dialect every reader of raw files uses (docs/privacy.md, "How files are read"): one
record per physical line, whatever a line holds (:func:`csv_fields` is the definition), read in
blocks of whole lines by a fast parser where it reads them as the definition does
(:func:`csv_frames`); a table's columns at a width that no single record decides
(:func:`csv_names`)."""
from __future__ import annotations

import csv
import io
import re
import warnings

from .errors import InputError

#: Characters of a CSV file read at a time (then up to the end of the line): a block's lines are
#: read together, by a fast parser where the block is plain (:func:`_plain`).
BLOCK = 1 << 20
#: Records among which a headerless CSV's width is the most common number of fields.
WIDTH_RECORDS = 1000
_QUOTED_STOP = re.compile(r'["\\]')
_BLANK = re.compile(r"^[ \t]+$", re.MULTILINE)


def csv_fields(line: str, sep: str) -> list[str]:
    """The fields of one physical line of a CSV file (its line break removed), the definition of
    the dialect (docs/privacy.md): fields end at ``sep``; spaces at the start of a field are
    skipped; a field starting with ``"`` is quoted: ``""`` and ``\\"`` in it are a quote, ``\\\\``
    a backslash, and it ends at the next lone quote, what follows up to ``sep`` being appended
    as it is, or at the end of the line; any other character (a quote inside an unquoted field, a
    backslash outside quotes, a CR, a NUL) is itself.  Trailing CRs are the line break's."""
    line = line.rstrip("\r")
    fields, i, n = [], 0, len(line)
    while True:
        while i < n and line[i] == " ":
            i += 1
        if i < n and line[i] == '"':
            parts, i = [], i + 1
            while True:
                stop = _QUOTED_STOP.search(line, i)
                if stop is None:  # no closing quote: the field ends with the line
                    parts.append(line[i:])
                    i = n
                    break
                j = stop.start()
                parts.append(line[i:j])
                if line[j] == "\\":
                    escaped = j + 1 < n and line[j + 1] in '"\\'
                    parts.append(line[j + 1] if escaped else "\\")
                    i = j + 2 if escaped else j + 1
                elif j + 1 < n and line[j + 1] == '"':
                    parts.append('"')
                    i = j + 2
                else:
                    i = j + 1
                    break
            end = line.find(sep, i)
            end = n if end < 0 else end
            parts.append(line[i:end])
            fields.append("".join(parts))
        else:
            end = line.find(sep, i)
            end = n if end < 0 else end
            fields.append(line[i:end])
        if end >= n:
            return fields
        i = end + len(sep)


def _lines_and_fields(text: str, sep: str) -> tuple[list[str], list[list[str]]]:
    """The physical lines of ``text`` (whole lines, each ending in a LF or CRLF but maybe the
    last; line breaks removed) and the :func:`csv_fields` of each.  Python's csv module reads
    them, in C, where it reads them as :func:`csv_fields` does: no backslash, no CR but a line
    break's, no quote left open running into the next line (checked); else each line is read by
    :func:`csv_fields`."""
    text = text.replace("\r\n", "\n") if "\r" in text else text
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if len(sep) == 1 and sep != " " and "\\" not in text and "\r" not in text:
        try:
            records = list(csv.reader(lines, delimiter=sep, skipinitialspace=True, strict=False))
            if len(records) == len(lines):  # else a quote left open ran into the next line
                return lines, records
        except csv.Error:  # a field past the csv module's size limit
            pass
    return lines, [csv_fields(line, sep) for line in lines]


def csv_records(text: str, sep: str, width: int) -> list[list[str]]:
    """The records of ``text`` (whole lines), each of ``width`` fields: the :func:`csv_fields`
    of each line (:func:`_lines_and_fields`), cut to ``width`` or padded with empty fields; a line
    of nothing but spaces (or empty) is no record."""
    lines, records = _lines_and_fields(text, sep)
    if width > 1 and set(map(len, records)) == {width}:
        return records
    return [r[:width] if len(r) >= width else r + [""] * (width - len(r))
            for r, line in zip(records, lines) if len(r) > 1 or not _blank(line)]


def _plain(text: str, sep: str) -> bool:
    """Whether pandas' C parser reads ``text`` (whole lines, LF line breaks) as :func:`csv_records`
    does, quotes and escapes aside: a separator of one character but a space; no quote, backslash,
    CR, NUL, byte-order mark, tab (but as the separator) or line of spaces only; a line with more
    fields than the width is seen by it."""
    return (len(sep) == 1 and sep != " " and not any(c in text for c in '"\\\r\x00\ufeff') and (sep == "\t" or "\t" not in text)
            and _BLANK.search(text) is None)


def block_frame(text: str, names: list[str], sep: str):
    """The records of ``text`` (whole lines) as a DataFrame of text columns ``names``
    (:func:`csv_records`): by pandas' C parser where the text is :func:`_plain` and no line has
    more fields than ``names``, else by :func:`csv_records`."""
    import pandas as pd
    text = text.replace("\r\n", "\n") if "\r" in text else text
    if _plain(text, sep):
        try:
            with warnings.catch_warnings():  # a first line with more fields only warns: cut below
                warnings.simplefilter("error", pd.errors.ParserWarning)
                return pd.read_csv(io.StringIO(text), sep=sep, header=None, names=names, index_col=False,
                                   dtype=str, keep_default_na=False, skipinitialspace=True,
                                   quoting=csv.QUOTE_NONE, skip_blank_lines=True, engine="c")
        except (pd.errors.ParserError, pd.errors.ParserWarning, pd.errors.EmptyDataError):
            pass  # a line with more fields than names (cut below), or no line
    records = csv_records(text, sep, len(names))
    columns = list(zip(*records)) if records else [()] * len(names)
    return pd.DataFrame({name: pd.Series(column, dtype=str) for name, column in zip(names, columns)},
                        columns=names)


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


def csv_frames(path: str, options: dict, names: list[str], rows: int | None = None):
    """The records of the CSV file ``path`` (its header line left out where it has one) as
    DataFrames of the text columns ``names``, ``rows`` records each but the last (None: one
    frame per block of the file)."""
    import pandas as pd
    skip = _header(path, options["sep"], options["encoding"])[1] if options["header"] else 0
    held, count = [], 0
    for block in _csv_blocks(path, options["encoding"], skip):
        frame = block_frame(block, names, options["sep"])
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
    records (column_1, column_2, ...).  Repeated names are refused, by name."""
    sep, encoding, names = options["sep"], options["encoding"], options["names"]
    if options["header"]:
        for path in paths:
            found = _header(path, sep, encoding)[0]
            if names is None:
                names = found
            elif found != names:
                raise InputError(f"{path}: its columns differ from those of {paths[0]}")
    elif names is None:
        widths = []
        for path in paths:
            for block in _csv_blocks(path, encoding):
                lines, records = _lines_and_fields(block, sep)
                widths += [len(r) for r, line in zip(records, lines) if len(r) > 1 or not _blank(line)]
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
