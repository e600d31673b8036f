"""Noisy measurements of adult shared by the reconstruction benchmarks (convergence.py,
appgm_large.py): the same seeds give the same measurements in each."""
from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np

from ektelo_pgm.dataset import Dataset
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.operators.measure import Gaussian
from ektelo_pgm.operators.select import HDMMMarginals
from ektelo_pgm.privacy.budget import Budget

# three 3-way marginals in a cycle: their saturated region graph is not a junction tree
CYCLE = [("age", "education", "sex"), ("sex", "race", "income>50K"), ("income>50K", "hours-per-week", "age")]


def random_cliques(domain, sizes, rng):
    return [tuple(domain.attrs[i] for i in sorted(rng.choice(len(domain), size=k, replace=False))) for k in sizes]


def noisy_marginals(data, cliques, stds, rng):
    out = []
    for clique, std in zip(cliques, stds):
        marginal = data.marginal(clique).ravel()
        out.append(Measurement(clique, marginal + rng.normal(0.0, std, marginal.size), std))
    return out


def hdmm_strategy(data, workload, rng):
    """HDMM's Gaussian marginal strategy for ``workload``, measured at rho = 1."""
    return Gaussian(1.0).measure(data, HDMMMarginals(workload, noise="gaussian").select(data.domain),
                                 Budget.zcdp(1.0), rng=rng)


def adult_cases(data_dir: Path):
    """The convergence benchmark's cases (b)-(d), whose cliques form junction trees:
    ``{name: (domain, measurements, records)}``."""
    data = Dataset.load(data_dir / "adult.csv", data_dir / "adult-domain.json")
    domain, n = data.domain, float(len(data.records))
    rng = np.random.default_rng(0)
    ones = [(a,) for a in domain.attrs]
    cases = {"adult": noisy_marginals(data, ones + random_cliques(domain, [3] * 3, rng), [10.0] * 18, rng)}
    cases["hdmm"] = hdmm_strategy(data, random_cliques(domain, [3] * 4, np.random.default_rng(1)), 2)
    rounds = random_cliques(domain, [2, 3, 2, 3, 2, 3], np.random.default_rng(3))
    stds = [100.0] * len(ones) + [80.0 / 2**r for r in range(len(rounds))]
    cases["aim"] = noisy_marginals(data, ones + rounds, stds, np.random.default_rng(4))
    return {name: (domain, ms, n) for name, ms in cases.items()}


def loopy_cases(data_dir: Path):
    """Measurements whose saturated region graphs are loopy: every 1-way marginal and the
    :data:`CYCLE` at std 10, AIM-like (1-way at std 100, the triples at 80, 40, 20) and by HDMM's
    strategy for the triples; all 105 2-way marginals at std 20.  Same form as :func:`adult_cases`."""
    data = Dataset.load(data_dir / "adult.csv", data_dir / "adult-domain.json")
    domain, n = data.domain, float(len(data.records))
    ones = [(a,) for a in domain.attrs]
    pairs = list(combinations(domain.attrs, 2))
    cases = {
        "cycle, std 10": noisy_marginals(data, ones + CYCLE, [10.0] * 18, np.random.default_rng(0)),
        "cycle, AIM-like": noisy_marginals(data, ones + CYCLE, [100.0] * 15 + [80.0, 40.0, 20.0],
                                           np.random.default_rng(4)),
        "cycle, HDMM strategy": hdmm_strategy(data, CYCLE, 2),
        "all 2-way, std 20": noisy_marginals(data, pairs, [20.0] * len(pairs), np.random.default_rng(5)),
    }
    return {name: (domain, ms, n) for name, ms in cases.items()}
