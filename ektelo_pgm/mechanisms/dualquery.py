"""DualQuery (Gaboardi, Arias, Hsu, Roth and Wu, ICML 2014) and DualQuery+PGM (McKenna et al.
2019, sec. 4 and supplement C.3: the sampled queries are the measurements, and Private-PGM
maximises their likelihood)."""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..dataset import Dataset
from ..errors import InputError
from ..params import Params
from ..estimate import Estimate, RecordsEstimate
from ..operators.select import workload_queries
from ..pgm.clique_vector import CliqueVector
from ..pgm.factor import Factor
from ..privacy import Budget, exponential
from ..stages import Result


@dataclass
class Transcript:
    """What DualQuery released: per round ``t`` (from 1) the sampled query indices
    ``samples[t-1]`` (into the workload's rows, then their negations), the logit scale
    ``scales[t-1]`` of the round's query distribution ``Q^t(q) ∝ exp(scale * u_t(q))``
    (0 in round 1: uniform), and the best-response record ``records[t-1]``."""

    samples: list[np.ndarray]
    scales: list[float]
    records: np.ndarray


class DualQuery(Params):
    """DualQuery over a workload of counting queries (entries in [0, 1]) and their negations.

    Round ``t`` of ``rounds`` draws ``samples`` queries from ``Q^t(q) ∝ exp(eta_t u_t(q))``
    with ``u_t(q) = sum_{j<t} (q(D)/n - q(x^j))`` (answers as fractions of the ``n`` records,
    ``n`` public: substitute neighbours), then the data player adds the record ``x^t`` maximising the sum of the
    sampled queries (coordinate ascent from ``restarts`` random starts; Gaboardi et al. use an
    integer program).  ``u_t`` has sensitivity ``(t-1)/n``, so each draw is an exponential
    mechanism of epsilon ``2 eta_t (t-1)/n``, charged before drawing: the budget is shared so
    that ``eta_t`` is the same every round (pure epsilon: ``epsilon_t ∝ t-1``; zCDP, e.g. from
    (epsilon, delta) by ``Budget.approx``: ``epsilon_t^2/8 ∝ (t-1)^2``).

    Of the five hyperparameters (``samples``, ``rounds``, ``eta``, and the budget's epsilon and
    delta; supplement C.3) give ``rounds`` (default 100; ``eta_t`` then grows with the budget and
    with ``n``) or ``eta``, the learning rate Gaboardi et al. fix: the rounds are then the most
    whose draws at learning rate ``eta`` fit in the budget (at least 2), and the budget is shared
    among them as above, so the rate ends slightly above ``eta``.  With ``rounds`` fixed at 100,
    adult (n = 48,842) at epsilon 1 and 10 (delta 1e-3) gets ``eta`` 6.6 and 44, where the query
    distribution collapses onto the worst-answered queries and the error rises with epsilon
    (docs/results.md, Figure 1).

    ``estimator=None`` releases the ``rounds`` records scaled to ``n`` (the original);
    ``estimator=PGM(...)`` (DualQuery+PGM) runs a copy of that estimator (from its
    ``get_params()``) whose loss is :meth:`loss`, the negative log-likelihood of the sampled queries (supplement C.3,
    Algorithm 5), over graphical models on the workload's cliques.
    """

    name = "DualQuery"

    def __init__(self, workload, rounds: int | None = None, samples: int = 20, restarts: int = 2, estimator=None,
                 eta: float | None = None):
        if rounds is not None and eta is not None:
            raise InputError("DualQuery: give rounds or eta, not both (the budget decides the other)")
        given = ([] if rounds is None else [(rounds, "rounds")]) + [(samples, "samples"), (restarts, "restarts")]
        for value, what in given:
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InputError(f"DualQuery: {what} must be a positive integer, got {value!r}")
        if rounds is not None and rounds < 2:
            raise InputError("DualQuery: rounds must be at least 2 (round 1 samples uniformly, spending nothing)")
        if eta is not None and not (np.isfinite(eta) and eta > 0):
            raise InputError(f"DualQuery: eta must be a positive learning rate, got {eta!r}")
        if estimator is not None and "loss" not in getattr(estimator, "get_params", dict)():
            raise InputError(f"DualQuery: the estimator must take a loss (as PGM does), got {estimator!r}")
        self.workload, self._queries = workload, workload_queries(workload)
        self.rounds, self.eta, self.samples, self.restarts = rounds, eta, samples, restarts
        self.estimator = estimator

    def rounds_for(self, budget: Budget, n: float) -> int:
        """The rounds of a game on ``n`` records within what remains of ``budget``: ``rounds`` if
        given, else the most (at least 2) whose ``samples`` draws per round at learning rate
        ``eta`` cost no more (round ``t``'s draws have epsilon ``2 eta (t-1) / n``)."""
        if self.eta is None:
            return 100 if self.rounds is None else int(self.rounds)

        def cost(rounds):  # of rounds 2..rounds, summed in closed form
            if budget.notion == "pure":
                return self.samples * self.eta * rounds * (rounds - 1) / n
            return self.samples * self.eta ** 2 * (rounds - 1) * rounds * (2 * rounds - 1) / (12 * n ** 2)

        rounds, remaining = 2, budget.remaining
        while cost(rounds + 1) <= remaining:
            rounds += 1
        return rounds

    # ---- the workload's rows -------------------------------------------------------------------

    def _rows(self, domain):
        """Per workload entry: its attrs, local matrix and the slice of its rows; refuses entries
        outside [0, 1], for which the scores' sensitivity ``(t-1)/n`` would not hold."""
        out, start = [], 0
        for q in self._queries:
            matrix = q.local(domain)
            entries = matrix.sparse().data
            if entries.size and not (entries.min() >= 0 and entries.max() <= 1):
                raise InputError(f"DualQuery answers counting queries with entries in [0, 1]; the query on "
                                 f"{list(q.attrs)} has entries from {entries.min():g} to {entries.max():g}")
            out.append((domain.check(q.attrs), matrix, slice(start, start + matrix.shape[0])))
            start += matrix.shape[0]
        return out, start

    def answers(self, domain, marginal_of) -> np.ndarray:
        """The workload's answers (all rows, in order) given ``marginal_of(attrs)`` (counts)."""
        rows, _ = self._rows(domain)
        return np.concatenate([matrix @ marginal_of(attrs).ravel() for attrs, matrix, _ in rows])

    def _record_answers(self, domain, rows, record) -> np.ndarray:
        out = []
        for attrs, matrix, _ in rows:
            cell = np.zeros(domain.size(attrs))
            cell[np.ravel_multi_index([record[domain.attrs.index(a)] for a in attrs], domain.project(attrs).shape)] = 1
            out.append(matrix @ cell)
        return np.concatenate(out)

    def _best_response(self, domain, rows, m, chosen, rng) -> np.ndarray:
        """A record maximising the sum of the chosen queries (a negation scores 1 - row)."""
        tables = []
        for index in chosen:
            row = index % m
            attrs, matrix, rows_of = next(r for r in rows if r[2].start <= row < r[2].stop)
            unit = np.zeros(matrix.shape[0])
            unit[row - rows_of.start] = 1
            table = (matrix.T @ unit).reshape(domain.project(attrs).shape)
            tables.append(([domain.attrs.index(a) for a in attrs], 1 - table if index >= m else table))
        best, best_value = None, -np.inf
        for _ in range(self.restarts):
            x = np.array([rng.integers(n) for n in domain.shape])
            changed = True
            while changed:
                changed = False
                for axis, size in enumerate(domain.shape):
                    scores = np.zeros(size)
                    for axes, table in tables:
                        if axis in axes:
                            index = tuple(slice(None) if a == axis else x[a] for a in axes)
                            scores += table[index]
                    pick = int(np.argmax(scores))
                    if scores[pick] > scores[x[axis]]:
                        x[axis], changed = pick, True
            value = sum(float(table[tuple(x[a] for a in axes)]) for axes, table in tables)
            if value > best_value:
                best, best_value = x.copy(), value
        return best

    # ---- the game ------------------------------------------------------------------------------

    def play(self, data: Dataset, budget: Budget, rng=None) -> Transcript:
        """The game on ``data`` spending all of ``budget`` (pure epsilon or zCDP, with substitute
        neighbours: ``n`` is public and the scores' sensitivity ``(t-1)/n`` is for them)."""
        if not budget.public_total:
            raise InputError("DualQuery normalises by the public record count: give a budget with "
                             "neighbours='substitute'")
        rng = np.random.default_rng(rng)
        domain, n = data.domain, float(len(data))
        rows, m = self._rows(domain)
        cliques = [attrs for attrs, _, _ in rows]
        y = self.answers(domain, dict(zip(cliques, data.marginals(cliques))).__getitem__) / n
        weights = [t - 1 if budget.notion == "pure" else (t - 1) ** 2 for t in range(1, self.rounds_for(budget, n) + 1)]
        whole = self.samples * sum(weights)
        amounts = [budget.fraction(Fraction(w, whole)) if w else 0.0 for w in weights]
        cumulative = np.zeros(m)
        samples, scales, records = [], [], []
        for t, amount in enumerate(amounts, start=1):
            if t == 1:
                chosen, scale = rng.integers(2 * m, size=self.samples), 0.0
            else:
                epsilon = budget.parameter_for("exponential", amount)
                v = (t - 1) * y - cumulative
                scores = np.concatenate([v, -v])
                scale = epsilon * n / (2 * (t - 1))
                chosen = np.array([exponential(scores, (t - 1) / n, epsilon, rng, budget=budget,
                                               label=f"DualQuery round {t} sample {i + 1}")
                                   for i in range(self.samples)])
            record = self._best_response(domain, rows, m, chosen, rng)
            cumulative += self._record_answers(domain, rows, record)
            samples.append(chosen)
            scales.append(scale)
            records.append(record)
        return Transcript(samples, scales, np.array(records))

    def loss(self, transcript: Transcript, domain, n: float):
        """The negative log-likelihood of the sampled queries as a function of the model's
        marginals (supplement C.3, Algorithm 5): ``f(marginals) -> (value, gradient)`` for
        :class:`~ektelo_pgm.operators.reconstruct.PGM` (counts over ``n`` records)."""
        rows, m = self._rows(domain)
        answers = np.array([self._record_answers(domain, rows, x) for x in transcript.records])
        before = np.vstack([np.zeros(m), np.cumsum(answers, axis=0)[:-1]])  # sum_{j<t} q(x^j)
        t1 = np.arange(len(transcript.records), dtype=np.float64)  # t - 1
        scales = np.array(transcript.scales)
        counts = np.zeros((len(t1), m))
        for t, chosen in enumerate(transcript.samples):
            np.add.at(counts[t], chosen % m, np.where(chosen < m, 1.0, -1.0))
        s = len(transcript.samples[0])

        def f(marginals: CliqueVector):
            hosts = {attrs: next(cl for cl in marginals if set(attrs) <= set(cl)) for attrs, _, _ in rows}
            y = np.concatenate([matrix @ marginals[hosts[attrs]].project(attrs).values.ravel()
                                for attrs, matrix, _ in rows]) / n
            logits = scales[:, None] * (t1[:, None] * y[None, :] - before)  # the positive half, v_t
            top = np.abs(logits).max(axis=1, keepdims=True)
            pos, neg = np.exp(logits - top), np.exp(-logits - top)
            z = (pos + neg).sum(axis=1, keepdims=True)
            value = float(np.sum(s * (np.log(z[:, 0]) + top[:, 0]) - np.sum(counts * logits, axis=1)))
            dlogits = s * (pos - neg) / z - counts
            dy = (scales * t1) @ dlogits / n
            gradient = CliqueVector()
            for attrs, matrix, where in rows:
                g = Factor(marginals[hosts[attrs]].domain.project(attrs),
                           (matrix.T @ dy[where]).reshape(marginals[hosts[attrs]].domain.project(attrs).shape))
                g = g.expand(marginals[hosts[attrs]].domain)
                host = hosts[attrs]
                gradient[host] = gradient[host] + g if host in gradient else g
            return value, gradient

        return f

    def run(self, data: Dataset, budget: Budget, rng=None) -> Result:
        """Run on ``data`` spending all of ``budget``; same ``rng`` seed, same result."""
        start = len(budget.ledger)
        transcript = self.play(data, budget, rng)
        n = float(len(data))
        if self.estimator is None:
            estimate: Estimate = RecordsEstimate(Dataset(transcript.records, data.domain), n)
        else:
            params = {**self.estimator.get_params(), "loss": self.loss(transcript, data.domain, n)}
            likelihood = type(self.estimator)(**params)
            estimate = likelihood.reconstruct(data.domain, [], total=n, cliques=[q.attrs for q in self._queries])
        return Result(estimate, [], list(self._queries), budget.ledger[start:])
