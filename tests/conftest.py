import numpy as np
import pytest

from ektelo_pgm import Dataset, Domain, sample_data


@pytest.fixture(scope="session")
def raw_adult(tmp_path_factory):
    """The path of UCI Adult's raw training file (shipped with the package), written once."""
    path = tmp_path_factory.mktemp("raw") / "adult.data"
    sample_data.write_example("adult", path)
    return path


@pytest.fixture(scope="session")
def raw_adult_test(tmp_path_factory):
    """The path of UCI Adult's raw test file (shipped with the package), written once."""
    path = tmp_path_factory.mktemp("raw") / "adult.test"
    sample_data.write_example("adult-test", path)
    return path


def dense_marginal(domain, attrs):
    """Dense marginal matrix by visiting every cell (rows in C order over attrs as given)."""
    out = np.zeros((domain.size(attrs), domain.size()))
    axes = [domain.attrs.index(a) for a in attrs]
    shape = [domain[a] for a in attrs]
    for flat, cell in enumerate(np.ndindex(*domain.shape)):
        out[np.ravel_multi_index([cell[i] for i in axes], shape) if attrs else 0, flat] = 1
    return out


TOY_DOMAIN = Domain(["a", "b", "c"], [2, 3, 4])


def toy(n=300, seed=0):
    """``n`` records over TOY_DOMAIN with a chain of dependencies a -> b -> c."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = (2 * b + rng.integers(0, 2, n)) % 4
    return Dataset(np.stack([a, b, c], axis=1), TOY_DOMAIN)


CORRELATED_DOMAIN = Domain(["a", "b", "c", "d"], [2, 3, 2, 4])


def correlated(n, seed=0):
    """``n`` records over CORRELATED_DOMAIN: b and d depend on a, c on b."""
    rng = np.random.default_rng(seed)
    a = rng.integers(2, size=n)
    b = (a + rng.integers(2, size=n)) % 3
    c = (b > 0).astype(int) ^ (rng.random(n) < 0.1)
    d = np.minimum(3, a * 2 + rng.integers(2, size=n))
    return Dataset(np.stack([a, b, c, d], axis=1), CORRELATED_DOMAIN)

