"""benchmarks/aim_wide.py: the slices of a corpus table's columns it runs."""
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import aim_wide  # noqa: E402


def test_a_table_name_with_bounds_names_a_slice_of_its_columns():
    assert aim_wide.corpus_part("ames[20:40]") == ("ames", slice(20, 40))
    assert aim_wide.corpus_part("loans[0:24]") == ("loans", slice(0, 24))
    assert aim_wide.corpus_part("ames") == ("ames", None)
