"""Ordinary slips get an error naming the problem and what to do: Plan stages in the wrong order,
a number where a Budget belongs (at every entry point, before anything is charged), and size
refusals that say what to use instead."""
import numpy as np
import pytest

from ektelo_pgm import Budget
from ektelo_pgm.dataset import Dataset
from ektelo_pgm.domain import Domain
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators import measure, select
from ektelo_pgm.operators.multiplicative_weights import MultiplicativeWeights
from ektelo_pgm.operators.reconstruct import PGM, LeastSquares, NonNegativeLeastSquares
from ektelo_pgm.pgm.junction_tree import ModelTooLargeError
from ektelo_pgm.mechanisms import MWEM
from ektelo_pgm.plans import Plan
from ektelo_pgm.privacy import exponential, gaussian, laplace
from ektelo_pgm.workload import Query, kway_marginals

DOMAIN = Domain(list("abc"), [2, 3, 2])
DATA = Dataset(np.random.default_rng(0).integers(0, 2, (50, 3)), DOMAIN)
WORKLOAD = kway_marginals(DOMAIN, 2)


def test_plan_stages_in_the_wrong_order_are_named():
    chooser, laplace_stage, pgm = select.Workload(WORKLOAD), measure.Laplace(), PGM()
    with pytest.raises(TypeError, match=r"select stage must have a \.select\(\.\.\.\) method, but Laplace is a "
                                        r"measure stage; the order is Plan\(select, measure, reconstruct\)"):
        Plan(laplace_stage, chooser, pgm)
    with pytest.raises(TypeError, match=r"reconstruct stage .* but float is not a stage"):
        Plan(chooser, laplace_stage, 1.0)
    with pytest.raises(TypeError, match="data must be a Dataset"):
        Plan(chooser, laplace_stage, pgm).run(Budget.pure(1.0), DATA)


@pytest.mark.parametrize("entry", [
    lambda b: Plan(select.Workload(WORKLOAD), measure.Laplace(), PGM()).run(DATA, b),
    lambda b: MWEM(WORKLOAD, rounds=2).run(DATA, b),
    lambda b: measure.Laplace(1.0).measure(DATA, [Query(("a",))], b),
    lambda b: measure.Gaussian(0.5).measure(DATA, [Query(("a",))], b),
    lambda b: laplace(np.zeros(2), 1.0, 1.0, rng=0, budget=b),
    lambda b: gaussian(np.zeros(2), 1.0, 1.0, rng=0, budget=b),
    lambda b: exponential(np.zeros(2), 1.0, 1.0, rng=0, budget=b),
], ids=["Plan.run", "MWEM.run", "Laplace.measure", "Gaussian.measure", "laplace", "gaussian", "exponential"])
def test_a_number_instead_of_a_budget_is_refused_with_how_to_make_one(entry):
    with pytest.raises(TypeError, match=r"the budget must be a Budget \(e\.g\. Budget\.pure\(1\.0\) for epsilon = "
                                        r"1\.0 or Budget\.zcdp\(1\.0\) for rho\), got float 1\.0"):
        entry(1.0)
    with pytest.raises(TypeError, match=r"got str 'eps'"):
        entry("eps")


def test_size_refusals_say_what_to_use_instead():
    big = Domain([f"x{i}" for i in range(8)], [20] * 8)  # every pair measured: one clique of 20^8 cells
    ms = [Measurement((f"x{i}", f"x{j}"), np.zeros(400), 1.0) for i in range(8) for j in range(i + 1, 8)]
    with pytest.raises(ModelTooLargeError, match="MB.*instead, reconstruct with APPGM .* measure fewer or smaller "
                                                 "cliques .* or raise max_mb"):
        PGM().reconstruct(big, ms)
    with pytest.raises(MemoryError, match=r"the factor over .* MB.*instead, reconstruct with PGM or APPGM"):
        MultiplicativeWeights().reconstruct(big, ms)
    for operator in (LeastSquares(), NonNegativeLeastSquares(), MultiplicativeWeights(factored=False)):
        with pytest.raises(MemoryError, match=r"full data vector .* MB.*instead, reconstruct over marginals \(PGM, "
                                              r"APPGM, LocalLeastSquares or MultiplicativeWeights\(factored=True\)\)"):
            operator.reconstruct(big, ms)


def test_expected_failures_share_one_base_and_keep_their_builtin_kind():
    from ektelo_pgm.errors import ExpectedError, InputError, NotFittedError, UnknownNameError
    from ektelo_pgm.matrix.core import check_size
    from ektelo_pgm.privacy import BudgetExceededError
    from ektelo_pgm.synthesizer import Synthesizer

    with pytest.raises(ModelTooLargeError, match="MB") as refusal:
        check_size(10**12, "a test matrix")
    assert isinstance(refusal.value, (MemoryError, ExpectedError))
    with pytest.raises(UnknownNameError) as unknown:
        DOMAIN.check(["z"])
    assert isinstance(unknown.value, KeyError) and str(unknown.value).startswith("attributes ['z']")
    with pytest.raises(InputError):
        Domain(["a"], [0])
    with pytest.raises(NotFittedError):
        Synthesizer("mst").sample()
    assert issubclass(BudgetExceededError, ExpectedError) and issubclass(InputError, ValueError)


def test_the_command_line_keeps_the_traceback_of_a_bug(monkeypatch, capsys):
    from ektelo_pgm import cli
    from ektelo_pgm.errors import InputError

    def failing(error):
        def handler(args):
            raise error
        return handler

    original = cli.parser

    def patched(error):
        def parser():
            top = original()
            top.set_defaults(handler=failing(error))
            for action in top._subparsers._group_actions:
                for sub in action.choices.values():
                    sub.set_defaults(handler=failing(error))
            return top
        return parser

    monkeypatch.setattr(cli, "parser", patched(InputError("column 'x' is\n  bad")))
    assert cli.main(["run"]) == 1
    assert capsys.readouterr().err == "ektelo-pgm: error: column 'x' is bad\n"
    for bug in (KeyError("a key"), RuntimeError("a bug"), ValueError("deep in numpy"), ZeroDivisionError()):
        monkeypatch.setattr(cli, "parser", patched(bug))
        with pytest.raises(type(bug)):
            cli.main(["run"])


def test_comparison_reports_refusals_but_not_a_real_out_of_memory():
    from ektelo_pgm.plans.plan import compare

    class Refuses:
        def reconstruct(self, domain, measurements, total=None, warm_start=None, callback=None):
            raise ModelTooLargeError("the model would need 9,999 MB")

    class OutOfMemory:
        def reconstruct(self, domain, measurements, total=None, warm_start=None, callback=None):
            raise MemoryError()

    measurements = measure.Laplace(1.0).measure(DATA, [Query(("a", "b"))], Budget.pure(1.0), 0)
    rows = compare(DOMAIN, measurements, {"refuses": Refuses()}, WORKLOAD, DATA)
    assert rows[0].refused == "the model would need 9,999 MB"
    with pytest.raises(MemoryError):
        compare(DOMAIN, measurements, {"oom": OutOfMemory()}, WORKLOAD, DATA)
