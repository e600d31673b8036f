"""How close a synthetic table is to the real one, and how reconstructions compare: what the rest
of the project (the command line, the docs, the benchmarks) imports from here.

- :mod:`.discretisation`: the one coding of a real table and of tables compared with it
  (:class:`Discretisation`, :func:`kinds_of`, the cells :data:`MISSING` and :data:`OTHER`);
- :mod:`.fidelity`: the quality scores as SDMetrics defines them (:func:`quality`,
  :func:`column_shapes`, :func:`column_pair_trends`), each in [0, 1];
- :mod:`.holdout`: checks against real rows the synthesizer never saw (:func:`split`,
  :func:`ml_efficacy`, :func:`disclosure`, :func:`closest_distances`);
- :mod:`.report`: :func:`evaluate` (TVD per marginal, the text and HTML/PNG report) and
  :func:`compare` (workload error against epsilon); :mod:`.figures` draws their figures.

None of it is private: it reads the real table freely.  Treat its output like the real data.
"""
from .discretisation import MISSING, OTHER, Discretisation, kinds_of
from .fidelity import Quality, column_pair_trends, column_shapes, quality
from .holdout import MODELS, Disclosure, MLEfficacy, closest_distances, disclosure, ml_efficacy, split
from .report import Advice, Evaluation, compare, evaluate

__all__ = ["MISSING", "OTHER", "Discretisation", "kinds_of", "Quality", "column_pair_trends", "column_shapes",
           "quality", "MODELS", "Disclosure", "MLEfficacy", "closest_distances", "disclosure", "ml_efficacy", "split",
           "Advice", "Evaluation", "compare", "evaluate"]
