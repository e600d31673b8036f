"""Attributes and their sizes."""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from .errors import InputError, UnknownNameError


class Domain:
    """Ordered attribute names with the number of values each can take.

    Attributes are always addressed by name.  The full data vector of a domain
    is indexed in C order over ``attrs`` (the last attribute varies fastest).
    """

    def __init__(self, attrs: Sequence[str], shape: Sequence[int]):
        attrs = tuple(attrs)
        shape = tuple(shape)
        if len(attrs) != len(shape):
            raise InputError(f"Domain: {len(attrs)} attribute names but {len(shape)} sizes")
        if len(set(attrs)) != len(attrs):
            dup = sorted({a for a in attrs if attrs.count(a) > 1})
            raise InputError(f"Domain: duplicate attribute names {dup}")
        for a, n in zip(attrs, shape):
            if not isinstance(a, str):
                raise TypeError(f"Domain: attribute name {a!r} is not a string")
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
                raise InputError(f"Domain: attribute {a!r} has size {n!r}; sizes are positive integers")
        self.attrs = attrs
        self.shape = tuple(int(n) for n in shape)
        self.config = dict(zip(self.attrs, self.shape))

    @classmethod
    def fromdict(cls, sizes: Mapping[str, int]) -> "Domain":
        """Domain from ``{name: size}`` in the mapping's order (at least one attribute)."""
        if not isinstance(sizes, Mapping):
            raise TypeError(f"Domain.fromdict: expected a mapping of attribute names to sizes, "
                            f"got {type(sizes).__name__}")
        if not sizes:
            raise InputError("Domain.fromdict: the domain is empty (no attributes)")
        return cls(list(sizes.keys()), list(sizes.values()))

    def check(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """Return ``attrs`` as a tuple, raising if any is unknown or repeated."""
        if isinstance(attrs, str):
            attrs = (attrs,)
        attrs = tuple(attrs)
        missing = [a for a in attrs if a not in self.config]
        if missing:
            raise UnknownNameError(f"attributes {missing} are not in the domain {list(self.attrs)}")
        if len(set(attrs)) != len(attrs):
            raise InputError(f"attributes {list(attrs)} repeat a name")
        return attrs

    def project(self, attrs: Iterable[str]) -> "Domain":
        """The sub-domain on ``attrs``, in the order given."""
        attrs = self.check(attrs)
        return Domain(attrs, [self.config[a] for a in attrs])

    def marginalize(self, attrs: Iterable[str]) -> "Domain":
        """The sub-domain without ``attrs``, in domain order."""
        drop = set(self.check(attrs))
        return self.project([a for a in self.attrs if a not in drop])

    def canonical(self, attrs: Iterable[str]) -> tuple[str, ...]:
        """``attrs`` sorted into domain order."""
        keep = set(self.check(attrs))
        return tuple(a for a in self.attrs if a in keep)

    def merge(self, other: "Domain") -> "Domain":
        """This domain followed by the attributes of ``other`` it lacks."""
        for a in other.attrs:
            if a in self.config and self.config[a] != other.config[a]:
                raise InputError(f"attribute {a!r} has size {self.config[a]} here but {other.config[a]} there")
        extra = [a for a in other.attrs if a not in self.config]
        return Domain(self.attrs + tuple(extra), self.shape + tuple(other.config[a] for a in extra))

    def size(self, attrs: Iterable[str] | None = None) -> int:
        """Number of cells of the domain (or of its projection on ``attrs``)."""
        shape = self.shape if attrs is None else self.project(attrs).shape
        return int(np.prod(shape, dtype=object))

    def axes(self, attrs: Iterable[str]) -> tuple[int, ...]:
        """Positions of ``attrs`` in this domain."""
        return tuple(self.attrs.index(a) for a in self.check(attrs))

    def __contains__(self, attr: str) -> bool:
        return attr in self.config

    def __getitem__(self, attr: str) -> int:
        if attr not in self.config:
            raise UnknownNameError(f"attribute {attr!r} is not in the domain {list(self.attrs)}")
        return self.config[attr]

    def __iter__(self):
        return iter(self.attrs)

    def __len__(self) -> int:
        return len(self.attrs)

    def __eq__(self, other) -> bool:
        return isinstance(other, Domain) and self.attrs == other.attrs and self.shape == other.shape

    def __hash__(self) -> int:
        return hash((self.attrs, self.shape))

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}: {n}" for a, n in zip(self.attrs, self.shape))
        return f"Domain({inner})"
