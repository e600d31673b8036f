"""Loopy belief propagation on the factor graph of a clique set, in log space, with the Bethe
approximation of the log-partition function (Wainwright and Jordan 2008, sec. 4.1; used by
Bernstein et al. 2017, sec. 3.2, when no junction tree is affordable)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.special import logsumexp

from ..domain import Domain
from ..errors import InputError


def _entropy(p: np.ndarray) -> float:
    p = p[p > 0]
    return float(-np.sum(p * np.log(p)))


class LoopyBP:
    """Sum-product messages between the cliques (factors) and the attributes (variables).

    Parallel updates with ``damping`` (the weight kept on the old log-message), at most
    ``iters`` sweeps, stopping when no log-message moves by more than ``tol``.
    """

    def __init__(self, domain: Domain, cliques: Sequence[Sequence[str]], iters: int = 500, damping: float = 0.5,
                 tol: float = 1e-10):
        if not 0.0 <= damping < 1.0:
            raise InputError(f"LoopyBP: damping must lie in [0, 1), got {damping}")
        self.domain = domain
        self.cliques = [domain.check(cl) for cl in cliques]
        self.iters, self.damping, self.tol = int(iters), float(damping), float(tol)
        self.degree = {a: sum(a in cl for cl in self.cliques) for a in domain.attrs}
        self.converged = None

    def _incoming(self, messages, a, skip=None):
        """Sum of the log-messages into attribute ``a`` from every clique except ``skip``."""
        total = np.zeros(self.domain[a])
        for c, cl in enumerate(self.cliques):
            if c != skip and a in cl:
                total = total + messages[c][cl.index(a)]
        return total

    def _joint(self, tables, messages, c):
        """Unnormalised log-belief of clique ``c``: its potential plus the messages into it."""
        cl = self.cliques[c]
        table = np.array(tables[c], dtype=np.float64)
        for j, a in enumerate(cl):
            shape = [1] * len(cl)
            shape[j] = self.domain[a]
            table = table + self._incoming(messages, a, skip=c).reshape(shape)
        return table

    def run(self, tables: Sequence[np.ndarray]) -> tuple[list[np.ndarray], float]:
        """``(beliefs, log_z)``: each clique's belief (probabilities, axes as listed) and the Bethe
        approximation of log Z for the log-potential ``tables`` (one per clique)."""
        messages = [[np.zeros(self.domain[a]) for a in cl] for cl in self.cliques]
        self.converged = False
        for _ in range(self.iters):
            change = 0.0
            fresh = []
            for c, cl in enumerate(self.cliques):
                joint = self._joint(tables, messages, c)
                out = []
                for j, a in enumerate(cl):
                    others = tuple(i for i in range(len(cl)) if i != j)
                    m = logsumexp(joint, axis=others) if others else joint
                    m = m - self._incoming(messages, a, skip=c)
                    m = m - logsumexp(m)
                    out.append(m)
                fresh.append(out)
            for c in range(len(self.cliques)):
                for j in range(len(self.cliques[c])):
                    new = self.damping * messages[c][j] + (1.0 - self.damping) * fresh[c][j]
                    new = new - logsumexp(new)
                    change = max(change, float(np.max(np.abs(new - messages[c][j]))))
                    messages[c][j] = new
            if change <= self.tol:
                self.converged = True
                break
        beliefs, log_z = [], 0.0
        for c in range(len(self.cliques)):
            joint = self._joint(tables, messages, c)
            b = np.exp(joint - logsumexp(joint))
            beliefs.append(b)
            log_z += float(np.sum(b * tables[c])) + _entropy(b)
        for a in self.domain.attrs:
            b = np.exp(self._incoming(messages, a) - logsumexp(self._incoming(messages, a)))
            log_z -= (self.degree[a] - 1) * _entropy(b)
        return beliefs, log_z
