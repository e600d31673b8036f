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
    belong to ``j``), else stays on that cell (they do not).  Inner loops are contiguous.
    """
    out[:] = 0.0
    for j in range(host.shape[0]):
        start = clique_off[host[j]]
        length = run[j]
        count = (clique_off[host[j] + 1] - start) // length
        for r in range(count):
            k0 = start + r * length
            p0 = p_off[j] + rows[row_off[j] + r]
            if kept[j]:
                for i in range(length):
                    out[k0 + i] += theta_p[p0 + i]
            else:
                v = theta_p[p0]
                for i in range(length):
                    out[k0 + i] += v


@njit(cache=True)
def project_runs(mu, p_off, host, run, kept, row_off, rows, clique_off, out):
    """:func:`project` for maps made of runs (see :func:`assemble_runs`), written into ``out``."""
    out[:] = 0.0
    for j in range(host.shape[0]):
        start = clique_off[host[j]]
        length = run[j]
        count = (clique_off[host[j] + 1] - start) // length
        for r in range(count):
            k0 = start + r * length
            p0 = p_off[j] + rows[row_off[j] + r]
            if kept[j]:
                for i in range(length):
                    out[p0 + i] += mu[k0 + i]
            else:
                total = 0.0
                for i in range(length):
                    total += mu[k0 + i]
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
def _scatter_logsumexp(values, start, n, index, ibase, shift, out, o0, peak, acc, tmp, scratch):
    """out[o0+s] = log sum_{i: index[ibase+i]==s} exp(values[start+i] - shift[o0+s]) over s < m.

    Shifts by the largest term of the whole table (vectorised); a separator cell whose sum
    would lose precision to underflow (below 1e-200) is recomputed with its own largest term.
    ``shift`` may be empty (no shift); ``tmp`` and ``scratch`` hold at least ``n`` cells.
    """
    m = peak.shape[0]
    if shift.shape[0] > 0:
        for i in range(n):
            tmp[i] = values[start + i] - shift[o0 + index[ibase + i]]
    else:
        for i in range(n):
            tmp[i] = values[start + i]
    top = -np.inf
    for i in range(n):
        top = max(top, tmp[i])
    for i in range(n):
        tmp[i] -= top
    for s in range(m):
        acc[s] = 0.0
    exp_nonpositive(tmp, n, scratch)
    for i in range(n):
        acc[index[ibase + i]] += tmp[i]
    exact = True
    for s in range(m):
        if acc[s] < 1e-200:
            exact = False
        out[o0 + s] = top + np.log(acc[s])
    if exact:
        return
    for s in range(m):
        peak[s] = -np.inf
        acc[s] = 0.0
    for i in range(n):
        v = values[start + i]
        if shift.shape[0] > 0:
            v -= shift[o0 + index[ibase + i]]
        tmp[i] = v
        peak[index[ibase + i]] = max(peak[index[ibase + i]], v)
    for i in range(n):
        acc[index[ibase + i]] += np.exp(tmp[i] - peak[index[ibase + i]])
    for s in range(m):
        out[o0 + s] = peak[s] + np.log(acc[s])


@njit(cache=True, fastmath=True)
def calibrate(theta, clique_off, order, parent, sep_off, up_map, down_map, down_off, total, belief, marginals):
    """Calibrated log-space belief propagation on a junction tree (two passes).

    ``order`` lists the cliques children-first (root last); ``parent[k]`` is the parent of clique
    ``k`` (-1 for the root); the separator between ``k`` and its parent has ``sep_off[k+1] -
    sep_off[k]`` cells; ``up_map`` sends each cell of every clique to its separator with its
    parent; ``down_map[down_off[k]:]`` sends each cell of ``parent[k]`` to that same separator.
    Collect: each clique sends the log-sum-exp of its belief onto the separator.  Distribute
    (root first): a clique's belief is final once its parent's message is absorbed; it is
    exponentiated once, giving its marginal and, summed onto each child's separator, the
    message to that child (its separator marginal minus the child's own upward message).
    Writes into ``belief`` the normalised log-probability of every clique cell and into
    ``marginals`` the clique marginals in counts (scaled to ``total``); returns the log partition
    function.  ``belief`` and ``marginals`` are preallocated like ``theta``.
    """
    k = order.shape[0]
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
    none = np.empty(0)
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
        m = sep_off[c + 1] - sep_off[c]
        _scatter_logsumexp(belief, clique_off[c], clique_off[c + 1] - clique_off[c], up_map, clique_off[c],
                           none, up, sep_off[c], peak[:m], acc[:m], tmp, scratch)
        start = clique_off[p]
        base = down_off[c]
        s0 = sep_off[c]
        for i in range(clique_off[p + 1] - start):
            belief[start + i] += up[s0 + down_map[base + i]]
    log_z = 0.0
    for t in range(k - 1, -1, -1):  # distribute: parents first
        p = order[t]
        start = clique_off[p]
        n = clique_off[p + 1] - start
        if parent[p] >= 0:
            s0 = sep_off[p]
            for i in range(n):
                belief[start + i] += down[s0 + up_map[start + i]]
        top = -np.inf
        for i in range(n):
            top = max(top, belief[start + i])
        for i in range(n):
            tmp[i] = belief[start + i] - top
        exp_nonpositive(tmp, n, scratch)
        z = 0.0
        for i in range(n):
            z += tmp[i]
        lz = top + np.log(z)
        if parent[p] < 0:
            log_z = lz
        scale = total / z
        for i in range(n):
            marginals[start + i] = tmp[i] * scale
            belief[start + i] -= lz
        for j in range(first[p], first[p + 1]):
            c = children[j]
            s0 = sep_off[c]
            m = sep_off[c + 1] - s0
            base = down_off[c]
            for s in range(m):
                acc[s] = 0.0
            for i in range(n):
                acc[down_map[base + i]] += tmp[i]
            exact = True
            for s in range(m):
                if acc[s] < 1e-250:
                    exact = False
                down[s0 + s] = np.log(acc[s] / z) - up[s0 + s]
            if not exact:  # some separator cell underflowed: its own largest term as shift
                for s in range(m):
                    peak[s] = -np.inf
                    acc[s] = 0.0
                for i in range(n):
                    s = down_map[base + i]
                    peak[s] = max(peak[s], belief[start + i])
                for i in range(n):
                    s = down_map[base + i]
                    acc[s] += np.exp(belief[start + i] - peak[s])
                for s in range(m):
                    down[s0 + s] = peak[s] + np.log(acc[s]) - up[s0 + s]
    return log_z


def _logsumexp_by(values, index, size):
    peak = np.full(size, -np.inf)
    np.maximum.at(peak, index, values)
    return peak + np.log(np.bincount(index, np.exp(values - peak[index]), minlength=size))


def calibrate_reference(theta, clique_off, order, parent, sep_off, up_map, down_map, down_off, total, belief,
                        marginals):
    """numpy twin of :func:`calibrate` (messages recomputed from scratch, no division trick)."""
    k = len(order)
    cells = [slice(clique_off[c], clique_off[c + 1]) for c in range(k)]
    children = {c: [d for d in range(k) if parent[d] == c] for c in range(k)}
    sizes = np.diff(sep_off)

    def down_index(c):
        return down_map[down_off[c]:down_off[c] + clique_off[parent[c] + 1] - clique_off[parent[c]]]

    up, down = {}, {}
    for c in order:
        if parent[c] < 0:
            continue
        inner = theta[cells[c]].copy()
        for d in children[c]:
            inner += up[d][down_index(d)]
        up[c] = _logsumexp_by(inner, up_map[cells[c]], sizes[c])
    for c in order[::-1]:
        if parent[c] < 0:
            continue
        p = parent[c]
        inner = theta[cells[p]].copy()
        for d in children[p]:
            if d != c:
                inner += up[d][down_index(d)]
        if parent[p] >= 0:
            inner += down[p][up_map[cells[p]]]
        down[c] = _logsumexp_by(inner, down_index(c), sizes[c])
    belief[:] = theta
    log_z = 0.0
    for c in range(k):
        b = belief[cells[c]]
        for d in children[c]:
            b += up[d][down_index(d)]
        if parent[c] >= 0:
            b += down[c][up_map[cells[c]]]
        top = b.max()
        lz = top + np.log(np.exp(b - top).sum())
        b -= lz
        if parent[c] < 0:
            log_z = lz
    marginals[:] = total * np.exp(belief)
    return log_z
