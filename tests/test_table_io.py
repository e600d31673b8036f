"""table_io: reading and writing raw table files, reading raw values, restoring value types."""
import numpy as np
import pandas as pd
import pytest

from ektelo_pgm.encoding import CategoricalColumn, NumericColumn
from ektelo_pgm.table_io import as_frame, canonical, factorized, has_header, read_table, typed, write_table

from test_synthesizer import people


def test_reads_parquet_and_headerless_csv(tmp_path):
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    table = people(100)
    table.to_parquet(tmp_path / "t.parquet")
    # whole numbers as nullable integers (never float64, whatever one record holds)
    pd.testing.assert_frame_equal(read_table(tmp_path / "t.parquet"), table.astype({"age": "Int64"}))
    table.to_csv(tmp_path / "t.csv", index=False, header=False)
    raw = read_table(tmp_path / "t.csv", header=False)
    assert list(raw.columns) == ["column_1", "column_2", "column_3", "column_4"] and len(raw) == 100
    named = read_table(tmp_path / "t.csv", names=list(table.columns))
    assert list(named.columns) == list(table.columns) and len(named) == 100
    table.to_csv(tmp_path / "h.csv", index=False)
    read = read_table(tmp_path / "h.csv", header=True)
    assert list(read.columns) == list(table.columns) and len(read) == 100
    # every field is text, whatever it holds: no column's type depends on a record
    assert all(pd.api.types.is_string_dtype(t) for t in read.dtypes)
    assert read["age"].tolist() == [str(a) for a in table["age"]]


@pytest.mark.parametrize("extra", [
    b"2,y,extra\n",
    b"2,y,e,x,t,r,a\n",
    b"2,y,extra,more\n",  # twice the header's fields: pandas would take the first record for index names
])
def test_a_malformed_line_or_bytes_do_not_fail_the_read(tmp_path, extra):
    """A line with more fields than the header is cut to its width, and bytes that are not
    UTF-8 are replaced: one malformed record cannot decide whether the run fails, nor change
    any other record."""
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n1,x\n" + extra + b"3,\xff\xfez\n4,w\n")
    frame = read_table(path, header=True)
    assert list(frame.columns) == ["a", "b"] and frame.index.tolist() == [0, 1, 2, 3]
    assert frame["a"].tolist() == ["1", "2", "3", "4"] and frame["b"].iloc[[0, 1, 3]].tolist() == ["x", "y", "w"]
    assert frame["b"].iloc[2].endswith("z") and "\ufffd" in frame["b"].iloc[2]


@pytest.mark.parametrize("lines", [b"1,x\n2,y,extra,more\n3,z\n4,w\n", b"1,x,extra,more\n2,y\n3,z\n4,w\n"])
def test_one_long_record_does_not_set_a_headerless_tables_width(tmp_path, lines):
    """Without a header line the width is the one most lines have, not the first record's nor
    the longest: one record cannot add columns to the release."""
    (tmp_path / "t.csv").write_bytes(lines)
    frame = read_table(tmp_path / "t.csv", header=False)
    assert list(frame.columns) == ["column_1", "column_2"]
    assert frame.to_numpy().tolist() == [["1", "x"], ["2", "y"], ["3", "z"], ["4", "w"]]


def test_a_file_that_is_not_a_table(tmp_path):
    """A binary file is read as text like any CSV (bytes that are not UTF-8 replaced, nothing
    refused on its values); an empty file, or a missing one, is refused naming the file."""
    (tmp_path / "x.bin").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(ValueError, match=r"--header or --no-header"):
        read_table(tmp_path / "x.bin")
    frame = read_table(tmp_path / "x.bin", header=False)
    # a record per line (its quotes are characters), each holding one comma
    assert list(frame.columns) == ["column_1", "column_2"] and len(frame) == 9
    (tmp_path / "empty.csv").write_bytes(b"")
    for header in (True, False):
        with pytest.raises(ValueError, match=r"empty.csv: not a"):
            read_table(tmp_path / "empty.csv", header=header)
    with pytest.raises(FileNotFoundError, match=r"none.csv: no such file"):
        read_table(tmp_path / "none.csv", header=True)


def test_separators_encodings_and_repeated_names(tmp_path):
    table = people(200).assign(city=lambda t: t.city.replace("Nice", "Nîmes"))
    table.to_csv(tmp_path / "t.tsv", sep="\t", index=False, encoding="latin-1")
    read = read_table(tmp_path / "t.tsv", header=True, encoding="latin-1")  # a tab: from the extension
    assert list(read.columns) == list(table.columns) and set(read.city) == set(table.city)
    garbled = read_table(tmp_path / "t.tsv", header=True)  # utf-8: the invalid byte replaced, no error
    assert len(garbled) == len(table) and "N\ufffdmes" in set(garbled.city)
    table.to_csv(tmp_path / "t.txt", sep=";", index=False)
    assert list(read_table(tmp_path / "t.txt", header=True, sep=";").columns) == list(table.columns)
    (tmp_path / "d.csv").write_text("a,b,a\n1,2,3\n")
    with pytest.raises(ValueError, match=r"the column names \['a'\] repeat"):
        read_table(tmp_path / "d.csv", header=True)
    with pytest.raises(ValueError, match=r"unknown text encoding 'nope'"):
        read_table(tmp_path / "t.tsv", header=True, encoding="nope")


def test_text_false_types_columns_as_pandas_does_and_a_path_is_a_frame(tmp_path):
    table = people(50)
    table.to_csv(tmp_path / "h.csv", index=False)
    typed_read = read_table(tmp_path / "h.csv", header=True, text=False)
    pd.testing.assert_frame_equal(typed_read, pd.read_csv(tmp_path / "h.csv", skipinitialspace=True))
    pd.testing.assert_frame_equal(as_frame(tmp_path / "h.csv"), typed_read)
    with pytest.raises(ValueError, match="no rows"):
        as_frame(table.iloc[:0])
    with pytest.raises(ValueError, match=r"repeats the column names \['a'\]"):
        as_frame(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    with pytest.raises(TypeError, match="expected a pandas or Dask DataFrame"):
        as_frame([[1, 2]])


def test_write_table_by_extension_and_the_header_guess(tmp_path):
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    write_table(frame, str(tmp_path / "o.csv"))
    write_table(frame, str(tmp_path / "n.csv"), header=False)
    write_table(frame, str(tmp_path / "o.json"))
    assert (tmp_path / "o.csv").read_text() == "a,b\n1,x\n2,y\n" and (tmp_path / "n.csv").read_text() == "1,x\n2,y\n"
    assert pd.read_json(tmp_path / "o.json").equals(frame)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["n.csv", "o.csv", "o.json"]  # no temporary file left
    numbers = pd.DataFrame({"a": [1, 2, 1, 2], "b": ["x", "y", "x", "x"]})
    write_table(numbers, str(tmp_path / "h.csv"))
    write_table(numbers, str(tmp_path / "g.csv"), header=False)
    assert has_header(tmp_path / "h.csv") and not has_header(tmp_path / "g.csv")  # for evaluate only


@pytest.mark.parametrize("raw, read", [("02134", "02134"), ("01", "01"), (" 007", "007"), ("00", "00"), ("-01", "-01"),
                                       ("0", 0), ("0.5", 0.5), ("-0.25", -0.25), ("0e3", 0), ("10", 10)])
def test_codes_written_with_leading_zeros_are_read_as_the_text_they_are(raw, read):
    """ZIP code 02134 was read as the number 2134 and written so; guImmun's birth orders 01, 23, 46
    and 7p came out 1, 23 and 46.  A zero and another digit open a code; a lone zero, or one
    before the decimal point or an exponent, is a number."""
    from ektelo_pgm.number_formats import as_numbers

    assert canonical(pd.Series([raw], dtype=object), frozenset()).tolist() == [read]
    assert as_numbers(np.array([read], dtype=object), "1,234.5").tolist() == [None if isinstance(read, str) else read]


def test_values_are_read_one_way_and_typed_by_their_schema():
    values = canonical(pd.Series([" 61", 61.0, "1e3", "61.5", "?", None, "x", 2 ** 70]), frozenset({"?"}))
    assert values.tolist() == [61, 61, 1000, 61.5, None, None, "x", 2 ** 70]
    whole = typed(pd.Series([3, None], dtype=object), NumericColumn("n", (0, 10), True, True))
    assert whole.dtype == "Int64" and whole.isna().tolist() == [False, True]
    cats = typed(pd.Series(["1", "2"]), CategoricalColumn("c", (1, 2), False))
    assert cats.dtype == "Int64" and cats.tolist() == [1, 2]
    text = typed(pd.Series(["a", np.nan], dtype=object), CategoricalColumn("t", ("a",), True))
    assert text.dtype == object and text.iloc[0] == "a"



def test_whole_numbers_written_with_a_point_are_told_apart_and_written_back_so(tmp_path):
    """pandas holds a column of whole numbers with blanks as floats and writes them ``61.0``: the
    reading tells which whole numbers were written with a point, as text (the schema counts them),
    and a column that writes them so is typed as floats.  A float's form is not its own: one blank
    turns a column of ints into floats, and would have turned every other record into one written
    with a point."""
    _, values, forms = factorized(pd.Series(["61.0", "61", " 7.00", "6.5", "x", None, "1e3", 8.0, 9]), frozenset())
    assert values.tolist() == [61, 61, 7, 6.5, "x", 1000, 8, 9]
    assert forms.tolist() == [1, 0, 1, -1, -1, 0, -1, -1]  # 8.0 among objects: 8, neither form
    assert (factorized(pd.Series([8, 9]), frozenset())[2] == -1).all()
    assert (factorized(pd.Series([8, None]), frozenset())[2] == -1).all()  # one blank: a column of floats
    numbers = typed(pd.Series([3, None], dtype=object), NumericColumn("n", (0, 10), True, True, pointed=True))
    cats = typed(pd.Series(["1", None], dtype=object), CategoricalColumn("c", (1, 2), True, pointed=True))
    assert numbers.dtype == cats.dtype == float
    write_table(pd.DataFrame({"n": numbers, "c": cats}), str(tmp_path / "o.csv"))
    assert (tmp_path / "o.csv").read_text() == "n,c\n3.0,1.0\n,\n"


# issue 52: one record changes only itself ---------------------------------------------------------
def both_engines(path, **options):
    """The table at ``path`` read whole and read part by part (small parts, so that they split)."""
    from ektelo_pgm.table_io import Partitions

    return [read_table(path, **options), pd.concat(list(Partitions(path, rows=97, **options)), ignore_index=True)]


def neighbours(tmp_path, lines: list[str], at: int, record: str, header: str | None = "id,city,n"):
    """Two CSV files, one of ``lines`` and one with ``record`` in place of line ``at``."""
    head = [header] if header else []
    (tmp_path / "base.csv").write_text("\n".join(head + lines) + "\n")
    (tmp_path / "changed.csv").write_text("\n".join(head + lines[:at] + [record] + lines[at + 1:]) + "\n")
    return tmp_path / "base.csv", tmp_path / "changed.csv"


def assert_only_record_changes(base, changed, at: int, **options):
    for left, right in zip(both_engines(base, **options), both_engines(changed, **options)):
        assert list(left.columns) == list(right.columns) and len(left) == len(right)
        others = [k for k in range(len(left)) if k != at]
        pd.testing.assert_frame_equal(left.iloc[others], right.iloc[others])


def test_an_extra_field_never_rereads_backslash_escaped_quotes(tmp_path):
    """Issue 52, item 2: a record with an extra field made the whole file be read again by
    another parser, which read "Saint \\"Tropez\\"" otherwise (400 records dropped); part by part
    it ended in a _csv.Error.  Now the record is cut to the width, the others are as they were."""
    lines = [f'{i},"Saint \\"Tropez\\" {i % 3}",{i % 7}' if i % 5 == 0 else f"{i},Paris,{i % 7}" for i in range(2000)]
    base, changed = neighbours(tmp_path, lines, 1000, "1000,Paris,3,extra")
    assert_only_record_changes(base, changed, 1000, header=True)
    whole = read_table(changed, header=True)
    assert whole["city"].iloc[0] == 'Saint "Tropez" 0' and whole.iloc[1000].tolist() == ["1000", "Paris", "3"]


@pytest.mark.parametrize("quoted", [False, True])
@pytest.mark.parametrize("at", [10, 2500])
def test_an_unclosed_quote_swallows_nothing(tmp_path, at, quoted):
    """Issue 52, item 3: a quote left open at record 2,500 of 3,000 swallowed the 500 records
    after it (at record 10, the whole table).  A record never runs past its line, and one whose
    quote is left open is read with every field missing (issue 56), never as values; with quoted
    line breaks (--quoted-newlines) too, the quote closing nowhere within the bound."""
    lines = [f"{i},{'Lyon' if i % 2 else 'Nice'},{i % 7}" for i in range(3000)]
    base, changed = neighbours(tmp_path, lines, at, f'{at},"Lyon,{at % 7}')
    assert_only_record_changes(base, changed, at, header=True, quoted_newlines=quoted)
    assert read_table(changed, header=True, quoted_newlines=quoted).iloc[at].tolist() == ["", "", ""]


def test_a_field_holding_a_line_break_is_read_exactly_with_quoted_newlines(tmp_path):
    """Issue 56: a CSV writer quotes a field holding a line break; read a line per record, its two
    lines became rows whose columns held pieces of it (the tweets table: 22,540 rows for 20,761).
    Read a line per record, the first line (a quoted field left open) is read blank, the second
    as written (its quote a stray, as in 5'11"), every other record as written; with
    --quoted-newlines the table is read exactly, by both engines."""
    rows = [[f"s{i % 3}", f'tweet {i}, "quoted"' + ("\nits second line" if i % 4 == 0 else ""), str(i % 50)]
            for i in range(400)]
    table = pd.DataFrame(rows, columns=["source", "text", "n"])
    table.to_csv(tmp_path / "t.csv", index=False)
    for read in both_engines(tmp_path / "t.csv", header=True):
        first = read.isin([""]).all(axis=1)
        second = read.source.str.startswith("its second line")
        assert len(read) == 500 and first.sum() == 100 and second.sum() == 100  # of the 100 such records
        kept = read[~first & ~second].reset_index(drop=True)
        pd.testing.assert_frame_equal(kept, table[table.index % 4 != 0].reset_index(drop=True))
    for read in both_engines(tmp_path / "t.csv", header=True, quoted_newlines=True):
        pd.testing.assert_frame_equal(read, table)


def test_a_huge_field_is_read_as_any_other(tmp_path):
    """Issue 52, item 4: one field of 200,000 characters in the first 1,000 lines of a headerless
    file ended in a _csv.Error (the csv module's field limit)."""
    lines = [f"{i},{'Lyon' if i % 2 else 'Nice'},{i % 7}" for i in range(3000)]
    base, changed = neighbours(tmp_path, lines, 500, "500," + "x" * 200_000 + ",3", header=None)
    assert_only_record_changes(base, changed, 500, header=False)
    assert len(read_table(changed, header=False)["column_2"].iloc[500]) == 200_000


def test_parquet_integers_past_2_53_with_a_null_stay_exact(tmp_path):
    """Issue 52, item 5: an int64 column past 2**53 with one null was read as float64, merging
    2**53 and 2**53 + 1 for every record; now as nullable integers, exact, both engines."""
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    import pyarrow.parquet as pq

    ids = [2 ** 53 + i % 2 for i in range(300)] + [None] + [2 ** 64 - 1]
    pq.write_table(pa.table({"id": pa.array(ids[:-1], pa.int64()), "u": pa.array(ids[1:], pa.uint64())}),
                   tmp_path / "t.parquet")
    for frame in both_engines(tmp_path / "t.parquet"):
        assert str(frame["id"].dtype) == "Int64" and str(frame["u"].dtype) == "UInt64"
        assert canonical(frame["id"], frozenset()).tolist() == ids[:-1]
        assert canonical(frame["u"], frozenset()).tolist() == ids[1:]


def test_a_part_with_one_long_record_joins_its_headerless_folder(tmp_path):
    """Issue 52, item 7: a headerless part holding one record with an extra field had its own
    width, and the run was refused ("its columns differ"); the width is the table's."""
    from ektelo_pgm.table_io import Partitions

    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "a.csv").write_text("".join(f"{i},Lyon,{i % 7}\n" for i in range(50)))
    (tmp_path / "parts" / "b.csv").write_text("50,Nice,1,extra\n")
    (tmp_path / "parts" / "c.csv").write_text("".join(f"{i},Nice,{i % 7}\n" for i in range(51, 100)))
    parts = Partitions(tmp_path / "parts", header=False, rows=30)
    frame = pd.concat(list(parts), ignore_index=True)
    assert parts.columns == ["column_1", "column_2", "column_3"] and len(frame) == 100
    assert frame.iloc[50].tolist() == ["50", "Nice", "1"]


def test_nested_parquet_columns_are_refused_by_name_before_any_value(tmp_path):
    """Issue 52, item 9: a Parquet list or struct column ended in a traceback (unhashable); it
    is refused by name, from the file's schema, with a one-line error holding no value."""
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    import pyarrow.parquet as pq

    from ektelo_pgm.table_io import Partitions

    for name, values in (("tags", [["Secret"], ["a", "b"]]), ("place", [{"x": "Secret"}, {"x": "b"}]),
                         ("pairs", pa.array([[("k", "Secret")], []], pa.map_(pa.string(), pa.string())))):
        pq.write_table(pa.table({"id": [1, 2], name: values}), tmp_path / "n.parquet")
        for read in (lambda: read_table(tmp_path / "n.parquet"), lambda: Partitions(tmp_path / "n.parquet")):
            with pytest.raises(ValueError, match=rf"column '{name}' holds nested values") as caught:
                read()
            assert "Secret" not in str(caught.value) and "\n" not in str(caught.value)


def test_parquet_extensions_in_any_case_and_errors_without_bytes(tmp_path):
    """Issue 52, item 9: a single ``.PARQUET`` file was read as CSV, its error printing raw bytes
    that held values of the table; an upper-case folder of parts ended in a traceback."""
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    import pyarrow.parquet as pq

    from ektelo_pgm.table_io import Partitions

    table = pa.table({"city": ["SecretVille", "Lyon"] * 50, "n": list(range(100))})
    pq.write_table(table, tmp_path / "T.PARQUET")
    (tmp_path / "parts").mkdir()
    pq.write_table(table, tmp_path / "parts" / "a.PARQUET")
    pq.write_table(table, tmp_path / "parts" / "b.Pq")
    assert read_table(tmp_path / "T.PARQUET")["city"].tolist() == table["city"].to_pylist()
    for path in (tmp_path / "parts", str(tmp_path / "parts" / "*")):
        assert len(pd.concat(list(Partitions(path, rows=40)), ignore_index=True)) == 200
    (tmp_path / "bad.PARQUET").write_bytes((tmp_path / "T.PARQUET").read_bytes()[:300])
    with pytest.raises(ValueError, match=r"bad.PARQUET: not a readable table") as caught:
        read_table(tmp_path / "bad.PARQUET")
    assert "SecretVille" not in str(caught.value) and "\\x" not in str(caught.value)


def test_the_missing_spellings_are_one_for_csv_and_parquet(tmp_path):
    """Issue 52, item 9: CSV read NA, None, null, n/a as missing (pandas' defaults) and Parquet
    kept them as text; one definition now reads them alike, whatever the format."""
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    import pyarrow.parquet as pq

    from ektelo_pgm.encoding import TableEncoder

    spellings = ["NA", "None", "null", "n/a", "", "?", " NaN ", "Lyon", "N/A", "NULL"]
    pq.write_table(pa.table({"c": spellings}), tmp_path / "t.parquet")
    (tmp_path / "t.csv").write_text("c\n" + "\n".join(f'"{s}"' for s in spellings) + "\n")
    markers = frozenset(TableEncoder().missing)
    read = [canonical(read_table(path, header=True)["c"], markers).tolist()
            for path in (tmp_path / "t.csv", tmp_path / "t.parquet")]
    assert read[0] == read[1] == [None] * 7 + ["Lyon", None, None]


def test_parquet_times_are_text_of_any_year(tmp_path):
    """Issue 52, item 1 (the reading part): a Parquet time or date column is read as text, in
    the form pandas gives an in-range time, for any year (a date of year 5 million was refused,
    a time of year 3000 or 1 became a Timestamp that later steps could not hold)."""
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    import datetime

    import pyarrow.parquet as pq

    times = [datetime.datetime(3000, 1, 1, 12), datetime.datetime(1, 1, 1), datetime.datetime(2020, 5, 6, 7, 8, 9, 10)]
    pq.write_table(pa.table({"t": pa.array(times, pa.timestamp("us")),
                             "d": pa.array([2 ** 31 - 1, 0, 18000], pa.date32())}), tmp_path / "t.parquet")
    for frame in both_engines(tmp_path / "t.parquet"):
        assert frame["t"].tolist() == ["3000-01-01 12:00:00", "0001-01-01 00:00:00", "2020-05-06 07:08:09.000010"]
        assert frame["d"].tolist() == ["5881580-07-11", "1970-01-01", "2019-04-14"]


def test_one_file_past_the_memory_cap_is_read_whole_without_pyarrow(tmp_path, monkeypatch):
    """Without pyarrow a file past the cap is read whole, never refused (a refusal would depend on
    its size); a note says so on a terminal only."""
    import io

    from ektelo_pgm import progress, table_io

    def absent():
        raise ImportError("no pyarrow")

    path = tmp_path / "t.csv"
    people(20_000).to_csv(path, index=False)
    assert table_io.decoded_bytes([str(path)]) > 2**20
    monkeypatch.setattr(table_io, "arrow", absent)
    for shown in (False, True):
        stream = io.StringIO()
        with progress.reporting(shown, stream):
            frame = table_io.open_table(path, header=True, max_memory="1MB")
        assert isinstance(frame, pd.DataFrame) and len(frame) == 20_000
        assert ("needs pyarrow" in stream.getvalue()) == shown and stream.getvalue().count("\n") == shown
    with pytest.raises(ImportError, match="pyarrow"):
        table_io.open_table(path, header=True, engine="parts")


def test_float32_numbers_are_read_as_their_shortest_digits():
    """A float32 column (Parquet and ML tables store them so) was read with float64's digits,
    0.1 as 0.10000000149011612: its prices needed full precision and its categories read so."""
    from ektelo_pgm.privacy import Budget
    from ektelo_pgm.schema import infer

    written = [0.1, -0.43723214, 2.5, 16777216.0, np.inf]
    for dtype in (np.float32, "Float32"):
        column = pd.Series(np.array(written + [np.nan], dtype=np.float32)).astype(dtype)
        assert canonical(column, frozenset()).tolist() == [0.1, -0.43723214, 2.5, 16777216, np.inf, None]
    rng = np.random.default_rng(0)
    prices = pd.DataFrame({"price": np.round(rng.lognormal(3, 1, 20000), 2).astype(np.float32)})
    assert infer(prices, Budget.zcdp(0.05), None, 1e-9, rng=0).columns["price"].decimals == 2
