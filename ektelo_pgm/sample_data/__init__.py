"""Sample data shipped with the package, so that a clone runs alone.

- :func:`load` gives the integer-coded benchmark datasets (adult, titanic, nltcs, salary: the
  Private-PGM line of work's preprocessed copies, files ``NAME.csv.xz`` with ``NAME-domain.json``
  beside this module; sources, licences and transformations in ``README.md`` here), or those of
  another folder laid out the same way (``data_dir``).
- :func:`write_example` writes a raw table for the steward's path (UCI Adult as distributed: text
  categories, raw numbers, no header line, ``?`` for missing), as ``ektelo-pgm example`` does.
- :func:`synthetic_bayes_net` needs no files: it samples ``n`` records from :func:`census_network`,
  a Bayesian network of 10 attributes (sizes 2 to 50) whose exact marginals are available through
  :meth:`BayesNet.project`, so that tests and demos can compare estimates with the truth.
"""
from __future__ import annotations

import functools
import lzma
from pathlib import Path

import numpy as np

from ..dataset import Dataset
from ..domain import Domain
from ..errors import InputError
from ..estimate import BayesNet
from ..files import atomic_write

#: The folder of the shipped files.
HERE = Path(__file__).resolve().parent
#: The raw example tables: name -> (file under ``raw/``, what it is).
EXAMPLES = {"adult": ("adult.data.xz", "UCI Adult's training file, 32,561 records"),
            "adult-test": ("adult.test.xz", "UCI Adult's test file, 16,281 records after a first line "
                                            "'|1x3 Cross validator'; incomes end in a full stop")}
#: The columns of the raw Adult files, as adult.names lists them (the files have no header line).
ADULT_COLUMNS = ("age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
                 "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
                 "income")


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


def available(data_dir=None) -> list[str]:
    """Names of the datasets (``NAME.csv`` or ``NAME.csv.xz`` with ``NAME-domain.json``) shipped with
    the package, or in the folder ``data_dir``."""
    root = HERE if data_dir is None else Path(data_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"data directory {root} does not exist")
    names = [p.name[: -len("-domain.json")] for p in root.glob("*-domain.json")]
    return sorted(n for n in names if _records(root, n) is not None)


def _records(root: Path, name: str) -> Path | None:
    """The records file of dataset ``name`` in ``root`` (plain or xz-compressed), None if absent."""
    return next((p for p in (root / f"{name}.csv", root / f"{name}.csv.xz") if p.is_file()), None)


def load(name: str, data_dir=None) -> Dataset:
    """The integer-coded dataset ``name`` (adult, titanic, nltcs, salary) shipped with the package,
    or of the folder ``data_dir`` (``NAME.csv`` or ``NAME.csv.xz`` beside ``NAME-domain.json``),
    read with :meth:`Dataset.load`."""
    root = HERE if data_dir is None else Path(data_dir)
    records = _records(root, name) if root.is_dir() else None
    if records is None or not (root / f"{name}-domain.json").is_file():
        raise FileNotFoundError(f"no dataset {name!r} in {root} (needs {name}.csv or {name}.csv.xz and "
                                f"{name}-domain.json); available: {available(root) if root.is_dir() else []}")
    return Dataset.load(records, root / f"{name}-domain.json")


def write_example(name: str, path) -> None:
    """Write the raw example table ``name`` (one of :data:`EXAMPLES`) to ``path``, byte for byte as
    distributed, atomically: comma-separated text without a header line, columns
    :data:`ADULT_COLUMNS`."""
    if name not in EXAMPLES:
        raise InputError(f"no example table {name!r}; choose from {', '.join(EXAMPLES)}")
    with lzma.open(HERE / "raw" / EXAMPLES[name][0]) as source, atomic_write(path, "wb") as target:
        target.write(source.read())
