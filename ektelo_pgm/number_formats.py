"""Numbers written with symbols as text: the formats a column of such numbers is read in
(NUMBER_FORMATS: a currency sign, a percent sign, thousands grouped, a decimal comma), the first
format that reads each value (:func:`number_formats`), values read as numbers (:func:`as_numbers`;
in any format, of times too: :func:`read_numbers`; each in the first format that reads it:
:func:`as_written`), the decimals a number is written with (:func:`decimals_of`; a float32's: of the
decimal it stores) and numbers written back (:func:`number_texts`; plain numbers whose whole ones
are written without a point: :func:`whole_as_ints`).

A format is named by how it writes one thousand two hundred thirty-four and a half: ``"$1,234.5"``
groups thousands with commas after a dollar sign; ``"1.234,5 €"`` groups them with points (or
spaces) before a decimal comma and a euro sign.  It reads a value whole, with or without its
signs, a minus before or after a currency sign, or an accounting negative in parentheses
(``($960.92)``); :func:`number_formats` asks for the signs, so that each value counts for one
format only (the first: ``12,435`` is twelve thousand and some), :func:`reads` says which
counts a format reads and :func:`most_read` which format reads the most of a column's."""
from __future__ import annotations

import functools
import re

import numpy as np

from .table_io import canonical_value, pandas_module

#: The formats numbers written with symbols are read in, first those with commas grouping
#: thousands (a value both read, ``12,435``, is twelve thousand), then those with decimal commas.
NUMBER_FORMATS = ("1,234.5", "$1,234.5", "€1,234.5", "£1,234.5", "¥1,234.5", "1,234.5%", "1.234,5", "1.234,5 €",
                  "€1.234,5", "1.234,5%")
#: Significant digits at most of a decimal that :func:`shortest_text` reads off a number stored as a
#: float32: a number of more digits whose single-precision rounding is written with this many or
#: fewer is that decimal (C's FLT_DIG: every decimal of 6 digits survives a trip through a float32).
SINGLE_DIGITS = 6
#: Magnitudes (the least normal float32 and the largest) between which a number has a float32
#: rounding of 24 significant bits.
SINGLE_RANGE = (float(np.finfo(np.float32).smallest_normal), float(np.finfo(np.float32).max))
#: Which counts of :func:`number_formats` hold fractions (the second of its three runs); the
#: others hold whole numbers.
FRACTIONS = np.arange(3 * len(NUMBER_FORMATS)) // len(NUMBER_FORMATS) == 1
FRACTIONS.flags.writeable = False
_BODIES = {"1,234.5": r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+",
           "1.234,5": r"(?:\d{1,3}(?:[. \u00a0]\d{3})+|\d+)(?:,\d+)?|,\d+"}
#: What every value some format reads matches (signs, then digits and separators, then signs):
#: text that does not is read by none, without trying each.
_ANY = re.compile(r"[-+(\s$€£¥]*[\d.,][\d., \u00a0]*[\s%€)]*")


@functools.lru_cache(maxsize=None)
def _parts(fmt: str) -> tuple:
    """``(convention, prefix, suffix)`` of a number format: ``"1,234.5"`` or ``"1.234,5"``, and
    the signs written before and after the number."""
    convention = "1,234.5" if "1,234.5" in fmt else "1.234,5"
    prefix, suffix = fmt.split(convention)
    return convention, prefix, suffix


@functools.lru_cache(maxsize=None)
def _pattern(fmt: str, signs: bool) -> re.Pattern:
    """The pattern of a value in ``fmt``: its signs required (``signs``) or optional."""
    convention, prefix, suffix = _parts(fmt)
    optional = "" if signs else "?"
    prefix = f"(?:{re.escape(prefix.strip())}\\s*){optional}" if prefix else ""
    suffix = f"(?:\\s*{re.escape(suffix.strip())}){optional}" if suffix else ""
    return re.compile(rf"(?P<open>\()?(?P<sign>[-+]?){prefix}(?P<inner>\()?(?P<sign2>[-+]?)"
                      rf"(?P<body>{_BODIES[convention]}){suffix}(?P<close>\))?")


def _read(text: str, fmt: str, signs: bool):
    """The number ``text`` writes in ``fmt`` (an int for a whole number, else a float), or None (text
    that is not one, or a code with leading zeros, :data:`~ektelo_pgm.table_io.LEADING_ZERO`)."""
    m = _pattern(fmt, signs).fullmatch(text)
    if m is None or bool(m["open"] or m["inner"]) != bool(m["close"]) or (m["open"] and m["inner"]) \
            or (m["sign"] and m["sign2"]) or (m["close"] and (m["sign"] or m["sign2"])):
        return None
    body = m["body"]
    if _parts(fmt)[0] == "1,234.5":
        body = body.replace(",", "")
    else:
        body = re.sub(r"[. \u00a0]", "", body).replace(",", ".")
    number = canonical_value(body)
    if isinstance(number, str):  # a code written with leading zeros (``"01"``): not a number
        return None
    return -number if m["close"] or "-" in (m["sign"], m["sign2"]) else number


def _first_reads(values: np.ndarray) -> tuple:
    """``(texts, codes, uniques, first, numbers)``: which of :func:`~ektelo_pgm.table_io.canonical`
    ``values`` are text, each one's index among the distinct texts ``uniques``, and for each of
    those the index in NUMBER_FORMATS of the first format that reads it whole with its signs (-1:
    none) and the number it reads (None: none)."""
    pd = pandas_module()
    texts = np.array([isinstance(v, str) for v in values], dtype=bool)
    codes, uniques = pd.factorize(pd.Series(values[texts], dtype=object))
    first, numbers = np.full(len(uniques), -1, dtype=np.int64), np.full(len(uniques), None, dtype=object)
    for i, u in enumerate(uniques):
        for k, fmt in enumerate(NUMBER_FORMATS if _ANY.fullmatch(u) else ()):
            numbers[i] = _read(u, fmt, signs=True)
            if numbers[i] is not None:
                first[i] = k
                break
    return texts, codes, uniques, first, numbers


def number_formats(values: np.ndarray) -> np.ndarray:
    """For each :func:`~ektelo_pgm.table_io.canonical` value that a format of NUMBER_FORMATS reads
    whole with its signs (the first, ``k`` of ``F``), the count it adds one to (-1: none, or not
    text): ``k`` for a whole number written with separators, ``F + k`` for a fraction, ``2F + k``
    for a whole number in digits alone (``€5``, ``5%``: read alike with a decimal point or comma,
    :func:`reads`).  Each distinct text is read once."""
    texts, codes, uniques, first, numbers = _first_reads(values)
    formats = len(NUMBER_FORMATS)
    whole = np.array([isinstance(x, int) for x in numbers], dtype=bool)
    bare = np.array([re.search(r"\d\D+\d", u) is None for u in uniques], dtype=bool)
    slot = np.where(first < 0, -1, first + formats * np.where(whole, 2 * bare, 1))
    found = np.full(len(values), -1, dtype=np.int64)
    found[texts] = slot[codes]
    return found


@functools.lru_cache(maxsize=None)
def reads(fmt: str) -> np.ndarray:
    """Which counts of :func:`number_formats` the number format ``fmt`` reads (a bool per count):
    its own, those of its convention without signs, and the whole numbers in digits alone with
    its signs that the other convention counts (``€5`` is five with a decimal comma too)."""
    convention, prefix, suffix = _parts(fmt)
    own = np.array([f == fmt or f == convention for f in NUMBER_FORMATS], dtype=bool)
    alike = np.array([_parts(f)[1:] == (prefix, suffix) for f in NUMBER_FORMATS], dtype=bool)
    read = np.concatenate([own, own, own | alike])
    read.flags.writeable = False  # one array per format, shared by every caller
    return read


def most_read(counts: np.ndarray) -> str | None:
    """The format of NUMBER_FORMATS that reads the most of ``counts`` (one per count of
    :func:`number_formats`; the first of those reading as many), or None where they hold none."""
    held = np.array([counts[reads(fmt)].sum() for fmt in NUMBER_FORMATS])
    return NUMBER_FORMATS[int(np.argmax(held))] if held.max() > 0 else None


def as_written(values: np.ndarray) -> np.ndarray:
    """:func:`~ektelo_pgm.table_io.canonical` values with each text that a format reads with its
    signs read as its number (in the first such format, as :func:`number_formats`): how a column
    declared numeric, whose format nothing released, reads ``$1,234.50``."""
    texts, codes, _, _, numbers = _first_reads(values)
    read = numbers[codes]
    out = values.copy()
    out[np.flatnonzero(texts)[read != None]] = read[read != None]  # noqa: E711 (elementwise)
    return out


def as_numbers(values: np.ndarray, fmt: str) -> np.ndarray:
    """:func:`~ektelo_pgm.table_io.canonical` values read in the number format ``fmt``: numbers
    as they are, text that it reads whole as its number (an int if whole, else a float), None
    for anything else."""
    pd = pandas_module()
    out = np.array([v if isinstance(v, (int, float)) else None for v in values], dtype=object)
    text = np.array([isinstance(v, str) for v in values], dtype=bool)
    if text.any():
        codes, uniques = pd.factorize(pd.Series(values[text], dtype=object))
        read = np.empty(len(uniques), dtype=object)
        read[:] = [_read(u, fmt, signs=False) for u in uniques]
        out[text] = read[codes]
    return out


def read_numbers(values: np.ndarray, fmt: str) -> np.ndarray:
    """:func:`~ektelo_pgm.table_io.canonical` values read in ``fmt``: a number format's numbers
    (:func:`as_numbers`), or a time format's whole seconds (:func:`~ektelo_pgm.times.as_times`)."""
    from .times import as_times

    return as_numbers(values, fmt) if fmt in NUMBER_FORMATS else as_times(values, fmt)


def decimals_of(x: float) -> int:
    """Decimals of :func:`shortest_text` of the number ``x`` (``2.5``: 1, ``1e-05``: 5, ``3e+20``: 0,
    ``3.200000047683716``: 1)."""
    mantissa, _, exponent = shortest_text(x).partition("e")
    fraction = mantissa.partition(".")[2].rstrip("0")
    return max(len(fraction) - int(exponent or 0), 0)


def shortest_text(x: float) -> str:
    """The shortest text that reads back as the number ``x``, or as ``x`` rounded to single precision
    where that text has at most ``SINGLE_DIGITS`` significant digits: a short decimal stored as a
    float32 (Stata's default storage type; a float32 column of Parquet or NumPy) reads back widened
    (``3.200000047683716``) or printed to a float32's 8 digits (``3.4000002``), and is that decimal
    (``3.2``, ``3.4``).  Read from the number alone."""
    text = repr(float(x))
    if _significant(text) > SINGLE_DIGITS and SINGLE_RANGE[0] <= abs(x) < SINGLE_RANGE[1]:
        single = str(np.float32(x))
        if _significant(single) <= SINGLE_DIGITS:
            return single
    return text


def _significant(text: str) -> int:
    """Significant digits of a number's shortest text (``0.0250``: 3, ``3e+20``: 1, ``1200.0``: 2)."""
    digits = text.partition("e")[0].replace("-", "").replace(".", "").strip("0")
    return max(len(digits), 1)


def number_texts(numbers: np.ndarray, fmt: str, decimals: int | None) -> np.ndarray:
    """Numbers (a float array, or an object array of ints) written in the number format ``fmt``,
    each fraction with ``decimals`` decimals (None: the fewest that read back), a minus before the
    signs (``-$960.92``): an object array of str.  With a decimal comma, thousands are grouped
    only before a fraction: a whole ``1.234`` would read as a plain number, 1.234."""
    convention, prefix, suffix = _parts(fmt)

    def text(x) -> str:
        if isinstance(x, (int, np.integer)) or decimals is None and float(x).is_integer():
            digits = str(abs(int(x)))
        else:
            digits = np.format_float_positional(abs(x), trim="-") if decimals is None else f"{abs(x):.{decimals}f}"
        whole, _, fraction = digits.partition(".")
        if convention == "1,234.5":
            body = f"{int(whole):,}" + ("." + fraction if fraction else "")
        else:
            body = f"{int(whole):,}".replace(",", ".") + "," + fraction if fraction else whole
        return ("-" if x < 0 else "") + prefix + body + suffix

    out = np.empty(len(numbers), dtype=object)
    out[:] = [text(x) for x in numbers]
    return out


def whole_as_ints(numbers):
    """A Series of floats (NaN where missing) as one of objects, the whole numbers as ints, which a
    text file writes ``0`` where it writes a float ``0.0``."""
    floats = numbers.to_numpy(dtype=float, na_value=np.nan)
    held = floats.astype(object)
    whole = (np.floor(floats) == floats) & (np.abs(floats) < 2 ** 53)  # NaN and infinities not
    held[whole] = floats[whole].astype(np.int64).tolist()
    return pandas_module().Series(held, index=numbers.index, name=numbers.name, dtype=object)
