"""number_formats: numbers written with symbols, read per value and written back."""
import re

import numpy as np
import pandas as pd
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings, strategies as st

from ektelo_pgm.number_formats import (NUMBER_FORMATS, as_numbers, as_written, decimals_of, most_read, number_formats,
                                       number_texts, read_numbers, reads, shortest_text, whole_as_ints)
from ektelo_pgm.table_io import canonical_value, write_table

WRITTEN = {  # text -> (the first format that reads it with its signs, the number)
    "$1,243.56": ("$1,234.5", 1243.56), "-$5": ("$1,234.5", -5), "$-5.5": ("$1,234.5", -5.5),
    "($960.92)": ("$1,234.5", -960.92), "$(1,000)": ("$1,234.5", -1000), "€1,234,567.00": ("€1,234.5", 1234567),
    "£3": ("£1,234.5", 3), "¥12,000": ("¥1,234.5", 12000), "12,435": ("1,234.5", 12435),
    "(960.92)": ("1,234.5", -960.92), "1,000,000": ("1,234.5", 10 ** 6), "65.2%": ("1,234.5%", 65.2),
    "(5%)": ("1,234.5%", -5), "1243,56": ("1.234,5", 1243.56), "1.234,56": ("1.234,5", 1234.56),
    "1 234,5": ("1.234,5", 1234.5), "-0,5": ("1.234,5", -0.5), "1.234,56 €": ("1.234,5 €", 1234.56),
    "5 €": ("1.234,5 €", 5), "€ 1.234,56": ("€1.234,5", 1234.56), "€ 5": ("€1,234.5", 5),
    "12,5%": ("1.234,5%", 12.5),
}
NOT_NUMBERS = ["9:27", "abc", "--5", "(5", "(-5)", "-(5)", "1,23,456", "$$5", "5$", "1.234.56,7", "12,5 $", "", "$"]


def test_each_value_counts_once_for_the_first_format_with_its_signs():
    """A whole number written with separators, a fraction, or a whole number in digits alone
    (``€ 5``: read alike with a decimal point or comma, so the format with a decimal comma and
    the same signs reads it too)."""
    formats = len(NUMBER_FORMATS)
    values = np.array([canonical_value(v) for v in [*WRITTEN, *NOT_NUMBERS]] + [1234, 5.5], dtype=object)
    expected = []
    for text, (fmt, number) in WRITTEN.items():
        part = 1 if isinstance(number, float) else 2 if not re.search(r"\d\D+\d", text) else 0
        expected.append(NUMBER_FORMATS.index(fmt) + part * formats)
        read = as_numbers(np.array([text], dtype=object), fmt)[0]
        assert read == pytest.approx(number) and type(read) is type(number), text
    assert number_formats(values).tolist() == expected + [-1] * (len(NOT_NUMBERS) + 2)
    assert reads("€1.234,5")[2 * formats + NUMBER_FORMATS.index("€1,234.5")]  # "€ 5"
    assert not reads("€1.234,5")[NUMBER_FORMATS.index("€1,234.5")] and not reads("$1,234.5")[formats + 6]


def test_a_format_reads_its_numbers_with_or_without_signs_and_plain_numbers_as_they_are():
    values = np.array(["$1,234.50", "1,234.5", 17, 2.5, "€5", "65%", None, "n/a"], dtype=object)
    assert as_numbers(values, "$1,234.5").tolist() == [1234.5, 1234.5, 17, 2.5, None, None, None, None]
    assert read_numbers(values, "$1,234.5").tolist() == as_numbers(values, "$1,234.5").tolist()
    assert read_numbers(np.array(["2020-01-02"], dtype=object), "%Y-%m-%d").tolist() == [18263 * 86400]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NUMBER_FORMATS), st.integers(-10 ** 15, 10 ** 15), st.integers(0, 6))
def test_numbers_written_in_a_format_read_back_as_themselves(fmt, scaled, decimals):
    """Written, then read as every step reads a raw value (a European whole number is written
    without grouping: ``1.234`` would read as a plain number, one point two three four)."""
    def read_back(texts):
        return as_numbers(np.array([canonical_value(t) for t in texts], dtype=object), fmt)

    assert read_back(number_texts(np.array([scaled], dtype=object), fmt, None)).tolist() == [scaled]
    x = scaled / 10 ** decimals
    assert read_back(number_texts(np.array([x]), fmt, decimals))[0] == pytest.approx(x, rel=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NUMBER_FORMATS), st.floats(-1e18, 1e18, allow_nan=False))
def test_fractions_written_with_their_fewest_decimals_read_back_exactly(fmt, x):
    text = number_texts(np.array([x]), fmt, None)
    assert float(as_numbers(np.array([canonical_value(text[0])], dtype=object), fmt)[0]) == x


def test_a_column_declared_numeric_reads_each_value_in_the_first_format_that_reads_it():
    """A column declared numeric (--metadata bounds) releases no format: its prices written as
    $1,234.50 were text, every record coded to its first bin or blank; each value is now read in
    the first format that reads it with its signs."""
    import pandas as pd

    from ektelo_pgm.columns import NumericColumn
    from ektelo_pgm.schema.codes import column_values, value_codes

    values = pd.Series(["$1,234.50", "($5)", "12%", "7", "1.234,5 €", "abc", None], dtype=object)
    column = NumericColumn("price", (-10, 0, 10, 100, 2000), False, True)
    rows, read = column_values(values, column, frozenset())
    assert value_codes(read, column)[rows].tolist() == [3, 0, 2, 1, 3, 4, 4]
    assert as_written(np.array(["$5", "x", 3, None], dtype=object)).tolist() == [5, "x", 3, None]


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="0123456789.,  \u00a0()-+$€£¥%a", max_size=14))
def test_the_quick_pattern_lets_through_every_value_a_format_reads(text):
    """Texts that no format could read skip the formats: the quick pattern holds all they read."""
    from ektelo_pgm.number_formats import _ANY, _read

    if any(_read(text, fmt, signs=True) is not None for fmt in NUMBER_FORMATS):
        assert _ANY.fullmatch(text), text


def test_the_format_chosen_reads_the_most_whole_numbers_in_digits_alone_included():
    """Euros with decimal commas, most of them whole and written in digits alone (``€ 5``): summed
    per format as counted, the format with a decimal point held the most (the whole euros count
    first for it) and read none of the fractions; the one that reads them all is chosen."""
    written = ["€ 5"] * 60 + ["€ 1.234,56"] * 30 + ["€ 7,5"] * 10
    values = np.array([canonical_value(v) for v in written], dtype=object)
    counts = np.bincount(number_formats(values) + 1, minlength=3 * len(NUMBER_FORMATS) + 1)[1:]
    assert most_read(counts) == "€1.234,5" and counts[reads("€1.234,5")].sum() == 100
    assert most_read(np.zeros(3 * len(NUMBER_FORMATS))) is None
    import pandas as pd

    from ektelo_pgm.privacy import Budget
    from ektelo_pgm.schema import infer

    column = infer(pd.DataFrame({"price": np.tile(values, 40)}), Budget.zcdp(1.0), None, 1e-9, rng=0).columns["price"]
    assert column.number_format == "€1.234,5" and column.decimals == 2


def test_whole_as_ints_holds_whole_numbers_as_ints_which_a_text_file_writes_plain(tmp_path):
    """As R writes a fractional column (``0``, ``2.5``); NaN, infinities and numbers past 2**53 kept."""
    values = pd.Series([0.0, 2.5, None, -3.0, np.inf, 1e20, -0.0], dtype=float, name="x")
    held = whole_as_ints(values)
    assert held.name == "x" and held.index.equals(values.index) and held.dtype == object
    write_table(pd.DataFrame({"x": held, "y": 1}), str(tmp_path / "o.csv"))
    assert (tmp_path / "o.csv").read_text() == "x,y\n0,1\n2.5,1\n,1\n-3,1\ninf,1\n1e+20,1\n0,1\n"


@given(st.integers(1, 999_999), st.integers(-12, 6), st.booleans())
def test_a_short_decimal_stored_as_a_float32_is_read_as_itself(digits, exponent, negative):
    """A decimal of up to 6 significant digits stored as a float32 and read back widened
    (``3.200000047683716``) or from its 8 digits (``3.4000002``) is that decimal, with its decimals."""
    decimal = float(f"{'-' if negative else ''}{digits}e{exponent}")
    single = np.float32(decimal)
    for stored in (float(single), float(f"{single:.8g}")):
        assert float(shortest_text(stored)) == decimal and decimals_of(stored) == decimals_of(decimal), stored


def test_numbers_of_more_digits_than_a_float32_holds_keep_their_decimals():
    """A number whose float32 takes more than 6 digits to write is read as itself: latitudes with 6
    decimals, numbers past a float32's range or below its normal ones (which hold fewer digits); a sum
    of floats is read as the decimal it rounds to as a float32 (``0.1 + 0.2``: 0.3)."""
    cases = {2.5: 1, 1e-05: 5, 3e20: 0, 0.0: 0, 7: 0, -93.265011: 6, 1234567.891: 3, 0.123456789: 9,
             0.1 + 0.2: 1, 1e300 / 3: 0, 3.5e38 + 1e30: 0, 2.0 ** -140: 58}
    assert {x: decimals_of(x) for x in cases} == cases
