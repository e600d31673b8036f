"""GEM, generative networks with the exponential mechanism (Liu, Vietri and Wu 2021, sec. 5 and
appendix B), and GEM-Pub, pretrained on public data (sec. 6).  Needs torch (``ektelo_pgm[gem]``)."""
from __future__ import annotations

import itertools

from ..workload import as_workload
from .framework import AdaptiveMeasurements, alpha_share
from .product import GEMLoss, Generator


#: GEM's selection share: Table 2's ``alpha = 0.67`` (:func:`alpha_share`).
GEM_SELECT = alpha_share(0.67)


class GEM(AdaptiveMeasurements):
    """GEM in the Adaptive Measurements framework: family :class:`Generator` (an MLP with
    ``hidden`` layers on ``batch`` fixed noise vectors, EMA output), loss :class:`GEMLoss` (L1 on
    the answers off by at least gamma, up to ``max_steps`` Adam steps of rate ``lr`` per round).
    Defaults are the paper's (Table 2; ``alpha`` 0.67 is a ``select_fraction`` of
    :data:`GEM_SELECT`, 4489/5578 of each round's rho).

    ``public`` (a Dataset over all or some of the private attributes) makes it GEM-Pub: the
    generator is first trained without privacy on the public answers to the workload's marginals
    inside the public attributes (all ``k``-way marginals of them when none is, ``k`` the
    workload's largest order), then fine-tuned privately.  ``device`` defaults to a GPU when
    torch sees one.  Other arguments as :class:`AdaptiveMeasurements`."""

    name = "GEM"

    def __init__(self, workload, rounds: int = 100, k: int = 1, select_fraction=GEM_SELECT, hidden=(512, 1024, 1024),
                 embedding: int = 64, batch: int = 1000, lr: float = 1e-4, max_steps: int = 100, ema: float = 0.5,
                 public=None, pretrain_steps: int = 500, pretrain_batch: int = 16, unit: str = "marginal",
                 selection: str = "exponential", total: float | None = None, total_fraction: float = 0.01,
                 device: str | None = None, dtype: str = "float32", estimator=None):
        cliques = public_cliques(workload, public) if public is not None else ()
        family = Generator(hidden, embedding, batch, ema, public, cliques, pretrain_steps, pretrain_batch, lr,
                           device, dtype)
        super().__init__(workload, family, GEMLoss(max_steps, lr), rounds, k, select_fraction, unit, selection, total,
                         total_fraction, estimator)
        self.hidden, self.embedding, self.batch, self.lr, self.max_steps = hidden, embedding, batch, lr, max_steps
        self.ema, self.public, self.pretrain_steps, self.pretrain_batch = ema, public, pretrain_steps, pretrain_batch
        self.device, self.dtype = device, dtype


def public_cliques(workload, public) -> list[tuple[str, ...]]:
    """The workload's marginals inside the public dataset's attributes, or all ``k``-way marginals
    of those attributes (``k`` the workload's largest order) when none is."""
    cliques = as_workload(workload).cliques
    attrs = set(public.domain.attrs)
    inside = [c for c in cliques if set(c) <= attrs]
    if inside:
        return inside
    k = min(max(len(c) for c in cliques), len(attrs))
    return list(itertools.combinations(public.domain.attrs, k))
