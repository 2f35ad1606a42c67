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

- ``targeted``: crafted files with a valid checksum, each as JSON and as a
  pickle (``TARGETED``): trees deeper than ``MAX_TREE_DEPTH`` (and one at
  it, which must load and explain), tree depths that lie, ``RandomState``
  states NumPy would read outside of, string arrays declared far wider than
  their strings, unknown attribute names (a file's are ignored, never
  decoded; a pickle keeps a user's own), damaged warm-start attributes, a
  state with fitted attributes but no trees.

A model that loads is then used as a user would: ``predict`` (< 8 rows: the
node walk; >= 8: the packed forest; >= 2,048: threads), ``staged_predict``,
contributions (>= 64 rows: threads) and interactions, ``dump_trees``, a
fit of its clone and a warm start.

Outcomes: ``rejected`` (a ``ValueError`` while loading), ``rejected-other``
(another exception while loading), ``loaded`` (everything above works),
``late-error`` (it loaded, then something above raised), ``crash`` (the
worker died), ``hang`` (no answer within the time limit). The exception's
type is recorded with the outcome.
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

KINDS = ("pickle", "json-bytes", "json-fields", "targeted")
OUTCOMES = ("rejected", "rejected-other", "loaded", "late-error", "crash", "hang")
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


# ------------------------------------------------------------ targeted cases
def chain_tree(depth, n_features, depth_error=0):
    """A tree whose every split sends the row right, deeper, until a leaf at
    ``depth`` (features in turn, thresholds rising to 1); ``depth_error`` is
    added to the last leaf's recorded depth."""
    from hgbt.core._types import NODE_DTYPE
    from hgbt.tree.predictor import TreePredictor

    nodes = np.zeros(2 * depth + 1, dtype=NODE_DTYPE)
    inner = np.arange(depth)
    nodes["is_leaf"] = 1
    nodes["is_leaf"][2 * inner] = 0
    nodes["left"][2 * inner] = 2 * inner + 1
    nodes["right"][2 * inner] = 2 * inner + 2
    nodes["feature_idx"][2 * inner] = inner % n_features
    nodes["num_threshold"][2 * inner] = (inner + 1) / (depth + 2)
    nodes["depth"][2 * inner] = inner
    nodes["depth"][2 * inner + 1] = inner + 1
    nodes["depth"][-1] = depth + depth_error
    nodes["count"][2 * inner] = depth - inner + 1  # a leaf on the left holds one row
    nodes["count"][2 * inner + 1] = 1
    nodes["count"][-1] = 1
    nodes["sum_hessians"] = nodes["count"]
    nodes["value"][nodes["is_leaf"] == 1] = np.linspace(-1, 1, depth + 1)
    return TreePredictor(nodes)


def _random_state_at(pos=None, gauss=None):
    rs = np.random.RandomState(0)
    state = list(rs.get_state(legacy=True))
    if pos is not None:
        state[2] = pos
    if gauss is not None:
        state[3] = gauss
    rs.set_state(tuple(state))  # NumPy takes these (and crashes at the next draw)
    return rs


def _set(name, value):
    def edit(state):
        state[name] = value
    return edit


def _set_tree(tree_of):
    def edit(state):
        state["_predictors"][0][0] = tree_of(state["n_features_in_"])
    return edit


def _set_mapper(name, value):
    def edit(state):
        setattr(state["_bin_mapper"], name, value)
    return edit


def _drop_trees(state):
    del state["_predictors"]


def _wide_strings(name):
    def edit(document):  # a 2 GB array from a few bytes of file
        document["fitted"]["attributes"][name] = {
            "type": "ndarray", "dtype": "<U50000000", "shape": [10], "data": [""] * 10}
    return edit


def _add_attribute(name):
    def edit(document):
        document["fitted"]["attributes"][name] = {"type": "int", "value": 3}
    return edit


def _document_only(edit):
    edit.document = True
    return edit


def _pickle_only(edit):  # a JSON file always holds trees and hgbt's attributes only
    edit.pickle_only = True
    return edit


#: ``(name, edit, loads)``: an edit of the flat state, written as a JSON file and
#: as a pickle with valid checksums, or (``document``) of the JSON document only;
#: ``loads`` says whether it must load (else a ValueError must refuse it)
TARGETED_EDITS = [
    ("depth at the bound", _set_tree(lambda n: chain_tree(1024, n)), True),
    ("depth past the bound", _set_tree(lambda n: chain_tree(1025, n)), False),
    ("depth 50,000", _set_tree(lambda n: chain_tree(50_000, n)), False),
    ("recorded depth too large", _set_tree(lambda n: chain_tree(40, n, 1)), False),
    ("recorded depth too small", _set_tree(lambda n: chain_tree(40, n, -1)), False),
    ("random_state position 10**6", _set("random_state", _random_state_at(10**6)), False),
    ("random_state position 625", _set("random_state", _random_state_at(625)), False),
    ("random_state position -1", _set("random_state", _random_state_at(-1)), False),
    ("random_state gauss flag 7", _set("random_state", _random_state_at(gauss=7)), False),
    ("random_state valid", _set("random_state", _random_state_at(100)), True),
    ("random_state seed 2**40", _set("random_state", 2**40), False),
    ("bin mapper random_state position", _set_mapper("random_state",
                                                     _random_state_at(10**6)), False),
    ("string dtype 50,000,000 wide", _document_only(_wide_strings("train_score_")), False),
    ("unknown attribute of wide strings", _document_only(_wide_strings("extra_")), True),
    ("unknown attribute in a file", _document_only(_add_attribute("extra_")), True),
    ("an attribute of the user's in a pickle", _pickle_only(_set("extra_", np.zeros(3))),
     True),
    ("unknown bin mapper attribute", _set_mapper("extra", 1), False),
    ("fitted attributes without trees", _pickle_only(_drop_trees), False),
    ("_seed a string", _set("_seed", "x"), False),
    ("_seed negative", _set("_seed", -1), False),
    ("_seed 2**70", _set("_seed", 2**70), False),
    ("evals_result_ not a dict of dicts", _set("evals_result_", {"train": 3}), False),
    ("evals_result_ scores not numbers", _set("evals_result_", {"train": {"loss": ["a"]}}),
     False),
    ("tree_size_scores_ not a list", _set("tree_size_scores_", 5), False),
    ("tree_size_scores_ entry keys", _set("tree_size_scores_", [{"n_iter": 1}]), False),
    ("max_leaf_nodes_ 1", _set("max_leaf_nodes_", 1), False),
    ("max_leaf_nodes_ a string", _set("max_leaf_nodes_", "x"), False),
    ("l2_regularization_ negative", _set("l2_regularization_", -1.0), False),
    ("l2_regularization_ NaN", _set("l2_regularization_", float("nan")), False),
    ("_tree_size_comparing a string", _set("_tree_size_comparing", "yes"), False),
    ("best_iteration_ past n_iter_", _set("best_iteration_", 10**9), False),
    ("train_score_ a list", _set("train_score_", [1, 2]), False),
    ("_monotonic_cst_ of 5", _set("_monotonic_cst_", np.array([5])), False),
    ("_interaction_groups_ of strings", _set("_interaction_groups_", [{"a"}]), False),
    ("bin mapper categories_ not a list", _set_mapper("categories_", 3), False),
    ("bin mapper is_categorical of ints", _set_mapper("is_categorical", np.zeros(2)), False),
    ("bin mapper subsample 0", _set_mapper("subsample", 0), False),
]
#: the targeted cases: ``(name, form, edit, loads)``, form 'json' or 'pickle'
TARGETED = [(name, form, edit, loads) for name, edit, loads in TARGETED_EDITS
            for form in (("json",) if getattr(edit, "document", False)
                         else ("pickle",) if getattr(edit, "pickle_only", False)
                         else ("json", "pickle"))]


def targeted_input(saved_state, case):
    """The bytes of targeted case ``case`` (an index of ``TARGETED``), from the
    flat state of a fitted model (with its ``__class__``)."""
    import copy
    import copyreg
    import hashlib

    from hgbt.persistence import content_checksum, model_to_dict
    from hgbt.persistence._pickle import hgbt_version

    name, form, edit, loads = TARGETED[case]
    state = copy.deepcopy(saved_state)
    cls = state.pop("__class__")
    if not getattr(edit, "document", False):
        edit(state)
    if form == "pickle":  # what pickling an estimator writes (_pickle.pickle_state)
        payload = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
        wrapper = {"_hgbt_version": hgbt_version(), "_hgbt_payload": payload,
                   "_hgbt_sha256": hashlib.sha256(payload).hexdigest()}

        class _Forged:
            def __reduce__(self):
                return copyreg._reconstructor, (cls, object, None), wrapper

        return pickle.dumps(_Forged())
    holder = cls.__new__(cls)
    vars(holder).update(state)  # flat: model_to_dict writes it as it is
    try:
        document = model_to_dict(holder)
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"targeted case {name!r}: the writer refuses it") from exc
    if getattr(edit, "document", False):
        edit(document)
    document["checksum"] = content_checksum(document)
    return json.dumps(document).encode()


def case_input(kind, saved, seed):
    """The damaged bytes of case ``seed`` of ``kind`` (deterministic; targeted:
    case ``seed % len(TARGETED)``)."""
    rng = np.random.default_rng([KINDS.index(kind), seed])
    if kind == "pickle":
        return _damage_bytes(saved["pickle"], rng)
    if kind == "json-bytes":
        return _damage_bytes(saved["json"], rng)
    if kind == "targeted":
        return targeted_input(saved["state"], seed % len(TARGETED))
    return _damage_fields(json.loads(saved["json"]), rng)


def _load(data):
    from hgbt.persistence import model_from_dict

    if data.startswith(b"\x80"):  # a pickle (protocol 2 and up)
        return pickle.loads(data)
    return model_from_dict(json.loads(data.decode("utf-8")))


def _exercise(model, X):
    """Use a loaded model as a user would (see the module docstring)."""
    import copy

    from sklearn.base import clone

    for rows in (3, 100, X.shape[0]):
        model.predict(X[:rows])
    for _ in model.staged_predict(X[:5]):
        pass
    model.predict_contributions(X[:70])
    model.predict_interactions(X[:3])
    model.dump_trees()
    X_fit = np.nan_to_num(X[:200])
    classes = getattr(model, "classes_", None)
    y = model.predict(X_fit) if classes is None else classes[np.arange(200) % classes.size]
    clone(model).set_params(max_iter=2).fit(X_fit, y)
    warm = copy.deepcopy(model).set_params(warm_start=True, max_iter=model.n_iter_ + 1)
    warm.fit(X_fit, y)


def _run_case(kind, data, X):
    """``(outcome, exception type or '-')`` of one case."""
    try:
        model = _load(data)
    except ValueError:
        return "rejected", "ValueError"
    except Exception as exc:  # noqa: BLE001 - recorded: the loaders promise ValueError
        return "rejected-other", type(exc).__name__
    try:
        _exercise(model, X)
    except Exception as exc:  # noqa: BLE001
        return "late-error", type(exc).__name__
    return "loaded", "-"


def worker(model_index, kind, start, stop):
    """Run cases ``start..stop-1``, one line ``<seed> <outcome> <type>`` each."""
    import warnings

    from hgbt.persistence._flat import flatten
    warnings.simplefilter("ignore")  # version warnings of damaged pickles
    name, model, X = make_models()[model_index]
    saved = {"pickle": pickle.dumps(model), "json": json.dumps(
        __import__("hgbt").persistence.model_to_dict(model)).encode(),
        "state": dict(flatten(vars(model)), __class__=type(model))}
    for seed in range(start, stop):
        print(seed, *_run_case(kind, case_input(kind, saved, seed), X), flush=True)


def sweep(kind, n_cases, model_index=0, start=0, timeout=30.0, on_problem=None):
    """Run ``n_cases`` cases of ``kind`` in worker processes; returns the outcome
    counts, the exception types (``{(outcome, type): count}``), the cases
    that crashed or hung and every case's ``(outcome, type)`` by seed."""
    counts, types, problems = Counter(), Counter(), []
    results = {}  # seed -> (outcome, exception type)
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
            done, result, error = line.split()
            counts[result] += 1
            types[result, error] += 1
            results[int(done)] = result, error
            seed = int(done) + 1
            deadline = time.monotonic() + timeout
        proc.wait()
        proc.stdout.close()
        if outcome is not None and seed < stop:
            counts[outcome] += 1
            results[seed] = outcome, "-"
            problems.append((kind, model_index, seed, outcome, proc.returncode))
            if on_problem is not None:
                on_problem(problems[-1])
            seed += 1
    return counts, types, problems, results
