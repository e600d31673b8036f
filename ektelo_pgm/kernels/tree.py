"""Junction-tree kernels over flat buffers: potential assembly, log-space calibration, projection.

All cliques of a junction tree live in one flat float64 buffer (clique ``k`` occupies
``off[k]:off[k+1]``, its cells raveled in C order).  Relations between a clique and a smaller
table (a separator, or a clique hosted inside it) are int32 *index maps*: for each cell of the
big clique, the raveled index of the matching cell of the small table.  Every kernel is a numba
function compiled once with ``cache=True`` (fixed dtypes: float64 values, int64 offsets, int32
maps) and has a plain numpy twin ``*_reference`` with the same semantics, used by the tests.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def assemble(theta_p, p_off, host, map_off, maps, clique_off, out):
    """Log-potential of every clique: the sum of the small potentials it hosts (broadcast).

    ``theta_p`` holds the potentials of the parameter cliques (``p_off``); parameter clique ``j``
    is hosted by clique ``host[j]`` and ``maps[map_off[j]:map_off[j+1]]`` sends each host cell
    to a cell of ``j``.  Writes the flat clique log-potentials into ``out``.
    """
    out[:] = 0.0
    for j in range(host.shape[0]):
        start = clique_off[host[j]]
        n = clique_off[host[j] + 1] - start
        base = map_off[j]
        src = p_off[j]
        for i in range(n):
            out[start + i] += theta_p[src + maps[base + i]]


def assemble_reference(theta_p, p_off, host, map_off, maps, clique_off, out):
    """numpy twin of :func:`assemble`."""
    out[:] = 0.0
    for j in range(len(host)):
        start, stop = clique_off[host[j]], clique_off[host[j] + 1]
        out[start:stop] += theta_p[p_off[j] + maps[map_off[j]:map_off[j + 1]]]


@njit(cache=True)
def project(mu, p_off, host, map_off, maps, clique_off, out):
    """Marginals of the parameter cliques summed out of their host cliques (adjoint of assemble),
    written into ``out``."""
    out[:] = 0.0
    for j in range(host.shape[0]):
        start = clique_off[host[j]]
        n = clique_off[host[j] + 1] - start
        base = map_off[j]
        dst = p_off[j]
        for i in range(n):
            out[dst + maps[base + i]] += mu[start + i]


def project_reference(mu, p_off, host, map_off, maps, clique_off, out):
    """numpy twin of :func:`project`."""
    out[:] = 0.0
    for j in range(len(host)):
        start, stop = clique_off[host[j]], clique_off[host[j] + 1]
        size = p_off[j + 1] - p_off[j]
        out[p_off[j]:p_off[j + 1]] += np.bincount(maps[map_off[j]:map_off[j + 1]], mu[start:stop], minlength=size)


@njit(cache=True)
def assemble_runs(theta_p, p_off, host, run, kept, row_off, rows, clique_off, out):
    """:func:`assemble` for maps made of runs: the host's cells split into rows of ``run[j]``
    consecutive cells; row ``r`` starts at cell ``rows[row_off[j] + r]`` of parameter clique
    ``j`` and, if ``kept[j]``, walks it one cell per host cell (the host's trailing attributes
    belong to ``j``), else stays on that cell (they do not).  Inner loops run over contiguous
    slice views, which LLVM vectorises (indexing the flat buffers directly it does not).
    """
    out[:] = 0.0
    for j in range(host.shape[0]):
        start = clique_off[host[j]]
        length = run[j]
        count = (clique_off[host[j] + 1] - start) // length
        for r in range(count):
            dst = out[start + r * length:start + (r + 1) * length]
            p0 = p_off[j] + rows[row_off[j] + r]
            if kept[j]:
                src = theta_p[p0:p0 + length]
                for i in range(length):
                    dst[i] += src[i]
            else:
                v = theta_p[p0]
                for i in range(length):
                    dst[i] += v


@njit(cache=True, fastmath=True)
def project_runs(mu, p_off, host, run, kept, row_off, rows, clique_off, out):
    """:func:`project` for maps made of runs (see :func:`assemble_runs`), written into ``out``."""
    out[:] = 0.0
    for j in range(host.shape[0]):
        start = clique_off[host[j]]
        length = run[j]
        count = (clique_off[host[j] + 1] - start) // length
        for r in range(count):
            src = mu[start + r * length:start + (r + 1) * length]
            p0 = p_off[j] + rows[row_off[j] + r]
            if kept[j]:
                dst = out[p0:p0 + length]
                for i in range(length):
                    dst[i] += src[i]
            else:
                total = 0.0
                for i in range(length):
                    total += src[i]
                out[p0] += total


def _runs_to_maps(p_off, host, run, kept, row_off, rows, clique_off):
    """The plain per-cell maps (and their offsets) equivalent to a run description."""
    maps, map_off = [], [0]
    for j in range(len(host)):
        n = clique_off[host[j] + 1] - clique_off[host[j]]
        starts = np.repeat(rows[row_off[j]:row_off[j] + n // run[j]], run[j])
        steps = np.tile(np.arange(run[j]), n // run[j]) if kept[j] else 0
        maps.append((starts + steps).astype(np.int32))
        map_off.append(map_off[-1] + n)
    return (np.concatenate(maps) if maps else np.zeros(0, np.int32)), np.array(map_off, dtype=np.int64)


def assemble_runs_reference(theta_p, p_off, host, run, kept, row_off, rows, clique_off, out):
    """numpy twin of :func:`assemble_runs`."""
    maps, map_off = _runs_to_maps(p_off, host, run, kept, row_off, rows, clique_off)
    assemble_reference(theta_p, p_off, host, map_off, maps, clique_off, out)


def project_runs_reference(mu, p_off, host, run, kept, row_off, rows, clique_off, out):
    """numpy twin of :func:`project_runs`."""
    maps, map_off = _runs_to_maps(p_off, host, run, kept, row_off, rows, clique_off)
    project_reference(mu, p_off, host, map_off, maps, clique_off, out)


LOG2E = 1.4426950408889634
LN2_HI = 0.6931471803691238
LN2_LO = 1.9082149292705877e-10


@njit(cache=True)
def exp_nonpositive(x, n, scratch):
    """``x[:n] = exp(x[:n])`` for arguments <= 0, written to vectorise.

    Cody-Waite range reduction and a degree-13 Taylor polynomial (relative error below 5e-14, largest for the most negative arguments);
    results below exp(-708) flush to 0.  About 6x faster than the scalar libm ``exp`` numba
    calls (no SVML here).  ``scratch`` is an int64 buffer of at least ``n`` cells.
    """
    scale = scratch.view(np.float64)
    for i in range(n):
        v = x[i]
        low = v < -708.0
        v = max(v, -708.0)
        k = np.float64(np.int64(v * LOG2E - 0.5))
        r = (v - k * LN2_HI) - k * LN2_LO
        x[i] = 1.0 + r * (1.0 + r * (1 / 2 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (
            1 / 720 + r * (1 / 5040 + r * (1 / 40320 + r * (1 / 362880 + r * (1 / 3628800 + r * (
                1 / 39916800 + r * (1 / 479001600 + r / 6227020800))))))))))))
        scratch[i] = 0 if low else (np.int64(k) + 1023) << 52
    for i in range(n):
        x[i] *= scale[i]


@njit(cache=True, fastmath=True)
def _scatter_add_runs(src, start, n, length, kept, rows, roff, out, o0):
    """out[o0 + s] += src[start + i] over the cells i < n of a run-structured map (see assemble_runs)."""
    for r in range(n // length):
        p = o0 + rows[roff + r]
        values = src[start + r * length:start + (r + 1) * length]
        if kept:
            dst = out[p:p + length]
            for i in range(length):
                dst[i] += values[i]
        else:
            t = 0.0
            for i in range(length):
                t += values[i]
            out[p] += t


@njit(cache=True, fastmath=True)
def _gather_add_runs(dst, start, n, length, kept, rows, roff, values, v0):
    """dst[start + i] += values[v0 + s(i)] over the cells i < n of a run-structured map."""
    for r in range(n // length):
        p = v0 + rows[roff + r]
        target = dst[start + r * length:start + (r + 1) * length]
        if kept:
            src = values[p:p + length]
            for i in range(length):
                target[i] += src[i]
        else:
            v = values[p]
            for i in range(length):
                target[i] += v


@njit(cache=True, fastmath=True)
def _exact_logsumexp_runs(src, start, n, length, kept, rows, roff, peak, acc):
    """acc[s] = log sum exp src over the cells mapped to s, each s shifted by its own largest term
    (slow path for separator cells that underflow when shifted by the table's largest term)."""
    m = peak.shape[0]
    for s in range(m):
        peak[s] = -np.inf
        acc[s] = 0.0
    for r in range(n // length):
        p = rows[roff + r]
        k0 = start + r * length
        for i in range(length):
            s = p + i if kept else p
            peak[s] = max(peak[s], src[k0 + i])
    for r in range(n // length):
        p = rows[roff + r]
        k0 = start + r * length
        for i in range(length):
            s = p + i if kept else p
            acc[s] += np.exp(src[k0 + i] - peak[s])
    for s in range(m):
        acc[s] = peak[s] + np.log(acc[s])


@njit(cache=True, fastmath=True)
def calibrate(theta, clique_off, order, parent, sep_off, up_run, up_kept, up_off, up_rows, down_run, down_kept,
              down_off, down_rows, total, belief, marginals):
    """Calibrated log-space belief propagation on a junction tree (two passes).

    ``order`` lists the cliques children-first (root last); ``parent[k]`` is the parent of clique
    ``k`` (-1 for the root); the separator between ``k`` and its parent has ``sep_off[k+1] -
    sep_off[k]`` cells.  Index maps are run-structured (see :func:`assemble_runs`): ``up_*[k]``
    sends the cells of clique ``k`` to its separator with its parent, ``down_*[k]`` sends the
    cells of ``parent[k]`` to that same separator.  Collect: each clique sends the log-sum-exp
    of its belief onto the separator.  Distribute (root first): a clique's belief is final once
    its parent's message is absorbed; it is exponentiated once, giving its marginal and, summed
    onto each child's separator, the message to that child (its separator marginal minus the
    child's own upward message).  Separator cells that underflow are recomputed exactly.
    Writes into ``belief`` the normalised log-probability of every clique cell and into
    ``marginals`` the clique marginals in counts (scaled to ``total``); returns the log partition
    function.  ``belief`` and ``marginals`` are preallocated like ``theta``, which may be ``belief`` itself.
    """
    k = order.shape[0]
    if theta.ctypes.data != belief.ctypes.data:  # ``theta`` may be ``belief`` itself (no copy then)
        belief[:] = theta
    up = np.empty(sep_off[-1])
    down = np.empty(sep_off[-1])
    widest_sep = 1
    widest = 1
    for c in range(k):
        widest_sep = max(widest_sep, sep_off[c + 1] - sep_off[c])
        widest = max(widest, clique_off[c + 1] - clique_off[c])
    peak = np.empty(widest_sep)
    acc = np.empty(widest_sep)
    tmp = np.empty(widest)
    scratch = np.empty(widest, dtype=np.int64)
    # children of every clique, in CSR form
    first = np.zeros(k + 1, dtype=np.int64)
    for c in range(k):
        if parent[c] >= 0:
            first[parent[c] + 1] += 1
    for c in range(k):
        first[c + 1] += first[c]
    fill = first[:-1].copy()
    children = np.empty(max(first[k], 1), dtype=np.int64)
    for c in range(k):
        if parent[c] >= 0:
            children[fill[parent[c]]] = c
            fill[parent[c]] += 1
    for t in range(k):  # collect: children send to parents
        c = order[t]
        p = parent[c]
        if p < 0:
            continue
        start = clique_off[c]
        n = clique_off[c + 1] - start
        s0 = sep_off[c]
        m = sep_off[c + 1] - s0
        block = belief[start:start + n]
        top = -np.inf
        for i in range(n):
            top = max(top, block[i])
        for i in range(n):
            tmp[i] = block[i] - top
        exp_nonpositive(tmp, n, scratch)
        for s in range(m):
            acc[s] = 0.0
        _scatter_add_runs(tmp, 0, n, up_run[c], up_kept[c], up_rows, up_off[c], acc, 0)
        exact = True
        for s in range(m):
            if acc[s] < 1e-200:
                exact = False
            up[s0 + s] = top + np.log(acc[s])
        if not exact:
            _exact_logsumexp_runs(belief, start, n, up_run[c], up_kept[c], up_rows, up_off[c], peak[:m], acc[:m])
            for s in range(m):
                up[s0 + s] = acc[s]
        _gather_add_runs(belief, clique_off[p], clique_off[p + 1] - clique_off[p], down_run[c], down_kept[c],
                         down_rows, down_off[c], up, s0)
    log_z = 0.0
    for t in range(k - 1, -1, -1):  # distribute: parents first
        p = order[t]
        start = clique_off[p]
        n = clique_off[p + 1] - start
        if parent[p] >= 0:
            _gather_add_runs(belief, start, n, up_run[p], up_kept[p], up_rows, up_off[p], down, sep_off[p])
        block = belief[start:start + n]
        top = -np.inf
        for i in range(n):
            top = max(top, block[i])
        for i in range(n):
            tmp[i] = block[i] - top
        exp_nonpositive(tmp, n, scratch)
        z = 0.0
        for i in range(n):
            z += tmp[i]
        lz = top + np.log(z)
        if parent[p] < 0:
            log_z = lz
        scale = total / z
        counts = marginals[start:start + n]
        for i in range(n):
            counts[i] = tmp[i] * scale
            block[i] -= lz
        for j in range(first[p], first[p + 1]):
            c = children[j]
            s0 = sep_off[c]
            m = sep_off[c + 1] - s0
            for s in range(m):
                acc[s] = 0.0
            _scatter_add_runs(tmp, 0, n, down_run[c], down_kept[c], down_rows, down_off[c], acc, 0)
            exact = True
            for s in range(m):
                if acc[s] < 1e-250:
                    exact = False
                down[s0 + s] = np.log(acc[s] / z) - up[s0 + s]
            if not exact:
                _exact_logsumexp_runs(belief, start, n, down_run[c], down_kept[c], down_rows, down_off[c],
                                      peak[:m], acc[:m])
                for s in range(m):
                    down[s0 + s] = acc[s] - up[s0 + s]
    return log_z


def _logsumexp_by(values, index, size):
    peak = np.full(size, -np.inf)
    np.maximum.at(peak, index, values)
    return peak + np.log(np.bincount(index, np.exp(values - peak[index]), minlength=size))


def calibrate_reference(theta, clique_off, order, parent, sep_off, up_run, up_kept, up_off, up_rows, down_run,
                        down_kept, down_off, down_rows, total, belief, marginals):
    """numpy twin of :func:`calibrate` (plain maps, messages recomputed from scratch, no division)."""
    k = len(order)
    up_map = np.zeros(clique_off[-1], dtype=np.int64)
    down_maps = {}
    for c in range(k):
        if parent[c] < 0:
            continue
        n = clique_off[c + 1] - clique_off[c]
        rows = up_rows[up_off[c]:up_off[c] + n // up_run[c]]
        up_map[clique_off[c]:clique_off[c + 1]] = np.repeat(rows, up_run[c]) + (
            np.tile(np.arange(up_run[c]), rows.size) if up_kept[c] else 0)
        n = clique_off[parent[c] + 1] - clique_off[parent[c]]
        rows = down_rows[down_off[c]:down_off[c] + n // down_run[c]]
        down_maps[c] = np.repeat(rows, down_run[c]) + (np.tile(np.arange(down_run[c]), rows.size) if down_kept[c] else 0)
    cells = [slice(clique_off[c], clique_off[c + 1]) for c in range(k)]
    children = {c: [d for d in range(k) if parent[d] == c] for c in range(k)}
    sizes = np.diff(sep_off)

    up, down = {}, {}
    for c in order:
        if parent[c] < 0:
            continue
        inner = theta[cells[c]].copy()
        for d in children[c]:
            inner += up[d][down_maps[d]]
        up[c] = _logsumexp_by(inner, up_map[cells[c]], sizes[c])
    for c in order[::-1]:
        if parent[c] < 0:
            continue
        p = parent[c]
        inner = theta[cells[p]].copy()
        for d in children[p]:
            if d != c:
                inner += up[d][down_maps[d]]
        if parent[p] >= 0:
            inner += down[p][up_map[cells[p]]]
        down[c] = _logsumexp_by(inner, down_maps[c], sizes[c])
    belief[:] = theta
    log_z = 0.0
    for c in range(k):
        b = belief[cells[c]]
        for d in children[c]:
            b += up[d][down_maps[d]]
        if parent[c] >= 0:
            b += down[c][up_map[cells[c]]]
        top = b.max()
        lz = top + np.log(np.exp(b - top).sum())
        b -= lz
        if parent[c] < 0:
            log_z = lz
    marginals[:] = total * np.exp(belief)
    return log_z
