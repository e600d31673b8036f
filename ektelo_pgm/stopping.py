"""How a run of the command line stops on a signal: Ctrl-C, SIGTERM and SIGHUP raise a
KeyboardInterrupt in the main thread so that every ``finally`` runs and private temporary files are
removed (:func:`stopped_by_signals`); the exit code is 128 + the signal's number."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading

from .files import STOPPING, stops_received  # exit code 128 + the signal's number, temporary files removed

#: Seconds after which a stopping signal is raised again while the run goes on: soon when it came
#: during an import or a compilation, else once the interrupt had time to end the run.
UNSAFE_WAIT, RESEND_WAIT = 0.05, 0.25


def unsafe_to_interrupt(frame) -> bool:
    """Whether ``frame`` or a frame that called it runs an import (Python's import machinery) or
    numba's compiler (numba, llvmlite): an interrupt raised there is lost, becomes an ImportError or
    leaves LLVM objects half made, which crash the process as it exits."""
    places = ["<frozen importlib"] + [os.path.dirname(module.__file__) + os.sep for module in
                                      map(sys.modules.get, ("numba", "llvmlite")) if module is not None]
    while frame is not None:
        if frame.f_code.co_filename.startswith(tuple(places)):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def stopped_by_signals(received: list):
    """Inside the block Ctrl-C (SIGINT), SIGTERM and SIGHUP stop the run with a KeyboardInterrupt,
    so that every ``finally`` runs and temporary files are removed, each signal appended to
    ``received``.  Inside a compiled loop (:func:`~ektelo_pgm.kernels.interrupt.deferred_sigint`)
    the loop stops first and the interrupt is raised when it returns.  Python loses an exception
    raised in a callback (a weakref's during an import, numba's ctypes callbacks: "Exception
    ignored"), pybind11 turns one raised in a module's import into an ImportError and one raised
    while numba compiles can crash the process at exit, so the signal is raised again, to the main
    thread, while the block runs: ``UNSAFE_WAIT`` later when it came during an import or a
    compilation (:func:`unsafe_to_interrupt`; then it raises nothing), else ``RESEND_WAIT`` later;
    a run that reaches its end first writes no output (:data:`~ektelo_pgm.files.stops_received`)
    and ends with the interrupt.  The removal of private files holds signals back
    (:func:`~ektelo_pgm.files.signals_held`).  Only in the main thread (the one Python runs
    handlers in) and only over the default handlers (an ignored signal, as under nohup, stays
    ignored); the previous handlers come back after."""
    from .kernels.interrupt import deferred_sigint_recording

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    running, main = [True], threading.main_thread().ident

    def later(signum: int, seconds: float) -> None:
        def again():
            if not running[0]:
                return
            if hasattr(signal, "pthread_kill"):  # to the main thread: it wakes a sleep or a wait
                signal.pthread_kill(main, signum)
            else:
                signal.raise_signal(signum)
        timer = threading.Timer(seconds, again)
        timer.daemon = True
        timer.start()

    def stop(signum, frame):
        received.append(signum)
        stops_received.append(signum)
        unsafe = unsafe_to_interrupt(frame)
        later(signum, UNSAFE_WAIT if unsafe else RESEND_WAIT)
        if signum != signal.SIGINT and deferred_sigint_recording():
            signal.getsignal(signal.SIGINT)(signal.SIGINT, frame)  # the compiled loop stops, then it is raised
        elif not unsafe:
            raise KeyboardInterrupt

    defaults = {signal.SIGINT: signal.default_int_handler}
    previous = {s: signal.getsignal(s) for s in STOPPING}
    replaced = [s for s in STOPPING if previous[s] is defaults.get(s, signal.SIG_DFL)]
    for s in replaced:
        signal.signal(s, stop)
    try:
        yield
        if received:  # its interrupt was lost and the run ended before the signal came again
            raise KeyboardInterrupt
    finally:
        running[0] = False
        stops_received.clear()
        for s in replaced:
            signal.signal(s, previous[s])
