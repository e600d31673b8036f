"""Hyperparameters read back, in the scikit-learn shape: a class keeps its constructor's
arguments unchanged as attributes of the same names, and :meth:`Params.get_params` gives them
back, so that ``type(x)(**x.get_params())`` is configured as ``x``.  :func:`as_data` turns them
into plain data (JSON-ready: numbers, strings, lists, dicts) for saving and printing."""
from __future__ import annotations

import inspect
from fractions import Fraction

import numpy as np


class Params:
    """``get_params()``: the constructor's arguments by name, as given (``**kwargs`` merged in)."""

    def get_params(self) -> dict:
        out = {}
        for name, p in inspect.signature(type(self).__init__).parameters.items():
            if name == "self" or p.kind is p.VAR_POSITIONAL:
                continue
            if p.kind is p.VAR_KEYWORD:
                out.update(getattr(self, name))
            else:
                out[name] = getattr(self, name)
        return out


def name_of(x) -> str:
    cls = x if isinstance(x, type) else type(x)
    return f"{cls.__module__}.{cls.__qualname__}"


def as_data(value):
    """``value`` as plain data: objects with ``get_params`` as ``{"class", "params"}`` (nested
    estimators as their own settings), fractions as ``"p/q"`` strings, tuples as lists, queries as
    their attributes (and weight, and query matrix's class), datasets and other objects by their
    class only (never their contents or a memory address)."""
    from .dataset import Dataset
    from .workload import Query, Workload

    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, dict):
        return {str(k): as_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray, Workload)):
        return [as_data(v) for v in value]
    if isinstance(value, Query):
        out = {"attrs": list(value.attrs), "weight": as_data(value.weight)}
        return out if value.matrix is None else {**out, "matrix": name_of(value.matrix)}
    if hasattr(value, "get_params") and not isinstance(value, (type, Dataset)):
        return {"class": name_of(value), "params": as_data(value.get_params())}
    return {"class": name_of(value)}


def with_iters(estimator, iters: int | None):
    """``estimator`` with ``iters`` iterations (a copy made from its ``get_params()``); as it is
    when ``iters`` is None or it takes no ``iters``."""
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    if iters is None or "iters" not in params:
        return estimator
    return type(estimator)(**{**params, "iters": iters})
