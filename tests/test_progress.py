"""Progress reporting: off in tests and pipes unless asked, on a given stream when forced, showing
mechanism rounds, estimation iterations with their loss and record sampling; when off it leaves
solvers' callbacks untouched and writes nothing."""
import io

import numpy as np
import pytest

from ektelo_pgm import progress
from ektelo_pgm.mechanisms import MST, MWEM
from ektelo_pgm.operators.measure import Laplace
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights
from ektelo_pgm.operators.reconstruct import APPGM, PGM
from ektelo_pgm.privacy import Budget
from ektelo_pgm.workload import Query

from conftest import TOY_DOMAIN, toy


class Terminal(io.StringIO):
    def isatty(self):
        return True


def measurements(seed=0):
    data = toy(500, seed)
    queries = [Query(("a", "b")), Query(("b", "c"))]
    return Laplace().measure(data, queries, Budget.pure(1.0), np.random.default_rng(seed))


def test_off_under_pytest_by_default_even_on_a_terminal(capsys):
    assert not progress.active()
    with progress.reporting(None, Terminal()):
        assert not progress.active()
    PGM(iters=20).reconstruct(TOY_DOMAIN, measurements())
    assert capsys.readouterr().err == ""


def test_automatic_follows_the_terminal_outside_tests(monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # as outside tests: automatic, on a terminal
    with progress.reporting(None, Terminal()):
        assert progress.active()
    with progress.reporting(None, io.StringIO()):  # a pipe or a file
        assert not progress.active()


def test_reporting_nests_and_restores():
    with progress.reporting(True, io.StringIO()):
        assert progress.active()
        with progress.reporting(False):
            assert not progress.active()
        assert progress.active()
    assert not progress.active()


@pytest.mark.parametrize("callback", [None, print])
def test_off_leaves_a_solver_callback_as_it_is(callback):
    with progress.reporting(False), progress.tracked(callback, 10, "x") as given:
        assert given is callback  # None stays None: the compiled loops keep their fast path


def test_forced_on_shows_estimation_iterations_with_their_loss():
    stream = io.StringIO()
    seen = []
    with progress.reporting(True, stream):
        model = PGM(iters=30).reconstruct(TOY_DOMAIN, measurements(), callback=lambda t, loss: seen.append(loss))
    text = stream.getvalue()
    assert "PGM (lbfgs)" in text and f"{model.iterations}/30" in text  # the method the default resolved to
    assert f"loss={seen[-1]:.4g}" in text  # the last loss, shown when the bar closes
    assert len(seen) == model.iterations  # the user's callback still sees every iteration


@pytest.mark.parametrize("operator, name", [(APPGM(iters=20), "APPGM"),
                                            (MultiplicativeWeights(iters=20, tol=0), "MW on 3 attributes")])
def test_other_iterative_reconstructions_report_too(operator, name):
    stream = io.StringIO()
    with progress.reporting(True, stream):
        operator.reconstruct(TOY_DOMAIN, measurements(), total=500.0)
    assert name in stream.getvalue() and "loss=" in stream.getvalue()


def test_forced_on_shows_mechanism_rounds_with_the_budget_spent_and_sampling():
    stream = io.StringIO()
    with progress.reporting(True, stream):
        result = MWEM([Query(("a", "b")), Query(("b", "c"))], rounds=3, total=500.0).run(toy(500), Budget.pure(1.0), 0)
        result.estimate.synthetic_data(100, rng=0)
    text = stream.getvalue()
    assert "MWEM" in text and "3/3" in text and "epsilon spent=1/1" in text


def test_mst_phases_and_pgm_sampling():
    stream = io.StringIO()
    with progress.reporting(True, stream):
        result = MST(iters=20).run(toy(500), Budget.approx(1.0, 1e-6), 0)
        result.estimate.synthetic_data(200, rng=0)
        result.estimate.synthetic_data(300, rng=0, method="sample")
    text = stream.getvalue()
    assert "MST" in text and "3/3" in text and "2-way marginals and fit" in text
    assert "rounding 200 records" in text and "sampling 300 records" in text


def test_no_output_when_off(capsys):
    stream = io.StringIO()
    with progress.reporting(False, stream):
        MWEM([Query(("a", "b"))], rounds=2, total=500.0).run(toy(500), Budget.pure(1.0), 0)
        with progress.bar(5, "loop") as shown:
            shown.update(loss=1.0)
    assert stream.getvalue() == "" and capsys.readouterr().err == ""


def test_the_command_line_quiet_flag_silences_progress(monkeypatch):
    from ektelo_pgm import cli

    seen = []
    monkeypatch.setattr(cli, "synth", lambda args: seen.append(progress.active()))
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # as outside tests: automatic, on a terminal
    monkeypatch.setattr("sys.stderr", Terminal())
    for quiet in ([], ["--quiet"]):
        cli.main(["synth", "in.csv", "-o", "out.csv", "--epsilon", "1"] + quiet)
    assert seen == [True, False]
