"""CONVEX-GBP (McKenna et al. 2021, sec. 4) in torch: APPGM's message updates with the messages
kept on a device, batched as :mod:`ektelo_pgm.pgm.torch_tensors` plans them (torch imported
lazily, when one is built)."""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .appgm.inference import ConvexGBP
from .torch_tensors import as_device, group_segments, layers, load_torch, lse_rows, preimages, rank_layers, take


class TorchConvexGBP:
    """CONVEX-GBP (McKenna et al. 2021, sec. 4) in torch: the message updates of
    :class:`~ektelo_pgm.pgm.appgm.inference.ConvexGBP` (same damping, same extrapolation, same
    results to rounding) with messages kept on ``device``; log-potentials and beliefs cross as
    numpy arrays (counts).  :meth:`to_numba` hands the messages back to a ``ConvexGBP``."""

    def __init__(self, graph, damping: float = 0.5, device: str = "cpu", dtype: str = "float64", messages=None):
        torch = load_torch()
        self.torch, self.device, self.dtype = torch, torch.device(device), getattr(torch, dtype)
        ref = ConvexGBP(graph, damping)  # its host-side layout: the same arrays, moved once
        self.graph, self.damping, self.unit = graph, ref.damping, ref.unit
        lay = graph.layout()
        off = np.asarray(lay["region_off"], dtype=np.int64)
        msg_off = np.asarray(lay["msg_off"], dtype=np.int64)
        host, child, map_off, maps = lay["host"], lay["child"], lay["map_off"], lay["maps"]

        def t(a, dtype=None):
            return torch.as_tensor(np.ascontiguousarray(a), dtype=dtype or torch.int64, device=self.device)

        def f(a):
            return t(np.asarray(a, dtype=np.float64), torch.float64).to(self.dtype)

        def cells(start, stop):
            return torch.arange(int(start), int(stop), dtype=torch.int64, device=self.device)

        segs, outs, parent_dst, parent_src = [], [], [], []
        for j in range(len(host)):
            p0, p1 = off[host[j]], off[host[j] + 1]
            segs.append(preimages(torch, graph.domain, graph.regions[host[j]], graph.regions[child[j]], int(p0),
                                  torch.int64, self.device))
            outs.append(cells(msg_off[j], msg_off[j + 1]))
            parent_dst.append(cells(p0, p1))
            parent_src.append(t(msg_off[j] + np.asarray(maps[map_off[j]:map_off[j] + p1 - p0], dtype=np.int64)))
        self.lse = group_segments(torch, segs, outs)
        self.n_msg, self.cells = int(msg_off[-1]), int(off[-1])
        self.absorb_parent = layers(torch, list(host), parent_dst, parent_src)
        msg_cell = np.asarray(lay["msg_cell"], dtype=np.int64)
        self.absorb_child = [(t(msg_cell[m]), t(m)) for m in rank_layers(msg_cell)]
        self.msg_cell = t(msg_cell)
        self.child_cells, self.msg_pos = t(ref.child_cells), t(ref.msg_pos)
        self.pos_layers = [(t(ref.msg_pos[m]), t(m)) for m in rank_layers(ref.msg_pos)]
        self.kappa_cell, self.kappa_msg, self.denominator = f(ref.kappa_cell), f(ref.kappa_msg), f(ref.denominator)
        self.normalise = group_segments(torch, [cells(off[r], off[r + 1]) for r in range(len(off) - 1)],
                                        [cells(r, r + 1) for r in range(len(off) - 1)])
        self.owner = t(np.repeat(np.arange(len(off) - 1), np.diff(off)))
        self.messages = torch.zeros(self.n_msg, dtype=self.dtype, device=self.device)
        if messages is not None:
            self.messages = f(messages)
        self._incoming = self._absorb(self.messages)
        self._velocity, self._drift = torch.zeros_like(self.messages), torch.zeros_like(self._incoming)

    @classmethod
    def from_numba(cls, gbp, device: str = "cpu", dtype: str = "float64") -> "TorchConvexGBP":
        """The same messages as the numba ``ConvexGBP`` ``gbp`` (a warm start), on ``device``."""
        return cls(gbp.graph, gbp.damping, device, dtype, messages=gbp.messages)

    def to_numba(self):
        """A numba ``ConvexGBP`` holding these messages (what estimates keep)."""
        gbp = ConvexGBP(self.graph, self.damping)
        gbp.messages = self.messages.to(self.torch.float64).cpu().numpy()
        gbp._incoming = gbp._absorb(gbp.messages)
        return gbp

    def _tensor(self, array):
        return as_device(self.torch, array, self.device, self.dtype)

    def _absorb(self, lam):
        out = self.torch.zeros(self.cells, dtype=self.dtype, device=self.device)
        for d, s in self.absorb_parent:
            out.index_add_(0, d, take(lam, s))
        for d, s in self.absorb_child:
            out.index_add_(0, d, -take(lam, s))
        return out

    def _logsumexp(self, values):
        out = self.torch.empty(self.n_msg, dtype=self.dtype, device=self.device)
        for idx, o in self.lse:
            out.index_copy_(0, o, lse_rows(self.torch, values, idx))
        return out

    def step(self, theta, extrapolate: bool = False) -> None:
        """One damped update of every message block (:meth:`ConvexGBP.step
        <ektelo_pgm.pgm.appgm.inference.ConvexGBP.step>`); ``theta`` numpy or a device tensor."""
        if self.n_msg == 0:
            return
        torch = self.torch
        theta = theta if isinstance(theta, torch.Tensor) else self._tensor(theta)
        lam, incoming = self.messages, self._incoming
        if extrapolate:
            lam, incoming = lam + self._velocity, incoming + self._drift
        phi = theta + incoming
        if self.unit:
            outgoing = self._logsumexp(phi) - lam
        else:
            outgoing = self._logsumexp(phi / self.kappa_cell) * self.kappa_msg - lam
        own = take(phi, self.child_cells)
        both = lam + outgoing
        for d, s in self.pos_layers:
            own.index_add_(0, d, take(both, s))
        belief = own / self.denominator
        fresh = self.kappa_msg * take(belief, self.msg_pos) - outgoing
        messages = self.damping * lam + (1.0 - self.damping) * fresh
        absorbed = self._absorb(messages)
        self._velocity, self._drift = messages - self.messages, absorbed - self._incoming
        self.messages, self._incoming = messages, absorbed

    def state(self):
        return self.messages, self._incoming

    def restore(self, state) -> None:
        self.messages, self._incoming = state
        self._velocity, self._drift = self.torch.zeros_like(self.messages), self.torch.zeros_like(self._incoming)

    def rescale(self, factor: float) -> None:
        self.messages, self._incoming = self.messages * factor, self._incoming * factor
        self._velocity, self._drift = self.torch.zeros_like(self.messages), self.torch.zeros_like(self._incoming)

    def reparameterised(self, theta: np.ndarray) -> np.ndarray:
        return (self._tensor(theta) + self._incoming).to(self.torch.float64).cpu().numpy()

    def _beliefs(self, theta, total: float):
        phi = theta + self._incoming
        if not self.unit:
            phi = phi / self.kappa_cell
        log_z = self.torch.empty(len(self.graph.regions), dtype=self.dtype, device=self.device)
        for idx, o in self.normalise:
            log_z.index_copy_(0, o, lse_rows(self.torch, phi, idx))
        return total * self.torch.exp(phi - take(log_z, self.owner))

    def beliefs(self, theta: np.ndarray, total: float) -> np.ndarray:
        """Pseudo-marginals (counts, ``total`` per region) for the current messages."""
        return self._beliefs(self._tensor(theta), float(total)).to(self.torch.float64).cpu().numpy()

    def __call__(self, theta: np.ndarray, total: float, iters: int = 1, extrapolate: bool = False) -> np.ndarray:
        """``iters`` message updates, then the pseudo-marginals in counts (numpy)."""
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.graph.cells,):
            raise InputError(f"theta must have {self.graph.cells} cells, got shape {theta.shape}")
        device_theta = self._tensor(theta)
        for _ in range(iters):
            self.step(device_theta, extrapolate)
        return self._beliefs(device_theta, float(total)).to(self.torch.float64).cpu().numpy()

    def violation(self, beliefs: np.ndarray) -> float:
        """Largest |P_{p->r} tau_p - tau_r| over all edges and cells (counts)."""
        if self.n_msg == 0:
            return 0.0
        tau = self._tensor(beliefs)
        below = self.torch.empty(self.n_msg, dtype=self.dtype, device=self.device)
        for idx, o in self.lse:
            below.index_copy_(0, o, take(tau, idx).sum(dim=1))
        return float((below - take(tau, self.msg_cell)).abs().max())
