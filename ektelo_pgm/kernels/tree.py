"""Private-PGM's compiled engine over flat junction-tree buffers (McKenna et al. 2019, sec. 3.2):
potential assembly, log-space calibration (the MARGINAL-ORACLE), projection, the losses of
identity measurements, and Algorithm 1's whole loop.

All cliques of a junction tree live in one flat float64 buffer (clique ``k`` occupies
``off[k]:off[k+1]``, its cells raveled in C order).  Relations between a clique and a smaller
table (a separator, or a clique hosted inside it) are int32 *index maps*: for each cell of the
big clique, the raveled index of the matching cell of the small table; the junction-tree
kernels store them as runs (see :func:`runs_to_maps`).  Every kernel is a numba function
compiled once with ``cache=True`` (fixed dtypes: float64 values, int64 offsets, int32 maps) and
has a plain numpy twin ``*_reference`` with the same semantics, used by the tests (the loop's
twin is the Python loop of :func:`ektelo_pgm.pgm.optimizers.mirror_descent`, whose fast path
it is for the junction-tree oracle).

One module, because numba's cache checks only the source file of each cached function, and a
cached function embeds the code it calls: the loop embeds the oracle and the losses, so they
must live (and change) together.  Functions with parallel loops, and those calling them, are not
cached themselves: numba writes a broken cache entry (a segfault when a later process loads it)
for a cached function compiled against a callee with parallel code that was itself loaded from
the cache.  They are compiled into the cached entry points that use them, :func:`calibrate` and
:func:`mirror_descent_loop`.
"""
from __future__ import annotations

import os
import time
from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit, objmode, prange

from .interrupt import sigint_received


class TreeLayout(NamedTuple):
    """A junction tree (a forest) laid out for the kernels; int64 arrays unless said otherwise.

    ``order`` lists the cliques children first; ``parent[k]`` is the parent of clique ``k`` (-1
    for a root), its children are ``children[child_off[k]:child_off[k + 1]]``; clique ``k``
    occupies ``clique_off[k]:clique_off[k + 1]`` of the flat tree buffers, the separator with its
    parent ``sep_off[k]:sep_off[k + 1]`` of the separator buffers.  ``up_*[k]`` is the
    run-structured map (see :func:`runs_to_maps`; ``*_kept`` bool, ``*_rows`` int32) from the
    cells of clique ``k`` to that separator, ``down_*[k]`` the one from the cells of ``parent[k]``.
    """
    clique_off: np.ndarray
    order: np.ndarray
    parent: np.ndarray
    child_off: np.ndarray
    children: np.ndarray
    sep_off: np.ndarray
    up_run: np.ndarray
    up_kept: np.ndarray
    up_off: np.ndarray
    up_rows: np.ndarray
    down_run: np.ndarray
    down_kept: np.ndarray
    down_off: np.ndarray
    down_rows: np.ndarray


class ParameterLayout(NamedTuple):
    """The parameter cliques hosted in a :class:`TreeLayout`, through staged tables.

    Tables ``0 .. m - 1`` are the parameter cliques, ``m ..`` the staged tables: sums of several
    tables over fewer attributes than their host, so that a large clique is passed over once for
    them all (:func:`~ektelo_pgm.pgm.inference.staging`).  Table ``j`` occupies
    ``p_off[j]:p_off[j + 1]`` of the flat table buffers (the parameters' first, ``m =
    len(p_off) - len(staged_off)``), and the run-structured map ``(run[j], kept[j],
    rows[row_off[j]:])`` sends its host's cells to its own.  Tree clique ``k`` hosts the tables
    ``hosted[hosted_off[k]:hosted_off[k + 1]]``, staged table ``m + s`` the tables
    ``staged[staged_off[s]:staged_off[s + 1]]`` (each of a lower number: inner tables first)."""
    hosted_off: np.ndarray
    hosted: np.ndarray
    p_off: np.ndarray
    run: np.ndarray
    kept: np.ndarray
    row_off: np.ndarray
    rows: np.ndarray
    staged_off: np.ndarray
    staged: np.ndarray


class Workspace(NamedTuple):
    """Outputs and scratch of :func:`calibrate` (float64 unless said otherwise): ``belief`` (tree
    cells) receives the log-beliefs and ``log_norm`` (one per clique) their log-normalisers;
    scratch: ``up`` and ``down`` (separator cells), ``acc`` and ``peak`` (widest separator),
    ``tmp`` (widest clique), ``tables`` (the :class:`ParameterLayout`'s tables), ``bits`` (int64,
    :data:`BLOCK` cells)."""
    belief: np.ndarray
    log_norm: np.ndarray
    up: np.ndarray
    down: np.ndarray
    acc: np.ndarray
    peak: np.ndarray
    tmp: np.ndarray
    tables: np.ndarray
    bits: np.ndarray


class LossTerms(NamedTuple):
    """The loss of :func:`mirror_descent_loop`: identity measurements (``index``, ``y``, ``w``: see
    :func:`identity_loss`, L1 if ``l1``) plus, if ``python``, ``HOOKS[key][0]``."""
    index: np.ndarray
    y: np.ndarray
    w: np.ndarray
    l1: bool
    key: int
    python: bool


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


def runs_to_maps(run, kept, row_off, rows, sizes):
    """The plain per-cell maps (concatenated, and their offsets) of run-structured maps.

    A run-structured map sends the ``sizes[j]`` cells of a big table to a small one by rows of
    ``run[j]`` consecutive cells; row ``r`` starts at cell ``rows[row_off[j] + r]`` of the small
    table and, if ``kept[j]``, walks it one cell per cell of the big table (the big table's
    trailing attributes belong to the small one), else stays on that cell (they do not).
    """
    maps, map_off = [], [0]
    for j, n in enumerate(sizes):
        starts = np.repeat(rows[row_off[j]:row_off[j] + n // run[j]], run[j])
        steps = np.tile(np.arange(run[j]), n // run[j]) if kept[j] else 0
        maps.append((starts + steps).astype(np.int64))
        map_off.append(map_off[-1] + n)
    return (np.concatenate(maps) if maps else np.zeros(0, np.int64)), np.array(map_off, dtype=np.int64)


LOG2E = 1.4426950408889634
LN2_HI = 0.6931471803691238
LN2_LO = 1.9082149292705877e-10
BLOCK = 1024  # cells per block of the exp loop: its int64 scratch (8 KB) stays in the L1 cache
PARALLEL_CELLS = 1 << 15  # tables from this many cells spread exp, gather and scatter over all cores
SCATTER_CHUNKS = 4  # a large table is summed onto a small one in this many chunks of rows
SCATTER_SPAN = 16  # ... when it has this many times the small one's cells
SERIAL = 1 << 62  # a threshold no table reaches
_forked = False


def _after_fork_in_child():
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_after_fork_in_child)


LOAD_EVERY = 1.0  # seconds between two readings of the machine's load
_load = [-float("inf"), 0.0]  # (time.monotonic() of the last reading, CPUs busy with other work)


SAMPLES, SPACING = 5, 0.001  # run-queue samples per reading, seconds apart


def _running_elsewhere() -> int:
    """Runnable threads on the machine (``/proc/loadavg``'s fourth field: running or waiting for
    a CPU at this instant) less this process's own threads in state R (Linux)."""
    with open("/proc/loadavg") as f:
        runnable = int(f.read().split()[3].split("/")[0])
    ours = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/stat") as f:
                stat = f.read()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        ours += stat[stat.rindex(")") + 2] == "R"
    return max(runnable - ours, 0)


def _busy_elsewhere() -> float:
    """CPUs other work wants now: on Linux the fewest threads of other processes runnable in
    :data:`SAMPLES` looks :data:`SPACING` seconds apart (:func:`_running_elsewhere`); else the
    1-minute load average less this process's one thread; 0 where neither is available.

    Instantaneous, unlike the load average, which takes about a minute to see a competitor that
    has just started (a run beside one started 2 s earlier went parallel and took 1.9x the wall
    time of one thread) and counts this process's own parallel threads as load.  The fewest of
    several looks, because one look also catches short-lived processes (a shell command, a
    monitor; one in seven single looks on the idle machine), and a compiled loop that reads the
    policy once would then run serial throughout; a CPU-bound competitor is runnable in every
    look."""
    try:
        fewest = _running_elsewhere()
        for _ in range(SAMPLES - 1):
            if fewest == 0:
                break
            time.sleep(SPACING)
            fewest = min(fewest, _running_elsewhere())
        return float(fewest)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return max(os.getloadavg()[0] - 1.0, 0.0)
    except (AttributeError, OSError):
        return 0.0


def idle_cores() -> float:
    """CPUs minus what other work wants now (:func:`_busy_elsewhere`), read at most every
    :data:`LOAD_EVERY` seconds."""
    now = time.monotonic()
    if now - _load[0] > LOAD_EVERY:
        _load[:] = [now, _busy_elsewhere()]
    return (os.cpu_count() or 1) - _load[1]


def parallel_cells() -> int:
    """The ``parallel_cells`` argument of the kernels: :data:`PARALLEL_CELLS` when the machine has
    an idle core for each of numba's threads (``NUMBA_NUM_THREADS``; :func:`idle_cores`), otherwise
    :data:`SERIAL`.  On a busy machine the threads wait for cores at every barrier: on 2 CPUs at
    load 4-7, PGM with two threads took 11x the wall time and 10x the CPU time of one thread.
    Also :data:`SERIAL` in a process forked from another (e.g. a ``multiprocessing`` pool): GNU
    OpenMP, numba's threading layer here, terminates a forked child that starts parallel work
    once its parent has; a pool of processes keeps the cores busy anyway."""
    threads = get_num_threads()
    if _forked or (threads > 1 and idle_cores() < threads):
        return SERIAL
    return PARALLEL_CELLS


def spare_threads(most: int) -> int:
    """Python threads, up to ``most``, for work that is parallel in numpy: one per idle core now
    (:func:`idle_cores`), at least one; one in a forked process (as :func:`parallel_cells`)."""
    return 1 if _forked else max(1, min(most, int(idle_cores())))


def workspace(tree: TreeLayout, params: ParameterLayout) -> Workspace:
    """A fresh (uninitialised) :class:`Workspace` for calibrating ``tree`` with ``params``."""
    seps = int(tree.sep_off[-1])
    widest_sep = max(1, int(np.diff(tree.sep_off).max(initial=0)))
    widest = int(np.diff(tree.clique_off).max())
    return Workspace(belief=np.empty(tree.clique_off[-1]), log_norm=np.empty(len(tree.clique_off) - 1),
                     up=np.empty(seps), down=np.empty(seps), acc=np.empty(widest_sep), peak=np.empty(widest_sep),
                     tmp=np.empty(widest), tables=np.empty(params.p_off[-1]), bits=np.empty(BLOCK, dtype=np.int64))


@njit(cache=True)
def _exp_block(values, shift, out, bits):
    """``out = exp(values - shift)`` for one block (arguments <= 0, at most ``len(bits)`` cells);
    returns ``sum(out)``.  The loops run over slice views, which LLVM vectorises."""
    scale = bits.view(np.float64)
    for i in range(values.shape[0]):
        v = values[i] - shift
        low = v < -708.0
        v = max(v, -708.0)
        k = np.float64(np.int64(v * LOG2E - 0.5))
        r = (v - k * LN2_HI) - k * LN2_LO
        out[i] = 1.0 + r * (1.0 + r * (1 / 2 + r * (1 / 6 + r * (1 / 24 + r * (1 / 120 + r * (
            1 / 720 + r * (1 / 5040 + r * (1 / 40320 + r * (1 / 362880 + r * (1 / 3628800 + r * (
                1 / 39916800 + r / 479001600)))))))))))
        bits[i] = 0 if low else (np.int64(k) + 1023) << 52
    for i in range(values.shape[0]):
        out[i] *= scale[i]
    return _sum(out)


@njit(parallel=True)
def exp_shifted(src, shift, dst, bits, parallel_cells):
    """``dst = exp(src - shift)`` (arguments <= 0, ``dst`` as long as ``src``); returns ``sum(dst)``.

    Cody-Waite range reduction and a degree-12 Taylor polynomial (relative error below 1e-15),
    results below exp(-708) flush to 0; blocks of :data:`BLOCK` cells (``bits``: int64 scratch
    of ``BLOCK`` cells), spread over all cores from ``parallel_cells`` cells, with the same result
    either way (whether a run goes parallel depends on the machine's load).  Several times faster than the scalar libm ``exp`` that numba calls (no SVML here).
    """
    n = src.shape[0]
    blocks = (n + BLOCK - 1) // BLOCK
    if n < parallel_cells:
        total = 0.0
        for b in range(blocks):
            lo, hi = b * BLOCK, min(n, (b + 1) * BLOCK)
            total += _exp_block(src[lo:hi], shift, dst[lo:hi], bits)
        return total
    sums = np.empty(blocks)
    for b in prange(blocks):
        lo, hi = b * BLOCK, min(n, (b + 1) * BLOCK)
        sums[b] = _exp_block(src[lo:hi], shift, dst[lo:hi], np.empty(BLOCK, dtype=np.int64))
    total = 0.0
    for b in range(blocks):  # in block order, as the serial branch adds: both give the same bits
        total += sums[b]
    return total


@njit(cache=True, fastmath=True)
def _sum(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return total


@njit(cache=True, fastmath=True)
def _max(x):
    top = -np.inf
    for i in range(x.shape[0]):
        top = max(top, x[i])
    return top


@njit
def _exp_table(block, bound, out, bits, parallel_cells):
    """``out = exp(block - top)``; returns ``(top, sum(out))``.  ``top`` is ``bound`` (an upper
    bound of ``block``, which saves a pass over it) unless that leaves a sum below 1e-30 (the
    bound is over 69 too high); then it is ``max(block)``.  Either way only cells below e^-639
    times the largest one underflow to 0."""
    if block.shape[0] <= BLOCK:
        z = _exp_block(block, bound, out, bits)
    else:
        z = exp_shifted(block, bound, out, bits, parallel_cells)
    if z >= 1e-30:
        return bound, z
    top = _max(block)
    return top, exp_shifted(block, top, out, bits, parallel_cells)


@njit(parallel=True)
def _scatter_add_runs(src, start, n, length, kept, rows, roff, out, o0, width, parallel_cells):
    """out[o0 + s] += src[start + i] over the cells i < n of a run-structured map onto ``width``
    cells (see runs_to_maps).

    From :data:`PARALLEL_CELLS` cells, when they are at least :data:`SCATTER_SPAN` times
    ``width``, the rows are summed in :data:`SCATTER_CHUNKS` chunks, each into a buffer of its
    own, the buffers then added in order: the same bits whether the chunks run on all cores
    (from ``parallel_cells`` cells) or one after another."""
    count = n // length
    if n < PARALLEL_CELLS or n < SCATTER_SPAN * width:
        _scatter_rows(src, start, 0, count, length, kept, rows, roff, out, o0)
        return
    part = np.empty((SCATTER_CHUNKS, width))  # not np.zeros: that would start threads even on the serial path
    step = (count + SCATTER_CHUNKS - 1) // SCATTER_CHUNKS
    if n < parallel_cells:
        for t in range(SCATTER_CHUNKS):
            _chunk_rows(src, start, t * step, min(count, (t + 1) * step), length, kept, rows, roff, part[t])
    else:
        for t in prange(SCATTER_CHUNKS):
            _chunk_rows(src, start, t * step, min(count, (t + 1) * step), length, kept, rows, roff, part[t])
    target = out[o0:o0 + width]
    for t in range(SCATTER_CHUNKS):
        chunk = part[t]
        for i in range(width):
            target[i] += chunk[i]


@njit(cache=True, fastmath=True)
def _chunk_rows(src, start, first, last, length, kept, rows, roff, out):
    """out = the sum of src[start + i] onto each cell over the rows ``first <= r < last``."""
    for i in range(out.shape[0]):
        out[i] = 0.0
    _scatter_rows(src, start, first, last, length, kept, rows, roff, out, 0)


@njit(cache=True, fastmath=True)
def _scatter_rows(src, start, first, last, length, kept, rows, roff, out, o0):
    """out[o0 + s] += src[start + i] over the rows ``first <= r < last`` of a run-structured map."""
    for r in range(first, last):
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


@njit(fastmath=True, parallel=True)
def _gather_add_runs(dst, start, n, length, kept, rows, roff, values, v0, parallel_cells):
    """dst[start + i] += values[v0 + s(i)] over the cells i < n of a run-structured map, row by
    row (rows write disjoint cells: over all cores from ``parallel_cells`` cells).

    The inner loops run over contiguous slice views and are written out in both branches: so
    LLVM vectorises them (not when indexing the flat buffers, nor through a helper function)."""
    if n < parallel_cells:
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
    else:
        for r in prange(n // length):
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


@njit
def calibrate_core(theta, total, tree, params, mu, work, parallel_cells, marginals=True):
    """MARGINAL-ORACLE by calibrated log-space belief propagation on a junction tree (two passes).

    ``tree`` is a :class:`TreeLayout`, ``params`` the :class:`ParameterLayout` of the parameter
    cliques, whose log-potentials are ``theta``.
    Assembly: each staged table is the sum of those it hosts, then each clique's log-potential
    the sum of those it hosts.  Collect: each clique
    sends the log-sum-exp of its belief onto the separator with its parent.  Distribute (root
    first): a clique's belief is final once its parent's message is absorbed; it is exponentiated
    once, which gives the marginals of the tables it hosts and, summed onto each child's
    separator, the message to that child (the separator marginal minus the child's own upward
    message); the staged tables' marginals give those of the tables they host.  Separator cells
    that underflow are recomputed exactly.
    Writes the final log-beliefs, unnormalised, into ``work.belief`` (tree size) and their log
    normalisers into ``work.log_norm`` (one per clique; ``belief - log_norm`` is the
    log-probability), the parameter cliques' marginals in counts (scaled to ``total``) into
    ``mu``; returns the log partition function (the sum of the roots' log-normalisers).  The rest
    of ``work`` (a :class:`Workspace`) is scratch.  Tables from ``parallel_cells`` cells use all
    cores (see :func:`parallel_cells`).  Without ``marginals`` only the log partition function is
    computed (the collect pass and the roots' normalisers); ``mu`` and ``work`` then hold no results.
    """
    # every array bound to a local name once (field by field), so that the loops hold no tuple accesses
    clique_off, order, parent, sep_off = tree.clique_off, tree.order, tree.parent, tree.sep_off
    child_off, children = tree.child_off, tree.children
    up_run, up_kept, up_off, up_rows = tree.up_run, tree.up_kept, tree.up_off, tree.up_rows
    down_run, down_kept, down_off, down_rows = tree.down_run, tree.down_kept, tree.down_off, tree.down_rows
    hosted_off, hosted, p_off = params.hosted_off, params.hosted, params.p_off
    run, kept, row_off, rows = params.run, params.kept, params.row_off, params.rows
    staged_off, staged = params.staged_off, params.staged
    belief, log_norm, up, down = work.belief, work.log_norm, work.up, work.down
    acc, peak, tmp, tables, bits = work.acc, work.peak, work.tmp, work.tables, work.bits
    k = order.shape[0]
    cut = theta.shape[0]  # the parameters' cells; the staged tables follow them in ``tables``
    first = p_off.shape[0] - staged_off.shape[0]  # the first staged table
    tables[:cut] = theta
    for st in range(staged_off.shape[0] - 1):  # staging, inner tables first
        g0 = p_off[first + st]
        g = p_off[first + st + 1] - g0
        tables[g0:g0 + g] = 0.0
        for h in range(staged_off[st], staged_off[st + 1]):
            j = staged[h]
            _gather_add_runs(tables, g0, g, run[j], kept[j], rows, row_off[j], tables, p_off[j], parallel_cells)
    bound = np.zeros(k)  # upper bound of each clique's belief: the sum of the largest terms added to it
    for c in range(k):  # assembly
        start = clique_off[c]
        n = clique_off[c + 1] - start
        belief[start:start + n] = 0.0
        for h in range(hosted_off[c], hosted_off[c + 1]):
            j = hosted[h]
            _gather_add_runs(belief, start, n, run[j], kept[j], rows, row_off[j], tables, p_off[j], parallel_cells)
            bound[c] += _max(tables[p_off[j]:p_off[j + 1]])
    for t in range(k):  # collect: children send to parents
        c = order[t]
        p = parent[c]
        if p < 0:
            continue
        start = clique_off[c]
        n = clique_off[c + 1] - start
        s0 = sep_off[c]
        m = sep_off[c + 1] - s0
        top = _exp_table(belief[start:start + n], bound[c], tmp[:n], bits, parallel_cells)[0]
        acc[:m] = 0.0
        _scatter_add_runs(tmp, 0, n, up_run[c], up_kept[c], up_rows, up_off[c], acc, 0, m, parallel_cells)
        exact = True
        for s in range(m):
            if acc[s] < 1e-200:
                exact = False
            up[s0 + s] = top + np.log(acc[s])
        if not exact:
            _exact_logsumexp_runs(belief, start, n, up_run[c], up_kept[c], up_rows, up_off[c],
                                  peak[:m], acc[:m])
            up[s0:s0 + m] = acc[:m]
        bound[p] += _max(up[s0:s0 + m])
        _gather_add_runs(belief, clique_off[p], clique_off[p + 1] - clique_off[p], down_run[c],
                         down_kept[c], down_rows, down_off[c], up, s0, parallel_cells)
    log_z = 0.0
    for t in range(k - 1, -1, -1):  # distribute: parents first
        p = order[t]
        if not marginals and parent[p] >= 0:
            continue
        start = clique_off[p]
        n = clique_off[p + 1] - start
        if parent[p] >= 0:
            _gather_add_runs(belief, start, n, up_run[p], up_kept[p], up_rows, up_off[p], down,
                             sep_off[p], parallel_cells)
        top, z = _exp_table(belief[start:start + n], bound[p], tmp[:n], bits, parallel_cells)
        lz = top + np.log(z)
        log_norm[p] = lz
        if parent[p] < 0:
            log_z += lz
        if not marginals:
            continue
        scale = total / z
        for h in range(hosted_off[p], hosted_off[p + 1]):
            j = hosted[h]
            out = tables[p_off[j]:p_off[j + 1]]
            out[:] = 0.0
            _scatter_add_runs(tmp, 0, n, run[j], kept[j], rows, row_off[j], tables, p_off[j], out.shape[0],
                              parallel_cells)
            for i in range(out.shape[0]):
                out[i] *= scale
        for i in range(child_off[p], child_off[p + 1]):
            c = children[i]
            s0 = sep_off[c]
            m = sep_off[c + 1] - s0
            acc[:m] = 0.0
            _scatter_add_runs(tmp, 0, n, down_run[c], down_kept[c], down_rows, down_off[c], acc, 0, m,
                              parallel_cells)
            exact = True
            for s in range(m):
                if acc[s] < 1e-250:
                    exact = False
                down[s0 + s] = np.log(acc[s] / z) - up[s0 + s]
            if not exact:
                _exact_logsumexp_runs(belief, start, n, down_run[c], down_kept[c], down_rows,
                                      down_off[c], peak[:m], acc[:m])
                for s in range(m):
                    down[s0 + s] = acc[s] - lz - up[s0 + s]
            bound[c] += _max(down[s0:s0 + m])
    if marginals:
        for st in range(staged_off.shape[0] - 2, -1, -1):  # unstaging, outer tables first
            g0 = p_off[first + st]
            g = p_off[first + st + 1] - g0
            for h in range(staged_off[st], staged_off[st + 1]):
                j = staged[h]
                tables[p_off[j]:p_off[j + 1]] = 0.0
                _scatter_add_runs(tables, g0, g, run[j], kept[j], rows, row_off[j], tables, p_off[j],
                                  p_off[j + 1] - p_off[j], parallel_cells)
        mu[:] = tables[:cut]
    return log_z


@njit(cache=True)
def calibrate(theta, total, tree, params, mu, work, parallel_cells):
    """The MARGINAL-ORACLE (:func:`calibrate_core`) as a cached entry point for Python callers."""
    return calibrate_core(theta, total, tree, params, mu, work, parallel_cells)


@njit(cache=True)
def log_partition(theta, tree, params, work, parallel_cells):
    """The log partition function of log-potentials ``theta`` alone (:func:`calibrate_core`'s
    collect pass): half the work of :func:`calibrate` or less."""
    return calibrate_core(theta, 1.0, tree, params, np.empty(0), work, parallel_cells, False)


def _logsumexp_by(values, index, size):
    peak = np.full(size, -np.inf)
    np.maximum.at(peak, index, values)
    return peak + np.log(np.bincount(index, np.exp(values - peak[index]), minlength=size))


def calibrate_reference(theta, total, tree, params, mu, work, parallel_cells):
    """numpy twin of :func:`calibrate` (plain maps, each parameter clique's composed through its
    staged tables straight from its tree clique, every message recomputed from scratch, no
    division, normalised beliefs: ``work.log_norm`` is all zeros)."""
    clique_off, order, parent, sep_off, p_off = tree.clique_off, tree.order, tree.parent, tree.sep_off, params.p_off
    k = len(order)
    cells = [slice(clique_off[c], clique_off[c + 1]) for c in range(k)]
    sizes = np.diff(clique_off)
    first = len(p_off) - len(params.staged_off)  # the first staged table
    owner = np.empty(len(p_off) - 1, dtype=np.int64)  # host: a tree clique, or -1 - a staged table
    for c in range(k):
        owner[params.hosted[params.hosted_off[c]:params.hosted_off[c + 1]]] = c
    for s in range(len(params.staged_off) - 1):
        owner[params.staged[params.staged_off[s]:params.staged_off[s + 1]]] = -1 - (first + s)
    host_sizes = np.where(owner >= 0, sizes[np.maximum(owner, 0)], np.diff(p_off)[np.maximum(-1 - owner, 0)])
    t_maps, t_map_off = runs_to_maps(params.run, params.kept, params.row_off, params.rows, host_sizes)
    host, p_maps = np.empty(first, dtype=np.int64), []
    for j in range(first):
        composed, h = t_maps[t_map_off[j]:t_map_off[j + 1]], owner[j]
        while h < 0:
            composed = composed[t_maps[t_map_off[-1 - h]:t_map_off[-h]]]
            h = owner[-1 - h]
        host[j] = h
        p_maps.append(composed)
    linked = parent >= 0  # the root has no separator: empty maps
    up_maps, up_map_off = runs_to_maps(tree.up_run, tree.up_kept, tree.up_off, tree.up_rows, np.where(linked, sizes, 0))
    down_maps, down_map_off = runs_to_maps(tree.down_run, tree.down_kept, tree.down_off, tree.down_rows,
                                           np.where(linked, sizes[np.maximum(parent, 0)], 0))
    up_map = {c: up_maps[up_map_off[c]:up_map_off[c + 1]] for c in range(k)}
    down_map = {c: down_maps[down_map_off[c]:down_map_off[c + 1]] for c in range(k)}
    kids = {c: list(tree.children[tree.child_off[c]:tree.child_off[c + 1]]) for c in range(k)}
    sep_sizes = np.diff(sep_off)

    log_phi = np.zeros(clique_off[-1])
    for j, c in enumerate(host):
        log_phi[cells[c]] += theta[p_off[j] + p_maps[j]]
    ups, downs = {}, {}
    for c in order:
        if parent[c] < 0:
            continue
        inner = log_phi[cells[c]].copy()
        for d in kids[c]:
            inner += ups[d][down_map[d]]
        ups[c] = _logsumexp_by(inner, up_map[c], sep_sizes[c])
    for c in order[::-1]:
        if parent[c] < 0:
            continue
        p = parent[c]
        inner = log_phi[cells[p]].copy()
        for d in kids[p]:
            if d != c:
                inner += ups[d][down_map[d]]
        if parent[p] >= 0:
            inner += downs[p][up_map[p]]
        downs[c] = _logsumexp_by(inner, down_map[c], sep_sizes[c])
    belief = work.belief
    belief[:] = log_phi
    log_z = 0.0
    for c in range(k):
        b = belief[cells[c]]
        for d in kids[c]:
            b += ups[d][down_map[d]]
        if parent[c] >= 0:
            b += downs[c][up_map[c]]
        top = b.max()
        lz = top + np.log(np.exp(b - top).sum())
        b -= lz
        if parent[c] < 0:
            log_z += lz
    work.log_norm[:] = 0.0
    marginals = total * np.exp(belief)
    for j, c in enumerate(host):
        mu[p_off[j]:p_off[j + 1]] = np.bincount(p_maps[j], marginals[cells[c]], minlength=p_off[j + 1] - p_off[j])
    return log_z


@njit(cache=True)
def identity_loss(mu, index, y, w, l1, grad):
    """Loss of identity (marginal) measurements: the weighted residuals ``r = w * (mu[index] - y)``,
    ``index[i]`` the cell of the flat marginal buffer answered by ``y[i]`` with weight ``w[i] =
    1/std`` (supplement C.1, C.2); its gradient (w.r.t. ``mu``) overwrites ``grad``.

    L2: ``0.5 * sum r**2`` with gradient ``w * r``; L1: ``sum |r|`` with subgradient ``w * sign(r)``.
    """
    grad[:] = 0.0
    value = 0.0
    for i in range(index.shape[0]):
        j = index[i]
        r = w[i] * (mu[j] - y[i])
        if l1:
            value += abs(r)
            grad[j] += w[i] * np.sign(r)
        else:
            value += 0.5 * r * r
            grad[j] += w[i] * r
    return value


def identity_loss_reference(mu, index, y, w, l1, grad):
    """numpy twin of :func:`identity_loss`."""
    r = w * (mu[index] - y)
    grad[:] = np.bincount(index, w * (np.sign(r) if l1 else r), minlength=mu.size)
    return float(np.abs(r).sum()) if l1 else float(0.5 * r @ r)


@njit(cache=True)
def step(theta, alpha, grad, out):
    """``out = theta - alpha * grad`` without temporaries (the mirror-descent update)."""
    for i in range(theta.shape[0]):
        out[i] = theta[i] - alpha * grad[i]


def step_reference(theta, alpha, grad, out):
    """numpy twin of :func:`step`."""
    out[:] = theta - alpha * grad


@njit(cache=True)
def predicted_decrease(grad, before, after):
    """``grad . (before - after)`` without temporaries (the Armijo test)."""
    total = 0.0
    for i in range(grad.shape[0]):
        total += grad[i] * (before[i] - after[i])
    return total


def predicted_decrease_reference(grad, before, after):
    """numpy twin of :func:`predicted_decrease`."""
    return float(grad @ (before - after))


@njit(cache=True)
def dot(a, b):
    """``a . b`` of two 1-D arrays, serial.  numpy's ``@`` calls OpenBLAS, whose ``ddot`` spreads
    vectors over 10,000 entries over all its threads; beside other busy processes each call then
    waits milliseconds for a core (L-BFGS on a 10,121-cell model: 100 ms an iteration instead of
    1.6 ms)."""
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


def dot_reference(a, b):
    """numpy twin of :func:`dot`."""
    return float(a @ b)


# The line search of Algorithm 1 (McKenna et al. 2019); APPGM's proximal loop
# (ektelo_pgm.pgm.appgm.estimation) halves and doubles its step by the same HALVINGS and GROW_AFTER.
ARMIJO = 1e-4  # a step must lower the loss by this fraction of the decrease the gradient predicts,
MIN_DECREASE = 1e-9  # and by more than this fraction of the loss itself
HALVINGS = 25  # trial steps per iteration before the search gives up
GROW_AFTER = 4  # iterations in a row whose first trial was accepted before the step doubles
TINY = float(np.finfo(float).tiny)
INTERRUPT_CELLS = 1 << 20  # tree cells calibrated between two looks at Ctrl-C (about 10 ms of work)

# Python reached from the compiled loop through ``numba.objmode``, registered for one run:
# key -> (loss of the measurements that are not identity ones, or of a callable loss:
# (mu, grad) -> value, gradient added into grad; callback: (t, loss))
HOOKS: dict = {}


def _python_loss(key, mu, grad):
    return float(HOOKS[key][0](mu, grad))


def _report(key, t, value):
    HOOKS[key][1](t, value)


@njit(cache=True)
def _loss(mu, grad, loss):
    value = identity_loss(mu, loss.index, loss.y, loss.w, loss.l1, grad)
    if loss.python:
        key = loss.key
        with objmode(extra="float64"):
            extra = _python_loss(key, mu, grad)
        value += extra
    return value


@njit(cache=True)
def mirror_descent_loop(theta, total, iters, tol, first, smooth, report, loss, tree, params, work,
                        parallel_cells):
    """Algorithm 1 from the log-potentials ``theta`` (flat, parameter cliques; not modified), the
    whole loop in one numba call: :func:`ektelo_pgm.pgm.optimizers.mirror_descent` on the
    junction-tree oracle (:meth:`~ektelo_pgm.pgm.inference.MarginalOracle.fused_mirror_descent`).

    ``theta <- theta - alpha * grad L(mu)``, ``mu = MARGINAL-ORACLE(theta)`` (counts, scaled to
    ``total``).  Each iteration doubles ``alpha`` after :data:`GROW_AFTER` iterations whose first
    trial was accepted, then halves it (at most :data:`HALVINGS` trials) until the loss drops by
    at least :data:`ARMIJO` times the decrease the gradient predicts and by more than
    :data:`MIN_DECREASE` of itself.  ``alpha`` starts at ``first``.  When no trial qualifies, a
    ``smooth`` loss has converged and the run stops; otherwise a subgradient step of
    ``first / sqrt(t)`` is taken.  Stops after ``iters`` iterations or when the relative loss
    change is at most ``tol``.
    ``loss`` is a :class:`LossTerms`; if ``report``, ``HOOKS[loss.key][1](t, loss)`` runs after
    every iteration.  Every :data:`INTERRUPT_CELLS` calibrated cells (counting every calibration,
    line-search trials included) the loop asks :func:`~ektelo_pgm.kernels.interrupt.sigint_received`
    and stops early if Ctrl-C was pressed (the caller raises it, see
    :func:`~ektelo_pgm.kernels.interrupt.deferred_sigint`).  ``tree``, ``params``, ``work`` and
    ``parallel_cells`` are those of :func:`calibrate_core`.
    Returns ``(theta, loss, iterations)`` of the best iterate (the last one for a smooth loss).
    """
    n = theta.shape[0]
    thetas = np.empty((2, n))
    thetas[0] = theta
    mus = np.empty((2, n))
    grads = np.empty((2, n))
    cur = 0
    key = loss.key
    calibrate_core(thetas[0], total, tree, params, mus[0], work, parallel_cells)
    value = _loss(mus[0], grads[0], loss)
    best = thetas[0].copy()
    best_value = value
    alpha = first
    streak = GROW_AFTER
    done = 0
    pending = 0  # tree cells calibrated since Python last ran
    for t in range(1, iters + 1):
        nxt = 1 - cur
        if streak >= GROW_AFTER:
            alpha *= 2.0
            streak = 0
        converged = False
        for trial in range(HALVINGS + 1):
            if trial == HALVINGS:  # no trial step qualified
                if smooth:
                    converged = True  # no step decreases a smooth loss
                    break
                alpha = first / np.sqrt(t)  # a kink: a diminishing subgradient step, taken as it is
            step(thetas[cur], alpha, grads[cur], thetas[nxt])
            calibrate_core(thetas[nxt], total, tree, params, mus[nxt], work, parallel_cells)
            new_value = _loss(mus[nxt], grads[nxt], loss)
            pending += tree.clique_off[-1]
            if pending >= INTERRUPT_CELLS:
                pending = 0
                with objmode(stop="int64"):
                    stop = int(sigint_received())
                if stop:
                    return thetas[cur].copy(), value, done
            if trial == HALVINGS:
                break
            decrease = value - new_value
            if (decrease >= ARMIJO * predicted_decrease(grads[cur], mus[cur], mus[nxt])
                    and decrease > MIN_DECREASE * value):
                streak = streak + 1 if trial == 0 else 0
                break
            alpha *= 0.5
        if converged:
            break
        previous = value
        cur, value = nxt, new_value
        done = t
        if not smooth and value < best_value:  # smooth losses only ever go down: no copies
            best_value = value
            best[:] = thetas[cur]
        if report:
            with objmode():
                _report(key, t, value)
        if abs(previous - value) <= tol * max(abs(previous), TINY):
            break
    if not smooth and best_value < value:  # a non-smooth loss went up since its best iterate
        return best, best_value, done
    return thetas[cur].copy(), value, done
