"""Noisy answers to a linear query over one marginal."""
from __future__ import annotations

import numpy as np

from .domain import Domain


class Measurement:
    """Noisy answers ``y`` (counts) to ``query`` applied to the marginal on ``attrs``.

    ``query`` is an implicit matrix (anything ``ektelo_pgm.matrix.as_matrix`` accepts) whose
    columns index the marginal on ``attrs`` raveled in C order in the order given; ``None`` means
    the identity, i.e. ``y`` is the noisy marginal itself.  ``std`` is the noise standard deviation,
    one scalar or one per answer.
    """

    def __init__(self, attrs, y, std, query=None):
        from .matrix import as_matrix

        self.attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        self.y = np.asarray(y, dtype=np.float64).ravel()
        if not np.all(np.isfinite(self.y)):
            raise ValueError(f"Measurement on {list(self.attrs)}: answers contain NaN or infinity")
        std = np.asarray(std, dtype=np.float64)
        if std.ndim > 1 or (std.ndim == 1 and std.size != self.y.size):
            raise ValueError(
                f"Measurement on {list(self.attrs)}: std must be a scalar or one per answer "
                f"({self.y.size}), got shape {std.shape}"
            )
        if not np.all(np.isfinite(std)) or np.any(std <= 0):
            raise ValueError(f"Measurement on {list(self.attrs)}: std must be positive and finite")
        self.std = float(std) if std.ndim == 0 else std
        self.query = None if query is None else as_matrix(query)
        if self.query is not None and self.query.shape[0] != self.y.size:
            raise ValueError(
                f"Measurement on {list(self.attrs)}: query has {self.query.shape[0]} rows but "
                f"there are {self.y.size} answers"
            )

    @property
    def weights(self) -> np.ndarray:
        """Per-answer weights 1/std."""
        return np.broadcast_to(1.0 / np.asarray(self.std), self.y.shape)

    def check(self, domain: Domain) -> None:
        """Raise a clear error unless this measurement fits ``domain``."""
        domain.check(self.attrs)
        cells = domain.size(self.attrs)
        columns = cells if self.query is None else self.query.shape[1]
        rows = cells if self.query is None else self.query.shape[0]
        if columns != cells:
            raise ValueError(
                f"Measurement on {list(self.attrs)}: query has {columns} columns but the marginal "
                f"has {cells} cells"
            )
        if rows != self.y.size:
            raise ValueError(
                f"Measurement on {list(self.attrs)}: {self.y.size} answers but the marginal has {cells} cells"
            )

    def query_for(self, domain: Domain):
        """The local query over the marginal on ``attrs`` (the identity when none was given)."""
        from .matrix import Identity

        self.check(domain)
        return Identity(domain.size(self.attrs)) if self.query is None else self.query

    def full_query(self, domain: Domain):
        """The query over the full data vector: local query @ Marginal(domain, attrs)."""
        from .matrix import Marginal

        return self.query_for(domain) @ Marginal(domain, self.attrs)

    def __repr__(self) -> str:
        std = f"{self.std:g}" if np.ndim(self.std) == 0 else "per-answer"
        return f"Measurement(attrs={list(self.attrs)}, answers={self.y.size}, std={std})"
