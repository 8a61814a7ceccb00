"""Detect network-induced memory contention and predict its cost with random forests (Groves 2016).

As in Groves 2016: a classifier says whether NiMC is present in a sample (a triad interval), a regressor
predicts its run-time impact (the sample's slowdown against its round's baseline, %), both scored out
of bag and with their feature importances. Unlike a single out-of-bag score over all samples, we also
hold out whole runs: a run's samples are never both in training and in test, because samples of one
run share that run's state of the machine and would flatter the score.

Samples astride the start or end of a burst of traffic (phase "edge") are left out of training and of
the accuracy. Features are the per-sample columns ``contend bench nimc`` records (docs/formats.md, "nimc data"). This
machine has no hardware counters, so Groves 2016's cache-miss and stall counts are not among them; where
a machine has them (``hw_*`` columns with values), they join the feature set.
"""

from __future__ import annotations

import json
import math
import os
import random
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from contend.atomic import atomic_path, beside
from contend.errors import UserError

# version 2: a skops file (version 1 was a pickle, which runs code when loaded)
FORMAT, VERSION = "contend-nimc-model", 2
LABEL, TARGET, RUN = "nimc", "slowdown_pct", "run"

# What the triad (the application) sees of itself: its speed and its own software counters.
VICTIM = ("triad_cpu_Bps", "triad_Bps", "triad_rel_max", "triad_rel_median", "cpu_share", "context_switches",
          "involuntary_cs", "voluntary_cs", "page_faults", "cpu_migrations", "core_rate", "triad_vs_core")
# The core's own speed and the triad against it: recorded since the core kernel joined the pattern, so
# a named set drops them from data recorded before (an explicit --features list still demands them).
OPTIONAL = ("core_rate", "triad_vs_core")
# What the node shows besides: the CPU time split of both cores (/proc/stat), others' work on the
# triad's core. Not the load average: it moves over minutes, so it names the run a sample came from
# (a forest learns runs, not contention, from it); it stays in the data to tell noisy samples apart.
NODE = ("cpu_triad_user", "cpu_triad_system", "cpu_triad_softirq", "cpu_triad_irq", "cpu_triad_idle",
        "cpu_triad_steal", "cpu_other_user", "cpu_other_system", "cpu_other_softirq", "cpu_other_irq",
        "cpu_other_idle", "cpu_other_steal", "foreign_on_triad_core")
HARDWARE = ("hw_cycles", "hw_instructions", "hw_cache_references", "hw_cache_misses", "hw_stalled_backend")
TIMING = ("triad_cpu_Bps", "triad_Bps", "triad_rel_max", "triad_rel_median", "core_rate", "triad_vs_core")
FEATURE_SETS = {
    "victim": VICTIM,
    "node": VICTIM + NODE,
    "counters": tuple(f for f in VICTIM + NODE if f not in TIMING),  # no triad timing at all
}
KNOWN = set(VICTIM + NODE + HARDWARE)
DEFAULT_SOURCES = ("none", "spin", "put", "tcp")


def select_features(frame: pd.DataFrame, feature_set: str = "node", names: Sequence[str] | None = None,
                    where: str = "data") -> list[str]:
    """The feature columns to use: explicit ``names`` or a named set, plus the hardware counters the data
    really has (a column of -1 means the machine had none)."""
    if names:
        unknown = [n for n in names if n not in KNOWN]
        if unknown:
            raise UserError(f"--features: unknown feature(s) {', '.join(unknown)} (known: {', '.join(sorted(KNOWN))})")
        chosen = list(names)
    else:
        if feature_set not in FEATURE_SETS:
            raise UserError(f"--feature-set: unknown set {feature_set!r} (choose {', '.join(FEATURE_SETS)})")
        chosen = [f for f in FEATURE_SETS[feature_set] if f in frame.columns or f not in OPTIONAL]
        chosen += [h for h in HARDWARE if h in frame and (frame[h] >= 0).all()]
    missing = [n for n in chosen if n not in frame.columns]
    if missing:
        raise UserError(f"{where}: missing feature column(s) {', '.join(missing)}")
    return chosen


def _check_training(frame: pd.DataFrame, features: list[str], where: str) -> None:
    if frame.empty:
        raise UserError(f"{where}: no samples to train on")
    for column in (LABEL, TARGET, RUN):
        if column not in frame.columns:
            raise UserError(f"{where}: no {column!r} column (the label a sweep of `contend bench nimc` writes)")
    labels = frame[LABEL]
    if labels.isna().any() or not labels.isin([0, 1, True, False]).all():
        bad = labels[labels.isna() | ~labels.isin([0, 1, True, False])].iloc[0]
        raise UserError(f"{where}: column {LABEL!r} must be true/false (0/1), found {bad!r}")
    if labels.astype(bool).nunique() < 2:
        only = "present" if bool(labels.iloc[0]) else "absent"
        raise UserError(f"{where}: every sample has NiMC {only}: a detector needs samples of both classes")
    numeric = frame[features + [TARGET]]
    for column in numeric.columns:
        if not pd.api.types.is_numeric_dtype(numeric[column]):
            raise UserError(f"{where}: column {column!r} is not numeric")
        if not np.isfinite(numeric[column].to_numpy(float)).all():
            raise UserError(f"{where}: column {column!r} has missing or infinite values")


def split_runs(frame: pd.DataFrame, test_fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (train, test) that keep each run whole, holding out about ``test_fraction`` of the
    runs of each class (at least one when the fraction is above 0).

    >>> f = pd.DataFrame({"run": [0, 0, 1, 1, 2, 3, 4, 5], "nimc": [0, 0, 0, 0, 0, 1, 1, 1]})
    >>> train, test = split_runs(f, 0.3, seed=1)
    >>> held = sorted(set(f.run[test]))
    >>> len(held), sorted(f.nimc[f.run.isin(held)].unique().tolist()), set(f.run[train]) & set(held)
    (2, [0, 1], set())
    """
    test_runs: set[Any] = set()
    if test_fraction > 0:
        shuffle = random.Random(seed)
        per_run = frame.groupby(RUN)[LABEL].agg(lambda x: bool(x.astype(bool).mean() >= 0.5))
        for cls in (False, True):
            runs = sorted(per_run[per_run == cls].index)
            if len(runs) < 2:
                raise UserError(f"holding out runs needs at least 2 runs with NiMC {'present' if cls else 'absent'}, "
                                f"found {len(runs)} (--test-fraction 0 trains on all)")
            shuffle.shuffle(runs)
            take = min(len(runs) - 1, max(1, math.ceil(test_fraction * len(runs))))
            test_runs.update(runs[:take])
    test = frame[RUN].isin(test_runs).to_numpy()
    return ~test, test


@dataclass
class Detector:
    """A trained pair of forests and what they were trained on."""

    features: list[str]
    classifier: Any
    regressor: Any
    feature_set: str = "node"
    metrics: dict[str, Any] = field(default_factory=dict)
    trained_on: dict[str, Any] = field(default_factory=dict)

    def importances(self) -> dict[str, dict[str, float]]:
        return {
            "classifier (NiMC present)": dict(zip(self.features, map(float, self.classifier.feature_importances_))),
            "regressor (slowdown %)": dict(zip(self.features, map(float, self.regressor.feature_importances_))),
        }

    def predict(self, frame: pd.DataFrame, where: str = "data") -> pd.DataFrame:
        """Per sample: ``nimc_predicted``, ``nimc_probability``, ``slowdown_predicted``."""
        missing = [f for f in self.features if f not in frame.columns]
        if missing:
            raise UserError(f"{where}: missing feature column(s) the model needs: {', '.join(missing)}")
        if frame.empty:
            raise UserError(f"{where}: no samples")
        x = frame[self.features]
        for column in self.features:
            if not pd.api.types.is_numeric_dtype(x[column]) or not np.isfinite(x[column].to_numpy(float)).all():
                raise UserError(f"{where}: feature column {column!r} is not numeric or has missing values")
        values = x.to_numpy(float)
        out = pd.DataFrame(index=frame.index)
        out["nimc_predicted"] = self.classifier.predict(values).astype(bool)
        out["nimc_probability"] = self.classifier.predict_proba(values)[:, list(self.classifier.classes_).index(True)]
        out["slowdown_predicted"] = self.regressor.predict(values)
        return out


def _run_votes(frame: pd.DataFrame, said: pd.Series) -> pd.DataFrame:
    """Per run: ``truth`` (some sample of it has NiMC) and ``said`` (most of the samples where traffic
    could be, those inside bursts or all of a continuous run, were flagged)."""
    where = frame["phase"] == "on" if "phase" in frame else pd.Series(True, index=frame.index)
    votes = pd.DataFrame({"run": frame[RUN], "truth": frame[LABEL].astype(bool), "said": said.astype(bool),
                          "where": where})
    truth = votes.groupby("run")["truth"].any()
    said_by_run = votes[votes["where"]].groupby("run")["said"].mean().reindex(truth.index).fillna(0) >= 0.5
    return pd.DataFrame({"truth": truth, "said": said_by_run})


def _scores(detector: Detector, frame: pd.DataFrame) -> dict[str, Any]:
    """Held-out figures: sample accuracy, run accuracy (majority of a run's samples), per source, R², MAE."""
    from sklearn.metrics import mean_absolute_error, r2_score

    predicted = detector.predict(frame)
    truth = frame[LABEL].astype(bool)
    per_run = _run_votes(frame, predicted["nimc_predicted"])
    scores = {
        "samples": int(len(frame)), "runs": int(frame[RUN].nunique()),
        "accuracy": float((predicted["nimc_predicted"] == truth).mean()),
        "run_accuracy": float((per_run["said"] == per_run["truth"]).mean()),
        "slowdown_r2": float(r2_score(frame[TARGET], predicted["slowdown_predicted"])) if len(frame) > 1 else float("nan"),
        "slowdown_mae": float(mean_absolute_error(frame[TARGET], predicted["slowdown_predicted"])),
    }
    if "source" in frame:
        scores["accuracy_by_source"] = {
            str(s): float((predicted["nimc_predicted"][g.index] == truth[g.index]).mean())
            for s, g in frame.groupby("source")}
    return scores


def train(frame: pd.DataFrame, *, feature_set: str = "node", features: Sequence[str] | None = None,
          test_fraction: float = 0.3, trees: int = 300, seed: int = 1, where: str = "data") -> Detector:
    """Fit both forests on the training runs; out-of-bag scores on them, held-out scores on the rest."""
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    if "phase" in frame:  # samples astride a burst's start or end are neither with nor without NiMC
        frame = frame[frame["phase"] != "edge"]
    chosen = select_features(frame, feature_set, features, where)
    _check_training(frame, chosen, where)
    train_mask, test_mask = split_runs(frame, test_fraction, seed)
    fit = frame[train_mask]
    if fit[LABEL].astype(bool).nunique() < 2:
        raise UserError(f"{where}: the training runs hold only one class")
    x, y, target = fit[chosen].to_numpy(float), fit[LABEL].astype(bool).to_numpy(), fit[TARGET].to_numpy(float)
    # min_samples_leaf=2 and sqrt features: the usual forest settings; oob_score as in Groves 2016.
    # With few trees some samples are in every tree's bootstrap sample: scikit-learn warns on stderr,
    # and the metrics say it instead (the command's output stays ours).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        classifier = RandomForestClassifier(n_estimators=trees, oob_score=True, random_state=seed,
                                            min_samples_leaf=2, n_jobs=1).fit(x, y)
        regressor = RandomForestRegressor(n_estimators=trees, oob_score=True, random_state=seed,
                                          min_samples_leaf=2, max_features=0.5, n_jobs=1).fit(x, target)
    unexpected = [w for w in caught if "OOB" not in str(w.message)]
    for w in unexpected:  # anything else is not ours to hide
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    detector = Detector(features=chosen, classifier=classifier, regressor=regressor,
                        feature_set="custom" if features else feature_set)
    detector.metrics = {
        "oob_accuracy": float(classifier.oob_score_), "oob_slowdown_r2": float(regressor.oob_score_),
        "train": {"samples": int(len(fit)), "runs": int(fit[RUN].nunique())},
    }
    if len(unexpected) < len(caught):
        detector.metrics["oob_caveat"] = (f"with {trees} trees some training samples have no out-of-bag "
                                          "estimate (the OOB scores leave them out); use more --trees")
    if test_mask.any():
        detector.metrics["held_out"] = _scores(detector, frame[test_mask])
    detector.trained_on = {
        "samples": int(len(frame)), "runs": int(frame[RUN].nunique()), "test_fraction": test_fraction,
        "seed": seed, "trees": trees,
        "sources": sorted(map(str, frame["source"].unique())) if "source" in frame else [],
        "loadavg_median": _loadavg_median(frame),
    }
    return detector


def _loadavg_median(frame: pd.DataFrame) -> float | None:
    """The samples' median load average, a record of the host's state: None when the column is missing
    or holds no numbers (it is not a feature, so a damaged one does not stop training)."""
    if "loadavg_1min" not in frame or not pd.api.types.is_numeric_dtype(frame["loadavg_1min"]):
        return None
    median = frame["loadavg_1min"].median()
    return float(median) if np.isfinite(median) else None


def schema(detector: Detector) -> dict[str, Any]:
    import sklearn

    return {"format": FORMAT, "version": VERSION, "features": detector.features, "feature_set": detector.feature_set,
            "label": LABEL, "target": TARGET, "sklearn": sklearn.__version__, "metrics": detector.metrics,
            "trained_on": detector.trained_on, "importances": detector.importances()}


def save(detector: Detector, path: str | os.PathLike) -> Path:
    """The model (skops: the forests and their schema) and its schema as JSON beside it (``.json``)."""
    import skops.io

    path = Path(path)
    header = schema(detector)
    with atomic_path(path) as temporary:
        skops.io.dump({**header, "classifier": detector.classifier, "regressor": detector.regressor}, temporary)
    schema_path = beside(path, path.name + ".json")
    if schema_path is not None:
        with atomic_path(schema_path) as temporary:
            temporary.write_text(json.dumps(header, indent=1))
    return path


# The only type a model file may hold beyond what skops trusts by default (the forests, their trees'
# estimators, arrays, plain data): the trees' arrays. skops rebuilds nothing else and runs no code.
_TRUSTED = ["sklearn.tree._tree.Tree"]


def load(path: str | os.PathLike) -> Detector:
    """A model saved by ``save``; a UserError naming the file when it is not one, does not fit this code or
    holds trees that do not hold together. A model file is untrusted input: loading it runs no code (skops,
    not pickle), and every tree is checked before any prediction walks it (``_check_forest``)."""
    import skops.io
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        stored = skops.io.load(path, trusted=_TRUSTED)
    except Exception as exc:  # skops raises whatever its parts do on a damaged or foreign file
        message = " ".join(str(exc).split())[:120]
        raise UserError(f"{path}: not a contend nimc model ({type(exc).__name__}: {message})") from None
    if not isinstance(stored, dict) or stored.get("format") != FORMAT:
        raise UserError(f"{path}: not a contend nimc model (no {FORMAT!r} header)")
    if stored.get("version") != VERSION:
        raise UserError(f"{path}: nimc model version {stored.get('version')!r}, this contend reads version {VERSION}")
    features = stored.get("features")
    if not isinstance(features, list) or not features or not all(isinstance(f, str) for f in features):
        raise UserError(f"{path}: the model's feature list is missing or malformed")
    unknown = [f for f in features if f not in KNOWN]
    if unknown:
        raise UserError(f"{path}: the model uses feature(s) this contend does not know: {', '.join(unknown)}")
    classifier, regressor = stored.get("classifier"), stored.get("regressor")
    for name, model, kind in (("classifier", classifier, RandomForestClassifier),
                              ("regressor", regressor, RandomForestRegressor)):
        if type(model) is not kind:
            raise UserError(f"{path}: the {name} is not a {kind.__name__}")
        if getattr(model, "n_features_in_", None) != len(features):
            raise UserError(f"{path}: the {name} does not take the {len(features)} features its schema lists")
        _check_forest(model, len(features), f"{path}: the {name}")
    return Detector(features=features, classifier=classifier, regressor=regressor,
                    feature_set=stored.get("feature_set", "custom"), metrics=stored.get("metrics", {}),
                    trained_on=stored.get("trained_on", {}))


def _check_forest(forest, n_features: int, where: str) -> None:
    """Every tree of ``forest`` safe to walk: scikit-learn's compiled prediction trusts the arrays (an
    out-of-range child or feature reads outside them), so a damaged file would crash it, not raise."""
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    classifier = hasattr(forest, "classes_")
    if classifier and (np.asarray(forest.classes_).tolist() != [False, True] or forest.n_classes_ != 2):
        raise UserError(f"{where} must have the classes [False, True]")
    if getattr(forest, "n_outputs_", None) != 1:
        raise UserError(f"{where} must have one output")
    kind = DecisionTreeClassifier if classifier else DecisionTreeRegressor
    estimators = getattr(forest, "estimators_", None)
    if not isinstance(estimators, list) or not estimators:
        raise UserError(f"{where} holds no trees")
    for number, estimator in enumerate(estimators):
        problem = _tree_problem(estimator, kind, n_features, 2 if classifier else 1)
        if problem:
            raise UserError(f"{where}'s tree {number}: {problem}")


def _tree_problem(estimator, kind, n_features: int, n_values: int) -> str | None:
    """What is wrong with one decision tree, or None. Nodes are stored parents first (scikit-learn
    builds depth first), so children above their parent also rule out cycles."""
    from sklearn.tree._tree import Tree

    if type(estimator) is not kind or getattr(estimator, "n_features_in_", None) != n_features \
            or getattr(estimator, "n_outputs_", None) != 1 or type(getattr(estimator, "tree_", None)) is not Tree:
        return f"not a {kind.__name__} of {n_features} features and one output"
    if n_values == 2 and (np.asarray(estimator.classes_).tolist() != [False, True] or estimator.n_classes_ != 2):
        return "not a tree of the classes [False, True]"
    tree = estimator.tree_
    count = int(tree.node_count)
    if count < 1 or tree.n_features != n_features or tree.n_outputs != 1:
        return f"{count} nodes, {tree.n_features} features, {tree.n_outputs} outputs"
    left, right = np.asarray(tree.children_left), np.asarray(tree.children_right)
    feature, threshold = np.asarray(tree.feature), np.asarray(tree.threshold)
    if not all(len(a) == count for a in (left, right, feature, threshold)):
        return "node arrays of different lengths"
    if tuple(np.shape(tree.value)) != (count, 1, n_values):
        return f"values of shape {np.shape(tree.value)}, not ({count}, 1, {n_values})"
    leaf = (left == -1) & (right == -1)
    inner = ~leaf
    nodes = np.arange(count)
    if not (((left > nodes) & (left < count) & (right > nodes) & (right < count)) | leaf).all():
        return "a child index out of range (children come after their node, leaves have -1 and -1)"
    if ((feature[inner] < 0) | (feature[inner] >= n_features)).any():
        return f"a split on a feature outside 0..{n_features - 1}"
    if not np.isfinite(threshold[inner]).all() or not np.isfinite(np.asarray(tree.value)).all():
        return "a threshold or value that is not finite"
    return None


def detect(detector: Detector, frame: pd.DataFrame, where: str = "data") -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-sample predictions and a summary: per run when the data has runs (majority of its samples),
    and the accuracy against the labels when the data has them."""
    if TARGET in frame and not pd.api.types.is_numeric_dtype(frame[TARGET]):  # summarised per run below
        raise UserError(f"{where}: column {TARGET!r} is not numeric")
    predicted = detector.predict(frame, where)
    merged = pd.concat([frame, predicted], axis=1)
    summary: dict[str, Any] = {
        "samples": int(len(frame)), "flagged": int(predicted["nimc_predicted"].sum()),
        "slowdown_predicted_median": float(predicted["slowdown_predicted"].median()),
    }
    if RUN in frame:
        if frame[RUN].isna().any():  # a sample of no run would fall out of the per-run summary
            raise UserError(f"{where}: column {RUN!r} has {int(frame[RUN].isna().sum())} missing value(s)")
        keys = [RUN] + [c for c in ("source", "rate_target_Bps") if c in frame]
        runs = merged.groupby(keys, dropna=False).agg(samples=("nimc_predicted", "size"), flagged=("nimc_predicted", "mean"),
                                       probability=("nimc_probability", "mean"),
                                       slowdown_predicted=("slowdown_predicted", "median")).reset_index()
        runs["nimc"] = runs["flagged"] >= 0.5
        if LABEL in frame and TARGET in frame and frame[LABEL].isin([0, 1, True, False]).all():
            votes = _run_votes(frame, predicted["nimc_predicted"])
            runs["nimc"] = runs[RUN].map(votes["said"])
            runs["truth"] = runs[RUN].map(votes["truth"])
            runs["slowdown"] = runs[RUN].map(merged.groupby(RUN)[TARGET].median())
        summary["runs"] = runs.to_dict(orient="records")
    if LABEL in frame and frame[LABEL].isin([0, 1, True, False]).all():
        clear = frame["phase"] != "edge" if "phase" in frame else pd.Series(True, index=frame.index)
        summary["accuracy"] = float((predicted["nimc_predicted"][clear] == frame[LABEL][clear].astype(bool)).mean())
    return merged, summary
