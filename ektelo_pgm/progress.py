"""Progress of long runs: mechanism rounds, estimation iterations with their loss, record
sampling, shown as tqdm bars on standard error.

Reporting is decided by :func:`reporting` (a context manager; the setting lives in a context
variable, so no function takes a flag).  Outside any ``reporting`` block, and inside
``reporting(None)``, it is automatic: on when standard error is a terminal and no test runs
(pytest sets ``PYTEST_CURRENT_TEST``), off in pipes, files and tests.  ``reporting(True)``
forces it on (to ``stream``, default standard error), ``reporting(False)`` off.

Code that loops asks for :func:`bar`; when reporting is off it gets a shared object whose
``update`` does nothing, so a bar costs nothing measurable in an inner loop.  Iterative solvers
take :func:`tracked`, which leaves their callback as it was (None stays None: compiled loops
keep their fast path) when reporting is off.
"""
from __future__ import annotations

import contextlib
import os
import sys
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, TextIO


@dataclass(frozen=True)
class _Setting:
    enabled: bool | None  # None: automatic
    stream: TextIO | None  # None: sys.stderr when a bar opens


_SETTING: ContextVar[_Setting] = ContextVar("ektelo_pgm_progress", default=_Setting(None, None))


@contextlib.contextmanager
def reporting(enabled: bool | None = None, stream: TextIO | None = None):
    """Within the block, progress bars are shown when ``enabled`` (None: only when standard
    error is a terminal and no test runs), on ``stream`` (default: standard error)."""
    token = _SETTING.set(_Setting(enabled, stream))
    try:
        yield
    finally:
        _SETTING.reset(token)


def active() -> bool:
    """Whether bars opened now are shown."""
    setting = _SETTING.get()
    if setting.enabled is not None:
        return setting.enabled
    stream = setting.stream or sys.stderr
    return "PYTEST_CURRENT_TEST" not in os.environ and stream is not None and stream.isatty()


class _Silent:
    """The bar of a run that does not report: every method does nothing."""

    def update(self, n: int = 1, **postfix) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


_SILENT = _Silent()


def _text(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


class _Shown:
    """A tqdm bar; ``update(n, **postfix)`` advances it by ``n`` and shows ``postfix`` beside it."""

    def __init__(self, total: int | None, desc: str, unit: str, stream: TextIO):
        from tqdm import tqdm

        # leave=None: the outermost bar stays when done, nested ones (an estimation inside a
        # mechanism's round) disappear
        self._bar = tqdm(total=total, desc=desc, unit=unit, file=stream, leave=None, dynamic_ncols=True)

    def update(self, n: int = 1, **postfix) -> None:
        if postfix:
            self._bar.set_postfix_str(", ".join(f"{k}={_text(v)}" for k, v in postfix.items()), refresh=False)
        self._bar.update(n)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def bar(total: int | None, desc: str, unit: str = "it"):
    """A progress bar of ``total`` steps (None: unknown) named ``desc``, counting ``unit``; a
    context manager whose ``update(n=1, **postfix)`` advances it (postfix e.g. ``loss=...``).
    A shared no-op object when reporting is off."""
    if not active():
        return _SILENT
    return _Shown(total, desc, unit, _SETTING.get().stream or sys.stderr)


def note(message: str) -> None:
    """``message``, one line, where bars are shown (and nowhere when reporting is off): for what
    depends on the data as a bar's count of records does, never for a release."""
    if active():
        print(message, file=_SETTING.get().stream or sys.stderr, flush=True)


@contextlib.contextmanager
def tracked(callback: Callable | None, total: int | None, desc: str):
    """The ``callback(iteration, loss)`` to give an iterative solver: ``callback`` itself when
    reporting is off, otherwise one that also advances a bar of ``total`` iterations named
    ``desc`` showing the loss, then calls ``callback``."""
    if not active():
        yield callback
        return
    with bar(total, desc) as shown:
        def report(iteration, loss):
            shown.update(loss=float(loss))
            if callback is not None:
                return callback(iteration, loss)

        yield report
