"""Synthetic records over attributes nothing was measured about: a warning naming them, and
``attrs=`` to draw only the measured ones (the same records, those columns)."""
import warnings

import numpy as np
import pytest

from ektelo_pgm.domain import Domain
from ektelo_pgm.estimate import UnmeasuredAttributeWarning
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.reconstruct import APPGM, PGM

DOMAIN = Domain(list("abcd"), [3, 4, 2, 5])  # d is never measured


def _measurements():
    rng = np.random.default_rng(0)
    ab = rng.integers(1, 50, (3, 4)).astype(float)
    bc = np.stack([ab.sum(axis=0) * 0.3, ab.sum(axis=0) * 0.7], axis=1)  # consistent with ab on b
    return [Measurement(("a", "b"), ab.ravel(), 1.0), Measurement(("b", "c"), bc.ravel(), 1.0)]


@pytest.mark.parametrize("operator", [PGM(iters=100), APPGM(iters=100, region_graph="tree")], ids=["pgm", "appgm"])
def test_unmeasured_attributes_warn_and_attrs_restricts_to_the_measured_ones(operator):
    estimate = operator.reconstruct(DOMAIN, _measurements())
    with pytest.warns(UnmeasuredAttributeWarning, match=r"nothing was measured about \['d'\].*attrs=\['a', 'b', 'c'\]"):
        everything = estimate.synthetic_data(500, rng=1)
    assert everything.domain.attrs == DOMAIN.attrs
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmeasuredAttributeWarning)
        measured = estimate.synthetic_data(500, rng=1, attrs=["c", "a", "b"])
    assert measured.domain.attrs == ("c", "a", "b")
    np.testing.assert_array_equal(measured.records, everything.records[:, [2, 0, 1]])
    with pytest.warns(UnmeasuredAttributeWarning, match=r"\['d'\]"):
        estimate.synthetic_data(10, rng=1, attrs=["a", "d"])


@pytest.mark.parametrize("operator", [PGM(iters=100), APPGM(iters=100, region_graph="tree")], ids=["pgm", "appgm"])
def test_a_refused_record_count_warns_about_nothing(operator):
    estimate = operator.reconstruct(DOMAIN, _measurements())
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnmeasuredAttributeWarning)
        with pytest.raises(ValueError, match="at least one record"):
            estimate.synthetic_data(0, rng=1)
