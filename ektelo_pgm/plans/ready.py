"""Ready non-adaptive plans: Identity, HB and HDMM, each with a swappable reconstruction (``estimator``)."""
from __future__ import annotations

from ..operators import select
from ..operators.least_squares import LeastSquares
from ..operators.measure import mechanism
from .plan import Plan


def identity(attrs=None, estimator=None, noise: str = "laplace", total=None) -> Plan:
    """Measure every cell of the marginal on ``attrs`` (default: the full domain), then
    reconstruct with ``estimator`` (default: ``LeastSquares``, which returns the noisy counts)."""
    return Plan(select.Identity(attrs), mechanism(noise), estimator or LeastSquares(), total)


def hb(attrs, branching: int | None = None, estimator=None, noise: str = "laplace", total=None) -> Plan:
    """Hierarchical ranges on ``attrs`` (Qardaji et al. 2013, HB; see :class:`select.HB`),
    reconstructed by ``estimator``, least squares by default (Hay et al. 2010's consistency step)."""
    return Plan(select.HB(attrs, branching), mechanism(noise), estimator or LeastSquares(), total)


def hdmm(workload, estimator=None, noise: str = "laplace", total=None, **options) -> Plan:
    """HDMM with its marginal strategy (:class:`select.HDMMMarginals`, ``options`` passed on).
    The reconstruction (``estimator``) is least squares over the full data vector by default
    (HDMM's own); McKenna et al. 2019, sec. 5.1 swap in ``LocalLeastSquares`` (HDMM+LLS) or
    ``PGM`` (HDMM+PGM), which scale to domains the full vector cannot hold."""
    return Plan(select.HDMMMarginals(workload, noise=noise, **options), mechanism(noise),
                estimator or LeastSquares(), total)
