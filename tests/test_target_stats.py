"""Target statistics of pooled categorical features (hgbt/data/target_stats.py):
the cross-fitted and full-data values against a direct computation, and what
the estimators do with the extra columns (predictions, contributions,
importances, partial dependence, tables, constraints, persistence)."""
import json
import pickle

import numpy as np
import pandas as pd
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.data import target_stats
from hgbt.data.categorical import POOLED_BIN
from hgbt.inspection import partial_dependence
from hgbt.persistence import load_model, model_from_dict, model_to_dict, save_model
from fitted import target_stats as fitted_target_stats

N_LEVELS = 1500


def _task(n=6000, seed=0):
    """Integer codes (Zipf-like, most of them rare and pooled) whose effect on
    the target is random per category, and a numeric feature."""
    rng = np.random.default_rng(seed)
    codes = np.minimum(rng.zipf(1.15, n) - 1, N_LEVELS - 1).astype(float)
    effect = rng.normal(size=N_LEVELS)
    x = rng.normal(size=n)
    y = effect[codes.astype(int)] + 0.5 * x + 0.3 * rng.normal(size=n)
    codes[::31] = np.nan
    return np.column_stack([codes, x]), y


def _smoothed_reference(y, w, codes, n_positions):
    """Each position's smoothed mean, written out category by category."""
    scale = 1.0 / w.mean()
    mean = np.sum(w * y) / np.sum(w)
    var = np.sum(w * (y - mean) ** 2) / np.sum(w)
    out = np.full(n_positions, mean)
    for c in range(n_positions):
        rows = codes == c
        if not rows.any() or w[rows].sum() == 0:
            continue
        n_c = w[rows].sum()
        mean_c = np.sum(w[rows] * y[rows]) / n_c
        var_c = np.sum(w[rows] * (y[rows] - mean_c) ** 2) / n_c
        denominator = n_c * scale * var + var_c
        shrink = n_c * scale * var / denominator if denominator > 0 else 1.0
        out[c] = shrink * mean_c + (1 - shrink) * mean
    return out


def _no_statistics(X, features, *args):
    """``target_stats.fit_transform`` as fits were before target statistics:
    no statistics, no columns (the pooled bins alone)."""
    return None, np.empty((X.shape[0], 0))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_classes", [None, 2, 3])
def test_cross_fitted_and_full_values_match_a_direct_computation(weighted, n_classes):
    rng = np.random.default_rng(1)
    n, n_positions = 400, 40
    X = np.column_stack([rng.normal(size=n), rng.integers(0, n_positions - 5, n).astype(float)])
    X[::17, 1] = np.nan
    y = rng.integers(0, 3, n) if n_classes == 3 else (
        rng.integers(0, 2, n) if n_classes == 2 else rng.gamma(2.0, size=n))
    w = rng.uniform(0.5, 3.0, n) if weighted else None
    y_cols = target_stats.target_columns(y, n_classes)
    assert y_cols.shape == (n, 3 if n_classes == 3 else 1)
    stats, columns = target_stats.fit_transform(X, [1], [n_positions], y_cols, w, seed=5)
    weights = np.ones(n) if w is None else w
    valid = ~np.isnan(X[:, 1])
    codes = np.where(valid, X[:, 1], -1).astype(int)
    folds = target_stats.folds_of(5, np.arange(n))
    assert set(np.bincount(folds, minlength=5) // 20) <= {3, 4, 5}  # near n / 5 each
    for o in range(y_cols.shape[1]):
        full = _smoothed_reference(y_cols[valid, o], weights[valid], codes[valid],
                                   n_positions)
        np.testing.assert_allclose(stats["tables"][0][:, o], full, rtol=1e-10, atol=1e-12)
        for k in range(5):
            train = valid & (folds != k)
            table = _smoothed_reference(y_cols[train, o], weights[train], codes[train],
                                        n_positions)
            rows = valid & (folds == k)
            np.testing.assert_allclose(columns[rows, o], table[codes[rows]],
                                       rtol=1e-10, atol=1e-12)
    assert np.all(np.isnan(columns[~valid]))
    np.testing.assert_allclose(stats["weights"][0], np.bincount(
        codes[valid], weights=weights[valid], minlength=n_positions))
    # a row's own target never enters its training value: a category seen once
    # gets the other rows' mean, not its target
    once = np.flatnonzero(np.bincount(codes[valid], minlength=n_positions) == 1)
    if once.size and n_classes is None:
        row = np.flatnonzero(codes == once[0])[0]
        assert columns[row, 0] != pytest.approx(y[row])


def test_transform_looks_up_positions_and_missing_is_nan():
    stats = {"features": np.array([0], dtype=np.int64),
             "tables": [np.array([[1.0], [2.0], [3.0]])], "weights": [np.ones(3)]}
    X = np.array([[0.0, 9.0], [2.0, 9.0], [np.nan, 9.0], [3.0, 9.0], [-1.0, 9.0]])
    np.testing.assert_array_equal(target_stats.transform(stats, X).ravel(),
                                  [1.0, 3.0, np.nan, np.nan, np.nan])
    out = target_stats.with_columns(X, [0], target_stats.transform(stats, X))
    assert out.shape == (5, 3)
    np.testing.assert_array_equal(out[:, 1], 9.0)
    X_big = np.array([[300.0, 1.0]])
    assert target_stats.with_columns(X_big, [0], np.zeros((1, 1)))[0, 0] == POOLED_BIN
    # fold adds the statistic's entries to its feature, keeping trailing columns
    values = np.arange(8.0).reshape(2, 4)  # 2 features, 1 statistic, a last column
    np.testing.assert_array_equal(target_stats.fold(values, stats, 2, axis=-1),
                                  [[2.0, 1.0, 3.0], [10.0, 5.0, 7.0]])


@pytest.fixture(scope="module")
def fitted():
    X, y = _task()
    model = HistGBDTRegressor(categorical_features=[0], max_iter=40, random_state=0,
                              early_stopping=False).fit(X[:5000], y[:5000])
    return model, X, y


def test_statistics_beat_the_pooled_bin_alone(fitted):
    model, X, y = fitted
    assert fitted_target_stats(model)["features"].tolist() == [0]
    # the model of before: the pooled feature's bins as its input
    bins = model._validate_X(X)[:, :2]
    pooled_only = HistGBDTRegressor(categorical_features=[0], max_iter=40, random_state=0,
                                    early_stopping=False).fit(bins[:5000], y[:5000])
    mse = np.mean((model.predict(X[5000:]) - y[5000:]) ** 2)
    mse_pooled = np.mean((pooled_only.predict(bins[5000:]) - y[5000:]) ** 2)
    assert mse < 0.9 * mse_pooled
    # rare categories are told apart: two pooled ones with different statistics
    table = fitted_target_stats(model)["tables"][0][:, 0]
    low, high = POOLED_BIN + np.argmin(table[POOLED_BIN:]), POOLED_BIN + np.argmax(
        table[POOLED_BIN:])
    rows = np.array([[low, 0.0], [high, 0.0]])
    assert model.predict(rows)[0] < model.predict(rows)[1]


def test_contributions_importances_and_tables_name_the_source_feature(fitted):
    model, X, _ = fitted
    contributions = model.predict_contributions(X[:50])
    assert contributions.shape == (50, 3)
    np.testing.assert_allclose(contributions.sum(axis=1), model.predict(X[:50]), atol=1e-9)
    interactions = model.predict_interactions(X[:5])
    assert interactions.shape == (5, 3, 3)
    np.testing.assert_allclose(interactions.sum(axis=2), contributions[:5], atol=1e-9)
    importances = model.feature_importances_
    assert importances.shape == (2,) and importances.sum() == pytest.approx(1.0)
    frame = model.trees_to_dataframe()
    on_stats = frame[frame["split_type"] == "target_mean"]
    assert len(on_stats) > 0 and set(on_stats["feature_idx"]) == {0}
    assert set(frame.loc[~frame["is_leaf"], "feature_idx"]) == {0, 1}
    gains = frame[~frame["is_leaf"]].groupby("feature_idx")["gain"].sum()
    np.testing.assert_allclose(importances, gains / gains.sum())
    assert "target_mean(x0) <=" in model.dump_trees()


def test_partial_dependence_of_a_pooled_feature_is_the_brute_force_average():
    X, y = _task(n=3000, seed=4)
    model = HistGBDTRegressor(categorical_features=[0], max_iter=30, max_depth=1,
                              random_state=0, early_stopping=False).fit(X, y)
    result = partial_dependence(model, X, [0])
    grid = result.grid_values[0]
    positions = model.booster_.prepare(X, positions=True)[:, 0]
    counts = np.bincount(positions[~np.isnan(positions)].astype(int))

    def brute(position):
        X_at = X.copy()
        X_at[:, 0] = model.categorical_categories_[0][position]
        return model.predict(X_at).mean()

    for k, code in enumerate(grid):
        if code < POOLED_BIN:
            expected = brute(int(code))
        else:  # the shared bin: each pooled category, weighted by its rows
            pool = np.flatnonzero(counts[POOLED_BIN:]) + POOLED_BIN
            expected = np.average([brute(p) for p in pool], weights=counts[pool])
        assert result.average[0, k] == pytest.approx(expected, abs=1e-9)


def test_interaction_constraints_hold_for_the_statistic():
    X, y = _task(n=3000, seed=5)
    model = HistGBDTRegressor(categorical_features=[0], interaction_cst="no_interactions",
                              max_iter=20, random_state=0,
                              early_stopping=False).fit(X, y + X[:, 1] * np.nan_to_num(X[:, 0]))
    frame = model.trees_to_dataframe()
    used = set()
    for _, tree in frame.groupby("tree"):
        rows = tree.set_index("node")

        def walk(node, seen):
            row = rows.loc[node]
            if row["is_leaf"]:
                assert len(seen) <= 1, seen
                return
            seen = seen | {row["feature_idx"]}
            walk(row["left"], seen)
            walk(row["right"], seen)

        walk(0, frozenset())
        used |= set(tree["split_type"].dropna())
    assert "target_mean" in used


@pytest.mark.parametrize("labels", ["binary", "multiclass"])
def test_classifier_statistics_and_round_trips(labels, tmp_path):
    X, y = _task(n=4000, seed=6)
    target = (y > 0).astype(int) if labels == "binary" else np.digitize(y, [-0.5, 0.5])
    model = HistGBDTClassifier(categorical_features=[0], max_iter=15, random_state=0).fit(
        X, target)
    n_out = 1 if labels == "binary" else 3
    assert fitted_target_stats(model)["tables"][0].shape[1] == n_out
    proba = model.predict_proba(X)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).predict_proba(X), proba)
    path = tmp_path / "model.json"
    save_model(model, path)
    assert json.loads(path.read_text())["format_version"] == 3
    np.testing.assert_array_equal(load_model(path).predict_proba(X), proba)
    if labels == "multiclass":
        kinds = set(model.trees_to_dataframe()["split_type"].dropna())
        assert kinds & {"target_mean:0", "target_mean:1", "target_mean:2"}
    # a corrupted table is refused with the attribute named
    document = json.loads(path.read_text())
    name, weights = document["fitted"]["attributes"]["_target_stats"]["items"][2]
    assert name == "weights"
    weights[0]["data"][0] = -1.0
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="_target_stats.*non-negative"):
        load_model(path, verify_checksum=False)


def test_same_model_for_any_thread_count_and_input_untouched():
    X, y = _task(n=3000, seed=7)
    frame = pd.DataFrame({"c": pd.Categorical([None if np.isnan(c) else f"k{int(c)}"
                                               for c in X[:, 0]]), "x": X[:, 1]})
    before = frame.copy()
    models = [HistGBDTRegressor(max_iter=15, random_state=3, n_threads=t).fit(frame, y)
              for t in (1, 2)]
    pd.testing.assert_frame_equal(frame, before)
    assert fitted_target_stats(models[0]) is not None
    np.testing.assert_array_equal(models[0].predict(frame), models[1].predict(frame))


def test_models_saved_before_target_statistics_still_predict(tmp_path, monkeypatch):
    """A pooled model without statistics (format version 2) reads the bins."""
    X, y = _task(n=3000, seed=8)
    bins = None

    with monkeypatch.context() as patch:
        patch.setattr(target_stats, "fit_transform", _no_statistics)
        old = HistGBDTRegressor(categorical_features=[0], max_iter=10, random_state=0,
                                early_stopping=False).fit(X, y)
        bins = old._validate_X(X)
    assert bins.shape == X.shape
    reference = HistGBDTRegressor(categorical_features=[0], max_iter=10, random_state=0,
                                  early_stopping=False).fit(bins, y)
    path = tmp_path / "old.json"
    save_model(old, path)
    assert json.loads(path.read_text())["format_version"] == 2
    np.testing.assert_array_equal(load_model(path).predict(X), reference.predict(bins))


def test_warm_start_of_a_model_saved_before_target_statistics(monkeypatch):
    X, y = _task(n=3000, seed=9)

    with monkeypatch.context() as patch:
        patch.setattr(target_stats, "fit_transform", _no_statistics)
        old = HistGBDTRegressor(categorical_features=[0], max_iter=5, random_state=0,
                                early_stopping=False, warm_start=True).fit(X, y)
    old.set_params(max_iter=10).fit(X, y)  # continues on the bins alone
    assert old.n_iter_ == 10 and fitted_target_stats(old) is None
    assert np.all(np.isfinite(old.predict(X)))


def test_loading_refuses_statistics_that_do_not_match_the_pooled_features(fitted):
    model = fitted[0]
    # a file whose record of pooled features contradicts its categories
    document = model_to_dict(model)
    document["fitted"]["attributes"]["_categorical_pooled"] = False
    with pytest.raises(ValueError, match="_categorical_pooled"):
        model_from_dict(document, verify_checksum=False)
    for edit, message in [
            (lambda m: fitted_target_stats(m)["tables"].__setitem__(
                0, fitted_target_stats(m)["tables"][0][:-1]), "tables"),
            (lambda m: fitted_target_stats(m).__setitem__(
                "features", np.array([1], dtype=np.int64)), "pooled features")]:
        clone = pickle.loads(pickle.dumps(model))  # a copy of its own: edited in place
        edit(clone)
        with pytest.raises(ValueError, match=message):
            pickle.loads(pickle.dumps(clone))


def test_partial_dependence_refuses_too_many_combinations(fitted, monkeypatch):
    model, X, _ = fitted
    monkeypatch.setattr("hgbt.model.explain.MAX_POOLED_POINTS", 10)
    with pytest.raises(ValueError, match="needs .* evaluations"):
        partial_dependence(model, X, [0])


def test_callbacks_see_integer_codes_not_positions(fitted):
    model, X, _ = fitted
    X_codes = X.copy()
    X_codes[:, 0] = np.where(np.isnan(X[:, 0]), np.nan, X[:, 0] * 3 + 1000)
    on_codes = HistGBDTRegressor(categorical_features=[0], max_iter=2).fit(X_codes, X[:, 1])
    positions = on_codes.booster_.prepare(X_codes, positions=True)
    assert not np.array_equal(positions, X_codes, equal_nan=True)
    np.testing.assert_array_equal(on_codes.booster_.user_codes(positions), X_codes)


@pytest.mark.parametrize("n_classes", [None, 3])
def test_statistics_over_shards_are_those_of_all_rows(n_classes):
    # exact sums on grids, folds from each row's global index: three processes
    # (one without rows) get the statistics and cross-fitted values of one
    from test_ring import ring_of, run_all

    rng = np.random.default_rng(4)
    n, n_positions = 900, 300
    X = np.column_stack([rng.normal(size=n), rng.integers(0, n_positions, n).astype(float)])
    X[::13, 1] = np.nan
    y = rng.integers(0, 3, n) if n_classes else rng.normal(5.0, 2.0, n)
    y_cols = target_stats.target_columns(y, n_classes)
    w = rng.uniform(0.2, 2.0, n)
    stats, columns = target_stats.fit_transform(X, [1], [n_positions], y_cols, w, seed=9)
    shards = [np.arange(0, 400), np.arange(400, 400), np.arange(400, n)]
    rings = ring_of(3)

    def fit(rank):
        rows = shards[rank]
        return target_stats.fit_transform(X[rows], [1], [n_positions], y_cols[rows], w[rows],
                                          seed=9, row_ids=rows, collective=rings[rank])

    for rank, out in enumerate(run_all(3, fit)):
        assert not isinstance(out, BaseException), out
        shard_stats, shard_columns = out
        np.testing.assert_array_equal(shard_stats["tables"][0], stats["tables"][0])
        np.testing.assert_array_equal(shard_stats["weights"][0], stats["weights"][0])
        np.testing.assert_array_equal(shard_columns, columns[shards[rank]])


def test_an_outlier_costs_the_other_rows_no_precision():
    # one squared target 1e10 times the others': the sums stay near float64's
    rng = np.random.default_rng(2)
    n, n_positions = 20_000, 50
    X = np.column_stack([rng.integers(0, n_positions, n).astype(float)])
    y = rng.normal(size=n)
    y[7] = 1e5
    stats, _ = target_stats.fit_transform(X, [0], [n_positions], y[:, None], None, seed=1)
    codes = X[:, 0].astype(int)
    reference = _smoothed_reference(y, np.ones(n), codes, n_positions)
    np.testing.assert_allclose(stats["tables"][0][:, 0], reference, rtol=1e-9, atol=1e-9)
