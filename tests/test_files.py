"""Atomic writes: all or nothing, with ordinary permissions."""
import os
import stat

import pytest

from ektelo_pgm.files import _UMASK, atomic_write


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
