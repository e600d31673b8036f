"""AIM: candidates and weights, the size filter, the quality score and its exponential mechanism,
exact accounting with annealing, seeds and near-noiseless recovery."""
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
pytest.importorskip("hypothesis", reason="property tests need hypothesis: pip install -e '.[test]'")
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ektelo_pgm import Dataset, Domain, sample_data
from ektelo_pgm.errors import InputError
from ektelo_pgm.mechanisms import AIM
from ektelo_pgm.mechanisms.adaptive import State
from ektelo_pgm.mechanisms.aim import (HALF_NORMAL_MEAN, candidate_weights, clique_drift, downward_closure,
                                       drift_bounds, drift_floor, errors, fits, linked, quality, spans)
from ektelo_pgm.measurement import Measurement
from ektelo_pgm.metrics import total_variation
from ektelo_pgm.operators.reconstruct import PGM
from ektelo_pgm.pgm.clique_vector import CliqueVector
from ektelo_pgm.pgm.factor import Factor
from ektelo_pgm.pgm.model import GraphicalModel
from ektelo_pgm.pgm.junction_tree import triangulated_mb
from ektelo_pgm.privacy import Budget, exponential, exponential_probabilities
from ektelo_pgm.workload import Query

DOMAIN = Domain(["a", "b", "c", "d"], [3, 4, 2, 5])


def toy(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.3) * rng.integers(0, 4, n)) % 4
    c = ((a + b) % 2) ^ (rng.random(n) < 0.1)
    d = (a * c + rng.integers(0, 2, n)) % 5
    return Dataset(np.stack([a, b, c, d], axis=1), DOMAIN)


def test_candidates_are_the_downward_closure_weighted_by_shared_attributes():
    assert downward_closure([("a", "b")]) == [("a",), ("b",), ("a", "b")]
    weights = candidate_weights(DOMAIN, [("c", "a", "b"), Query(("b", "c"), weight=2.0)])
    assert weights == {("a",): 1, ("b",): 3, ("c",): 3, ("a", "b"): 4, ("a", "c"): 4, ("b", "c"): 6,
                       ("a", "b", "c"): 7}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(DOMAIN.attrs), min_size=1, max_size=4, unique=True),
                          st.integers(1, 5)), min_size=1, max_size=6))
def test_candidate_weights_equal_their_definition(entries):
    workload = [Query(tuple(attrs), weight=float(w)) for attrs, w in entries]
    weights = candidate_weights(DOMAIN, workload)
    closure = {frozenset(sub) for attrs, _ in entries for k in range(1, len(attrs) + 1)
               for sub in itertools.combinations(attrs, k)}
    assert {frozenset(c) for c in weights} == closure
    for c, w in weights.items():
        assert w == sum(q.weight * len(set(c) & set(q.attrs)) for q in workload)


def test_candidates_inside_the_junction_tree_are_free_and_the_others_are_sized():
    model = PGM(iters=10).reconstruct(DOMAIN, [Measurement(("a", "b"), np.ones(12), 1.0),
                                                Measurement(("c", "d"), np.ones(10), 1.0)])
    candidates = [("a",), ("a", "b"), ("b", "c"), ("a", "b", "d")]
    assert fits(model, candidates, 0.0) == [("a",), ("a", "b")]
    bc = triangulated_mb(DOMAIN, [*model.cliques, ("b", "c")])
    abd = triangulated_mb(DOMAIN, [*model.cliques, ("a", "b", "d")])
    assert bc < abd
    assert fits(model, candidates, bc) == [("a",), ("a", "b"), ("b", "c")]
    assert fits(model, candidates, abd) == candidates


def test_quality_is_the_weighted_error_minus_the_expected_noise_and_selection_follows_it():
    data = toy()
    model = PGM(iters=200).reconstruct(DOMAIN, [Measurement((a,), data.marginal((a,)), 1.0) for a in DOMAIN.attrs])
    weights = candidate_weights(DOMAIN, itertools.combinations(DOMAIN.attrs, 3))
    candidates = list(weights)
    sigma = 30.0
    scores = quality(data.marginal, model, candidates, weights, sigma)
    c = ("a", "b", "d")
    expected = weights[c] * (np.abs(data.marginal(c) - model.project(c)).sum() - math.sqrt(2 / math.pi) * sigma * 60)
    assert scores[candidates.index(c)] == pytest.approx(expected)
    sizes = np.array([DOMAIN.size(c) for c in candidates])
    errors = np.array([np.abs(data.marginal(c) - model.project(c)).sum() for c in candidates])
    np.testing.assert_allclose(scores, [weights[c] for c in candidates] * (errors - HALF_NORMAL_MEAN * sigma * sizes))
    # AIM's choice: the exponential mechanism on these scores with sensitivity max w_c
    epsilon = 0.002
    exact = exponential_probabilities(scores, max(weights.values()), epsilon)
    assert 0.05 < exact.max() < 0.9  # a spread-out case
    rng = np.random.default_rng(99)
    draws = 5000
    observed = np.bincount([exponential(scores, max(weights.values()), epsilon, rng=rng, budget=Budget.zcdp(1.0))
                            for _ in range(draws)],
                           minlength=len(candidates))
    assert np.all(exact * draws >= 5)
    assert stats.chisquare(observed, exact * draws).pvalue > 1e-3


# reused errors, a sampled candidate set and linked triples that do not grow the budget leave the charges exact
SELECTION_OPTIONS = [{}, {"reuse_tolerance": 0.0}, {"reuse_tolerance": 1.0, "max_candidates": 12},
                     {"max_candidates": 12, "linked_only": True}]


@pytest.mark.parametrize("options", SELECTION_OPTIONS)
def test_aim_spends_the_whole_budget_exactly_with_quadrupling_rounds_and_a_replay_charges_the_same(options):
    data, total = toy(), 0.02
    budget = Budget.zcdp(total)
    result = AIM(rounds=12, iters=100, **options).run(data, budget, rng=5)
    ledger = budget.ledger
    assert result.charges == ledger
    assert result.spent == sum((c.amount for c in ledger), Fraction(0))
    exact_total = Fraction(repr(total))
    assert 0 <= exact_total - result.spent < Fraction(1, 10 ** 15)
    fresh = Budget.zcdp(total)
    for c in ledger:
        assert fresh.charge(c.mechanism, c.parameter, c.label) == c.amount
    assert fresh.ledger == ledger
    # the first shares: 1/12 of the budget, 1/10 of it selecting and 9/10 measuring
    fresh = Budget.zcdp(total)
    select, measure = (Fraction(repr(fresh.fraction(Fraction(k, 120)))) for k in (1, 9))
    first = ledger[0]
    assert (first.label, first.mechanism) == ("AIM 1-way marginals", "gaussian")
    assert 4 * measure * (1 - Fraction(1, 10 ** 12)) <= first.amount <= 4 * measure  # four 1-way marginals
    rounds = [ledger[i:i + 2] for i in range(1, len(ledger), 2)]
    assert len(rounds) * 2 + 1 == len(ledger) and len(rounds) == len(result.queries) - 4
    for t, (chosen, measured) in enumerate(rounds, 1):
        assert (chosen.label, chosen.mechanism) == (f"AIM round {t} select", "exponential")
        assert (measured.label, measured.mechanism) == (f"AIM round {t} measure", "gaussian")
    # every round but the last spends its shares; both grow fourfold together (annealing)
    for chosen, measured in rounds[:-1]:
        if measured.amount > measure:
            select, measure = 4 * select, 4 * measure
        assert select * (1 - Fraction(1, 10 ** 12)) <= chosen.amount <= select
        assert measure * (1 - Fraction(1, 10 ** 12)) <= measured.amount <= measure
    # the last one takes what remains, less than two of the current shares (grown once more at most)
    last = rounds[-1][0].amount + rounds[-1][1].amount
    assert 0 < last < 2 * 4 * (select + measure)
    assert rounds[-1][0].amount == pytest.approx(last / 10, rel=1e-9)


@pytest.mark.parametrize("options", SELECTION_OPTIONS)
def test_aim_repeats_with_a_seed_and_differs_with_another(options):
    data = toy()
    runs = [AIM(rounds=8, iters=50, **options).run(data, Budget.zcdp(0.05), rng=s) for s in (1, 1, 2)]
    first, again, other = runs
    assert [q.attrs for q in first.queries] == [q.attrs for q in again.queries]
    for m, r in zip(first.measurements, again.measurements):
        np.testing.assert_array_equal(m.y, r.y)
    np.testing.assert_array_equal(first.estimate.synthetic_data(rng=3).records,
                                  again.estimate.synthetic_data(rng=3).records)
    assert not np.array_equal(first.measurements[0].y, other.measurements[0].y)


def test_aim_near_noiseless_recovers_the_workload():
    data = toy()
    workload = list(itertools.combinations(DOMAIN.attrs, 3))
    result = AIM(rounds=8, iters=1000).run(data, Budget.zcdp(1e8), rng=0)
    measured = {q.attrs for q in result.queries}
    assert all((a,) in measured for a in DOMAIN.attrs)
    assert total_variation(workload, data, result.estimate) < 2e-3
    for m in result.measurements:
        np.testing.assert_allclose(result.estimate.project(m.attrs).ravel(), m.y, atol=1.0)


def test_aim_refuses_bad_budgets_and_options():
    with pytest.raises(ValueError, match="rho-zCDP"):
        AIM().run(toy(), Budget.pure(1.0))
    with pytest.raises(ValueError, match="at least 4"):
        AIM(rounds=3).run(toy(), Budget.zcdp(1.0))
    with pytest.raises(ValueError, match="select_fraction"):
        AIM(select_fraction=1.0)
    with pytest.raises(ValueError, match="reuse_tolerance"):
        AIM(reuse_tolerance=-1.0)
    with pytest.raises(ValueError, match="max_candidates"):
        AIM(max_candidates=0)


def test_aim_on_titanic_end_to_end():
    data = sample_data.load("titanic")
    result = AIM(iters=100, max_mb=1.0).run(data, Budget.approx(1.0, 1e-9), rng=0)
    assert result.estimate.tree.mb <= 1.0
    synthetic = result.estimate.synthetic_data(rng=0)
    assert synthetic.domain == data.domain and len(synthetic) > 0


def random_model(domain, cliques, seed, total=1000.0, scale=1.0):
    rng = np.random.default_rng(seed)
    potentials = CliqueVector({cl: Factor(domain.project(cl), scale * rng.normal(size=domain.project(cl).shape))
                               for cl in cliques})
    return GraphicalModel(domain, cliques, potentials, total=total)


CHAIN = Domain(["a", "b", "c", "d", "e", "f"], [3, 2, 4, 2, 3, 2])


@pytest.mark.parametrize("seed", range(6))
def test_drift_bounds_bound_every_candidates_move_brute_force(seed):
    """After a refit (here: any new potentials, one more clique closing a cycle, another total),
    the model's counts on every candidate move by at most its drift bound."""
    before = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "f")]
    previous = random_model(CHAIN, before, seed)
    current = random_model(CHAIN, before + [("a", "e")], seed + 100, total=1000.0 + 37 * seed, scale=0.3 + seed / 4)
    drift = clique_drift(previous, current)
    candidates = downward_closure([tuple(CHAIN.attrs)])
    bounds = drift_bounds(drift, spans(current.tree, candidates))
    moved = np.array([np.abs(current.project(c) - previous.project(c)).sum() for c in candidates])
    assert np.all(moved <= bounds * (1 + 1e-9))
    assert np.all(bounds <= drift[0].sum() + drift[1].sum())
    floor = drift_floor(drift, current.tree)  # no bound below its attributes' floors, each some clique's drift
    assert all(max(floor[a] for a in c) <= bound for c, bound in zip(candidates, bounds))
    assert set(floor.values()) <= set(drift[0].tolist())
    for c, span in zip(candidates, spans(current.tree, candidates)):
        held = set().union(*(current.tree.cliques[k] for k in span))
        assert set(c) <= held


def test_no_drift_when_the_previous_model_does_not_factor_over_the_new_tree():
    previous = random_model(CHAIN, [("a", "b", "c")], 0)
    current = random_model(CHAIN, [("a", "b"), ("c", "d")], 1)
    assert clique_drift(previous, current) is None


def scoring_state(domain, data, model):
    state = State(domain, None)
    state.memo.update(weights=candidate_weights(domain, itertools.combinations(domain.attrs, 3)), marginal={})
    state.estimate = model
    return state


@pytest.mark.parametrize("tolerance", [0.0, 0.5])
def test_reused_errors_equal_fresh_ones_where_exact_and_stay_within_the_tolerance(tolerance):
    """Two parts of the model, one refitted: with tolerance 0 the errors on candidates of the part
    that did not move are reused and equal the freshly computed ones (brute force); with a
    tolerance every reused error is within it of the fresh one, in selection terms."""
    data = toy()
    first = random_model(DOMAIN, [("a", "b"), ("c", "d")], 0, total=len(data))
    nudge = np.random.default_rng(1).normal(scale=0.01, size=(3, 4))
    moved = CliqueVector({("a", "b"): Factor(DOMAIN.project(("a", "b")), first.potentials[("a", "b")].values + nudge),
                          ("c", "d"): first.potentials[("c", "d")]})
    second = GraphicalModel(DOMAIN, first.cliques, moved, total=len(data))
    mechanism = AIM(reuse_tolerance=tolerance)
    state = scoring_state(DOMAIN, data, first)
    candidates = list(state.memo["weights"])
    epsilon, sensitivity = 0.01, max(state.memo["weights"].values())
    mechanism.errors(state, data, candidates, epsilon, sensitivity)
    assert state.memo["reused"] == 0
    state.estimate = second
    reused = mechanism.errors(state, data, candidates, epsilon, sensitivity)
    fresh = np.array([np.abs(data.marginal(c) - second.project(c)).sum() for c in candidates])
    untouched = [i for i, c in enumerate(candidates) if set(c) <= {"c", "d"}]
    if tolerance == 0:
        assert state.memo["reused"] == len(untouched) == 3
        np.testing.assert_allclose(reused, fresh, rtol=1e-12)
    else:
        assert state.memo["reused"] > len(untouched)
        weights = np.array([state.memo["weights"][c] for c in candidates])
        assert np.all(weights * np.abs(reused - fresh) <= tolerance * sensitivity / epsilon * (1 + 1e-9))
        np.testing.assert_allclose(reused[untouched], fresh[untouched], rtol=1e-12)


def test_aims_reused_errors_stay_within_the_tolerance_in_every_round(monkeypatch):
    """Over whole runs, each round's errors (some reused) against fresh ones: within the
    tolerance's bound on the selection's scores."""
    tolerance, checked = 0.5, []
    original = AIM.errors

    def checking(self, state, data, candidates, epsilon, sensitivity):
        found = original(self, state, data, candidates, epsilon, sensitivity)
        fresh = errors(state.memo["marginal"].__getitem__, state.estimate, candidates)
        weights = np.array([state.memo["weights"][c] for c in candidates])
        assert np.all(weights * np.abs(found - fresh) <= tolerance * sensitivity / epsilon * (1 + 1e-9) + 1e-6)
        checked.append(state.memo["reused"])
        return found

    monkeypatch.setattr(AIM, "errors", checking)
    AIM(rounds=12, iters=30, reuse_tolerance=tolerance).run(toy(), Budget.zcdp(0.02), rng=1)
    assert len(checked) > 3 and sum(checked) > 0


def test_aim_carries_only_the_errors_it_may_still_reuse(monkeypatch):
    """After each round's scoring every error AIM keeps for reuse is within the round's slack:
    those whose bound on the model's move passed it (here of candidates not sampled this round)
    are dropped, not carried to later rounds."""
    tolerance, carried = 0.05, []
    original = AIM.errors

    def checking(self, state, data, candidates, epsilon, sensitivity):
        found = original(self, state, data, candidates, epsilon, sensitivity)
        known, weights = state.memo["errors"], state.memo["weights"]
        slack = tolerance * sensitivity / epsilon
        assert all(weights[c] * bound <= slack for c, (_, bound) in known.items())
        carried.append(len(known))
        return found

    monkeypatch.setattr(AIM, "errors", checking)
    AIM(rounds=12, iters=30, reuse_tolerance=tolerance, max_candidates=6).run(toy(), Budget.zcdp(2.0), rng=1)
    assert len(carried) > 3


def test_a_wide_table_scores_three_way_candidates_within_the_candidate_budget():
    """On a 40-column table AIM keeps every 3-way marginal of its workload and scores at most its
    candidate budget each round: every 1- and 2-way candidate allowed and a sample of the 3-way
    ones, the same sample for the same seed."""
    wide = Domain([f"c{i:02d}" for i in range(40)], [2] * 40)
    mechanism = AIM()
    weights = mechanism.candidates(wide)
    assert sum(len(c) == 3 for c in weights) == math.comb(40, 3)
    budget = mechanism.max_candidates
    assert budget is not None and len(weights) > budget > sum(len(c) <= 2 for c in weights)
    first = mechanism.sampled(list(weights), np.random.default_rng(0))
    assert len(first) == budget and first == mechanism.sampled(list(weights), np.random.default_rng(0))
    assert all(c in first for c in weights if len(c) <= 2)
    assert sum(len(c) == 3 for c in first) == budget - sum(len(c) <= 2 for c in weights)
    assert first != mechanism.sampled(list(weights), np.random.default_rng(1))
    pairs = [c for c in weights if len(c) == 2]  # more pairs than the budget: a sample of them, not the first
    few = AIM(max_candidates=100).sampled(pairs, np.random.default_rng(0))
    assert len(set(few)) == 100 and few != pairs[:100] and few != AIM(max_candidates=100).sampled(
        pairs, np.random.default_rng(1))
    rng = np.random.default_rng(5)
    records = rng.integers(0, 2, (2000, 40))
    records[:, 1] = records[:, 0] ^ records[:, 2]
    seen = []
    original = AIM.errors

    def watching(self, state, data, candidates, epsilon, sensitivity):
        seen.append(candidates)
        return original(self, state, data, candidates, epsilon, sensitivity)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AIM, "errors", watching)
        AIM(max_candidates=900, callback=lambda state: state.round >= 3, iters=5, final_iters=5).run(
            Dataset(records, wide), Budget.zcdp(1.0), rng=0)
    assert seen and all(len(s) <= 900 and any(len(c) == 3 for c in s) for s in seen)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcdef"), min_size=1, max_size=3, unique=True), max_size=6))
def test_a_triple_is_linked_when_two_of_its_pairs_were_measured_together(measured):
    """:func:`linked` on 3-way candidates, against its definition: two or three of a triple's
    pairs lie in one measured clique each."""
    triples = list(itertools.combinations("abcdef", 3))
    pairs = {frozenset(p) for clique in measured for p in itertools.combinations(clique, 2)}
    expected = {t for t in triples if sum(frozenset(p) in pairs for p in itertools.combinations(t, 2)) >= 2}
    assert linked([tuple(c) for c in measured], triples) == expected


def test_linked_only_past_the_candidate_budget_keeps_the_triples_the_measured_cliques_link():
    """``linked_only`` past ``max_candidates``: every 1- and 2-way candidate and the 3-way ones
    linked by the measured cliques, a sample of those when they do not all fit, no other; in a
    run, each round's 3-way candidates are linked by the cliques measured before it."""
    wide = Domain([f"c{i:02d}" for i in range(40)], [2] * 40)
    candidates = list(AIM().candidates(wide))
    small = [c for c in candidates if len(c) <= 2]
    assert AIM(linked_only=True).sampled(candidates, np.random.default_rng(0)) == small  # nothing measured yet
    measured = [("c00", "c01"), ("c01", "c02"), ("c02", "c03", "c04")]
    joined = linked(measured, [c for c in candidates if len(c) == 3])
    assert joined == {("c00", "c01", "c02"), ("c01", "c02", "c03"), ("c01", "c02", "c04"), ("c02", "c03", "c04")}
    kept = AIM(max_candidates=len(small) + 10, linked_only=True).sampled(candidates, np.random.default_rng(0), measured)
    assert kept == [c for c in candidates if len(c) <= 2 or c in joined]
    few = AIM(max_candidates=len(small) + 2, linked_only=True).sampled(candidates, np.random.default_rng(0), measured)
    assert set(small) <= set(few) and len(few) == len(small) + 2 and set(few) - set(small) < joined
    rng = np.random.default_rng(5)
    records = rng.integers(0, 2, (2000, 40))
    for k in (1, 2):  # a chain c00 - c01 - c02 of near copies
        records[:, k] = records[:, k - 1] ^ (rng.random(2000) < 0.05)
    seen = []
    original = AIM.errors

    def watching(self, state, data, candidates, epsilon, sensitivity):
        triples = [c for c in candidates if len(c) == 3]
        assert linked([m.attrs for m in state.measurements], triples) == set(triples)
        seen.append((len(candidates), len(triples)))
        return original(self, state, data, candidates, epsilon, sensitivity)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AIM, "errors", watching)
        AIM(max_candidates=900, linked_only=True, rounds=60, callback=lambda state: state.round >= 12, iters=5,
            final_iters=5).run(Dataset(records, wide), Budget.zcdp(1.0), rng=0)
    assert seen and all(n <= 900 for n, _ in seen) and any(t > 0 for _, t in seen)
    with pytest.raises(InputError, match="linked_only"):
        AIM(linked_only="yes")


def test_counted_ahead_takes_the_smallest_candidates_that_can_fit_the_model_within_its_cells():
    from ektelo_pgm.mechanisms.aim import counted_ahead

    domain = Domain(["a", "b", "c"], [2, 3, 1000])
    candidates = [("a", "b", "c"), ("c",), ("a", "c"), ("b", "c"), ("a",), ("b",), ("a", "b")]  # 6000 .. 6 cells
    assert counted_ahead(domain, candidates, max_mb=1.0) == [("a",), ("b",), ("a", "b"), ("c",), ("a", "c"),
                                                              ("b", "c"), ("a", "b", "c")]
    assert counted_ahead(domain, candidates, max_mb=0.02) == [("a",), ("b",), ("a", "b"), ("c",), ("a", "c")]  # 2621
    assert counted_ahead(domain, candidates, max_mb=1.0, cells=3011) == [("a",), ("b",), ("a", "b"), ("c",), ("a", "c")]
    assert counted_ahead(domain, candidates, max_mb=1.0, cells=1) == []


def test_linked_only_never_grows_the_budget_after_a_triple_the_measured_pairs_link():
    """``linked_only``: a round measuring a triple that the cliques measured before link does not
    grow the budget, however little it moved the model; one whose pairs were not measured, or
    the same rounds without ``linked_only``, take the paper's test (sec. 4.3)."""
    data = toy()
    model = PGM(iters=10).reconstruct(DOMAIN, [Measurement((a,), data.marginal((a,)), 1.0) for a in DOMAIN.attrs])

    def state(earlier, attrs):
        measured = Measurement(attrs, data.marginal(attrs).ravel(), 50.0)
        ones = [Measurement((a,), data.marginal((a,)), 1.0) for a in DOMAIN.attrs]
        return State(DOMAIN, len(data), round=9, estimate=model, previous=model, chosen=[Query(attrs)],
                     measured=[measured], measurements=ones + [Measurement(e, data.marginal(e).ravel(), 1.0)
                                                               for e in earlier] + [measured])

    linked_triple = state([("a", "b"), ("b", "c")], ("a", "b", "c"))
    lone_triple = state([("a", "b"), ("c", "d")], ("a", "b", "c"))
    pair = state([("a", "b"), ("b", "c")], ("a", "c"))
    assert AIM().grow(linked_triple) and AIM().grow(lone_triple) and AIM().grow(pair)  # moved 0: the paper grows
    assert not AIM(linked_only=True).grow(linked_triple)
    assert AIM(linked_only=True).grow(lone_triple) and AIM(linked_only=True).grow(pair)
