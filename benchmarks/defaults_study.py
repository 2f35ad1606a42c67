"""Measure hgbt settings on the real-data suite, in process (issue 21).

    python benchmarks/defaults_study.py --cache-dir benchmarks/.cache \\
        --config base='{}' --config lr05='{"learning_rate": 0.05, "max_iter": 200}' \\
        --datasets nass_cds,insteval --json /tmp/study.json

Reads the train/test splits that ``realdata.py`` caches (run it once first, for
example ``python benchmarks/realdata.py --mode defaults --repeats 1``: it
prepares the data and saves each peer's per-row test losses next to them).
For every dataset and every ``--config`` (a name and a JSON dict of keyword
arguments that override hgbt's defaults as ``realdata.py --mode defaults``
sets them: threads, seed, the objective, native categoricals; the extra key
``"_best_round": true`` predicts with the rounds up to the best validation
score instead of every round fitted; ``"_target_encode": {"min_levels": 30,
"keep": false}`` replaces categorical columns of more levels by scikit-learn's
cross-fitted TargetEncoder columns, an experiment on categorical handling), it
fits hgbt on
the training split, predicts the test split and reports:

- the mean per-row test loss (squared error, Poisson deviance or log-loss:
  ``realdata.row_losses``) and the rounds fitted;
- the fit time in this process (``--repeats`` fits, the median; indicative
  only on a shared machine);
- the paired delta to the best peer's losses saved by ``realdata.py`` in
  ``--peer-mode`` (default ``defaults``), with ``realdata._paired``'s rule:
  within noise when |mean difference| <= 2 standard errors;
- the paired delta to the first config (the reference, e.g. today's
  defaults), with the same rule.

``--lightgbm-time`` also fits LightGBM with its defaults in this process, so
that hgbt's fit time can be compared with it under the same conditions.
``--markdown`` prints the tables. ``--losses-dir DIR`` keeps every config's
per-row test losses; ``--report --from-json RUN.json ... --losses-dir DIR``
rebuilds the comparisons later without fitting (e.g. once more peers have
run), and ``--baseline realdata.json ...`` prints the per-library table of
``realdata.py`` runs (several files are pooled, e.g. CatBoost run apart).
Fit times are only comparable within one run. Only public packages are used
(numpy, pandas, scikit-learn, hgbt, optionally lightgbm). The study it was
written for: ``benchmarks/accuracy_study.md``.
"""
import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import realdata  # noqa: E402
from realdata_datasets import DATASETS  # noqa: E402


def load(name, cache_dir):
    import pandas as pd
    data_dir = realdata._data_dir(name, False, cache_dir)
    meta = json.loads((data_dir / "meta.json").read_text())
    X_train = pd.read_pickle(data_dir / "X_train.pkl")
    X_test = pd.read_pickle(data_dir / "X_test.pkl")
    y_train = np.load(data_dir / "y_train.npy")
    y_test = np.load(data_dir / "y_test.npy")
    return data_dir, meta, X_train, X_test, y_train, y_test


def _predict(est, X_test, task, n_classes, n_rounds=None):
    """Test predictions of all rounds, or of the first ``n_rounds`` (staged)."""
    classify = task in realdata.CLASSIFICATION
    if n_rounds is not None:
        staged = est.staged_predict_proba if classify else est.staged_predict
        for i, pred in enumerate(staged(X_test), start=1):
            if i == n_rounds:
                break
    if classify:
        return realdata.by_class(est, est.predict_proba(X_test) if n_rounds is None
                                 else pred, n_classes)
    return np.asarray(est.predict(X_test) if n_rounds is None else pred,
                      dtype=np.float64)


def fit_hgbt(task, X_train, y_train, X_test, y_test, n_classes, params, n_threads,
             repeats):
    from hgbt import HistGBDTClassifier, HistGBDTRegressor
    cls = HistGBDTClassifier if task in realdata.CLASSIFICATION else HistGBDTRegressor
    kw = realdata.estimator_kwargs("hgbt", "defaults", task, n_threads, ())
    params = dict(params)
    # "_best_round": predict with the rounds up to the best validation score
    # (what LightGBM's early stopping keeps), not with every round fitted.
    best_round = params.pop("_best_round", False)
    encode = params.pop("_target_encode", None)
    if encode is not None:
        X_train, X_test = target_encode(task, X_train, y_train, X_test, **encode)
    kw.update(params)
    est, seconds = timed_fits(cls, kw, X_train, y_train, repeats)
    n_rounds = None
    if best_round and len(getattr(est, "validation_score_", ())):
        n_rounds = max(1, int(np.argmax(est.validation_score_)))
    losses = realdata.row_losses(task, y_test, _predict(est, X_test, task, n_classes,
                                                        n_rounds))
    return losses, seconds, int(n_rounds or est.n_iter_)


def timed_fits(cls, kw, X_train, y_train, repeats):
    """The last of ``repeats`` fits of ``cls(**kw)`` and their median time."""
    times = []
    for _ in range(repeats):
        est = cls(**kw)
        t0 = time.perf_counter()
        est.fit(X_train, y_train)
        times.append(time.perf_counter() - t0)
    return est, statistics.median(times)


def target_encode(task, X_train, y_train, X_test, min_levels=30, keep=False):
    """Categorical columns with more than ``min_levels`` levels -> scikit-learn's
    TargetEncoder (cross-fitted on the training rows: 5 folds), numeric
    columns added (``keep``: next to the categorical column, else instead)."""
    from sklearn.preprocessing import TargetEncoder
    import pandas as pd
    cols = [c for c in X_train.columns if isinstance(X_train[c].dtype, pd.CategoricalDtype)
            and len(X_train[c].cat.categories) > min_levels]
    if not cols:
        return X_train, X_test
    target_type = {"binary": "binary", "multiclass": "multiclass"}.get(task, "continuous")
    enc = TargetEncoder(target_type=target_type, random_state=0)
    tr = enc.fit_transform(X_train[cols], y_train)
    te = enc.transform(X_test[cols])
    names = [f"te_{i}" for i in range(tr.shape[1])]
    add_tr = pd.DataFrame(tr, columns=names, index=X_train.index)
    add_te = pd.DataFrame(te, columns=names, index=X_test.index)
    base_tr, base_te = (X_train, X_test) if keep else (X_train.drop(columns=cols),
                                                       X_test.drop(columns=cols))
    return pd.concat([base_tr, add_tr], axis=1), pd.concat([base_te, add_te], axis=1)


def fit_lightgbm(task, X_train, y_train, n_threads, repeats):
    cls = realdata._import(realdata.estimator_class("lightgbm", task))
    kw = realdata.estimator_kwargs("lightgbm", "defaults", task, n_threads, ())
    return timed_fits(cls, kw, X_train, y_train, repeats)[1]


def peer_losses(data_dir, mode):
    out = {}
    for lib in realdata.PEERS:
        path = data_dir / "losses" / f"{mode}-{lib}-r1.npy"
        if path.exists():
            out[lib] = np.load(path)
    return out


def run(args):
    configs = dict(args.config) or {"base": {}}
    ref = next(iter(configs))
    results = {}
    for name in args.datasets:
        data_dir, meta, X_train, X_test, y_train, y_test = load(name, args.cache_dir)
        task = meta["task"]
        n_classes = len(meta.get("classes", []))
        peers = peer_losses(data_dir, args.peer_mode)
        best = min(peers, key=lambda lib: peers[lib].mean()) if peers else None
        entry = dict(task=task, n_train=meta["n_train"], best_peer=best,
                     best_peer_loss=None if best is None else float(peers[best].mean()),
                     peer_loss={lib: float(v.mean()) for lib, v in peers.items()},
                     configs={})
        if args.lightgbm_time:
            entry["lightgbm_fit_s"] = fit_lightgbm(task, X_train, y_train,
                                                   args.n_threads, args.repeats)
        row_losses = {}
        for cname, params in configs.items():
            try:
                losses, fit_s, n_iter = fit_hgbt(task, X_train, y_train, X_test, y_test,
                                                 n_classes, params, args.n_threads,
                                                 args.repeats)
            except Exception as exc:  # a config that fails is a result too
                entry["configs"][cname] = dict(error=f"{type(exc).__name__}: {exc}")
                print(f"[{name}] {cname}: FAILED {exc}", flush=True)
                continue
            row_losses[cname] = losses
            if args.losses_dir:
                out = Path(args.losses_dir) / name
                out.mkdir(parents=True, exist_ok=True)
                np.save(out / f"{cname}.npy", losses)
            r = dict(loss=float(losses.mean()), fit_s=fit_s, n_iter=n_iter)
            if best is not None:
                r["vs_best"] = realdata._paired(losses, peers[best])
            if cname != ref and ref in row_losses:
                r["vs_ref"] = realdata._paired(losses, row_losses[ref])
            entry["configs"][cname] = r
            q = r.get("vs_best")
            print(f"[{name}] {cname:>24}: loss {r['loss']:.5f}  rounds {n_iter:4d}  "
                  f"fit {fit_s:7.3f} s"
                  + (f"  vs {best} {q['delta_pct']:+.2f}% ± {q['two_se_pct']:.2f}% "
                     f"({q['verdict']})" if q else "")
                  + (f"  vs {ref} {r['vs_ref']['delta_pct']:+.2f}% ± "
                     f"{r['vs_ref']['two_se_pct']:.2f}% ({r['vs_ref']['verdict']})"
                     if "vs_ref" in r else ""), flush=True)
        results[name] = entry
        if args.json:
            Path(args.json).write_text(json.dumps(dict(
                configs=configs, peer_mode=args.peer_mode, datasets=results), indent=1))
    return configs, results


def report(args):
    """Recompute the comparisons from saved losses (peers' losses may be newer)."""
    old = dict(configs={}, datasets={})
    for path in args.from_json:  # later files win
        part = json.loads(Path(path).read_text())
        old["configs"].update(part["configs"])
        for name, e in part["datasets"].items():
            d = old["datasets"].setdefault(name, dict(e, configs={}))
            d["configs"].update(e["configs"])
            if "lightgbm_fit_s" in e:
                d["lightgbm_fit_s"] = e["lightgbm_fit_s"]
    configs = old["configs"]
    if args.config:  # restrict to / reorder by the named configs
        configs = {c: configs.get(c, p) for c, p in args.config}
    ref = next(iter(configs))
    results = {}
    for name in args.datasets:
        if name not in old["datasets"]:
            continue
        e = dict(old["datasets"][name])
        data_dir = realdata._data_dir(name, False, args.cache_dir)
        peers = peer_losses(data_dir, args.peer_mode)
        best = min(peers, key=lambda lib: peers[lib].mean()) if peers else None
        e.update(best_peer=best, best_peer_loss=None if best is None
                 else float(peers[best].mean()), n_peers=len(peers),
                 peer_loss={lib: float(v.mean()) for lib, v in peers.items()})
        saved = {c: Path(args.losses_dir) / name / f"{c}.npy" for c in configs}
        losses = {c: np.load(f) for c, f in saved.items() if f.exists()}
        new = {}
        for c in configs:
            r = dict(e["configs"].get(c, {}))
            if c not in losses:
                continue
            r["loss"] = float(losses[c].mean())
            r.pop("vs_ref", None)
            if best is not None:
                r["vs_best"] = realdata._paired(losses[c], peers[best])
            if c != ref and ref in losses:
                r["vs_ref"] = realdata._paired(losses[c], losses[ref])
            new[c] = r
        e["configs"] = new
        results[name] = e
    return configs, results


def markdown(configs, results):
    names = list(configs)
    lines = ["| dataset | best peer (loss) | " + " | ".join(names) + " |",
             "|---|---|" + "---|" * len(names)]
    counts = {c: 0 for c in names}
    n_rows = {c: 0 for c in names}
    worse_than_ref = {c: [] for c in names}
    timed = []  # datasets with a fit time for every config and for LightGBM
    for ds, e in results.items():
        cells = []
        for c in names:
            r = e["configs"].get(c, {})
            if not r or "error" in r:
                cells.append("failed" if "error" in r else "not run")
                continue
            q = r.get("vs_best")
            n_rows[c] += 1
            ok = q is not None and q["verdict"] != "worse"
            counts[c] += ok
            mark = "" if q is None else ("✓" if ok else "✗")
            cell = f"{r['loss']:.4f} {mark}"
            if q is not None:
                cell += f" ({q['delta_pct']:+.1f}%)"
            if "vs_ref" in r and r["vs_ref"]["verdict"] == "worse":
                worse_than_ref[c].append(ds)
                cell += " ▼"
            elif "vs_ref" in r and r["vs_ref"]["verdict"] == "better":
                cell += " ▲"
            cells.append(cell)
        if "lightgbm_fit_s" in e and all("fit_s" in e["configs"].get(c, {}) for c in names):
            timed.append(ds)
        best = e["best_peer"]
        head = "n/a" if best is None else f"{best} ({e['best_peer_loss']:.4f})"
        if best is not None and e.get("n_peers", 4) < len(realdata.PEERS):
            head += f", {e['n_peers']} of {len(realdata.PEERS)} peers run"
        lines.append(f"| {ds} | {head} | " + " | ".join(cells) + " |")
    lines.append("| within noise of best peer (or better) | | "
                 + " | ".join(f"{counts[c]} / {n_rows[c]}" for c in names) + " |")
    lines.append("| worse than the first column beyond noise | | "
                 + " | ".join(", ".join(worse_than_ref[c]) or "none" for c in names) + " |")
    if timed:
        gm = {c: math.exp(statistics.fmean(math.log(results[d]["configs"][c]["fit_s"])
                                           for d in timed)) for c in names}
        g = math.exp(statistics.fmean(math.log(results[d]["lightgbm_fit_s"]) for d in timed))
        lines.append(f"| fit s, geometric mean over {len(timed)} datasets | LightGBM "
                     f"defaults {g:.3f} | " + " | ".join(f"{gm[c]:.3f} ({gm[c] / g:.2f}×)"
                                                      for c in names) + " |")
    lines += ["", "✓ / ✗: within noise of the best peer (or better) / worse; (+x%): "
              "delta to the best peer; ▲ / ▼: better / worse than the first column "
              "beyond noise; (r×): fit time / LightGBM's, same process."]
    return "\n".join(lines)


def merge_runs(paths):
    """The datasets of several ``realdata.py --json`` files, their runs pooled
    (e.g. CatBoost run separately), each summarized again."""
    datasets, libs = {}, set()
    for path in paths:
        d = json.loads(Path(path).read_text())
        libs.update(d["libs"])
        for name, e in d["datasets"].items():
            if "error" in e["data"]:
                continue
            entry = datasets.setdefault(name, dict(data=e["data"], runs=[]))
            entry["runs"] += e["runs"]
    for entry in datasets.values():
        entry["summary"] = {m: realdata.summarize(entry, m)
                            for m in dict.fromkeys(r["mode"] for r in entry["runs"])}
    return dict(datasets=datasets, libs=[lib for lib in realdata.LIBS if lib in libs])


def baseline_table(paths, mode="defaults"):
    """Compact per-dataset table of ``realdata.py --json`` files: each
    library's mean test loss, the best peer, hgbt's paired delta to it."""
    d = merge_runs(paths)
    libs = d["libs"]
    lines = ["| dataset | task | " + " | ".join(realdata.LABELS[l] for l in libs)
             + " | best peer | hgbt − best (± 2 SE) | quantized − best (± 2 SE) |",
             "|---|---|" + "---:|" * len(libs) + "---|---|---|"]
    n = ok = ok_q = 0
    for name, e in d["datasets"].items():
        s = e.get("summary", {}).get(mode)
        if not s:
            continue
        task = e["data"]["task"]
        metric = realdata.METRICS[task][0][0]
        cells = []
        for lib in libs:
            m = s["medians"].get(lib)
            cells.append(f"{m[metric]:.4g}" if m is not None else
                         "failed" if lib in s["errors"] else "not run")
        q = s.get("hgbt", {}).get("quality")
        qq = s.get("hgbt_quantized", {}).get("quality")
        n += q is not None
        ok += q is not None and q["verdict"] != "worse"
        ok_q += qq is not None and qq["verdict"] != "worse"
        lines.append(f"| {name} | {task} | " + " | ".join(cells)
                     + f" | {realdata.LABELS.get(s.get('best_peer'), 'n/a')} | "
                     + (realdata._fmt_q(q) if q else "n/a") + " | "
                     + (realdata._fmt_q(qq) if qq else "n/a") + " |")
    lines.append(f"\nhgbt within noise of the best peer (or better) on {ok} of {n} "
                 f"datasets where hgbt and a peer ran; quantized on {ok_q}.")
    return "\n".join(lines)


def _config(text):
    name, _, spec = text.partition("=")
    return name, json.loads(spec or "{}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cache-dir", default=str(HERE / ".cache"))
    p.add_argument("--datasets", type=lambda s: s.split(","), default=list(DATASETS))
    p.add_argument("--config", type=_config, action="append", default=[],
                   help="NAME=JSON of hgbt keyword arguments; the first is the reference")
    p.add_argument("--configs-file", help="JSON file: {name: {params}} (appended)")
    p.add_argument("--peer-mode", default="defaults", choices=realdata.MODES)
    p.add_argument("--n-threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=1, help="fits per config (time median)")
    p.add_argument("--lightgbm-time", action="store_true",
                   help="also time LightGBM's defaults in this process")
    p.add_argument("--json")
    p.add_argument("--losses-dir", help="save each config's per-row test losses here "
                   "(DIR/dataset/config.npy), for --report")
    p.add_argument("--report", action="store_true",
                   help="fit nothing: rebuild the comparisons from --losses-dir and the "
                        "peers' saved losses (fit times and rounds from --from-json)")
    p.add_argument("--from-json", action="append", default=[],
                   help="with --report: JSON files of earlier runs (merged, later win)")
    p.add_argument("--markdown", action="store_true")
    p.add_argument("--baseline", action="append", default=[],
                   help="print the compact table of realdata.py --json files (runs "
                        "pooled; mode --peer-mode) and exit")
    args = p.parse_args(argv)
    if args.baseline:
        print(baseline_table(args.baseline, args.peer_mode))
        return
    if args.configs_file:
        args.config += list(json.loads(Path(args.configs_file).read_text()).items())
    if args.report:
        configs, results = report(args)
    else:
        configs, results = run(args)
    if args.markdown:
        print(markdown(configs, results))


if __name__ == "__main__":
    main()
