"""Benchmark hgbt against LightGBM and XGBoost on wide sparse (CSR) input.

    python benchmarks/sparse_bench.py     # writes its section of benchmarks/RESULTS.md

Two tasks (``--tasks``):

``wide``
    200,000 rows x 5,020 columns, binary: 20 dense standard-normal columns, then
    4,000 one-hot columns (16 Zipf-distributed categorical variables, most
    frequent level of each dropped) and 1,000 bag-of-words count columns. Every
    library fits the same ``scipy.sparse`` CSR matrix (80% of the rows) and
    ``predict_proba`` scores the other 20%. Variants ``hgbt`` (defaults, feature
    bundling on) and ``hgbt-nobundle`` (``enable_bundle=False``).
``memory``
    1,000,000 x 10,000 CSR at 0.1% density, regression, 10 rounds: fit time and
    peak RSS of hgbt (LightGBM too with ``--memory-peers``).

Both tasks also run a ``data only`` worker that loads the data and stops, so the
tables can show each library's peak RSS over the data's own footprint.

The protocol is bench.py's, and so are its helpers (imported, not copied): each
(library, repeat) runs in a fresh ``sparse_bench.py --worker LIB`` process with
``OMP_NUM_THREADS`` set; the libraries go round-robin, the first one rotated each
repeat; data are generated once into ``benchmarks/.cache/`` and loaded by the
workers; each worker prints one JSON line (fit and predict seconds, metrics, peak
RSS from ``resource.getrusage``). The parent takes medians and writes the
section between ``<!-- bench:sparse:start -->`` / ``<!-- bench:sparse:end -->``;
inside it each task has its own ``<!-- sparse:TASK:start/end -->`` block, and a
block is only replaced when its task is run. Only the standard library, numpy
and scipy are used for measuring.
"""
import argparse
import datetime
import gc
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import platform
import re
import resource
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# bench.py imports only the standard library and numpy at module level, so the
# parent process stays small (a spawned worker's ru_maxrss starts at the
# parent's peak). scipy and the libraries are imported in the subprocesses.
import bench  # noqa: E402
from bench import (  # noqa: E402
    MODEL, RESULT_PREFIX, Task, _auc, _class_baseline, _csv, _fmt_range,
    _git_description, _hgbt_kwargs, _import, _log_loss, _peak_rss_mb, _version,
    _vmhwm_mb, machine_description, write_section,
)

SECTION = "sparse"          # <!-- bench:sparse:start/end --> in RESULTS.md
TASK_ORDER = ("wide", "memory")
DATA_ONLY = "data"          # worker that only loads the data (RSS baseline)
QUICK_FACTOR = 10           # --quick divides the row counts by this


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

WIDE_SPEC = dict(
    n_rows=200_000,            # 80% train, 20% test
    test_fraction=0.2,
    n_dense=20,                # standard normal float columns
    n_categorical=16,          # one-hot encoded variables ...
    n_levels=251,              # ... of 251 levels; the most frequent is dropped,
                               # leaving 250 columns each (4,000 in all)
    zipf_levels=(0.9, 1.3),    # per-variable Zipf exponent range of level frequencies
    n_vocab=1_000,             # bag-of-words columns
    zipf_words=1.0,
    tokens_per_row=11.5,       # Poisson mean; ~10 distinct words per row after dedup
    count_probs=(0.7, 0.2, 0.1),   # a present word's count is 1, 2 or 3
    n_effect_categorical=6,    # variables with a random effect per level
    categorical_effect_sd=0.5,
    n_effect_words=30,         # words with an effect per count
    word_effect_sd=0.5,
    logit_noise_sd=0.7,        # Gaussian noise added to the logit
    seed=0,
)

MEMORY_SPEC = dict(
    n_rows=1_000_000,
    n_cols=10_000,
    density=0.001,
    n_signal=10,               # y = X[:, signal] @ U(1, 2) weights + N(0, noise_sd)
    noise_sd=0.05,
    seed=0,
)


def _zipf_probs(n, exponent):
    p = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    return p / p.sum()


def _csr_mb(X):
    return (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2 ** 20


def make_wide(spec):
    """The ``wide`` task: (X_train, y_train, X_test, y_test) as CSR / int64, and facts.

    Column order: ``n_dense`` dense columns, then the one-hot block (variable by
    variable, levels by decreasing frequency, level 0 dropped), then the words.
    """
    from scipy import sparse

    s = spec
    rng = np.random.default_rng(s["seed"])
    n = s["n_rows"]
    dense = rng.standard_normal((n, s["n_dense"]))

    # One-hot block: level 0 is the most frequent level of each variable; it is
    # the dropped reference, so its rows have no entry for that variable.
    n_cat, n_levels = s["n_categorical"], s["n_levels"]
    exponents = rng.uniform(*s["zipf_levels"], n_cat)
    codes = np.empty((n, n_cat), dtype=np.int64)
    for v in range(n_cat):
        codes[:, v] = rng.choice(n_levels, size=n, p=_zipf_probs(n_levels, exponents[v]))
    oh_rows, oh_var = np.nonzero(codes > 0)
    oh_cols = oh_var * (n_levels - 1) + codes[oh_rows, oh_var] - 1
    n_onehot = n_cat * (n_levels - 1)

    # Bag of words: Poisson(tokens_per_row) tokens per row from a Zipf vocabulary,
    # repeated words merged, each present word given a count of 1..3.
    n_vocab = s["n_vocab"]
    n_tokens = rng.poisson(s["tokens_per_row"], n)
    token_rows = np.repeat(np.arange(n, dtype=np.int64), n_tokens)
    token_words = rng.choice(n_vocab, size=token_rows.size,
                             p=_zipf_probs(n_vocab, s["zipf_words"]))
    pairs = np.unique(token_rows * n_vocab + token_words)
    w_rows, w_words = pairs // n_vocab, pairs % n_vocab
    counts = rng.choice(np.arange(1.0, len(s["count_probs"]) + 1), size=pairs.size,
                        p=s["count_probs"])

    S = sparse.csr_matrix(
        (np.concatenate([np.ones(oh_rows.size), counts]),
         (np.concatenate([oh_rows, w_rows]), np.concatenate([oh_cols, n_onehot + w_words]))),
        shape=(n, n_onehot + n_vocab))
    S.sum_duplicates()
    S.sort_indices()

    # Logit: nonlinear terms of 8 dense columns, a random effect per level of 6
    # variables (0 for the dropped level), effects per count of 30 mid-frequency
    # words, centred; then Gaussian noise and a Bernoulli draw.
    x = dense
    f = (np.sin(1.5 * x[:, 0]) + 0.8 * (x[:, 1] > 0.3) + 0.6 * x[:, 2] * (x[:, 3] > 0)
         + 0.5 * np.tanh(2 * x[:, 4]) * x[:, 5] - 0.3 * x[:, 6] ** 2 + 0.4 * np.abs(x[:, 7]))
    effect_vars = rng.choice(n_cat, s["n_effect_categorical"], replace=False)
    for v in effect_vars:
        effect = rng.normal(0.0, s["categorical_effect_sd"], n_levels)
        effect[0] = 0.0
        f += effect[codes[:, v]]
    effect_words = rng.choice(np.arange(2, 300), s["n_effect_words"], replace=False)
    word_effect = np.zeros(n_vocab)
    word_effect[effect_words] = rng.normal(0.0, s["word_effect_sd"], s["n_effect_words"])
    f += S[:, n_onehot:] @ word_effect
    f -= np.median(f)
    logit = f + rng.normal(0.0, s["logit_noise_sd"], n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)

    X = sparse.hstack([sparse.csr_matrix(dense), S], format="csr").tocsr()
    X.sort_indices()
    n_train = n - int(round(n * s["test_fraction"]))
    f_test = f[n_train:]
    arrays = dict(X_train=X[:n_train], y_train=y[:n_train],
                  X_test=X[n_train:], y_test=y[n_train:])
    meta = dict(
        shape=list(X.shape), nnz=int(X.nnz), density=X.nnz / (X.shape[0] * X.shape[1]),
        n_train=n_train, n_test=n - n_train,
        n_dense=s["n_dense"], n_onehot=n_onehot, n_words=n_vocab,
        nnz_per_row=dict(dense=float(s["n_dense"]),
                         onehot=float(oh_rows.size / n), words=float(pairs.size / n)),
        csr_mb=_csr_mb(X), dtype=str(X.dtype), index_dtype=str(X.indices.dtype),
        effect_variables=sorted(int(v) for v in effect_vars),
        # AUC of the noiseless logit on the test rows: what no model can beat
        oracle_auc=_auc(y[n_train:], np.column_stack([-f_test, f_test])),
        **_class_baseline(y[:n_train], y[n_train:]),
    )
    return arrays, meta


def make_memory(spec):
    """The ``memory`` task: X (CSR, uniform values) and a regression target y."""
    from scipy import sparse

    s = spec
    rng = np.random.default_rng(s["seed"])
    shape = (s["n_rows"], s["n_cols"])
    # A Generator, not ``random_state=0``: with a legacy RandomState, scipy draws
    # the cells through RandomState.choice(replace=False), which permutes all
    # n_rows * n_cols = 1e10 cell indices (80 GB of int64; 144 s and 7.7 GB peak
    # at a tenth of the rows). A Generator samples without the permutation.
    try:
        X = sparse.random(*shape, density=s["density"], format="csr", rng=rng)
    except TypeError:  # scipy < 1.15
        X = sparse.random(*shape, density=s["density"], format="csr", random_state=rng)
    X = sparse.csr_matrix(X)
    X.sort_indices()
    signal = np.sort(rng.choice(s["n_cols"], s["n_signal"], replace=False))
    weights = rng.uniform(1.0, 2.0, s["n_signal"])
    y = X[:, signal] @ weights + rng.normal(0.0, s["noise_sd"], s["n_rows"])
    meta = dict(shape=list(X.shape), nnz=int(X.nnz), density=X.nnz / (shape[0] * shape[1]),
                n_train=shape[0], n_test=0, csr_mb=_csr_mb(X), dtype=str(X.dtype),
                index_dtype=str(X.indices.dtype), signal_columns=signal.tolist(),
                y_std=float(np.std(y)),
                signal_rows_fraction=float((X[:, signal].getnnz(axis=1) > 0).mean()))
    return dict(X_train=X, y_train=y), meta


TASKS = {
    "wide": dict(
        kind="binary", spec=WIDE_SPEC, generator=make_wide,
        # bench.py's Task, only for its parameter mappings (_hgbt_kwargs etc.)
        bench_task=Task(name="wide", title="", kind="binary",
                        generator="sparse_bench:make_wide", data_kwargs={},
                        random_state=0, metrics=("auc", "logloss"), params=MODEL),
        libs=("hgbt", "hgbt-nobundle", "lightgbm", "xgboost"),
        peer_libs=(),
    ),
    "memory": dict(
        kind="regression", spec=MEMORY_SPEC, generator=make_memory,
        bench_task=Task(name="memory", title="", kind="regression",
                        generator="sparse_bench:make_memory", data_kwargs={},
                        random_state=0, metrics=("r2",), params=dict(MODEL, n_rounds=10)),
        libs=("hgbt",),
        peer_libs=("lightgbm",),   # only with --memory-peers
    ),
}


def task_spec(name, quick):
    spec = dict(TASKS[name]["spec"])
    if quick:
        spec["n_rows"] //= QUICK_FACTOR
    return spec


def _data_dir(name, spec, cache_dir):
    """Cache directory keyed by the spec and the generators' source."""
    key = json.dumps([name, spec, inspect.getsource(TASKS[name]["generator"]),
                      inspect.getsource(_zipf_probs)], sort_keys=True)
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return Path(cache_dir) / f"sparse-{name}-{spec['n_rows']}-{digest}"


def make_data(name, quick, cache_dir):
    """Generate the task's data once (runs in a subprocess); print a result line."""
    from scipy import sparse

    spec = task_spec(name, quick)
    path = _data_dir(name, spec, cache_dir)
    if not (path / "meta.json").exists():
        print(f"[data] generating {name} ({spec['n_rows']:,} rows) into {path}",
              file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        arrays, meta = TASKS[name]["generator"](spec)
        meta.update(spec=spec, generate_s=time.perf_counter() - t0)
        def save(file, arr):
            if file.name.startswith("X"):
                sparse.save_npz(file.with_suffix(".npz"), arr, compressed=False)
            else:
                np.save(file.with_suffix(".npy"), arr)

        bench.write_data_dir(path, arrays, meta, save)
    else:
        print(f"[data] using cached {path}", file=sys.stderr, flush=True)
    bench.print_data_result(path)


def load_data(data_dir):
    """X_* as ``scipy.sparse.csr_matrix`` (fully read, not memory-mapped), y_* arrays."""
    from scipy import sparse

    data = {}
    for f in sorted(Path(data_dir).iterdir()):
        if f.suffix == ".npz":
            data[f.stem] = sparse.csr_matrix(sparse.load_npz(f))
        elif f.suffix == ".npy":
            data[f.stem] = np.load(f)
    return data


# --------------------------------------------------------------------------
# Libraries: bench.py's estimator classes and parameter mappings
# --------------------------------------------------------------------------

LIBS = {
    "hgbt": bench.LIBS["hgbt"],
    "hgbt-nobundle": bench.Lib(
        "hgbt (no bundling)", "hgbt", "hgbt", bench.LIBS["hgbt"].classes,
        lambda task, n_threads: dict(_hgbt_kwargs(task, n_threads), enable_bundle=False)),
    "lightgbm": bench.LIBS["lightgbm"],
    "xgboost": bench.LIBS["xgboost"],
}
PEERS = ("lightgbm", "xgboost")
HGBT_VARIANTS = ("hgbt", "hgbt-nobundle")


def _label(lib):
    return "data only" if lib == DATA_ONLY else LIBS[lib].label


def _r2(y_true, y_pred):
    y_true = np.asarray(y_true, dtype=np.float64)
    resid = y_true - np.asarray(y_pred, dtype=np.float64)
    return float(1.0 - np.mean(resid * resid) / np.var(y_true))


METRICS = {"auc": ("AUC", _auc), "logloss": ("log-loss", _log_loss),
           "r2": ("R² (train)", _r2)}


# --------------------------------------------------------------------------
# Worker: one fit + predict in a fresh process
# --------------------------------------------------------------------------

def run_worker(lib_name, task_name, data_dir, n_threads):
    task = TASKS[task_name]
    bt = task["bench_task"]
    t0 = time.perf_counter()
    if lib_name != DATA_ONLY:
        lib = LIBS[lib_name]
        estimator_class = _import(lib.classes[task["kind"]])
        module = importlib.import_module(lib.module)
    import_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    data = load_data(data_dir)
    load_s = time.perf_counter() - t0
    X_train, y_train = data["X_train"], data["y_train"]
    if task["kind"] == "binary":
        X_test, y_test = data["X_test"], data["y_test"]
    else:  # memory task: no test split; predict (and score) the training rows
        X_test, y_test = X_train, y_train
    result = dict(lib=lib_name, task=task_name, n_threads=n_threads,
                  omp_num_threads=os.environ.get("OMP_NUM_THREADS"),
                  n_train=int(X_train.shape[0]), n_features=int(X_train.shape[1]),
                  nnz_train=int(X_train.nnz), import_s=import_s, load_s=load_s)
    if lib_name == DATA_ONLY:
        gc.collect()
        result.update(peak_rss_mb=_peak_rss_mb(), vmhwm_mb=_vmhwm_mb())
        print(RESULT_PREFIX + json.dumps(result), flush=True)
        return

    estimator = estimator_class(**lib.kwargs(bt, n_threads))
    rss_before_fit = _peak_rss_mb()
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    estimator.fit(X_train, y_train)
    fit_s, fit_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    # The fit's peak: prediction below may allocate (it's recorded separately).
    peak_rss_fit, vmhwm_fit = _peak_rss_mb(), _vmhwm_mb()

    gc.collect()
    method = "predict_proba" if task["kind"] == "binary" else "predict"
    t0 = time.perf_counter()
    prediction = getattr(estimator, method)(X_test)
    predict_s = time.perf_counter() - t0

    result.update(
        version=getattr(module, "__version__", "?"), fit_s=fit_s, fit_cpu_s=fit_cpu_s,
        predict_s=predict_s, predict_rows=int(X_test.shape[0]), predict_method=method,
        scores={m: METRICS[m][1](y_test, prediction) for m in bt.metrics},
        peak_rss_mb=peak_rss_fit, vmhwm_mb=vmhwm_fit,
        peak_rss_after_predict_mb=_peak_rss_mb(), peak_rss_before_fit_mb=rss_before_fit)
    if lib_name.startswith("hgbt"):
        try:
            from hgbt.core._openmp import openmp_enabled
            result["openmp"] = bool(openmp_enabled())
        except ImportError:
            pass
    print(RESULT_PREFIX + json.dumps(result), flush=True)


# --------------------------------------------------------------------------
# Parent: orchestrate, aggregate, write RESULTS.md
# --------------------------------------------------------------------------

def _spawn(args, n_threads, timeout, stderr_to_console=False):
    """Run ``sparse_bench.py ARGS`` in a fresh interpreter (bench.py's runner)."""
    return bench._spawn(args, n_threads, timeout, stderr_to_console, script=__file__)


def _busy_cpu_s():
    """CPU seconds the whole machine has been busy (Linux /proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def wait_idle(max_wait, threshold=0.10, window=2.0):
    """Wait (up to ``max_wait`` s) until other processes use < ``threshold`` of the CPUs.

    The share is measured over ``window``-second intervals from /proc/stat (the
    parent itself is idle while it waits). Returns the other processes' share in
    the last interval, or None where /proc/stat is unavailable.
    """
    if max_wait <= 0:
        return None
    start = time.perf_counter()
    while True:
        b0 = _busy_cpu_s()
        if b0 is None:
            return None
        time.sleep(window)
        share = (_busy_cpu_s() - b0) / (window * (os.cpu_count() or 1))
        if share < threshold or time.perf_counter() - start >= max_wait:
            return share


def selected_libs(name, args):
    task = TASKS[name]
    libs = list(task["libs"]) + (list(task["peer_libs"]) if args.memory_peers else [])
    return [lib for lib in libs if lib in args.only]


def run_task(name, args, command):
    skipped = {}
    libs = []
    for lib in selected_libs(name, args):
        if importlib.util.find_spec(LIBS[lib].module) is None:
            skipped[lib] = "not installed"
            print(f"[{name}] skipping {LIBS[lib].label}: not installed", flush=True)
        else:
            libs.append(lib)

    data = _spawn(["--make-data", "--task", name, "--cache-dir", str(args.cache_dir)]
                  + (["--quick"] if args.quick else []),
                  args.threads, None, stderr_to_console=True)
    if "error" in data:
        raise SystemExit(f"data generation for {name!r} failed: {data['error']}")
    print(f"[{name}] data: {data['shape'][0]:,} x {data['shape'][1]:,}, "
          f"nnz {data['nnz']:,} (density {data['density']:.4%}), "
          f"CSR {data['csr_mb']:.0f} MB", flush=True)

    workers = [DATA_ONLY] + libs
    runs = []
    for rep in range(args.repeats):
        k = rep % len(workers)
        for order, lib in enumerate(workers[k:] + workers[:k], start=1):
            idle_share = wait_idle(args.wait_idle)
            parent_peak = _peak_rss_mb()
            busy0, own0, t0 = _busy_cpu_s(), _children_cpu_s(), time.perf_counter()
            r = _spawn(["--worker", lib, "--task", name, "--data-dir", data["data_dir"],
                        "--threads", str(args.threads)], args.threads, args.timeout)
            wall = time.perf_counter() - t0
            others = (None if busy0 is None else
                      max(0.0, (_busy_cpu_s() - busy0) - (_children_cpu_s() - own0)))
            r.update(repeat=rep + 1, order=order, lib=lib, parent_peak_rss_mb=parent_peak,
                     others_cpu_share_before=idle_share,
                     others_cpu_share=(None if others is None
                                       else others / (wall * (os.cpu_count() or 1))))
            runs.append(r)
            head = f"[{name}] repeat {rep + 1}/{args.repeats} {_label(lib):>18}"
            if "error" in r:
                print(f"{head}: FAILED {r['error']}", flush=True)
            elif lib == DATA_ONLY:
                print(f"{head}: load {r['load_s']:.2f} s  peak RSS "
                      f"{r['peak_rss_mb']:.0f} MB", flush=True)
            else:
                scores = "  ".join(f"{m} {v:.4f}" for m, v in r["scores"].items())
                print(f"{head}: fit {r['fit_s']:8.3f} s  predict {r['predict_s']:7.3f} s"
                      f"  {scores}  peak RSS {r['peak_rss_mb']:.0f} MB", flush=True)
    return render_block(name, args, libs, runs, skipped, data, command)


# ---- rendering --------------------------------------------------------------

def _versions():
    out = [f"Python {platform.python_version()}", f"numpy {np.__version__}",
           f"scipy {_version('scipy') or 'not installed'}"]
    for lib in ("hgbt", "lightgbm", "xgboost"):
        v = _version(LIBS[lib].dist)
        if lib == "hgbt" and v:
            git = _git_description()
            v += f" ({git})" if git else ""
        out.append(f"{LIBS[lib].label} {v or 'not installed'}")
    return "; ".join(out)


def _medians(runs, libs, metrics):
    ok = {lib: [r for r in runs if r["lib"] == lib and "error" not in r] for lib in libs}
    med = {}
    for lib, rs in ok.items():
        if not rs:
            continue
        keys = ["peak_rss_mb"] if lib == DATA_ONLY else [
            "fit_s", "predict_s", "peak_rss_mb", "peak_rss_before_fit_mb"]
        med[lib] = {k: statistics.median(r[k] for r in rs) for k in keys}
        if lib != DATA_ONLY:
            med[lib].update({m: statistics.median(r["scores"][m] for r in rs)
                             for m in metrics})
    return ok, med


def _row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _ratio(med, a, b, key):
    if a in med and b in med and med[b][key] > 0:
        return f"{med[a][key] / med[b][key]:.2f}"
    return "n/a"


def render_block(name, args, libs, runs, skipped, data, command):
    task = TASKS[name]
    bt = task["bench_task"]
    p, spec = bt.params, data["spec"]
    metrics = bt.metrics
    ok, med = _medians(runs, [DATA_ONLY] + libs, metrics)
    base = med.get(DATA_ONLY, {}).get("peak_rss_mb")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows, cols = data["shape"]
    quick = " (`--quick`: a tenth of the rows)" if args.quick else ""

    if name == "wide":
        npr = data["nnz_per_row"]
        title = (f"### wide: {rows:,} rows x {cols:,} columns ({data['n_dense']} dense + "
                 f"{data['n_onehot']:,} one-hot + {data['n_words']:,} word counts), "
                 f"binary{quick}")
        data_line = (
            f"- **Data**: `make_wide` in `sparse_bench.py` (seed {spec['seed']}): "
            f"{data['n_dense']} standard-normal columns; {spec['n_categorical']} "
            f"categorical variables of {spec['n_levels']} levels with Zipf-like "
            f"frequencies (exponents {spec['zipf_levels'][0]}–{spec['zipf_levels'][1]}), "
            f"one-hot with the most frequent level dropped ({data['n_onehot']:,} "
            f"columns, {npr['onehot']:.1f} entries per row); {data['n_words']:,} "
            f"bag-of-words count columns (Zipf vocabulary, {npr['words']:.1f} words per "
            f"row, counts 1–3). One CSR matrix, `scipy.sparse.hstack([dense, sparse])`, "
            f"{data['dtype']} values, {data['index_dtype']} indices: "
            f"nnz {data['nnz']:,}, density {data['density']:.3%}, "
            f"{data['csr_mb']:.0f} MB. The label is a Bernoulli draw of the sigmoid of "
            f"nonlinear terms of 8 dense columns + a random effect per level of "
            f"{spec['n_effect_categorical']} variables + effects of "
            f"{spec['n_effect_words']} words' counts + N(0, {spec['logit_noise_sd']}) "
            f"noise. First {data['n_train']:,} rows train, last {data['n_test']:,} "
            f"test ({data['class_fractions'][1]:.1%} positive; the noiseless logit "
            f"scores AUC {data['oracle_auc']:.4f} on them; predicting the training "
            f"positive rate gives log-loss {data['prior_logloss']:.4f}).")
        model_line = (
            f"- **Model**: binary log-loss, {p['n_rounds']} rounds, {p['max_leaves']} "
            f"leaves (leaf-wise), learning rate {p['learning_rate']}, {p['max_bins']} "
            f"bins, min {p['min_samples_leaf']} samples per leaf, L2 {p['l2']}, no early "
            f"stopping; {args.threads} threads (`OMP_NUM_THREADS={args.threads}`); "
            f"bench.py's parameter mapping per library. `hgbt` uses its defaults for "
            f"sparse input (feature bundling on), `hgbt (no bundling)` "
            f"`enable_bundle=False`. Every library gets the CSR matrix itself.")
    else:
        title = (f"### memory: {rows:,} x {cols:,} CSR at {spec['density']:.1%} density, "
                 f"regression, {p['n_rounds']} rounds{quick}")
        data_line = (
            f"- **Data**: `scipy.sparse.random({rows:_}, {cols:_}, "
            f"density={spec['density']}, format='csr', "
            f"rng=np.random.default_rng({spec['seed']}))` (uniform values): "
            f"nnz {data['nnz']:,}, {data['dtype']} values, {data['index_dtype']} "
            f"indices, {data['csr_mb']:.0f} MB. y = {spec['n_signal']} columns' "
            f"values times U(1, 2) weights + N(0, {spec['noise_sd']}) (std "
            f"{data['y_std']:.4f}; {data['signal_rows_fraction']:.1%} of rows have a "
            f"nonzero signal column). Fitted on all rows; `predict` and R² are on the "
            f"training rows, as a sanity check only.")
        model_line = (
            f"- **Model**: squared error, {p['n_rounds']} rounds, {p['max_leaves']} "
            f"leaves, learning rate {p['learning_rate']}, {p['max_bins']} bins, min "
            f"{p['min_samples_leaf']} samples per leaf, L2 {p['l2']}, no early stopping; "
            f"{args.threads} threads; bench.py's parameter mapping, hgbt with its "
            f"defaults for sparse input.")

    predicted = ("`predict_proba` on the test rows" if task["kind"] == "binary"
                 else "`predict` on the training rows")
    lines = [
        f"<!-- sparse:{name}:start -->",
        title, "",
        f"Generated {now} by `{command}`.", "",
        f"- **Machine**: {machine_description()}",
        f"- **Versions**: {_versions()}",
        data_line, model_line,
        f"- **Protocol**: {args.repeats} repeat(s); each (library, repeat) in a fresh "
        f"process, round-robin, first library rotated each repeat; a `data only` worker "
        f"loads the CSR data and stops. Fit time includes binning / dataset "
        f"construction; predict time is {predicted}. Peak RSS is the worker's "
        f"`ru_maxrss` right after `fit` (interpreter + library + the loaded CSR "
        f"matrices); \"over data\" subtracts the `data only` worker's peak.",
        "",
    ]
    metric_names = [METRICS[m][0] for m in metrics]
    lines += [_row(["library", "fit s median [min–max]", "predict s median [min–max]",
                    *metric_names, "peak RSS MB", "over data MB"]),
              _row(["---"] + ["---:"] * (4 + len(metrics)))]
    for lib in [DATA_ONLY] + libs:
        rs = ok[lib]
        label = _label(lib)
        if not rs:
            lines.append(_row([label, "failed"] + [""] * (3 + len(metrics))))
            continue
        n_runs = len([r for r in runs if r["lib"] == lib])
        if lib != DATA_ONLY:
            label += f" {rs[0]['version']}"
        if len(rs) < n_runs:
            label += f" (n={len(rs)}/{n_runs})"
        m = med[lib]
        if lib == DATA_ONLY:
            load = _fmt_range([r["load_s"] for r in rs])
            lines.append(_row([label, f"(load {load})", ""] + [""] * len(metrics)
                              + [f"{m['peak_rss_mb']:.0f}", "0"]))
            continue
        over = f"{m['peak_rss_mb'] - base:.0f}" if base is not None else "n/a"
        lines.append(_row([label, _fmt_range([r["fit_s"] for r in rs]),
                           _fmt_range([r["predict_s"] for r in rs]),
                           *[f"{m[k]:.4f}" for k in metrics],
                           f"{m['peak_rss_mb']:.0f}", over]))
    lines.append("")

    variants = [v for v in HGBT_VARIANTS if v in libs]
    peers = [q for q in PEERS if q in libs]
    if variants and peers:
        keys = (("fit_s", "fit"), ("predict_s", "predict"), ("peak_rss_mb", "peak RSS"))
        lines += ["Ratios of medians (below 1: hgbt is faster / smaller):", "",
                  _row(["hgbt variant"] + [f"{what} hgbt/{LIBS[q].label}"
                                           for _, what in keys for q in peers]),
                  _row(["---"] + ["---:"] * (len(keys) * len(peers)))]
        for v in variants:
            lines.append(_row([LIBS[v].label] + [_ratio(med, v, q, key)
                                                 for key, _ in keys for q in peers]))
        lines.append("")

    notes = [f"{LIBS[lib].label} skipped: {why}." for lib, why in skipped.items()]
    if name == "memory" and not args.memory_peers:
        notes.append("Peers not run (add `--memory-peers` for LightGBM).")
    if "xgboost" in libs:
        notes.append(
            "XGBoost reads the entries a CSR matrix doesn't store as *missing*, not 0 "
            "(LightGBM and hgbt: 0). With 0/1 and count columns that only changes which "
            "side a split sends those rows by default, not which partitions it can make. "
            f"As in bench.py, `min_child_weight={p['min_samples_leaf']}` stands in for "
            f"the row-count leaf limit XGBoost lacks (hessian p(1-p) <= 0.25 per row, so "
            f"at least {p['min_samples_leaf'] / 0.25:.0f} rows per leaf).")
    for lib in [DATA_ONLY] + libs:
        for r in runs:
            if r["lib"] == lib and "error" in r:
                err = r["error"].strip().splitlines()
                notes.append(f"{_label(lib)} run {r['repeat']} failed: "
                             f"`{err[-1] if err else '?'}`")
    busy = [r["others_cpu_share"] for r in runs if (r["others_cpu_share"] or 0) > 0.1]
    if busy:
        notes.append(f"The machine was not idle: other processes used up to "
                     f"{max(busy):.0%} of its CPU time during a run ({len(busy)} of "
                     f"{len(runs)} runs above 10%; per-run values below). Those times "
                     f"are less reliable; compare fit CPU s too"
                     + ("" if args.wait_idle else
                        ", or rerun with `--wait-idle 300`") + ".")
    if any(r.get("openmp") is False for r in runs):
        notes.append("hgbt was built **without OpenMP**: it ran single-threaded.")
    if any("error" not in r and r["peak_rss_mb"] <= r["parent_peak_rss_mb"] + 1
           for r in runs):
        notes.append("Some peak RSS values may be the parent process's peak "
                     "(ru_maxrss is inherited); see VmHWM in the per-run table.")
    if notes:
        lines += [f"- {n}" for n in notes] + [""]

    lines += ["<details><summary>Per-run measurements and estimator parameters"
              "</summary>", "",
              _row(["repeat", "order", "library", "other processes' CPU", "load s", "fit s",
                    "fit CPU s", "predict s", *metric_names, "peak RSS MB", "VmHWM MB",
                    "RSS before fit MB", "RSS after predict MB"]),
              _row(["---:", "---:", "---"] + ["---:"] * (9 + len(metrics)))]
    for r in runs:
        share = r["others_cpu_share"]
        cells = [r["repeat"], r["order"], _label(r["lib"]),
                 "?" if share is None else f"{share:.0%}"]
        if "error" in r:
            cells += ["failed"] + [""] * (7 + len(metrics))
        elif r["lib"] == DATA_ONLY:
            cells += [f"{r['load_s']:.2f}", "", "", ""] + [""] * len(metrics) + [
                f"{r['peak_rss_mb']:.0f}", f"{r['vmhwm_mb'] or float('nan'):.0f}", "", ""]
        else:
            cells += [f"{r['load_s']:.2f}", f"{r['fit_s']:.3f}", f"{r['fit_cpu_s']:.3f}",
                      f"{r['predict_s']:.3f}", *[f"{r['scores'][k]:.4f}" for k in metrics],
                      f"{r['peak_rss_mb']:.0f}", f"{r['vmhwm_mb'] or float('nan'):.0f}",
                      f"{r['peak_rss_before_fit_mb']:.0f}",
                      f"{r['peak_rss_after_predict_mb']:.0f}"]
        lines.append(_row(cells))
    lines += ["", "```python"] if libs else []
    for lib in libs:
        kwargs = LIBS[lib].kwargs(bt, args.threads)
        cls = LIBS[lib].classes[task["kind"]].replace(":", ".")
        lines.append(f"{cls}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"
                     f".fit(X_csr, y)")
    lines += (["```"] if libs else []) + ["", "</details>", f"<!-- sparse:{name}:end -->"]
    return "\n".join(lines)


SECTION_HEAD = """\
## Sparse input (CSR): hgbt vs LightGBM vs XGBoost

Written by `python benchmarks/sparse_bench.py` (see `benchmarks/README.md`). Each
task's block below is replaced only when that task is run."""


def _existing_blocks(path):
    """Task blocks already inside the sparse section of ``path``, by task name."""
    path = Path(path)
    if not path.exists():
        return {}
    text = path.read_text()
    start, end = f"<!-- bench:{SECTION}:start -->", f"<!-- bench:{SECTION}:end -->"
    if start not in text or end not in text:
        return {}
    section = text[text.index(start):text.index(end)]
    return {m.group(1): m.group(0) for m in re.finditer(
        r"<!-- sparse:(\w+):start -->.*?<!-- sparse:\1:end -->", section, re.S)}


def write_results(path, new_blocks):
    blocks = _existing_blocks(path)
    blocks.update(new_blocks)
    body = "\n\n".join([SECTION_HEAD] + [blocks[t] for t in TASK_ORDER if t in blocks]
                       + [b for t, b in blocks.items() if t not in TASK_ORDER])
    write_section(path, SECTION, body)  # bench.py's: appends the markers if absent


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Benchmark hgbt against LightGBM and XGBoost on sparse CSR input "
                    "and (re)write the sparse section of the results file.")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tasks", type=_csv(list(TASKS)), default=list(TASKS),
                        help=f"comma-separated, default {','.join(TASKS)}")
    parser.add_argument("--only", type=_csv(list(LIBS)), default=list(LIBS),
                        help=f"comma-separated libraries, default {','.join(LIBS)} "
                             f"(the memory task runs hgbt, plus LightGBM with "
                             f"--memory-peers)")
    parser.add_argument("--out", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke run: {QUICK_FACTOR}x fewer rows in every task")
    parser.add_argument("--memory-peers", action="store_true",
                        help="also fit LightGBM in the memory task")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds allowed per worker process (default 1800)")
    parser.add_argument("--wait-idle", type=float, default=0.0, metavar="SECONDS",
                        help="before each worker, wait up to SECONDS until other "
                             "processes use < 10%% of the CPUs (default 0: don't wait)")
    parser.add_argument("--cache-dir", default=str(HERE / ".cache"))
    # Internal: one measurement, or the data generation, in this process.
    parser.add_argument("--worker", choices=[DATA_ONLY, *LIBS], help=argparse.SUPPRESS)
    parser.add_argument("--task", choices=list(TASKS), help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    parser.add_argument("--make-data", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        run_worker(args.worker, args.task, args.data_dir, args.threads)
        return
    if args.make_data:
        make_data(args.task, args.quick, args.cache_dir)
        return
    if args.repeats < 1 or args.threads < 1:
        parser.error("--repeats and --threads must be >= 1")
    command = "python " + shlex.join(
        [sys.argv[0]] + (sys.argv[1:] if argv is None else list(argv)))
    blocks = {}
    for name in args.tasks:
        blocks[name] = run_task(name, args, command)
        write_results(args.out, {name: blocks[name]})
        print(f"[{name}] wrote its block to {args.out}", flush=True)


if __name__ == "__main__":
    main()
