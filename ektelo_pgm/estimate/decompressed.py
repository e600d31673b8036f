"""An estimate over merged values seen over the original values (MST's compression of rare values)."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from .base import Estimate


class Decompressed(Estimate):
    """An estimate over merged values seen over ``domain``, the original values (counts).

    ``codes[a][v]`` is the value of ``estimate`` that the original value ``v`` of ``a`` was merged
    into (MST's compression of rare values); the mass of a merged value is spread uniformly over
    the original values behind it.  Attributes absent from ``codes`` are kept as they are.
    """

    def __init__(self, estimate: Estimate, domain: Domain, codes: Mapping[str, np.ndarray]):
        if estimate.domain.attrs != domain.attrs:
            raise InputError(f"Decompressed: the estimate's attributes {list(estimate.domain.attrs)} are not "
                             f"those of {domain}")
        self.estimate, self.domain, self.codes, self.group_size = estimate, domain, {}, {}
        for a in domain.attrs:
            c = np.asarray(codes[a], dtype=np.int64) if a in codes else np.arange(domain[a])
            if c.shape != (domain[a],) or c.min() < 0 or c.max() >= estimate.domain[a]:
                raise InputError(f"Decompressed: attribute {a!r} needs one code in 0..{estimate.domain[a] - 1} "
                                 f"for each of its {domain[a]} values")
            self.codes[a], self.group_size[a] = c, np.bincount(c, minlength=estimate.domain[a])

    kind = "decompressed"

    def _state(self) -> tuple[dict, dict]:
        meta, arrays = self.estimate.to_state()
        return {"inner": meta}, {**{f"inner/{k}": v for k, v in arrays.items()},
                                 **{f"codes/{a}": c for a, c in self.codes.items()}}

    @classmethod
    def _from_state(cls, domain: Domain, meta: dict, arrays: dict) -> "Decompressed":
        inner = Estimate.from_state(meta["inner"], {k[6:]: v for k, v in arrays.items() if k.startswith("inner/")})
        return cls(inner, domain, {k[6:]: v for k, v in arrays.items() if k.startswith("codes/")})

    @property
    def total(self) -> float:
        return self.estimate.total

    @property
    def sampling_methods(self) -> tuple[str, ...]:
        """Those of the inner estimate."""
        return self.estimate.sampling_methods

    def project(self, attrs) -> np.ndarray:
        attrs = self.domain.check(attrs)
        table = self.estimate.project(attrs)
        for axis, a in enumerate(attrs):
            codes = self.codes[a]
            shape = [1] * len(attrs)
            shape[axis] = codes.size
            table = np.take(table, codes, axis=axis) / self.group_size[a][codes].reshape(shape)
        return table

    def synthetic_data(self, n: int | None = None, rng=None, method: str | None = None) -> Dataset:
        """``n`` records (default: the rounded total): records of the inner estimate (drawn as
        ``method`` says, None: its default), each merged value replaced by one of its original
        values drawn uniformly."""
        self.sampling_method(method)
        rng = np.random.default_rng(rng)
        options = {} if method is None else {"method": method}
        records = self.estimate.synthetic_data(n, rng, **options).records.copy()
        for j, a in enumerate(self.domain.attrs):
            codes, sizes = self.codes[a], self.group_size[a]
            if np.array_equal(codes, np.arange(codes.size)):
                continue
            members = np.argsort(codes, kind="stable")  # original values grouped by code
            start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            code = records[:, j]
            records[:, j] = members[start[code] + rng.integers(0, sizes[code])]
        return Dataset(records, self.domain)
