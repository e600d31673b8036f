"""Every place that draws noise honours the budget's neighbouring relation (issue 26, item 5).

``SITES`` lists every module outside ``ektelo_pgm/privacy`` that uses a noise primitive, with the
factor its sensitivity must take under substitute neighbours relative to add/remove ones (twice,
unless a documented sensitivity holds under both).  A scan of the package's source must find
exactly these modules, so that a new mechanism cannot draw noise without being listed here.

Each case runs a mechanism, selection, measurement or learner twice on the same data with the
same seed, under add/remove then substitute neighbours, with every listed primitive replaced by
a spy that records the sensitivity passed and draws with sensitivity 1 instead: both runs then
see the same noise, take the same path and make the same calls, which are compared one by one.
Under ``Person(K)`` (one person, at most K rows: issue 54) every sensitivity is K times its
add/remove one, checked the same way and against brute force on tables one person apart.
"""
import ast
import importlib
import inspect
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ektelo_pgm
from ektelo_pgm import Dataset, Domain
from ektelo_pgm.encoding import TableEncoder
from ektelo_pgm.estimate import FactoredEstimate
from ektelo_pgm.learning.learners import CGMEM, PrivateSGD
from ektelo_pgm.mechanisms import AIM, HDMM, MST, MWEM, PEP, PMW, DualQuery, PrivBayes
from ektelo_pgm.mechanisms.framework import SCORE_SENSITIVITY
from ektelo_pgm.mechanisms.privbayes import mutual_information_sensitivity
from ektelo_pgm.operators.measure import Gaussian, Laplace
from ektelo_pgm.operators.select import WorstApproximated
from ektelo_pgm.privacy import ADD_REMOVE, SUBSTITUTE, Budget, Person, samplers
from ektelo_pgm.schema import infer
from ektelo_pgm.workload import Query, kway_marginals

from conftest import TOY_DOMAIN as DOMAIN, toy

PRIMITIVES = ("laplace", "gaussian", "exponential", "permute_and_flip")
#: What draws randomness in ektelo_pgm.privacy.samplers: the Source and every function taking one.
SAMPLERS = {name for name, f in vars(samplers).items() if not name.startswith("_") and inspect.isfunction(f)
            and f.__module__ == samplers.__name__ and next(iter(inspect.signature(f).parameters)) == "source"} \
    | {"Source"}
ONLY_SUBSTITUTE = "defined for substitute neighbours only"

#: module -> {primitive: substitute sensitivity / add/remove sensitivity}
SITES = {
    "ektelo_pgm.operators.measure": {"laplace": 2, "gaussian": 2},
    "ektelo_pgm.operators.select": {"exponential": 2},
    "ektelo_pgm.mechanisms.mst": {"exponential": 2},
    "ektelo_pgm.mechanisms.aim": {"exponential": 2},
    # KWorst's cell errors move by at most 1 under either relation (framework.SCORE_SENSITIVITY)
    "ektelo_pgm.mechanisms.framework": {"exponential": 1, "permute_and_flip": 1},
    "ektelo_pgm.learning.learners": {"gaussian": 2},
    "ektelo_pgm.columns": {"laplace": 2, "exponential": 2},
    "ektelo_pgm.schema.histogram": {"laplace": 2, "gaussian": 2},
    # refuse add/remove budgets; their substitute sensitivities are checked below
    "ektelo_pgm.mechanisms.privbayes": {"exponential": ONLY_SUBSTITUTE},
    "ektelo_pgm.mechanisms.dualquery": {"exponential": ONLY_SUBSTITUTE},
}


def uses_in_package() -> dict[str, set[str]]:
    """For every module of ektelo_pgm outside privacy/, the noise primitives and samplers it names
    (imported, called or passed around), and any ``.charge``/``.spend`` of a budget: a charge
    outside the primitives would escape this file's checks."""
    package = Path(ektelo_pgm.__file__).parent
    names = set(PRIMITIVES) | SAMPLERS
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if relative.parts[0] == "privacy":
            continue
        module = ".".join(("ektelo_pgm",) + relative.with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text())):
            name = (node.id if isinstance(node, ast.Name) else node.name if isinstance(node, ast.alias)
                    else node.attr if isinstance(node, ast.Attribute) else None)
            if name in names or (isinstance(node, ast.Attribute) and name in ("charge", "spend")):
                found.setdefault(module, set()).add(name)
    return found


def test_every_module_that_draws_noise_is_listed():
    assert uses_in_package() == {module: set(primitives) for module, primitives in SITES.items()}


@pytest.fixture
def spied(monkeypatch):
    """Replace every listed primitive by a spy; returns the list of calls it records as
    ``(module, primitive, label, sensitivity)``."""
    calls = []

    def spy(module, primitive, real):
        def draw(values, sensitivity, parameter, *args, **kwargs):
            calls.append((module, primitive, kwargs.get("label"), float(sensitivity)))
            return real(values, 1.0, parameter, *args, **kwargs)
        return draw

    for module, primitives in SITES.items():
        where = importlib.import_module(module)
        for primitive in primitives:
            monkeypatch.setattr(where, primitive, spy(module, primitive, getattr(where, primitive)))
    return calls


WORKLOAD = kway_marginals(DOMAIN, 2)
N = len(toy())
MEASURE, SELECT = "ektelo_pgm.operators.measure", "ektelo_pgm.operators.select"
FRAMEWORK, COLUMNS, SCHEMA = "ektelo_pgm.mechanisms.framework", "ektelo_pgm.columns", "ektelo_pgm.schema.histogram"


def _table(n=400, seed=0, decimals=0):
    """Incomes (rounded to ``decimals``: -3 for values each many records hold) and jobs."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"income": np.round(rng.lognormal(10.0, 0.5, n), decimals).astype(int),
                         "job": rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])})


def _gem(data, budget):
    pytest.importorskip("torch", exc_type=ImportError)  # a torch that fails to load skips too
    from ektelo_pgm.mechanisms import GEM

    return GEM(WORKLOAD, rounds=2, hidden=(16, 16), embedding=8, batch=12, max_steps=5, total=N).run(data, budget, 0)


#: name -> (notion of the budget, its total, run(data, budget), the (module, primitive) reached)
CASES = {
    "Laplace measurement": ("pure", 1.0, lambda data, b: Laplace(0.5).measure(data, [Query(("a", "b")), Query(("c",))], b, 0),
                            {(MEASURE, "laplace")}),
    "Gaussian measurement": ("zcdp", 1.0, lambda data, b: Gaussian(0.5).measure(data, [Query(("b", "c"))], b, 0),
                             {(MEASURE, "gaussian")}),
    "WorstApproximated": ("pure", 1.0, lambda data, b: WorstApproximated(WORKLOAD, per_query=True, k=2).select(
        data, FactoredEstimate.uniform(data.domain, N), b, 0.5, np.random.default_rng(0)), {(SELECT, "exponential")}),
    "MST": ("zcdp", 1.0, lambda data, b: MST(iters=20).run(data, b, 0),
            {("ektelo_pgm.mechanisms.mst", "exponential"), (MEASURE, "gaussian")}),
    "AIM": ("zcdp", 1.0, lambda data, b: AIM(WORKLOAD, rounds=4, iters=20).run(data, b, 0),
            {("ektelo_pgm.mechanisms.aim", "exponential"), (MEASURE, "gaussian")}),
    "MWEM": ("pure", 1.0, lambda data, b: MWEM(WORKLOAD, rounds=3, total=N).run(data, b, 0),
             {(SELECT, "exponential"), (MEASURE, "laplace")}),
    "PEP": ("zcdp", 1.0, lambda data, b: PEP(WORKLOAD, rounds=2, k=2, total=N).run(data, b, 0),
            {(FRAMEWORK, "exponential"), (MEASURE, "gaussian")}),
    "PMW, permute-and-flip": ("zcdp", 1.0, lambda data, b: PMW(WORKLOAD, rounds=2, selection="permute_and_flip")
                              .run(data, b, 0), {(FRAMEWORK, "permute_and_flip"), (MEASURE, "gaussian")}),
    "GEM (needs torch)": ("zcdp", 1.0, _gem, {(FRAMEWORK, "exponential"), (MEASURE, "gaussian")}),
    "HDMM": ("pure", 1.0, lambda data, b: HDMM(WORKLOAD).run(data, b, 0), {(MEASURE, "laplace")}),
    "PrivateSGD": ("zcdp", 1.0, lambda data, b: PrivateSGD([("a", "b"), ("b", "c")], iters=3).fit(data, b, 0),
                   {("ektelo_pgm.learning.learners", "gaussian")}),
    "CGM learner": ("pure", 1.0, lambda data, b: CGMEM([("a", "b"), ("b", "c")], iters=2).fit(data, b, 0),
                    {(MEASURE, "laplace")}),
    "TableEncoder private fit": ("pure", 1.0, lambda _, b: TableEncoder(
        bins=4, binning="quantile", bounds={"income": (0, 100_000)}, categories={"job": ["a", "b", "c", "z"]})
        .fit(_table(), budget=b, rng=0, threshold=20), {(COLUMNS, "laplace"), (COLUMNS, "exponential")}),
    "schema.infer, zCDP": ("zcdp", 1e4, lambda _, b: infer(_table(), b, None, 1e-9, rng=0), {(SCHEMA, "gaussian")}),
    "schema.infer, pure": ("pure", 1e4, lambda _, b: infer(_table(), b, None, 1e-9, rng=0), {(SCHEMA, "laplace")}),
    "schema.infer, zCDP, values many hold": ("zcdp", 1e4, lambda _, b: infer(_table(decimals=-3), b, None, 1e-9,
                                                                                rng=0), {(SCHEMA, "gaussian")}),
    "schema.infer, pure, values many hold": ("pure", 1e4, lambda _, b: infer(_table(decimals=-3), b, None, 1e-9,
                                                                                rng=0), {(SCHEMA, "laplace")}),
}


def test_the_cases_reach_every_listed_site():
    reached = set().union(*(sites for *_, sites in CASES.values()))
    assert reached == {(m, p) for m, ps in SITES.items() for p, factor in ps.items() if factor != ONLY_SUBSTITUTE}


@pytest.mark.parametrize("case", list(CASES))
def test_every_sensitivity_goes_through_the_budgets_relation(case, spied):
    notion, total, run, sites = CASES[case]
    runs = {}
    for neighbours in (ADD_REMOVE, SUBSTITUTE):
        spied.clear()
        run(toy(), Budget(total, notion, neighbours))
        runs[neighbours] = list(spied)
    add_remove, substitute = runs[ADD_REMOVE], runs[SUBSTITUTE]
    assert {(m, p) for m, p, _, _ in add_remove} == sites
    assert [c[:3] for c in substitute] == [c[:3] for c in add_remove]  # the same calls, in the same order
    for (module, primitive, label, one), (_, _, _, other) in zip(add_remove, substitute):
        assert other == SITES[module][primitive] * one, f"{module}.{primitive} ({label}): {one} -> {other}"


#: Cases whose values one record each holds: under Person(K) their release threshold (K + t) keeps
#: fewer values, so the run takes another path; the cases of values many hold cover the schema.
ONE_RECORD_VALUES = ("schema.infer, zCDP", "schema.infer, pure")


@pytest.mark.parametrize("case", [c for c in CASES if c not in ONE_RECORD_VALUES])
def test_every_sensitivity_scales_by_the_rows_of_one_person(case, spied):
    """Under Person(K) each call's sensitivity is K times its add/remove one (KWorst's scores
    included), at every site, in the same calls."""
    notion, total, run, sites = CASES[case]
    runs = {}
    for neighbours in (ADD_REMOVE, Person(3)):
        spied.clear()
        run(toy(), Budget(total, notion, neighbours))
        runs[neighbours] = list(spied)
    add_remove, person = runs[ADD_REMOVE], runs[Person(3)]
    assert {(m, p) for m, p, _, _ in add_remove} == sites
    assert [c[:3] for c in person] == [c[:3] for c in add_remove]
    for (module, primitive, label, one), (_, _, _, other) in zip(add_remove, person):
        assert other == 3 * one, f"{module}.{primitive} ({label}): {one} -> {other}"


def _one_person_apart(data: Dataset, rows: np.ndarray) -> Dataset:
    """``data`` with one more person, whose records are ``rows``."""
    return Dataset(np.concatenate([data.records, rows]), data.domain)


@pytest.mark.parametrize("k", [1, 3, 7])
def test_brute_force_changes_one_person_apart_match_the_budgets_sensitivity(k):
    """Every table one person of at most k rows apart from a small one (the person's rows all in one
    cell, or spread at random): each marginal's L1 and L2 change and KWorst's score change is at
    most what Budget(Person(k)) gives from the per-record sensitivities (1 for a marginal in both
    norms, SCORE_SENSITIVITY), and reaches it when the rows share a cell."""
    budget, data = Budget.zcdp(1.0, neighbours=Person(k)), toy()
    rng, estimate = np.random.default_rng(k), FactoredEstimate.uniform(DOMAIN, N)
    worst = {1: 0.0, 2: 0.0, "score": 0.0}
    for trial in range(40):
        rows = rng.integers(0, DOMAIN.shape, size=(int(rng.integers(1, k + 1)), len(DOMAIN)))
        if trial % 2:
            rows = np.repeat(rows[:1], k, axis=0)  # all k rows in one cell
        other = _one_person_apart(data, rows)
        for attrs in WORKLOAD.cliques:
            change = (other.marginal(attrs) - data.marginal(attrs)).ravel()
            worst[1] = max(worst[1], np.abs(change).sum())
            worst[2] = max(worst[2], np.linalg.norm(change))
            fitted = estimate.project(attrs).ravel()
            worst["score"] = max(worst["score"], abs(np.abs(other.marginal(attrs).ravel() - fitted).max()
                                                     - np.abs(data.marginal(attrs).ravel() - fitted).max()))
    assert worst[1] == worst[2] == budget.sensitivity(1.0) == k
    assert worst["score"] <= SCORE_SENSITIVITY * budget.max_rows


def test_the_score_sensitivity_of_kworst_holds_under_substitution():
    """KWorst's documented value: substituting a record moves each cell count by at most 1."""
    data = toy()
    records = data.records.copy()
    records[0] = [1 - records[0, 0], (records[0, 1] + 1) % 3, (records[0, 2] + 1) % 4]
    other = Dataset(records, DOMAIN)
    for attrs in WORKLOAD.cliques:
        assert np.abs(data.marginal(attrs) - other.marginal(attrs)).max() <= SCORE_SENSITIVITY


BINARY = Domain(["x", "y", "z"], [2, 2, 2])


def _binary(n=300, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(2, size=n)
    return Dataset(np.stack([x, x ^ (rng.random(n) < 0.2), rng.integers(2, size=n)], axis=1), BINARY)


@pytest.mark.parametrize("neighbours", [ADD_REMOVE, Person(2)])
def test_privbayes_and_dualquery_refuse_add_remove_budgets_before_charging(spied, neighbours):
    for run, budget in ((lambda b: PrivBayes().run(_binary(), b, 0), Budget.pure(1.0, neighbours)),
                        (lambda b: DualQuery(WORKLOAD, rounds=3).run(toy(), b, 0), Budget.pure(1.0, neighbours))):
        with pytest.raises(ValueError, match="substitute"):
            run(budget)
        assert budget.spent == 0 and not spied


def test_privbayes_uses_its_substitute_sensitivities(spied):
    """Zhang et al. 2017, Lemma 4.1 (every attribute binary here) for the structure; the measured
    marginals at twice their add/remove L1 sensitivity (one per marginal)."""
    data = _binary()
    result = PrivBayes().run(data, Budget.pure(1.0, neighbours=SUBSTITUTE), 0)
    structure = [s for m, _, _, s in spied if m == "ektelo_pgm.mechanisms.privbayes"]
    assert structure == [mutual_information_sensitivity(len(data), binary=True)] * (len(BINARY) - 1)
    assert [s for m, _, _, s in spied if m == MEASURE] == [2.0 * len(result.queries)]


def test_dualquery_uses_its_substitute_sensitivities(spied):
    """Round t's scores move by (t-1)/n when one of the n records is substituted (Gaboardi et al.
    2014; counting queries with entries in [0, 1])."""
    data = toy()
    DualQuery(WORKLOAD, rounds=4, samples=3).run(data, Budget.pure(1.0, neighbours=SUBSTITUTE), 0)
    assert len(spied) == 3 * 3
    for _, _, label, sensitivity in spied:
        t = int(re.match(r"DualQuery round (\d+) sample", label).group(1))
        assert sensitivity == (t - 1) / len(data)
