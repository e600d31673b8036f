"""Files the package writes: atomically (a reader sees the old file or the whole new one, never
a part), and privately where they hold the table's records (temporary folders and their files,
readable by this user only and removed however the run ends)."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading

#: The process's umask, read once at import (reading it means setting it, which other threads
#: would see if done per write).
_UMASK = os.umask(0o022)
os.umask(_UMASK)

#: Permissions of a private folder and of a private file, whatever the umask.
PRIVATE_FOLDER, PRIVATE_FILE = 0o700, 0o600

#: The stopping signals received while a command runs (:mod:`ektelo_pgm.stopping` records them):
#: after one no output is renamed into place, even where Python lost the interrupt it raised (in a
#: callback) and the run reached its end before the signal came again.
stops_received: list[int] = []


@contextlib.contextmanager
def atomic_write(path, mode: str = "w", newline: str | None = None):
    """Open a temporary file beside ``path`` for writing; on success it is flushed to disk
    and renamed onto ``path`` (atomic on POSIX and Windows); on any error, including an
    interrupt or a stopping signal received before (:data:`stops_received`), it is removed and
    ``path`` is left as it was.  The new file gets the permissions
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
        if stops_received:
            raise KeyboardInterrupt
        os.replace(temporary, path)
    except BaseException:
        with signals_held(), contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


@contextlib.contextmanager
def private_folder(parent=None, prefix: str = "ektelo-"):
    """A new folder that only this user can open (0700 whatever the umask), named ``prefix``
    and random letters, inside ``parent`` (default: the system's temporary folder); yields its
    path.  When the block ends, however it ends (success, an error, an interrupt: the command
    line turns SIGTERM and SIGHUP into one), the folder is removed with everything in it, and so
    are the folders of ``parent`` this call created (0700 too)."""
    created = []
    if parent is not None:
        parent = os.path.abspath(os.fspath(parent))
        missing = parent
        while not os.path.lexists(missing):
            created.append(missing)
            missing = os.path.dirname(missing)
        os.makedirs(parent, mode=PRIVATE_FOLDER, exist_ok=True)
        for made in reversed(created):
            os.chmod(made, PRIVATE_FOLDER)
    folder = None
    try:
        folder = tempfile.mkdtemp(prefix=prefix, dir=parent)
        os.chmod(folder, PRIVATE_FOLDER)
        yield folder
    finally:
        with signals_held():  # a second Ctrl-C cannot cut the removal short
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
            for made in created:  # innermost first; one the user filled meanwhile stays
                with contextlib.suppress(OSError):
                    os.rmdir(made)


#: The signals that stop a run (:mod:`ektelo_pgm.stopping`), held back while private files are removed.
STOPPING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def signals_held():
    """Inside the block SIGINT, SIGTERM and SIGHUP, where Python handles them (a handler of its
    own: Ctrl-C's KeyboardInterrupt, the command line's), are only recorded; as the block ends the
    previous handlers come back and each signal recorded is raised again, once.  Only in the main
    thread, the one Python runs handlers in."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived = []
    previous = {s: signal.getsignal(s) for s in STOPPING}
    held = [s for s, handler in previous.items() if callable(handler)]
    for s in held:
        signal.signal(s, lambda signum, frame: arrived.append(signum))
    try:
        yield
    finally:
        for s in held:
            signal.signal(s, previous[s])
        for s in dict.fromkeys(arrived):
            signal.raise_signal(s)


def private_file(path):
    """A new file ``path`` opened for writing bytes that only this user can read (0600 whatever
    the umask); an existing file is refused (FileExistsError), never overwritten."""
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), PRIVATE_FILE)
    try:
        os.chmod(path, PRIVATE_FILE)
        return os.fdopen(fd, "wb")
    except BaseException:
        os.close(fd)
        raise
