"""Mixtures of product distributions trained by gradient descent, and their losses: GEM's
generator network and RAP-softmax's softmax table (Liu, Vietri and Wu 2021, sec. 5, appendix B
and A.2).  The only module that imports torch (an optional extra: ``pip install
'ektelo_pgm[gem]'``), lazily, when a family starts; the estimates it returns are numpy.

Both families are ``B`` product distributions over the domain, each a probability vector per
attribute (a softmax over the attribute's values: the one-hot space of dimension ``d'``); the
distribution is their uniform mixture.  A k-way marginal query is then a product query
``f_S(p) = prod_{j in S} p_j`` averaged over the mixture (sec. 5, Definition 5.1), exact and
differentiable, so no record is ever enumerated.
"""
from __future__ import annotations

import copy
import math

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..estimate import MixtureEstimate


def torch_module():
    """The torch module, or an ImportError saying how to install it."""
    try:
        import torch
    except ImportError:
        raise ImportError("GEM and RAP-softmax need torch, an optional extra: pip install 'ektelo_pgm[gem]' "
                          "(or pip install torch)") from None
    return torch


class _ProductMixture:
    """Shared part of the two families: softmax per attribute, product queries, seeding."""

    def __init__(self, device: str | None, dtype: str):
        self.device, self.dtype = device, dtype

    def start(self, domain: Domain, rng) -> None:
        torch = torch_module()
        self.torch, self.domain = torch, domain
        self._device = torch.device(self.device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self._dtype = getattr(torch, self.dtype)
        self.bounds = np.concatenate([[0], np.cumsum(domain.shape)]).astype(int)
        seed = int(np.random.default_rng(rng).integers(2 ** 62))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self._build(sum(domain.shape))
        self._changed()

    def _changed(self):
        self._current = None

    def probabilities(self, params=None) -> list:
        """One ``(B, size)`` tensor of probabilities per attribute (domain order): one softmax
        over the logits laid out as ``(B, attributes, largest size)`` with padding at -inf."""
        torch = self.torch
        logits = self._logits(params)
        if not hasattr(self, "_slots"):
            widest = max(self.domain.shape)
            self._slots = torch.as_tensor(np.concatenate([j * widest + np.arange(n) for j, n in
                                                          enumerate(self.domain.shape)]), device=self._device)
        padded = torch.full((logits.shape[0], len(self.domain) * max(self.domain.shape)), -math.inf,
                            dtype=logits.dtype, device=self._device)
        padded = padded.index_copy(1, self._slots, logits)
        probs = torch.softmax(padded.reshape(logits.shape[0], len(self.domain), -1), dim=2)
        return [probs[:, j, :n] for j, n in enumerate(self.domain.shape)]

    def answers(self, attrs, probs):
        """Product-query answers (probabilities) over ``attrs`` as a differentiable tensor shaped
        by their sizes: ``mean_b prod_{a in attrs} p_b[a][x_a]`` (sec. 5, eq. (5))."""
        tables = [probs[self.domain.attrs.index(a)] for a in attrs]
        left = tables[0]
        for t in tables[1:-1]:
            left = (left[:, :, None] * t[:, None, :]).reshape(left.shape[0], -1)
        joint = left.mean(dim=0) if len(tables) == 1 else left.T @ tables[-1] / left.shape[0]
        return joint.reshape(self.domain.project(attrs).shape)

    def marginal(self, attrs) -> np.ndarray:
        """Probabilities over ``attrs`` of the current distribution (numpy float64)."""
        if self._current is None:
            self._current = self.estimate(1.0)
        return self._current.project(attrs)

    def step(self, optimizer, loss) -> None:
        """One gradient step on ``loss``."""
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        self._changed()

    def _estimate(self, params, total: float) -> MixtureEstimate:
        with self.torch.no_grad():
            probs = [p.double().cpu().numpy() for p in self.probabilities(params)]
        return MixtureEstimate(self.domain, probs, total)


class Generator(_ProductMixture):
    """GEM's family (sec. 5, appendix B): an MLP ``G`` (ReLU ``hidden`` layers, a softmax per
    attribute on the output) applied to a batch of ``batch`` Gaussian noise vectors of dimension
    ``embedding``, drawn once and kept (appendix B.2: no resampling).  The output distribution's
    weights are the exponential moving average (``ema``) of the weights after each round of the
    latter half (appendix B.2, "EMA output").  ``public`` (a Dataset on the private domain or on
    a subset of its attributes) pretrains ``G`` without privacy for ``pretrain_steps`` L1 steps
    on the public answers to ``pretrain_cliques`` (``pretrain_batch`` cliques per step; sec. 6,
    GEM-Pub)."""

    def __init__(self, hidden=(512, 1024, 1024), embedding: int = 64, batch: int = 1000, ema: float = 0.5,
                 public: Dataset | None = None, pretrain_cliques=(), pretrain_steps: int = 500,
                 pretrain_batch: int = 16, lr: float = 1e-4, device: str | None = None, dtype: str = "float32"):
        super().__init__(device, dtype)
        if not 0 <= ema < 1:
            raise InputError(f"Generator: ema must lie in [0, 1), got {ema!r}")
        if public is not None and not pretrain_cliques:
            raise InputError("Generator: a public dataset needs pretrain_cliques (marginals over its attributes)")
        self.hidden, self.embedding, self.batch, self.ema = tuple(hidden), int(embedding), int(batch), float(ema)
        self.public, self.pretrain_cliques = public, [tuple(c) for c in pretrain_cliques]
        self.pretrain_steps, self.pretrain_batch, self.lr = int(pretrain_steps), int(pretrain_batch), float(lr)

    def _build(self, width: int) -> None:
        nn = self.torch.nn
        sizes = [self.embedding, *self.hidden]
        layers = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.net = nn.Sequential(*layers, nn.Linear(sizes[-1], width)).to(self._device, self._dtype)
        self.z = self.torch.randn(self.batch, self.embedding, dtype=self._dtype).to(self._device)
        self.averaged = None

    def parameters(self):
        return list(self.net.parameters())

    def _logits(self, params=None):
        net = self.net if params is None else params
        return net(self.z)

    def start(self, domain: Domain, rng) -> None:
        rng = np.random.default_rng(rng)
        super().start(domain, rng)
        if self.public is not None:
            self._pretrain(rng)

    def _pretrain(self, rng) -> None:
        """L1 steps on the public answers (fractions), no privacy spent (sec. 6)."""
        torch, public = self.torch, self.public
        for a in public.domain.attrs:
            if a not in self.domain or self.domain[a] != public.domain[a]:
                raise InputError(f"public attribute {a!r} (size {public.domain[a]}) is not an attribute of the "
                                 f"private domain with the same size")
        targets = [torch.as_tensor(public.marginal(c) / len(public), dtype=self._dtype, device=self._device)
                   for c in self.pretrain_cliques]
        optimizer = torch.optim.Adam(self.parameters(), lr=self.lr)
        for _ in range(self.pretrain_steps):
            picks = rng.choice(len(targets), size=min(self.pretrain_batch, len(targets)), replace=False)
            probs = self.probabilities()
            loss = sum((self.answers(self.pretrain_cliques[i], probs) - targets[i]).abs().sum() for i in picks)
            self.step(optimizer, loss / len(picks))

    def end_round(self, t: int, rounds: int) -> None:
        if t < math.ceil(rounds / 2):
            return
        if self.averaged is None:
            self.averaged = copy.deepcopy(self.net)
            return
        with self.torch.no_grad():
            for mean, current in zip(self.averaged.parameters(), self.net.parameters()):
                mean.mul_(self.ema).add_(current, alpha=1.0 - self.ema)

    def estimate(self, total: float) -> MixtureEstimate:
        """The current generator's distribution (counts)."""
        return self._estimate(None, total)

    def output(self, total: float) -> MixtureEstimate:
        """The released distribution (counts): the averaged generator's (appendix B.2)."""
        return self._estimate(self.averaged, total)


class SoftmaxTable(_ProductMixture):
    """RAP-softmax's family (appendix A.2): ``rows`` product distributions ``sigma(M)`` with
    ``M`` a free ``rows x d'`` table of logits (standard normal start)."""

    def __init__(self, rows: int = 1000, device: str | None = None, dtype: str = "float32"):
        super().__init__(device, dtype)
        self.rows = int(rows)

    def _build(self, width: int) -> None:
        self.table = self.torch.randn(self.rows, width, dtype=self._dtype).to(self._device).requires_grad_(True)

    def parameters(self):
        return [self.table]

    def _logits(self, params=None):
        return self.table

    def end_round(self, t: int, rounds: int) -> None:
        """Nothing to do: the output is the last iterate."""

    def estimate(self, total: float) -> MixtureEstimate:
        return self._estimate(None, total)

    output = estimate


def _residuals(family, measured):
    """``a - q(D)`` (fractions) of every measured answer, one differentiable tensor."""
    torch = family.torch
    probs = family.probabilities()
    tables, out = {}, []
    for target in measured.values():
        if target.attrs not in tables:
            tables[target.attrs] = family.answers(target.attrs, probs)
        current = tables[target.attrs] if target.cell is None else tables[target.attrs].reshape(-1)[target.cell]
        out.append((torch.as_tensor(target.value, dtype=family._dtype, device=family._device) - current).reshape(-1))
    return torch.cat(out)


class GEMLoss:
    """GEM's update (appendix B, Algorithm 3): up to ``max_steps`` Adam steps (learning rate
    ``lr``) on the mean absolute error of the measured answers whose error is at least
    ``gamma``, stopping when none is.  ``gamma`` is half the exponential moving average
    (``beta``) of the new measurements' largest error at the start of each round (appendix B.2,
    "Stopping threshold")."""

    def __init__(self, max_steps: int = 100, lr: float = 1e-4, beta: float = 0.5):
        self.max_steps, self.lr, self.beta = int(max_steps), float(lr), float(beta)

    def start(self, family) -> None:
        self.optimizer = family.torch.optim.Adam(family.parameters(), lr=self.lr)
        self.average = None

    def update(self, family, measured, new, rng) -> None:
        error = max(measured[key].error(family) for key in new)
        self.average = error if self.average is None else self.beta * self.average + (1 - self.beta) * error
        gamma = self.average / 2
        for _ in range(self.max_steps):
            c = _residuals(family, measured).abs()
            over = c >= gamma
            if not bool(over.any()):
                return
            family.step(self.optimizer, c[over].mean())


class RAPLoss:
    """RAP-softmax's update (appendix A.2): ``steps`` Adam steps (learning rate ``lr``) on the
    squared error ``sum (q(D) - a)^2`` of every measured answer."""

    def __init__(self, steps: int = 100, lr: float = 0.1):
        self.steps, self.lr = int(steps), float(lr)

    def start(self, family) -> None:
        self.optimizer = family.torch.optim.Adam(family.parameters(), lr=self.lr)

    def update(self, family, measured, new, rng) -> None:
        for _ in range(self.steps):
            family.step(self.optimizer, (_residuals(family, measured) ** 2).sum())
