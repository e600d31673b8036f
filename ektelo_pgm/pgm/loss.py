"""The loss of noisy measurements over a flat buffer of clique marginals, shared by both engines.

Private-PGM scores the marginals of a junction tree's parameter cliques, APPGM those of the
cliques its region graph hosts; both lay them out in one :class:`~ektelo_pgm.pgm.clique_vector.FlatCliques`
buffer (counts) and score them with :class:`Objective`: L2 and L1 of the residuals weighted by
1/std (McKenna et al. 2019, supplement C.1-C.2; 2021, Problem 2) or a convex callable, with the
step sizes and curvature the shared optimisers read.  What only one engine needs (APPGM's
region curvature and counting numbers) lives with it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..kernels import identity_loss
from ..kernels.tree import TINY
from ..matrix import Sparse
from .clique_vector import CliqueVector, FlatCliques
from .factor import Factor
from .junction_tree import canonical, index_map


def largest_eigenvalue(query, w: np.ndarray, iters: int = 100) -> float:
    """Largest eigenvalue of ``Q^T W^2 Q`` (``W = diag(w)``) by power iteration on the implicit
    operators, from a fixed start (deterministic): the curvature bound of both engines' step sizes."""
    x = np.random.default_rng(0).random(query.shape[1]) + 0.5
    value = 0.0
    for _ in range(iters):
        y = query.T @ (w**2 * (query @ x))
        norm = float(np.linalg.norm(y))
        if norm == 0:
            return 0.0
        done = abs(norm / np.linalg.norm(x) - value) <= 1e-6 * value
        value = norm / float(np.linalg.norm(x))
        x = y / norm
        if done:
            break
    return value


class Objective:
    """Loss of the cliques' marginals (the flat buffer laid out by ``flat``, counts), and what the
    shared optimisers (:mod:`ektelo_pgm.pgm.optimizers`) read of it: first step, curvature,
    Lipschitz bound, the scaling step.

    ``loss="l2"``: ``sum_i 0.5 |W_i (Q_i mu_i - y_i)|^2``; ``"l1"``: ``sum_i |W_i (Q_i mu_i - y_i)|_1``
    (supplement C.1-C.2, ``W_i = diag(1/std_i)``); a callable ``f(marginals: CliqueVector) ->
    (value, gradient CliqueVector)`` receives the cliques' marginals (counts, attributes in
    domain order) and may return gradients on any of them in any attribute order.
    Calling the objective on a flat marginal buffer returns ``(value, flat gradient)``: identity
    (marginal) measurements are scored by a compiled kernel (``index``, ``y``, ``w``), the rest
    by :meth:`python_part`.
    """

    def __init__(self, flat: FlatCliques, measurements: Sequence, loss="l2"):
        if not (callable(loss) or loss in ("l1", "l2")):
            raise InputError(f"loss must be 'l1', 'l2' or a callable, got {loss!r}")
        self.flat = flat
        self.loss = loss
        domain = flat.domain
        index, ys, ws, self.general = [], [], [], []
        for m in () if callable(loss) else measurements:
            j = flat.index[canonical(domain, m.attrs)]
            where = flat.p_off[j] + index_map(domain, m.attrs, canonical(domain, m.attrs)).astype(np.int64)
            w = np.asarray(m.weights, dtype=np.float64)
            if m.query is None:
                index.append(where), ys.append(m.y), ws.append(w)
            else:
                self.general.append((j, where, m.query, m.y, w))
        self.index = np.concatenate(index) if index else np.zeros(0, dtype=np.int64)
        self.y = np.concatenate(ys) if ys else np.zeros(0)
        self.w = np.ascontiguousarray(np.concatenate(ws) if ws else np.zeros(0))

    @property
    def needs_python(self) -> bool:
        """Whether part of the loss is Python code: measurements with other queries, or a callable."""
        return callable(self.loss) or bool(self.general)

    def __call__(self, mu: np.ndarray, grad: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """``(loss, gradient)`` at the flat marginals ``mu``; ``grad`` receives the gradient if given."""
        grad = np.empty_like(mu) if grad is None else grad
        value = identity_loss(mu, self.index, self.y, self.w, self.loss == "l1", grad)
        return float(value + self.python_part(mu, grad)), grad

    def python_part(self, mu: np.ndarray, grad: np.ndarray) -> float:
        """Loss of the measurements with other queries (or of the callable loss) at ``mu``; its
        gradient is added into ``grad``."""
        if callable(self.loss):
            return self._custom(mu, grad)
        value = 0.0
        for _, where, query, y, w in self.general:
            r = w * (query @ mu[where] - y)
            if self.loss == "l1":
                value += float(np.abs(r).sum())
                grad[where] += query.T @ (w * np.sign(r))
            else:
                value += 0.5 * float(r @ r)
                grad[where] += query.T @ (w * r)
        return value

    def _custom(self, mu, grad):
        domain, flat = self.flat.domain, self.flat
        marginals = CliqueVector({cl: Factor(domain.project(cl), flat.block(mu, cl).copy()) for cl in flat.cliques})
        value, gradient = self.loss(marginals)
        for cl, factor in gradient.items():
            canon = canonical(domain, cl)
            if canon not in flat.index:
                raise InputError(f"custom loss returned a gradient on clique {list(cl)}, which is not a model clique")
            flat.block(grad, canon)[...] += factor.transpose(canon).values
        return float(value)

    def curvature(self) -> np.ndarray | None:
        """Diagonal of the L2 loss's Hessian ``Q^T W^2 Q`` over the flat marginal buffer (1 /
        counts^2), None for other losses."""
        if self.loss != "l2":
            return None
        diag = np.bincount(self.index, self.w**2, minlength=self.flat.size).astype(np.float64)  # int when empty
        for _, where, query, _, w in self.general:
            diag[where] += np.asarray((Sparse(sp.diags(w)) @ query).column_norms(2)) ** 2
        return diag

    def first_step(self, total: float) -> float:
        """Initial mirror-descent step: ``1 / (total * K)`` for L2 (``K`` from :meth:`lipschitz`),
        ``1 / max weight`` for L1 (log-potentials then move by about 1), ``1 / total`` otherwise."""
        lipschitz = self.lipschitz() if self.loss == "l2" else 0.0
        if lipschitz > 0:
            return 1.0 / (total * lipschitz)
        weights = [self.w] + [w for *_, w in self.general]
        if self.loss == "l1" and max(w.size for w in weights) > 0:
            return 1.0 / max(float(w.max()) for w in weights if w.size)
        return 1.0 / total

    def nested_pairs(self) -> list:
        """``(small, big, index map)`` for every pair of parameter cliques with ``small`` inside
        ``big`` (blocks of the flat buffer as slices; the map sends each cell of ``big`` to its
        cell of ``small``), computed once."""
        if not hasattr(self, "_nested"):
            flat, pairs = self.flat, []
            blocks = [(cl, slice(flat.p_off[j], flat.p_off[j + 1])) for j, cl in enumerate(flat.cliques)]
            for small, at_small in blocks:
                for big, at_big in blocks:
                    if set(small) < set(big):
                        pairs.append((at_small, at_big, index_map(flat.domain, big, small).astype(np.int64)))
            self._nested = pairs
        return self._nested

    def scaled_direction(self, mu: np.ndarray, grad: np.ndarray, curvature: np.ndarray) -> np.ndarray:
        """The scaling phase's step on the log-potentials (counts): for cell ``x`` of parameter
        clique ``C``, ``-g_C(x) mu_C(x) / (h_C(x) mu_C(x)^2 + sum_M sum_{y -> x} h_M(y) mu_M(y)^2)``
        with ``g`` the loss gradient, ``h`` the ``curvature`` diagonal and ``M`` the parameter
        cliques containing ``C`` (cells ``y`` projecting onto ``x``), clipped to ``+-STEP_CAP``.

        Alone, ``-g / (h mu)``: on consistent marginal measurements, iterative proportional
        fitting's update for every clique at once.  The cliques around ``C`` enter the
        denominator as they do the diagonal of the Gauss-Newton matrix in ``theta_C``: a clique
        measured with little weight inside one measured precisely (HDMM strategies, annealed
        plans) then barely moves, instead of following its own noisy answers at full speed and
        emptying cells the precise measurement needs; the larger clique's own step fits that
        marginal, so it is not counted twice.
        """
        gm, hm = grad * mu, curvature * mu * mu
        den = hm.copy()
        for small, big, cell in self.nested_pairs():
            den[small] += np.bincount(cell, hm[big], minlength=small.stop - small.start)
        return np.clip(-gm / np.maximum(den, TINY), -STEP_CAP, STEP_CAP)

    def lipschitz(self) -> float:
        """Largest eigenvalue of the (block-diagonal) Q^T W^2 Q over the parameter cliques (counts).

        Identity measurements give their diagonal exactly; each other measurement adds the top
        eigenvalue of its own Q^T W^2 Q (power iteration), an upper bound on the block's.
        """
        per_clique = np.zeros(len(self.flat.cliques))
        if self.index.size:
            diag = np.bincount(self.index, self.w**2, minlength=self.flat.size)
            per_clique = np.maximum.reduceat(diag, self.flat.p_off[:-1]) if diag.size else per_clique
        for j, _, query, _, w in self.general:
            per_clique[j] += largest_eigenvalue(query, w)
        return float(per_clique.max()) if per_clique.size else 0.0


STEP_CAP = 20.0  # largest log-potential change of one scaling step per unit step size: a cell shrinks by at most e^-20,
# so that one it empties can still come back (its gradient in theta vanishes with its mass)
