from .least_squares import LeastSquares, LocalLeastSquares, NonNegativeLeastSquares
from .multiplicative_weights import MultiplicativeWeights
from ..convergence import DEFAULT_TOL, check_tolerances
from ..errors import DEFAULT_MAX_MB, InputError
from ..params import Params
from ..pgm.region_graph import KINDS

__all__ = ["LeastSquares", "LocalLeastSquares", "NonNegativeLeastSquares", "MultiplicativeWeights", "PGM",
           "APPGM"]


def check_backend(name: str, backend: str, dtype: str = "float64") -> None:
    """Refuse an unknown ``backend`` or ``dtype`` when the reconstruction is configured (whether a
    CUDA device is present is checked when it runs)."""
    from ..pgm.backends import BACKENDS

    if backend not in BACKENDS:
        raise InputError(f"{name}: backend must be one of {BACKENDS}, got {backend!r}")
    if dtype not in ("float64", "float32"):
        raise InputError(f"{name}: dtype must be 'float64' or 'float32', got {dtype!r}")


class PGM(Params):
    """Private-PGM reconstruction (McKenna et al. 2019, sec. 3.2): a graphical model over the
    measured cliques minimising the noise-weighted loss of the measurements.

    ``method``: ``"auto"`` (default: for the L2 loss ``"lbfgs"`` on models of at most 100,000
    parameters, ``"mirror"`` on larger ones; ``"mirror"`` for L1 and callable losses; see
    :func:`ektelo_pgm.pgm.estimation.resolve_method`), ``"lbfgs"`` (quasi-Newton on the
    log-potentials, supplement A.3: robust to noise scales spanning orders of magnitude and to
    zero cells; smooth losses),
    ``"mirror"`` (Algorithm 1, Armijo line search) or ``"accelerated"`` (Algorithm 2);
    ``loss``: ``"l2"``, ``"l1"`` (supplement C) or a callable ``f(marginals) -> (value, gradient)``
    over CliqueVectors of counts; ``max_mb`` bounds the junction tree (MB as float64);
    ``tol``: for ``"lbfgs"`` the certified relative optimality gap that stops it (default
    ``ektelo_pgm.convergence.DEFAULT_TOL``), for the others the relative loss change that stops
    them early (default 0: never); ``iters`` is a maximum; the model reports ``iterations``,
    ``converged`` and ``gap`` (:mod:`ektelo_pgm.convergence`).  ``backend``: ``"auto"`` (default:
    the GPU only where one is present and the junction tree is large, measured faster there), ``"cpu"``
    (the numba oracle), ``"gpu"`` (the torch oracle on a CUDA device, its loop in ``dtype`` "float64" or
    "float32", the loss and gap it reports in float64, and a loop that float32 can no longer improve
    finished in float64; an InputError without one) or ``"torch-cpu"`` (the torch oracle on the CPU,
    for tests).  See
    :func:`ektelo_pgm.pgm.estimation.estimate`.
    """

    def __init__(self, iters: int = 1000, method: str = "auto", loss="l2", max_mb: float = DEFAULT_MAX_MB,
                 tol: float | None = None, backend: str = "auto", dtype: str = "float64"):
        if method not in ("auto", "lbfgs", "mirror", "accelerated"):
            raise InputError(f"PGM: method must be 'auto', 'lbfgs', 'mirror' or 'accelerated', got {method!r}")
        if not (callable(loss) or loss in ("l1", "l2")):
            raise InputError(f"PGM: loss must be 'l1', 'l2' or a callable, got {loss!r}")
        if int(iters) < 0:
            raise InputError(f"PGM: iters must be non-negative, got {iters}")
        if tol is not None and not float(tol) >= 0:
            raise InputError(f"PGM: tol must be non-negative, got {tol}")
        check_backend("PGM", backend, dtype)
        self.iters, self.method, self.loss = int(iters), method, loss
        self.max_mb, self.tol = float(max_mb), None if tol is None else float(tol)
        self.backend, self.dtype = backend, dtype

    def model_mb(self, domain, cliques) -> float:
        """MB (float64) of the junction tree of a model over ``cliques`` (what ``max_mb`` bounds)."""
        from ..pgm.junction_tree import triangulated_mb

        return float(triangulated_mb(domain, list(cliques)))

    def reconstruct(self, domain, measurements, total=None, warm_start=None, callback=None, *, cliques=()):
        """The estimated GraphicalModel (counts; ``total`` records, estimated when None).

        ``warm_start``: a previous GraphicalModel to start from (adaptive plans re-estimate after
        each round); ``callback(iteration, loss)`` after every iteration; ``cliques`` (beyond the
        :class:`~ektelo_pgm.stages.Reconstruct` protocol) adds model cliques that no measurement
        covers (e.g. for a custom loss).
        """
        from ..pgm.estimation import estimate

        return estimate(domain, measurements, total=total, method=self.method, loss=self.loss, iters=self.iters,
                        tol=self.tol, warm_start=warm_start, callback=callback, cliques=cliques,
                        max_mb=self.max_mb, backend=self.backend, dtype=self.dtype)


class APPGM(Params):
    """Reconstruction by APPGM (McKenna et al. 2021): the loss minimised over the local polytope.

    ``region_graph`` is "saturated" (default), "factor" or "tree" (the junction tree, whose local
    polytope is the marginal polytope: the measured marginals are those of exact Private-PGM);
    ``loss`` is "l2", "l1" or a custom callable (see
    :class:`~ektelo_pgm.pgm.appgm.objective.MeasuredCliques`); ``method`` "auto" (default, for
    L2: "lbfgs" on region graphs of at most 1,000 cells; up to 250,000 cells "augmented" where
    its working memory fits in ``max_mb``, else "lbfgs" where the region graph's local polytope
    is the marginal polytope (as on the "tree" graph or any graph of cliques that form a
    junction tree) and "mirror" elsewhere; "mirror" on larger graphs, and for L1 and callable
    losses; see :func:`ektelo_pgm.pgm.appgm.estimation.resolve_method`), "lbfgs"
    (L-BFGS on the measured cliques' log-potentials: exact Private-PGM's where the polytope is
    exact, else with CONVEX-GBP run to consistency as oracle), "augmented" (the method of
    multipliers over the pseudo-marginals, :mod:`ektelo_pgm.pgm.appgm.lagrangian`) or "mirror"
    (PROX-PGM, the paper's proximal loop, from the initial ``stepsize``); ``iters`` is a maximum,
    ``gap_tol`` the certified relative optimality gap that stops L-BFGS and the augmented
    Lagrangian; ``counting_numbers`` maps
    regions to positive kappa (default: matched to the loss's curvature for the proximal loop on
    L2, 1 otherwise); ``max_mb`` bounds the region graph (MB as float64) and the augmented
    Lagrangian's working memory.  ``backend``: ``"cpu"`` (default), ``"gpu"``, ``"auto"`` or
    ``"torch-cpu"``; torch runs the proximal loop's convex GBP (``method="mirror"``) and
    L-BFGS on a junction-tree region graph (see :func:`ektelo_pgm.pgm.appgm.estimation.estimate`).  The estimate reports
    ``iterations``, ``converged`` and ``gap``.  See
    :func:`ektelo_pgm.pgm.appgm.estimation.estimate`.
    """

    def __init__(self, iters: int = 1000, region_graph: str = "saturated", loss="l2", stepsize: float | None = None,
                 damping: float = 0.5, counting_numbers=None, final_iters: int = 2000, tol: float = 1e-8,
                 out_of_model_iters: int = 3000, max_mb: float = DEFAULT_MAX_MB, method: str = "auto",
                 gap_tol: float = DEFAULT_TOL, backend: str = "cpu"):
        from ..pgm.appgm.estimation import resolve_method

        resolve_method(method, loss)
        check_tolerances(gap_tol, 0.0)
        if region_graph not in KINDS:
            raise InputError(f"region_graph must be one of {KINDS}, got {region_graph!r}")
        if int(iters) < 0 or int(final_iters) < 0:
            raise InputError(f"iters and final_iters must be non-negative, got {iters} and {final_iters}")
        self.iters, self.final_iters = int(iters), int(final_iters)
        self.region_graph = region_graph
        self.loss = loss
        self.stepsize = stepsize
        self.damping = float(damping)
        self.counting_numbers = counting_numbers
        self.tol = float(tol)
        self.out_of_model_iters = int(out_of_model_iters)
        self.max_mb = float(max_mb)
        self.method, self.gap_tol = method, float(gap_tol)
        check_backend("APPGM", backend)
        self.backend = backend

    def model_mb(self, domain, cliques) -> float:
        """MB (float64) of the region graph over ``cliques`` (what ``max_mb`` bounds)."""
        from ..pgm.region_graph import RegionGraph

        graph = RegionGraph.build(self.region_graph, domain, list(cliques), max_mb=float("inf"))
        return graph.cells * 8 / 2**20

    def reconstruct(self, domain, measurements, total=None, warm_start=None, callback=None):
        """The estimated APPGMEstimate (pseudo-marginals in counts; ``total`` records, estimated
        when None).

        ``warm_start``: an earlier APPGMEstimate whose parameters are reused where regions
        coincide; ``callback(step, loss)`` after every proximal step.
        """
        from ..pgm.appgm.estimation import Options, estimate

        options = Options(region_graph=self.region_graph, loss=self.loss, method=self.method, iters=self.iters,
                          stepsize=self.stepsize, damping=self.damping, counting_numbers=self.counting_numbers,
                          final_iters=self.final_iters, tol=self.tol, out_of_model_iters=self.out_of_model_iters,
                          max_mb=self.max_mb, gap_tol=self.gap_tol, backend=self.backend)
        return estimate(domain, measurements, total, options, warm_start, callback)
