"""Algorithm 1 of McKenna et al. 2019 (sec. 3.2) compiled: entropic mirror descent with Armijo line
search over the marginal polytope, with the MARGINAL-ORACLE (:func:`calibrate_core`) compiled in.

The whole loop runs in one numba call.  Identity (marginal) measurements are scored in compiled
code; the rest of a loss (measurements with other queries, or a callable loss) and the per-iteration
callback are Python functions reached through ``numba.objmode``, registered in :data:`HOOKS` for
the duration of one run.
"""
from __future__ import annotations

import numpy as np
from numba import njit, objmode

from .loss import identity_loss, predicted_decrease, step
from .tree import calibrate_core

ARMIJO = 1e-4  # a step must lower the loss by this fraction of the decrease the gradient predicts,
MIN_DECREASE = 1e-9  # and by more than this fraction of the loss itself
HALVINGS = 25  # trial steps per iteration before the search gives up
GROW_AFTER = 4  # iterations in a row whose first trial was accepted before the step doubles
TINY = float(np.finfo(float).tiny)

HOOKS: dict = {}  # key -> (python loss: (mu, grad) -> value added to the loss and grad, callback: (t, loss))


def _python_loss(key, mu, grad):
    return float(HOOKS[key][0](mu, grad))


def _report(key, t, value):
    HOOKS[key][1](t, value)


@njit(cache=True)
def _loss(mu, grad, index, y, w, l1, key, python):
    value = identity_loss(mu, index, y, w, l1, grad)
    if python:
        with objmode(extra="float64"):
            extra = _python_loss(key, mu, grad)
        value += extra
    return value


@njit(cache=True)
def mirror_descent(theta, total, iters, tol, first, smooth, index, y, w, l1, key, python, report,
                   clique_off, order, parent, child_off, children, sep_off, up_run, up_kept, up_off, up_rows,
                   down_run, down_kept, down_off, down_rows, hosted_off, hosted, p_off, run, kept, row_off, rows,
                   belief, log_norm, up, down, acc, peak, tmp, bits):
    """Algorithm 1 from the log-potentials ``theta`` (flat, parameter cliques; not modified).

    ``theta <- theta - alpha * grad L(mu)``, ``mu = MARGINAL-ORACLE(theta)`` (counts, scaled to
    ``total``).  Each iteration doubles ``alpha`` after :data:`GROW_AFTER` iterations whose first
    trial was accepted, then halves it (at most :data:`HALVINGS` trials) until the loss drops by
    at least :data:`ARMIJO` times the decrease the gradient predicts and by more than
    :data:`MIN_DECREASE` of itself.  ``alpha`` starts at ``first``.  When no trial qualifies, a
    ``smooth`` loss has converged and the run stops; otherwise a subgradient step of
    ``first / sqrt(t)`` is taken.  Stops after ``iters`` iterations or when the relative loss
    change is at most ``tol``.
    Loss: identity measurements (``index``, ``y``, ``w``: see :func:`identity_loss`, L1 if
    ``l1``) plus, if ``python``, ``HOOKS[key][0]``; if ``report``, ``HOOKS[key][1](t, loss)``
    runs after every iteration.  The remaining arguments are those of :func:`calibrate_core`.
    Returns ``(theta, loss, iterations)`` of the best iterate (the last one for a smooth loss).
    """
    n, m = theta.shape[0], p_off[-1]
    thetas = np.empty((2, n))
    thetas[0] = theta
    mus = np.empty((2, m))
    grads = np.empty((2, m))
    cur = 0
    calibrate_core(thetas[0], total, clique_off, order, parent, child_off, children, sep_off, up_run, up_kept, up_off,
              up_rows, down_run, down_kept, down_off, down_rows, hosted_off, hosted, p_off, run, kept, row_off, rows,
              belief, log_norm, mus[0], up, down, acc, peak, tmp, bits)
    value = _loss(mus[0], grads[0], index, y, w, l1, key, python)
    best = thetas[0].copy()
    best_value = value
    alpha = first
    streak = GROW_AFTER
    done = 0
    for t in range(1, iters + 1):
        nxt = 1 - cur
        if streak >= GROW_AFTER:
            alpha *= 2.0
            streak = 0
        accepted = False
        for trial in range(HALVINGS):
            step(thetas[cur], alpha, grads[cur], thetas[nxt])
            calibrate_core(thetas[nxt], total, clique_off, order, parent, child_off, children, sep_off, up_run, up_kept,
                      up_off, up_rows, down_run, down_kept, down_off, down_rows, hosted_off, hosted, p_off, run, kept,
                      row_off, rows, belief, log_norm, mus[nxt], up, down, acc, peak, tmp, bits)
            new_value = _loss(mus[nxt], grads[nxt], index, y, w, l1, key, python)
            decrease = value - new_value
            if (decrease >= ARMIJO * predicted_decrease(grads[cur], mus[cur], mus[nxt])
                    and decrease > MIN_DECREASE * value):
                streak = streak + 1 if trial == 0 else 0
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            if smooth:
                break  # no step decreases a smooth loss: converged
            alpha = first / np.sqrt(t)  # a kink: a diminishing subgradient step instead
            step(thetas[cur], alpha, grads[cur], thetas[nxt])
            calibrate_core(thetas[nxt], total, clique_off, order, parent, child_off, children, sep_off, up_run, up_kept,
                      up_off, up_rows, down_run, down_kept, down_off, down_rows, hosted_off, hosted, p_off, run, kept,
                      row_off, rows, belief, log_norm, mus[nxt], up, down, acc, peak, tmp, bits)
            new_value = _loss(mus[nxt], grads[nxt], index, y, w, l1, key, python)
        previous = value
        cur, value = nxt, new_value
        done = t
        if not smooth and value < best_value:  # smooth losses only ever go down: no copies
            best_value = value
            best[:] = thetas[cur]
        if report:
            with objmode():
                _report(key, t, value)
        if abs(previous - value) <= tol * max(abs(previous), TINY):
            break
    if not smooth and best_value < value:  # a non-smooth loss went up since its best iterate
        return best, best_value, done
    return thetas[cur].copy(), value, done
