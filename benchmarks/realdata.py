"""Benchmark hgbt against its peers on real datasets.

    python benchmarks/realdata.py --mode both     # writes its section of RESULTS.md

The datasets (``realdata_datasets.py``) ship with installed packages; nothing is
downloaded. Each is split 80/20 (seeded, stratified for classification) once
into ``benchmarks/.cache/`` as pickled DataFrames (categorical columns keep
their ``category`` dtype and their full list of levels in both halves).

The protocol is bench.py's, with its helpers imported: each (library, repeat)
is fitted in a fresh ``realdata.py --worker LIB`` process with
``OMP_NUM_THREADS`` set, libraries go round-robin with the first rotated each
repeat, and the worker's ``ru_maxrss`` is its peak memory. A worker saves its
per-row test losses next to the data so that the parent can compare hgbt with
the best peer row by row (a paired estimate of the noise). Two modes: ``same``
gives every library bench.py's settings (100 rounds, 31 leaves leaf-wise, lr
0.1, 255 bins, 20 rows per leaf, L2 0, no early stopping); ``defaults`` leaves
each library at its defaults. The parent writes the ``realdata`` section of
RESULTS.md and ``realdata_results.json``.
"""
import argparse
import datetime
import gc
import hashlib
import importlib.util
import inspect
import json
import math
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# bench.py and sparse_bench.py import only the standard library and numpy at
# module level: the parent stays small, as a spawned worker's ru_maxrss starts
# at the parent's peak. pandas and the libraries are imported in subprocesses.
import bench  # noqa: E402
from bench import (  # noqa: E402
    MODEL, OURS, RESULT_PREFIX, _accuracy, _auc, _csv, _fmt_s, _git_description,
    _import, _peak_rss_mb, _version, _vmhwm_mb, machine_description, write_section,
)
from sparse_bench import _busy_cpu_s, _children_cpu_s, wait_idle  # noqa: E402

SECTION = "realdata"
LIBS = ("hgbt", "hgbt_quantized", "sklearn", "lightgbm", "xgboost", "catboost")
PEERS = ("sklearn", "lightgbm", "xgboost", "catboost")
LABELS = {**{lib: bench.LIBS[lib].label for lib in LIBS[:-1]}, "catboost": "CatBoost"}
MODULES = {**{lib: bench.LIBS[lib].module for lib in LIBS[:-1]}, "catboost": "catboost"}
DISTS = {**{lib: bench.LIBS[lib].dist for lib in LIBS[:-1]}, "catboost": "catboost"}
CATBOOST_CLASSES = {"regression": "catboost:CatBoostRegressor",
                    "binary": "catboost:CatBoostClassifier",
                    "multiclass": "catboost:CatBoostClassifier"}
MODES = ("same", "defaults")
QUICK_ROWS = 20_000
TEST_FRACTION = 0.2
CLASSIFICATION = ("binary", "multiclass")


def _kind(task):
    """bench.py's task kind: a count target is a regression with another loss."""
    return "regression" if task == "count" else task


def estimator_class(lib, task):
    classes = CATBOOST_CLASSES if lib == "catboost" else bench.LIBS[lib].classes
    return classes[_kind(task)]


# --------------------------------------------------------------------------
# Parameter mapping
# --------------------------------------------------------------------------

# Loss per task where a library's estimator would not pick it by itself.
OBJECTIVES = {
    "hgbt": {"count": {"loss": "poisson"}},
    "hgbt_quantized": {"count": {"loss": "poisson"}},
    "sklearn": {"count": {"loss": "poisson"}},
    "lightgbm": {"count": {"objective": "poisson"}, "binary": {"objective": "binary"},
                 "multiclass": {"objective": "multiclass"}},
    "xgboost": {"count": {"objective": "count:poisson"},
                "binary": {"objective": "binary:logistic"},
                "multiclass": {"objective": "multi:softprob"}},
    "catboost": {"regression": {"loss_function": "RMSE"},
                 "count": {"loss_function": "Poisson"},
                 "binary": {"loss_function": "Logloss"},
                 "multiclass": {"loss_function": "MultiClass"}},
}

# Native categorical handling: the columns' category dtype is the signal for
# hgbt, scikit-learn and XGBoost; LightGBM reads pandas categories by itself;
# CatBoost is told the names (its worker passes the integer codes).
def _categorical(lib, cat_cols):
    if lib in ("hgbt", "hgbt_quantized", "sklearn"):
        return {"categorical_features": "from_dtype"}
    if lib == "xgboost":
        return {"enable_categorical": True}
    if lib == "catboost":
        return {"cat_features": list(cat_cols)}
    return {}


_QUIET = {"lightgbm": {"verbose": -1}, "xgboost": {"verbosity": 0},
          "catboost": {"verbose": 0, "allow_writing_files": False}}


def _catboost_same(n_threads):
    # Lossguide with max_leaves as the others; depth=16 is CatBoost's largest, so
    # the leaf count is the binding limit. border_count=255 split points (up to
    # 256 value bins, like XGBoost's max_bin=256). l2_leaf_reg=1e-6: tiny rather
    # than 0 to keep a leaf's Newton step finite when its hessian sum is ~0.
    # No bagging, no random score noise, one Newton step per leaf (the others').
    p = MODEL
    return dict(iterations=p["n_rounds"], learning_rate=p["learning_rate"],
                grow_policy="Lossguide", max_leaves=p["max_leaves"], depth=16,
                min_data_in_leaf=p["min_samples_leaf"], l2_leaf_reg=1e-6,
                border_count=p["max_bins"], bootstrap_type="No", random_strength=0,
                leaf_estimation_iterations=1, thread_count=n_threads, random_seed=0)


def estimator_kwargs(lib, mode, task, n_threads, cat_cols=()):
    """Keyword arguments of ``lib``'s estimator for a ``task`` in ``mode``."""
    if mode == "same":
        if lib == "catboost":
            kw = _catboost_same(n_threads)
        else:  # bench.py's mapping; its categorical_features=None is replaced below
            btask = bench.Task(name=SECTION, title="", kind=_kind(task), generator="",
                               data_kwargs={}, random_state=0, metrics=(), params=MODEL)
            kw = bench.LIBS[lib].kwargs(btask, n_threads)
    else:  # defaults: threads and seed only (scikit-learn's threads: OMP_NUM_THREADS)
        kw = {"hgbt": dict(n_threads=n_threads, random_state=0),
              "hgbt_quantized": dict(use_quantized_grad=True, n_threads=n_threads,
                                     random_state=0),
              "sklearn": dict(random_state=0),
              "lightgbm": dict(n_jobs=n_threads, random_state=0),
              "xgboost": dict(n_jobs=n_threads, random_state=0),
              "catboost": dict(thread_count=n_threads, random_seed=0)}[lib]
    kw.update(_QUIET.get(lib, {}))
    kw.update(OBJECTIVES[lib].get(task, {}))
    kw.update(_categorical(lib, cat_cols))
    return kw


# --------------------------------------------------------------------------
# Losses and metrics (per test row; NumPy only)
# --------------------------------------------------------------------------

def row_losses(task, y, pred):
    """Per-row loss: squared error, Poisson deviance or log-loss of the true class."""
    y = np.asarray(y)
    if task == "regression":
        return (y - pred) ** 2
    if task == "count":
        mu = np.maximum(np.asarray(pred, dtype=np.float64), 1e-12)
        ylogy = np.where(y > 0, y * np.log(np.where(y > 0, y, 1) / mu), 0.0)
        return 2.0 * (ylogy - (y - mu))
    p = np.asarray(pred, dtype=np.float64)[np.arange(len(y)), y]
    return -np.log(np.clip(p, 1e-15, 1.0))


# task -> [(metric, label, function(y, prediction, losses))]; the first is the
# mean per-row loss that the noise estimate is about.
def by_class(estimator, proba, n_classes):
    """Class probabilities as an (n, n_classes) matrix indexed by the class
    codes 0..n_classes-1 (a split may lack a class the estimator never saw)."""
    pred = np.zeros((len(proba), n_classes))
    pred[:, np.asarray(estimator.classes_).astype(int)] = proba
    return pred


def predictions(estimator, X, task, n_classes):
    """What ``row_losses`` scores: class probabilities by class code, or the
    predicted values as float64."""
    if task in CLASSIFICATION:
        return by_class(estimator, estimator.predict_proba(X), n_classes)
    return np.asarray(estimator.predict(X), dtype=np.float64)


METRICS = {
    "regression": [("rmse", "RMSE", lambda y, p, l: math.sqrt(l.mean()))],
    "count": [("poisson_dev", "Poisson deviance", lambda y, p, l: l.mean()),
              ("rmse", "RMSE", lambda y, p, l: math.sqrt(np.mean((y - p) ** 2)))],
    "binary": [("logloss", "log-loss", lambda y, p, l: l.mean()),
               ("auc", "AUC", lambda y, p, l: _auc(y, p))],
    "multiclass": [("logloss", "log-loss", lambda y, p, l: l.mean()),
                   ("accuracy", "accuracy", lambda y, p, l: _accuracy(y, p))],
}


# --------------------------------------------------------------------------
# Data: load, split, cache (in a subprocess)
# --------------------------------------------------------------------------

def _data_dir(name, quick, cache_dir):
    """Keyed by the dataset code and this preparation code."""
    import realdata_datasets
    key = Path(realdata_datasets.__file__).read_text() + inspect.getsource(make_data)
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return Path(cache_dir) / f"realdata-{name}{'-quick' if quick else ''}-{digest}"


def make_data(name, quick, cache_dir):
    """Load dataset ``name``, optionally subsample it, split it and cache it."""
    import pandas as pd
    from sklearn.model_selection import train_test_split
    from realdata_datasets import DATASETS, describe
    ds = DATASETS[name]
    path = _data_dir(name, quick, cache_dir)
    if not (path / "meta.json").exists():
        print(f"[data] preparing {name} into {path}", file=sys.stderr, flush=True)
        X, y = ds.loader()
        meta = dict(name=name, task=ds.task, source=ds.source, target=ds.target,
                    notes=ds.notes, **describe(X, y, ds.task))
        if quick and len(X) > QUICK_ROWS:
            keep = np.sort(np.random.default_rng(0).choice(len(X), QUICK_ROWS,
                                                           replace=False))
            X, y = X.iloc[keep].reset_index(drop=True), y[keep]
        if ds.task in CLASSIFICATION:  # labels -> 0..K-1
            classes, y = np.unique(y, return_inverse=True)
            meta["classes"] = [str(c) for c in classes]
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=TEST_FRACTION, random_state=0,
            stratify=y if ds.task in CLASSIFICATION else None)
        arrays = dict(X_train=X_tr.reset_index(drop=True),
                      X_test=X_te.reset_index(drop=True), y_train=y_tr, y_test=y_te)
        meta.update(n_train=len(X_tr), n_test=len(X_te),
                    baseline_loss=_baseline_loss(ds.task, y_tr, y_te))
        bench.write_data_dir(path, arrays, meta, lambda stem, obj: (
            pd.to_pickle(obj, stem.with_suffix(".pkl")) if isinstance(obj, pd.DataFrame)
            else np.save(stem.with_suffix(".npy"), obj)))
    else:
        print(f"[data] using cached {path}", file=sys.stderr, flush=True)
    bench.print_data_result(path)


def _baseline_loss(task, y_train, y_test):
    """Mean test loss of a constant prediction (training mean / class shares)."""
    if task in CLASSIFICATION:
        prior = np.bincount(y_train) / len(y_train)
        pred = np.broadcast_to(prior, (len(y_test), len(prior)))
    else:
        pred = np.full(len(y_test), float(np.mean(y_train)))
    return float(row_losses(task, y_test, pred).mean())


# --------------------------------------------------------------------------
# Worker: one fit + predict in a fresh process
# --------------------------------------------------------------------------

def run_worker(lib, mode, data_dir, n_threads, loss_path):
    import pandas as pd
    data_dir = Path(data_dir)
    meta = json.loads((data_dir / "meta.json").read_text())
    task = meta["task"]
    module = importlib.import_module(MODULES[lib])
    cls = _import(estimator_class(lib, task))
    X_train = pd.read_pickle(data_dir / "X_train.pkl")
    X_test = pd.read_pickle(data_dir / "X_test.pkl")
    y_train, y_test = np.load(data_dir / "y_train.npy"), np.load(data_dir / "y_test.npy")
    cat_cols = [c for c in X_train.columns
                if isinstance(X_train[c].dtype, pd.CategoricalDtype)]
    if lib == "catboost":
        # CatBoost takes categories as strings or ints, not NaN: pass the codes
        # (missing = -1, a level of its own). Done before, not inside, the timing.
        codes = {c: lambda X, c=c: X[c].cat.codes.astype(np.int32) for c in cat_cols}
        X_train, X_test = X_train.assign(**codes), X_test.assign(**codes)
    estimator = cls(**estimator_kwargs(lib, mode, task, n_threads, cat_cols))
    rss_before_fit = _peak_rss_mb()

    # CatBoost's Poisson starts from a raw score of 0 (it has no boost_from_average
    # there) and diverges on large counts; in mode "same" it gets the others' start,
    # the log of the mean training count, as a baseline folded into the model.
    start = (float(np.log(np.mean(y_train)))
             if (lib, mode, task) == ("catboost", "same", "count") else None)
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    if start is None:
        estimator.fit(X_train, y_train)
    else:
        estimator.fit(X_train, y_train, baseline=np.full(len(y_train), start))
        estimator.set_scale_and_bias(1.0, start)
    fit_s, fit_cpu_s = time.perf_counter() - t0, time.process_time() - c0

    gc.collect()
    t0 = time.perf_counter()
    pred = predictions(estimator, X_test, task, len(meta.get("classes", ())))
    predict_s = time.perf_counter() - t0

    losses = row_losses(task, y_test, pred)
    Path(loss_path).parent.mkdir(parents=True, exist_ok=True)
    np.save(loss_path, losses)
    result = dict(
        lib=lib, mode=mode, version=getattr(module, "__version__", "?"),
        fit_s=fit_s, fit_cpu_s=fit_cpu_s, predict_s=predict_s,
        scores={m: float(f(y_test, pred, losses)) for m, _, f in METRICS[task]},
        n_trees=_n_rounds(estimator), loss_path=str(loss_path),
        peak_rss_mb=_peak_rss_mb(), peak_rss_before_fit_mb=rss_before_fit,
        vmhwm_mb=_vmhwm_mb())
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def _n_rounds(est):
    """Boosting rounds actually fitted (early stopping may end them early)."""
    for attr in ("n_iter_", "n_estimators_", "tree_count_"):
        if getattr(est, attr, None) is not None:
            return int(getattr(est, attr))
    if hasattr(est, "get_booster"):
        return int(est.get_booster().num_boosted_rounds())
    return None


# --------------------------------------------------------------------------
# Parent: orchestrate and aggregate
# --------------------------------------------------------------------------

def _spawn(args, n_threads, timeout, stderr_to_console=False):
    """Run ``realdata.py ARGS`` in a fresh interpreter (bench.py's runner)."""
    return bench._spawn(args, n_threads, timeout, stderr_to_console, script=__file__)


def run_dataset(name, args):
    data = _spawn(["--make-data", "--dataset", name, "--cache-dir", str(args.cache_dir)]
                  + (["--quick"] if args.quick else []),
                  args.n_threads, None, stderr_to_console=True)
    if "error" in data:
        print(f"[{name}] data preparation failed: {data['error']}", flush=True)
        return dict(data=dict(name=name, error=data["error"]), runs=[])
    print(f"[{name}] {data['task']}: {data['n_train']:,} train + {data['n_test']:,} "
          f"test rows x {data['n_cols']:,} columns", flush=True)
    runs = []
    for mode in args.modes:
        for rep in range(args.repeats):
            k = rep % len(args.libs)
            for order, lib in enumerate(args.libs[k:] + args.libs[:k], start=1):
                loss_path = Path(data["data_dir"]) / "losses" / f"{mode}-{lib}-r{rep + 1}.npy"
                idle_share = wait_idle(args.wait_idle)
                busy0, own0, t0 = _busy_cpu_s(), _children_cpu_s(), time.perf_counter()
                r = _spawn(["--worker", lib, "--mode", mode, "--data-dir",
                            data["data_dir"], "--n-threads", str(args.n_threads),
                            "--loss-path", str(loss_path)], args.n_threads, args.timeout)
                wall = time.perf_counter() - t0
                others = (None if busy0 is None else max(
                    0.0, (_busy_cpu_s() - busy0) - (_children_cpu_s() - own0)))
                r.update(lib=lib, mode=mode, repeat=rep + 1, order=order,
                         others_cpu_share_before=idle_share,
                         others_cpu_share=(None if others is None else
                                           others / (wall * (os.cpu_count() or 1))))
                runs.append(r)
                head = f"[{name}] {mode} {rep + 1}/{args.repeats} {LABELS[lib]:>14}"
                if "error" in r:
                    print(f"{head}: FAILED {r['error'].splitlines()[-1]}", flush=True)
                else:
                    scores = "  ".join(f"{m} {v:.4f}" for m, v in r["scores"].items())
                    print(f"{head}: fit {r['fit_s']:8.3f} s  predict {r['predict_s']:7.3f}"
                          f" s  {scores}  trees {r['n_trees']}  peak RSS "
                          f"{r['peak_rss_mb']:.0f} MB", flush=True)
    return dict(data=data, runs=runs)


def _paired(l_ours, l_best):
    """Mean per-row loss difference ours - best, its standard error, both relative
    to the best's mean loss, and the verdict (|delta| <= 2 SE: within noise)."""
    d = np.asarray(l_ours, dtype=np.float64) - np.asarray(l_best, dtype=np.float64)
    mean, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d)))
    scale = float(np.mean(l_best)) or 1.0
    verdict = ("within noise" if abs(mean) <= 2 * se else
               "better" if mean < 0 else "worse")
    return dict(delta=mean, se=se, delta_pct=100 * mean / scale,
                two_se_pct=200 * se / scale, verdict=verdict)


def summarize(entry, mode):
    """Medians per library and hgbt's ratios / quality delta to the peers."""
    task = entry["data"]["task"]
    runs = [r for r in entry["runs"] if r["mode"] == mode]
    libs = list(dict.fromkeys(r["lib"] for r in runs))
    med, errors = {}, {}
    for lib in libs:
        ok = [r for r in runs if r["lib"] == lib and "error" not in r]
        if not ok:
            errors[lib] = next(r["error"] for r in runs if r["lib"] == lib)
            continue
        med[lib] = {k: statistics.median(r[k] for r in ok)
                    for k in ("fit_s", "predict_s", "peak_rss_mb")}
        med[lib].update({m: statistics.median(r["scores"][m] for r in ok)
                         for m, _, _ in METRICS[task]})
        med[lib]["others_cpu_pct"] = 100 * statistics.median(
            r.get("others_cpu_share") or 0.0 for r in ok)
        med[lib].update(n_trees=ok[0]["n_trees"], n_ok=len(ok), n_runs=len(
            [r for r in runs if r["lib"] == lib]), loss_path=ok[0]["loss_path"])
    out = dict(medians=med, errors=errors)
    peers = [lib for lib in PEERS if lib in med]
    if not peers:
        return out
    losses = {lib: np.load(med[lib]["loss_path"]) for lib in med}
    best = min(peers, key=lambda lib: losses[lib].mean())
    fastest = {k: min(peers, key=lambda lib: med[lib][k]) for k in ("fit_s", "predict_s")}
    out.update(best_peer=best, fastest_fit_peer=fastest["fit_s"],
               fastest_predict_peer=fastest["predict_s"])
    for ours in OURS:
        if ours in med:
            out[ours] = dict(
                fit_ratio=med[ours]["fit_s"] / med[fastest["fit_s"]]["fit_s"],
                predict_ratio=med[ours]["predict_s"] / med[fastest["predict_s"]]["predict_s"],
                rss_ratio=med[ours]["peak_rss_mb"] / min(med[p]["peak_rss_mb"] for p in peers),
                fastest=all(med[ours]["fit_s"] <= med[p]["fit_s"] for p in peers),
                quality=_paired(losses[ours], losses[best]))
    return out


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def _versions():
    out = [f"Python {platform.python_version()}", f"numpy {np.__version__}",
           f"pandas {_version('pandas')}"]
    for lib in LIBS:
        if lib in OURS[1:]:
            continue
        v = _version(DISTS[lib])
        if lib == "hgbt" and v:
            git = _git_description()
            v += f" ({git})" if git else ""
        out.append(f"{LABELS[lib]} {v or 'not installed'}")
    return out


def _geomean(values):
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else float("nan")


def _fmt_q(q):
    return f"{q['delta_pct']:+.2f}% ± {q['two_se_pct']:.2f}% ({q['verdict']})"


def _dataset_table(results):
    lines = ["| dataset | source | rows | columns | categorical (max levels) | % missing "
             "| % zeros (mostly-0 columns) | task | target |",
             "|---|---|---:|---:|---|---:|---|---|---|"]
    for name, e in results.items():
        d = e["data"]
        if "error" in d:
            lines.append(f"| {name} | failed to load: {d['error'].splitlines()[-1]} |||||||")
            continue
        cats = f"{d['n_categorical']} ({d['max_levels']})" if d["n_categorical"] else "0"
        task = d["task"] + (f", {d['n_classes']} classes" if d["task"] == "multiclass" else "")
        target = d["target"] + (f"; {d['notes']}" if d["notes"] else "")
        lines.append(
            f"| {name} | {d['source']} | {d['n_rows']:,} | {d['n_cols']:,} | {cats} "
            f"| {d['missing_pct']:.1f} | {d['zeros_pct']:.1f} ({d['mostly_zero_cols_pct']:.0f}%) "
            f"| {task} | {target} |")
    return lines


def _summary_table(results, mode):
    lines = [f"### Mode `{mode}`", "",
             "| dataset | task | hgbt fit s | fastest peer fit s | fit hgbt / fastest "
             "| fit quantized / fastest | predict hgbt / fastest | RSS hgbt / smallest "
             "| hgbt loss − best peer's (± 2 SE) | quantized − best peer |",
             "|---|---|---:|---|---:|---:|---:|---:|---|---|"]
    counts = dict(n=0, fastest=0, not_worse=0, better=0, failed=[])
    ratios = {ours: dict(fit=[], predict=[], rss=[]) for ours in OURS}
    for name, e in results.items():
        if mode not in e.get("summary", {}):
            continue
        s, task = e["summary"][mode], e["data"]["task"]
        med = s["medians"]
        if "hgbt" not in s:
            err = s["errors"].get("hgbt", "no peer fitted" if "hgbt" in med else "not run")
            counts["failed"].append(name)
            lines.append(f"| {name} | {task} | failed: {_short(err)} |||||||")
            continue
        counts["n"] += 1
        h, f = s["hgbt"], s["fastest_fit_peer"]
        counts["fastest"] += h["fastest"]
        counts["not_worse"] += h["quality"]["verdict"] != "worse"
        counts["better"] += h["quality"]["verdict"] == "better"
        for ours in OURS:
            if ours in s:
                for k in ("fit", "predict", "rss"):
                    ratios[ours][k].append(s[ours][f"{k}_ratio"])
        quant = s.get("hgbt_quantized")
        q_fit = f"{quant['fit_ratio']:.2f}" if quant else "n/a"
        lines.append(
            f"| {name} | {task} | {_fmt_s(med['hgbt']['fit_s'])} "
            f"| {_fmt_s(med[f]['fit_s'])} ({LABELS[f]}) | {h['fit_ratio']:.2f} "
            f"| {q_fit} "
            f"| {h['predict_ratio']:.2f} | {h['rss_ratio']:.2f} "
            f"| {_fmt_q(h['quality'])} vs {LABELS[s['best_peer']]} "
            f"| {_fmt_q(quant['quality']) if quant else 'n/a'} |")
    g = {ours: {k: _geomean(v) for k, v in r.items()} for ours, r in ratios.items()}
    lines += ["",
              f"Geometric means over the {counts['n']} datasets hgbt fitted: fit hgbt / "
              f"fastest peer **{g['hgbt']['fit']:.2f}**, hgbt quantized "
              f"**{g['hgbt_quantized']['fit']:.2f}**; predict "
              f"{g['hgbt']['predict']:.2f} (quantized {g['hgbt_quantized']['predict']:.2f});"
              f" peak RSS hgbt / smallest peer {g['hgbt']['rss']:.2f}. "
              f"**hgbt fastest on {counts['fastest']} of {counts['n']}**; "
              f"**as good as the best peer on {counts['not_worse']} of {counts['n']}** "
              f"(within noise or better; better on {counts['better']})."
              + (f" hgbt failed on: {', '.join(counts['failed'])}." if counts["failed"] else "")]
    return lines, dict(counts=counts, geomeans=g)


def _short(err):
    last = (err.strip().splitlines() or ["?"])[-1]
    return last.replace("|", "/")[:160]


def _detail_table(name, e, mode):
    s, task = e["summary"][mode], e["data"]["task"]
    metrics = METRICS[task]
    lines = [f"**{name}** ({mode}; a constant prediction's mean per-row test loss: "
             f"{e['data']['baseline_loss']:.4g})", "",
             "| library | fit s | predict s | peak RSS MB | "
             + " | ".join(label for _, label, _ in metrics)
             + " | rounds | loss − best peer's (± 2 SE) | others' CPU % |",
             "|---|---:|---:|---:|" + "---:|" * len(metrics) + "---:|---|---:|"]
    losses = ({lib: np.load(m["loss_path"]) for lib, m in s["medians"].items()}
              if "best_peer" in s else {})
    for lib in LIBS:
        if lib in s["errors"]:
            lines.append(f"| {LABELS[lib]} | failed: {_short(s['errors'][lib])} |"
                         + " |" * (5 + len(metrics)))
        elif lib in s["medians"]:
            m = s["medians"][lib]
            n = "" if m["n_ok"] == m["n_runs"] else f" ({m['n_ok']}/{m['n_runs']} ok)"
            q = ("best peer" if lib == s.get("best_peer") else
                 _fmt_q(_paired(losses[lib], losses[s["best_peer"]])) if losses else "")
            lines.append(f"| {LABELS[lib]}{n} | {_fmt_s(m['fit_s'])} | {_fmt_s(m['predict_s'])} "
                         f"| {m['peak_rss_mb']:.0f} | "
                         + " | ".join(f"{m[k]:.4f}" for k, _, _ in metrics)
                         + f" | {m['n_trees']} | {q} | {m['others_cpu_pct']:.0f} |")
    return lines + [""]


def _mapping(args):
    lines = ["<details><summary>Parameter mapping per library (binary task shown; "
             "objectives per task below)</summary>", "", "```python"]
    for mode in args.modes:
        lines.append(f"# mode {mode}")
        for lib in args.libs:
            kw = estimator_kwargs(lib, mode, "binary", args.n_threads, ["<categorical>"])
            cls = estimator_class(lib, "binary").replace(":", ".")
            lines.append(f"{cls}({', '.join(f'{k}={v!r}' for k, v in kw.items())})")
    lines += ["```", "", "| library | regression | count | binary | multiclass |",
              "|---|---|---|---|---|"]
    for lib in args.libs:
        cells = [", ".join(f"{k}={v!r}" for k, v in OBJECTIVES[lib].get(t, {}).items())
                 or "default" for t in ("regression", "count", "binary", "multiclass")]
        lines.append(f"| {LABELS[lib]} | " + " | ".join(cells) + " |")
    return lines + ["", "</details>"]


def render(results, args, command, elapsed_s):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    runs = [r for e in results.values() for r in e["runs"]]
    busy = [r["others_cpu_share"] for r in runs if (r.get("others_cpu_share") or 0) > 0.1]
    lines = [
        "## Real datasets" + (" (quick: ≤ 20,000 rows each)" if args.quick else ""), "",
        f"Generated {now} by `{command}` ({elapsed_s / 60:.0f} min).", "",
        f"- **Machine**: {machine_description()}",
        f"- **Versions**: {'; '.join(_versions())}",
        f"- **Protocol**: 80/20 train/test split per dataset (seed 0, stratified for "
        f"classification); {args.repeats} repeat(s), medians reported; each (library, "
        f"mode, repeat) fitted in a fresh process with `OMP_NUM_THREADS="
        f"{args.n_threads}`, libraries round-robin with the first rotated each repeat. "
        f"Fit time includes binning and each library's dataset construction (built "
        f"inside `fit` from the same DataFrame); predict time is `predict` (regression, "
        f"count) or `predict_proba` on the test rows. Peak RSS is the worker's "
        f"`ru_maxrss` (interpreter, library and the loaded train and test frames).",
        "- **Modes**: `same` = bench.py's settings in every library: 100 rounds, 31 "
        "leaves leaf-wise (XGBoost `grow_policy='lossguide', max_depth=0`; CatBoost "
        "`grow_policy='Lossguide', depth=16`), learning rate 0.1, 255 bins (XGBoost "
        "`max_bin=256`, CatBoost `border_count=255`: missing values are kept out of "
        "their bins), min 20 rows per leaf (XGBoost: `min_child_weight=20`, a hessian "
        "sum, see bench.py), L2 0 (CatBoost 1e-6), no early stopping, no subsampling "
        "(CatBoost `bootstrap_type='No', random_strength=0`); CatBoost's Poisson "
        "starts from the log of the mean count as the others do (a `baseline`; from 0 "
        "it diverged on `birthdays`). `defaults` = each "
        "library's defaults apart from threads, seed, verbosity, the objective and "
        "categorical handling (hgbt and scikit-learn then stop early on a 10% "
        "validation split, hgbt from 100 rows, scikit-learn above 10,000; CatBoost "
        "fits 1,000 depth-6 symmetric "
        "trees with an automatic learning rate).",
        "- **Categoricals**: the `category` columns go in natively: hgbt and "
        "scikit-learn `categorical_features='from_dtype'`, LightGBM the pandas "
        "categories, XGBoost `enable_categorical=True`, CatBoost `cat_features=` with "
        "the integer codes (missing = -1, converted before the timed fit).",
        "- **Quality**: test RMSE (regression), mean Poisson deviance (count), "
        "log-loss and AUC (binary), log-loss and accuracy (multiclass). hgbt's "
        "**delta to the best peer** (lowest mean per-row test loss: squared error, "
        "Poisson deviance or log-loss) is the mean of the paired per-row differences, "
        "shown relative to the best peer's mean loss, ± 2 standard errors of that "
        "mean over the test rows. Rule: **within noise** when |delta| ≤ 2 SE; "
        "otherwise better / worse.",
        "- **Noise**: 2 cores shared with other work; timings may be noisy (the "
        "per-dataset tables give the share of all CPUs other processes used during "
        "each worker, `others' CPU %`; on 2 cores 50% means one core taken)"
        + (f"; other processes used > 10% of the CPUs during {len(busy)} of "
           f"{len(runs)} runs, up to {max(busy):.0%}." if busy else "."),
        "", "### Datasets", "",
        "Loaded from installed packages by `benchmarks/realdata_datasets.py` (levels "
        "beyond 255 map to one `other` level where marked capped; facts before any "
        "`--quick` subsampling).", ""]
    lines += _dataset_table(results)
    overall = {}
    for mode in args.modes:
        lines.append("")
        table, overall[mode] = _summary_table(results, mode)
        lines += table
    lines += ["", "Ratios are medians hgbt / fastest (or smallest) peer among "
              "scikit-learn, LightGBM, XGBoost and CatBoost: below 1 means hgbt is "
              "faster (smaller).", "", "### Per dataset", "",
              "<details><summary>Fit, predict, memory and quality of every library"
              "</summary>", ""]
    for mode in args.modes:
        for name, e in results.items():
            if mode in e.get("summary", {}):
                lines += _detail_table(name, e, mode)
    lines += ["</details>", ""] + _mapping(args)
    return "\n".join(lines), overall


def main(argv=None):
    from realdata_datasets import DATASETS
    parser = argparse.ArgumentParser(
        description="Benchmark hgbt against scikit-learn, LightGBM, XGBoost and "
                    "CatBoost on real datasets; rewrite the realdata section.")
    parser.add_argument("--datasets", type=_csv(list(DATASETS)), default=list(DATASETS),
                        help=f"comma-separated, default all: {','.join(DATASETS)}")
    parser.add_argument("--libs", type=_csv(list(LIBS)), default=list(LIBS),
                        help=f"comma-separated, default {','.join(LIBS)}")
    parser.add_argument("--mode", choices=[*MODES, "both"], default="both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--json", default=None,
                        help="machine-readable results (default: realdata_results.json "
                             "next to --output)")
    parser.add_argument("--cache-dir", default=str(HERE / ".cache"))
    parser.add_argument("--timeout", type=float, default=1800,
                        help="seconds allowed per worker (default 1800)")
    parser.add_argument("--quick", action="store_true",
                        help=f"subsample each dataset to <= {QUICK_ROWS:,} rows")
    parser.add_argument("--wait-idle", type=float, default=0,
                        help="wait up to this many seconds before each worker until "
                             "other processes use < 10%% of the CPUs")
    # Internal: one measurement, or one data preparation, in this process.
    parser.add_argument("--worker", choices=list(LIBS), help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--loss-path", help=argparse.SUPPRESS)
    parser.add_argument("--make-data", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        run_worker(args.worker, args.mode, args.data_dir, args.n_threads, args.loss_path)
        return
    if args.make_data:
        make_data(args.dataset, args.quick, args.cache_dir)
        return
    if args.repeats < 1 or args.n_threads < 1:
        parser.error("--repeats and --n-threads must be >= 1")
    args.modes = list(MODES) if args.mode == "both" else [args.mode]
    missing = [lib for lib in args.libs if importlib.util.find_spec(MODULES[lib]) is None]
    for lib in missing:
        print(f"skipping {LABELS[lib]}: not installed", flush=True)
    args.libs = [lib for lib in args.libs if lib not in missing]
    command = "python " + shlex.join(
        [sys.argv[0]] + (sys.argv[1:] if argv is None else list(argv)))
    json_path = Path(args.json or Path(args.output).with_name("realdata_results.json"))
    start, results = time.perf_counter(), {}
    for name in args.datasets:
        results[name] = run_dataset(name, args)
        if "error" not in results[name]["data"]:
            results[name]["summary"] = {m: summarize(results[name], m) for m in args.modes}
        # Rewritten after every dataset: a long run leaves usable partial results.
        body, overall = render(results, args, command, time.perf_counter() - start)
        write_section(args.output, SECTION, body)
        json_path.write_text(json.dumps(dict(
            command=command, machine=machine_description(), versions=_versions(),
            quick=args.quick, repeats=args.repeats, n_threads=args.n_threads,
            modes=args.modes, libs=args.libs, overall=overall, datasets=results),
            indent=1, default=str))
    print(f"wrote {args.output} and {json_path}", flush=True)


if __name__ == "__main__":
    main()
