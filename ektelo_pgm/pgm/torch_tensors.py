"""What the torch implementations share: torch loaded lazily, and the index plans and gathers
that turn a junction tree's or region graph's sums into batched device operations.

The plans are numpy (built once, on the host): segments of a source buffer grouped by length
(:func:`group_segments`), the cells of a table grouped by their cell of a smaller one (:func:`preimages`),
index-adds split into layers without colliding destinations (:func:`layers`, :func:`rank_layers`)
so that every sum is deterministic.  :func:`take` and :func:`lse_rows` read them on the device.
"""
from __future__ import annotations

import importlib.util

import numpy as np

from ..errors import InputError


def load_torch():
    """torch, imported on first use; an InputError naming the extra when it is absent or fails to load."""
    try:
        import torch
    except ImportError as exc:  # absent, or installed but failing to load
        raise InputError(f"the torch backends need torch (the optional extra, e.g. pip install torch); "
                         f"importing it failed: {exc}") from exc
    return torch


def torch_available() -> bool:
    """Whether torch can be imported (without importing it)."""
    return importlib.util.find_spec("torch") is not None


def triton_available() -> bool:
    """Whether triton, the compiler of the fused kernels on CUDA, can be imported (without importing it)."""
    return importlib.util.find_spec("triton") is not None


def cuda_available() -> bool:
    """Whether torch is installed, loads and sees a CUDA device (imports torch only if it is
    installed)."""
    if not torch_available():
        return False
    try:
        return bool(load_torch().cuda.is_available())
    except InputError:  # installed but failing to load: no GPU for "auto"
        return False


def group_segments(blocks: list, outputs: list) -> list:
    """Blocks of segments (2-D index arrays into a source buffer, one segment a row) grouped by
    segment length: ``[(idx (G, R), out (G,))]`` with ``out`` the destination of each segment's
    reduction (numpy int64; ``outputs[i]`` holds one destination per row of ``blocks[i]``)."""
    by: dict = {}
    for block, out in zip(blocks, outputs):
        block = np.asarray(block, dtype=np.int64).reshape(len(out), -1)
        by.setdefault(block.shape[1], ([], []))
        by[block.shape[1]][0].append(block)
        by[block.shape[1]][1].append(np.asarray(out, dtype=np.int64))
    return [(np.concatenate(b), np.concatenate(o)) for _, (b, o) in sorted(by.items())]


def preimages(domain, big, small, start: int) -> np.ndarray:
    """The cells of the table over ``big`` (C order, at ``start`` of a flat buffer) grouped by
    their cell of the table over ``small`` (raveled in the order given): ``(small cells,
    preimages)`` flat indices, each row in increasing order.  A transpose, no sort."""
    big, small = tuple(big), tuple(small)
    shape = [domain[a] for a in big]
    axes = [big.index(a) for a in small] + [i for i, a in enumerate(big) if a not in small]
    m = int(np.prod([domain[a] for a in small], dtype=np.int64))
    return np.arange(start, start + int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape).transpose(
        axes).reshape(m, -1)


def layers(dst: list, src: list) -> list:
    """Pairs of index arrays split into layers whose destinations are unique within a layer
    (the ``r``-th pair of each destination block in layer ``r``): index-adds then need no atomics
    that collide, so the sums are deterministic."""
    out: dict = {}
    rank: dict = {}
    for d, s, in zip(dst, src):
        key = int(d[0]) if len(d) else -1
        r = rank.get(key, 0)
        rank[key] = r + 1
        out.setdefault(r, ([], []))
        out[r][0].append(d)
        out[r][1].append(s)
    return [(np.concatenate(d).astype(np.int64, copy=False), np.concatenate(s).astype(np.int64, copy=False))
            for _, (d, s) in sorted(out.items())]


def take(src, idx):
    """``src[idx]`` for a 1-D ``src`` by ``index_select`` (several times faster than advanced
    indexing on torch's CPU device; the same on a GPU)."""
    return src.index_select(0, idx.reshape(-1)).view(idx.shape)


def lse_rows(torch, src, idx):
    """Log-sum-exp of each row of ``src[idx]`` (a row of one cell is that cell)."""
    if idx.shape[1] == 1:
        return take(src, idx[:, 0])
    return torch.logsumexp(take(src, idx), dim=1)


def rank_layers(dst: np.ndarray) -> list:
    """Positions of ``dst`` split into layers of distinct values (the ``r``-th occurrence of each
    value in layer ``r``): index-adds layer by layer sum deterministically."""
    dst = np.asarray(dst, dtype=np.int64)
    if not len(dst):
        return []
    order = np.argsort(dst, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(dst[order])) + 1]
    rank = np.empty(len(dst), dtype=np.int64)
    rank[order] = np.arange(len(dst)) - np.repeat(starts, np.diff(np.r_[starts, len(dst)]))
    return [np.flatnonzero(rank == r) for r in range(int(rank.max()) + 1)]


def as_device(torch, array, device, dtype):
    """``array`` (numpy, any float) as a tensor of ``dtype`` on ``device``."""
    return torch.as_tensor(np.ascontiguousarray(array, dtype=np.float64), device=device).to(dtype)
