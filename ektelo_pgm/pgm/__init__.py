"""Private-PGM: graphical-model estimation and inference (McKenna et al. 2019)."""
from .clique_vector import CliqueVector
from .estimation import estimate
from .factor import Factor
from .inference import MarginalOracle
from .junction_tree import JunctionTree, ModelTooLargeError
from .loss import Objective
from .model import GraphicalModel
from .optimizers import Oracle, dual_averaging, mirror_descent, quasi_newton
from . import torch_oracle  # noqa: F401 - registers torch's devices with .backends (torch loads when one is used)

__all__ = ["CliqueVector", "Factor", "GraphicalModel", "JunctionTree", "MarginalOracle", "ModelTooLargeError",
           "Objective", "Oracle", "dual_averaging", "estimate", "mirror_descent", "quasi_newton"]
