"""Plans: select, measure and reconstruct composed (Zhang et al., "Ektelo", SIGMOD 2018,
sec. 4: plans as compositions of operators), and the comparison of reconstruction
operators on one set of measurements (McKenna et al. 2019, sec. 5.1)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..estimate import Estimate
from ..measurement import Measurement
from ..privacy import Budget, Charge


@dataclass
class PlanResult:
    """What a plan returns: the estimate, the measurements it took, the queries it selected
    (in order) and the budget charges it made (in order)."""

    estimate: Estimate
    measurements: list[Measurement]
    queries: list
    charges: list[Charge] = field(default_factory=list)

    @property
    def spent(self) -> Fraction:
        """Exact total of this run's charges, in the budget's unit (epsilon or rho)."""
        return sum((c.amount for c in self.charges), Fraction(0))


class Plan:
    """A non-adaptive plan: ``select(domain)`` picks queries, ``measure`` answers them
    privately (charging the budget), ``reconstruct`` estimates the data from the answers.

    Each stage is an operator: ``select`` has ``.select(domain) -> list[Query]``,
    ``measure`` has ``.measure(data, queries, budget, rng) -> list[Measurement]`` and
    ``reconstruct`` has ``.reconstruct(domain, measurements, total=None) -> Estimate``,
    so the reconstruction (least squares, MW, PGM, APPGM, ...) is swapped by passing
    another object.  ``total`` (records) is given to the reconstruction when known publicly.
    """

    def __init__(self, select, measure, reconstruct, total: float | None = None):
        self.select = select
        self.measure = measure
        self.reconstruct = reconstruct
        self.total = total

    def run(self, data: Dataset, budget: Budget, rng=None) -> PlanResult:
        """Run the plan on ``data`` spending ``budget``; same ``rng`` seed, same result."""
        rng = np.random.default_rng(rng)
        start = len(budget.ledger)
        queries = self.select.select(data.domain)
        measurements = self.measure.measure(data, queries, budget, rng)
        estimate = self.reconstruct.reconstruct(data.domain, measurements, total=self.total)
        return PlanResult(estimate, measurements, queries, budget.ledger[start:])


@dataclass
class Comparison:
    """One reconstruction operator's outcome in :func:`compare`: its workload error (None
    when it refused), its seconds, its estimate and, when it refused, why."""

    name: str
    error: float | None
    seconds: float
    estimate: Estimate | None = None
    refused: str | None = None


def compare(domain: Domain, measurements, operators: dict, workload, truth: Dataset,
            total: float | None = None) -> list[Comparison]:
    """Run every reconstruction operator of ``{name: operator}`` on the same ``measurements``
    and score it by the workload error of McKenna et al. 2019, sec. 5.1 against ``truth``.

    An operator that refuses for lack of memory (a ``MemoryError`` naming the size, as the
    full-vector operators raise above their domain limit and the graphical models above their
    model-size limit) is reported with ``refused`` set instead of stopping the comparison.
    """
    from ..metrics import workload_error

    rows = []
    for name, operator in operators.items():
        start = time.perf_counter()
        try:
            estimate = operator.reconstruct(domain, measurements, total=total)
        except MemoryError as refusal:
            rows.append(Comparison(name, None, time.perf_counter() - start, None, str(refusal)))
            continue
        seconds = time.perf_counter() - start
        rows.append(Comparison(name, float(workload_error(workload, truth, estimate)), seconds, estimate))
    return rows


def table(rows: list[Comparison]) -> str:
    """A markdown table of :func:`compare`'s rows."""
    lines = ["| reconstruction | workload error | seconds |", "|---|---|---|"]
    for r in rows:
        error = f"refused: {r.refused}" if r.refused else f"{r.error:.4g}"
        lines.append(f"| {r.name} | {error} | {r.seconds:.3g} |")
    return "\n".join(lines)
