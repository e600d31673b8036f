"""Model structures and random potentials of the synthetic experiments (Bernstein et al. 2017,
sec. 4.1 and 4.2): third-order chains, connected Erdos-Renyi graphs, time-homogeneous chains."""
from __future__ import annotations

import itertools

import networkx as nx
import numpy as np

from ..domain import Domain
from ..errors import InputError
from .model import Structure, UndirectedModel


def variables(count: int, states: int) -> Domain:
    """``count`` attributes ``x0, x1, ...`` with ``states`` values each."""
    return Domain([f"x{i}" for i in range(count)], [states] * count)


def chain(domain: Domain, order: int = 1) -> list[tuple[str, str]]:
    """Edges between attributes ``i`` and ``j`` with ``1 <= |i - j| <= order`` (domain order)."""
    attrs = domain.attrs
    return [(attrs[i], attrs[j]) for i in range(len(attrs)) for j in range(i + 1, min(len(attrs), i + order + 1))]


def erdos_renyi(domain: Domain, p: float, rng=None) -> list[tuple[str, str]]:
    """Edges of a connected G(n, p) random graph on the attributes: graphs are drawn until one is
    connected."""
    rng = np.random.default_rng(rng)
    attrs = domain.attrs
    if not 0 < p <= 1:
        raise InputError(f"erdos_renyi: p must lie in (0, 1], got {p}")
    while True:
        edges = [(attrs[i], attrs[j]) for i, j in itertools.combinations(range(len(attrs)), 2) if rng.random() < p]
        graph = nx.Graph(edges)
        graph.add_nodes_from(attrs)
        if nx.is_connected(graph):
            return edges


def time_homogeneous_chain(domain: Domain) -> tuple[list[tuple[str, ...]], list[list[tuple[str, ...]]]]:
    """``(cliques, ties)`` of a first-order chain whose transition potentials ``psi(x_t, x_t+1)`` are
    one shared table, plus a node potential ``phi(x_0)`` (sec. 4.2)."""
    edges = chain(domain, 1)
    return [(domain.attrs[0],)] + edges, [edges]


def dirichlet_model(domain: Domain, cliques, rng=None, concentration: float = 1.0, ties=(),
                    inference: str = "auto") -> UndirectedModel:
    """Model whose potential tables (one per parameter table) are Dirichlet(``concentration``)
    draws over their cells; the log-potentials are their logarithms (sec. 4.1)."""
    rng = np.random.default_rng(rng)
    structure = Structure(domain, cliques, ties, inference)
    theta = np.concatenate([np.log(rng.dirichlet(np.full(int(np.prod(s)), float(concentration))))
                            for s in structure.shapes])
    return UndirectedModel(structure, theta)
