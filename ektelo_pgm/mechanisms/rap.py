"""RAP-softmax (Liu, Vietri and Wu 2021, appendix A.2), the softmax variant of RAP (Aydore et al.
2021) in the Adaptive Measurements framework.  Needs torch (``ektelo_pgm[gem]``)."""
from __future__ import annotations

from .framework import AdaptiveMeasurements
from .product import RAPLoss, SoftmaxTable


class RAPSoftmax(AdaptiveMeasurements):
    """RAP-softmax: family :class:`SoftmaxTable` (``rows`` softmax product distributions, the
    paper's ``n' = 1000``), loss :class:`RAPLoss` (squared error, ``steps`` Adam steps of rate
    ``lr`` 0.1 per round), ``k`` queries per round.  Other arguments as
    :class:`AdaptiveMeasurements`."""

    name = "RAP-softmax"

    def __init__(self, workload, rounds: int = 25, k: int = 10, select_fraction=0.5, rows: int = 1000,
                 steps: int = 100, lr: float = 0.1, unit: str = "marginal", selection: str = "exponential",
                 total: float | None = None, total_fraction: float = 0.01, device: str | None = None,
                 dtype: str = "float32", estimator=None):
        super().__init__(workload, SoftmaxTable(rows, device, dtype), RAPLoss(steps, lr), rounds, k, select_fraction,
                         unit, selection, total, total_fraction, estimator)
        self.rows, self.steps, self.lr, self.device, self.dtype = rows, steps, lr, device, dtype
