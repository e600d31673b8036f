"""Ctrl-C during compiled loops.

Python runs signal handlers only between its own bytecodes, so a compiled loop notices Ctrl-C
only when it calls back into Python, and an exception raised inside such a call has to cross
compiled code on its way out.  Inside :func:`deferred_sigint` the SIGINT handler only records the
signal; compiled loops poll :func:`sigint_received` (through ``numba.objmode``) after a bounded
amount of work and return early, and the block re-raises the signal on exit, once back in plain
Python, where the user's own handler (``KeyboardInterrupt`` by default) runs.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

_received: list[int] = []  # SIGINTs recorded by the current deferred_sigint block


def _record(signum, frame):
    _received.append(signum)


def deferred_sigint_recording() -> bool:
    """Whether a :func:`deferred_sigint` block now records SIGINT (its handler is the block's)."""
    return signal.getsignal(signal.SIGINT) is _record


def sigint_received() -> bool:
    """Whether SIGINT arrived inside the current :func:`deferred_sigint` block (calling this runs
    pending signal handlers first)."""
    return bool(_received)


@contextmanager
def deferred_sigint():
    """Record SIGINT while the block runs and deliver it to the previous handler when it ends.

    Only in the main thread (the one Python runs handlers in) and only over a Python-level
    handler; nested blocks share the outermost one.
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous is _record or not callable(previous):
        yield
        return
    _received.clear()
    signal.signal(signal.SIGINT, _record)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if _received:
            _received.clear()
            signal.raise_signal(signal.SIGINT)
