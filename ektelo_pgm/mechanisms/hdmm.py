"""HDMM with a swappable reconstruction: HDMM+LS (the original), HDMM+LLS, HDMM+PGM and
HDMM+APPGM (McKenna et al. 2019, sec. 4 and 5.1; McKenna, Miklau, Hay and Machanavajjhala,
VLDB 2018, the marginals strategy OPT_M)."""
from __future__ import annotations

import numpy as np

from ..dataset import Dataset
from ..errors import InputError
from ..params import Params
from ..plans.ready import hdmm
from ..privacy import Budget
from ..stages import Result
from ..workload import range_marginals


class HDMM(Params):
    """HDMM: the weighted marginals minimising the workload's expected error
    (:class:`~ektelo_pgm.operators.select.HDMMMarginals`, data independent), measured together
    with ``noise`` ('laplace' for pure epsilon, 'gaussian' for zCDP) spending all of the
    budget, then ``estimator`` (None: ``LeastSquares()``, HDMM's own; ``LocalLeastSquares()``,
    ``PGM()`` or ``APPGM()`` for the variants of sec. 5.1).

    ``workload=None`` is the range-marginal workload of sec. 5.1 on the data's domain:
    ``triples`` attribute triples drawn with ``workload_seed``, prefix ranges on the ``numeric``
    attributes.  ``options`` go to the strategy optimiser.
    """

    name = "HDMM"

    def __init__(self, workload=None, estimator=None, noise: str = "laplace", numeric=(), triples: int = 15,
                 workload_seed=0, **options):
        if noise not in ("laplace", "gaussian"):
            raise InputError(f"HDMM: noise must be 'laplace' or 'gaussian', got {noise!r}")
        self.workload, self.estimator, self.noise = workload, estimator, noise
        self.numeric, self.triples, self.workload_seed = numeric, triples, workload_seed
        self.options = options

    def workload_for(self, data: Dataset):
        """The workload the strategy is optimised for (the given one or sec. 5.1's)."""
        if self.workload is not None:
            return self.workload
        return range_marginals(data.domain, tuple(self.numeric), self.triples, rng=self.workload_seed)

    def run(self, data: Dataset, budget: Budget, rng=None) -> Result:
        """Run on ``data`` spending all of ``budget``; same ``rng`` seed, same result."""
        plan = hdmm(self.workload_for(data), estimator=self.estimator, noise=self.noise, **self.options)
        return plan.run(data, budget, np.random.default_rng(rng))
