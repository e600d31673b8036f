"""The junction-tree marginal oracle in torch, for a GPU (McKenna et al. 2019, sec. 3.2).

A third implementation of :class:`~ektelo_pgm.pgm.optimizers.Oracle`, beside the numba
junction-tree oracle (:class:`~ektelo_pgm.pgm.inference.MarginalOracle`, the reference) and
APPGM's region graph: :class:`TorchOracle` runs the same log-space belief propagation over the
same flat buffers, with every table of the tree in one device tensor.  The work of cliques at
the same height of the tree is batched: the junction tree is turned once, on the device, into
index tensors (which cells of which buffer feed which cell of which other,
:mod:`ektelo_pgm.pgm.torch_tensors`), so that one calibration is a fixed sequence of gathers,
log-sum-exps and index-adds whose count grows with the tree's height and the number of distinct
table shapes, not with its number of cliques.  On CUDA, where triton is installed, each
log-sum-exp and indexed add is one fused kernel (:mod:`ektelo_pgm.pgm.torch_fused`, compiled once
per tile shape, not per model); the
whole mirror-descent step (calibration, loss, Armijo line search as a device-side state machine)
is captured in a CUDA graph when it can be.  APPGM's CONVEX-GBP in torch is
:class:`~ektelo_pgm.pgm.torch_gbp.TorchConvexGBP`.

Importing this module registers torch's devices (``"torch-cpu"``, ``"cuda"``) with
:mod:`ektelo_pgm.pgm.backends`, which gives the ``backend`` option of PGM and APPGM its meaning.
torch itself is imported lazily, when a device is used: the package imports and runs without it
(``backend="auto"``, the default, then runs numba).  Float64 by default; float32 as an option for
the loop on the device, whose answers to the host stay float64.
"""
from __future__ import annotations

import copy
import warnings
from typing import Callable

import numpy as np

from ..errors import InputError
from ..kernels.interrupt import sigint_received
from ..kernels.tree import ARMIJO, GROW_AFTER, HALVINGS, MIN_DECREASE, TINY
from .backends import Device, register
from .optimizers import mirror_loop
from .torch_gbp import TorchConvexGBP
from .torch_tensors import (as_device, cell_map, cuda_available, group_segments, layers, load_torch, lse_rows,
                            preimages, rank_layers, take, torch_available, triton_available)

#: Line-search trials run on a CUDA device between two looks of the host at the stopping flags
#: (on torch's CPU device the host looks after every trial).
CHECK_EVERY = 16
#: Why the fused Triton kernels (:mod:`ektelo_pgm.pgm.torch_fused`) could not run, one entry per
#: failure (the oracle then ran torch's own operations); the benchmark records it.
FUSED_FAILURES: list = []
#: Why a CUDA graph could not be captured, one entry per failed capture (the loop then ran
#: eagerly, with the same results); the benchmark records it.
GRAPH_FAILURES: list = []


def fuses(device) -> bool:
    """Whether the oracle on torch ``device`` runs the fused kernels by default: on CUDA, where
    triton is installed (where they then fail, torch's own operations run)."""
    return device.type == "cuda" and triton_available()


def _reroot(k: int, parent: np.ndarray, seps: list) -> tuple[np.ndarray, list, list]:
    """The forest of ``parent`` (-1: a root; ``seps[c]`` the separator of ``c`` with its parent)
    re-rooted at the centre of each tree: ``(parent, separators, order parents first)``."""
    nbrs = [[] for _ in range(k)]
    for c in range(k):
        if parent[c] >= 0:
            nbrs[c].append((int(parent[c]), seps[c]))
            nbrs[int(parent[c])].append((c, seps[c]))

    def bfs(start):
        seen, queue, back = {start: None}, [start], {}
        for c in queue:
            for d, sep in nbrs[c]:
                if d not in seen:
                    seen[d] = sep
                    back[d] = c
                    queue.append(d)
        return queue, back, seen

    new_parent, new_seps, order, done = np.full(k, -1, dtype=np.int64), [()] * k, [], np.zeros(k, dtype=bool)
    for start in range(k):
        if done[start]:
            continue
        far = bfs(start)[0][-1]  # one end of a longest path, then the other, then its middle
        queue, back, _ = bfs(far)
        path = [queue[-1]]
        while path[-1] != far:
            path.append(back[path[-1]])
        centre = path[len(path) // 2]
        queue, back, sep = bfs(centre)
        for c in queue:
            done[c] = True
            if c != centre:
                new_parent[c], new_seps[c] = back[c], sep[c]
        order += queue
    return new_parent, new_seps, order


class TorchOracle:
    """The junction-tree MARGINAL-ORACLE (sec. 3.2) in torch, on ``device`` (``"cpu"`` or
    ``"cuda"``), in ``dtype`` (``"float64"`` default, or ``"float32"``).

    Built on a :class:`~ektelo_pgm.pgm.inference.MarginalOracle` ``base``, whose parameter
    layout (``size``, ``p_off``, ``cliques``, ``block``...) it shares: ``theta`` and ``mu`` are the
    same flat buffers (log-potentials; marginals in counts).  :meth:`marginals` and :meth:`gap`
    take and return numpy arrays (a host copy per call); :meth:`fused_mirror_descent` keeps the
    whole loop on the device.  ``fused``: the log-sum-exps and indexed adds run as the Triton
    kernels of :mod:`~ektelo_pgm.pgm.torch_fused` (default :func:`fuses`), else as torch's operations.

    ``dtype`` is the precision of the device loop only.  What the host reads (:meth:`marginals`,
    :meth:`log_partition`, :meth:`gap`, so the loss and gap a model reports) is computed in float64
    by :attr:`exact`, the same plan in float64: in float32 a belief of magnitude 60 (adult, 9 random
    triples) is resolved to 1e-5 of its marginal, which on a table of a million records put the
    reported loss 0.3% below the optimum and the gap off by 700 times.
    """

    scale = None

    def __init__(self, base, device: str = "cpu", dtype: str = "float64", graphs: bool = True,
                 fused: bool | None = None):
        torch = load_torch()
        if dtype not in ("float64", "float32"):
            raise InputError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
        self.base, self.torch = base, torch
        self.device = torch.device(device)
        self.dtype = getattr(torch, dtype)
        self.graphs = graphs and self.device.type == "cuda"
        self.graph_error: str | None = None  # why a CUDA graph could not be captured, if it could not
        auto = fused is None
        self.fused = fuses(self.device) if auto else fused
        try:
            self._plan(base)
            if self.fused and auto:  # one calibration, which compiles the kernels, waited for
                self._calibrate(torch.zeros(base.size, dtype=self.dtype, device=self.device), 1.0).sum().item()
        except torch.cuda.OutOfMemoryError:
            raise
        except Exception as exc:  # noqa: BLE001 - where the fused kernels fail, torch's operations run
            if not (self.fused and auto):
                raise
            FUSED_FAILURES.append(f"{type(exc).__name__}: {exc}")
            warnings.warn(f"torch oracle: no fused kernels ({FUSED_FAILURES[-1]}); running torch's operations")
            self.fused = False
            self._plan(base)
        self.exact = self if self.dtype == torch.float64 else self._widened()

    def __getattr__(self, name):  # the parameter layout and the rest of the numba oracle
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    def _widened(self) -> TorchOracle:
        """This oracle in float64 on the same plan (its index tensors shared, its scratch its own)."""
        wide = copy.copy(self)
        wide.dtype = self.torch.float64
        if self.fused:
            wide.scratch = self.torch.empty_like(self.scratch, dtype=wide.dtype)
        wide.exact = wide
        return wide

    # ---------------------------------------------------------------- the plan (once, on the device)
    def _plan(self, base) -> None:
        torch, dev = self.torch, self.device
        index = torch.int32 if self.fused else torch.int64  # the fused kernels read 4-byte indices
        tree, domain = base.tree, base.domain
        layout = base.layout
        off, p_off = layout.clique_off, base.p_off
        k = len(tree.cliques)
        self.tree_cells = int(off[-1])
        if self.fused:
            from . import torch_fused
            self.kernels = torch_fused

        def cells(start, stop):
            return torch.arange(int(start), int(stop), dtype=index, device=dev)

        def grouped(big, small, start):  # big's cells at start, a row per cell of small
            return preimages(torch, domain, big, small, int(start), index, dev)

        def mapped(big, small, start):  # for each cell of big, its cell of small at start
            return cell_map(torch, domain, big, small, index, dev) + int(start)

        # assembly: log_phi[host cells] += theta[param cells], layered by rank within the host
        host = [tree.host(cl) for cl in base.cliques]
        self.assembly = layers(torch, host, [cells(off[h], off[h + 1]) for h in host],
                               [mapped(tree.cliques[h], cl, p_off[j])
                                for j, (cl, h) in enumerate(zip(base.cliques, host))])

        # the forest re-rooted at each component's centre (fewest levels: a chain of k cliques takes
        # about k / 2 steps a pass instead of k); the same separators, whichever end is the child
        parent, seps, order = _reroot(k, layout.parent, [tree.separator(c) if layout.parent[c] >= 0 else ()
                                                         for c in range(k)])
        sep_off = np.concatenate([[0], np.cumsum([domain.size(seps[c]) if parent[c] >= 0 else 0
                                                  for c in range(k)])]).astype(np.int64)
        self.seps = int(sep_off[-1])
        children = [[] for _ in range(k)]
        for c in range(k):
            if parent[c] >= 0:
                children[parent[c]].append(c)
        height = np.zeros(k, dtype=np.int64)
        for c in order[::-1]:  # children first
            if children[c]:
                height[c] = 1 + max(height[d] for d in children[c])
        depth = np.zeros(k, dtype=np.int64)
        for c in order:  # parents first
            if parent[c] >= 0:
                depth[c] = depth[parent[c]] + 1

        # collect: per height, the up messages (log-sum-exp of the clique's cells onto its separator)
        # and their absorption into the parents
        by_height, by_depth = {}, {}
        for c in range(k):
            if parent[c] >= 0:
                by_height.setdefault(int(height[c]), []).append(c)
                by_depth.setdefault(int(depth[c]), []).append(c)
        self.collect = []
        for h in range(int(height.max()) + 1 if k else 0):
            senders = by_height.get(h, [])
            if not senders:
                continue
            up = self._reductions([grouped(tree.cliques[c], seps[c], off[c]) for c in senders],
                                  [cells(sep_off[c], sep_off[c + 1]) for c in senders])
            absorb = layers(torch, [parent[c] for c in senders],
                            [cells(off[parent[c]], off[parent[c] + 1]) for c in senders],
                            [mapped(tree.cliques[parent[c]], seps[c], sep_off[c]) for c in senders])
            self.collect.append((up, absorb))

        # distribute: per depth, the parents' separator marginals (log-sum-exp) less the child's up
        # message, added into the child
        self.distribute = []
        for d in range(int(depth.max()) + 1 if k else 0):
            receivers = by_depth.get(d + 1, [])
            if not receivers:
                continue
            down = self._reductions([grouped(tree.cliques[parent[c]], seps[c], off[parent[c]]) for c in receivers],
                                    [cells(sep_off[c], sep_off[c + 1]) for c in receivers])
            into = (torch.cat([cells(off[c], off[c + 1]) for c in receivers]),
                    torch.cat([mapped(tree.cliques[c], seps[c], sep_off[c]) for c in receivers]))
            self.distribute.append((down, into))

        # marginals: each parameter cell the log-sum-exp of its host cells, then normalised per clique
        self.project = self._reductions([grouped(tree.cliques[h], cl, off[h]) for cl, h in zip(base.cliques, host)],
                                        [cells(p_off[j], p_off[j + 1]) for j in range(len(base.cliques))])
        self.normalise = self._reductions([cells(p_off[j], p_off[j + 1]) for j in range(len(base.cliques))],
                                          [cells(j, j + 1) for j in range(len(base.cliques))])
        self.owner = torch.as_tensor(np.repeat(np.arange(len(base.cliques)), np.diff(p_off)), device=dev)
        roots = [c for c in range(k) if parent[c] < 0]
        self.roots = self._reductions([cells(off[c], off[c + 1]) for c in roots],
                                      [cells(i, i + 1) for i in range(len(roots))])
        self.n_roots = len(roots)
        if self.fused:  # the split reductions' partial results, and the identity map that reads them
            reductions = [r for lse, _ in self.collect + self.distribute for r in lse]
            partials = self.kernels.scratch_cells(reductions + self.project + self.normalise + self.roots)
            self.scratch = torch.empty(partials, dtype=self.dtype, device=dev)
            self.identity = torch.arange(partials, dtype=torch.int32, device=dev)

    def _reductions(self, blocks, outputs) -> list:
        """Segments of a buffer to log-sum-exp and their destinations (:func:`group_segments`'
        arguments), planned for the fused kernel or as torch index pairs."""
        groups = group_segments(self.torch, blocks, outputs)
        if self.fused:
            return [self.kernels.plan_reduction(i, o) for i, o in groups]
        return groups

    # ---------------------------------------------------------------- the passes (device)
    def _lse_into(self, src, groups, out, sub=None):
        """``out[o] = logsumexp(src[idx])`` for each group of equal-length segments, less
        ``sub[o]`` where given."""
        if self.fused:
            for group in groups:
                self.kernels.segment_lse(src, group, out, sub, self.scratch, self.identity)
            return
        for idx, o in groups:
            values = lse_rows(self.torch, src, idx)
            out.index_copy_(0, o, values if sub is None else values - take(sub, o))

    def _add_into(self, dst, pairs, src):
        """``dst[d] += src[s]`` for each pair ``(d, s)`` of index tensors (``d`` without repeats)."""
        for d, s in pairs:
            if self.fused:
                self.kernels.gather_add(dst, d, src, s)
            else:
                dst.index_add_(0, d, take(src, s))

    def _collect(self, theta):
        """Assembly and the collect pass: ``(belief, up)`` with every root's belief final."""
        torch = self.torch
        belief = torch.zeros(self.tree_cells, dtype=self.dtype, device=self.device)
        self._add_into(belief, self.assembly, theta)
        up = torch.zeros(self.seps, dtype=self.dtype, device=self.device)
        for lse, absorb in self.collect:
            self._lse_into(belief, lse, up)
            self._add_into(belief, absorb, up)
        return belief, up

    def _log_z(self, belief):
        out = self.torch.zeros(self.n_roots, dtype=self.dtype, device=self.device)
        self._lse_into(belief, self.roots, out)
        return out.sum()

    def _calibrate(self, theta, total: float):
        """Log-space belief propagation on device tensor ``theta`` (flat, parameter cliques):
        the parameter cliques' marginals (counts summing to ``total`` per clique)."""
        torch = self.torch
        belief, up = self._collect(theta)
        down = torch.zeros(self.seps, dtype=self.dtype, device=self.device)
        for lse, into in self.distribute:
            self._lse_into(belief, lse, down, sub=up)  # the parent's separator marginal less the child's message
            self._add_into(belief, [into], down)
        log_mu = torch.empty(self.base.size, dtype=self.dtype, device=self.device)
        self._lse_into(belief, self.project, log_mu)
        log_norm = torch.empty(len(self.base.cliques), dtype=self.dtype, device=self.device)
        self._lse_into(log_mu, self.normalise, log_norm)
        return total * torch.exp(log_mu - take(log_norm, self.owner))

    def _tensor(self, array):
        return as_device(self.torch, array, self.device, self.dtype)

    # ---------------------------------------------------------------- the Oracle protocol
    def marginals(self, theta: np.ndarray, total: float) -> np.ndarray:
        """A fresh numpy buffer of the parameter cliques' marginals (counts) at ``theta``, in float64."""
        exact = self.exact
        return exact._calibrate(exact._tensor(theta), float(total)).cpu().numpy()

    def log_partition(self, theta: np.ndarray) -> float:
        """The log partition function at ``theta`` (the collect pass only), in float64."""
        exact = self.exact
        return float(exact._log_z(exact._collect(exact._tensor(theta))[0]))

    def gap(self, mu: np.ndarray, grad: np.ndarray, total: float, resolution: float) -> float:
        """The Frank-Wolfe gap bound of :meth:`MarginalOracle.gap
        <ektelo_pgm.pgm.inference.MarginalOracle.gap>` (counts), its soft minimum computed here."""
        spread = float(np.abs(grad).max())
        if spread == 0:
            return 0.0
        beta = total * max(float(np.sum(np.log(self.base.domain.shape))), 1e-300) / resolution
        beta = min(beta, 1e12 / spread)
        return max(float(np.dot(grad, mu)) + total * self.log_partition(-beta * grad) / beta, 0.0)

    def release(self) -> None:
        """Free the device's cached blocks (the plan's index tensors stay)."""
        if self.device.type == "cuda":
            self.torch.cuda.empty_cache()

    # ---------------------------------------------------------------- Algorithm 1 on the device
    def fused_mirror_descent(self, objective, total: float, theta: np.ndarray, iters: int, tol: float, first: float,
                             callback: Callable | None = None) -> tuple[np.ndarray, float, int]:
        """:func:`~ektelo_pgm.pgm.optimizers.mirror_descent`'s loop on the device, trial by trial
        (the same sequence of steps as the numba loop, :func:`~ektelo_pgm.kernels.tree.mirror_descent_loop`),
        its decisions taken on the device; the host looks at the stopping flags (and reports to
        ``callback``) every :data:`CHECK_EVERY` trials on CUDA, after each on the CPU.  A loss
        with a Python part (non-identity queries, a callable) runs the host loop instead.
        A float32 loop whose line search runs out (float32 no longer resolves a step's decrease:
        on adult with 9 triples after 3,612 iterations, 2.7% above float64's loss at 10,000) goes
        on in float64 for the iterations left.  Returns ``(theta, loss, iterations)``."""
        if objective.needs_python:
            return mirror_loop(self, objective, total, theta, iters, tol, first, callback)
        loop = _DeviceLoop(self, objective, float(total), theta, int(iters), float(tol), float(first))
        theta, value, done = loop.run(callback)
        if loop.exhausted and self.exact is not self:
            shifted = None if callback is None else (lambda t, v: callback(done + t, v))
            rest = _DeviceLoop(self.exact, objective, float(total), theta, int(iters) - done, float(tol), float(first))
            theta, value, more = rest.run(shifted)
            done += more
        return theta, value, done


class _DeviceLoop:
    """The state of Algorithm 1 (mirror descent with Armijo backtracking) as device tensors, one
    line-search trial per :meth:`step` (no host value read inside, so it can be graph-captured)."""

    def __init__(self, oracle: TorchOracle, objective, total, theta, iters, tol, first):
        torch, dev, dt = oracle.torch, oracle.device, oracle.dtype
        self.oracle, self.torch, self.total, self.iters = oracle, torch, total, iters
        self.tol, self.first = tol, first
        self.smooth = objective.loss == "l2"
        self.l1 = objective.loss == "l1"
        index = np.asarray(objective.index, dtype=np.int64)
        self.y, self.w = oracle._tensor(objective.y), oracle._tensor(objective.w)
        self.index = torch.as_tensor(index, device=dev)
        # the gradient's scatter in layers of distinct cells (deterministic sums)
        self.grad_layers = [torch.as_tensor(m, device=dev) for m in rank_layers(index)]
        self.grad_index = [self.index[m] for m in self.grad_layers]

        def scalar(v, dtype=dt):
            return torch.tensor(v, dtype=dtype, device=dev)

        self.theta = oracle._tensor(theta)
        self.mu = oracle._calibrate(self.theta, total)
        self.grad = torch.zeros_like(self.mu)
        self.value = self._loss(self.mu, self.grad)
        self.best, self.best_value = self.theta.clone(), self.value.clone()
        self.alpha = scalar(first)
        self.streak = scalar(GROW_AFTER, torch.int64)
        self.trial = scalar(0, torch.int64)
        self.t = scalar(1, torch.int64)  # the iteration under way
        self.done = scalar(0, torch.int64)  # iterations completed
        self.stopped = scalar(False, torch.bool)
        self.slot = scalar(0, torch.int64)
        self.reported_t = torch.full((CHECK_EVERY,), -1, dtype=torch.int64, device=dev)
        self.reported_v = torch.zeros(CHECK_EVERY, dtype=dt, device=dev)
        if iters <= 0:
            self.stopped.fill_(True)

    def _loss(self, mu, grad):
        """The identity measurements' loss at ``mu`` (counts), its gradient written into ``grad``."""
        torch = self.torch
        r = self.w * (take(mu, self.index) - self.y)
        g = self.w * (torch.sign(r) if self.l1 else r)
        grad.zero_()
        for layer, at in zip(self.grad_layers, self.grad_index):
            grad.index_add_(0, at, g[layer])
        return r.abs().sum() if self.l1 else 0.5 * (r * r).sum()

    def step(self) -> None:
        """One trial of the line search, and its consequences, masked when stopped."""
        torch = self.torch
        active = ~self.stopped
        grow = (self.trial == 0) & (self.streak >= GROW_AFTER) & active
        self.alpha.copy_(torch.where(grow, 2.0 * self.alpha, self.alpha))
        self.streak.copy_(torch.where(grow, torch.zeros_like(self.streak), self.streak))
        last = self.trial == HALVINGS
        if not self.smooth:
            fallback = self.first / torch.sqrt(self.t.to(self.alpha.dtype))
            self.alpha.copy_(torch.where(last & active, fallback, self.alpha))
        candidate = self.theta - self.alpha * self.grad
        mu = self.oracle._calibrate(candidate, self.total)
        grad = torch.empty_like(mu)
        value = self._loss(mu, grad)
        decrease = self.value - value
        ok = (decrease >= ARMIJO * torch.dot(self.grad, self.mu - mu)) & (decrease > MIN_DECREASE * self.value)
        if self.smooth:
            converged = last & active
            accept = ok & ~last & active
        else:
            converged = torch.zeros_like(last)
            accept = (ok | last) & active
        reject = active & ~accept & ~converged
        self.streak.copy_(torch.where(accept & ok & ~last,
                                      torch.where(self.trial == 0, self.streak + 1, torch.zeros_like(self.streak)),
                                      self.streak))
        previous = self.value.clone()
        self.theta.copy_(torch.where(accept, candidate, self.theta))
        self.mu.copy_(torch.where(accept, mu, self.mu))
        self.grad.copy_(torch.where(accept, grad, self.grad))
        self.value.copy_(torch.where(accept, value, self.value))
        self.done.copy_(torch.where(accept, self.t, self.done))
        if not self.smooth:
            better = accept & (value < self.best_value)
            self.best.copy_(torch.where(better, candidate, self.best))
            self.best_value.copy_(torch.where(better, value, self.best_value))
        self.reported_t.index_copy_(0, self.slot.view(1), torch.where(accept, self.t, -torch.ones_like(self.t)).view(1))
        self.reported_v.index_copy_(0, self.slot.view(1), value.view(1))
        self.slot.copy_((self.slot + 1) % CHECK_EVERY)
        settled = (previous - value).abs() <= self.tol * torch.clamp(previous.abs(), min=TINY)
        finished = accept & (settled | (self.t >= self.iters))
        self.t.copy_(torch.where(accept, self.t + 1, self.t))
        self.trial.copy_(torch.where(accept, torch.zeros_like(self.trial),
                                     torch.where(reject, self.trial + 1, self.trial)))
        self.alpha.copy_(torch.where(reject, 0.5 * self.alpha, self.alpha))
        self.stopped.copy_(self.stopped | converged | finished)

    def _graph(self):
        """The step captured in a CUDA graph (None where it cannot be; the reason kept)."""
        torch = self.torch
        try:
            state = [x.clone() for x in self._state()]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self.step()  # warm-up on a side stream, as capture requires
            torch.cuda.current_stream().wait_stream(side)
            for x, saved in zip(self._state(), state):  # undo the warm-up's trial
                x.copy_(saved)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.step()
            for x, saved in zip(self._state(), state):  # capture may run nothing, but be sure
                x.copy_(saved)
            return graph
        except Exception as exc:  # noqa: BLE001 - any failure falls back to eager steps
            self.oracle.graph_error = f"{type(exc).__name__}: {exc}"
            GRAPH_FAILURES.append(self.oracle.graph_error)
            warnings.warn(f"torch oracle: no CUDA graph ({self.oracle.graph_error}); running eagerly")
            return None

    @property
    def exhausted(self) -> bool:
        """Whether the loop stopped because no trial of its line search lowered the loss (a smooth
        loss's convergence, at the loop's precision)."""
        return self.smooth and bool(self.stopped) and int(self.trial) == HALVINGS

    def _state(self):
        return [self.theta, self.mu, self.grad, self.value, self.best, self.best_value, self.alpha, self.streak,
                self.trial, self.t, self.done, self.stopped, self.slot, self.reported_t, self.reported_v]

    def run(self, callback):
        graph = self._graph() if self.oracle.graphs and not bool(self.stopped) else None
        # on torch's CPU device a look at the flags costs nothing: after every trial, so that no
        # masked trial runs after the stop
        chunk = CHECK_EVERY if self.oracle.device.type == "cuda" else 1
        while not bool(self.stopped):
            for _ in range(chunk):
                if graph is not None:
                    graph.replay()
                else:
                    self.step()
            if callback is not None:
                ts = self.reported_t.cpu().numpy()
                vs = self.reported_v.cpu().numpy()
                start = int(self.slot)
                for i in range(CHECK_EVERY):
                    at = (start + i) % CHECK_EVERY
                    if ts[at] >= 0:
                        callback(int(ts[at]), float(vs[at]))
                self.reported_t.fill_(-1)
            if sigint_received():
                break
        value, done = float(self.value), int(self.done)
        if not self.smooth and float(self.best_value) < value:
            return self.best.to(self.torch.float64).cpu().numpy(), float(self.best_value), done
        return self.theta.to(self.torch.float64).cpu().numpy(), value, done


def check_cuda() -> None:
    """Refuse ``backend="gpu"`` where torch is absent or sees no CUDA device (an InputError)."""
    if not torch_available():
        raise InputError("backend='gpu' needs torch with CUDA, and torch is not installed; use backend='cpu'")
    if not cuda_available():
        raise InputError("backend='gpu' needs a CUDA device, and torch sees none (it does not load, or "
                         "torch.cuda.is_available() is False); use backend='cpu' or 'auto'")


def cuda_oracle(base, dtype: str) -> TorchOracle:
    """The torch oracle over ``base`` on the CUDA device; a MemoryError naming the tree's size
    where the device's memory cannot hold its plan (``backend="auto"`` then runs numba)."""
    torch = load_torch()
    try:
        return TorchOracle(base, "cuda", dtype)
    except torch.cuda.OutOfMemoryError as exc:
        torch.cuda.empty_cache()
        cells = int(base.layout.clique_off[-1])
        raise MemoryError(f"the GPU's memory cannot hold the plan of a junction tree of {cells:,} cells "
                          f"({cells * 8 / 2**20:.0f} MB as float64)") from exc


register(Device("torch-cpu", check=load_torch, present=torch_available,
                oracle=lambda base, dtype: TorchOracle(base, "cpu", dtype),
                gbp=lambda gbp: TorchConvexGBP.from_numba(gbp, "cpu")))
register(Device("cuda", check=check_cuda, present=cuda_available,
                oracle=cuda_oracle,
                gbp=lambda gbp: TorchConvexGBP.from_numba(gbp, "cuda")))
