"""Write the frozen model files of tests/test_model_files.py.

    python tests/model_files/make_model_files.py OUTDIR --prefix COMMIT [--models NAME ...]

For each model NAME it fits a small model with fixed seeds and writes, into
OUTDIR:

- ``COMMIT_NAME.json``: ``model.save_model``;
- ``COMMIT_NAME.pkl``: ``pickle.dumps(model)`` (not with ``--no-pickle``);
- ``COMMIT_NAME.npz``: the rows to predict on (``in__*``, rebuilt by
  :func:`inputs_from_npz`), their targets for a warm start (``y``, the first
  ``n_regular`` rows; the rows after them hold edge cases: NaN, infinities,
  unseen categories) and what the model gave on them (``out__*``: predict,
  predict_proba, decision_function, predict_contributions, apply,
  feature_importances_, n_iter_).

COMMIT names the hgbt commit that runs the script (the caller says which:
an installed hgbt does not know its commit). The files are written by the
code of that commit and the expected outputs are what that code predicted;
the test checks that the running hgbt loads the files to the same outputs,
bit for bit. tests/model_files/README.md says how each file was written.

The script needs numpy, pandas and hgbt only (no pytest), so that an older
hgbt installed in its own virtual environment can run it; it imports the
hgbt it finds (it prints its path: make sure it is the one you mean).
"""
import argparse
import json
import os
import pickle
import sys

import numpy as np
import pandas as pd


# ------------------------------------------------------------- the inputs
# An input is a float array (``in__X``) or a pandas DataFrame: its column
# names in ``in__columns``; a float or integer column as ``in__col__NAME``; a
# categorical column as ``in__codes__NAME`` (int64 codes, -1 missing) and
# ``in__categories__NAME`` (the dtype's categories, strings, in order).
def inputs_to_arrays(X):
    if isinstance(X, np.ndarray):
        return {"in__X": X}
    out = {"in__columns": np.array(list(X.columns), dtype=str)}
    for name in X.columns:
        column = X[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            out[f"in__codes__{name}"] = np.asarray(column.cat.codes, dtype=np.int64)
            out[f"in__categories__{name}"] = np.array(list(column.cat.categories), dtype=str)
        else:
            values = column.to_numpy()
            if values.dtype.kind not in "fi":
                raise TypeError(f"column {name!r}: {values.dtype} is not stored")
            out[f"in__col__{name}"] = values
    return out


def inputs_from_npz(arrays):
    """The X of :func:`inputs_to_arrays` (``arrays``: an ``np.load`` result or a dict)."""
    if "in__X" in arrays:
        return np.array(arrays["in__X"])
    columns = {}
    for name in arrays["in__columns"].tolist():
        if f"in__codes__{name}" in arrays:
            categories = arrays[f"in__categories__{name}"].tolist()
            columns[name] = pd.Categorical.from_codes(
                np.array(arrays[f"in__codes__{name}"]), categories=categories)
        else:
            columns[name] = np.array(arrays[f"in__col__{name}"])
    return pd.DataFrame(columns)


def _dense(rng, n, n_features=5, nan=0.1):
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < nan] = np.nan
    return X


def _dense_edges(n_features=5):
    """Edge rows: all missing, infinities, zeros of both signs, huge values."""
    rows = np.array([[np.nan] * n_features,
                     [np.inf] * n_features,
                     [-np.inf] * n_features,
                     [0.0] * n_features,
                     [-0.0] * n_features,
                     [1e300] * n_features,
                     [-1e300, 1e-300, np.nan, 5.0, -5.0][:n_features]])
    return rows


def _split(X, y, n_test):
    return X[:-n_test], y[:-n_test], X[-n_test:], y[-n_test:]


# ------------------------------------------------------------- the models
# Each returns (estimator, X_fit, y_fit, X_predict, y_regular): X_predict's
# first len(y_regular) rows are ordinary rows with targets, the rest edge rows.
def reg_dense_nan(hgbt):
    rng = np.random.default_rng(101)
    X = _dense(rng, 460)
    y = 2 * np.nan_to_num(X[:, 0]) + np.sin(np.nan_to_num(X[:, 1], nan=1.0)) \
        + 0.3 * rng.normal(size=len(X))
    X_fit, y_fit, X_test, y_test = _split(X, y, 60)
    model = hgbt.HistGBDTRegressor(max_iter=12, max_leaf_nodes=12, min_samples_leaf=10,
                                   early_stopping=False, random_state=0)
    return model, X_fit, y_fit, np.vstack([X_test, _dense_edges()]), y_test


def _labels(X, classes, rng):
    score = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 2]) + 0.3 * rng.normal(
        size=len(X))
    edges = np.quantile(score, np.linspace(0, 1, len(classes) + 1)[1:-1])
    return np.asarray(classes)[np.searchsorted(edges, score)]


def clf_binary_str(hgbt):
    rng = np.random.default_rng(102)
    X = _dense(rng, 460, n_features=4)
    y = _labels(X, np.array(["no", "yes"]), rng)
    X_fit, y_fit, X_test, y_test = _split(X, y, 60)
    model = hgbt.HistGBDTClassifier(max_iter=12, max_leaf_nodes=8, min_samples_leaf=10,
                                    max_bins=63, early_stopping=False, random_state=0)
    return model, X_fit, y_fit, np.vstack([X_test, _dense_edges(4)]), y_test


def clf_multiclass(hgbt):
    # early stopping on a hold-out: its scores and best round are fitted state
    rng = np.random.default_rng(103)
    X = _dense(rng, 560, n_features=4)
    y = _labels(X, np.array([-3, 7, 100]), rng)
    X_fit, y_fit, X_test, y_test = _split(X, y, 60)
    # (it stops after 8 rounds, the best being the 5th)
    model = hgbt.HistGBDTClassifier(learning_rate=0.5, max_iter=30, max_leaf_nodes=6,
                                    min_samples_leaf=10, early_stopping=True,
                                    validation_fraction=0.2,
                                    n_iter_no_change=3, random_state=0)
    return model, X_fit, y_fit, np.vstack([X_test, _dense_edges(4)]), y_test


COLORS = ["red", "green", "blue", "cyan", "magenta", "yellow"]


def _frame(rng, n):
    colour = rng.choice(len(COLORS), n).astype(np.int64)
    colour[rng.random(n) < 0.05] = -1  # missing
    frame = pd.DataFrame({
        "x1": rng.normal(size=n),
        "colour": pd.Categorical.from_codes(colour, categories=COLORS),
        "code": rng.integers(0, 9, n).astype(np.int64),  # integer-coded categorical
        "x2": rng.uniform(-1, 1, n),
    })
    frame.loc[rng.random(n) < 0.1, "x1"] = np.nan
    effect = np.array([1.5, -1.0, 0.0, 0.5, 2.0, -2.0, 0.3])  # last: missing
    y = (effect[colour] + np.isin(frame["code"], [1, 4, 7]) * 1.2
         + np.nan_to_num(frame["x1"].to_numpy()) + 0.2 * rng.normal(size=n))
    return frame, y


def reg_frame_categorical(hgbt):
    rng = np.random.default_rng(104)
    frame, y = _frame(rng, 460)
    X_fit, y_fit = frame.iloc[:400].reset_index(drop=True), y[:400]
    X_test, y_test = frame.iloc[400:].reset_index(drop=True), y[400:]
    # edge rows: missing colour, a colour unseen at fit (the dtype lists it),
    # unseen and negative codes, missing floats
    categories = COLORS + ["violet"]
    codes = np.concatenate([X_test["colour"].cat.codes.to_numpy(), [-1, 6, 0, 2]])
    X_test = pd.DataFrame({
        "x1": np.concatenate([X_test["x1"].to_numpy(), [np.nan, 0.5, np.inf, -1.0]]),
        "colour": pd.Categorical.from_codes(codes.astype(np.int64), categories=categories),
        "code": np.concatenate([X_test["code"].to_numpy(), [3, 3, 42, -1]]).astype(np.int64),
        "x2": np.concatenate([X_test["x2"].to_numpy(), [0.0, np.nan, 0.1, -0.9]]),
    })
    model = hgbt.HistGBDTRegressor(max_iter=12, max_leaf_nodes=8, min_samples_leaf=8,
                                   categorical_features=["colour", "code"],
                                   early_stopping=False, random_state=0)
    return model, X_fit, y_fit, X_test, y_test


def reg_poisson(hgbt):
    rng = np.random.default_rng(105)
    X = _dense(rng, 460, n_features=4)
    rate = np.exp(0.6 * np.nan_to_num(X[:, 0]) - 0.4 * np.nan_to_num(X[:, 1]))
    y = rng.poisson(rate).astype(np.float64)
    X_fit, y_fit, X_test, y_test = _split(X, y, 60)
    model = hgbt.HistGBDTRegressor(loss="poisson", max_iter=12, max_leaf_nodes=8,
                                   min_samples_leaf=10, max_bins=63, early_stopping=False,
                                   random_state=0)
    return model, X_fit, y_fit, np.vstack([X_test, _dense_edges(4)]), y_test


def reg_quantile(hgbt):
    rng = np.random.default_rng(106)
    X = _dense(rng, 460, n_features=3)
    y = np.nan_to_num(X[:, 0]) + rng.standard_t(3, size=len(X))
    X_fit, y_fit, X_test, y_test = _split(X, y, 60)
    model = hgbt.HistGBDTRegressor(loss="quantile", quantile=0.8, max_iter=10,
                                   max_leaf_nodes=8, min_samples_leaf=10,
                                   early_stopping=False, random_state=0)
    return model, X_fit, y_fit, np.vstack([X_test, _dense_edges(3)]), y_test


N_LEVELS = 300  # > 255: pooled (doc/categorical.md)


def _pooled_frame(rng, n):
    codes = np.minimum(rng.zipf(1.3, n) - 1, N_LEVELS - 1).astype(np.int64)
    codes[rng.random(n) < 0.04] = -1
    effect = rng.normal(size=N_LEVELS + 1)  # last: missing
    x = rng.normal(size=n)
    y = effect[codes] + 0.5 * x + 0.1 * rng.normal(size=n)
    names = [f"s{i:04d}" for i in range(N_LEVELS)]
    frame = pd.DataFrame({"sponsor": pd.Categorical.from_codes(codes, categories=names),
                          "x": x})
    return frame, y


def _pooled_test(frame):
    """The test rows and edge rows: missing, a category listed but never seen at
    fit, one not listed at fit ('nope', added to the dtype), kept and pooled ones."""
    categories = list(frame["sponsor"].cat.categories) + ["nope"]
    codes = np.concatenate([frame["sponsor"].cat.codes.to_numpy(),
                            [-1, N_LEVELS - 1, N_LEVELS, 0, 254, 255]]).astype(np.int64)
    x = np.concatenate([frame["x"].to_numpy(), [0.0, 0.0, 0.0, np.nan, 1.0, -1.0]])
    return pd.DataFrame({"sponsor": pd.Categorical.from_codes(codes, categories=categories),
                         "x": x})


def _pooled_data(seed):
    rng = np.random.default_rng(seed)
    frame, y = _pooled_frame(rng, 1600)
    X_fit, y_fit = frame.iloc[:1500].reset_index(drop=True), y[:1500]
    X_test, y_test = frame.iloc[1500:].reset_index(drop=True), y[1500:]
    return X_fit, y_fit, _pooled_test(X_test), y_test


POOLED_PARAMS = dict(max_iter=10, max_leaf_nodes=8, min_samples_leaf=5, cat_smooth=10.0,
                     early_stopping=False, random_state=0)


def reg_pooled(hgbt):
    X_fit, y_fit, X_test, y_test = _pooled_data(107)
    return hgbt.HistGBDTRegressor(**POOLED_PARAMS), X_fit, y_fit, X_test, y_test


def clf_pooled(hgbt):
    X_fit, y_fit, X_test, y_test = _pooled_data(108)
    threshold = np.median(y_fit)
    y_fit, y_test = (y_fit > threshold).astype(np.int64), (y_test > threshold).astype(np.int64)
    return hgbt.HistGBDTClassifier(**POOLED_PARAMS), X_fit, y_fit, X_test, y_test


def reg_auto_tree_size(hgbt):
    # max_leaf_nodes='auto' (hgbt after 95df5a1): the fit runs to max_iter, so a
    # second fit with 63 leaves is compared on the hold-out; both scores are kept
    rng = np.random.default_rng(109)
    X = _dense(rng, 760, n_features=4)
    y = np.sin(2 * np.nan_to_num(X[:, 0])) + np.nan_to_num(X[:, 1]) * np.nan_to_num(
        X[:, 2]) + 0.1 * rng.normal(size=len(X))
    X_fit, y_fit, X_test, y_test = _split(X, y, 60)
    model = hgbt.HistGBDTRegressor(max_iter=6, max_bins=63, early_stopping=True,
                                   random_state=0)
    return model, X_fit, y_fit, np.vstack([X_test, _dense_edges(4)]), y_test


MODELS = {f.__name__: f for f in (reg_dense_nan, clf_binary_str, clf_multiclass,
                                  reg_frame_categorical, reg_poisson, reg_quantile,
                                  reg_pooled, clf_pooled, reg_auto_tree_size)}


# ------------------------------------------------------------- the outputs
def outputs(model, X):
    """What the test compares: name -> array."""
    out = {"predict": model.predict(X)}
    if hasattr(model, "classes_"):
        out["predict_proba"] = model.predict_proba(X)
        out["decision_function"] = model.decision_function(X)
    out["predict_contributions"] = model.predict_contributions(X)
    out["apply"] = model.apply(X)
    out["feature_importances_"] = np.asarray(model.feature_importances_)
    out["n_iter_"] = np.asarray(model.n_iter_, dtype=np.int64)
    for name, value in out.items():
        if value.dtype.kind not in "biufU":  # np.load(allow_pickle=False) reads these
            raise TypeError(f"{name}: dtype {value.dtype} cannot be stored")
    return out


def write(name, model, X_fit, y_fit, X_test, y_test, outdir, prefix, pickles):
    import hgbt

    model.fit(X_fit, y_fit)
    stem = os.path.join(outdir, f"{prefix}_{name}")
    model.save_model(stem + ".json")
    if pickles:
        with open(stem + ".pkl", "wb") as f:
            f.write(pickle.dumps(model))
    arrays = inputs_to_arrays(X_test)
    arrays["y"] = np.asarray(y_test)
    arrays["n_regular"] = np.asarray(len(y_test), dtype=np.int64)
    arrays.update({f"out__{key}": value for key, value in outputs(model, X_test).items()})
    arrays["meta__written_by"] = np.array(f"{prefix} (hgbt {hgbt.__version__})")
    np.savez_compressed(stem + ".npz", **arrays)
    with open(stem + ".json") as f:
        version = json.load(f)["format_version"]
    print(f"{prefix}_{name}: format_version {version}, n_iter_ {model.n_iter_}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir")
    parser.add_argument("--prefix", required=True,
                        help="the short commit of the hgbt that runs this")
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS), default=sorted(MODELS))
    parser.add_argument("--no-pickle", dest="pickles", action="store_false")
    args = parser.parse_args(argv)
    import hgbt

    print(f"hgbt {hgbt.__version__} from {hgbt.__file__}; numpy {np.__version__}, "
          f"pandas {pd.__version__}, python {sys.version.split()[0]}")
    os.makedirs(args.outdir, exist_ok=True)
    for name in args.models:
        write(name, *MODELS[name](hgbt), args.outdir, args.prefix, args.pickles)


if __name__ == "__main__":
    main()
