"""Contribution bounding (issue 54): at most K rows of each person kept, chosen uniformly."""
import itertools
import os
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from ektelo_pgm.privacy import Budget, Person
from ektelo_pgm.privacy.contribution import BUCKETS, bound_rows, person_relation, rows_histogram, rows_per_person
from ektelo_pgm.privacy.noise import gaussian_std
from ektelo_pgm.table_io import Partitions


def _visits(rows_per_person=(6, 1, 3, 9), seed=0):
    """A table of visits: person ``p`` has ``rows_per_person[p]`` rows, numbered in ``row``."""
    ids = np.repeat([f"p{i}" for i in range(len(rows_per_person))], rows_per_person)
    order = np.random.default_rng(seed).permutation(len(ids))
    return pd.DataFrame({"who": ids[order], "row": np.arange(len(ids)), "x": np.arange(len(ids)) % 3})


@pytest.mark.parametrize("secure", [False, True])
def test_at_most_k_rows_of_each_person_are_kept_in_order_without_the_column(secure):
    table = _visits()
    for k in (1, 2, 3, 9, 20):
        kept = bound_rows(table, "who", k, np.random.default_rng(k), secure=secure)
        assert list(kept.columns) == ["row", "x"] and kept.index.equals(pd.RangeIndex(len(kept)))
        assert kept.row.is_monotonic_increasing and set(kept.row) <= set(table.row)
        per = table.set_index("row").loc[kept.row, "who"].value_counts()
        assert per.to_dict() == {p: min(k, n) for p, n in table.who.value_counts().items()}


def test_the_kept_rows_of_a_person_are_a_uniform_choice():
    """Person p0 has 6 rows, K = 2: each of the 15 pairs is kept about equally often (chi-square over
    2,000 draws from one seeded generator); so are the single rows of person p3 (9 rows) at K = 1."""
    table = _visits()
    rng = np.random.default_rng(54)
    rows = {p: sorted(table.row[table.who == p]) for p in ("p0", "p3")}
    pairs = {pair: 0 for pair in itertools.combinations(rows["p0"], 2)}
    singles = {r: 0 for r in rows["p3"]}
    for _ in range(2000):
        kept = set(bound_rows(table, "who", 2, rng).row)
        pairs[tuple(sorted(kept & set(rows["p0"])))] += 1
        (single,) = set(bound_rows(table, "who", 1, rng).row) & set(rows["p3"])
        singles[single] += 1
    assert stats.chisquare(list(pairs.values())).pvalue > 1e-3
    assert stats.chisquare(list(singles.values())).pvalue > 1e-3
    assert stats.chisquare(list(pairs.values()), [1000.0] + [1000.0 / 14] * 14).pvalue < 1e-6  # it can fail


def test_blank_ids_are_one_person():
    table = pd.DataFrame({"who": [None, "a", None, np.nan, "a", None], "x": range(6)})
    kept = bound_rows(table, "who", 1, np.random.default_rng(0))
    assert len(kept) == 2


def test_one_person_changes_only_their_own_kept_rows():
    """A person added to a table changes the kept rows by theirs alone, at most K (same draws for the
    others: the kept set of each person depends on their rows' relative order only)."""
    table = _visits((5, 4, 7), seed=3)
    more = pd.concat([table, pd.DataFrame({"who": ["new"] * 8, "row": range(100, 108), "x": [0] * 8})],
                     ignore_index=True)
    for k in (1, 3, 8):
        kept = bound_rows(more, "who", k, np.random.default_rng(1))
        assert (kept.row >= 100).sum() == min(k, 8) and len(kept) - min(k, 8) == sum(min(k, n) for n in (5, 4, 7))


def test_refusals_are_one_line_and_name_the_option(tmp_path):
    table = _visits()
    with pytest.raises(ValueError, match=r"^--person 'nobody': no such column in the table$"):
        bound_rows(table, "nobody", 2)
    with pytest.raises(ValueError, match="--max-rows-per-person"):
        bound_rows(table, "who", 0)
    with pytest.raises(ValueError, match="go together"):
        person_relation("who", None)
    with pytest.raises(ValueError, match="go together"):
        person_relation(None, 3)
    assert person_relation(None, None) is None and person_relation("who", 3) == Person(3)
    table.to_csv(tmp_path / "visits.csv", index=False)
    with pytest.raises(ValueError, match=r"^--person: a table read part by part .* \(--engine memory\)$"):
        bound_rows(Partitions(tmp_path / "visits.csv", header=True), "who", 2)


def test_one_person_changes_one_count_of_the_rows_histogram_by_one():
    """Brute force: removing any one person, of 1 to 120 rows (every kind of bucket, blanks one
    person), changes the exact histogram of rows per person by one in one bucket: L1 and L2
    sensitivity 1, whatever K."""
    rows = (1, 2, 3, 4, 4, 7, 20, 21, 35, 50, 51, 120)
    table = _visits(rows)
    table.loc[table.who == "p5", "who"] = None  # the person of 7 rows: blank ids
    full = rows_per_person(table, "who")
    expected = np.zeros(len(BUCKETS), int)
    expected[[0, 1, 2, 3, 6, 19, 20, 21]] = [1, 1, 1, 2, 1, 1, 3, 2]
    assert full.tolist() == expected.tolist()
    for person in table.who.unique():
        rest = table[table.who.notna()] if pd.isna(person) else table[table.who != person]
        change = full - rows_per_person(rest, "who")
        assert np.abs(change).sum() == 1 and change.max() == 1


@pytest.mark.parametrize("k", [1, 10])
def test_the_rows_histogram_is_one_charge_at_sensitivity_one_and_written_noisy(tmp_path, k):
    """A tenth of what remains, one ledger line, noise of sensitivity 1 whatever K (one person is
    in one bucket); the counts written and printed are noisy, never the exact ones."""
    table = _visits(tuple(1 + np.arange(400) % 30))
    budget = Budget.zcdp(0.5, Person(k))
    line = rows_histogram(table, "who", budget, np.random.default_rng(k), tmp_path / "h.json")
    [charge] = budget.ledger
    assert (charge.label, charge.mechanism) == ("rows per person histogram", "gaussian")
    assert charge.parameter == pytest.approx(0.05) and budget.remaining == pytest.approx(0.45)
    written = json.loads((tmp_path / "h.json").read_text())
    assert written["rows"][:2] == ["1", "2"] and written["rows"][-2:] == ["21-50", "51+"]
    assert written["noise_std"] == pytest.approx(gaussian_std(1.0, 0.05)) and 3 < written["noise_std"] < 3.3
    exact = rows_per_person(table, "who")
    noisy = np.array(written["persons"])
    assert (noisy >= 0).all() and (noisy != exact).sum() >= len(BUCKETS) // 2
    assert np.abs(noisy - exact).max() <= 6 * written["noise_std"]
    assert line.endswith(", ".join(f"{r}: {n}" for r, n in zip(written["rows"], written["persons"])))
    with pytest.raises(ValueError, match=r"^--rows-per-person-histogram needs --person and --max-rows-per-person$"):
        rows_histogram(table, None, budget)


def test_a_table_read_part_by_part_is_bounded_by_person_in_its_private_folder(tmp_path):
    """Partitions in parts of 7 rows, the memory cap forcing 8 groups by person: at most K rows of
    each person kept, the person column left out, parts of at most 7 rows, the groups' files 0600
    in the private folder and gone with it."""
    from ektelo_pgm.files import private_folder
    from ektelo_pgm.table_io import Partitions as Parts

    rows = tuple(1 + np.arange(60) % 9)
    table = _visits(rows, seed=5)
    table.to_csv(tmp_path / "visits.csv", index=False)
    parts = Parts(tmp_path / "visits.csv", header=True, rows=7)
    parts.cap = parts.bytes
    who = table.set_index("row").who
    for k in (1, 4):
        with private_folder(tmp_path / "cache") as folder:
            bounded = bound_rows(parts, "who", k, np.random.default_rng(k), folder=folder)
            assert isinstance(bounded, Parts) and bounded.columns == ["row", "x"] and len(bounded.files) > 1
            pieces = list(bounded)
            assert all(len(p) <= 7 and list(p.columns) == ["row", "x"] for p in pieces)
            kept = pd.concat(pieces).row.astype(int)
            assert who.loc[kept].value_counts().to_dict() == {f"p{p}": min(k, n) for p, n in enumerate(rows)}
            assert list(bounded[["x"]])[0].columns.tolist() == ["x"]
            assert {oct(os.stat(f).st_mode & 0o777) for f in bounded.files} == {"0o600"}
            assert sorted(os.listdir(folder)) == sorted(os.path.basename(f) for f in bounded.files)
        assert not (tmp_path / "cache").exists()


def test_a_person_whose_id_changes_type_between_parts_stays_one_person(tmp_path):
    """Two Parquet files of one table: person 7 an integer in one, a float in the other (its
    blanks too): grouped over 50 groups, still at most K rows of person 7, and of the blanks."""
    pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the 'parquet' extra)")
    from ektelo_pgm.files import private_folder
    from ektelo_pgm.table_io import Partitions as Parts

    (tmp_path / "t").mkdir()
    pd.DataFrame({"who": np.repeat([7, 8], 3), "x": range(6)}).to_parquet(tmp_path / "t" / "a.parquet")
    pd.DataFrame({"who": [7.0, 7.0, 9.0, np.nan, np.nan], "x": range(6, 11)}).to_parquet(tmp_path / "t" / "b.parquet")
    parts = Parts(tmp_path / "t", rows=2)
    parts.cap = max(1, parts.bytes // 6)  # 48 groups or more
    for seed in range(20):
        with private_folder(tmp_path / "cache") as folder:
            kept = pd.concat(list(bound_rows(parts, "who", 2, np.random.default_rng(seed), folder=folder))).x
        assert kept.isin([0, 1, 2, 6, 7]).sum() == 2 and kept.isin([3, 4, 5]).sum() == 2  # persons 7 and 8
        assert kept.isin([9, 10]).sum() == 2 and 8 in set(kept) and len(kept) == 7  # the blanks, person 9
