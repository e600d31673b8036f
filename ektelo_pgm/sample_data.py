"""Sample data: the integer-coded benchmark datasets of the shared data directory
(adult, titanic, nltcs, salary) and a built-in synthetic census drawn from a fixed
Bayesian network (a :class:`~ektelo_pgm.estimate.BayesNet`).

``synthetic_bayes_net(n, rng)`` needs no files: it samples ``n`` records from
:func:`census_network`, a Bayesian network of 10 attributes (sizes 2 to 50)
whose exact marginals are available through :meth:`BayesNet.project`, so
that tests and demos can compare estimates with the truth.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from .dataset import Dataset
from .domain import Domain
from .estimate import BayesNet

DATA_ENV = "EKTELO_PGM_DATA"


def _softmax(logits: np.ndarray) -> np.ndarray:
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def _scores(k: int) -> np.ndarray:
    """Evenly spaced scores of an ordered attribute, from -1 to 1."""
    return np.linspace(-1.0, 1.0, k) if k > 1 else np.zeros(1)


def _bell(k: int, center: float, width: float) -> np.ndarray:
    """Logits of a bell shape over the values 0..k-1."""
    return -0.5 * ((np.arange(k) - center) / width) ** 2


@functools.lru_cache(maxsize=1)
def census_network() -> BayesNet:
    """The fixed network behind :func:`synthetic_bayes_net`: a small census story.

    Attributes (sizes; parents): age (50 bands; root), sex (2; root),
    race (5; root), education (16 ordered levels; age, race), marital (7;
    age, sex), relationship (6; marital, sex), occupation (15; education,
    sex), workclass (8; occupation), hours (20 ordered bands; occupation,
    sex), income (2; education, hours).  Each table is a softmax of additive
    logits: a base term plus one term per parent, either a linear-by-linear
    trend between ordered attributes or fixed pseudo-random effects drawn
    once from a seeded generator.
    """
    rng = np.random.default_rng(20190516)
    sizes = {"age": 50, "sex": 2, "race": 5, "education": 16, "marital": 7, "relationship": 6,
             "occupation": 15, "workclass": 8, "hours": 20, "income": 2}

    def trend(parent: str, child: str, strength: float) -> np.ndarray:
        return strength * np.outer(_scores(sizes[parent]), _scores(sizes[child]))

    def effects(parent: str, child: str, strength: float) -> np.ndarray:
        return strength * rng.standard_normal((sizes[parent], sizes[child]))

    def slopes(parent: str, child: str, strength: float) -> np.ndarray:
        return strength * np.outer(_scores(sizes[parent]), rng.standard_normal(sizes[child]))

    spec = {  # attribute: (base logits, {parent: interaction logits (parent size, size)})
        "age": (_bell(50, 16, 13), {}),
        "sex": (np.log([0.48, 0.52]), {}),
        "race": (np.log([0.76, 0.12, 0.06, 0.04, 0.02]), {}),
        "education": (_bell(16, 9, 3.5), {"age": trend("age", "education", -2.5),
                                          "race": effects("race", "education", 0.6)}),
        "marital": (rng.standard_normal(7), {"age": slopes("age", "marital", 2.5),
                                            "sex": effects("sex", "marital", 0.5)}),
        "relationship": (rng.standard_normal(6), {"marital": effects("marital", "relationship", 2.0),
                                                 "sex": effects("sex", "relationship", 1.5)}),
        "occupation": (rng.standard_normal(15), {"education": slopes("education", "occupation", 2.5),
                                                "sex": effects("sex", "occupation", 1.0)}),
        "workclass": (1.5 * rng.standard_normal(8), {"occupation": effects("occupation", "workclass", 1.2)}),
        "hours": (_bell(20, 8, 2.5), {"occupation": np.outer(1.5 * rng.standard_normal(15), _scores(20)),
                                      "sex": trend("sex", "hours", 2.0)}),
        "income": (np.array([1.2, -1.2]), {"education": trend("education", "income", 2.0),
                                           "hours": trend("hours", "income", 1.0)}),
    }
    parents, cpts = {}, {}
    for attr, (base, terms) in spec.items():
        pa = tuple(terms)
        logits = np.broadcast_to(base, tuple(sizes[p] for p in pa) + (sizes[attr],)).copy()
        for i, p in enumerate(pa):
            index = [None] * len(pa) + [slice(None)]
            index[i] = slice(None)
            logits += terms[p][tuple(index)]
        parents[attr], cpts[attr] = pa, _softmax(logits)
    return BayesNet(Domain.fromdict(sizes), parents, cpts)


def synthetic_bayes_net(n: int = 10000, rng=0) -> Dataset:
    """``n`` records (counts 1 each) sampled from :func:`census_network`; same ``rng``, same data."""
    return census_network().synthetic_data(n, rng, method="sample")


def _resolve(data_dir) -> Path:
    """``data_dir``, else ``$EKTELO_PGM_DATA``, else ``../shared/data`` relative to the working directory."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_ENV) or Path.cwd() / ".." / "shared" / "data"
    path = Path(data_dir)
    if not path.is_dir():
        raise FileNotFoundError(f"data directory {path} does not exist; pass data_dir= or set ${DATA_ENV}")
    return path


def available(data_dir=None) -> list[str]:
    """Names of the datasets (``NAME.csv`` with ``NAME-domain.json``) in the data directory
    (``data_dir``, else ``$EKTELO_PGM_DATA``, else ``../shared/data`` from the working directory)."""
    root = _resolve(data_dir)
    names = [p.name[: -len("-domain.json")] for p in root.glob("*-domain.json")]
    return sorted(n for n in names if (root / f"{n}.csv").is_file())


def load(name: str, data_dir=None) -> Dataset:
    """The integer-coded dataset ``name`` (adult, titanic, nltcs, salary, ...) of the data
    directory (``data_dir``, else ``$EKTELO_PGM_DATA``, else ``../shared/data`` from the
    working directory), read with :meth:`Dataset.load`."""
    root = _resolve(data_dir)
    csv_path, domain_path = root / f"{name}.csv", root / f"{name}-domain.json"
    if not (csv_path.is_file() and domain_path.is_file()):
        raise FileNotFoundError(f"no dataset {name!r} in {root} (needs {csv_path.name} and {domain_path.name}); "
                                f"available: {available(root)}")
    return Dataset.load(csv_path, domain_path)
