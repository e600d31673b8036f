"""The one-time note while kernels compile: on a terminal only, once, for this package's kernels."""
import io
import sys

import numpy as np
from numba import njit

from ektelo_pgm.kernels import compiling, tree


class Terminal(io.StringIO):
    def isatty(self):
        return True


def compile_afresh(kernel, *args):
    njit(kernel.py_func)(*args)  # a new dispatcher with no cache: numba compiles it


def test_compiling_says_so_once_on_a_terminal_and_never_in_a_pipe(monkeypatch):
    monkeypatch.setattr(compiling.NOTICE, "shown", False)
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    compile_afresh(tree.step, np.zeros(3), 1.0, np.ones(3), np.empty(3))
    assert pipe.getvalue() == ""

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    njit(lambda x: x + 1)(1)  # not one of the package's kernels
    assert terminal.getvalue() == ""
    compile_afresh(tree.step, np.zeros(3), 1.0, np.ones(3), np.empty(3))
    compile_afresh(tree.predicted_decrease, np.ones(3), np.ones(3), np.zeros(3))
    assert terminal.getvalue() == compiling.MESSAGE + "\n"


def test_lifted_object_mode_blocks_compiled_in_every_process_are_not_announced(monkeypatch):
    """numba compiles a cached kernel's ``objmode`` block (progress, Ctrl-C polls) afresh in
    every process, with the same event: a run whose kernels all came from the cache said
    "compiling kernels" every time on a terminal."""
    from numba.core import event
    from numba.core.dispatcher import ObjModeLiftedWith

    monkeypatch.setattr(compiling.NOTICE, "shown", False)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    lifted = ObjModeLiftedWith.__new__(ObjModeLiftedWith)  # what the event carries for such a block
    compiling.NOTICE.on_start(event.Event("numba:compile", event.EventStatus.START, data={"dispatcher": lifted}))
    assert terminal.getvalue() == "" and not compiling.NOTICE.shown
