"""Atomic file writes: a reader sees the old file or the whole new one, never a part."""
from __future__ import annotations

import contextlib
import os
import tempfile

#: The process's umask, read once at import (reading it means setting it, which other threads
#: would see if done per write).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", newline: str | None = None):
    """Open a temporary file beside ``path`` for writing; on success it is flushed to disk
    and renamed onto ``path`` (atomic on POSIX and Windows); on any error, including an
    interrupt, it is removed and ``path`` is left as it was.  The new file gets the permissions
    any new file would (0666 less the umask), not the temporary file's private 0600."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, 0o666 & ~_UMASK)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
