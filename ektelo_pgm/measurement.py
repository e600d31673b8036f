"""Noisy answers to a linear query over one marginal."""
from __future__ import annotations

import numpy as np

from .domain import Domain
from .errors import InputError


class Measurement:
    """Noisy answers ``y`` (counts) to ``query`` applied to the marginal on ``attrs``.

    ``query`` is an implicit matrix (anything ``ektelo_pgm.matrix.as_matrix`` accepts) whose
    columns index the marginal on ``attrs`` raveled in C order in the order given; ``None`` means
    the identity, i.e. ``y`` is the noisy marginal itself.  ``std`` is the noise standard deviation,
    one scalar or one per answer.  ``noise``: the law of each answer's noise
    (:class:`~ektelo_pgm.privacy.NoiseLaw`) where known, for exact intervals
    (:mod:`ektelo_pgm.uncertainty`); the measurement operators set it.
    """

    def __init__(self, attrs, y, std, query=None, noise=None):
        from .matrix import as_matrix

        self.attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        self.y = np.asarray(y, dtype=np.float64).ravel()
        if not np.all(np.isfinite(self.y)):
            raise InputError(f"Measurement on {list(self.attrs)}: answers contain NaN or infinity")
        std = np.asarray(std, dtype=np.float64)
        if std.ndim > 1 or (std.ndim == 1 and std.size != self.y.size):
            raise InputError(
                f"Measurement on {list(self.attrs)}: std must be a scalar or one per answer "
                f"({self.y.size}), got shape {std.shape}"
            )
        if not np.all(np.isfinite(std)) or np.any(std <= 0):
            raise InputError(f"Measurement on {list(self.attrs)}: std must be positive and finite")
        self.std = float(std) if std.ndim == 0 else std
        self.query = None if query is None else as_matrix(query)
        self.noise = noise
        if self.query is not None and self.query.shape[0] != self.y.size:
            raise InputError(
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
            raise InputError(
                f"Measurement on {list(self.attrs)}: query has {columns} columns but the marginal "
                f"has {cells} cells"
            )
        if rows != self.y.size:
            raise InputError(
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

    def total_estimate(self, domain: Domain) -> tuple[float, float] | None:
        """Unbiased estimate of the number of records and its variance, or None when the
        all-ones row is not in the row space of the query (McKenna et al. 2019, supplement E.1).

        With ``W = diag(1/std)`` it takes the minimum-norm ``u`` with ``(W Q)^T u = 1``; the
        estimate is ``(W u) . y`` with variance ``|u|^2``.
        """
        from scipy.sparse.linalg import LinearOperator, lsmr

        w = self.weights
        if self.query is None:
            self.check(domain)
            return float(self.y.sum()), float(np.sum(1.0 / w**2))
        query = self.query_for(domain)
        n = query.shape[1]
        transpose = LinearOperator((n, w.size), matvec=lambda u: query.T @ (w * np.ravel(u)),
                                   rmatvec=lambda x: w * (query @ np.ravel(x)), dtype=np.float64)
        u = lsmr(transpose, np.ones(n), atol=1e-14, btol=1e-14, maxiter=max(100, 4 * n))[0]
        if np.linalg.norm(transpose @ u - 1.0) > 1e-6 * np.sqrt(n):
            return None
        return float((w * u) @ self.y), float(u @ u)

    def __repr__(self) -> str:
        std = f"{self.std:g}" if np.ndim(self.std) == 0 else "per-answer"
        return f"Measurement(attrs={list(self.attrs)}, answers={self.y.size}, std={std})"


def check_measurements(domain: Domain, measurements) -> list[Measurement]:
    """``measurements`` as a list, each checked against ``domain``; raise if there are none."""
    measurements = list(measurements)
    if not measurements:
        raise InputError("there are no measurements to reconstruct from")
    for m in measurements:
        if not isinstance(m, Measurement):
            raise TypeError(f"expected Measurement objects, got a {type(m).__name__}")
        m.check(domain)
    return measurements


def check_total(total) -> float | None:
    """``total`` as a float (a positive, finite record count) or None."""
    if total is None:
        return None
    total = float(total)
    if not np.isfinite(total) or total <= 0:
        raise InputError(f"total must be a positive finite number of records, got {total!r}")
    return total


def estimate_total(domain: Domain, measurements) -> float | None:
    """Inverse-variance weighted number of records over every measurement that determines one
    (McKenna et al. 2019, supplement E.1), at least 1; None when none does."""
    estimates = [e for m in measurements if (e := m.total_estimate(domain)) is not None]
    if not estimates:
        return None
    values, variances = np.array(estimates).T
    return max(1.0, float(np.sum(values / variances) / np.sum(1.0 / variances)))


def resolve_total(domain: Domain, measurements, total=None, fallback: float | None = None) -> float:
    """The record count a reconstruction works with: ``total`` when given, else the estimate
    from ``measurements``, else ``fallback`` (e.g. a warm start's total); raise when all are missing."""
    total = check_total(total)
    if total is None:
        total = estimate_total(domain, measurements)
    if total is None:
        total = check_total(fallback)
    if total is None:
        raise InputError("the number of records is unknown and no measurement determines it "
                         "(none has the all-ones row in its query's row space); pass total=")
    return total
