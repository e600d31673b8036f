"""What the torch implementations share: torch loaded lazily, and the index plans and gathers
that turn a junction tree's or region graph's sums into batched device operations.

The plans are index tensors built once, on the device that reads them: the cells of a table
grouped by their cell of a smaller one (:func:`preimages`) or mapped to it (:func:`cell_map`),
segments grouped by length (:func:`group_segments`), index-adds split into layers without
colliding destinations (:func:`layers`; :func:`rank_layers` for host arrays) so that every sum is
deterministic.  A junction tree's plan is made there whole (no pass over it on the host, no copy
to the device); a region graph's adds the maps of its host layout.  :func:`take` and
:func:`lse_rows` read them.
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


def preimages(torch, domain, big, small, start: int, dtype, device):
    """The cells of the table over ``big`` (C order, at ``start`` of a flat buffer) grouped by
    their cell of the table over ``small`` (raveled in the order given): ``(small cells,
    preimages)`` flat indices of ``dtype`` on ``device``, each row in increasing order.  A
    transpose, no sort, made where it is read."""
    big, small = tuple(big), tuple(small)
    axes = [big.index(a) for a in small] + [i for i, a in enumerate(big) if a not in small]
    cells = torch.arange(start, start + domain.size(big), dtype=dtype, device=device)
    return cells.reshape([domain[a] for a in big]).permute(axes).reshape(domain.size(small), -1)


def cell_map(torch, domain, big, small, dtype, device):
    """For each cell of the table over ``big`` (C order), the raveled index of its cell over
    ``small`` (a subset, raveled in the order given): ``small``'s cells laid along ``big``'s axes,
    of ``dtype`` on ``device``."""
    big, small = tuple(big), tuple(small)
    grid = torch.arange(domain.size(small), dtype=dtype, device=device).reshape([domain[a] for a in small])
    grid = grid.permute([small.index(a) for a in big if a in small])
    return grid.reshape([domain[a] if a in small else 1 for a in big]).expand([domain[a] for a in big]).reshape(-1)


def group_segments(torch, blocks: list, outputs: list) -> list:
    """Blocks of segments (index tensors of one device; ``blocks[i]`` one segment a row, a row
    for each of ``outputs[i]``) grouped by segment length: ``[(idx (G, R), out (G,))]`` with
    ``out`` the destination of each segment's reduction."""
    by: dict = {}
    for block, out in zip(blocks, outputs):
        block = block.reshape(len(out), -1)
        idx, dst = by.setdefault(block.shape[1], ([], []))
        idx.append(block)
        dst.append(out)
    return [(torch.cat(b), torch.cat(o)) for _, (b, o) in sorted(by.items())]


def layers(torch, keys: list, dst: list, src: list) -> list:
    """Pairs of index tensors ``(dst[i], src[i])`` into destination blocks ``keys[i]`` split into
    layers in which no block repeats (its ``r``-th pair in layer ``r``): index-adds then need no
    atomics that collide, so the sums are deterministic."""
    out: dict = {}
    rank: dict = {}
    for key, d, s in zip(keys, dst, src):
        r = rank.get(key, 0)
        rank[key] = r + 1
        ds, ss = out.setdefault(r, ([], []))
        ds.append(d)
        ss.append(s)
    return [(torch.cat(d), torch.cat(s)) for _, (d, s) in sorted(out.items())]


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
