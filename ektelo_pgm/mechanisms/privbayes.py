"""PrivBayes (Zhang, Cormode, Procopiuc, Srivastava and Xiao, TODS 2017) and PrivBayes+PGM
(McKenna et al. 2019, sec. 4): a private Bayesian network, released as is or re-estimated
from the same noisy marginals by Private-PGM."""
from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np

from ..dataset import Dataset
from ..errors import InputError
from ..estimate import BayesNet, Estimate
from ..measurement import Measurement
from ..operators.measure import Laplace
from ..params import Params
from ..privacy import Budget, exponential
from ..stages import Result
from ..workload import Query


def mutual_information(joint: np.ndarray) -> float:
    """Mutual information (nats) between the first axis and the rest of a table of counts."""
    p = joint.reshape(joint.shape[0], -1) / joint.sum()
    outer = p.sum(axis=1, keepdims=True) * p.sum(axis=0, keepdims=True)
    nonzero = p > 0
    return float(np.sum(p[nonzero] * np.log(p[nonzero] / outer[nonzero])))


def mutual_information_sensitivity(n: int, binary: bool) -> float:
    """Sensitivity (nats) of the mutual information of ``n`` records between an attribute and
    its parents (Zhang et al. 2017, Lemma 4.1): smaller when either side is binary."""
    if n < 2:
        raise InputError(f"PrivBayes needs at least 2 records, got {n}")
    if binary:
        return math.log(n) / n + (n - 1) / n * math.log(n / (n - 1))
    return 2 / n * math.log((n + 1) / 2) + (n - 1) / n * math.log((n + 1) / (n - 1))


class PrivBayes(Params):
    """PrivBayes (Zhang et al. 2017, Algorithms 2 and 3 with the mutual-information score).

    The fraction ``select_fraction`` of the budget (pure epsilon; the paper's ``beta``, 1/2 as in
    McKenna et al. 2019, sec. 4)
    learns a network of degree ``k`` greedily: the first attribute is drawn uniformly (no
    data), then ``d - 1`` exponential-mechanism steps, each spending an equal part of it, pick
    the next attribute and its ``min(k, chosen so far)`` parents among all such pairs, scored
    by their mutual information.  The rest measures the marginals of every attribute with its
    parents (those contained in another measured marginal are skipped) with the Laplace
    mechanism (counts).  ``estimator=None`` releases the noisy network itself (conditionals
    from the noisy marginals, negatives clipped to 0 and normalised: Algorithm 1), a
    :class:`~ektelo_pgm.estimate.BayesNet` of ``n`` records (``n`` is public, as in the paper);
    a :class:`~ektelo_pgm.stages.Reconstruct` (e.g. ``PGM()``) re-estimates from the same
    measurements instead (PrivBayes+PGM, McKenna et al. 2019, sec. 4).
    """

    name = "PrivBayes"

    def __init__(self, k: int = 2, select_fraction=Fraction(1, 2), estimator=None):
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise InputError(f"PrivBayes: degree k must be a positive integer, got {k!r}")
        share = self._share(select_fraction)
        if not 0 < share < 1:
            raise InputError(f"PrivBayes: select_fraction (the structure's fraction of the budget) must lie in "
                             f"(0, 1), got {share}")
        self.k, self.select_fraction, self.estimator = k, select_fraction, estimator

    @staticmethod
    def _share(x) -> Fraction:
        return Fraction(x) if not isinstance(x, float) else Fraction(x).limit_denominator(10 ** 6)

    def candidates(self, data: Dataset, chosen: list[str]) -> tuple[list[tuple[str, tuple[str, ...]]], np.ndarray]:
        """The pairs ``(attribute, parents)`` of the next greedy step after ``chosen`` and their
        scores (mutual information, nats)."""
        pairs = [(x, pa) for x in data.domain.attrs if x not in chosen
                 for pa in itertools.combinations(chosen, min(self.k, len(chosen)))]
        scores = np.array([mutual_information(counts) for counts in data.marginals([(x,) + pa for x, pa in pairs])])
        return pairs, scores

    def sensitivity(self, data: Dataset, x: str, parents: tuple[str, ...]) -> float:
        return mutual_information_sensitivity(len(data), data.domain[x] == 2 or data.domain.size(parents) == 2)

    def structure(self, data: Dataset, budget: Budget, epsilon: float, rng) -> dict[str, tuple[str, ...]]:
        """The greedy network ``{attribute: parents}`` in the order chosen, each of its
        ``d - 1`` exponential-mechanism steps spending ``epsilon`` of ``budget``."""
        attrs = data.domain.attrs
        first = attrs[int(rng.integers(len(attrs)))]
        network, chosen = {first: ()}, [first]
        while len(chosen) < len(attrs):
            pairs, scores = self.candidates(data, chosen)
            sensitivity = max(self.sensitivity(data, x, pa) for x, pa in pairs)
            x, parents = pairs[exponential(scores, sensitivity, epsilon, rng, budget=budget,
                                           label=f"PrivBayes structure step {len(chosen)}")]
            network[x] = parents
            chosen.append(x)
        return network

    def run(self, data: Dataset, budget: Budget, rng=None) -> Result:
        """Run on ``data`` spending all of ``budget`` (pure epsilon); same seed, same result."""
        if budget.notion != "pure" or not budget.public_total:
            raise InputError("PrivBayes is pure epsilon-DP with a public record count (its scores' sensitivity "
                             "is for substitute neighbours): give Budget.pure(epsilon, neighbours='substitute')")
        if len(data.domain) < 2:
            raise InputError(f"PrivBayes needs at least 2 attributes, got {list(data.domain.attrs)}")
        rng = np.random.default_rng(rng)
        start = len(budget.ledger)
        steps = len(data.domain) - 1
        network = self.structure(data, budget, budget.fraction(self._share(self.select_fraction) / steps), rng)
        families = [parents + (x,) for x, parents in network.items()]
        measured = [f for f in families if not any(set(f) < set(g) for g in families)]
        queries = [Query(f) for f in measured]
        measurements = Laplace(budget.fraction(1)).measure(data, queries, budget, rng, label="PrivBayes marginals")
        if self.estimator is None:
            estimate = self.network(data, network, measurements)
        else:
            estimate = self.estimator.reconstruct(data.domain, measurements, total=float(len(data)))
        return Result(estimate, measurements, queries, budget.ledger[start:])

    @staticmethod
    def network(data: Dataset, network: dict[str, tuple[str, ...]], measurements: list[Measurement]) -> Estimate:
        """The noisy network (Algorithm 1): each conditional from the measured marginal holding
        its family, negative counts clipped to 0, normalised (uniform where nothing remains)."""
        domain = data.domain
        cpts = {}
        for x, parents in network.items():
            family = parents + (x,)
            m = next(m for m in measurements if set(family) <= set(m.attrs))
            table = np.clip(m.y, 0, None).reshape(domain.project(m.attrs).shape)
            drop = tuple(i for i, a in enumerate(m.attrs) if a not in family)
            kept = [a for a in m.attrs if a in family]
            table = np.transpose(table.sum(axis=drop), [kept.index(a) for a in family])
            sums = table.sum(axis=-1, keepdims=True)
            uniform = np.full(table.shape, 1.0 / domain[x])
            with np.errstate(invalid="ignore", divide="ignore"):
                cpts[x] = np.where(sums > 0, table / np.where(sums > 0, sums, 1.0), uniform)
        return BayesNet(domain, network, cpts, total=float(len(data)), order=list(network))
