"""Every estimate of the package, in one place: what every reconstruction returns.

An :class:`Estimate` is an estimated distribution of records over a domain, in counts:
``project(attrs)``, ``answer(query, attrs)``, ``synthetic_data(n, rng)`` and ``total``.

- :class:`VectorEstimate`: the full data vector (least squares, multiplicative weights);
- :class:`FactoredEstimate`: a product over disjoint attribute groups (factored MW, MWEM's start);
- :class:`LocalEstimate`: one marginal per measured clique (local least squares);
- :class:`AverageEstimate`: the average of several estimates (MWEM's averaged iterates);
- :class:`RecordsEstimate`: records scaled to a total (DualQuery's synthetic database);
- :class:`BayesNet`: a Bayesian network (the built-in synthetic census, PrivBayes);
- :class:`SupportEstimate`: weights over the records of a public dataset (PMW-Pub, PEP-Pub);
- :class:`MixtureEstimate`: a uniform mixture of product distributions (GEM, RAP-softmax);
- :class:`Decompressed`: an estimate over merged values seen over the original values (MST);
- ``GraphicalModel`` (Private-PGM) and ``APPGMEstimate`` (APPGM's pseudo-marginals) live with
  their engines in :mod:`ektelo_pgm.pgm`, ``UndirectedModel`` (a learned exponential family) in
  :mod:`ektelo_pgm.learning`; all are importable from here too.

Modules: :mod:`.base` (the contract, drawing records), :mod:`.tables`, :mod:`.records`,
:mod:`.mixtures`, :mod:`.bayes_net`, :mod:`.decompressed`.
"""
from __future__ import annotations

import importlib

from .base import (ENGINE_ESTIMATES, SAMPLING, Estimate, UnmeasuredAttributeWarning, round_conditional,
                   synthetic_attrs, synthetic_without)
from .bayes_net import BayesNet
from .decompressed import Decompressed
from .mixtures import AverageEstimate, MixtureEstimate
from .records import RecordsEstimate, SupportEstimate
from .tables import FactoredEstimate, LocalEstimate, VectorEstimate

__all__ = ["Estimate", "VectorEstimate", "FactoredEstimate", "LocalEstimate", "AverageEstimate", "RecordsEstimate",
           "BayesNet", "SupportEstimate", "MixtureEstimate", "Decompressed", "GraphicalModel", "APPGMEstimate",
           "UndirectedModel"]


def __getattr__(name: str):
    """``GraphicalModel``, ``APPGMEstimate`` and ``UndirectedModel``, loaded from their engines on first use."""
    if name in ENGINE_ESTIMATES:
        return getattr(importlib.import_module(ENGINE_ESTIMATES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
