"""The shared stopping rule: certified gaps stop a run as converged, stalls and caps do not."""
import pytest

from ektelo_pgm.convergence import PATIENCE, StoppingRule


def test_a_certified_gap_stops_the_run_as_converged():
    seen = []
    rule = StoppingRule(tol=1e-3, callback=lambda t, v: seen.append((t, v)))
    assert not rule.start(100.0, 5.0)
    assert not rule.update(90.0, 1.0)
    assert rule.update(89.0, 0.089)  # 0.089 <= 1e-3 * 89
    assert rule.converged and rule.iterations == 2 and seen == [(1, 90.0), (2, 89.0)]


def test_gaps_below_one_unit_of_loss_are_relative_to_that_unit():
    rule = StoppingRule(tol=1e-6)
    assert not rule.start(1e-9, 2e-6)
    assert rule.update(1e-12, 1e-6) and rule.converged  # a noiseless optimum: loss tends to 0


def test_a_stalled_loss_stops_the_run_without_claiming_convergence():
    rule = StoppingRule(tol=1e-9, ftol=1e-12)
    rule.start(10.0, 1.0)
    stops = [rule.update(10.0 - 1e-13 * t, 0.5) for t in range(1, PATIENCE + 1)]
    assert stops == [False] * (PATIENCE - 1) + [True]
    assert not rule.converged and rule.gap == 0.5


def test_tolerances_are_checked():
    with pytest.raises(ValueError, match="tol"):
        StoppingRule(tol=-1.0)
    with pytest.raises(ValueError, match="ftol"):
        StoppingRule(ftol=float("nan"))
