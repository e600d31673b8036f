import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from ektelo_pgm.encoding import TableEncoder
from ektelo_pgm.privacy import Budget
from ektelo_pgm.schema import (BOUNDARIES, LEVELS, N_CELLS, cell_of, declared, encodable, infer,
                               release_threshold)


@pytest.mark.parametrize("scale, delta", [(0.7, 1e-2), (3.0, 1e-4), (10.0, 1e-6)])
def test_a_value_held_by_one_record_passes_with_probability_at_most_delta(scale, delta):
    """Exact tails of the discrete Gaussian (parameter scale) and Laplace (scale) by summation."""
    x = np.arange(-4000, 4001)
    for notion, weights in (("zcdp", np.exp(-x ** 2 / (2 * scale ** 2))), ("pure", np.exp(-np.abs(x) / scale))):
        tau = release_threshold(notion, scale, delta)
        tail = weights[1 + x >= tau].sum() / weights.sum()  # count 1 plus noise reaches tau
        assert tail <= delta, (notion, tail)
        assert tail > delta / 1e3  # not needlessly far out


def test_cells_levels_and_boundaries():
    numbers = np.array([-2.5e13, -17.0, -0.00001, 0.0, 1e-9, 17.0, 17.99, 18.0, 1.5e4, 9.9e12, 2e13])
    cells = cell_of(numbers)
    assert cells[0] == 0 and cells[-1] == N_CELLS - 1
    assert BOUNDARIES[cells[5] - 1] == 17.0 and BOUNDARIES[cells[5]] == 18.0 and cells[6] == cells[5]
    assert len(set(cells)) == len(numbers) - 1
    decade, tenth = LEVELS[0], LEVELS[1]
    assert decade[cell_of(np.array([10.0]))[0]] == decade[cell_of(np.array([99.9]))[0]]
    assert tenth[cell_of(np.array([17.0]))[0]] == tenth[cell_of(np.array([19.9]))[0]]
    assert tenth[cell_of(np.array([19.9]))[0]] != tenth[cell_of(np.array([20.0]))[0]]
    assert decade[cells[1]] != decade[cells[5]]  # negatives mirror, apart
    for level in LEVELS:  # groups are runs of consecutive cells, numbered in order
        assert np.all(np.diff(level) >= 0) and level[0] == 0


def table(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "colour": rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2]),
        "rare": np.where(np.arange(n) % 2000 == 7, "rare", "common"),
        "age": rng.integers(20, 70, n),
        "gain": np.where(rng.random(n) < 0.9, 0, rng.integers(1000, 9000, n)),
        "price": np.round(rng.uniform(1.5, 8.5, n), 3),
        "code": rng.choice([1, 2, 3], n).astype(object),
    }).assign(code=lambda t: t.code.where(np.arange(n) % 10 != 0, "?"))


def test_inferred_schema_on_a_clear_table():
    frame = table()
    budget = Budget.zcdp(1.0)
    encoder = infer(frame, budget, None, 1e-9, rng=0)
    c = encoder.columns
    assert c["colour"].kind == "categorical" and set(c["colour"].categories) == {"red", "green", "blue"}
    assert not c["colour"].missing  # every row has a released colour
    assert c["rare"].categories == ("common",)  # ten records: below the release threshold
    assert c["code"].kind == "categorical" and c["code"].categories == (1, 2, 3) and c["code"].missing
    for name in ("age", "gain", "price"):
        assert c[name].kind == "numeric" and not c[name].missing, name
    assert c["age"].integer and c["gain"].integer and not c["price"].integer
    assert c["gain"].edges[:2] == (0, 1)  # the point mass at 0 is its own bin
    for name in ("age", "gain", "price"):
        lo, top = c[name].edges[0], c[name].edges[-1]
        assert frame[name].min() <= lo and top <= frame[name].max() + (1 if c[name].integer else 0), name
    assert 20 <= c["age"].bins + 2 <= 34
    # one charge per column, equal shares, all of the budget
    assert [ch.label for ch in budget.ledger] == [f"schema of column {n!r}" for n in frame.columns]
    assert len({ch.amount for ch in budget.ledger}) == 1 and budget.remaining < 1e-12


def test_encodable_drops_rows_a_column_cannot_code():
    frame = table(4000)
    encoder = TableEncoder(clip=True)
    encoder.columns = declared({"columns": {
        "colour": {"kind": "categorical", "categories": ["red", "green"], "missing": False},
        "age": {"kind": "numeric", "bounds": [20, 69]}}}).columns
    kept = encodable(frame.assign(age=frame.age.astype(object).where(frame.index != 3, "old")), encoder)
    assert len(kept) == (frame.colour != "blue").sum()
    assert kept.age.isna().sum() == int(frame.colour[3] != "blue")  # text in a numeric column: missing
    encoder.transform(kept)  # every kept row codes


def test_the_written_schema_reads_back_as_declared(tmp_path):
    encoder = infer(table(5000), Budget.zcdp(1.0), None, 1e-9, rng=1)
    encoder.save(tmp_path / "schema.json")
    again = declared(str(tmp_path / "schema.json"))
    assert again.columns == encoder.columns and again.clip


def test_amount_is_never_exceeded_and_delta_is_shared():
    budget = Budget.zcdp(0.3)
    infer(table(3000), budget, 0.1, 1e-9, rng=2)
    spent = sum(ch.amount for ch in budget.ledger)
    assert spent <= Fraction(1, 10) and Fraction(1, 10) - spent < Fraction(1, 10 ** 15)
    assert math.isclose(budget.remaining, 0.2)
