"""Private-PGM: graphical-model estimation and inference (McKenna et al. 2019)."""
from .clique_vector import CliqueVector
from .estimation import Objective, estimate
from .factor import Factor
from .inference import MarginalOracle
from .junction_tree import JunctionTree, ModelTooLargeError
from .model import GraphicalModel
from .optimizers import Oracle, dual_averaging, mirror_descent, quasi_newton

__all__ = ["CliqueVector", "Factor", "GraphicalModel", "JunctionTree", "MarginalOracle", "ModelTooLargeError",
           "Objective", "Oracle", "dual_averaging", "estimate", "mirror_descent", "quasi_newton"]
