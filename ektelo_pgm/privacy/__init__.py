"""Privacy budgets (pure epsilon-DP or rho-zCDP) and the mechanisms that charge them."""
from .budget import (Budget, BudgetExceededError, Charge, approx_to_zcdp,
                     zcdp_to_approx)
from .mechanisms import (exponential, exponential_probabilities, gaussian,
                         gaussian_sigma, laplace, laplace_scale)

__all__ = [
    "Budget", "BudgetExceededError", "Charge", "approx_to_zcdp", "zcdp_to_approx",
    "laplace", "gaussian", "exponential", "exponential_probabilities",
    "laplace_scale", "gaussian_sigma",
]
