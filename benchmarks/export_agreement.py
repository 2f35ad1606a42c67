#!/usr/bin/env python
"""How far the default ONNX export (float32 input) is from ``predict`` on
float64 rows of real tables, and the held-out score, per dataset.

``python benchmarks/export_agreement.py [--datasets diamonds,movies,...]``
fits hgbt with its defaults (``random_state=0``) on 80% of each table
(``realdata_datasets.py``; nothing is downloaded), exports it with
``hgbt.export.to_onnx`` (its default: float32 input), runs it with
onnxruntime on the float64 test rows (as ``numeric_input`` gives them) and
prints, per dataset: the share of test rows whose ONNX output differs from
``predict`` (regression, on log1p of the target) or ``predict_proba``
(classification) by more than 1e-3, the largest difference, and the
held-out R² or accuracy. Run it with two installs of hgbt to compare them.
"""
import argparse
import time

import numpy as np
import onnxruntime as ort
from sklearn.model_selection import train_test_split

import hgbt
from hgbt.export import numeric_input, to_onnx
from realdata_datasets import DATASETS

# numeric-heavy tables (the export refuses pooled categoricals: more than
# 255 levels) with many distinct values per feature
DEFAULT = "diamonds,diamonds_cut,movies,hotel_rates,loans,flights"


def load(name):
    if name == "diamonds_cut":  # diamonds as a 5-class problem: the cut
        X, price = DATASETS["diamonds"].loader()
        y = X["cut"].astype(str).to_numpy()
        X = X.drop(columns="cut").assign(price=price)
        return X, y, "multiclass"
    ds = DATASETS[name]
    X, y = ds.loader()
    if ds.task in ("regression", "count"):
        return X, np.log1p(np.asarray(y, dtype=np.float64)), "regression"
    return X, y, ds.task


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default=DEFAULT)
    args = parser.parse_args()
    print(f"hgbt {hgbt.__version__} from {hgbt.__file__}")
    print("| dataset | test rows | rows differing > 1e-3 | max difference | held-out score |")
    print("|---|---:|---:|---:|---:|")
    for name in args.datasets.split(","):
        X, y, task = load(name)
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2,
                                                            random_state=0)
        est = hgbt.HistGBDTRegressor if task == "regression" else hgbt.HistGBDTClassifier
        start = time.perf_counter()
        model = est(random_state=0).fit(X_train, y_train)
        fit_s = time.perf_counter() - start
        rows = numeric_input(model, X_test)  # float64, categories as codes
        session = ort.InferenceSession(to_onnx(model).SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        outputs = session.run(None, {"X": rows.astype(np.float32)})
        if task == "regression":
            got, expected = outputs[0][:, 0], model.predict(X_test)
        else:
            got, expected = outputs[1], model.predict_proba(X_test)
        diff = np.abs(got - expected).reshape(len(rows), -1).max(axis=1)
        print(f"| {name} | {len(rows):,} | {100 * np.mean(diff > 1e-3):.2f}% | "
              f"{diff.max():.3g} | {model.score(X_test, y_test):.4f} "
              f"({model.n_iter_} rounds, {fit_s:.1f} s) |", flush=True)


if __name__ == "__main__":
    main()
