"""A one-time note on a terminal while the numba kernels compile.

numba compiles a kernel only when its on-disk cache has no entry for it (the first run after
installing or changing the package); it announces that as a ``"numba:compile"`` event.  The
first such event for one of this package's functions prints one line on stderr if stderr is a
terminal; pipes, files and test runs stay silent.  The ``numba.objmode`` blocks inside cached
kernels (progress callbacks, Ctrl-C polls) are lifted code that numba compiles in every process,
in milliseconds, with the same event: they are not announced.
"""
from __future__ import annotations

import sys

from numba.core import event
from numba.core.dispatcher import LiftedCode

MESSAGE = "ektelo_pgm: compiling kernels, once per installation (about 20 s)..."


class CompileNotice(event.Listener):
    """Prints :data:`MESSAGE` at the first compilation of a function of ``ektelo_pgm``."""

    def __init__(self):
        self.shown = False

    def on_start(self, ev):
        dispatcher = ev.data["dispatcher"]
        if self.shown or isinstance(dispatcher, LiftedCode):
            return
        module = getattr(dispatcher.py_func, "__module__", "") or ""
        stream = sys.stderr
        if not module.startswith("ektelo_pgm.") or stream is None or not stream.isatty():
            return
        self.shown = True
        print(MESSAGE, file=stream, flush=True)

    def on_end(self, ev):
        pass


NOTICE = CompileNotice()
event.register("numba:compile", NOTICE)
