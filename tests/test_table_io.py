"""table_io: reading and writing raw table files, reading raw values, restoring value types."""
import numpy as np
import pandas as pd
import pytest

from ektelo_pgm.encoding import CategoricalColumn, NumericColumn
from ektelo_pgm.table_io import as_frame, canonical, has_header, read_table, typed, write_table

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
    assert list(frame.columns) == ["column_1", "column_2"] and len(frame) == 9  # a record per line, a comma in each
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


def test_values_are_read_one_way_and_typed_by_their_schema():
    values = canonical(pd.Series([" 61", 61.0, "1e3", "61.5", "?", None, "x", 2 ** 70]), frozenset({"?"}))
    assert values.tolist() == [61, 61, 1000, 61.5, None, None, "x", 2 ** 70]
    whole = typed(pd.Series([3, None], dtype=object), NumericColumn("n", (0, 10), True, True))
    assert whole.dtype == "Int64" and whole.isna().tolist() == [False, True]
    cats = typed(pd.Series(["1", "2"]), CategoricalColumn("c", (1, 2), False))
    assert cats.dtype == "Int64" and cats.tolist() == [1, 2]
    text = typed(pd.Series(["a", np.nan], dtype=object), CategoricalColumn("t", ("a",), True))
    assert text.dtype == object and text.iloc[0] == "a"
