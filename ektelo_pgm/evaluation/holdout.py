"""Checks of a synthetic table against a held-out part of the real table: rows the synthesizer
never saw.  :func:`split` cuts the real table in two, the synthesizer is fitted on the training
part only, then:

:func:`ml_efficacy` (machine-learning efficacy, as SDMetrics and Xu et al. 2019, sec. 5.1 score
it): for one target column, each model is trained once on the synthetic table (TSTR: train on
synthetic, test on real) and once on the real training part (TRTR), and both are scored on the
same real holdout.  A categorical target is a classification (accuracy and macro F1 over the
real classes; ROC AUC of the second class in sorted order when the training part has two); a
numeric one a regression (R^2, and the mean absolute error in the target's units).  The models,
fixed so that runs are comparable (scikit-learn, the ``ml`` extra), each seeded by ``seed``:

- ``linear``: logistic regression (L2, C=1, lbfgs, at most 1,000 iterations) or ridge (alpha=1),
  on one-hot categorical columns (categories the model never saw: all zeros) and standardised
  numeric ones, missing numbers imputed by the median with a missing indicator;
- ``random_forest``: 100 trees, sqrt of the features per split, leaves of at least 2 rows, on
  the same imputed numbers (unscaled) and dense one-hot categories, at most 64 per column (the
  rarest pooled, a category never seen with them);
- ``gradient_boosting``: histogram gradient boosting (100 iterations, no early stopping, an L2
  penalty of 1, without which its fits of many classes drift: adult's occupation at 0.26
  accuracy instead of 0.39) with categorical columns as native categories (at most 250 per
  column, the rarest pooled; a category never seen is missing) and missing numbers left to the
  model.

A categorical column's missing values (NaN, ``""``, ``"?"``) are a category of their own.  A
synthetic table whose target has a single class yields its constant prediction (a ROC AUC of
0.5).  Chance levels come from predicting the training part's majority class (mean for a
regression).

:func:`disclosure`: two privacy sanity checks, both measured for the synthetic rows and, as the
baseline, for the real holdout rows against the training part.  They are heuristics, *never* a
substitute for the differential-privacy guarantee: a table can pass them and still leak, or fail
them (a small domain repeats rows) and be private.

- exact-match share: the share of a table's rows equal, in every column, to some training row
  (all rows; numbers compared exactly, missing equal to missing);
- distance to closest record (DCR): per row, the smallest distance to a training row, the
  distance being the mean over columns of ``min(|a - b| / range, 1)`` for a numeric column
  (``range``: the training part's max - min, 1 when constant) and of 0/1 mismatch for a
  categorical one, a missing value being a value of its own (missing vs present: 1).  Distances
  are in [0, 1].  At most ``max_rows`` (5,000) rows of the synthetic table and of the holdout are
  sampled with ``seed``; each is compared with every training row, in chunks of bounded memory.
  Read as SDMetrics' DCR protection scores are: the share of synthetic rows closer to the
  training part than the holdout's median DCR is about one half (a little less with ties) when
  the synthetic rows are no closer to the training part than unseen real rows are; near 1 it
  points at copied records.

Column kinds: ``kinds`` is anything :func:`ektelo_pgm.evaluation.discretisation.kinds_of` reads
(a ``{column: "numeric" | "categorical"}`` mapping, a TableEncoder, a JSON path); columns it
does not name are decided as :class:`ektelo_pgm.evaluation.discretisation.Discretisation` decides
them on the training part.  Like :mod:`ektelo_pgm.evaluation.report`, these checks read the real
table freely: treat their output like the real data.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Sequence

import numpy as np

from ..errors import InputError
from .discretisation import MISSING, Discretisation, distinct, kinds_of, label, number

MODELS = ("linear", "random_forest", "gradient_boosting")
MODEL_NAMES = {"linear": "linear", "random_forest": "random forest", "gradient_boosting": "gradient boosting"}
#: Rows of the synthetic table and of the holdout compared by :func:`disclosure` at most.
MAX_ROWS = 5_000
#: Memory of one chunk of the distance computation, MB (a few MB stay in cache: 40% faster than 64).
CHUNK_MB = 8
#: Categorical columns are matched by one matrix product over their one-hot codes, up to this
#: many codes in all (the narrowest columns first); wider ones are compared code by code.
ONE_HOT_WIDTH = 1_024
_ABSENT = 4.0  # a missing number on the scaled axis: 1 or more from any other value


def _sklearn():
    """The scikit-learn names this module uses; a clear error when the optional package is absent."""
    try:
        from sklearn.compose import ColumnTransformer
        from sklearn.ensemble import (HistGradientBoostingClassifier, HistGradientBoostingRegressor,
                                      RandomForestClassifier, RandomForestRegressor)
        from sklearn.impute import SimpleImputer
        from sklearn.linear_model import LogisticRegression, Ridge
        from sklearn.metrics import accuracy_score, f1_score, mean_absolute_error, r2_score, roc_auc_score
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
        from threadpoolctl import threadpool_limits
    except ImportError:
        raise ImportError("machine-learning efficacy needs scikit-learn: pip install 'ektelo_pgm[ml]' "
                          "(or pip install scikit-learn)") from None
    return SimpleNamespace(**{k: v for k, v in locals().items()})


def _frames(**frames):
    """Check that each named table is a DataFrame with rows."""
    import pandas as pd

    for what, frame in frames.items():
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"the {what} must be a pandas DataFrame, got {type(frame).__name__}")
        if len(frame) == 0:
            raise InputError(f"the {what} has no rows")


def _integer_seed(seed) -> int:
    """An integer for scikit-learn's ``random_state`` from an int or a numpy Generator."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**31 - 1))
    return int(np.random.default_rng(seed).integers(2**31 - 1)) if seed is None else int(seed)


def split(real, share: float = 0.2, seed=0):
    """``(train, holdout)``: the rows of ``real`` (a DataFrame) cut at random, ``share`` of them
    (rounded, at least one row each side) held out; each part keeps the original order and
    index.  ``seed``: an int or a numpy Generator."""
    _frames(**{"real table": real})
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
        raise InputError(f"share must be a number strictly between 0 and 1, got {share!r}")
    if len(real) < 2:
        raise InputError("the real table needs at least two rows to be split")
    held = min(max(int(round(share * len(real))), 1), len(real) - 1)
    order = np.random.default_rng(seed).permutation(len(real))
    return real.iloc[np.sort(order[held:])], real.iloc[np.sort(order[:held])]


def _kinds(train, kinds) -> dict:
    """``{column: kind}`` for every column of the training part, in its order."""
    declared = {} if kinds is None else dict(kinds_of(kinds))
    columns = [str(c) for c in train.columns]
    unknown = sorted(set(declared) - set(columns))
    if unknown:
        raise InputError(f"kinds name columns {unknown} that the training part lacks")
    rest = [c for c in train.columns if str(c) not in declared]
    if rest:
        guessed = Discretisation(train[rest])
        declared.update({c: "numeric" if c in guessed.edges else "categorical" for c in guessed.columns})
    return {c: declared[c] for c in columns}


def _values(series, kind: str, name: str, what: str) -> np.ndarray:
    """A column as float64 (numeric; NaN: missing) or as category labels (object; missing is
    :data:`~ektelo_pgm.evaluation.discretisation.MISSING`)."""
    index, values = distinct(series)
    if kind == "numeric":
        numbers = np.array([number(v) for v in values], dtype=float)
        if not np.isfinite(numbers).all():
            raise InputError(f"column {name!r} is numeric but the {what} holds a value that is not a finite number")
        return np.append(numbers, np.nan)[index] + 0.0  # -0.0 as 0.0
    return np.array([label(v) for v in values] + [MISSING], dtype=object)[index]


def _table(frame, kinds: dict, what: str) -> dict:
    """``{column: values}`` of ``frame`` over the columns of ``kinds`` (which it must have)."""
    names = {str(c): c for c in frame.columns}
    absent = [c for c in kinds if c not in names]
    if absent:
        raise InputError(f"the {what} lacks the columns {absent} of the training part")
    return {c: _values(frame[names[c]], kind, c, what) for c, kind in kinds.items()}


# ----------------------------------------------------------------------------------------------
# Machine-learning efficacy
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MLEfficacy:
    """The outcome of :func:`ml_efficacy`.  ``table``: a DataFrame with a row per model and
    metric: ``model``, ``metric``, ``real`` (trained on the real training part, TRTR),
    ``synthetic`` (trained on the synthetic table, TSTR), ``difference`` (synthetic - real) and
    ``ratio`` (synthetic / real; NaN unless real > 0), scores on the real holdout (accuracy,
    macro F1, ROC AUC and R^2 are unitless; mean absolute error is in the target's units, lower
    is better).  ``chance``: ``{metric: score}`` of the training part's majority class (mean for
    a regression) on the holdout."""

    target: str
    task: str
    classes: int
    holdout_rows: int
    table: object
    chance: dict

    def text(self) -> str:
        what = f"{self.task}, {self.classes} classes" if self.task == "classification" else self.task
        lines = [f"Machine-learning efficacy for {self.target!r} ({what}): each model trained on the real "
                 f"training part (TRTR) and on the synthetic table (TSTR), both scored on the real holdout "
                 f"({self.holdout_rows} rows).",
                 f"{'model':<18} {'metric':<20} {'real':>8} {'synthetic':>10} {'ratio':>6}"]
        for row in self.table.itertuples(index=False):
            ratio = "-" if np.isnan(row.ratio) else f"{row.ratio:.2f}"
            lines.append(f"{row.model:<18} {row.metric:<20} {row.real:8.4g} {row.synthetic:10.4g} {ratio:>6}")
        chance = ", ".join(f"{metric} {score:.4g}" for metric, score in self.chance.items())
        basis = "majority class" if self.task == "classification" else "mean"
        lines.append(f"Chance (the training part's {basis}): {chance}.")
        lines.append("A ratio near 1: the synthetic table trains these models about as well as the real one"
                     + (" (mean absolute error: lower is better, a ratio above 1 is worse)."
                        if self.task == "regression" else "."))
        return "\n".join(lines)


def _features(numeric: list, categorical: list, linear: bool):
    """The imputed numbers (standardised for the linear models) and one-hot categories."""
    sk = _sklearn()
    steps = [sk.SimpleImputer(strategy="median", add_indicator=True, keep_empty_features=True)]
    steps += [sk.StandardScaler()] if linear else []
    # the forest fits dense input several times faster than sparse: its width is bounded
    hot = (sk.OneHotEncoder(handle_unknown="ignore") if linear else
           sk.OneHotEncoder(handle_unknown="infrequent_if_exist", max_categories=64, sparse_output=False))
    return sk.ColumnTransformer([("numeric", sk.make_pipeline(*steps), numeric), ("categorical", hot, categorical)])


def _model(name: str, task: str, numeric: list, categorical: list, seed: int):
    """An unfitted pipeline of the fixed model set (the module's docstring)."""
    sk = _sklearn()
    classify = task == "classification"
    if name == "linear":
        learner = sk.LogisticRegression(C=1.0, max_iter=1000) if classify else sk.Ridge(alpha=1.0)
        return sk.make_pipeline(_features(numeric, categorical, linear=True), learner)
    if name == "random_forest":
        forest = sk.RandomForestClassifier if classify else sk.RandomForestRegressor
        return sk.make_pipeline(_features(numeric, categorical, linear=False),
                                forest(n_estimators=100, max_features="sqrt", min_samples_leaf=2, random_state=seed,
                                       n_jobs=1))
    if name == "gradient_boosting":
        codes = sk.OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan, max_categories=250)
        columns = sk.ColumnTransformer([("numeric", "passthrough", numeric), ("categorical", codes, categorical)])
        boosting = sk.HistGradientBoostingClassifier if classify else sk.HistGradientBoostingRegressor
        mask = [False] * len(numeric) + [True] * len(categorical) if categorical else None
        return sk.make_pipeline(columns, boosting(max_iter=100, early_stopping=False, l2_regularization=1.0,
                                                  random_state=seed, categorical_features=mask))
    raise InputError(f"unknown model {name!r}; use some of {list(MODELS)}")


def _frame(table: dict, columns: list, rows):
    import pandas as pd

    return pd.DataFrame({c: table[c][rows] for c in columns})


def _scores(task: str, truth, predicted, positive_score, labels, positive) -> dict:
    """``{metric: score}`` of predictions on the holdout."""
    sk = _sklearn()
    if task == "regression":
        return {"R^2": float(sk.r2_score(truth, predicted)),
                "mean absolute error": float(sk.mean_absolute_error(truth, predicted))}
    scores = {"accuracy": float(sk.accuracy_score(truth, predicted)),
              "macro F1": float(sk.f1_score(truth, predicted, labels=labels, average="macro", zero_division=0))}
    if positive is not None:
        hit = truth == positive
        scores["ROC AUC"] = float(sk.roc_auc_score(hit, positive_score)) if 0 < hit.sum() < len(hit) else float("nan")
    return scores


def _fit_predict(model, task, x, y, test, positive):
    """``(predictions, score of the positive class or None)`` of ``model`` fitted on ``(x, y)``;
    a single class is predicted as a constant."""
    if task == "classification" and len(np.unique(y)) < 2:
        constant = np.full(len(test), y[0], dtype=object)
        return constant, np.full(len(test), float(y[0] == positive))
    with _sklearn().threadpool_limits(1):  # OpenMP's threads wait on each other 40x longer on a busy machine
        model.fit(x, y)
        predicted = model.predict(test)
        if task == "regression" or positive is None:
            return predicted, None
        classes = list(model.classes_)
        scores = model.predict_proba(test)[:, classes.index(positive)] if positive in classes else np.zeros(len(test))
    return predicted, scores


def ml_efficacy(train, holdout, synthetic, target: str, kinds=None, models: Sequence[str] = MODELS,
                seed=0) -> MLEfficacy:
    """Train on synthetic, test on real (TSTR) against train on real, test on real (TRTR) for the
    column ``target`` (see the module's docstring).  ``train``, ``holdout``: the two parts of the
    real table (:func:`split`); ``synthetic``: a table synthesized from ``train`` only, with its
    columns; DataFrames with the original column types.  ``kinds``: the columns' kinds (the
    module's docstring); ``models``: some of :data:`MODELS`; ``seed``: an int or a numpy
    Generator, seeding every model.  Needs scikit-learn (the ``ml`` extra)."""
    _sklearn()
    _frames(**{"training part": train, "holdout": holdout, "synthetic table": synthetic})
    target = str(target)
    if target not in {str(c) for c in train.columns}:
        raise InputError(f"target {target!r} is not a column of the training part")
    models = list(models)
    unknown = [m for m in models if m not in MODELS]
    if not models or unknown:
        raise InputError(f"models must be some of {list(MODELS)}, got {models}")
    kinds = _kinds(train, kinds)
    features = [c for c in kinds if c != target]
    if not features:
        raise InputError(f"the training part has no column besides the target {target!r}")
    numeric = [c for c in features if kinds[c] == "numeric"]
    categorical = [c for c in features if kinds[c] == "categorical"]
    task = "regression" if kinds[target] == "numeric" else "classification"
    tables = {what: _table(frame, kinds, what) for what, frame in
              (("training part", train), ("holdout", holdout), ("synthetic table", synthetic))}
    parts = {}
    for what, table in tables.items():
        y = table[target]
        rows = ~np.isnan(y) if task == "regression" else np.ones(len(y), dtype=bool)
        if not rows.any():
            raise InputError(f"the {what} has no row with a value of the target {target!r}")
        parts[what] = _frame(table, features, rows), y[rows]
    (x_real, y_real), (x_test, y_test), (x_fake, y_fake) = parts.values()
    classes = np.unique(y_real)
    if task == "classification" and len(classes) < 2:
        raise InputError(f"the target {target!r} has a single class in the training part; "
                         "a classifier needs at least two")
    labels = sorted(set(classes) | set(np.unique(y_test))) if task == "classification" else None
    positive = classes[1] if task == "classification" and len(classes) == 2 else None
    seed = _integer_seed(seed)
    rows = []
    for name in models:
        scores = {}
        for side, (x, y) in (("real", (x_real, y_real)), ("synthetic", (x_fake, y_fake))):
            model = _model(name, task, numeric, categorical, seed)
            predicted, positive_score = _fit_predict(model, task, x, y, x_test, positive)
            scores[side] = _scores(task, y_test, predicted, positive_score, labels, positive)
        for metric in scores["real"]:
            real, fake = scores["real"][metric], scores["synthetic"][metric]
            rows.append((MODEL_NAMES[name], metric, real, fake, fake - real, fake / real if real > 0 else float("nan")))
    import pandas as pd

    table = pd.DataFrame(rows, columns=["model", "metric", "real", "synthetic", "difference", "ratio"])
    if task == "classification":
        values, counts = np.unique(y_real, return_counts=True)
        majority = values[np.argmax(counts)]
        chance = _scores(task, y_test, np.full(len(y_test), majority, dtype=object),
                         np.full(len(y_test), 0.5), labels, positive)
    else:
        chance = _scores(task, y_test, np.full(len(y_test), float(np.mean(y_real))), None, None, None)
    return MLEfficacy(target, task, len(classes) if task == "classification" else 0, len(y_test), table, chance)


# ----------------------------------------------------------------------------------------------
# Disclosure: exact matches and distance to closest record
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Disclosure:
    """The outcome of :func:`disclosure`.  ``table``: a DataFrame with a row per statistic and
    the columns ``statistic``, ``synthetic`` and ``holdout`` (the same statistic for the real
    holdout, the baseline): exact-match share, DCR 5th percentile, median and mean (distances in
    [0, 1]), and the share of rows closer than the holdout's median DCR.  ``dcr_synthetic`` and
    ``dcr_holdout``: the sampled rows' DCRs; ``sampled``: ``(synthetic rows, holdout rows)``."""

    table: object
    dcr_synthetic: np.ndarray
    dcr_holdout: np.ndarray
    sampled: tuple

    def text(self) -> str:
        lines = ["Privacy sanity checks: the synthetic table's rows against the real training part, the real "
                 "holdout's rows (never seen by the synthesizer) as the baseline.  These are heuristics and never "
                 "a substitute for the differential-privacy guarantee.",
                 f"{'statistic':<42} {'synthetic':>10} {'holdout':>10}"]
        for row in self.table.itertuples(index=False):
            lines.append(f"{row.statistic:<42} {row.synthetic:10.4f} {row.holdout:10.4f}")
        lines.append(f"DCR: distance to the closest training row, the mean over columns of |a - b| / training range "
                     f"(at most 1) for numbers and 0/1 mismatch for categories, missing a value of its own; on "
                     f"{self.sampled[0]} synthetic and {self.sampled[1]} holdout rows.  A share closer near the "
                     f"holdout's means synthetic rows are no closer to the training part than unseen real rows; "
                     f"near 1, copies.")
        return "\n".join(lines)


def _row_keys(table: dict) -> np.ndarray:
    """A 64-bit hash per row of a ``{column: values}`` table."""
    import pandas as pd

    return pd.util.hash_pandas_object(pd.DataFrame(table), index=False).to_numpy()


class _Coding:
    """The training part on the distance's axes: numbers scaled by its range (missing far
    away), categories as its codes, the narrow ones also one-hot."""

    def __init__(self, train: dict, kinds: dict):
        self.columns = list(kinds)
        self.numeric = [c for c in kinds if kinds[c] == "numeric"]
        self.scale = {}
        for c in self.numeric:
            values = train[c][~np.isnan(train[c])]
            low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
            self.scale[c] = low, (high - low if high > low else 1.0)
        self.categories = {c: {v: k for k, v in enumerate(dict.fromkeys(train[c]))}
                           for c in kinds if kinds[c] == "categorical"}
        self.one_hot, width = [], 0
        for c in sorted(self.categories, key=lambda c: len(self.categories[c])):
            if width + len(self.categories[c]) <= ONE_HOT_WIDTH:
                self.one_hot.append(c)
                width += len(self.categories[c])
        self.compared = [c for c in self.categories if c not in self.one_hot]

    def numbers(self, table: dict, clip: bool) -> np.ndarray:
        """``(n, numeric columns)`` float32: scaled numbers, ``_ABSENT`` where missing; ``clip``
        (rows compared with training rows, whose numbers lie in [0, 1]) bounds them to [-1, 2],
        which leaves every distance capped at 1 unchanged."""
        out = np.empty((len(next(iter(table.values()))), len(self.numeric)), dtype=np.float32)
        for j, c in enumerate(self.numeric):
            low, width = self.scale[c]
            x = (table[c] - low) / width
            out[:, j] = np.where(np.isnan(x), _ABSENT, np.clip(x, -1, 2) if clip else x)
        return out

    def codes(self, table: dict, columns: list) -> np.ndarray:
        """``(n, len(columns))`` codes of the training part's categories, -1 for any other."""
        out = np.empty((len(next(iter(table.values()))), len(columns)), dtype=np.int64)
        for j, c in enumerate(columns):
            known = self.categories[c]
            out[:, j] = np.fromiter((known.get(v, -1) for v in table[c]), dtype=np.int64, count=len(table[c]))
        return out

    def hot(self, table: dict) -> np.ndarray:
        """``(n, width)`` float32 one-hot codes of the narrow categorical columns."""
        codes = self.codes(table, self.one_hot)
        offsets = np.cumsum([0] + [len(self.categories[c]) for c in self.one_hot])
        out = np.zeros((codes.shape[0], offsets[-1]), dtype=np.float32)
        for j in range(len(self.one_hot)):
            seen = codes[:, j] >= 0
            out[np.flatnonzero(seen), offsets[j] + codes[seen, j]] = 1.0
        return out


def closest_distances(train: dict, queries: dict, kinds: dict, chunk_mb: float = CHUNK_MB) -> np.ndarray:
    """Per row of ``queries``, the distance (in [0, 1], the module's docstring) to the closest
    row of ``train``; both ``{column: values}`` over the columns of ``kinds``.  Memory: about
    ``chunk_mb`` MB beyond the two tables' codes."""
    coding = _Coding(train, kinds)
    t_num, q_num = coding.numbers(train, clip=False), coding.numbers(queries, clip=True)
    t_hot, q_hot = coding.hot(train), coding.hot(queries)
    t_codes, q_codes = coding.codes(train, coding.compared), coding.codes(queries, coding.compared)
    n_train, n_queries = t_num.shape[0], q_num.shape[0]
    step = max(1, int(chunk_mb * 2**20 // (8 * n_train)))  # two float32 (chunk, n_train) blocks
    t_hot_t, t_num_t = np.ascontiguousarray(t_hot.T), np.ascontiguousarray(t_num.T)
    out = np.empty(n_queries)
    buffer = np.empty((step, n_train), dtype=np.float32)
    for start in range(0, n_queries, step):
        stop = min(start + step, n_queries)
        total = np.float32(len(coding.one_hot)) - q_hot[start:stop] @ t_hot_t  # mismatched narrow categories
        part = buffer[:stop - start]
        for j in range(t_num.shape[1]):
            np.subtract(q_num[start:stop, j, None], t_num_t[j][None, :], out=part)
            np.abs(part, out=part)
            np.minimum(part, 1.0, out=part)
            total += part
        for j in range(t_codes.shape[1]):
            total += q_codes[start:stop, j, None] != t_codes[None, :, j]
        out[start:stop] = total.min(axis=1)
    return out / max(len(coding.columns), 1)


def disclosure(train, holdout, synthetic, kinds=None, max_rows: int = MAX_ROWS, seed=0) -> Disclosure:
    """Exact-match share and distance to closest record (DCR) of the synthetic table's rows and,
    as the baseline, of the real holdout's rows, against the real training part (the module's
    docstring).  Tables: DataFrames with the original column types over the training part's
    columns; ``kinds``: the columns' kinds; at most ``max_rows`` rows of the synthetic table
    and of the holdout (sampled with ``seed``, an int or a numpy Generator) get a DCR."""
    import pandas as pd

    _frames(**{"training part": train, "holdout": holdout, "synthetic table": synthetic})
    if isinstance(max_rows, bool) or not isinstance(max_rows, (int, np.integer)) or max_rows < 1:
        raise InputError(f"max_rows must be a positive integer, got {max_rows!r}")
    kinds = _kinds(train, kinds)
    real = _table(train, kinds, "training part")
    others = {"synthetic": _table(synthetic, kinds, "synthetic table"), "holdout": _table(holdout, kinds, "holdout")}
    seen = _row_keys(real)
    rng = np.random.default_rng(seed)
    matches, dcr = {}, {}
    for side, table in others.items():
        matches[side] = float(np.isin(_row_keys(table), seen).mean())
        n = len(table[next(iter(kinds))])
        rows = np.sort(rng.choice(n, max_rows, replace=False)) if n > max_rows else np.arange(n)
        dcr[side] = closest_distances(real, {c: v[rows] for c, v in table.items()}, kinds)
    baseline = float(np.median(dcr["holdout"]))
    stats = {"exact-match share": matches,
             "DCR 5th percentile": {s: float(np.quantile(d, 0.05)) for s, d in dcr.items()},
             "DCR median": {s: float(np.median(d)) for s, d in dcr.items()},
             "DCR mean": {s: float(np.mean(d)) for s, d in dcr.items()},
             "share closer than the holdout's median DCR": {s: float(np.mean(d < baseline)) for s, d in dcr.items()}}
    table = pd.DataFrame([(name, v["synthetic"], v["holdout"]) for name, v in stats.items()],
                         columns=["statistic", "synthetic", "holdout"])
    return Disclosure(table, dcr["synthetic"], dcr["holdout"], (len(dcr["synthetic"]), len(dcr["holdout"])))
