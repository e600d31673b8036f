"""Exact samplers on the integers: Bernoulli, discrete Laplace, discrete Gaussian.

Every probability is a ratio of Python integers and every draw compares
uniform random 64-bit words with exact integer arithmetic, so no output
depends on floating-point rounding (the flaw Mironov 2012 exploits in
textbook Laplace noise).  The algorithms are those of Canonne, Kamath and
Steinke, "The discrete Gaussian for differential privacy" (NeurIPS 2020),
sec. 5: Algorithm 1 (Bernoulli(exp(-gamma))), Algorithm 2 (discrete
Laplace) and Algorithm 3 (discrete Gaussian), run on whole arrays at once:
each round draws for every element still rejected.

Randomness comes from a :class:`Source`: a ``numpy.random.Generator``
(reproducible from a seed) or, with ``secure=True``, the operating system's
cryptographically secure generator (``os.urandom``, as ``secrets`` uses).
"""
from __future__ import annotations

import math
import secrets
from fractions import Fraction

import numpy as np

from ..errors import InputError

_WORD = 64
_INT64 = 2 ** 63


class Source:
    """Uniform random integers, from a numpy Generator or from the OS (``secure=True``)."""

    def __init__(self, rng=None, secure: bool = False):
        self.secure = bool(secure)
        self.rng = None if self.secure else np.random.default_rng(rng)

    def words(self, n: int) -> np.ndarray:
        """``n`` independent uniform 64-bit words (uint64)."""
        if self.secure:
            return np.frombuffer(secrets.token_bytes(8 * n), dtype=np.uint64).copy()
        return self.rng.integers(0, 2 ** 64 - 1, size=n, dtype=np.uint64, endpoint=True)

    def permutation(self, n: int) -> np.ndarray:
        """A uniformly random permutation of ``range(n)`` (int64): numpy's shuffle, or a
        Fisher-Yates shuffle on ``secrets.randbelow`` (exact bounded integers either way)."""
        if not self.secure:
            return self.rng.permutation(n)
        order = np.arange(n)
        for i in range(n - 1, 0, -1):
            j = secrets.randbelow(i + 1)
            order[i], order[j] = order[j], order[i]
        return order

    def below(self, n: int, high: int) -> np.ndarray:
        """``n`` independent uniform integers in ``[0, high)`` (``high`` a positive int):
        int64 when ``high <= 2**63``, else Python ints in an object array."""
        high = int(high)
        if high < 1:
            raise InputError(f"below: high must be positive, got {high}")
        if high <= _INT64 and not self.secure:
            return self.rng.integers(0, high, size=n, dtype=np.int64)
        chunks = -(-high.bit_length() // _WORD)
        span = 2 ** (_WORD * chunks)
        limit = span - span % high  # accept words below a multiple of high: exactly uniform
        out = np.empty(n, dtype=object)
        todo = np.arange(n)
        while todo.size:
            words = self.words(todo.size * chunks).reshape(todo.size, chunks)
            value = np.zeros(todo.size, dtype=object)
            for c in range(chunks):
                value = (value << _WORD) + words[:, c].astype(object)
            ok = value < limit
            out[todo[ok]] = value[ok] % high
            todo = todo[~ok]
        return out.astype(np.int64) if high <= _INT64 else out


_SMALL = 2 ** 62  # int64 arithmetic below this cannot overflow in the sums and products used here


def _ints(x, n: int) -> np.ndarray:
    """``x`` (an int or an array of ints) as ``n`` integers: int64 when every one is below
    ``2**62`` in absolute value, else Python ints in an object array."""
    arr = np.asarray(x)
    if arr.dtype != object and arr.dtype.kind not in "iu":
        raise TypeError(f"expected integers, got {arr.dtype}")
    arr = np.broadcast_to(arr, (n,))
    if arr.dtype != object:
        if n and np.abs(arr).max() >= _SMALL:
            return np.array([int(v) for v in arr], dtype=object)
        return arr.astype(np.int64)
    if n == 0 or -_SMALL < min(arr) and max(arr) < _SMALL:
        return arr.astype(np.int64)
    return np.array(arr, dtype=object)


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a * b`` elementwise, exactly (int64 when it cannot overflow, else Python ints)."""
    if a.dtype != object and b.dtype != object and a.size:
        if float(np.abs(a).max()) * float(np.abs(b).max()) < _SMALL:
            return a * b
    return a.astype(object) * b.astype(object)


def bernoulli(source: Source, num, den, n: int | None = None) -> np.ndarray:
    """Independent Bernoulli(``num / den``) draws (bool array), exactly.

    ``num`` and ``den`` are integers or integer arrays with ``0 <= num <= den``.  With a
    numpy Generator and ``den < 2**62``, ``U < num`` for ``U`` uniform on ``{0..den-1}``
    (numpy's bounded integers are exact); otherwise a uniform real ``U`` in [0, 1) is
    compared with ``num/den`` one base-2^64 digit at a time: the first differing digit
    decides."""
    if n is None:
        n = max(np.size(num), np.size(den))
    num, den = _ints(num, n), _ints(den, n)
    if (den <= 0).any() or (num < 0).any() or (num > den).any():
        raise InputError("bernoulli: need 0 <= num <= den and den > 0")
    return _bernoulli(source, num, den)


def _bernoulli(source: Source, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """:func:`bernoulli` on checked arrays of equal length (int64 or object)."""
    if not source.secure and den.dtype != object:
        return source.rng.integers(0, den, dtype=np.int64) < num
    num, den = num.astype(object), den.astype(object)
    out = np.asarray(num == den, dtype=bool)
    todo = np.flatnonzero((num > 0) & ~out)
    num, den = num[todo], den[todo]
    while todo.size:
        shifted = num << _WORD
        digit = shifted // den
        words = source.words(todo.size)
        digits = digit.astype(np.uint64)
        out[todo[words < digits]] = True
        tie = words == digits
        num = (shifted - digit * den)[tie]
        den = den[tie]
        todo = todo[tie]
        more = num > 0
        todo, num, den = todo[more], num[more], den[more]
    return out


def bernoulli_exp(source: Source, num, den, n: int | None = None) -> np.ndarray:
    """Independent Bernoulli(``exp(-num/den)``) draws for integers ``num >= 0``, ``den > 0``
    (CKS 2020, Algorithm 1): ``exp(-1)`` once per whole unit of ``num/den``, then the
    fractional part by the alternating series trick."""
    if n is None:
        n = max(np.size(num), np.size(den))
    num, den = _ints(num, n), _ints(den, n)
    if (den <= 0).any() or (num < 0).any():
        raise InputError("bernoulli_exp: need num >= 0 and den > 0")
    return _bernoulli_exp(source, num, den)


def _bernoulli_exp(source: Source, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """:func:`bernoulli_exp` on checked arrays of equal length (int64 or object)."""
    whole = num // den
    frac = num - whole * den
    alive = _bernoulli_exp_whole(source, whole)
    idx = np.flatnonzero(alive)
    if idx.size:
        alive[idx] = _bernoulli_exp_unit(source, frac[idx], den[idx])
    return alive


def _bernoulli_exp_whole(source: Source, whole: np.ndarray) -> np.ndarray:
    """Bernoulli(exp(-w)) for integers ``w >= 0``: ``w`` Bernoulli(exp(-1)) trials, stopping at
    the first failure."""
    alive = np.ones(whole.size, dtype=bool)
    left = whole.copy()
    active = np.flatnonzero(left > 0)
    ones = np.ones(whole.size, dtype=np.int64)
    while active.size:
        alive[active] = _bernoulli_exp_unit(source, ones[:active.size], ones[:active.size])
        left[active] -= 1
        active = active[alive[active] & (left[active] > 0)]
    return alive


def _bernoulli_exp_unit(source: Source, num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Bernoulli(exp(-g)) for ``g = num/den`` in [0, 1]: draw Bernoulli(g/k) for
    k = 1, 2, ... until the first failure; succeed when that k is odd."""
    k = np.ones(num.size, dtype=np.int64)
    running = np.arange(num.size)
    while running.size:
        a = _bernoulli(source, num[running], _product(den[running], k[running]))
        k[running[a]] += 1
        running = running[a]
    return k % 2 == 1


def geometric_exp(source: Source, n: int) -> np.ndarray:
    """Number of successes before the first failure of Bernoulli(exp(-1)) trials (int64)."""
    count = np.zeros(n, dtype=np.int64)
    running = np.arange(n)
    ones = np.ones(n, dtype=np.int64)
    while running.size:
        hit = _bernoulli_exp_unit(source, ones[:running.size], ones[:running.size])
        count[running[hit]] += 1
        running = running[hit]
    return count


def _check_weights(whole, den: int, where: str) -> np.ndarray:
    whole = np.asarray(whole)
    if whole.ndim != 1 or whole.size == 0 or whole.dtype.kind != "i" or (whole < 0).any() or whole.min() != 0 \
            or den <= 0:
        raise InputError(f"{where}: need int64 whole parts >= 0 including a 0, and den > 0")
    return whole


def weighted_index(source: Source, whole: np.ndarray, rest, den: int) -> int:
    """An index ``i`` drawn with probability proportional to ``exp(-num[i] / den)`` for integers
    ``num >= 0`` with at least one 0 and ``den > 0``, exactly: propose indices uniformly, accept
    with probability ``exp(-num[i]/den)``, return the first accepted (rejection sampling; at
    least one proposal in ``len(whole)`` is accepted on average).

    ``whole`` holds every ``num[i] // den`` (int64, at most ``num[i] // den``: a smaller value
    only costs time) and ``rest(idx)`` gives ``num[idx] - whole[idx] * den`` exactly for an array
    of indices.  The whole parts are decided first, in int64, so the exact integers are needed
    only for the few proposals that survive them (``exp(-whole)``)."""
    whole = _check_weights(whole, den, "weighted_index")
    n = whole.size
    while True:
        proposals = source.below(n, n)
        accepted = np.flatnonzero(_accept(source, whole, rest, den, proposals))
        if accepted.size:
            return int(proposals[accepted[0]])


def permuted_index(source: Source, whole: np.ndarray, rest, den: int) -> int:
    """Permute-and-flip on exact weights (McKenna and Sheldon 2020, Algorithm 1): the indices in
    a uniformly random order, each kept with probability ``exp(-num[i] / den)``; returns the
    first kept (an index with ``num`` 0 is always kept).  ``whole``, ``rest`` and ``den`` as in
    :func:`weighted_index`; every coin is drawn at once, independently, which gives the same
    distribution as flipping them one by one in order."""
    whole = _check_weights(whole, den, "permuted_index")
    order = source.permutation(whole.size)
    return int(order[np.argmax(_accept(source, whole, rest, den, order))])


def _accept(source: Source, whole: np.ndarray, rest, den: int, idx: np.ndarray) -> np.ndarray:
    """Independent Bernoulli(``exp(-num[i] / den)``) draws for the indices ``idx`` (bool array):
    the whole parts first, in int64, then the exact rest for the survivors."""
    alive = _bernoulli_exp_whole(source, whole[idx])
    survivors = np.flatnonzero(alive)
    if survivors.size:
        alive[survivors] = _bernoulli_exp(source, _ints(rest(idx[survivors]), survivors.size),
                                          _ints(den, survivors.size))
    return alive


def _as_ratio(x, name: str) -> Fraction:
    value = x if isinstance(x, Fraction) else Fraction(x)
    if value <= 0:
        raise InputError(f"{name} must be positive, got {float(value)!r}")
    return value


def discrete_laplace(source: Source, scale, n: int) -> np.ndarray:
    """``n`` draws from the discrete Laplace distribution on the integers with
    ``P[x] proportional to exp(-|x| / scale)`` (CKS 2020, Algorithm 2); ``scale``
    is a positive rational (a Fraction, int or float, taken exactly).
    Returns int64, or Python ints (object) if a draw leaves the int64 range."""
    scale = _as_ratio(scale, "scale")
    t, s = scale.numerator, scale.denominator  # scale = t / s
    out = np.empty(n, dtype=object)
    todo = np.arange(n)
    while todo.size:
        m = todo.size
        u = _ints(source.below(m, t), m)
        keep = _bernoulli_exp(source, u, _ints(t, m))
        u = u[keep]
        v = geometric_exp(source, u.size)
        y = _ints((u.astype(object) + _product(v, _ints(t, v.size)).astype(object)) // s, u.size) \
            if u.dtype == object or t >= _SMALL or s >= _SMALL or float(t) * (v.max(initial=0) + 1) >= _SMALL \
            else (u + v * t) // s
        negative = source.below(u.size, 2) == 1
        ok = ~(negative & (y == 0))
        signed = np.where(negative, -y, y)
        done = todo[keep]
        out[done[ok]] = signed[ok]
        todo = np.concatenate([todo[~keep], done[~ok]])
    return _int64_if_fits(out)


def discrete_gaussian(source: Source, sigma2, n: int) -> np.ndarray:
    """``n`` draws from the discrete Gaussian on the integers with
    ``P[x] proportional to exp(-x^2 / (2 sigma2))`` (CKS 2020, Algorithm 3);
    ``sigma2`` (the scale parameter squared) is a positive rational taken exactly.
    Its variance is at most ``sigma2`` (CKS 2020, Corollary 9) and, for ``sigma2 >= 2``, equal
    to it within a relative ``1.2e-15``; see :func:`discrete_gaussian_variance`."""
    sigma2 = _as_ratio(sigma2, "sigma2")
    a, b = sigma2.numerator, sigma2.denominator  # sigma2 = a / b
    t = math.isqrt(a * b) // b + 1  # floor(sigma) + 1
    out = np.empty(n, dtype=object)
    todo = np.arange(n)
    while todo.size:
        y = discrete_laplace(source, t, todo.size).astype(object)
        # accept with probability exp(-(|y| - sigma2/t)^2 / (2 sigma2)) = exp(-num/den)
        num = _ints((np.abs(y) * (t * b) - a) ** 2, todo.size)
        keep = _bernoulli_exp(source, num, _ints(2 * a * t * t * b, todo.size))
        out[todo[keep]] = y[keep]
        todo = todo[~keep]
    return _int64_if_fits(out)


def _int64_if_fits(values: np.ndarray) -> np.ndarray:
    if values.size == 0:
        return values.astype(np.int64)
    if -_INT64 <= min(values) and max(values) < _INT64:
        return values.astype(np.int64)
    return values


def discrete_laplace_variance(scale) -> float:
    """Variance of :func:`discrete_laplace` with this ``scale``: ``2q / (1-q)^2`` with
    ``q = exp(-1/scale)`` (close to ``2 scale^2`` for large scales)."""
    scale = float(_as_ratio(scale, "scale"))
    q = math.exp(-1.0 / scale)
    return 2.0 * q / (-math.expm1(-1.0 / scale)) ** 2


def discrete_gaussian_variance(sigma2) -> float:
    """Variance of :func:`discrete_gaussian` with parameter ``sigma2``: ``sigma2`` itself
    when ``sigma2 >= 2`` (smaller by a relative 1.2e-15 at 2, less above; 2.1e-7 at 1), else
    the series ``sum x^2 exp(-x^2/2sigma2) / sum exp(-x^2/2sigma2)`` summed to convergence."""
    sigma2 = float(_as_ratio(sigma2, "sigma2"))
    if sigma2 >= 2.0:
        return sigma2
    x = np.arange(1, 40)
    w = np.exp(-x * x / (2.0 * sigma2))
    return float(2.0 * (x * x * w).sum() / (1.0 + 2.0 * w.sum()))
