from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.fail(f"shared data directory {DATA} is missing")
    return DATA


def dense_marginal(domain, attrs):
    """Dense marginal matrix by visiting every cell (rows in C order over attrs as given)."""
    out = np.zeros((domain.size(attrs), domain.size()))
    axes = [domain.attrs.index(a) for a in attrs]
    shape = [domain[a] for a in attrs]
    for flat, cell in enumerate(np.ndindex(*domain.shape)):
        out[np.ravel_multi_index([cell[i] for i in axes], shape) if attrs else 0, flat] = 1
    return out
