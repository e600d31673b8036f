"""The failures the package expects and explains: bad input and refusals.

Each derives from :class:`ExpectedError` and from the built-in exception a caller would catch
(``except ValueError`` still catches :class:`InputError`).  The command line prints an
expected failure in one line; anything else is a bug and keeps its traceback.
"""
from __future__ import annotations


class ExpectedError(Exception):
    """A failure the package explains: what is wrong and, where it can, what to do."""


class InputError(ExpectedError, ValueError):
    """A value, a table, a file or a setting the package cannot take (it says which)."""


class UnknownNameError(ExpectedError, KeyError):
    """An attribute or column name that is not there (its message, not its repr, is shown)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NotFittedError(ExpectedError, RuntimeError):
    """An object used before it was fitted."""


#: The memory cap (MB of float64) every ``max_mb`` defaults to: models, dense vectors, tables and
#: materialised matrices alike.
DEFAULT_MAX_MB = 512.0


class ModelTooLargeError(ExpectedError, MemoryError):
    """A refusal before allocating: a model, a domain or a matrix would need more memory than its
    limit (the message names it and its size in MB).  A real out-of-memory stays a MemoryError."""
