"""Quality of high-cardinality categorical features (> 255 levels) against LightGBM.

Real datasets from ``realdata_datasets.py`` with their wide categorical
columns *not* capped: movielens (user 671, movie 9,066 levels), grants
(sponsor code 291), insteval (student 2,972, instructor 1,128). One seeded
80/20 split (stratified for classes); the same settings for every model
(100 rounds, learning rate 0.1, 31 leaves, 20 rows per leaf, 255 bins,
LightGBM's categorical defaults: max_cat_to_onehot 4, cat_smooth 10,
cat_l2 10, max_cat_threshold 32, min_data_per_group 100); test RMSE or
log-loss. "capped" is the former workaround: the 254 most frequent levels
kept by the user, the rest one "other" level (for LightGBM, it shows what
more than 255 bins of a feature are worth). Quality only: no timing.

    python benchmarks/highcard_quality.py [--datasets NAME ...]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.metrics import log_loss, mean_squared_error
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realdata_datasets as rd  # noqa: E402

DATASETS = ("movielens", "grants", "insteval")
COMMON = dict(learning_rate=0.1, min_samples_leaf=20, max_leaf_nodes=31, max_bins=255,
              l2_regularization=0.0, random_state=0, n_threads=1,
              cat_smooth=10.0, max_cat_threshold=32)  # LightGBM's categorical defaults


def load(name, cap):
    """The dataset with its wide columns capped to 255 levels, or in full."""
    original = rd._cap_levels
    if not cap:
        rd._cap_levels = lambda s, max_levels=None: s.astype("string")
    try:
        X, y = rd.DATASETS[name].loader()
    finally:
        rd._cap_levels = original
    if cap:  # movielens is never capped by its loader
        for col in X.columns:
            if str(X[col].dtype) == "category" and len(X[col].cat.categories) > 255:
                s = rd._cap_levels(X[col].astype("string"))
                X[col] = s.astype(object).where(s.notna(), np.nan).astype("category")
    return X, y


def fit_score(lib, task, X_tr, y_tr, X_te, y_te):
    if lib == "lightgbm":
        import lightgbm as lgb
        cls = lgb.LGBMRegressor if task == "regression" else lgb.LGBMClassifier
        model = cls(n_estimators=100, learning_rate=0.1, num_leaves=31,
                    min_child_samples=20, reg_lambda=0.0, max_bin=255, n_jobs=1,
                    random_state=0, verbose=-1)
    else:
        import hgbt
        cls = hgbt.HistGBDTRegressor if task == "regression" else hgbt.HistGBDTClassifier
        model = cls(max_iter=100, early_stopping=False, **COMMON)
    model.fit(X_tr, y_tr)
    if task == "regression":
        return mean_squared_error(y_te, model.predict(X_te)) ** 0.5
    return log_loss(y_te, model.predict_proba(X_te), labels=np.unique(y_tr))


def run(name):
    task = rd.DATASETS[name].task
    metric = "RMSE" if task == "regression" else "log-loss"
    out = {}
    for label, lib, cap in (("hgbt", "hgbt", False), ("LightGBM", "lightgbm", False),
                            ("hgbt, capped", "hgbt", True),
                            ("LightGBM, capped", "lightgbm", True)):
        X, y = load(name, cap)
        if task != "regression":
            y = np.unique(y, return_inverse=True)[1]
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.2, random_state=0,
            stratify=None if task == "regression" else y)
        out[label] = fit_score(lib, task, X_tr, y_tr, X_te, y_te)
        if label == "hgbt":
            levels = {c: len(X[c].cat.categories) for c in X.columns
                      if str(X[c].dtype) == "category" and len(X[c].cat.categories) > 255}
    return name, metric, levels, len(X_tr), out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=DATASETS)
    args = parser.parse_args(argv)
    print("| dataset | columns > 255 levels | train rows | metric | hgbt | LightGBM "
          "| hgbt / LightGBM | capped by the user: hgbt | LightGBM |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        name, metric, levels, n, s = run(name)
        cols = ", ".join(f"{c} ({k:,})" for c, k in levels.items())
        print(f"| {name} | {cols} | {n:,} | {metric} | {s['hgbt']:.4f} | "
              f"{s['LightGBM']:.4f} | {s['hgbt'] / s['LightGBM']:.4f} | "
              f"{s['hgbt, capped']:.4f} | {s['LightGBM, capped']:.4f} |", flush=True)


if __name__ == "__main__":
    main()
