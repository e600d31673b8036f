"""Implicit linear operators (scipy ``LinearOperator`` subclasses) with a closed,
structure-keeping algebra: see docs/operators.md."""
from .algebra import (Adapter, Dense, Identity, Matrix, Ones, Product, Sparse, Sum, Total, Transpose, Weighted,
                      ZeroOne, as_matrix)
from .core import check_size
from .kronecker import Kronecker
from .marginal import Marginal, Marginals
from .ranges import AllRange, Prefix, RangeQueries, Suffix
from .stacks import HStack, VStack

__all__ = [
    "Matrix", "ZeroOne", "Transpose", "Adapter", "as_matrix", "check_size",
    "Identity", "Ones", "Total", "Prefix", "Suffix", "AllRange", "RangeQueries",
    "Dense", "Sparse", "Weighted", "Sum", "Product", "VStack", "HStack", "Kronecker",
    "Marginal", "Marginals",
]
