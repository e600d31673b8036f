"""The reader held to its rule (docs/privacy.md, "How files are read"): what one record holds
changes only that record.  A differential fuzz test: random small tables, one hostile record
drawn from a grammar inserted anywhere, every other record read identically, by both engines
(read whole, and part by part in small parts), CSV and Parquet.  And the fast parsers read
every line as the dialect's definition (:func:`~ektelo_pgm.csv_dialect.record_fields`) does.
With quoted line breaks (``--quoted-newlines``): the fast parsers read every record as the
definition (:func:`~ektelo_pgm.csv_dialect.defined_records`) does, and a table a CSV writer
wrote, any values in it, is read exactly, by both engines, wherever the blocks and parts end."""
import contextlib
import re

import numpy as np
import pandas as pd
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import HealthCheck, given, settings, strategies as st

from ektelo_pgm import table_io
from ektelo_pgm import csv_dialect
from ektelo_pgm.csv_dialect import block_frame, csv_fields, csv_records, defined_records, record_fields
from ektelo_pgm.table_io import Partitions, read_table

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# the dialect's definition, against the fast parsers ---------------------------------------------
odd_lines = st.lists(st.text(alphabet='ab ,;\t"\\\r\x00é', max_size=12), min_size=1, max_size=8)


def defined(lines: list[str], sep: str, width: int) -> list[list[str]]:
    """The records of ``lines`` by the definition, one line at a time, cut or padded to ``width``,
    a line that leaves a quoted field open ``width`` empty fields; blank lines none."""
    out = []
    for line in lines:
        if line.rstrip("\r").strip(" "):
            fields = record_fields(line, sep)
            out.append([""] * width if fields is None else fields[:width] + [""] * (width - len(fields)))
    return out


@settings(max_examples=300, deadline=None)
@given(odd_lines, st.sampled_from([",", ";", "\t"]), st.integers(1, 4), st.sampled_from(["\n", "\r\n"]))
def test_the_fast_parsers_read_every_line_as_the_definition(lines, sep, width, end):
    lines = [line.replace("\r", "") if end == "\r\n" else line for line in lines]
    text = end.join(lines) + end
    assert csv_records(text, sep, width) == defined(lines, sep, width)
    names = [f"c{j}" for j in range(width)]
    frame = block_frame(text, names, sep)
    assert frame.to_numpy(dtype=object).tolist() == defined(lines, sep, width)


def test_the_definition_on_the_awkward_forms():
    assert csv_fields('"Saint \\"Tropez\\"",2', ",") == ['Saint "Tropez"', "2"]
    assert csv_fields('"a ""b""", c', ",") == ['a "b"', "c"]
    assert csv_fields('a"b,"c"d ,"e', ",") == ['a"b', "cd ", "e"]  # stray quotes; an open one ends with the line
    assert csv_fields('C:\\temp,"x\\\\",\\N', ",") == ["C:\\temp", "x\\", "\\N"]  # backslashes outside quotes
    assert csv_fields("a\rb,\x00\r\r", ",") == ["a\rb", "\x00"]
    assert csv_fields("", ",") == [""]
    assert csv_fields('1;;"y;;z";;', ";;") == ["1", "y;;z", ""]  # a separator of more characters: as written


# with quoted line breaks (--quoted-newlines) ----------------------------------------------------
@contextlib.contextmanager
def bounds(lines: int | None = None, chars: int | None = None, block: int | None = None):
    """csv_dialect's SPAN_LINES, SPAN_CHARS and BLOCK set for the block (None: as they are)."""
    saved = csv_dialect.SPAN_LINES, csv_dialect.SPAN_CHARS, csv_dialect.BLOCK
    csv_dialect.SPAN_LINES, csv_dialect.SPAN_CHARS, csv_dialect.BLOCK = (
        new if new is not None else old for new, old in zip((lines, chars, block), saved))
    try:
        yield
    finally:
        csv_dialect.SPAN_LINES, csv_dialect.SPAN_CHARS, csv_dialect.BLOCK = saved


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet='ab ,;\t"\\\r\x00', max_size=10), min_size=1, max_size=10),
       st.sampled_from([",", ";", "\t"]), st.integers(1, 4), st.sampled_from(["\n", "\r\n"]), st.integers(1, 4),
       st.integers(1, 40))
def test_the_fast_parsers_read_every_record_as_the_definition(lines, sep, width, end, span, chars):
    """Records that span lines, and those cut where they do not close within the bound (here
    ``span`` lines and ``chars`` characters)."""
    lines = [line.replace("\r", "") if end == "\r\n" else line for line in lines]
    text = end.join(lines) + end
    with bounds(span, chars):
        records = defined_records(text.split("\n")[:-1], sep, quoted=True)[0]
        expected = [[""] * width if r is None else r[:width] + [""] * (width - len(r)) for r in records]
        assert csv_records(text, sep, width, quoted=True) == expected
        frame = block_frame(text, [f"c{j}" for j in range(width)], sep, quoted=True)
        assert frame.to_numpy(dtype=object).tolist() == expected


def test_the_definition_with_quoted_line_breaks():
    lines = ['1,"a', 'b ""c"" \\",2', '3,"x\\"', '"open', "4,y"]
    assert defined_records(lines, ",", quoted=True)[0] == [["1", 'a\nb "c" \\', "2"], ["3", "x\\"], None, ["4", "y"]]
    assert defined_records(['1,"a\r', 'b"\r'], ",", quoted=True)[0] == [["1", "a\r\nb"]]  # inner CRs kept
    assert defined_records(['1,"a', "b"], ",", quoted=True, final=False) == ([], 0)  # may run past the lines
    with bounds(lines=2):  # no close within 2 lines: the first line alone, the next read from its start
        assert defined_records(['1,"a', "b", 'c",2', "3,z"], ",", quoted=True)[0] == [None, ["b"], ['c"', "2"], ["3", "z"]]
    assert record_fields('x"y,z', ",") == ['x"y', "z"] and record_fields("5'11\",z", ",") == ["5'11\"", "z"]  # strays
    assert record_fields('1,"a', ",") is None and record_fields('x"y,"z', ",") is None  # a quoted field left open


#: Values as a CSV writer may be given them: line breaks, quotes, separators, backslashes, CRs, NULs,
#: and hostile ones (a quote that opens, escapes, past the csv module's field limit, 40 line breaks:
#: a record of two spans 81 lines, within the bound).
written = st.one_of(
    st.text(alphabet='ab ,;"\\\n\r\x00é', max_size=12).map(lambda v: v.lstrip(" ")),
    st.sampled_from(['"open', '"""', 'a,\\', '\\"', 'x"\n"y', "NA", "\n", "\r\n", "\n" * 40, "w" * 200_000]))


@FUZZ
@given(st.lists(st.tuples(written, written, st.integers(-99, 99)), min_size=1, max_size=12),
       st.sampled_from(["\n", "\r\n"]), st.booleans(), st.integers(1, 5), st.integers(1, 60))
def test_a_table_a_csv_writer_wrote_is_read_exactly(tmp_path_factory, rows, end, header, part_rows, block):
    """pandas' to_csv, any values (spaces that start a field aside: a field's leading spaces are
    skipped): every record read as written, values and count, read whole and part by part, with
    blocks of ``block`` characters ending inside quoted fields."""
    path = tmp_path_factory.mktemp("written") / "t.csv"
    table = pd.DataFrame(rows, columns=["a", "b", "n"]).astype(str)
    table.to_csv(path, index=False, header=header, lineterminator=end)
    names = None if header else list(table.columns)
    with bounds(block=block):
        whole = read_table(path, header=header or None, names=names, quoted_newlines=True)
        parts = pd.concat(list(Partitions(path, header=header or None, names=names, rows=part_rows,
                                          quoted_newlines=True)), ignore_index=True)
    pd.testing.assert_frame_equal(whole, table)
    pd.testing.assert_frame_equal(parts, table)


def test_a_value_ending_in_a_backslash_opens_no_quote(tmp_path):
    """Read as a database dump's escapes, a written value ending in a backslash (``"a,\\"``)
    leaves its quote open; with quoted line breaks it closes, and no record after it changes."""
    table = pd.DataFrame({"a": ["x,\\"] + [f"v{i}" for i in range(5)] + ['q"'], "n": [str(i) for i in range(7)]})
    table.to_csv(tmp_path / "t.csv", index=False)
    pd.testing.assert_frame_equal(read_table(tmp_path / "t.csv", header=True, quoted_newlines=True), table)


def test_a_record_past_the_bound_is_its_first_line_alone(tmp_path):
    """A quote left open takes in no line after it when it does not close within SPAN_LINES lines
    (or SPAN_CHARS characters); one that closes within them takes in the lines before its close,
    at most SPAN_LINES - 1 (docs/privacy-details.md: the claim broken)."""
    span = csv_dialect.SPAN_LINES
    lines = [f"{i},c{i % 3}" for i in range(3 * span)]
    far = lines[:10] + ['10,"open'] + lines[11:2 * span] + ['x"y,2'] + lines[2 * span + 1:]
    near = lines[:10] + ['10,"open'] + lines[11:span] + ['x",2'] + lines[span + 1:]
    for name, changed in (("far", far), ("near", near)):
        (tmp_path / f"{name}.csv").write_text("\n".join(changed) + "\n")
    base = [line.split(",") for line in lines]
    for read in (read_table(tmp_path / "far.csv", header=False, quoted_newlines=True),
                 pd.concat(list(Partitions(tmp_path / "far.csv", header=False, rows=7, quoted_newlines=True)))):
        got = read.to_numpy(dtype=object).tolist()
        assert got[10] == ["", ""] and got[2 * span] == ['x"y', "2"]  # the open quote alone; a stray is itself
        assert [r for k, r in enumerate(got) if k not in (10, 2 * span)] == \
            [r for k, r in enumerate(base) if k not in (10, 2 * span)]
    got = read_table(tmp_path / "near.csv", header=False, quoted_newlines=True).to_numpy(dtype=object).tolist()
    assert len(got) == len(lines) - (span - 10) and got[10][0] == "10" and got[11:] == base[span + 1:]
    with bounds(chars=50):
        got = read_table(tmp_path / "near.csv", header=False, quoted_newlines=True).to_numpy(dtype=object).tolist()
        assert got[10] == ["", ""] and len(got) == len(lines)


# the differential fuzz test ----------------------------------------------------------------------
words = st.text(alphabet="abcxyz é", min_size=1, max_size=6).map(str.strip).filter(bool)
numbers = st.one_of(st.integers(-10 ** 6, 10 ** 6).map(str), st.floats(-1e6, 1e6, allow_nan=False).map(repr))
cells = st.one_of(words, numbers)
hostile_fields = st.one_of(
    st.sampled_from(['"open', '"a ""b""', '"Saint \\"Tropez\\""', 'x"y', '"', '""', "\\", '\\"', "NA", "None",
                     "null", "n/a", "", " ", "?", "\x00", "a\rb", "\ufffd", "inf", "1e400", "-" + "9" * 400,
                     "3000-01-01 00:00:00", "0001-01-01", "9999-12-31 23:59:59.999999"]),
    st.integers(1, 300_000).map(lambda n: "w" * n),
    st.text(max_size=8).map(lambda t: t.replace("\n", "")))
hostile_lines = st.one_of(
    st.lists(hostile_fields, min_size=0, max_size=7).map(",".join),
    st.sampled_from(["", "   ", "\t", ",,,,,,,,", '"', '"a,b\\"', "a,b,c,d,e,f,g,h,i,j,k"]),
    st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")))  # bytes that are not UTF-8 too


def quoted(value: str) -> str:
    """A field as a CSV writer writes it: quoted (quotes doubled) where it holds a comma or a quote."""
    return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"') else value


def table_bytes(rows, header: bool) -> list[bytes]:
    width = len(rows[0])
    lines = ([",".join(f"h{j}" for j in range(width))] if header else []) + [",".join(map(quoted, r)) for r in rows]
    return [line.encode("utf-8") for line in lines]


def frames(path, header: bool, rows: int):
    """The table at ``path`` read whole and read part by part in parts of ``rows`` records."""
    whole = read_table(path, header=header)
    parts = pd.concat(list(Partitions(path, header=header, rows=rows)), ignore_index=True)
    return whole, parts


def hostile_records(line: bytes, width: int) -> int:
    """How many records the hostile line is (0 when blank, else 1)."""
    return len(csv_records(line.decode("utf-8", errors="replace") + "\n", ",", width))


@FUZZ
@given(st.lists(st.lists(cells, min_size=3, max_size=3), min_size=4, max_size=12), st.booleans(), hostile_lines,
       st.data())
def test_one_hostile_record_changes_only_itself(tmp_path_factory, rows, header, hostile, data):
    folder = tmp_path_factory.mktemp("fuzz")
    at = data.draw(st.integers(0, len(rows)))
    raw = hostile.encode("utf-8", errors="surrogatepass") if isinstance(hostile, str) else hostile
    lines = table_bytes(rows, header)
    (folder / "base.csv").write_bytes(b"\n".join(lines) + b"\n")
    lines.insert(at + header, raw)
    (folder / "hostile.csv").write_bytes(b"\n".join(lines) + b"\n")
    part_rows = data.draw(st.integers(1, 5))
    added = hostile_records(raw, 3)
    for base, read in zip(frames(folder / "base.csv", header, part_rows),
                          frames(folder / "hostile.csv", header, part_rows)):
        assert list(read.columns) == list(base.columns) and len(read) == len(base) + added
        others = read.drop(index=range(at, at + added)).reset_index(drop=True)
        pd.testing.assert_frame_equal(others, base)


parquet_cells = st.sampled_from(["NA", "None", "null", "n/a", "", " ", "?", "\x00", 'a"b', "\\", "w" * 200_000, None])


@FUZZ
@given(st.lists(st.tuples(st.integers(2 ** 53 - 3, 2 ** 53 + 3), st.sampled_from(["Paris", "Lyon"]),
                          st.integers(-10 ** 6, 10 ** 6)), min_size=3, max_size=10),
       st.one_of(st.none(), st.sampled_from([2 ** 63 - 1, -2 ** 63])), parquet_cells,
       st.sampled_from([None, -62135596800, 32503680000, 253402300799, -(2 ** 40), 2 ** 40]), st.data())
def test_one_hostile_parquet_record_changes_only_itself(tmp_path_factory, rows, number, text, seconds, data):
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    pa, pq = table_io.arrow()
    folder = tmp_path_factory.mktemp("fuzz")
    at = data.draw(st.integers(0, len(rows)))

    def write(path, records):
        ids, cities, times = zip(*records)
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "city": pa.array(cities, pa.string()),
                                 "t": pa.array(times, pa.timestamp("s"))}), path)

    write(folder / "base.parquet", rows)
    write(folder / "hostile.parquet", rows[:at] + [(number, text, seconds)] + rows[at:])
    for base, read in zip(frames(folder / "base.parquet", True, 3), frames(folder / "hostile.parquet", True, 3)):
        assert len(read) == len(base) + 1 and read["id"].dtype == base["id"].dtype == "Int64"
        pd.testing.assert_frame_equal(read.drop(index=at).reset_index(drop=True), base)
        assert base["t"].tolist() == [str(pd.Timestamp(s, unit="s")) for _, _, s in rows]


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_parquet_times_read_as_pandas_writes_them_in_its_range_and_beyond(tmp_path, unit):
    """In pandas' range a time (a date, a time with a zone) is the text a pandas Timestamp gives,
    what every step read before; beyond it, the same form, any year, no error."""
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    pa, pq = table_io.arrow()
    rng = np.random.default_rng(0)
    per = {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}[unit]
    low, high = (-9223372036 + 2 * 86400, 9223372036 - 2 * 86400) if unit == "ns" else \
        (-62135596800 + 2 * 86400, 253402300799 - 2 * 86400)
    seconds = rng.integers(low, high, 300)
    fractions = [0] * 100 + list(rng.integers(0, per, 100) // max(per // 10 ** 6, 1) * max(per // 10 ** 6, 1)) + \
        list(rng.integers(0, per, 100))
    ticks = [int(s) * per + int(f) for s, f in zip(seconds, fractions)]
    columns = {"t": pa.array(ticks + [None], pa.timestamp(unit)),
               "z": pa.array(ticks + [None], pa.timestamp(unit, tz="Europe/Paris")),
               "d": pa.array([t // per // 86400 for t in ticks] + [None], pa.date32())}
    pq.write_table(pa.table(columns), tmp_path / "t.parquet")
    expected = pa.table(columns).to_pandas()
    for read in (read_table(tmp_path / "t.parquet"),
                 pd.concat(list(Partitions(tmp_path / "t.parquet", rows=7)), ignore_index=True)):
        for name in columns:
            assert read[name].tolist()[:-1] == [str(v) for v in expected[name].iloc[:-1]], name
            assert read[name].isna().tolist() == [False] * len(ticks) + [True]
    far = pa.table({"t": pa.array([2 ** 62, -(2 ** 62), 0], pa.timestamp("ms")),
                    "z": pa.array([2 ** 62, -(2 ** 62), 0], pa.timestamp("ms", tz="Europe/Paris")),
                    "d": pa.array([2 ** 31 - 1, -(2 ** 31), 0], pa.date32())})
    pq.write_table(far, tmp_path / "far.parquet")
    read = read_table(tmp_path / "far.parquet")
    assert all(re.fullmatch(r"-?\d{4,}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?", t) for t in read["t"])
    assert read["z"].tolist()[:2] == [t + "+00:00" for t in read["t"].tolist()[:2]]  # past Python's calendar: UTC
    assert read["z"].iloc[2] == "1970-01-01 01:00:00+01:00"
    assert read["d"].iloc[2] == "1970-01-01" and all(re.fullmatch(r"-?\d{4,}-\d\d-\d\d", d) for d in read["d"])
