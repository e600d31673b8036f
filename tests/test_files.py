"""Atomic writes: all or nothing, with ordinary permissions."""
import os
import stat

import pytest

from ektelo_pgm.files import _UMASK, PRIVATE_FILE, PRIVATE_FOLDER, atomic_write, private_file, private_folder


def test_a_write_replaces_the_file_with_ordinary_permissions(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old")
    with atomic_write(path) as f:
        f.write("new")
    assert path.read_text() == "new"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~_UMASK
    assert os.listdir(tmp_path) == ["out.csv"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old")
    with pytest.raises(RuntimeError, match="stop"):
        with atomic_write(path) as f:
            f.write("half")
            raise RuntimeError("stop")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.csv"]


@pytest.fixture
def open_umask():
    """A umask that takes nothing away (0): new files and folders would be readable by anyone."""
    previous = os.umask(0)
    yield
    os.umask(previous)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_private_folder_and_its_files_are_for_this_user_only_and_removed(tmp_path, open_umask):
    parent = tmp_path / "cache" / "codes"  # neither exists: both are created, private, then removed
    with private_folder(parent, prefix="ektelo-codes-") as folder:
        assert os.path.dirname(folder) == str(parent) and os.path.basename(folder).startswith("ektelo-codes-")
        assert mode(folder) == mode(parent) == mode(tmp_path / "cache") == PRIVATE_FOLDER == 0o700
        with private_file(os.path.join(folder, "codes.parquet")) as f:
            f.write(b"records")
        assert mode(os.path.join(folder, "codes.parquet")) == PRIVATE_FILE == 0o600
        with pytest.raises(FileExistsError):  # never over an existing file
            private_file(os.path.join(folder, "codes.parquet"))
    assert os.listdir(tmp_path) == []


def test_a_private_folder_is_removed_on_an_error_or_an_interrupt_and_its_parent_kept(tmp_path, open_umask):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("kept")
    for stop in (RuntimeError("stop"), KeyboardInterrupt()):
        with pytest.raises(type(stop)):
            with private_folder(tmp_path / "mine") as folder:
                with private_file(os.path.join(folder, "codes.parquet")) as f:
                    f.write(b"records")
                raise stop
        assert os.listdir(tmp_path / "mine") == ["notes.txt"]
    with private_folder() as folder:  # the system's temporary folder
        assert mode(folder) == 0o700
    assert not os.path.exists(folder)


def test_a_second_ctrl_c_waits_until_the_private_folder_is_removed(tmp_path, monkeypatch):
    """A signal that arrives while the codes are being removed is delivered once they are gone."""
    import shutil
    import signal

    from ektelo_pgm import files

    if not hasattr(signal, "pthread_sigmask"):
        pytest.skip("signals are held only where the system can block them (POSIX)")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    removed, rmtree = [], shutil.rmtree

    def remove(path, ignore_errors=False):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C again, halfway through
        removed.append(os.path.basename(path))
        rmtree(path, ignore_errors=ignore_errors)
        removed.append("done")

    monkeypatch.setattr(files.shutil, "rmtree", remove)
    try:
        with pytest.raises(KeyboardInterrupt):
            with private_folder(tmp_path) as folder:
                with private_file(os.path.join(folder, "codes.parquet")) as f:
                    f.write(b"records")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert removed == [os.path.basename(folder), "done"] and os.listdir(tmp_path) == []
