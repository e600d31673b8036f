"""Private learning of undirected graphical models (Bernstein et al. 2017): the model class,
the noisy sufficient statistics and the learners (Naive MLE, CGM-EM, Private-PGM, private SGD)."""
from .learners import CGMEM, NaiveMLE, PGMLearner, PrivateSGD, fit_mle, nlbp
from .loopy import LoopyBP
from .model import Structure, UndirectedModel
from .statistics import noisy_statistics, noisy_total, project_simplex
from .synthetic import chain, dirichlet_model, erdos_renyi, time_homogeneous_chain, variables

__all__ = ["CGMEM", "LoopyBP", "NaiveMLE", "PGMLearner", "PrivateSGD", "Structure", "UndirectedModel", "chain",
           "dirichlet_model", "erdos_renyi", "fit_mle", "nlbp", "noisy_statistics", "noisy_total",
           "project_simplex", "time_homogeneous_chain", "variables"]
