"""Benchmark hgbt against scikit-learn, LightGBM and XGBoost.

    python benchmarks/bench.py            # regenerates benchmarks/RESULTS.md

Each (library, repeat) is fitted in its own fresh subprocess
(``python benchmarks/bench.py --worker LIB ...``) with ``OMP_NUM_THREADS`` set
to the thread count. Within a repeat the libraries run one after another
(round-robin; the starting library rotates each repeat) so that slow drift of
the machine affects every library alike. Data are generated once into
``benchmarks/.cache/`` as ``.npy`` files and loaded by the workers, so data
generation is never timed. Each worker prints one JSON line: fit time, predict
time on the test set (``predict`` for regression, ``predict_proba`` for
classification), the test metrics and the process's peak RSS.

The parent takes per-library medians and writes one section per task into the
output file, between ``<!-- bench:TASK:start -->`` / ``<!-- bench:TASK:end -->``
markers; everything outside the markers is left untouched.

Only the standard library and numpy are used for measuring (no benchmarking
framework). To add a task, add a ``Task`` to ``TASKS`` (and, for a new kind of
task, an estimator class per library in ``LIBS``, its prediction method in
``PREDICT_METHOD`` and any objective the mapping needs).
"""
import argparse
import datetime
import gc
import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RESULT_PREFIX = "BENCH_RESULT "


# --------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------

def _rmse(y_true, y_pred):
    diff = np.asarray(y_true, dtype=np.float64) - np.asarray(y_pred, dtype=np.float64)
    return float(np.sqrt(np.mean(diff * diff)))


# Classification metrics take integer labels 0..K-1 and predict_proba's
# (n, K) output (K = 2 for binary). NumPy only, so that no worker imports
# scikit-learn just for scoring.

def _auc(y_true, proba):
    """ROC AUC of the positive-class column (Mann-Whitney U, ties averaged)."""
    _, inverse, counts = np.unique(proba[:, 1], return_inverse=True,
                                   return_counts=True)
    ranks = (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]
    pos = np.asarray(y_true) == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def _log_loss(y_true, proba):
    p = np.asarray(proba, dtype=np.float64)[np.arange(len(y_true)), y_true]
    return float(-np.mean(np.log(np.clip(p, 1e-15, 1.0))))


def _accuracy(y_true, proba):
    return float(np.mean(np.argmax(proba, axis=1) == y_true))


METRICS = {
    # name -> (column label, function(y_true, prediction))
    "rmse": ("RMSE", _rmse),
    "auc": ("AUC", _auc),
    "logloss": ("log-loss", _log_loss),
    "accuracy": ("accuracy", _accuracy),
}
# Estimator method whose output is timed as "predict" and scored, per task kind.
PREDICT_METHOD = {"regression": "predict", "binary": "predict_proba",
                  "multiclass": "predict_proba"}
# --n-samples / --n-test are the sizes of the 1M-train / 200k-test tasks; tasks
# with other default sizes are scaled in proportion.
REF_N_TRAIN, REF_N_TEST = 1_000_000, 200_000


@dataclass(frozen=True)
class Task:
    """One benchmark problem, with the hyperparameters shared by all libraries.

    ``generator`` names a function ``f(n_samples, random_state=..., **data_kwargs)
    -> (X, y)``; it is called once with ``n_train + n_test`` rows and the last
    ``n_test`` rows become the test set. ``n_train`` / ``n_test`` are the
    full-size defaults, scaled by ``--n-samples`` / ``--n-test`` (see ``sizes``).
    """
    name: str                 # also the marker name in RESULTS.md
    title: str                # section heading; {n_train} is substituted
    kind: str                 # "regression", "binary" or "multiclass"
    generator: str            # "module:function"
    data_kwargs: dict
    random_state: int
    metrics: tuple            # keys of METRICS, one table column each
    n_train: int = REF_N_TRAIN
    n_test: int = REF_N_TEST
    params: dict = field(default_factory=dict)  # library-neutral hyperparameters
    categorical: tuple = ()   # columns holding integer category codes


MODEL = dict(n_rounds=100, max_leaves=31, learning_rate=0.1, max_bins=255,
             min_samples_leaf=20, l2=0.0)


TASKS = {
    task.name: task for task in [
        Task(
            name="regression",
            title="Regression: {n_train:,} x 28 float32, 5% NaN",
            kind="regression",
            generator="hgbt.datasets:make_regression_task",
            data_kwargs=dict(n_features=28, missing_fraction=0.05, dtype="float32"),
            random_state=0,
            metrics=("rmse",),
            params=MODEL,
        ),
        Task(
            name="binary",
            title="Binary classification (Higgs-shaped): {n_train:,} x 28 float32",
            kind="binary",
            generator="hgbt.datasets:make_binary_task",
            data_kwargs=dict(n_features=28, dtype="float32"),
            random_state=0,
            metrics=("auc", "logloss"),
            params=MODEL,
        ),
        Task(
            name="multiclass",
            title="Multiclass classification: {n_train:,} x 50 float32, 10 classes",
            kind="multiclass",
            generator="hgbt.datasets:make_multiclass_task",
            data_kwargs=dict(n_features=50, n_classes=10, dtype="float32"),
            random_state=0,
            metrics=("accuracy", "logloss"),
            n_train=200_000,
            n_test=50_000,
            params=MODEL,
        ),
        Task(
            name="categorical",
            title="Categorical-heavy binary: {n_train:,} x (10 numeric + 10 categorical "
                  "of 10–200 levels)",
            kind="binary",
            generator="hgbt.datasets:make_categorical_task",
            data_kwargs=dict(n_numeric=10, n_categorical=10, dtype="float32"),
            random_state=0,
            metrics=("auc", "logloss"),
            n_train=500_000,
            n_test=100_000,
            params=MODEL,
            categorical=tuple(range(10, 20)),
        ),
        Task(
            name="small",
            title="Small data: regression {n_train:,} x 20 float32, 5% NaN",
            kind="regression",
            generator="hgbt.datasets:make_regression_task",
            data_kwargs=dict(n_features=20, missing_fraction=0.05, dtype="float32"),
            random_state=0,
            metrics=("rmse",),
            n_train=2_000,
            n_test=1_000,
            params=MODEL,
        ),
    ]
}


def sizes(task, args):
    """(n_train, n_test) for ``task``: its defaults scaled by the command line."""
    return (max(1, round(task.n_train * args.n_samples / REF_N_TRAIN)),
            max(1, round(task.n_test * args.n_test / REF_N_TEST)))


# --------------------------------------------------------------------------
# Libraries: estimator class per task kind and the parameter mapping
# --------------------------------------------------------------------------

# Classifiers take the regressors' parameters. LightGBM and XGBoost are also given
# their log-loss objective explicitly (regression keeps the default squared error).

def _hgbt_kwargs(task, n_threads):
    p = task.params
    return dict(max_iter=p["n_rounds"], learning_rate=p["learning_rate"],
                max_leaf_nodes=p["max_leaves"], max_depth=None,
                min_samples_leaf=p["min_samples_leaf"], min_child_weight=1e-3,
                l2_regularization=p["l2"], max_bins=p["max_bins"],
                grow_policy="lossguide", early_stopping=False, n_threads=n_threads,
                # LightGBM's categorical defaults (hgbt's own are 50 and 8)
                cat_smooth=10.0, max_cat_threshold=32,
                random_state=0, categorical_features=list(task.categorical) or None)


def _hgbt_quantized_kwargs(task, n_threads):
    return dict(_hgbt_kwargs(task, n_threads), use_quantized_grad=True)


def _sklearn_kwargs(task, n_threads):
    # Threads come from OMP_NUM_THREADS (set by the parent); no n_jobs parameter.
    # The hessian floor (min_hessian_to_split=1e-3) is internal and not exposed.
    p = task.params
    return dict(max_iter=p["n_rounds"], learning_rate=p["learning_rate"],
                max_leaf_nodes=p["max_leaves"], max_depth=None,
                max_bins=p["max_bins"], early_stopping=False,
                min_samples_leaf=p["min_samples_leaf"], l2_regularization=p["l2"],
                random_state=0, categorical_features=list(task.categorical) or None)


LIGHTGBM_OBJECTIVES = {"binary": "binary", "multiclass": "multiclass"}
XGBOOST_OBJECTIVES = {"binary": "binary:logistic", "multiclass": "multi:softprob"}


def _objective(objectives, task):
    return {"objective": objectives[task.kind]} if task.kind in objectives else {}


def _lightgbm_kwargs(task, n_threads):
    p = task.params
    return dict(**_objective(LIGHTGBM_OBJECTIVES, task),
                n_estimators=p["n_rounds"], learning_rate=p["learning_rate"],
                num_leaves=p["max_leaves"], max_depth=-1, max_bin=p["max_bins"],
                min_child_samples=p["min_samples_leaf"], min_child_weight=1e-3,
                reg_lambda=p["l2"], reg_alpha=0.0, min_split_gain=0.0,
                subsample=1.0, subsample_freq=0, colsample_bytree=1.0,
                n_jobs=n_threads, verbose=-1, random_state=0)


def _xgboost_kwargs(task, n_threads):
    # XGBoost has no row-count leaf constraint, only min_child_weight (minimum
    # hessian sum in a child). For squared error every row has hessian 1, so
    # min_child_weight = min_samples_leaf is the exact equivalent of
    # min_samples_leaf=20 (and implies the others' 1e-3 hessian floor).
    # The same stand-in is used for the log-loss tasks, where it is stricter than
    # 20 rows: a row's hessian is p(1-p) <= 0.25 for binary:logistic and
    # 2p(1-p) <= 0.5 per class for multi:softprob, so leaves need >= 80 / >= 40
    # rows (more where predictions are confident); see README.md.
    # max_bin=256: XGBoost keeps missing values out of its bins; the others use
    # 255 value bins plus one for missing values.
    p = task.params
    return dict(**_objective(XGBOOST_OBJECTIVES, task),
                tree_method="hist", grow_policy="lossguide",
                max_leaves=p["max_leaves"], max_depth=0, max_bin=p["max_bins"] + 1,
                n_estimators=p["n_rounds"], learning_rate=p["learning_rate"],
                reg_lambda=p["l2"], reg_alpha=0.0, gamma=0.0,
                min_child_weight=float(p["min_samples_leaf"]),
                subsample=1.0, colsample_bytree=1.0, n_jobs=n_threads,
                random_state=0, verbosity=0,
                **(dict(enable_categorical=True,
                        feature_types=["c" if j in task.categorical else "q"
                                       for j in range(_n_features(task))])
                   if task.categorical else {}))


def _n_features(task):
    kw = task.data_kwargs
    return kw.get("n_features", kw.get("n_numeric", 0) + kw.get("n_categorical", 0))


def _fit_kwargs(lib_name, task):
    """Arguments of ``fit``: LightGBM takes its categorical columns there."""
    if lib_name == "lightgbm" and task.categorical:
        return dict(categorical_feature=list(task.categorical))
    return {}


@dataclass(frozen=True)
class Lib:
    label: str          # as shown in the table
    module: str         # importable module (checked for presence)
    dist: str           # distribution name for the version
    classes: dict       # task kind -> "module:Class"
    kwargs: object      # function(task, n_threads) -> estimator kwargs


def _classes(regressor, classifier):  # task kind -> "module:Class"
    return {"regression": regressor, "binary": classifier, "multiclass": classifier}


# hgbt configurations; the other libraries are the peers they are compared with.
OURS = ("hgbt", "hgbt_quantized")

LIBS = {
    "hgbt": Lib("hgbt", "hgbt", "hgbt",
                _classes("hgbt:HistGBDTRegressor", "hgbt:HistGBDTClassifier"),
                _hgbt_kwargs),
    "hgbt_quantized": Lib("hgbt quantized", "hgbt", "hgbt",
                          _classes("hgbt:HistGBDTRegressor", "hgbt:HistGBDTClassifier"),
                          _hgbt_quantized_kwargs),
    "sklearn": Lib("scikit-learn", "sklearn", "scikit-learn",
                   _classes("sklearn.ensemble:HistGradientBoostingRegressor",
                            "sklearn.ensemble:HistGradientBoostingClassifier"),
                   _sklearn_kwargs),
    "lightgbm": Lib("LightGBM", "lightgbm", "lightgbm",
                    _classes("lightgbm:LGBMRegressor", "lightgbm:LGBMClassifier"),
                    _lightgbm_kwargs),
    "xgboost": Lib("XGBoost", "xgboost", "xgboost",
                   _classes("xgboost:XGBRegressor", "xgboost:XGBClassifier"),
                   _xgboost_kwargs),
}


def _import(spec):
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


# --------------------------------------------------------------------------
# Data cache
# --------------------------------------------------------------------------

ARRAYS = ("X_train", "y_train", "X_test", "y_test")


def _data_dir(task, n_train, n_test, cache_dir):
    """Cache directory keyed by the task's data spec and the generator's source."""
    func = _import(task.generator)
    key = json.dumps([task.generator, task.data_kwargs, task.random_state,
                      n_train, n_test, inspect.getsource(func)], sort_keys=True)
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return Path(cache_dir) / f"{task.name}-{n_train}-{n_test}-{digest}"


def _class_baseline(y_train, y_test):
    """Test scores of predicting the training class frequencies for every row."""
    y_train, y_test = y_train.astype(np.int64), y_test.astype(np.int64)
    n_classes = int(max(y_train.max(), y_test.max())) + 1
    prior = np.bincount(y_train, minlength=n_classes) / len(y_train)
    proba = np.broadcast_to(prior, (len(y_test), n_classes))
    return dict(class_fractions=(np.bincount(y_test, minlength=n_classes)
                                 / len(y_test)).tolist(),
                prior_logloss=_log_loss(y_test, proba),
                prior_accuracy=_accuracy(y_test, proba))


def make_data(task, n_train, n_test, cache_dir):
    """Generate the task's train/test arrays once (runs in a subprocess).

    Prints a result line with the data directory and a few facts about it.
    """
    path = _data_dir(task, n_train, n_test, cache_dir)
    if not all((path / f).exists() for f in [f"{a}.npy" for a in ARRAYS] + ["meta.json"]):
        print(f"[data] generating {n_train:,} + {n_test:,} rows into {path}",
              file=sys.stderr, flush=True)
        kwargs = dict(task.data_kwargs)
        if "dtype" in kwargs:
            kwargs["dtype"] = np.dtype(kwargs["dtype"])
        X, y = _import(task.generator)(n_train + n_test,
                                       random_state=task.random_state, **kwargs)
        arrays = dict(X_train=X[:n_train], y_train=y[:n_train],
                      X_test=X[n_train:], y_test=y[n_train:])
        meta = dict(nan_fraction=float(np.isnan(X).mean()),
                    shapes={k: list(v.shape) for k, v in arrays.items()})
        if task.kind == "regression":
            meta["y_test_std"] = float(np.std(arrays["y_test"]))
        else:
            meta.update(_class_baseline(arrays["y_train"], arrays["y_test"]))
        write_data_dir(path, arrays, meta, lambda file, arr: np.save(
            file.with_suffix(".npy"), np.ascontiguousarray(arr)))
    else:
        print(f"[data] using cached {path}", file=sys.stderr, flush=True)
    print_data_result(path)


def write_data_dir(path, arrays, meta, save):
    """Write ``arrays`` (``save(file_stem, array)`` each) and ``meta.json`` into a
    temporary directory, then move it to ``path``: a half-written cache never
    looks complete."""
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, arr in arrays.items():
        save(tmp / name, arr)
    (tmp / "meta.json").write_text(json.dumps(meta))
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)


def print_data_result(path):
    """The data worker's result line: the directory and its ``meta.json``."""
    meta = json.loads((path / "meta.json").read_text())
    print(RESULT_PREFIX + json.dumps(dict(data_dir=str(path), **meta)), flush=True)


# --------------------------------------------------------------------------
# Worker: one fit + predict in a fresh process
# --------------------------------------------------------------------------

def _peak_rss_mb():
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def _vmhwm_mb():
    """Peak RSS of this process's own address space (Linux), for cross-checking.

    Unlike ru_maxrss it does not inherit the spawning process's peak.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def run_worker(lib_name, task, data_dir, n_threads):
    lib = LIBS[lib_name]
    t0 = time.perf_counter()
    estimator_class = _import(lib.classes[task.kind])
    module = importlib.import_module(lib.module)
    import_s = time.perf_counter() - t0

    # Fully loaded (not memory-mapped) so that page faults on the input are not
    # part of the timed fit. The arrays count towards the peak RSS.
    data = {a: np.load(Path(data_dir) / f"{a}.npy") for a in ARRAYS}
    if task.kind != "regression":  # labels 0..K-1 (stored as float64)
        data["y_train"] = data["y_train"].astype(np.int64)
        data["y_test"] = data["y_test"].astype(np.int64)
    estimator = estimator_class(**lib.kwargs(task, n_threads))
    rss_before_fit = _peak_rss_mb()

    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    estimator.fit(data["X_train"], data["y_train"], **_fit_kwargs(lib_name, task))
    fit_s, fit_cpu_s = time.perf_counter() - t0, time.process_time() - c0

    gc.collect()
    predict = getattr(estimator, PREDICT_METHOD[task.kind])
    t0 = time.perf_counter()
    prediction = predict(data["X_test"])
    predict_s = time.perf_counter() - t0
    # single-row latency: median of repeated calls on one test row
    row = data["X_test"][:1]
    latencies = []
    for _ in range(300):
        t0 = time.perf_counter()
        predict(row)
        latencies.append(time.perf_counter() - t0)
    predict_1row_us = statistics.median(latencies[50:]) * 1e6

    result = dict(
        lib=lib_name, version=getattr(module, "__version__", "?"), task=task.name,
        n_train=int(data["X_train"].shape[0]), n_test=int(data["X_test"].shape[0]),
        n_threads=n_threads, omp_num_threads=os.environ.get("OMP_NUM_THREADS"),
        fit_s=fit_s, fit_cpu_s=fit_cpu_s, predict_s=predict_s,
        predict_1row_us=predict_1row_us,
        scores={m: METRICS[m][1](data["y_test"], prediction) for m in task.metrics},
        peak_rss_mb=_peak_rss_mb(), peak_rss_before_fit_mb=rss_before_fit,
        vmhwm_mb=_vmhwm_mb(),
        import_s=import_s,
    )
    if lib_name in OURS:
        from hgbt.core._openmp import openmp_enabled
        result["openmp"] = bool(openmp_enabled())
    print(RESULT_PREFIX + json.dumps(result), flush=True)


# --------------------------------------------------------------------------
# Parent: orchestrate, aggregate, write RESULTS.md
# --------------------------------------------------------------------------

# The parent deliberately imports nothing heavy (no hgbt, no scikit-learn) and
# generates data in a subprocess: on Linux a spawned process's ru_maxrss starts
# at the spawning process's peak RSS, so a fat parent would inflate every
# worker's reported peak. ``parent_peak_rss_mb`` is recorded to check this.

def _spawn(args, n_threads, timeout, stderr_to_console=False, script=__file__):
    """Run ``SCRIPT ARGS`` (default bench.py) in a fresh interpreter; return its
    result dict."""
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = str(n_threads)
    cmd = [sys.executable, str(Path(script).resolve()), *args]
    try:
        proc = subprocess.run(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE,
                              stderr=None if stderr_to_console else subprocess.PIPE,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(error=f"timed out after {timeout} s")
    for line in proc.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    tail = "\n".join(((proc.stderr or "") + proc.stdout).strip().splitlines()[-15:])
    return dict(error=f"exit code {proc.returncode}: {tail}")


def spawn_worker(lib_name, task, data_dir, n_threads, timeout):
    return _spawn(["--worker", lib_name, "--task", task.name, "--data-dir",
                   str(data_dir), "--n-threads", str(n_threads)], n_threads, timeout)


def spawn_make_data(task, args):
    n_train, n_test = sizes(task, args)
    result = _spawn(["--make-data", "--task", task.name, "--n-samples",
                     str(n_train), "--n-test", str(n_test),
                     "--cache-dir", str(args.cache_dir)],
                    args.n_threads, None, stderr_to_console=True)
    if "error" in result:
        raise SystemExit(f"data generation for {task.name!r} failed: {result['error']}")
    return result


def _lscpu():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return {}
    info = {}
    for line in out.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            info.setdefault(key.strip(), value.strip())
    return info


def machine_description():
    cpu = _lscpu()
    model = cpu.get("Model name") or platform.processor() or "unknown CPU"
    if cpu.get("Hypervisor vendor"):
        model += f" ({cpu['Hypervisor vendor']} guest)"
    n_cpus = os.cpu_count()
    try:
        n_usable = len(os.sched_getaffinity(0))
    except AttributeError:
        n_usable = n_cpus
    cores = f"{n_cpus} logical CPUs"
    if n_usable != n_cpus:
        cores += f" ({n_usable} usable)"
    if cpu.get("Thread(s) per core"):
        cores += f", {cpu['Thread(s) per core']} thread(s) per core"
    mem = "unknown memory"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / 1024 ** 2:.1f} GiB RAM"
    except OSError:
        pass
    os_name = platform.system()
    try:
        os_name = platform.freedesktop_os_release()["PRETTY_NAME"]
    except (OSError, AttributeError, KeyError):
        pass
    return (f"{model}, {cores}, {mem}; {os_name}, kernel {platform.release()} "
            f"{platform.machine()}")


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git_description():
    def git(*args):
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                              text=True, check=True).stdout.strip()
    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "hgbt")
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f"git {commit}" + (", hgbt/ has uncommitted changes" if dirty else "")


def _fmt_s(x):
    return f"{x:.3f}" if x < 10 else f"{x:.2f}" if x < 100 else f"{x:.1f}"


def _fmt_range(values):
    med = statistics.median(values)
    if len(values) == 1:
        return _fmt_s(med)
    return f"{_fmt_s(med)} [{_fmt_s(min(values))}–{_fmt_s(max(values))}]"


def _data_note(task, data):
    """What a constant prediction scores on the test set, and the NaN share."""
    fracs, d = data.get("class_fractions", []), data
    if task.kind == "regression":
        note = f"test-target std {d['y_test_std']:.4f} = RMSE of a constant prediction"
    elif task.kind == "binary":
        note = (f"{fracs[1]:.1%} positive in the test set; predicting the training "
                f"positive rate gives log-loss {d['prior_logloss']:.4f} and AUC 0.5")
    else:
        note = (f"{len(fracs)} classes, {min(fracs):.1%}–{max(fracs):.1%} each in the "
                f"test set; predicting the training class frequencies gives log-loss "
                f"{d['prior_logloss']:.4f}, accuracy {d['prior_accuracy']:.4f}")
    nan = data["nan_fraction"]
    return f"{note}; " + (f"{nan:.1%} of X is NaN" if nan else "no missing values")


def render_section(task, args, runs, skipped, data, command):
    """Markdown for one task's section (without the markers)."""
    libs = [lib for lib in args.libs if lib not in skipped]
    ok = {lib: [r for r in runs if r["lib"] == lib and "error" not in r] for lib in libs}
    failed = {lib: [r for r in runs if r["lib"] == lib and "error" in r] for lib in libs}
    med = {lib: {k: statistics.median(r[k] for r in ok[lib])
                 for k in ("fit_s", "predict_s", "peak_rss_mb", "predict_1row_us")}
           for lib in libs if ok[lib]}
    for lib in med:
        med[lib].update({m: statistics.median(r["scores"][m] for r in ok[lib])
                         for m in task.metrics})
    n_train, n_test = sizes(task, args)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    p = task.params
    metric_cols = "".join(f"| test {METRICS[m][0]} " for m in task.metrics)
    metric_run_cols = "".join(f"| {METRICS[m][0]} " for m in task.metrics)
    metric_align, blank_metrics = "---:|" * len(task.metrics), "| " * len(task.metrics)

    versions = [f"Python {platform.python_version()}", f"numpy {np.__version__}"]
    for name, lib in LIBS.items():
        if name in OURS[1:]:  # the same package as hgbt
            continue
        v = _version(lib.dist)
        if name == "hgbt" and v:
            git = _git_description()
            v += f" ({git})" if git else ""
        versions.append(f"{lib.label} {v or 'not installed'}")

    n_classes = len(data.get("class_fractions", []))
    loss = {"binary": "binary log-loss (one tree per round), ", "multiclass":
            f"multinomial log-loss ({n_classes} trees per round), "}.get(task.kind, "")
    predicted = ("predict time is" if task.kind == "regression" else
                 "predict time is `predict_proba`")
    data_kwargs = ", ".join(f"{k}={v!r}" for k, v in task.data_kwargs.items())
    lines = [
        f"## {task.title.format(n_train=n_train)}",
        "",
        f"Generated {now} by `{command}`.",
        "",
        f"- **Machine**: {machine_description()}",
        f"- **Versions**: {'; '.join(versions)}",
        f"- **Data**: `{task.generator.replace(':', '.')}(n_samples={n_train + n_test:_}, "
        f"{data_kwargs}, random_state={task.random_state})`; the first {n_train:,} rows "
        f"train, the last {n_test:,} rows are the test set ({_data_note(task, data)}).",
        f"- **Model**: {loss}{p['n_rounds']} rounds, {p['max_leaves']} leaves (leaf-wise, "
        f"no depth limit), learning rate {p['learning_rate']}, {p['max_bins']} bins, "
        f"min {p['min_samples_leaf']} samples per leaf, L2 {p['l2']}, no early stopping; "
        f"{args.n_threads} threads (`OMP_NUM_THREADS={args.n_threads}`).",
        f"- **Protocol**: {args.repeats} repeat(s); each (library, repeat) fitted in a "
        f"fresh process; libraries run round-robin within a repeat, starting library "
        f"rotated each repeat. Fit time includes binning / dataset construction; "
        f"{predicted} on the {n_test:,}-row test set. Peak RSS is the worker "
        f"process's `ru_maxrss` (includes the interpreter, the library and the "
        f"loaded train/test arrays).",
        "",
        f"| library | fit s median [min–max] | predict s median [min–max] "
        f"{metric_cols}| peak RSS MB | 1-row predict µs | fit ratio hgbt/lib "
        f"| predict ratio hgbt/lib | 1-row ratio hgbt/lib |",
        f"|---|---:|---:|{metric_align}---:|---:|---:|---:|---:|",
    ]
    for lib in libs:
        label = LIBS[lib].label
        if not ok[lib]:
            lines.append(f"| {label} | failed | {blank_metrics}| | | | | |")
            continue
        rs = ok[lib]
        label += f" {rs[0]['version']}"
        if len(rs) < args.repeats:
            label += f" (n={len(rs)}/{args.repeats})"
        fit_ratio = pred_ratio = row_ratio = "n/a"
        if "hgbt" in med:
            fit_ratio = f"{med['hgbt']['fit_s'] / med[lib]['fit_s']:.2f}"
            pred_ratio = f"{med['hgbt']['predict_s'] / med[lib]['predict_s']:.2f}"
            row_ratio = f"{med['hgbt']['predict_1row_us'] / med[lib]['predict_1row_us']:.2f}"
        scores = "".join(f"| {med[lib][m]:.4f} " for m in task.metrics)
        lines.append(
            f"| {label} | {_fmt_range([r['fit_s'] for r in rs])} "
            f"| {_fmt_range([r['predict_s'] for r in rs])} "
            f"{scores}| {med[lib]['peak_rss_mb']:.0f} | {med[lib]['predict_1row_us']:.0f} "
            f"| {fit_ratio} | {pred_ratio} | {row_ratio} |")
    lines.append("")
    lines.append("Ratios are hgbt median / library median: below 1 means hgbt is faster.")
    lines.append("")

    if "hgbt" in med and "sklearn" in med:
        h, s = med["hgbt"]["fit_s"], med["sklearn"]["fit_s"]
        verdict = "yes" if h <= s else "no"
        lines.append(f"**hgbt fit time <= scikit-learn's: {verdict}** (median "
                     f"{_fmt_s(h)} s vs {_fmt_s(s)} s, ratio {h / s:.2f}).")
    else:
        lines.append("**hgbt fit time <= scikit-learn's: not measured** (hgbt and "
                     "scikit-learn must both run successfully).")
    notes = [f"{LIBS[lib].label} skipped: {why}." for lib, why in skipped.items()]
    if task.kind != "regression" and "xgboost" in libs:
        hess, h_max, per = (("p(1-p)", 0.25, "row") if task.kind == "binary" else
                            ("2p(1-p)", 0.5, "row and class"))
        notes.append(f"XGBoost has no row-count leaf limit; `min_child_weight="
                     f"{p['min_samples_leaf']}` stands in for it as in the regression "
                     f"task, but its log-loss hessian is {hess} <= {h_max} per {per}, so "
                     f"its leaves need at least {p['min_samples_leaf'] / h_max:.0f} rows "
                     f"(more where predictions are confident).")
    for lib in libs:
        for r in failed[lib]:
            err = r["error"].splitlines()
            notes.append(f"{LIBS[lib].label} run failed: {err[-1] if err else '?'}")
    if any(r["peak_rss_mb"] <= r["parent_peak_rss_mb"] + 1
           for rs in ok.values() for r in rs):
        notes.append("Some peak RSS values may be the parent process's peak "
                     "(ru_maxrss is inherited across spawn); see the VmHWM column.")
    if any(r.get("openmp") is False for r in ok.get("hgbt", [])):
        notes.append("hgbt was built **without OpenMP**: it ran single-threaded.")
    if args.n_threads > (os.cpu_count() or 1):
        notes.append(f"{args.n_threads} threads requested on a machine with "
                     f"{os.cpu_count()} CPUs (oversubscribed).")
    if notes:
        lines.append("")
        lines.extend(f"- {n}" for n in notes)

    lines += ["", "<details><summary>Per-run measurements and estimator parameters"
              "</summary>", "",
              "| repeat | order | library | fit s | fit CPU s | predict s "
              f"{metric_run_cols}| peak RSS MB | VmHWM MB | RSS before fit MB |",
              f"|---:|---:|---|---:|---:|---:|{metric_align}---:|---:|---:|"]
    for r in runs:
        label = LIBS[r["lib"]].label
        if "error" in r:
            lines.append(f"| {r['repeat']} | {r['order']} | {label} | failed "
                         f"| | {blank_metrics}| | | |")
            continue
        scores = "".join(f"| {r['scores'][m]:.4f} " for m in task.metrics)
        lines.append(
            f"| {r['repeat']} | {r['order']} | {label} | {r['fit_s']:.3f} "
            f"| {r['fit_cpu_s']:.3f} | {r['predict_s']:.3f} {scores}"
            f"| {r['peak_rss_mb']:.0f} | {r['vmhwm_mb'] or float('nan'):.0f} "
            f"| {r['peak_rss_before_fit_mb']:.0f} |")
    lines += ["", "```python"]
    for lib in libs:
        kwargs = LIBS[lib].kwargs(task, args.n_threads)
        cls = LIBS[lib].classes[task.kind].replace(":", ".")
        lines.append(f"{cls}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})")
    lines += ["```", "", "</details>"]
    return "\n".join(lines)


PREAMBLE = """\
# hgbt benchmark results

Sections between `<!-- bench:TASK:start -->` and `<!-- bench:TASK:end -->`
markers are regenerated by `python benchmarks/bench.py`; anything else in this
file (notes, rejected ideas, profiles) is kept as is.
"""


def write_section(path, task_name, body):
    start, end = f"<!-- bench:{task_name}:start -->", f"<!-- bench:{task_name}:end -->"
    block = f"{start}\n{body}\n{end}"
    path = Path(path)
    if path.exists():
        text = path.read_text()
        n_start, n_end = text.count(start), text.count(end)
        if n_start == n_end == 0:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        elif n_start == n_end == 1 and text.index(start) < text.index(end):
            i, j = text.index(start), text.index(end) + len(end)
            text = text[:i] + block + text[j:]
        else:
            raise SystemExit(f"{path}: markers for task {task_name!r} are unbalanced; "
                             f"fix them by hand (nothing was written).")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        text = PREAMBLE + "\n" + block + "\n"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def run_task(task, args, command):
    skipped = {}
    for lib in args.libs:
        if importlib.util.find_spec(LIBS[lib].module) is None:
            skipped[lib] = "not installed"
        elif task.kind not in LIBS[lib].classes:
            skipped[lib] = f"no estimator for {task.kind} tasks"
    for lib, why in skipped.items():
        print(f"[{task.name}] skipping {LIBS[lib].label}: {why}", flush=True)
    libs = [lib for lib in args.libs if lib not in skipped]

    data = spawn_make_data(task, args)
    data_dir = data["data_dir"]
    runs = []
    for rep in range(args.repeats):
        k = rep % len(libs) if libs else 0
        for order, lib in enumerate(libs[k:] + libs[:k], start=1):
            parent_peak = _peak_rss_mb()
            r = spawn_worker(lib, task, data_dir, args.n_threads, args.timeout)
            r.update(repeat=rep + 1, order=order, lib=lib,
                     parent_peak_rss_mb=parent_peak)
            runs.append(r)
            head = f"[{task.name}] repeat {rep + 1}/{args.repeats} {LIBS[lib].label:>12}"
            if "error" in r:
                print(f"{head}: FAILED {r['error']}", flush=True)
            else:
                scores = "  ".join(f"{m} {v:.4f}" for m, v in r["scores"].items())
                print(f"{head}: fit {r['fit_s']:8.3f} s  predict {r['predict_s']:7.3f} s"
                      f"  {scores}  peak RSS {r['peak_rss_mb']:.0f} MB", flush=True)
    body = render_section(task, args, runs, skipped, data, command)
    write_section(args.output, task.name, body)
    print(f"[{task.name}] wrote section to {args.output}", flush=True)
    record_medians(task, runs, args)


SUMMARY_KEYS = ("fit_s", "predict_s", "predict_1row_us", "peak_rss_mb")


def record_medians(task, runs, args):
    """Keep this task's medians in results.json; rewrite the summary and the plot."""
    path = Path(args.output).with_name("results.json")
    table = json.loads(path.read_text()) if path.exists() else {}
    medians = {}
    for lib in args.libs:
        ok = [r for r in runs if r["lib"] == lib and "error" not in r]
        if ok:
            medians[lib] = {k: statistics.median(r[k] for r in ok) for k in SUMMARY_KEYS}
            medians[lib].update({m: statistics.median(r["scores"][m] for r in ok)
                                 for m in task.metrics})
    table[task.name] = dict(n_threads=args.n_threads, medians=medians)
    path.write_text(json.dumps(table, indent=1, sort_keys=True))
    write_section(args.output, "summary", render_summary(table))
    plot_ratios(table, Path(args.output).with_name("ratios.png"))


def _ratios(entry, ours="hgbt"):
    """hgbt (or ``ours``, another hgbt configuration) / fastest peer for fit,
    predict, 1-row predict; / LightGBM for RSS."""
    med = entry["medians"]
    peers = [lib for lib in med if lib not in OURS]
    if ours not in med or not peers:
        return None
    out = {}
    for key in ("fit_s", "predict_s", "predict_1row_us"):
        best = min(peers, key=lambda lib: med[lib][key])
        out[key] = (med[ours][key] / med[best][key], LIBS[best].label)
    if "lightgbm" in med:
        out["peak_rss_mb"] = (med[ours]["peak_rss_mb"] / med["lightgbm"]["peak_rss_mb"],
                              "LightGBM")
    return out


def _quality(entry, ours):
    """(ours, best peer) on the task's first metric, as text."""
    med = entry["medians"]
    metric = next((m for m in METRICS if m in med.get(ours, {})), None)
    peers = [lib for lib in med if lib not in OURS and metric in med[lib]]
    if metric is None or not peers:
        return "n/a"
    lower_better = metric in ("rmse", "logloss")
    best = (min if lower_better else max)(peers, key=lambda lib: med[lib][metric])
    return (f"{METRICS[metric][0]} {med[ours][metric]:.4f} vs {med[best][metric]:.4f} "
            f"({LIBS[best].label})")


def render_summary(table):
    lines = ["## Summary: hgbt against the fastest peer, per task",
             "",
             "Medians of the latest run of each task (sections below). Targets: fit "
             "≤ 0.6 × the fastest peer, batch predict and 1-row predict ≤ 0.5 × "
             "(XGBoost; here the fastest peer), peak RSS ≤ LightGBM's, and the small "
             "task's fit ≤ XGBoost's; quality equal to the best peer's. "
             "`benchmarks/ratios.png` plots the default configuration's ratios.",
             "",
             "| task | hgbt | threads | fit hgbt/fastest | batch predict | 1-row predict "
             "| peak RSS hgbt/LightGBM | quality (hgbt vs best peer) |",
             "|---|---|---:|---|---|---|---:|---|"]
    for name, entry in table.items():
        for ours in OURS:
            r = _ratios(entry, ours)
            if r is None:
                continue
            cell = lambda key: f"{r[key][0]:.2f} ({r[key][1]})" if key in r else "n/a"
            rss = f"{r['peak_rss_mb'][0]:.2f}" if "peak_rss_mb" in r else "n/a"
            lines.append(f"| {name} | {LIBS[ours].label} | {entry['n_threads']} "
                         f"| {cell('fit_s')} | {cell('predict_s')} "
                         f"| {cell('predict_1row_us')} | {rss} | {_quality(entry, ours)} |")
    return "\n".join(lines)


def plot_ratios(table, path):
    """Bar chart of the summary ratios (skipped without matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no ratios plot", flush=True)
        return
    names = [n for n in table if _ratios(table[n])]
    keys = [("fit_s", "fit"), ("predict_s", "batch predict"),
            ("predict_1row_us", "1-row predict"), ("peak_rss_mb", "peak RSS vs LightGBM")]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(keys)
    for i, (key, label) in enumerate(keys):
        values = [_ratios(table[n]).get(key, (np.nan,))[0] for n in names]
        ax.bar(np.arange(len(names)) + i * width, values, width, label=label)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(0.6, color="grey", linestyle="--", linewidth=0.8, label="fit target 0.6")
    ax.set_xticks(np.arange(len(names)) + width * (len(keys) - 1) / 2, names)
    ax.set_ylabel("hgbt / fastest peer (lower is better)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _csv(choices):
    def parse(value):
        items = [v.strip() for v in value.split(",") if v.strip()]
        bad = [v for v in items if v not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(
                f"unknown {bad or value!r}; choose from {','.join(choices)}")
        return list(dict.fromkeys(items))
    return parse


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Benchmark hgbt against scikit-learn, LightGBM and XGBoost "
                    "and (re)write the results file.")
    parser.add_argument("--n-samples", type=int, default=REF_N_TRAIN,
                        help="training rows of the regression and binary tasks "
                             "(default 1_000_000); multiclass (200_000 by default) "
                             "is scaled in proportion")
    parser.add_argument("--n-test", type=int, default=REF_N_TEST,
                        help="extra test rows from the same generator for the "
                             "regression and binary tasks (default 200_000); "
                             "multiclass (50_000 by default) is scaled in proportion")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--libs", type=_csv(list(LIBS)), default=list(LIBS),
                        help=f"comma-separated, default {','.join(LIBS)}")
    parser.add_argument("--tasks", type=_csv(list(TASKS)), default=list(TASKS),
                        help=f"comma-separated, default {','.join(TASKS)}")
    parser.add_argument("--n-threads", type=int, default=2)
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--cache-dir", default=str(HERE / ".cache"))
    parser.add_argument("--timeout", type=float, default=None,
                        help="seconds allowed per worker process (default: none)")
    # Internal: run one measurement in this process.
    parser.add_argument("--worker", choices=list(LIBS), help=argparse.SUPPRESS)
    parser.add_argument("--task", choices=list(TASKS), help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--make-data", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        run_worker(args.worker, TASKS[args.task], args.data_dir, args.n_threads)
        return
    if args.make_data:
        make_data(TASKS[args.task], args.n_samples, args.n_test, args.cache_dir)
        return
    if args.n_samples < 1 or args.n_test < 1 or args.repeats < 1 or args.n_threads < 1:
        parser.error("--n-samples, --n-test, --repeats and --n-threads must be >= 1")
    command = "python " + shlex.join(
        [sys.argv[0]] + (sys.argv[1:] if argv is None else list(argv)))
    for name in args.tasks:
        run_task(TASKS[name], args, command)


if __name__ == "__main__":
    main()
