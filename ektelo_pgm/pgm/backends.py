"""The ``backend`` option of PGM and APPGM: which implementation of the oracles runs the loops.

``"cpu"`` is the numba reference (the oracles themselves); the accelerated devices are
registered here by the modules that implement them (:mod:`ektelo_pgm.pgm.torch_oracle` registers
torch's ``"torch-cpu"`` and ``"cuda"`` when it is imported, which the :mod:`ektelo_pgm.pgm`
package does; torch itself loads only when a device is used).  :func:`resolve_backend` says
which device a backend stands for, :func:`make_oracle` and :func:`device_gbp` build the
junction-tree oracle and APPGM's convex GBP on it.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

from ..errors import InputError

BACKENDS = ("cpu", "gpu", "auto", "torch-cpu")
#: Junction-tree (or region-graph) cells from which ``backend="auto"`` runs the torch code on a
#: CUDA device, when one is present.  Measured on an H200 (benchmarks/gpu_vs_mbi.py): an iteration
#: of mirror descent on adult's trees took the GPU 1.2 to 1.6 ms from 50k to 2M cells, numba on 8
#: threads 1.6 ms at 50k, 2.4 at 300k, 6.2 at 0.9M and 14 at 2M; numba on all 16 threads (not
#: measured), at best twice as fast, would move the crossover between 300k and 0.9M.
AUTO_GPU_CELLS = 500_000
#: Cells per clique (on average) below which ``"auto"`` stays in numba however large the tree: the
#: GPU's time grows with the tree's levels, about 0.05 ms an iteration each (a chain of 99 cliques
#: of 100 cells: 3.1 ms an iteration on the GPU, 0.27 ms in numba).
AUTO_GPU_CLIQUE_CELLS = 20_000


@dataclass(frozen=True)
class Device:
    """An accelerated device the engines can run on, as its implementing module registers it.

    ``name``: what :func:`resolve_backend` returns for it (``"torch-cpu"``, ``"cuda"``).
    ``check()``: raises an :class:`~ektelo_pgm.errors.InputError` (one line, what to do) when the
    device cannot run here.  ``present()``: whether it can, without raising (``"auto"`` asks).
    ``oracle(base, dtype)``: the junction-tree oracle on the device over the numba
    :class:`~ektelo_pgm.pgm.inference.MarginalOracle` ``base``.  ``gbp(gbp)``: APPGM's convex GBP
    with the messages of the numba ``ConvexGBP`` ``gbp`` moved to the device.
    """

    name: str
    check: Callable[[], None]
    present: Callable[[], bool]
    oracle: Callable
    gbp: Callable


DEVICES: dict[str, Device] = {}


def register(device: Device) -> None:
    """Make ``device`` available to the backends that name it (a later registration replaces it)."""
    DEVICES[device.name] = device


def registered(name: str) -> Device:
    """The device ``name``, refused with an InputError when no module registered it."""
    if name not in DEVICES:
        raise InputError(f"no implementation of the {name!r} device is registered (ektelo_pgm.pgm.torch_oracle "
                         "registers torch's); use backend='cpu'")
    return DEVICES[name]


def resolve_backend(backend: str, cells: int | None = None, cliques: int = 1) -> str:
    """The device a ``backend`` stands for: ``"cpu"`` (the numba oracle), ``"cuda"`` or
    ``"torch-cpu"`` (the torch oracle on torch's CPU device, for tests).  ``"gpu"`` without a CUDA
    device is an :class:`~ektelo_pgm.errors.InputError`; ``"auto"`` is ``"cuda"`` only when a
    CUDA device is present and the junction tree has at least :data:`AUTO_GPU_CELLS` cells, and
    :data:`AUTO_GPU_CLIQUE_CELLS` cells a clique on average over its ``cliques``."""
    if backend not in BACKENDS:
        raise InputError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "cpu":
        return "cpu"
    if backend == "torch-cpu":
        registered("torch-cpu").check()
        return "torch-cpu"
    if backend == "gpu":
        registered("cuda").check()
        return "cuda"
    large = cells is not None and cells >= max(AUTO_GPU_CELLS, AUTO_GPU_CLIQUE_CELLS * cliques)
    if large and "cuda" in DEVICES and DEVICES["cuda"].present():
        return "cuda"
    return "cpu"


def make_oracle(base, backend: str = "cpu", dtype: str = "float64"):
    """The oracle a ``backend`` stands for over the numba oracle ``base``: ``base`` itself for
    ``"cpu"`` (and ``"auto"`` on small trees, without CUDA, or where the device's memory cannot
    hold the tree's plan: a warning says so), else the registered device's."""
    device = resolve_backend(backend, int(base.layout.clique_off[-1]), len(base.tree.cliques))
    if device == "cpu":
        return base
    try:
        return registered(device).oracle(base, dtype)
    except MemoryError as exc:
        if backend != "auto":
            raise
        warnings.warn(f"backend='auto': {exc}; running on the CPU instead")
        return base


def device_gbp(gbp, device: str):
    """APPGM's convex GBP on ``device`` (a :func:`resolve_backend` result) from the numba
    ``ConvexGBP`` ``gbp`` and its messages: ``gbp`` itself on ``"cpu"``."""
    if device == "cpu":
        return gbp
    return registered(device).gbp(gbp)
