"""Implicit linear operators (scipy ``LinearOperator`` subclasses) with a closed,
structure-keeping algebra: see docs/operators.md."""
from .core import (Adapter, Dense, HStack, Identity, Kronecker, Matrix, Ones, Product, Sparse,
                   Sum, Total, Transpose, VStack, Weighted, ZeroOne, as_matrix, check_size)
from .marginal import Marginal, Marginals
from .ranges import AllRange, Prefix, RangeQueries, Suffix

__all__ = [
    "Matrix", "ZeroOne", "Transpose", "Adapter", "as_matrix", "check_size",
    "Identity", "Ones", "Total", "Prefix", "Suffix", "AllRange", "RangeQueries",
    "Dense", "Sparse", "Weighted", "Sum", "Product", "VStack", "HStack", "Kronecker",
    "Marginal", "Marginals",
]
