#!/usr/bin/env python
"""Model identity check: do the estimators still fit the same models, bit for bit?

Fits ~50 small configurations reaching every training path (dense, sparse CSR,
bundled and sparse-stored layouts, categorical, constraints, column and row
sampling, both growth policies, quantized histograms, the losses, multiclass,
pooled categorical features with their target statistics, 1 and 2 threads) and compares their held-out predictions with a saved baseline:
``--save PATH``, ``--compare PATH``, ``--list``, ``--only NAME,...``;
``--histogram-layout col_wise`` (or ``row_wise``) fits every configuration
with that histogram engine (the baseline holds for either: the model does
not depend on it).

Every output must be byte-identical to the baseline's: predictions
(``predict``; ``predict_proba`` and ``decision_function`` for classifiers),
``n_iter_``, and what the readers of a fitted model compute from it (TreeSHAP
contributions and leaf indices of the first test rows, gain and split
importances, partial dependence on the first and the last feature), and a
hash of every tree's nodes. Each configuration's claims about the path it
takes (the feature layout it bins to, categorical splits of its kind, early
stopping) must hold, at save and at compare time alike, so that no
configuration silently tests another path than it claims. The tree hash and
the layout check reach the model's internals through ``_trees`` and
``describe_layout``: a refactoring that moves them updates those two.

Run it as ``python benchmarks/model_identity.py``: from the checkout root,
``python -m`` would import the uninstalled ``hgbt/`` source folder instead of
the installed package. The header prints which ``hgbt`` was imported.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Idle OpenMP threads sleep instead of spinning: on a shared, busy machine the
# 2-thread fits were otherwise up to 30x slower. Timing only: models do not
# depend on the thread count or its scheduling.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import hgbt  # noqa: E402
from hgbt import HistGBDTClassifier, HistGBDTRegressor  # noqa: E402

N_TEST = 2000
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ------------------------------------------------------------------ data
# Plain NumPy/pandas from fixed seeds, independent of hgbt (its generators may
# move or change). The baseline stores a hash of every input, so a change in
# the inputs is reported as such rather than as a model change.

def _split(X, y, n_test=N_TEST):
    n = y.shape[0] - n_test
    if isinstance(X, pd.DataFrame):
        return X.iloc[:n].reset_index(drop=True), y[:n], X.iloc[n:].reset_index(drop=True)
    return X[:n], y[:n], X[n:]


def _signal(rng, X):
    # thresholds, a product, smooth terms and noise on the first six columns
    return (1.5 * (X[:, 0] > 0.3) + np.sin(2 * X[:, 1]) + X[:, 2] * X[:, 3]
            + 0.5 * np.abs(X[:, 4]) - (X[:, 5] < -0.5) + 0.5 * rng.standard_normal(len(X)))


def regression(n=6000, n_features=10, nan_fraction=0.0, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + N_TEST, n_features))
    X[:, 6] = rng.integers(0, 6, len(X))  # a few distinct values
    y = _signal(rng, X)
    X[:, 7] = np.exp(X[:, 7])  # skewed
    if nan_fraction:  # after y: missing values hide signal
        X[rng.random(X.shape) < nan_fraction] = np.nan
    return _split(X, y)


def positive(kind, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((6000 + N_TEST, 8))
    mu = np.exp(0.4 * np.tanh(_signal(rng, X)))
    y = rng.poisson(mu).astype(float) if kind == "poisson" else rng.gamma(2.0, mu / 2.0)
    return _split(X, y)


def classification(n_classes, n=6000, seed=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + N_TEST, 12))
    w = rng.standard_normal((12, n_classes))
    scores = X @ w + np.sin(2 * X[:, :n_classes]) + (X[:, 1:n_classes + 1] > 0.5)
    y = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1).astype(float)
    return _split(X, y)


def mostly_zero(sparse_input=False, seed=5, n=8000):
    """Dense numeric columns, one-hot blocks (mutually exclusive: EFB bundles
    them without conflicts), 3%-dense count columns (they conflict with each
    other) and 10%-dense continuous columns (too many bins to bundle: stored
    sparse)."""
    rng = np.random.default_rng(seed)
    m = n + N_TEST
    dense = rng.standard_normal((m, 4))
    blocks, effect = [], np.zeros(m)
    for j in range(6):  # 6 categoricals of 8 levels, most frequent level dropped
        p = 1.0 / np.arange(1, 9) ** 1.5
        codes = rng.choice(8, m, p=p / p.sum())
        blocks.append((codes[:, None] == np.arange(1, 8)).astype(float))
        effect += rng.standard_normal(8)[codes]
    counts = np.where(rng.random((m, 8)) < 0.03, rng.integers(1, 4, (m, 8)), 0)
    cont = np.where(rng.random((m, 2)) < 0.1, rng.standard_normal((m, 2)), 0.0)
    X = np.hstack([dense] + blocks + [counts, cont])
    y = (dense[:, 0] + np.sin(2 * dense[:, 1]) + effect + counts[:, :4].sum(1)
         - 2 * cont[:, 0] + 0.3 * rng.standard_normal(m))
    return _split(sp.csr_matrix(X) if sparse_input else X, y)


def rare(sparse_input=False, seed=15, n=8000):
    """Dense numeric columns, one-hot blocks (bundled) and 16 continuous
    columns 2% dense (too many bins to bundle; together enough rare entries
    to store them sparse, bundling.MIN_SPARSE_SAVING)."""
    rng = np.random.default_rng(seed)
    m = n + N_TEST
    dense = rng.standard_normal((m, 3))
    blocks, effect = [], np.zeros(m)
    for j in range(3):
        codes = rng.choice(6, m, p=[0.6, 0.15, 0.1, 0.07, 0.05, 0.03])
        blocks.append((codes[:, None] == np.arange(1, 6)).astype(float))
        effect += rng.standard_normal(6)[codes]
    cont = np.where(rng.random((m, 16)) < 0.02, rng.standard_normal((m, 16)), 0.0)
    X = np.hstack([dense] + blocks + [cont])
    y = (dense[:, 0] + np.sin(2 * dense[:, 1]) + effect + 3 * cont[:, :8].sum(1)
         + 0.3 * rng.standard_normal(m))
    return _split(sp.csr_matrix(X) if sparse_input else X, y)


def sparse_plain(seed=6):
    """CSR input whose columns are all too dense to bundle or store sparse."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((6000 + N_TEST, 8))
    y = _signal(rng, X)
    X[rng.random(X.shape) < 0.3] = 0.0
    return _split(sp.csr_matrix(X), y)


def categorical(n_levels, missing=0.0, seed=7, n=6000):
    """Numeric columns plus two pandas ``category`` columns of ``n_levels``
    levels (Zipf-like frequencies); level effects drive the target. With
    ``missing``, that share of the labels is missing, and the last level of
    the first column appears only in the test rows."""
    rng = np.random.default_rng(seed)
    m = n + N_TEST
    X = rng.standard_normal((m, 4))
    p = 1.0 / np.arange(1, n_levels + 1) ** 0.8
    cats = [rng.choice(n_levels, m, p=p / p.sum()) for _ in range(2)]
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + 1.5 * rng.standard_normal(n_levels)[cats[0]]
         + rng.standard_normal(n_levels)[cats[1]] + 0.3 * rng.standard_normal(m))
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)])
    levels = [f"c{k:03d}" for k in range(n_levels)]
    for j, codes in enumerate(cats):
        labels = np.array(levels, dtype=object)[codes]
        if missing:
            labels[rng.random(m) < missing] = None
            if j == 0:  # a level of the dtype never seen at fit: predicted as missing
                labels[:n][labels[:n] == f"c{n_levels - 1:03d}"] = "c000"
        df[f"cat{j}"] = pd.Categorical(labels, categories=levels)
    return _split(df, y)


DATA = {
    "reg": lambda: regression(),
    "reg_nan": lambda: regression(nan_fraction=0.1, seed=2),
    "reg_f32": lambda: tuple(a.astype(np.float32) if a.ndim == 2 else a
                             for a in regression(seed=8)),
    "reg_big": lambda: regression(n=30000, n_features=8, seed=9),
    "poisson": lambda: positive("poisson"),
    "gamma": lambda: positive("gamma"),
    "bin": lambda: classification(2),
    "mc3": lambda: classification(3, seed=10),
    "mc7": lambda: classification(7, seed=11),
    "zeros": lambda: mostly_zero(),
    "zeros_csr": lambda: mostly_zero(sparse_input=True),
    "csr": sparse_plain,
    "cat4": lambda: categorical(4),
    "cat150": lambda: categorical(150, seed=12),
    "cat_nan": lambda: categorical(30, missing=0.1, seed=13),
    "cat300": lambda: categorical(300, seed=16),
    "cat300_nan": lambda: categorical(300, missing=0.1, seed=17),
    "rare": lambda: rare(),
    "rare_csr": lambda: rare(sparse_input=True),
}


def data_hash(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        if isinstance(a, pd.DataFrame):
            for name in a.columns:
                col = a[name]
                h.update(str(name).encode())
                if isinstance(col.dtype, pd.CategoricalDtype):
                    h.update("|".join(map(str, col.cat.categories)).encode())
                    h.update(np.ascontiguousarray(col.cat.codes, dtype=np.int64).tobytes())
                else:
                    h.update(np.ascontiguousarray(col, dtype=np.float64).tobytes())
        elif sp.issparse(a):
            for part in (a.data, a.indices, a.indptr):
                h.update(np.ascontiguousarray(part).tobytes())
        else:
            h.update(str(a.dtype).encode() + np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


# -------------------------------------------------------- configurations
@dataclass
class Config:
    name: str
    data: str
    params: dict
    threads: tuple = (1,)
    classifier: bool = False
    fit: str = "plain"     # 'plain', 'weights', 'warm' (10 then 20 rounds), 'xval'
    layout: str = ""       # expected feature layout, e.g. "bundles>0 sparse>0 conflicts=0"
    n_classes: int = 0     # classifier on regression data: bands of the target
    check: str = ""        # extra check on the fitted trees (see CHECKS)
    about: str = ""

    def estimator(self, n_threads):
        # the estimators' defaults before issue 21 changed them, spelled out so
        # that the saved baseline keeps testing the same models
        params = dict(max_iter=20, early_stopping=False, random_state=0, learning_rate=0.1,
                      max_leaf_nodes=31, l2_regularization=0.0, n_iter_no_change=10,
                      cat_smooth=10.0, max_cat_threshold=32)
        params.update(self.params, n_threads=n_threads)
        if HISTOGRAM_LAYOUT is not None:
            params["histogram_layout"] = HISTOGRAM_LAYOUT
        return (HistGBDTClassifier if self.classifier else HistGBDTRegressor)(**params)


T12 = (1, 2)
HISTOGRAM_LAYOUT = None  # --histogram-layout: every fit's (None: the default)
PLAIN = "bundles=0 sparse=0"
C = Config
CONFIGS = [
    # dense input
    C("dense", "reg", {}, T12, layout=PLAIN),
    C("dense_nan", "reg_nan", {}, T12, layout=PLAIN),
    C("dense_float32_bins63", "reg_f32", {"max_bins": 63, "min_samples_leaf": 5}),
    C("depthwise_limit", "reg", {"grow_policy": "depthwise", "max_leaf_nodes": 20,
                                 "max_depth": 6}),
    C("l1_l2_min_gain", "reg", {"l1_regularization": 2.0, "l2_regularization": 1.0,
                                "min_gain_to_split": 0.01, "min_child_weight": 1.0}),
    # sparse input and feature layouts
    C("csr_plain", "csr", {}, T12, layout=PLAIN,
      about="CSR input, every column dense: the plain layout"),
    C("bundled", "zeros", {}, T12, layout="bundles>0 sparse=0 conflicts=0"),
    C("bundled_csr", "zeros_csr", {}, T12, layout="bundles>0 sparse=0 conflicts=0"),
    C("bundled_sparse", "rare", {}, T12, layout="bundles>0 sparse>0 conflicts=0",
      about="bundled one-hot blocks beside sparse-stored rare columns"),
    C("bundled_sparse_csr", "rare_csr", {}, T12, layout="bundles>0 sparse>0"),
    C("bundle_off", "zeros", {"enable_bundle": False}, T12,
      layout="bundles=0 sparse>0", about="sparse-stored columns only"),
    C("bundle_off_csr", "zeros_csr", {"enable_bundle": False},
      layout="bundles=0 sparse>0"),
    C("bundle_conflicts", "zeros", {"max_conflict_rate": 0.02}, T12,
      layout="bundles>0 conflicts>0"),
    # categorical (pandas category)
    C("cat_onehot", "cat4", {}, T12, check="cat_splits", about="4 levels: one-vs-rest"),
    C("cat_sorted", "cat150", {}, T12, check="cat_multi",
      about="150 levels: sorted scan, multi-category left sets"),
    C("cat_missing", "cat_nan", {"max_cat_threshold": 8, "cat_smooth": 5.0},
      check="cat_splits"),
    C("cat_sorted_binary", "cat150", {"max_iter": 15}, classifier=True, n_classes=2,
      check="cat_multi", about="labels: target above its median"),
    C("cat_pooled", "cat300", {}, T12, check="pooled",
      about="300 levels: pooled bins beside their target statistics"),
    C("cat_pooled_missing", "cat300_nan", {"max_iter": 12}, check="pooled"),
    C("cat_pooled_binary", "cat300", {"max_iter": 12}, classifier=True, n_classes=2,
      check="pooled"),
    C("cat_pooled_multiclass", "cat300", {"max_iter": 8}, classifier=True, n_classes=3,
      check="pooled", about="a target-statistic column per class"),
    # constraints
    C("monotonic", "reg", {"monotonic_cst": [1, 0, 0, -1, 0, 0, 1, 0, 0, 0]}, T12),
    C("monotonic_binary", "bin", {"monotonic_cst": {0: 1, 3: -1}}, classifier=True),
    C("interaction_list", "reg", {"interaction_cst": [{0, 1}, {2, 3, 4}]}, T12),
    C("interaction_pairwise", "reg", {"interaction_cst": "pairwise"}),
    C("interaction_none", "reg", {"interaction_cst": "no_interactions"}),
    # column sampling
    C("colsample_bynode", "reg", {"colsample_bynode": 0.5}, T12),
    C("colsample_bytree", "reg", {"colsample_bytree": 0.6}),
    # growth without a leaf limit, and more leaves than the kernel holds
    C("depthwise_nolimit", "reg", {"grow_policy": "depthwise", "max_leaf_nodes": None,
                                   "max_depth": 6}, T12),
    C("lossguide_nolimit", "reg", {"max_leaf_nodes": None, "max_depth": 5}),
    C("leaves_6000", "reg_big", {"max_leaf_nodes": 6000, "min_samples_leaf": 1,
                                 "max_iter": 2}, T12, check="leaves>4096"),
    # quantized histograms
    C("quantized", "reg", {"use_quantized_grad": True}, T12),
    C("quantized_bins4_nan", "reg_nan", {"use_quantized_grad": True,
                                         "num_grad_quant_bins": 4}),
    C("quantized_bundled", "zeros", {"use_quantized_grad": True}, T12,
      layout="bundles>0"),
    C("quantized_bundled_sparse", "rare", {"use_quantized_grad": True}, T12,
      layout="bundles>0 sparse>0"),
    C("quantized_csr_nobundle", "zeros_csr", {"use_quantized_grad": True,
                                              "enable_bundle": False},
      layout="bundles=0 sparse>0"),
    C("quantized_multiclass", "mc3", {"use_quantized_grad": True}, T12, classifier=True),
    # row sampling
    C("goss", "reg", {"data_sample_strategy": "goss"}, T12),
    C("goss_absolute", "reg", {"data_sample_strategy": "goss", "loss": "absolute_error"},
      about="GOSS with leaf refits (re-weighted rows)"),
    C("bagging", "reg", {"subsample": 0.7}, T12),
    C("bagging_bundled", "zeros", {"subsample": 0.6}, layout="bundles>0"),
    # classification
    C("binary", "bin", {"class_weight": "balanced"}, T12, classifier=True),
    C("multiclass3", "mc3", {}, T12, classifier=True),
    C("multiclass7_colsample", "mc7", {"colsample_bytree": 0.8, "colsample_bynode": 0.7,
                                       "max_iter": 12}, T12, classifier=True),
    C("multiclass7_bundled_csr", "zeros_csr", {"max_iter": 10}, T12, classifier=True,
      n_classes=7, layout="bundles>0", about="labels: 7 quantiles of the target"),
    # losses (squared_error above)
    C("loss_absolute", "reg", {"loss": "absolute_error"}),
    C("loss_quantile", "reg_nan", {"loss": "quantile", "quantile": 0.8}),
    C("loss_huber", "reg", {"loss": "huber"}),
    C("loss_huber_delta", "reg", {"loss": "huber", "huber_delta": 1.0}),
    C("loss_poisson", "poisson", {"loss": "poisson"}),
    C("loss_gamma", "gamma", {"loss": "gamma"}),
    C("loss_tweedie", "poisson", {"loss": "tweedie", "tweedie_power": 1.3}),
    # fit options
    C("sample_weight", "reg", {}, T12, fit="weights", about="weights 0..3, some zero"),
    C("early_stopping_split", "reg", {"early_stopping": True, "max_iter": 200,
                                      "learning_rate": 0.5, "validation_fraction": 0.2,
                                      "n_iter_no_change": 3}, T12, check="stopped"),
    C("early_stopping_xval", "bin", {"early_stopping": True, "max_iter": 200,
                                     "learning_rate": 0.5, "n_iter_no_change": 3,
                                     "scoring": "roc_auc"},
      classifier=True, fit="xval", check="stopped"),
    C("early_stopping_cv", "reg", {"early_stopping": "cv", "max_iter": 200,
                                   "learning_rate": 0.5, "n_iter_no_change": 3,
                                   "max_leaf_nodes": "auto", "l2_regularization": "auto"},
      T12, check="stopped", about="rounds from 5 folds, then all rows (issue 37)"),
    C("warm_start", "reg_nan", {"warm_start": True}, T12, fit="warm"),
    C("warm_start_bundled", "zeros", {"warm_start": True}, fit="warm"),
]


def load_data(cfg, cache):
    if cfg.data not in cache:
        cache[cfg.data] = DATA[cfg.data]()
    Xtr, ytr, Xte = cache[cfg.data]
    if cfg.n_classes:  # regression data as classes: quantile bands of the target
        edges = np.quantile(ytr, np.linspace(0, 1, cfg.n_classes + 1)[1:-1])
        ytr = np.searchsorted(edges, ytr).astype(float)
    return Xtr, ytr, Xte


# ----------------------------------------------------- fit and summarize
def fit(cfg, n_threads, cache):
    Xtr, ytr, Xte = load_data(cfg, cache)
    est = cfg.estimator(n_threads)
    if cfg.fit == "weights":
        w = np.random.default_rng(14).integers(0, 4, len(ytr)).astype(float)
        est.fit(Xtr, ytr, sample_weight=w)
    elif cfg.fit == "warm":
        est.set_params(max_iter=10).fit(Xtr, ytr)
        est.set_params(max_iter=20).fit(Xtr, ytr)
    elif cfg.fit == "xval":
        n = len(ytr) * 4 // 5
        est.fit(Xtr[:n], ytr[:n], X_val=Xtr[n:], y_val=ytr[n:])
    else:
        est.fit(Xtr, ytr)
    out = {"n_iter": np.array(est.n_iter_)}
    methods = ("predict_proba", "decision_function") if cfg.classifier else ("predict",)
    for method in methods:  # saved as proba / decision / pred
        key = {"predict_proba": "proba", "decision_function": "decision"}.get(method, "pred")
        out[key] = np.asarray(getattr(est, method)(Xte), dtype=np.float64)
    out.update(readings(est, Xtr, Xte))
    info = {"tree_hash": tree_hash(est), "layout": describe_layout(est, Xtr),
            "data_hash": data_hash(Xtr, ytr, Xte), "leaves": n_leaves(est)}
    return est, out, info


#: outputs computed from the fitted model besides its predictions (a baseline
#: saved before they were added has none of them: reported, not failed)
READINGS = ("contrib", "leaves", "imp_gain", "imp_split", "pdp_first", "pdp_last")
N_EXPLAIN = 100  # test rows explained (TreeSHAP, leaf indices)


def readings(est, Xtr, Xte):
    """What the readers of a fitted model compute from it: contributions and
    leaf indices of the first test rows, both importances, and partial
    dependence on the first and the last feature (numeric or categorical)."""
    rows = Xte[:N_EXPLAIN]
    out = {"contrib": np.asarray(est.predict_contributions(rows), dtype=np.float64),
           "leaves": np.asarray(est.apply(rows), dtype=np.int64)}
    importance_type = est.importance_type
    for kind in ("gain", "split"):
        out[f"imp_{kind}"] = np.asarray(est.set_params(importance_type=kind)
                                        .feature_importances_, dtype=np.float64)
    est.set_params(importance_type=importance_type)
    for key, feature in (("pdp_first", 0), ("pdp_last", Xtr.shape[1] - 1)):
        # from the least to the largest value: mostly-zero columns have a grid too
        out[key] = np.asarray(hgbt.partial_dependence(
            est, Xtr, [feature], grid_resolution=20, percentiles=(0.0, 1.0)).average,
            dtype=np.float64)
    return out


def _trees(est):
    return [tree for trees in est.booster_.trees for tree in trees]


# The node fields the tree hash covers: the baseline's (saved with it; a
# baseline without the list hashed the fields before ``sum_hessians``), so
# that a node field added later leaves the hashes comparable.
HASH_FIELDS = None  # None: every field (when saving)


def tree_hash(est):
    """sha256 over every tree's node fields (by name, widened to 64 bits) and
    categorical bitsets; '' if the trees are no longer where ``_trees`` looks
    (a failure at compare time: update ``_trees``)."""
    try:
        h = hashlib.sha256()
        for tree in _trees(est):
            for name in sorted(n for n in tree.nodes.dtype.names
                               if HASH_FIELDS is None or n in HASH_FIELDS):
                col = tree.nodes[name]
                h.update(name.encode() + col.astype(np.float64 if col.dtype.kind == "f"
                                                    else np.int64).tobytes())
            h.update(np.ascontiguousarray(tree.cat_bitsets, dtype=np.uint32).tobytes())
        return h.hexdigest()
    except Exception:  # noqa: BLE001 - reported as a problem
        return ""


def n_leaves(est):
    try:
        return [int(np.count_nonzero(t.nodes["is_leaf"])) for t in _trees(est)]
    except Exception:  # noqa: BLE001 - informative only
        return []


def describe_layout(est, X):
    """Bundles, sparse-stored columns and conflicts of the training data's
    layout, rebuilt with the fitted bin mapper (None if unreachable: a failed
    layout check)."""
    try:
        from hgbt.data.dataset import bin_rows
        layout = bin_rows(est._validate_X(X), est.booster_.bin_mapper, 1, est.enable_bundle,
                          est.max_conflict_rate)
    except Exception:  # noqa: BLE001 - reported by the layout check
        return None
    if layout.is_plain:
        return {"bundles": 0, "sparse": 0, "conflicts": 0}
    return {"bundles": int(layout.n_bundles), "conflicts": int(layout.conflicts),
            "sparse": int(layout.n_columns - layout.n_dense)}


def _cat_nodes(est):
    return [(t, i) for t in _trees(est) for i in
            np.flatnonzero((t.nodes["is_categorical"] != 0) & (t.nodes["is_leaf"] == 0))]


def _multi(est):
    # a split sending >= 2 seen categories each way (sorted scan, not one-vs-rest)
    for t, i in _cat_nodes(est):
        k = len(est.categorical_categories_[t.nodes["feature_idx"][i]])
        words = t.cat_bitsets[t.nodes["bitset_idx"][i]].astype("<u4")
        n_left = np.unpackbits(words.view(np.uint8), bitorder="little")[:k].sum()
        if 2 <= n_left <= k - 2:
            return True
    return False


CHECKS = {
    "leaves>4096": lambda est, cfg: max(n_leaves(est)) > 4096,
    "cat_splits": lambda est, cfg: len(_cat_nodes(est)) > 0,
    "cat_multi": lambda est, cfg: _multi(est),
    "stopped": lambda est, cfg: est.n_iter_ < cfg.params["max_iter"],
    # a tree splits on a target-statistic column (they follow the user's features)
    "pooled": lambda est, cfg: any(
        np.any(t.nodes["feature_idx"][t.nodes["is_leaf"] == 0] >= est.n_features_in_)
        for t in _trees(est)),
}


def expectations(cfg, est, info):
    """Failed expectations of a configuration: what it claims to test."""
    failed = []
    if cfg.layout:
        lay = info["layout"]
        for term in cfg.layout.split():
            key, op, value = term[:-2], term[-2], int(term[-1])
            if lay is None or not (lay[key] > value if op == ">" else lay[key] == value):
                failed.append(f"layout {term} (got {lay})")
    if cfg.check:
        try:
            ok, why = bool(CHECKS[cfg.check](est, cfg)), ""
        except Exception as exc:  # noqa: BLE001 - internals moved
            ok, why = False, f" ({exc!r})"
        if not ok:
            failed.append(cfg.check + why)
    return failed


# ------------------------------------------------------- baseline & run
def git(*args, text=True):
    try:
        out = subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=text,
                             check=True).stdout
        return out.strip() if text else out
    except (OSError, subprocess.CalledProcessError):
        return "" if text else b""


def provenance():
    """Versions, and the commit the imported hgbt corresponds to: the last
    commit of this checkout's ``hgbt/`` when hgbt is imported from it, or
    when every installed .py file equals that commit's (a regular install)."""
    pkg = os.path.dirname(os.path.abspath(hgbt.__file__))
    head = git("log", "-1", "--format=%h", "--", "hgbt")
    if pkg.startswith(REPO + os.sep):
        source = "this checkout" + (" (uncommitted changes)" if git("status", "--porcelain",
                                                                   "hgbt") else "")
    else:
        names = [f for f in sorted(os.listdir(pkg)) if f.endswith(".py")]
        same = all(git("show", f"HEAD:hgbt/{f}", text=False)
                   == Path(pkg, f).read_bytes() for f in names)
        source = ("installed; its .py files equal the checkout's" if same
                  else "installed; its .py files differ from the checkout's")
    import scipy
    import sklearn
    return {"git_commit": head, "hgbt_source": source, "hgbt_version": hgbt.__version__,
            "hgbt_file": hgbt.__file__, "numpy": np.__version__, "scipy": scipy.__version__,
            "sklearn": sklearn.__version__, "pandas": pd.__version__,
            "python": sys.version.split()[0], "saved": time.strftime("%Y-%m-%d %H:%M:%S")}


def identical(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def max_abs_diff(a, b):
    if a.shape != b.shape:
        return f"shape {a.shape} vs {b.shape}"
    d = np.abs(a - b)  # NaN where only one side is NaN
    return f"{np.nanmax(d) if np.isfinite(d).any() else np.nan:.3g}"


def run(configs, baseline=None):
    """Fit every configuration at each thread count. Without a baseline
    (save), returns the arrays to save and the problems found (the first
    thread count's model is saved; the others must equal it); with one,
    compares each thread count's model with it and returns the problems."""
    cache, saved, problems = {}, {}, []
    for cfg in configs:
        first = None
        for n_threads in cfg.threads:
            tag, start = f"{cfg.name} t{n_threads}", time.perf_counter()
            try:
                est, out, info = fit(cfg, n_threads, cache)
            except Exception as exc:  # noqa: BLE001 - report, go on with the others
                problems.append(f"{tag}: ERROR {exc!r}")
                print(f"{tag:<34} ERROR {exc!r}", flush=True)
                continue
            notes = [f"{time.perf_counter() - start:5.1f}s", f"n_iter {int(out['n_iter'])}",
                     f"leaves {sum(info['leaves'])}"]
            failed = expectations(cfg, est, info)
            if baseline is not None:
                status = compare_one(cfg, out, info, baseline, notes)
            elif first is None:
                first, status = (out, info), "BASELINE"
                saved.update({f"{cfg.name}/{k}": v for k, v in out.items()})
                for key in ("tree_hash", "data_hash"):
                    saved[f"{cfg.name}/{key}"] = np.array(info[key])
            else:
                same = (info["tree_hash"] == first[1]["tree_hash"]
                        and all(identical(v, first[0][k]) for k, v in out.items()))
                status = ("= t" if same else "DIFFERENT FROM t") + str(cfg.threads[0])
            if failed:  # the configuration no longer tests the path it claims
                status += f" BUT CHECK FAILED: {'; '.join(failed)}"
            if status not in ("IDENTICAL", "BASELINE", f"= t{cfg.threads[0]}"):
                problems.append(f"{tag}: {status}")
            print(f"{tag:<34} {status:<28} {'  '.join(notes)}", flush=True)
    return saved, problems


def compare_one(cfg, out, info, baseline, notes):
    prefix = cfg.name + "/"
    if prefix + "n_iter" not in baseline:
        return "NO BASELINE"
    if str(baseline[prefix + "data_hash"]) != info["data_hash"]:
        return "DATA CHANGED (inputs differ from the baseline's; not comparable)"
    diffs = []
    for key, value in out.items():
        if prefix + key not in baseline and key in READINGS:
            notes.append(f"no {key} in the baseline")
            continue
        ref = baseline[prefix + key]
        if not identical(value, ref):
            diffs.append(f"{key} max|diff| {max_abs_diff(value, ref)}" if key != "n_iter"
                         else f"n_iter {int(value)} vs {int(ref)}")
    ref_cfg = baseline["__configs__"].get(cfg.name, {})
    if ref_cfg.get("params", repr(cfg.params)) != repr(cfg.params):
        notes.append(f"params were {ref_cfg['params']}")
    if not info["tree_hash"]:
        diffs.append("trees not found (update _trees)")
    elif info["tree_hash"] != str(baseline[prefix + "tree_hash"]):
        diffs.append("tree hash")
    return "DIFFERENT: " + ", ".join(diffs) if diffs else "IDENTICAL"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", metavar="PATH", help="fit all and save the baseline")
    mode.add_argument("--compare", metavar="PATH", help="refit and compare with PATH")
    mode.add_argument("--list", action="store_true", help="print the configurations")
    parser.add_argument("--only", metavar="NAME,...", help="only these configurations")
    parser.add_argument("--histogram-layout", choices=("auto", "col_wise", "row_wise"),
                        help="fit every configuration with this histogram_layout")
    args = parser.parse_args(argv)
    global HISTOGRAM_LAYOUT
    HISTOGRAM_LAYOUT = args.histogram_layout

    configs = CONFIGS
    if args.only:
        names = args.only.split(",")
        unknown = sorted(set(names) - {c.name for c in CONFIGS})
        if unknown:
            parser.error(f"unknown configurations: {unknown}")
        configs = [c for c in CONFIGS if c.name in names]
    if args.list:
        for c in configs:
            extra = [f"[{k} {getattr(c, k)}]" for k in ("layout", "check", "fit")
                     if getattr(c, k) and getattr(c, k) != "plain"]
            print(f"{c.name:<26} {'clf' if c.classifier else 'reg'} data={c.data:<9} "
                  f"threads={','.join(map(str, c.threads)):<4} {c.params} "
                  f"{' '.join(extra)} {c.about}".rstrip())
        print(f"{len(configs)} configurations, "
              f"{sum(len(c.threads) for c in configs)} fits")
        return 0

    meta = provenance()
    print(f"hgbt {meta['hgbt_version']} from {meta['hgbt_file']}\n"
          f"  {meta['hgbt_source']}; checkout's hgbt/ at {meta['git_commit']}")
    start = time.perf_counter()
    global HASH_FIELDS
    if args.save:
        from hgbt.core._types import NODE_DTYPE
        meta["tree_hash_fields"] = list(NODE_DTYPE.names)
        saved, problems = run(configs)
        meta["configs"] = {c.name: {"params": repr(c.params), "data": c.data,
                                    "threads": list(c.threads), "fit": c.fit}
                           for c in configs}
        if problems:  # a baseline must not record configurations that miss their path
            print(f"NOT saved: {len(problems)} problems")
        else:
            saved["__meta__"] = np.array(json.dumps(meta))
            np.savez_compressed(args.save, **saved)
            print(f"saved {len(configs)} configurations to {args.save} "
                  f"({os.path.getsize(args.save) / 1e6:.2f} MB) in "
                  f"{time.perf_counter() - start:.0f}s")
    else:
        with np.load(args.compare, allow_pickle=False) as f:
            baseline = dict(f)
        ref = json.loads(str(baseline["__meta__"]))
        baseline["__configs__"] = ref["configs"]
        fields = ref.get("tree_hash_fields")
        if fields is None:  # a baseline from before the list: the fields of then
            from hgbt.core._types import NODE_FIELDS_FIRST as fields
        HASH_FIELDS = set(fields)
        print(f"baseline: commit {ref['git_commit']} ({ref['hgbt_source']}), "
              f"saved {ref['saved']}")
        _, problems = run(configs, baseline)
        if not args.only:
            ran = {c.name for c in configs}
            problems += [f"{n}: in the baseline but not run" for n in ref["configs"]
                         if n not in ran]
        print(f"compared {len(configs)} configurations in "
              f"{time.perf_counter() - start:.0f}s")
    for p in problems:
        print("PROBLEM:", p)
    print("FAIL" if problems else "OK")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
