"""Corruption fuzz of saved models: random damage to pickles and JSON files.

Each case damages a saved model, loads it and, if it loads, predicts with it
(< 8 rows: the node walk; >= 8: the packed forest; >= 2,048: threads;
``staged_predict``). Cases run in worker processes, so a crash or a hang is
recorded against its case instead of ending the run; the worker is then
restarted after that case. Used by ``tests/test_model_fuzz.py`` (CI) and
``benchmarks/corruption_sweep.py`` (the long sweep).

Kinds of case:

- ``pickle``: 1 to 4 random bytes of the pickle replaced by random values;
- ``json-bytes``: the same on the JSON file's text (mostly invalid JSON or a
  checksum mismatch: the checksum's coverage);
- ``json-fields``: a node field, count or array entry of the JSON document set
  to an awkward value and the checksum recomputed (what the content checks
  must catch on their own).

Outcomes: ``rejected`` (``ValueError`` or another exception while loading),
``loaded`` (it predicts), ``predict-error`` (it loaded but prediction
raised), ``crash`` (the worker died), ``hang`` (no answer within the
time limit).
"""
import json
import os
import pickle
import select
import subprocess
import sys
import time
from collections import Counter

import numpy as np

KINDS = ("pickle", "json-bytes", "json-fields")
# Awkward values for node fields and counts.
_AWKWARD = [0, 1, 2, 3, 4, 5, 7, 8, 255, 256, 1000, 2**27, 2**31 - 1, 2**31, 2**32 - 1,
            -1, 2**64, 1.5, "nan", "inf", "-inf", None, True, "x", [], {}]


def make_models():
    """Small fitted models covering numeric, categorical and multiclass trees, with
    their prediction inputs: ``[(name, estimator, X)]``."""
    from hgbt import HistGBDTClassifier, HistGBDTRegressor

    rng = np.random.default_rng(0)
    X = rng.random((600, 5))
    X[:, 0] = np.floor(X[:, 0] * 8)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 1]) + np.isin(X[:, 0], [1, 3, 6]) + rng.normal(0, 0.1, 600)
    regressor = HistGBDTRegressor(max_iter=6, max_leaf_nodes=8, categorical_features=[0],
                                  max_cat_to_onehot=1, random_state=0).fit(X, y)
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    classifier = HistGBDTClassifier(max_iter=3, max_leaf_nodes=6, random_state=0).fit(
        X, labels)
    X_test = rng.random((2100, 5))
    X_test[:, 0] = np.floor(X_test[:, 0] * 9)
    X_test[rng.random(X_test.shape) < 0.05] = np.nan
    return [("regressor", regressor, X_test), ("classifier", classifier, X_test)]


def _damage_bytes(data, rng):
    data = bytearray(data)
    for _ in range(rng.integers(1, 5)):
        data[rng.integers(len(data))] = rng.integers(256)
    return bytes(data)


def _damage_fields(document, rng):
    from hgbt.persistence import content_checksum

    fitted = document["fitted"]
    for _ in range(rng.integers(1, 3)):
        roll = rng.random()
        value = _AWKWARD[rng.integers(len(_AWKWARD))]
        if roll < 0.8:  # a node field of a node
            tree = fitted["trees"][rng.integers(len(fitted["trees"]))]
            tree = tree[rng.integers(len(tree))]
            fields = sorted(tree["nodes"])
            column = tree["nodes"][fields[rng.integers(len(fields))]]
            column[rng.integers(len(column))] = value
        elif roll < 0.9:  # a count
            key = ["n_features_in_", "n_iter_", "n_trees_per_iteration_"][rng.integers(3)]
            fitted[key] = value
        else:  # a bin mapper entry or a parameter
            if rng.random() < 0.5:
                fitted["bin_mapper"][["max_bins", "missing_bin"][rng.integers(2)]] = value
            else:
                document["params"][["n_threads", "max_bins", "max_iter"][rng.integers(3)]] \
                    = value
    document["checksum"] = content_checksum(document)
    return json.dumps(document).encode()


def case_input(kind, saved, seed):
    """The damaged bytes of case ``seed`` of ``kind`` (deterministic)."""
    rng = np.random.default_rng([KINDS.index(kind), seed])
    if kind == "pickle":
        return _damage_bytes(saved["pickle"], rng)
    if kind == "json-bytes":
        return _damage_bytes(saved["json"], rng)
    return _damage_fields(json.loads(saved["json"]), rng)


def _run_case(kind, data, X):
    from hgbt.persistence import model_from_dict

    try:
        if kind == "pickle":
            model = pickle.loads(data)
        else:
            model = model_from_dict(json.loads(data.decode("utf-8")))
    except Exception:  # noqa: BLE001 - any exception is a clean refusal here
        return "rejected"
    try:
        for rows in (3, 100, X.shape[0]):
            model.predict(X[:rows])
        for _ in model.staged_predict(X[:5]):
            pass
    except Exception:  # noqa: BLE001
        return "predict-error"
    return "loaded"


def worker(model_index, kind, start, stop):
    """Run cases ``start..stop-1``, one line ``<seed> <outcome>`` each."""
    import warnings
    warnings.simplefilter("ignore")  # version warnings of damaged pickles
    name, model, X = make_models()[model_index]
    saved = {"pickle": pickle.dumps(model), "json": json.dumps(
        __import__("hgbt").persistence.model_to_dict(model)).encode()}
    for seed in range(start, stop):
        print(seed, _run_case(kind, case_input(kind, saved, seed), X), flush=True)


def sweep(kind, n_cases, model_index=0, start=0, timeout=30.0, on_problem=None):
    """Run ``n_cases`` cases of ``kind`` in worker processes; returns the outcome
    counts and the seeds that crashed or hung."""
    counts, problems = Counter(), []
    seed, stop = start, start + n_cases
    here = os.path.dirname(os.path.abspath(__file__))
    while seed < stop:
        code = (f"import sys; sys.path.insert(0, {here!r}); import model_corruption; "
                f"model_corruption.worker({model_index}, {kind!r}, {seed}, {stop})")
        # cwd: the tests folder, so a worker imports the installed hgbt, not the
        # source tree of a checkout (uncompiled outside an editable install)
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, cwd=here)
        # the first case waits for the worker's start-up too
        deadline = time.monotonic() + timeout + 60
        outcome = None
        while seed < stop:
            ready, _, _ = select.select([proc.stdout], [], [],
                                        max(0.0, deadline - time.monotonic()))
            if not ready:
                outcome = "hang"
                proc.kill()
                break
            line = proc.stdout.readline()
            if not line:
                outcome = "crash"
                break
            done, result = line.split()
            counts[result] += 1
            seed = int(done) + 1
            deadline = time.monotonic() + timeout
        proc.wait()
        proc.stdout.close()
        if outcome is not None and seed < stop:
            counts[outcome] += 1
            problems.append((kind, model_index, seed, outcome, proc.returncode))
            if on_problem is not None:
                on_problem(problems[-1])
            seed += 1
    return counts, problems
