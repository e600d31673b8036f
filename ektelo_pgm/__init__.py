"""ektelo_pgm: differentially private query answering and synthetic data with implicit query
operators and graphical-model reconstruction."""
from .domain import Domain
from .dataset import Dataset
from .measurement import Measurement
from .estimate import Estimate, VectorEstimate
from .encoding import TableEncoder
from .privacy import Budget, BudgetExceededError
from .workload import Workload

__all__ = ["Domain", "Dataset", "Measurement", "Estimate", "VectorEstimate", "TableEncoder", "Budget",
           "BudgetExceededError", "Workload"]
__version__ = "0.1.0"
