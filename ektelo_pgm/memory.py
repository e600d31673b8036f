"""Memory sizes as a user writes them (:func:`memory_size`) and the memory cap a run reads its
table under (:func:`memory_cap`), in bytes."""
from __future__ import annotations

import math
import os
import re

import numpy as np

from .errors import InputError

#: The default memory cap: this share of the machine's physical memory, at most ``MAX_DEFAULT_CAP``
#: bytes (:func:`memory_cap`).  Part by part was as fast as whole and leaner at every size measured
#: (docs/big_data.md: 1M rows x 11 columns of text, 24 s and 694 MB against 26 s and 887 MB; 5M rows,
#: 71 s and 959 MB against 87 s and 2,576 MB), so only a table that is small read whole is read whole.
MEMORY_SHARE = 1 / 4
MAX_DEFAULT_CAP = 2**30
#: Units of :func:`memory_size`, bytes each: MB and GB are 2**20 and 2**30 bytes, as every MB of the package.
UNITS = {"b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "": 2**20, "m": 2**20, "mb": 2**20, "mib": 2**20,
         "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40, "tib": 2**40}


def memory_size(text) -> int:
    """Bytes of a memory size written as a number and a unit (``"4GiB"``, ``"512 MB"``, ``"1.5g"``; no
    unit: MB; a number of bytes as an int), at least 1 MB; an InputError naming the problem otherwise."""
    if isinstance(text, (int, np.integer)) and not isinstance(text, bool):
        size = int(text)
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
        if match is None or match.group(2).lower() not in UNITS or not math.isfinite(float(match.group(1))):
            raise InputError(f"memory size {str(text)!r}: give a number and a unit, e.g. 4GiB or 512MB")
        size = int(float(match.group(1)) * UNITS[match.group(2).lower()])
    if size < 2**20:
        raise InputError(f"memory size {str(text)!r}: at least 1 MB")
    return size


def memory_cap(max_memory=None) -> int:
    """Bytes a run may hold reading its table: ``max_memory`` (:func:`memory_size`), or by default
    ``MEMORY_SHARE`` of this machine's physical memory, at most ``MAX_DEFAULT_CAP``."""
    if max_memory is None:
        return int(min(MEMORY_SHARE * physical_memory(), MAX_DEFAULT_CAP))
    return memory_size(max_memory)


def physical_memory() -> int:
    """This machine's physical memory in bytes (16 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 16 * 2**30
