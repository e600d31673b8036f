"""The loss of APPGM's measurements over the regions of a region graph (McKenna et al. 2021,
Problem 2), and the curvature that sets the proximal loop's step and counting numbers."""
from __future__ import annotations

import numpy as np

from ...errors import InputError
from ...kernels import assemble, project
from ..clique_vector import FlatCliques
from ..junction_tree import index_map
from ..loss import Objective, largest_eigenvalue
from ..region_graph import RegionGraph


class MeasuredCliques(FlatCliques):
    """The measured cliques hosted in a region graph, and the loss over their marginals.

    The cliques (attributes in domain order, duplicates removed) get one flat buffer of
    marginals in counts (:class:`FlatCliques`, as Private-PGM's parameter cliques), scored by the
    loss both engines share, :class:`~ektelo_pgm.pgm.loss.Objective` (L2, L1 weighted by 1/std, or a
    custom callable of a CliqueVector of marginals; McKenna et al. 2019, supplement C and 2021,
    Problem 2).  ``marginals(beliefs)`` sums every clique out of its host region;
    ``gradient_to_regions`` broadcasts a gradient over the buffer back onto the regions.
    """

    def __init__(self, graph: RegionGraph, measurements, loss="l2"):
        domain = graph.domain
        self.graph = graph
        measurements = list(measurements)
        for m in measurements:
            m.check(domain)
        super().__init__(domain, dict.fromkeys(domain.canonical(m.attrs) for m in measurements))
        host = []
        for c in self.cliques:
            h = graph.host(c)
            if h is None:
                raise InputError(f"the region graph does not support the measured clique {list(c)}")
            host.append(h)
        self.host = np.array(host, dtype=np.int64)
        self.map_off = np.zeros(len(self.cliques) + 1, dtype=np.int64)
        self.map_off[1:] = np.cumsum(graph.sizes[self.host])
        maps = [index_map(domain, graph.regions[h], c) for h, c in zip(self.host, self.cliques)]
        self.maps = np.concatenate(maps) if maps else np.zeros(0, dtype=np.int32)
        self.objective = Objective(self, measurements, loss)
        self.loss = loss
        self.measurements = measurements
        self._curvature = None

    def _layout(self):
        return self.p_off, self.host, self.map_off, self.maps, self.graph.offsets

    def marginals(self, beliefs: np.ndarray) -> np.ndarray:
        """Flat buffer of the measured cliques' marginals (counts)."""
        out = np.empty(self.size)
        project(beliefs, *self._layout(), out)
        return out

    def gradient_to_regions(self, grad: np.ndarray) -> np.ndarray:
        """Adjoint of :meth:`marginals`: a clique-buffer gradient broadcast onto the regions."""
        out = np.empty(self.graph.cells)
        assemble(grad, *self._layout(), out)
        return out

    def __call__(self, beliefs: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss value and its gradient with respect to the regions' pseudo-marginals (counts)."""
        value, grad = self.objective(self.marginals(beliefs))
        return value, self.gradient_to_regions(grad)

    def curvature(self) -> np.ndarray:
        """Per region: the sum, over the measurements hosted there, of the largest eigenvalue of
        ``Q^T W^2 Q`` (1 / counts^2; power iteration for general queries, computed once), an upper
        bound on the curvature of the L2 loss in that region's marginal."""
        if self._curvature is None:
            per_region = np.zeros(len(self.graph.regions))
            for m in self.measurements:
                w = np.broadcast_to(np.asarray(m.weights, dtype=np.float64), (len(m.y),))
                top = float(np.max(w)) ** 2 if m.query is None else largest_eigenvalue(m.query, w)
                per_region[self.host[self.index[self.domain.canonical(m.attrs)]]] += top
            self._curvature = per_region
        return self._curvature

    def stepsize(self, total: float, iters: int) -> float:
        """Initial step of the proximal loop (McKenna et al. 2021, proof of Theorem 2).

        L2: ``1 / (total * max_r c_r / kappa_r)`` with ``c_r`` the region curvature of
        :meth:`curvature`, so that mirror descent with the kappa-weighted entropy decreases the
        loss.  L1: ``min(kappa) sqrt(iters) / (total * K * h)`` with ``K`` the largest squared
        weight times squared column norm and ``h`` the most cliques hosted by one region, to be
        divided by ``sqrt(t + 1)`` at step ``t`` (non-smooth mirror descent), ending at the L2
        step of a Huber loss whose quadratic zone is one noise standard deviation wide.  Custom
        losses: ``min(kappa) / total``.
        """
        kappa = float(self.graph.kappa.min())
        crowd = int(np.bincount(self.host).max()) if len(self.host) else 1
        if callable(self.loss):
            return kappa / total
        if self.loss == "l2":
            return 1.0 / (total * max(float(np.max(self.curvature() / self.graph.kappa)), 1e-300))
        curvature = max((float(np.max(m.weights)) ** 2 * (1.0 if m.query is None else
                                                         float(np.max(m.query.column_norms(2))) ** 2)
                         for m in self.measurements), default=1.0)
        return kappa * np.sqrt(max(iters, 1)) / (total * curvature * crowd)

    def counting_numbers(self) -> dict:
        """Counting numbers proportional to each region's share of the L2 loss's curvature.

        ``kappa_r = c_r / max c`` with ``c_r`` from :meth:`curvature`; regions hosting no
        measurement get the smallest share of those that do; equal curvatures give all ones.  The
        kappa-weighted entropy is the mirror map of the proximal loop (McKenna et al. 2021,
        Problem 2 and Theorem 2, which allow any positive counting numbers): matching it to the
        curvature region by region lets regions measured with small weights (large noise) move as
        fast as the heavily weighted ones, instead of at the step the latter dictate.  It changes
        only how ties among minimisers over the local polytope are broken.
        """
        curvature = self.curvature()
        measured = curvature[curvature > 0]
        if measured.size == 0:
            return {}
        share = np.where(curvature > 0, curvature, measured.min()) / measured.max()
        return dict(zip(self.graph.regions, share.tolist()))
