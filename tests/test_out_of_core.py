"""The out-of-core path: a raw table read part by part (CSV or Parquet files, a Dask DataFrame)
gives exactly the in-memory schema, codes, fit and synthetic records; its codes are counted
from Parquet on disk (ParquetDataset) and the output is written part by part."""
import glob
import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

pytest.importorskip("pyarrow", reason="the out-of-core path keeps codes as Parquet: the 'parquet' extra",
                    exc_type=ImportError)
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from ektelo_pgm import Budget, Dataset, Domain  # noqa: E402
from ektelo_pgm import schema as schemas  # noqa: E402
from ektelo_pgm.errors import InputError  # noqa: E402
from ektelo_pgm.parquet_dataset import ParquetDataset  # noqa: E402
from ektelo_pgm.table_io import canonical  # noqa: E402
from ektelo_pgm.synthesizer import Synthesizer  # noqa: E402
from ektelo_pgm.table_io import Partitions, open_table, read_table, write_parts  # noqa: E402

MARKERS = frozenset({"?", ""})
raw_values = st.one_of(st.integers(-5, 5), st.sampled_from([2.5, -0.25, 1e400, float("nan"), 3.0]),
                       st.sampled_from(["a", " a", "b ", "?", "", "7", " 7.0", "2020-01-02", "x y"]), st.none())


@settings(max_examples=60, deadline=None)
@given(st.lists(raw_values, min_size=1, max_size=40), st.lists(st.integers(1, 39), max_size=4))
def test_tallies_of_parts_merged_in_order_equal_the_whole_columns(values, cuts):
    series = pd.Series(values, dtype=object)
    bounds = [0, *sorted(set(c for c in cuts if c < len(values))), len(values)]
    whole = schemas.tally(series, MARKERS)
    parts = schemas.merged(schemas.tally(series.iloc[a:b], MARKERS) for a, b in zip(bounds, bounds[1:]))
    present = [v for v in canonical(series, MARKERS) if v is not None]
    assert list(whole.values) == list(dict.fromkeys(present))  # first appearance, as the rows read
    assert [int(c) for c in whole.counts] == [present.count(v) for v in whole.values]
    assert whole.missing == len(values) - len(present)
    assert list(parts.values) == list(whole.values) and np.array_equal(parts.counts, whole.counts)
    assert parts.missing == whole.missing
    pointed = values.count(" 7.0")  # whole, written with a point (a float's form is its column's dtype: none)
    assert parts.pointed == whole.pointed == pointed
    assert parts.plain == whole.plain == values.count("7")  # whole, written plain as text (an int: neither)


def test_a_spilled_column_counts_its_whole_numbers_written_with_a_point_and_without(tmp_path):
    from ektelo_pgm.schema.counts import Spilled, whole

    spilled = Spilled(str(tmp_path), 10)
    spilled.add(schemas.tally(pd.Series(["1.0", "2.5", None, "4.0"]), MARKERS))
    spilled.add(schemas.tally(pd.Series(["3", "4.00", "?"]), MARKERS))
    assert spilled.pointed == 3 and whole(spilled).pointed == 3 and spilled.missing == 2
    assert spilled.plain == whole(spilled).plain == 1


def messy(n=3000, seed=0) -> pd.DataFrame:
    """A raw table with every kind of column: categories (rare ones too), whole and fractional
    numbers, times, an identifier, text, missing values."""
    rng = np.random.default_rng(seed)
    city = rng.choice(["Austin", "Dallas", " Houston", "Waco", "Tyler"], n, p=[0.4, 0.3, 0.2, 0.09, 0.01])
    age = rng.integers(18, 90, n).astype(object)
    age[rng.random(n) < 0.05] = "?"
    price = np.round(rng.lognormal(10, 1, n), 2)
    day = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")
    return pd.DataFrame({"city": city, "age": age, "price": price, "day": day.strftime("%Y-%m-%d"),
                         "id": rng.permutation(n) + 10_000, "note": [f"text {i}" for i in range(n)]})


def as_text_files(frame: pd.DataFrame, folder, parts: int) -> list:
    folder.mkdir()
    paths = []
    for k, chunk in enumerate(np.array_split(np.arange(len(frame)), parts)):
        paths.append(folder / f"part-{k}.csv")
        frame.iloc[chunk].to_csv(paths[-1], index=False)
    return paths


@pytest.fixture
def codes(monkeypatch):
    """Each set of code files a fit writes, as ``(path, mode, its folder's mode)``, seen while the fit runs."""
    seen = []
    init = ParquetDataset.__init__

    def spied(self, files, *args, **kwargs):
        seen.append([(f, stat.S_IMODE(os.stat(f).st_mode), stat.S_IMODE(os.stat(os.path.dirname(f)).st_mode))
                     for f in files])
        init(self, files, *args, **kwargs)

    monkeypatch.setattr(ParquetDataset, "__init__", spied)
    return seen


def test_the_schema_of_a_table_read_in_parts_is_the_whole_tables(tmp_path):
    frame = messy()
    as_text_files(frame, tmp_path / "csv", 3)
    whole = read_table(tmp_path / "csv" / "part-0.csv", header=True)
    whole = pd.concat([whole] + [read_table(tmp_path / "csv" / f"part-{k}.csv", header=True) for k in (1, 2)],
                      ignore_index=True)
    parts = Partitions(tmp_path / "csv", header=True, rows=500)
    learnt = []
    for table in (whole, parts):
        left_out, budget = {}, Budget.zcdp(0.5)
        encoder = schemas.learn(table, budget, None, 1e-9, rng=3, left_out=left_out)
        learnt.append((encoder.to_dict(), left_out, [str(c) for c in budget.ledger]))
    assert learnt[0] == learnt[1]
    assert "note" in learnt[0][1]  # free text, left out alike
    assert encoder.columns["day"].time_format == "%Y-%m-%d"


@pytest.mark.parametrize("mechanism", ["mst", "aim"])
def test_a_fit_on_parts_writes_the_same_records_as_in_memory(tmp_path, mechanism, codes):
    frame = messy(2000).drop(columns=["note"])
    as_text_files(frame, tmp_path / "csv", 4)
    whole = pd.concat([read_table(p, header=True) for p in sorted((tmp_path / "csv").glob("*.csv"))],
                      ignore_index=True)
    options = {"rounds": 20} if mechanism == "aim" else {}
    written = []
    for k, table in enumerate([whole, Partitions(tmp_path / "csv", header=True, rows=300)]):
        synth = Synthesizer(mechanism, epsilon=2.0, seed=5, regenerate=["id"], progress=False, **options)
        synth.fit(table, cache=tmp_path / f"codes{k}")
        assert synth.write(tmp_path / f"out{k}.csv", rows=700) == len(pd.read_csv(tmp_path / f"out{k}.csv"))
        written.append((tmp_path / f"out{k}.csv").read_text())
    assert written[0] == written[1]
    out = pd.read_csv(tmp_path / "out1.csv")
    assert list(out.columns) == list(frame.columns)
    assert out["id"].tolist() == list(range(1, len(out) + 1))  # fresh identifiers across the parts
    assert os.path.basename(codes[0][0][0]) == "codes-00000.parquet"  # only the fit read part by part codes
    assert os.path.dirname(os.path.dirname(codes[0][0][0])) == str(tmp_path / "codes1")  # in the named cache
    assert not (tmp_path / "codes1").exists()  # removed with the codes


def wide_network_table(n: int, columns: int, seed: int = 0) -> pd.DataFrame:
    """``columns`` text columns, each drawn given the one before (a chain network), 2 to 5 values."""
    rng = np.random.default_rng(seed)
    codes = [rng.integers(0, 3, n)]
    for j in range(1, columns):
        size = 2 + j % 4
        codes.append(np.where(rng.random(n) < 0.7, codes[-1] % size, rng.integers(0, size, n)))
    return pd.DataFrame({f"x{j:02d}": [f"v{c}" for c in column] for j, column in enumerate(codes)})


def test_aim_on_a_wide_table_counts_its_candidates_from_the_parts_exactly_in_one_pass(tmp_path, monkeypatch):
    """The steward's AIM on a table past 16 columns (2-way candidates): every candidate's data counts
    are summed over the parts' batches in one pass for all of them and the 1-way marginals, equal to
    the in-memory counts, and the released records are the same."""
    frame = wide_network_table(3000, 18)
    (tmp_path / "pq").mkdir()
    for k, chunk in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[chunk].to_parquet(tmp_path / "pq" / f"p{k}.parquet", index=False)
    passes, count = [], ParquetDataset._count

    def counted(self, attrs, plan):
        self.rows = 400  # batches of 400 records: each file is read in three
        rows, tables = count(self, attrs, plan)
        passes.append(len(plan))
        return rows, tables

    monkeypatch.setattr(ParquetDataset, "_count", counted)
    scored, written = [], []
    for k, table in enumerate([frame, Partitions(tmp_path / "pq", rows=700)]):
        kept = {}
        synth = Synthesizer("aim", epsilon=3.0, seed=4, progress=False, rounds=40,
                            callback=lambda state: kept.update(state.memo["marginal"]))
        synth.fit(table)
        synth.write(tmp_path / f"out{k}.csv")
        scored.append(kept)
        written.append((tmp_path / f"out{k}.csv").read_text())
    memory, parts = scored
    assert {len(c) for c in parts} == {1, 2} and len(parts) == 18 + 18 * 17 // 2  # every 1- and 2-way candidate
    assert memory.keys() == parts.keys() and all(np.array_equal(memory[c], parts[c]) for c in memory)
    assert passes == [153]  # one pass: every 2-way candidate, the 1-way marginals summed from them
    assert written[0] == written[1]


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_write_holds_one_part_at_a_time(tmp_path, suffix):
    """While a part of the records is drawn, no earlier part is still held (by the loop that
    writes them or the one that draws them): memory holds one part, whatever the rows."""
    import gc
    import weakref

    synth = Synthesizer("mst", epsilon=1.0, seed=0, progress=False).fit(messy(600).drop(columns=["note", "id"]))
    draw, made, alive = synth._part, [], []

    def spied(*args):
        gc.collect()
        alive.append(sum(ref() is not None for ref in made))
        part = draw(*args)
        made.append(weakref.ref(part))
        return part

    synth._part = spied
    assert synth.write(tmp_path / f"out.{suffix}", n=1000, rows=200) == 1000
    assert alive == [0, 0, 0, 0, 0]


def test_a_named_cache_is_private_whatever_the_umask_and_removed(tmp_path, codes):
    frame = messy(600).drop(columns=["note", "id"])
    as_text_files(frame, tmp_path / "csv", 2)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("kept")
    previous = os.umask(0)  # the codes would be readable (and writable) by anyone
    try:
        for cache in (tmp_path / "new" / "codes", tmp_path / "mine"):
            Synthesizer("mst", epsilon=1.0, seed=0, progress=False).fit(Partitions(tmp_path / "csv", header=True),
                                                                          cache=cache)
            assert len(codes[-1]) == 2 and all(m == 0o600 and folder == 0o700 for _, m, folder in codes[-1])
    finally:
        os.umask(previous)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["csv", "mine"]  # the folders it made are removed
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]  # the user's stay


def test_a_temporary_code_folder_is_removed_and_parquet_input_works(tmp_path, monkeypatch):
    frame = messy(1500).drop(columns=["note", "id"]).astype({"age": str})
    (tmp_path / "pq").mkdir()
    for k, chunk in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[chunk].to_parquet(tmp_path / "pq" / f"p{k}.parquet", index=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    synth = Synthesizer("mst", epsilon=1.0, seed=1, progress=False).fit(str(tmp_path / "pq"))
    assert list((tmp_path / "tmp").iterdir()) == []
    synth.write(tmp_path / "out.parquet", n=2500, rows=1000)
    out = pd.read_parquet(tmp_path / "out.parquet")
    assert len(out) == 2500 and pq.ParquetFile(tmp_path / "out.parquet").num_row_groups == 3
    assert list(out.columns) == list(frame.columns)


def test_a_dask_dataframe_fits_as_the_whole_table_on_several_worker_processes():
    dd = pytest.importorskip("dask.dataframe", reason="needs the 'dask' extra", exc_type=ImportError)
    import dask

    frame = messy(1500).drop(columns=["note", "id"])
    outputs = []
    with dask.config.set(scheduler="processes", num_workers=2):
        for table in (frame, dd.from_pandas(frame, npartitions=3)):
            synth = Synthesizer("mst", epsilon=1.0, seed=2, progress=False).fit(table)
            outputs.append(synth.sample(500))
    pd.testing.assert_frame_equal(outputs[0], outputs[1])


def codes_on_disk(tmp_path, records: np.ndarray, domain: Domain, files: int) -> list:
    paths = []
    for k, chunk in enumerate(np.array_split(records, files)):
        paths.append(tmp_path / f"c{k}.parquet")
        pq.write_table(pa.table({a: chunk[:, j].astype(np.uint16) for j, a in enumerate(domain.attrs)}), paths[-1])
    return paths


def test_parquet_dataset_counts_project_and_recode_as_in_memory(tmp_path):
    rng = np.random.default_rng(0)
    domain = Domain(["a", "b", "c"], [3, 5, 4])
    records = np.column_stack([rng.integers(0, s, 1000) for s in domain.shape])
    data, disk = Dataset(records, domain), ParquetDataset(codes_on_disk(tmp_path, records, domain, 3), domain, rows=128)
    cliques = [("a",), ("c", "b"), ("a", "b", "c"), ()]
    for want, got in zip(data.marginals(cliques), disk.marginals(cliques)):
        assert np.array_equal(want, got)
    assert len(disk) == 1000
    codes = {"a": [0, 0, 1], "b": [0, 1, 1, 2, 2], "c": [0, 1, 2, 3]}
    small = Domain(["a", "b", "c"], [2, 3, 4])
    twice = disk.recode(codes, small).recode({"a": [1, 0], "b": [2, 1, 0], "c": [0, 1, 2, 3]}, small)
    expect = data.recode(codes, small).recode({"a": [1, 0], "b": [2, 1, 0], "c": [0, 1, 2, 3]}, small)
    assert np.array_equal(twice.marginal(("a", "b")), expect.marginal(("a", "b")))
    assert np.array_equal(disk.project(["c", "a"]).marginal(("a", "c")), data.marginal(("a", "c")))
    assert np.array_equal(disk.sum_rows(lambda r: r.sum(axis=0)), records.sum(axis=0))
    assert np.array_equal(disk.to_memory().records, records)
    with pytest.raises(TypeError, match="not held in memory"):
        disk.records


def test_parquet_dataset_refuses_codes_outside_the_domain_naming_the_column(tmp_path):
    domain = Domain(["a", "b"], [3, 2])
    records = np.array([[0, 1], [2, 1], [1, 5]])
    disk = ParquetDataset(codes_on_disk(tmp_path, records, domain, 1), domain)
    with pytest.raises(InputError, match="column 'b' holds codes outside its domain 0..1"):
        disk.marginal(("b",))
    with pytest.raises(InputError, match="columns \\['z'\\] of the domain are missing"):
        ParquetDataset(disk.files, Domain(["a", "z"], [3, 2]))


def test_written_parts_equal_one_write_and_open_table_chooses_the_engine(tmp_path):
    frame = messy(100).astype({"age": str})
    for suffix in (".csv", ".parquet"):
        write_parts([frame], str(tmp_path / f"one{suffix}"))
        write_parts([frame.iloc[:30], frame.iloc[30:]], str(tmp_path / f"two{suffix}"))
    assert (tmp_path / "one.csv").read_text() == (tmp_path / "two.csv").read_text()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "one.parquet"), pd.read_parquet(tmp_path / "two.parquet"))
    assert isinstance(open_table(tmp_path / "one.csv", header=True), pd.DataFrame)
    assert isinstance(open_table(tmp_path / "one.csv", header=True, engine="parts"), Partitions)
    assert isinstance(open_table(str(tmp_path / "t*.csv"), header=True), Partitions)  # a glob
    with pytest.raises(InputError, match="engine must be one of auto, memory, parts"):
        open_table(tmp_path / "one.csv", header=True, engine="disk")
    with pytest.raises(InputError, match="say whether the CSV's first line names its columns"):
        Partitions(tmp_path / "one.csv")
    with pytest.raises(InputError, match="both CSV and Parquet"):
        Partitions(tmp_path, header=True)


def test_a_csv_line_longer_than_the_header_is_cut_in_parts_as_when_read_whole(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n" + "1,x\n" * 5 + "2,y,extra\n" + "3,z\n" * 5)
    whole = read_table(path, header=True)
    parts = pd.concat(list(Partitions(path, header=True, rows=3)), ignore_index=True)
    pd.testing.assert_frame_equal(whole, parts)


def test_the_command_line_synthesizes_a_folder_part_by_part(tmp_path):
    frame = messy(1200).drop(columns=["note"])
    as_text_files(frame, tmp_path / "in", 2)
    done = subprocess.run([sys.executable, "-m", "ektelo_pgm.cli", "synth", str(tmp_path / "in"), "--header",
                           "-o", str(tmp_path / "out.parquet"), "--epsilon", "1", "--mechanism", "mst",
                           "--drop", "id", "--seed", "0", "--cache", str(tmp_path / "codes")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = pd.read_parquet(tmp_path / "out.parquet")
    assert list(out.columns) == ["city", "age", "price", "day"] and len(out) > 1000
    assert not (tmp_path / "codes").exists()  # the codes are removed at the end


@pytest.mark.parametrize("stop, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_a_signal_during_a_fit_on_parts_leaves_no_code_behind(tmp_path, stop, code):
    """SIGTERM left every coded record in the temporary folder (files 0644); now SIGTERM, SIGHUP and
    Ctrl-C end the run with 128 + the signal's number, the codes and the output's temporary file
    removed.  The signal comes once the last part is coded (then the mechanism runs, seconds)."""
    rng = np.random.default_rng(0)
    (tmp_path / "in").mkdir()
    (tmp_path / "tmp").mkdir()
    for k in range(2):
        n = 50_000
        pd.DataFrame({"city": rng.choice(list("abcd"), n), "age": rng.integers(18, 90, n),
                      "x": rng.integers(0, 5, n)}).to_csv(tmp_path / "in" / f"part-{k}.csv", index=False)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"), "PYTHONFAULTHANDLER": "1"}  # a crash says where
    argv = ["synth", str(tmp_path / "in"), "--header", "-o", str(tmp_path / "out.csv"), "--epsilon", "1",
            "--mechanism", "mst", "--engine", "parts", "--quiet"]
    start_cli = ("import signal, sys; from ektelo_pgm.cli import main\n"  # Ctrl-C and hang-ups as from a terminal
                 "signal.signal(signal.SIGINT, signal.default_int_handler)\n"  # (not as under nohup, where
                 "signal.signal(signal.SIGHUP, signal.SIG_DFL); sys.exit(main(sys.argv[1:]))")  # SIGHUP is ignored)
    run = subprocess.Popen([sys.executable, "-c", start_cli, *argv], env=env, stderr=subprocess.PIPE, text=True)
    try:
        start = time.monotonic()
        while not glob.glob(str(tmp_path / "tmp" / "ektelo-codes-*" / "codes-00001.parquet")):
            assert run.poll() is None and time.monotonic() - start < 300, "the fit ended before its codes were seen"
            time.sleep(0.005)
        coded = glob.glob(str(tmp_path / "tmp" / "ektelo-codes-*" / "codes-*.parquet"))
        assert {stat.S_IMODE(os.stat(p).st_mode) for p in coded} == {0o600}
        assert stat.S_IMODE(os.stat(os.path.dirname(coded[0])).st_mode) == 0o700
        run.send_signal(stop)
        _, err = run.communicate(timeout=300)
    finally:
        run.kill()
    assert run.returncode == code, err
    assert err.endswith("ektelo-pgm: interrupted\n" if stop == signal.SIGINT else
                        f"ektelo-pgm: stopped by {signal.Signals(stop).name}\n")
    assert os.listdir(tmp_path / "tmp") == [] and sorted(os.listdir(tmp_path)) == ["in", "tmp"]  # no output either


def test_the_engine_is_chosen_from_the_decoded_size_against_the_memory_cap(tmp_path):
    """A Parquet file far smaller on disk than the cap whose table decoded passes it is read part
    by part, in parts sized to the cap; under a larger cap it is read whole."""
    frame = pd.DataFrame({"city": np.repeat(["Austin", "Dallas", "Waco"], 20_000), "n": np.arange(60_000) % 7})
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    assert os.path.getsize(path) < 2**20 / 4  # so the size on disk alone would read it whole
    small = open_table(path, max_memory="1MB")
    assert isinstance(small, Partitions) and small.rows == 10_000  # the fewest rows of a part
    assert sum(len(p) for p in small) == 60_000
    assert isinstance(open_table(path, max_memory="1GiB"), pd.DataFrame)
    assert isinstance(open_table(path, max_memory="1MB", engine="memory"), pd.DataFrame)  # the user's choice
    assert open_table(path, max_memory="1GiB", engine="parts").rows == 1_000_000


def test_memory_sizes_are_read_with_their_units_and_refused_by_name():
    from ektelo_pgm.memory import memory_cap, memory_size

    assert memory_size("4GiB") == memory_size("4 gb") == 4 * 2**30
    assert memory_size("512") == memory_size("512MB") == 512 * 2**20
    assert memory_size("1.5g") == int(1.5 * 2**30) and memory_size(2**21) == 2**21
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert memory_cap() == min(physical // 4, 2**30) and memory_cap("2GiB") == 2**31
    for wrong in ("4XB", "-1GB", "", "GB", "0.5MB", "1e400"):
        with pytest.raises(InputError, match="memory size"):
            memory_size(wrong)


def test_the_command_line_refuses_a_wrong_max_memory_naming_the_option(tmp_path, capsys):
    from ektelo_pgm.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["synth", str(tmp_path / "t.parquet"), "-o", str(tmp_path / "o.csv"), "--epsilon", "1",
              "--max-memory", "4XB"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert stop.value.code == 2 and "--max-memory" in err and "4XB" in err and "e.g. 4GiB" in err


def test_the_engine_a_cap_chooses_changes_no_byte_of_the_output(tmp_path):
    """Read whole or, under a small --max-memory, part by part: the same records, ledger and stderr."""
    path = tmp_path / "t.parquet"
    messy(6000).drop(columns=["id", "note"]).astype({"age": str}).to_parquet(path)
    assert isinstance(open_table(path, max_memory="1MB"), Partitions)
    assert isinstance(open_table(path, max_memory="1GiB"), pd.DataFrame)
    outputs = []
    for cap in ("1MB", "1GiB"):
        out = tmp_path / f"out-{cap}.csv"
        done = subprocess.run([sys.executable, "-m", "ektelo_pgm.cli", "synth", str(path), "-o", str(out),
                               "--epsilon", "1", "--mechanism", "mst", "--seed", "0", "--max-memory", cap],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        outputs.append((out.read_bytes(), done.stdout, done.stderr.replace(str(out), "OUT")))
    assert outputs[0] == outputs[1]


def test_the_note_on_reading_part_by_part_is_shown_only_with_progress(tmp_path, capsys):
    """The note says what the size of the files decided, so it is shown only where progress bars
    (which count records) are: on a terminal, never in a pipe, a file or a test's capture."""
    from ektelo_pgm import progress
    from ektelo_pgm.cli import parser, read_input

    path = tmp_path / "t.parquet"
    messy(6000).astype({"age": str}).to_parquet(path)
    args = parser().parse_args(["schema", str(path), "-o", str(tmp_path / "s.json"), "--epsilon", "1",
                                "--max-memory", "1MB"])
    for shown in (False, True):
        with progress.reporting(shown):
            frame, _ = read_input(args)
        err = capsys.readouterr().err
        assert isinstance(frame, Partitions)
        assert ("part by part" in err and "(--max-memory, 1 MB)" in err) == shown and err.count("\n") == shown


def test_a_column_of_identifiers_past_the_cap_is_noted_where_progress_is_shown(tmp_path):
    """The schema's counts of a column of unique values grow with the rows: past the memory cap a
    note names the column, shown only where progress bars are (its count is the data's)."""
    import io

    from ektelo_pgm import progress

    path = tmp_path / "t.parquet"
    messy(30_000).astype({"age": str}).drop(columns=["note", "price"]).to_parquet(path)
    table = open_table(path, max_memory="1MB")
    assert isinstance(table, Partitions) and table.cap == 2**20
    for shown, columns in ((True, table.columns), (True, ["city", "age"]), (False, table.columns)):
        stream = io.StringIO()
        with progress.reporting(shown, stream):
            schemas.tallies(table[columns], MARKERS)
        notes = [line for line in stream.getvalue().splitlines() if "note:" in line]
        expected = shown and "id" in columns
        assert len(notes) == expected
        assert not expected or "column 'id' holds 10,000: an identifier?" in notes[0] and "MB" in notes[0]


def test_a_column_past_the_cap_is_counted_range_by_range_with_the_same_release(tmp_path):
    """A column with more distinct values than the memory cap holds is kept on disk by ranges of
    a fixed hash of its values and read back range by range (issue 53): the schema (identifier
    left out, times, fractional numbers, text), its thresholds and the ledger are those of the
    table read whole, and of one range or many."""
    from ektelo_pgm.schema.counts import Spilled

    rng = np.random.default_rng(3)
    n = 30_000
    frame = messy(n).astype({"age": str}).drop(columns=["note", "price"])
    frame["stamp"] = (pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 10**7, n), unit="s")).strftime(
        "%Y-%m-%d %H:%M:%S")
    frame["ratio"] = np.round(rng.random(n), 4)
    towns = rng.choice(200, n, p=np.arange(1, 201) / 20_100)  # 1 to 260 records each: some about the threshold
    frame["town"] = [f"town {t}" if k % 8 else f"village {k}" for k, t in enumerate(towns)]  # and 3,750 once
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, row_group_size=6_000)

    def schema(table, folder=None):
        budget, left_out, thresholds = Budget.approx(4.0, 1e-9), {}, {}
        encoder = schemas.learn(table, budget, schemas.AUTO, 1e-10, 0, left_out=left_out, thresholds=thresholds,
                                folder=folder)
        return encoder.to_dict(), left_out, thresholds, [c.label for c in budget.ledger]

    whole = schema(pd.read_parquet(path))
    assert "id" in whole[1] and "identifier" in whole[1]["id"]
    town = next(c for c in whole[0]["columns"] if c["name"] == "town")
    assert 100 < len(town["categories"]) < 200 and town["other"] is not None  # towns about the threshold
    for cap, ranges in (("1GiB", 1), ("1MB", 2)):
        table = open_table(path, max_memory=cap, engine="parts")
        folder = tmp_path / cap
        folder.mkdir()
        counted = schemas.tallies(table, MARKERS, str(folder))
        spilled = [name for name, t in counted.items() if isinstance(t, Spilled)]
        assert (len(spilled) > 0) == (ranges > 1)
        assert all(len(list(counted[name].chunks())) >= ranges for name in spilled)
        assert schema(table, str(folder)) == whole
