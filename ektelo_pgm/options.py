"""The command line's options: an argparse type for each kind of value an option takes (each a
one-line error naming the value's problem, exit code 2), and the checks of the files a run writes
against the input it reads, made before any data is read (:func:`check_output`)."""
from __future__ import annotations

import argparse
import fnmatch
import glob
import os

from .errors import InputError
from .memory import memory_size


def positive(text: str) -> float:
    """An argparse type: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


#: The largest epsilon the command line takes: far past any privacy (e^1000000), and where the
#: conversions to zCDP still hold in floating point (1e15 overflows them).
MAX_EPSILON = 1e6


def epsilon(text: str) -> float:
    """An argparse type: a privacy budget epsilon, positive and at most ``MAX_EPSILON``."""
    value = positive(text)
    if value > MAX_EPSILON:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_EPSILON:g}, got {text!r}")
    return value


def fraction(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1 (a confidence level, delta, a share)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a number between 0 and 1, got {text!r}")
    return value


def share(text: str):
    """An argparse type: ``auto`` or a :func:`fraction` (a share of the budget)."""
    return text if text == "auto" else fraction(text)


def whole(text: str, least: int, most: int | None = None) -> int:
    """A whole number from ``least`` (to ``most``), or an argparse error saying so."""
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        wanted = "a positive integer" if least == 1 else f"a whole number from {least}"
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}")
    if most is not None and value > most:
        raise argparse.ArgumentTypeError(f"must be at most {most:,}, got {text!r}")
    return value


def memory(text: str) -> int:
    """An argparse type: a memory size (``4GiB``, ``512MB``; no unit: MB), in bytes."""
    try:
        return memory_size(text)
    except InputError:
        raise argparse.ArgumentTypeError(f"must be a number and a unit of at least 1 MB (e.g. 4GiB or 512MB), got "
                                         f"{text!r}") from None


def count(text: str) -> int:
    """An argparse type: a positive integer."""
    return whole(text, 1)


#: The most bins the schema's inference takes per numeric column (--bins): far more than any model
#: holds (the 2-way marginal of such a column with a column of five values passes AIM's 32 MB cap).
MAX_BINS = 10**6


def bins(text: str) -> int:
    """An argparse type: a number of bins, from 1 to ``MAX_BINS``."""
    return whole(text, 1, MAX_BINS)


def seed(text: str) -> int:
    """An argparse type: a seed, a whole number from 0."""
    return whole(text, 0)


def separator(text: str) -> str:
    """An argparse type: a CSV field separator, one character (a tab may be written \\t), never a
    quote or a line end."""
    value = "\t" if text == "\\t" else text
    if len(value) != 1 or value in "\"\r\n":
        raise argparse.ArgumentTypeError(f"must be one character (a tab: \\t), not a quote or a line end; got {text!r}")
    return value


def text_encoding(text: str) -> str:
    """An argparse type: the name of a text encoding Python knows (utf-8, latin-1, cp1252, ...)."""
    try:
        "".encode(text)  # a LookupError for an unknown name and for a codec of bytes (base64, zlib)
    except LookupError:
        raise argparse.ArgumentTypeError(f"unknown text encoding {text!r} (e.g. utf-8, latin-1, cp1252)") from None
    return text


def mechanism_name(text: str) -> str:
    """An argparse type: a mechanism's name (:func:`~ektelo_pgm.synthesizer.mechanisms`)."""
    from .synthesizer import mechanism_entry

    try:
        mechanism_entry(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def column_names(text: str) -> list:
    """An argparse type: comma-separated column names, each named once, none empty."""
    names = text.split(",")
    if not all(name.strip() for name in names):
        raise argparse.ArgumentTypeError(f"a column name is empty in {text!r}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise argparse.ArgumentTypeError(f"the column names {repeated} repeat")
    return names


def path(text: str) -> str:
    """An argparse type: a path, not empty."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path")
    return text


def check_output(args, formats) -> None:
    """Refuse, before any work, an output whose format is unknown or whose folder does not exist,
    and outputs and caches among the input (:func:`check_apart`)."""
    from .table_io import check_parquet

    path = args.output
    if not path.endswith(formats):
        raise InputError(f"output {path!r} must end in {' or '.join(formats)}")
    check_parquet(path)
    for option, output in outputs(args):
        folder = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(folder):
            raise InputError(f"{option}: the folder {folder!r} does not exist")
        if os.path.isdir(output):
            raise InputError(f"{option}: {output!r} is a folder")
    check_apart(args)


def outputs(args) -> list:
    """``(option, path)`` of each file the run writes: ``-o``'s and ``--save``'s (.npz added)."""
    save = getattr(args, "save", None)
    return [("-o", args.output)] + ([("--save", save if save.endswith(".npz") else save + ".npz")] if save else [])


def check_apart(args) -> None:
    """Refuse, before any data is read, an output (-o, --save) that is an input file, inside the
    input folder or matched by the input glob, and a --cache folder that is the input folder or
    inside it or holds an input file: compared by real path (links resolved) with every file of
    the input (a file, the table files of a folder, the files a glob matches) and the --schema
    file."""
    from .table_io import table_files

    inputs = {os.path.realpath(p) for p in table_files(args.input)}
    if isinstance(getattr(args, "schema", None), str):
        inputs.add(os.path.realpath(args.schema))
    folder = os.path.realpath(args.input) if os.path.isdir(args.input) else None
    pattern = args.input if folder is None and glob.has_magic(args.input) else None
    for option, output in outputs(args):
        real = os.path.realpath(output)
        if real in inputs:
            raise InputError(f"{option} {output} would overwrite the input; choose another name")
        if folder is not None and inside(real, folder):
            raise InputError(f"{option} {output} is inside the input folder {args.input}; write it elsewhere")
        if pattern is not None and matched(output, pattern):
            raise InputError(f"{option} {output} is matched by the input glob {args.input}; choose another name")
    cache = getattr(args, "cache", None)
    if cache is not None:
        real = os.path.realpath(cache)
        if real in inputs or any(inside(p, real) for p in inputs) or folder is not None and \
                (real == folder or inside(real, folder)):
            raise InputError(f"--cache {cache} is the input folder, inside it or holds an input file; name a folder "
                             "apart from the input")


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` lies inside ``folder`` (both real paths), at any depth."""
    return path != folder and os.path.commonpath([path, folder]) == folder


def matched(path: str, pattern: str) -> bool:
    """Whether the glob ``pattern`` matches ``path``, existing or not: its name matches the
    pattern's last part and its folder, by real path, is one the pattern's folder part matches."""
    head, tail = os.path.split(pattern)
    if not fnmatch.fnmatch(os.path.basename(path), tail):
        return False
    folders = glob.glob(head) if glob.has_magic(head) else [head or "."]
    return os.path.realpath(os.path.dirname(os.path.abspath(path))) in {os.path.realpath(f) for f in folders}


def quoted_newlines_argument(p) -> None:
    """The --quoted-newlines option of the commands that read CSV tables
    (:mod:`~ektelo_pgm.csv_dialect`)."""
    from .csv_dialect import SPAN_LINES

    p.add_argument("--quoted-newlines", action="store_true",
                   help="the CSV was written by a CSV writer (pandas, R, a database, a spreadsheet: every field "
                        "holding a quote, the separator or a line break quoted, its quotes doubled): a quoted field "
                        f"may hold line breaks, a record then spanning up to {SPAN_LINES} lines (default: a record "
                        "is a line, and a line that leaves a quoted field open is read as blank)")


def max_memory_argument(p) -> None:
    """The --max-memory option of the commands that read tables."""
    from .memory import MAX_DEFAULT_CAP, MEMORY_SHARE

    p.add_argument("--max-memory", type=memory, help=f"the memory a run may take reading its tables, a number and a "
                   f"unit (4GiB, 512MB; no unit: MB; default {MEMORY_SHARE * 100:g}%% of this machine's memory, at "
                   f"most {MAX_DEFAULT_CAP / 2**30:g} GiB)")
