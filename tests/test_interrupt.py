"""Ctrl-C inside the compiled PGM loop and APPGM's loops: always KeyboardInterrupt, after a bounded
amount of work (counted in calibrations, message updates and loss evaluations, not seconds, so load
cannot break it)."""
import signal

import numpy as np
import pytest

from ektelo_pgm.domain import Domain
from ektelo_pgm.kernels.interrupt import deferred_sigint, sigint_received
from ektelo_pgm.kernels.tree import HALVINGS, INTERRUPT_CELLS
from ektelo_pgm.matrix import Prefix
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.reconstruct import APPGM
from ektelo_pgm.pgm.appgm import ConvexGBP, MeasuredCliques
from ektelo_pgm.pgm.loss import Objective
from ektelo_pgm.pgm.inference import MarginalOracle
from ektelo_pgm.pgm.optimizers import mirror_descent


@pytest.fixture(autouse=True)
def python_sigint_handler():
    """Python's own SIGINT handler for each test, whatever the process inherited (a process
    started in the background by a shell without job control ignores SIGINT, and Python then
    installs none: the signal would never arrive)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


class CtrlC:
    """Counts calls of a piece of work and presses Ctrl-C (a real SIGINT) during call ``at``."""

    def __init__(self, at):
        self.at, self.calls = at, 0

    def tick(self):
        self.calls += 1
        if self.calls == self.at:
            signal.raise_signal(signal.SIGINT)

    @property
    def after(self):
        return self.calls - self.at


def test_ctrl_c_stops_the_compiled_loop_within_a_bounded_number_of_calibrations():
    domain = Domain(list("abc"), [40, 30, 40])
    rng = np.random.default_rng(0)
    ms = [Measurement(("a", "b", "c"), rng.normal(10.0, 5.0, 48_000), 1.0),
          Measurement(("a",), rng.normal(1200.0, 5.0, 40), 1.0, query=Prefix(40))]
    oracle = MarginalOracle(domain, [("a", "b", "c"), ("a",)])
    objective = Objective(oracle, ms, "l1")
    own_loss = objective.python_part
    press = CtrlC(at=40)

    def counted_loss(mu, grad):  # the loop evaluates the loss once after every calibration
        press.tick()
        return own_loss(mu, grad)

    objective.python_part = counted_loss
    iterations = []
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):  # L1 with a negative tol never stops by itself
        mirror_descent(oracle, objective, 48_000.0, np.zeros(oracle.size), iters=10**8, tol=-1.0,
                       callback=lambda t, v: iterations.append(t))
    assert signal.getsignal(signal.SIGINT) is handler
    assert press.calls > len(iterations) + 1  # line searches ran: several calibrations per iteration
    per_look = -(-INTERRUPT_CELLS // 48_000)  # calibrations of the 48,000-cell tree between two looks
    # the loop looks after every per_look-th calibration following the first (which precedes the loop)
    assert press.calls == 1 + per_look * -(-(press.at - 1) // per_look)


def noisy_cycle():
    """2-way marginals of six attributes of size 6 in a cycle (a loopy region graph), noise std 5."""
    domain = Domain([f"x{i}" for i in range(6)], [6] * 6)
    rng = np.random.default_rng(1)
    return domain, [Measurement((f"x{i}", f"x{(i + 1) % 6}"), rng.normal(20.0, 5.0, 36), 1.0) for i in range(6)]


def count_calls(monkeypatch, cls, name, press):
    """Let ``press`` count the calls of the method ``cls.name``."""
    method = getattr(cls, name)

    def counted(self, *args, **kwargs):
        press.tick()
        return method(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, counted)


def test_ctrl_c_stops_appgm_before_its_next_iteration(monkeypatch):
    domain, ms = noisy_cycle()
    press = CtrlC(at=30)
    count_calls(monkeypatch, ConvexGBP, "step", press)
    with pytest.raises(KeyboardInterrupt):
        APPGM(iters=10**7).reconstruct(domain, ms)
    assert 0 <= press.after <= HALVINGS  # at most the halvings of the iteration under way


def test_ctrl_c_stops_the_augmented_lagrangian_within_one_line_search(monkeypatch):
    domain, ms = noisy_cycle()
    press = CtrlC(at=30)
    count_calls(monkeypatch, MeasuredCliques, "__call__", press)
    with pytest.raises(KeyboardInterrupt):
        APPGM(method="augmented", iters=10**7).reconstruct(domain, ms)
    assert 0 <= press.after <= 21  # the rest of L-BFGS-B's line search (20 evaluations), then the estimate's loss


def test_sigint_is_delivered_to_the_callers_handler_once_the_block_ends():
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        with deferred_sigint():
            signal.raise_signal(signal.SIGINT)
            assert sigint_received() and seen == []  # recorded, not yet delivered
        assert seen == [signal.SIGINT] and not sigint_received()
        signal.raise_signal(signal.SIGINT)  # outside a block the handler runs at once
        assert seen == [signal.SIGINT] * 2
    finally:
        signal.signal(signal.SIGINT, previous)
