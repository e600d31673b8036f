"""Checks against a real holdout: the split, machine-learning efficacy (TSTR vs TRTR) on tables
whose answer is known by construction (fresh draws: ratio near 1; a shuffled target: chance), the
distance to closest record against a brute-force count, exact matches, determinism and errors
that name the problem without a value of the real table."""
import sys

import numpy as np
import pandas as pd
import pytest

from ektelo_pgm.evaluation import closest_distances, disclosure, holdout, ml_efficacy, split

KINDS = {"x": "numeric", "size": "numeric", "colour": "categorical", "label": "categorical", "amount": "numeric"}


@pytest.fixture
def sklearn():
    return pytest.importorskip("sklearn", reason="machine-learning efficacy needs scikit-learn (the 'ml' extra)")


def population(n, seed):
    """Draws from one distribution: the binary ``label`` and the number ``amount`` follow ``x``
    and ``colour`` closely; ``colour`` has missing markers and ``size`` missing numbers."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2]).astype(object)
    colour[rng.random(n) < 0.05] = "?"
    size = rng.uniform(0, 100, n)
    size[rng.random(n) < 0.05] = np.nan
    shift = np.where(colour == "red", 1.0, -0.5)
    label = np.where(2 * x + shift + rng.normal(scale=0.5, size=n) > 0, "yes", "no")
    amount = 3 * x + 2 * shift + rng.normal(scale=0.5, size=n)
    return pd.DataFrame({"x": x, "size": size, "colour": colour, "label": label, "amount": amount})


@pytest.fixture(scope="module")
def parts():
    train, test = split(population(1000, 0), share=0.3, seed=1)
    return train, test, population(700, 2)  # fresh draws as the synthetic table


def metric(result, model, name):
    row = result.table[(result.table.model == model) & (result.table.metric == name)]
    assert len(row) == 1
    return row.iloc[0]


# ----------------------------------------------------------------------------------------------
# split
# ----------------------------------------------------------------------------------------------


def test_split_cuts_the_rows_in_two_at_the_share_and_is_seeded():
    real = population(101, 0)
    train, test = split(real, share=0.2, seed=3)
    assert (len(train), len(test)) == (81, 20)
    assert sorted(train.index.tolist() + test.index.tolist()) == list(range(101))
    assert train.index.is_monotonic_increasing and test.index.is_monotonic_increasing
    again = split(real, share=0.2, seed=3)
    assert again[1].index.equals(test.index)
    assert not split(real, share=0.2, seed=4)[1].index.equals(test.index)
    generated = [split(real, 0.2, np.random.default_rng(3))[1].index for _ in range(2)]
    assert generated[0].equals(generated[1])


@pytest.mark.parametrize("share", [0, 1, -0.1, 1.5, True, "0.2"])
def test_split_refuses_a_share_outside_0_1(share):
    with pytest.raises(ValueError, match="share"):
        split(population(10, 0), share=share)


def test_split_keeps_a_row_on_each_side():
    train, test = split(population(3, 0), share=0.01)
    assert (len(train), len(test)) == (2, 1)
    with pytest.raises(ValueError, match="two rows"):
        split(population(1, 0))


# ----------------------------------------------------------------------------------------------
# Disclosure
# ----------------------------------------------------------------------------------------------


def brute_dcr(train: pd.DataFrame, queries: pd.DataFrame, kinds) -> np.ndarray:
    """The module's distance written out cell by cell: numbers |a - b| / training range capped at
    1, categories 0/1, missing equal to missing only; the mean over columns, the min over rows."""
    def missing(v):
        return v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and v.strip() in ("", "?"))

    ranges = {}
    for c, kind in kinds.items():
        if kind == "numeric":
            values = [float(v) for v in train[c] if not missing(v)]
            ranges[c] = (max(values) - min(values)) or 1.0
    out = []
    for _, q in queries.iterrows():
        best = np.inf
        for _, t in train.iterrows():
            total = 0.0
            for c, kind in kinds.items():
                a, b = q[c], t[c]
                if missing(a) or missing(b):
                    total += 0.0 if missing(a) and missing(b) else 1.0
                elif kind == "numeric":
                    total += min(abs(float(a) - float(b)) / ranges[c], 1.0)
                else:
                    total += float(str(a).strip() != str(b).strip())
            best = min(best, total / len(kinds))
        out.append(best)
    return np.array(out)


@pytest.mark.parametrize("one_hot_width", [1024, 3])  # narrow categories one-hot / wide ones code by code
def test_closest_distances_match_a_brute_force_count(monkeypatch, one_hot_width):
    monkeypatch.setattr(holdout, "ONE_HOT_WIDTH", one_hot_width)
    kinds = {"x": "numeric", "size": "numeric", "colour": "categorical", "label": "categorical"}
    train = population(60, 0)[list(kinds)]
    queries = population(25, 1)[list(kinds)]
    queries.loc[0, "x"] = 40.0  # beyond the training range: capped at 1
    queries.loc[1, "colour"] = "purple"  # a category the training part lacks
    queries.loc[2, "size"] = np.nan
    queries.loc[3] = train.iloc[7]  # a copy: distance 0
    coded = {name: holdout._table(frame, kinds, name) for name, frame in (("train", train), ("queries", queries))}
    got = closest_distances(coded["train"], coded["queries"], kinds, chunk_mb=0.001)  # one row per chunk
    np.testing.assert_allclose(got, brute_dcr(train, queries, kinds), atol=1e-6)
    assert got[3] == 0
    np.testing.assert_array_equal(got, closest_distances(coded["train"], coded["queries"], kinds))


def test_a_copy_of_the_training_part_matches_exactly_at_distance_zero(parts):
    train, test, _ = parts
    result = disclosure(train, test, train.sample(frac=1.0, random_state=0), KINDS)
    stats = result.table.set_index("statistic")
    assert stats.loc["exact-match share", "synthetic"] == 1.0
    assert stats.loc["DCR mean", "synthetic"] == 0.0 and np.all(result.dcr_synthetic == 0)
    assert stats.loc["share closer than the holdout's median DCR", "synthetic"] == 1.0
    assert stats.loc["exact-match share", "holdout"] == 0.0  # continuous columns: no real row repeats
    assert 0.4 <= stats.loc["share closer than the holdout's median DCR", "holdout"] <= 0.5


def test_fresh_draws_are_as_far_from_the_training_part_as_the_holdout(parts):
    train, test, fresh = parts
    stats = disclosure(train, test, fresh, KINDS).table.set_index("statistic")
    closer = stats.loc["share closer than the holdout's median DCR"]
    assert abs(closer["synthetic"] - closer["holdout"]) < 0.1
    assert stats.loc["exact-match share", "synthetic"] == 0.0
    assert stats.loc["DCR median", "synthetic"] == pytest.approx(stats.loc["DCR median", "holdout"], rel=0.25)


def test_exact_matches_count_missing_as_a_value_and_every_row():
    train = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": ["x", "?", "y"]})
    synthetic = pd.DataFrame({"a": [np.nan, 1.0, 1.0, 3.0], "b": ["", "x", "y", "y"]})
    result = disclosure(train, train.iloc[:1], synthetic, {"a": "numeric", "b": "categorical"}, max_rows=2)
    stats = result.table.set_index("statistic")
    assert stats.loc["exact-match share", "synthetic"] == 0.75  # all 4 rows, though 2 sampled for the DCR
    assert result.sampled == (2, 1) and len(result.dcr_synthetic) == 2


def test_disclosure_is_seeded_and_samples_at_most_max_rows(parts):
    train, test, fresh = parts
    first = disclosure(train, test, fresh, KINDS, max_rows=100, seed=5)
    assert first.sampled == (100, 100)
    again = disclosure(train, test, fresh, KINDS, max_rows=100, seed=5)
    np.testing.assert_array_equal(first.dcr_synthetic, again.dcr_synthetic)
    pd.testing.assert_frame_equal(first.table, again.table)
    other = disclosure(train, test, fresh, KINDS, max_rows=100, seed=6)
    assert not np.array_equal(first.dcr_synthetic, other.dcr_synthetic)


def test_disclosure_text_says_it_is_no_substitute_for_the_guarantee(parts):
    train, test, fresh = parts
    text = disclosure(train, test, fresh, max_rows=50).text()  # kinds decided as the report does
    assert "never a substitute for the differential-privacy guarantee" in text
    assert "exact-match share" in text and "50 synthetic and 50 holdout rows" in text


def test_disclosure_errors_name_the_problem_not_a_value(parts):
    train, test, fresh = parts
    with pytest.raises(ValueError, match=r"synthetic table lacks the columns \['amount'\]"):
        disclosure(train, test, fresh.drop(columns="amount"), KINDS)
    with pytest.raises(ValueError, match="'height'"):
        disclosure(train, test, fresh, {**KINDS, "height": "numeric"})
    secret = train.copy()
    secret["size"] = secret["size"].astype(object)
    secret.iloc[4, secret.columns.get_loc("size")] = "SECRET-VALUE"
    with pytest.raises(ValueError, match="'size' is numeric") as err:
        disclosure(secret, test, fresh, KINDS)
    assert "SECRET" not in str(err.value)
    with pytest.raises(ValueError, match="holdout has no rows"):
        disclosure(train, test.iloc[:0], fresh, KINDS)
    with pytest.raises(ValueError, match="max_rows"):
        disclosure(train, test, fresh, KINDS, max_rows=0)
    with pytest.raises(TypeError, match="DataFrame"):
        disclosure(train, test, fresh.to_numpy(), KINDS)


# ----------------------------------------------------------------------------------------------
# Machine-learning efficacy
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["linear", "random_forest", "gradient_boosting"])
def test_fresh_draws_train_a_classifier_as_well_as_the_real_rows(sklearn, parts, model):
    train, test, fresh = parts
    kinds = {c: k for c, k in KINDS.items() if c != "amount"}  # amount tells the label too well
    result = ml_efficacy(*(t.drop(columns="amount") for t in parts), "label", kinds, models=[model])
    assert result.task == "classification" and result.classes == 2
    assert set(result.table.metric) == {"accuracy", "macro F1", "ROC AUC"}
    name = holdout.MODEL_NAMES[model]
    for score in ("accuracy", "macro F1", "ROC AUC"):
        row = metric(result, name, score)
        assert row.real > 0.8 and 0.9 < row.ratio < 1.1, (score, row)
        assert row.difference == pytest.approx(row.synthetic - row.real)


def test_a_shuffled_target_trains_models_no_better_than_chance(sklearn, parts):
    train, test, _ = parts
    shuffled = train.copy()
    shuffled["label"] = np.random.default_rng(0).permutation(shuffled["label"].to_numpy())
    result = ml_efficacy(train, test, shuffled, "label", KINDS)
    assert (result.table.real > 0.9).all() and (result.table.ratio < 0.8).all()
    for model in ("random forest", "gradient boosting"):  # a linear model's AUC follows any spurious slope
        assert abs(metric(result, model, "ROC AUC").synthetic - 0.5) < 0.1
        assert abs(metric(result, model, "accuracy").synthetic - result.chance["accuracy"]) < 0.08
    assert result.chance["ROC AUC"] == 0.5
    majority = (test["label"] == train["label"].mode()[0]).mean()
    assert result.chance["accuracy"] == pytest.approx(majority)


def test_a_numeric_target_is_a_regression(sklearn, parts):
    train, test, fresh = parts
    result = ml_efficacy(train, test, fresh, "amount", KINDS, models=["linear", "random_forest"])
    assert result.task == "regression"
    assert set(result.table.metric) == {"R^2", "mean absolute error"}
    fit = metric(result, "linear", "R^2")
    assert fit.real > 0.9 and 0.95 < fit.ratio < 1.05
    assert 0.8 < metric(result, "linear", "mean absolute error").ratio < 1.2
    shuffled = train.assign(amount=np.random.default_rng(0).permutation(train["amount"].to_numpy()))
    chance = ml_efficacy(train, test, shuffled, "amount", KINDS, models=["linear"])
    assert metric(chance, "linear", "R^2").synthetic < 0.1
    assert abs(chance.chance["R^2"]) < 0.05
    assert "lower is better" in chance.text()


def test_a_synthetic_target_of_one_class_predicts_a_constant(sklearn, parts):
    train, test, fresh = parts
    result = ml_efficacy(train, test, fresh.assign(label="no"), "label", KINDS, models=["linear"])
    assert metric(result, "linear", "ROC AUC").synthetic == 0.5
    assert metric(result, "linear", "accuracy").synthetic == pytest.approx((test["label"] == "no").mean())


def test_many_classes_get_no_auc_and_numeric_features_alone_suffice(sklearn, parts):
    train, test, fresh = parts
    result = ml_efficacy(train, test, fresh, "colour", KINDS, models=["gradient_boosting"])
    assert result.classes == 4 and set(result.table.metric) == {"accuracy", "macro F1"}  # (missing) is a class
    assert "ROC AUC" not in result.chance
    only_numbers = [t[["x", "size", "amount"]] for t in parts]
    result = ml_efficacy(*only_numbers, "amount", {"x": "numeric", "size": "numeric", "amount": "numeric"},
                         models=["gradient_boosting", "linear"])
    assert (result.table.synthetic.notna()).all() and metric(result, "linear", "R^2").real > 0.5


def test_efficacy_is_seeded_and_decides_undeclared_kinds(sklearn, parts):
    train, test, fresh = parts
    run = lambda seed: ml_efficacy(train, test, fresh, "label", models=["random_forest"], seed=seed)  # noqa: E731
    first = run(3)  # kinds decided as the report does
    pd.testing.assert_frame_equal(first.table, run(3).table)
    assert not first.table.equals(run(4).table)
    text = first.text()
    assert "'label' (classification, 2 classes)" in text and "random forest" in text and "Chance" in text


def test_efficacy_errors_name_the_problem_not_a_value(sklearn, parts):
    train, test, fresh = parts
    with pytest.raises(ValueError, match="target 'income' is not a column of the training part"):
        ml_efficacy(train, test, fresh, "income", KINDS)
    one = train.assign(label="SECRET-CLASS")
    with pytest.raises(ValueError, match="single class in the training part") as err:
        ml_efficacy(one, test, fresh, "label", KINDS)
    assert "SECRET" not in str(err.value)
    with pytest.raises(ValueError, match="models must be some of"):
        ml_efficacy(train, test, fresh, "label", KINDS, models=["svm"])
    with pytest.raises(ValueError, match=r"holdout lacks the columns \['colour'\]"):
        ml_efficacy(train, test.drop(columns="colour"), fresh, "label", KINDS)
    with pytest.raises(ValueError, match="no column besides the target"):
        ml_efficacy(train[["label"]], test, fresh, "label")
    with pytest.raises(ValueError, match="synthetic table has no row with a value of the target"):
        ml_efficacy(train, test, fresh.assign(amount=np.nan), "amount", KINDS)


def test_without_scikit_learn_efficacy_names_the_extra_and_disclosure_works(monkeypatch, parts):
    train, test, fresh = parts
    for name in [m for m in sys.modules if m == "sklearn" or m.startswith("sklearn.")] + ["sklearn"]:
        monkeypatch.setitem(sys.modules, name, None)  # importing any of scikit-learn now raises ImportError
    with pytest.raises(ImportError, match=r"ektelo_pgm\[ml\]"):
        ml_efficacy(train, test, fresh, "label", KINDS)
    assert len(disclosure(train, test, fresh, KINDS, max_rows=20).table) == 5
