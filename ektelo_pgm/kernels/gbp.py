"""Region-graph kernels of convex generalized belief propagation (McKenna et al. 2021, sec. 4).

Same flat-buffer conventions as :mod:`ektelo_pgm.kernels.tree`: region ``k`` occupies
``region_off[k]:region_off[k+1]`` of a flat float64 buffer, message ``j`` (one per edge) occupies
``msg_off[j]:msg_off[j+1]``, ``host[j]`` is the parent region of edge ``j`` and
``maps[map_off[j]:]`` sends each cell of that parent to a cell of the child.  Summing beliefs
down to the children is the tree kernel ``project``; the kernels here are the log-space
marginalisation onto the children, the absorption of messages into regions and the per-region
normalisation.  Each has a numpy twin ``*_reference``.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _edge_logsumexp(values, start, n, maps, base, out, dst, size):
    """Exact two-pass log-sum-exp of one edge (per-child-cell maximum)."""
    for s in range(size):
        out[dst + s] = -np.inf
    for i in range(n):
        s = dst + maps[base + i]
        if values[start + i] > out[s]:
            out[s] = values[start + i]
    acc = np.zeros(size)
    for i in range(n):
        s = maps[base + i]
        if out[dst + s] > -np.inf:
            acc[s] += np.exp(values[start + i] - out[dst + s])
    for s in range(size):
        if out[dst + s] > -np.inf:
            out[dst + s] += np.log(acc[s])


@njit(cache=True)
def gbp_logsumexp(values, msg_off, host, map_off, maps, region_off):
    """For every edge ``j``: log-sum-exp of its parent's ``values`` onto the child's cells.

    Returns a buffer laid out like the messages.  The exponentials of a parent are computed once
    (shifted by the parent's maximum) and shared by its consecutive edges;
    an edge where some child cell would underflow is redone exactly, so a child cell is -inf
    only when all of its parent cells are.
    """
    out = np.empty(msg_off[-1])
    widest = 0
    for k in range(region_off.shape[0] - 1):
        widest = max(widest, region_off[k + 1] - region_off[k])
    scratch = np.empty(widest)
    current = -1
    top = 0.0
    for j in range(host.shape[0]):
        start = region_off[host[j]]
        n = region_off[host[j] + 1] - start
        if host[j] != current:
            current = host[j]
            top = -np.inf
            for i in range(n):
                if values[start + i] > top:
                    top = values[start + i]
            for i in range(n):
                scratch[i] = np.exp(values[start + i] - top) if top > -np.inf else 0.0
        base = map_off[j]
        dst = msg_off[j]
        size = msg_off[j + 1] - dst
        for s in range(size):
            out[dst + s] = 0.0
        for i in range(n):
            out[dst + maps[base + i]] += scratch[i]
        exact = False
        for s in range(size):
            if out[dst + s] < 1e-280:
                exact = True
            out[dst + s] = np.log(out[dst + s]) + top
        if exact:
            _edge_logsumexp(values, start, n, maps, base, out, dst, size)
    return out


@njit(cache=True)
def gbp_absorb(messages, msg_off, host, map_off, maps, region_off, child):
    """Per region cell: the messages of its child edges (broadcast) minus those of its parent edges."""
    out = np.zeros(region_off[-1])
    for j in range(host.shape[0]):
        start = region_off[host[j]]
        src = msg_off[j]
        base = map_off[j]
        for i in range(region_off[host[j] + 1] - start):
            out[start + i] += messages[src + maps[base + i]]
        start = region_off[child[j]]
        for i in range(msg_off[j + 1] - src):
            out[start + i] -= messages[src + i]
    return out


def gbp_absorb_reference(messages, msg_off, host, map_off, maps, region_off, child):
    """numpy twin of :func:`gbp_absorb`."""
    out = np.zeros(region_off[-1])
    for j in range(len(host)):
        p0, p1 = region_off[host[j]], region_off[host[j] + 1]
        msg = messages[msg_off[j]:msg_off[j + 1]]
        out[p0:p1] += msg[maps[map_off[j]:map_off[j] + p1 - p0]]
        out[region_off[child[j]]:region_off[child[j] + 1]] -= msg
    return out


def gbp_logsumexp_reference(values, msg_off, host, map_off, maps, region_off):
    """numpy twin of :func:`gbp_logsumexp`."""
    out = np.empty(msg_off[-1])
    for j in range(len(host)):
        v = values[region_off[host[j]]:region_off[host[j] + 1]]
        index = maps[map_off[j]:map_off[j] + v.size]
        size = msg_off[j + 1] - msg_off[j]
        peak = np.full(size, -np.inf)
        np.maximum.at(peak, index, v)
        safe = np.where(np.isfinite(peak), peak, 0.0)
        with np.errstate(divide="ignore"):
            out[msg_off[j]:msg_off[j + 1]] = safe + np.log(np.bincount(index, np.exp(v - safe[index]), minlength=size))
    return out


@njit(cache=True)
def gbp_normalize(values, region_off, total):
    """Per region: ``total * softmax(values)`` over its cells, and the regions' log-sum-exps."""
    out = np.empty_like(values)
    log_z = np.empty(region_off.shape[0] - 1)
    for k in range(region_off.shape[0] - 1):
        start, stop = region_off[k], region_off[k + 1]
        top = -np.inf
        for i in range(start, stop):
            if values[i] > top:
                top = values[i]
        z = 0.0
        for i in range(start, stop):
            out[i] = np.exp(values[i] - top)
            z += out[i]
        scale = total / z
        for i in range(start, stop):
            out[i] *= scale
        log_z[k] = top + np.log(z)
    return out, log_z


def gbp_normalize_reference(values, region_off, total):
    """numpy twin of :func:`gbp_normalize`."""
    starts = region_off[:-1]
    sizes = np.diff(region_off)
    peak = np.maximum.reduceat(values, starts)
    e = np.exp(values - np.repeat(peak, sizes))
    z = np.add.reduceat(e, starts)
    return total * e / np.repeat(z, sizes), peak + np.log(z)
