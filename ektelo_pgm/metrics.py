"""Error metrics between a true source and an estimated one.

Each function takes a workload (a :class:`~ektelo_pgm.workload.Workload` or anything
``Workload`` accepts, e.g. a list of attribute tuples), the true source and the
estimated source; a source is a Dataset or an Estimate (counts).
"""
from __future__ import annotations

import numpy as np

from .errors import InputError
from .workload import as_workload, counts


def _marginal_pairs(workload, truth, estimate):
    """(true, estimated) raveled marginal counts on each distinct clique of the workload."""
    workload = as_workload(workload)
    for domain in (truth.domain, estimate.domain):
        workload.check(domain)
    return [(counts(truth, c).ravel(), counts(estimate, c).ravel()) for c in workload.cliques]


def workload_error(workload, truth, estimate) -> float:
    """The workload error of McKenna et al. 2019, sec. 5.1 (unitless):

    ``1/|C| sum_C ||W_C mu_C - W_C mu_hat_C||_1 / (2 ||W_C mu_C||_1)``, one term per
    entry of the workload; it is the total variation distance when every ``W_C`` is
    the identity and the totals agree.
    """
    workload = as_workload(workload)
    true_answers = workload.answer(truth)
    estimated = workload.answer(estimate)
    terms = []
    for entry, y, y_hat in zip(workload, true_answers, estimated):
        scale = np.abs(y).sum()
        if scale == 0:
            raise InputError(f"workload error: the true answers on {list(entry.attrs)} are all zero")
        terms.append(np.abs(y - y_hat).sum() / (2.0 * scale))
    return float(np.mean(terms))


def total_variation(workload, truth, estimate) -> float:
    """Mean over the workload's distinct cliques of the total variation distance
    ``||p_C - p_hat_C||_1 / 2`` between the marginals, each normalised to sum to 1
    (probabilities; negative estimated counts are kept as they are)."""
    out = []
    for mu, mu_hat in _marginal_pairs(workload, truth, estimate):
        if mu.sum() <= 0 or mu_hat.sum() <= 0:
            raise InputError("total variation: a marginal has no positive total to normalise by")
        out.append(0.5 * np.abs(mu / mu.sum() - mu_hat / mu_hat.sum()).sum())
    return float(np.mean(out))


def average_l1_error(workload, truth, estimate) -> float:
    """Mean over the workload's distinct cliques of ``||mu_C - mu_hat_C||_1 / N``, with
    ``N`` the true record count (a fraction of the records)."""
    out = []
    for mu, mu_hat in _marginal_pairs(workload, truth, estimate):
        records = mu.sum()
        if records <= 0:
            raise InputError("average L1 error: the true source has no records")
        out.append(np.abs(mu - mu_hat).sum() / records)
    return float(np.mean(out))


def max_error(workload, truth, estimate) -> float:
    """Largest absolute error (counts) over all weighted workload answers."""
    workload = as_workload(workload)
    pairs = zip(workload.answer(truth), workload.answer(estimate))
    return float(max(np.abs(y - y_hat).max() for y, y_hat in pairs))
