"""Plans: select, measure and reconstruct composed (Zhang et al., "Ektelo", SIGMOD 2018,
sec. 4: plans as compositions of operators), and the comparison of reconstruction
operators on one set of measurements (McKenna et al. 2019, sec. 5.1)."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import ModelTooLargeError
from ..estimate import Estimate
from ..privacy import Budget
from ..privacy.budget import check_budget
from ..stages import Result

STAGES = ("select", "measure", "reconstruct")  # a Plan's stages in order, each named by its verb


class Plan:
    """A non-adaptive plan: ``select`` picks queries, ``measure`` answers them privately
    (charging the budget), ``reconstruct`` estimates the data from the answers.

    The stages are operators implementing the protocols of :mod:`ektelo_pgm.stages`
    (:class:`~ektelo_pgm.stages.Select`, :class:`~ektelo_pgm.stages.Measure`,
    :class:`~ektelo_pgm.stages.Reconstruct`), so the reconstruction (least squares, MW, PGM,
    APPGM, or one of your own) is swapped by passing another object.  ``total`` (records) is
    given to the reconstruction when known publicly.
    """

    def __init__(self, select, measure, reconstruct, total: float | None = None):
        for stage, operator in zip(STAGES, (select, measure, reconstruct)):
            if not callable(getattr(operator, stage, None)):
                verbs = [verb for verb in STAGES if callable(getattr(operator, verb, None))]
                what = f"a {verbs[0]} stage" if verbs else f"not a stage (no {'/'.join(STAGES)} method)"
                raise TypeError(f"Plan: the {stage} stage must have a .{stage}(...) method, but "
                                f"{type(operator).__name__} is {what}; the order is Plan(select, measure, "
                                f"reconstruct), e.g. Plan(select.Workload(w), measure.Laplace(), PGM())")
        self.select = select
        self.measure = measure
        self.reconstruct = reconstruct
        self.total = total

    def run(self, data: Dataset, budget: Budget, rng=None) -> Result:
        """Run the plan on ``data`` spending ``budget``; same ``rng`` seed, same result."""
        if not isinstance(data, Dataset):
            raise TypeError(f"Plan.run: data must be a Dataset (e.g. Dataset.load(csv, domain_json)), "
                            f"got {type(data).__name__}")
        check_budget(budget, "Plan.run")
        rng = np.random.default_rng(rng)
        start = len(budget.ledger)
        queries = self.select.select(data.domain)
        measurements = self.measure.measure(data, queries, budget, rng)
        estimate = self.reconstruct.reconstruct(data.domain, measurements, total=self.total)
        return Result(estimate, measurements, queries, budget.ledger[start:])


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

    An operator that refuses for lack of memory (a ``ModelTooLargeError`` naming the size, as the
    full-vector operators raise above their domain limit and the graphical models above their
    model-size limit) is reported with ``refused`` set instead of stopping the comparison.
    """
    from ..metrics import workload_error

    rows = []
    for name, operator in operators.items():
        start = time.perf_counter()
        try:
            estimate = operator.reconstruct(domain, measurements, total=total)
        except ModelTooLargeError as refusal:  # a refusal before allocating, not an out-of-memory
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
