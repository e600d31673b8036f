"""Privacy budgets (pure epsilon-DP or rho-zCDP) and the noise that charges them.

``budget``: exact accounting, conversions, the neighbouring relation;
``noise``: the Laplace, Gaussian and exponential mechanisms and permute-and-flip
(noise is only drawn through a Budget); ``samplers``: the exact integer samplers they use;
``contribution``: at most K rows of each person (the ``Person(K)`` relation).
"""
from .budget import (ADD_REMOVE, SUBSTITUTE, Budget, BudgetExceededError, Charge, Person,
                     approx_to_zcdp, approx_to_zcdp_simple, zcdp_delta, zcdp_to_approx,
                     zcdp_to_approx_simple)
from .noise import (NoiseLaw, count_noise, exponential, exponential_probabilities, gaussian, gaussian_law,
                    gaussian_sigma, gaussian_std, laplace, laplace_law, laplace_scale, laplace_std, permute_and_flip)

__all__ = [
    "Budget", "BudgetExceededError", "Charge", "ADD_REMOVE", "SUBSTITUTE", "Person",
    "approx_to_zcdp", "zcdp_to_approx", "zcdp_delta", "approx_to_zcdp_simple", "zcdp_to_approx_simple",
    "laplace", "gaussian", "count_noise", "exponential", "permute_and_flip", "exponential_probabilities",
    "laplace_scale", "gaussian_sigma", "laplace_std", "gaussian_std", "NoiseLaw", "laplace_law", "gaussian_law",
]
