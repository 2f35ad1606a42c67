"""Model files and pickles as untrusted input: the issue's reproducers, each run in
a subprocess so that a crash or a hang fails the test instead of killing pytest."""
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from hgbt import HistGBDTRegressor
from fitted import bin_mapper, pop_tree, rounds, set_baseline_prediction, tree_at

# The child loads the model and, if it loads, predicts on < 8 rows (node walk),
# >= 8 rows (packed forest), >= 2,048 rows (threads) and staged.
_CHILD = """
import pickle, sys, numpy as np, hgbt
X = np.random.default_rng(0).random((2100, {n_features}))
X[:, 0] = np.floor(X[:, 0] * 6)
path = sys.argv[1]
try:
    model = hgbt.load_model(path) if path.endswith(".json") else pickle.loads(
        open(path, "rb").read())
except ValueError as exc:
    print("REJECTED", exc)
    sys.exit(0)
for rows in (3, 100, 2100):
    model.predict(X[:rows])
for _ in model.staged_predict(X[:5]):
    pass
print("LOADED")
"""


def run_child(path, n_features=4, timeout=60):
    """(return code, stdout) of loading ``path`` and predicting in a fresh process."""
    code = textwrap.dedent(_CHILD.format(n_features=n_features))
    try:
        # in the file's own (test-private) directory, outside the source tree:
        # the installed package is imported, and no stray module in a shared
        # directory shadows the standard library (``-c`` puts cwd on sys.path)
        done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                              text=True, timeout=timeout, cwd=Path(path).parent)
    except subprocess.TimeoutExpired:
        pytest.fail(f"loading or predicting {path} hung (> {timeout} s)")
    assert done.returncode == 0, f"child crashed ({done.returncode}): {done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.random((400, 4))
    X[:, 0] = np.floor(X[:, 0] * 6)
    y = X[:, 1] + np.isin(X[:, 0], [1, 3]) + rng.normal(0, 0.1, 400)
    return HistGBDTRegressor(max_iter=5, categorical_features=[0], max_cat_to_onehot=1,
                             random_state=0).fit(X, y)


def _corrupt_pickle(model, tmp_path, edit):
    clone = pickle.loads(pickle.dumps(model))
    edit(clone)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(clone))
    return path


def _first(model, want_categorical=False):
    """(tree, node) of a split node, categorical or numeric."""
    for trees in rounds(model):
        for tree in trees:
            nodes = tree.nodes
            split = (nodes["is_leaf"] == 0) & ((nodes["is_categorical"] != 0)
                                                == want_categorical)
            if split.any():
                return tree, int(np.flatnonzero(split)[0])
    raise AssertionError("no such node")


def _set(field, value, categorical=False, node=None):
    def edit(m):
        tree, i = _first(m, categorical)
        tree.nodes[field][i if node is None else node] = value
    return edit


def _nan_root_loop(nodes):
    """The issue's hang: every value goes right at the root, back to the root."""
    nodes["num_threshold"][0] = np.nan
    nodes["is_categorical"][0] = 0
    nodes["right"][0] = 0


@pytest.mark.parametrize("name, edit, message", [
    ("feature 2**31", _set("feature_idx", 2**31), "feature index"),
    ("feature 3..1000", _set("feature_idx", 1000), "feature index"),
    ("feature 4", _set("feature_idx", 4), "feature index"),
    ("NaN root threshold, right[0] = 0",
     lambda m: _nan_root_loop(tree_at(m, 0).nodes), "cycle|NaN threshold"),
    ("NaN numeric threshold", _set("num_threshold", np.nan), "threshold"),
    ("bitset_idx 2**27", _set("bitset_idx", 2**27, categorical=True), "bitset"),
    ("self loop", lambda m: _set("left", _first(m)[1])(m), "cycle|parent"),
    ("is_leaf 7", _set("is_leaf", 7), "is_leaf"),
    ("nodes of another dtype", lambda m: setattr(
        tree_at(m, 0), "nodes", np.zeros(3, dtype=[("value", "<f8"), ("left", "<u4")])),
     "whole number"),
    ("tree missing", lambda m: pop_tree(m, 1), "trees"),
    ("baseline too long", lambda m: set_baseline_prediction(m, np.zeros(3)),
     "baseline"),
    ("n_features_in_ 1000", lambda m: setattr(m, "n_features_in_", 1000),
     "1000 arrays"),
])
def test_corrupt_pickle_is_rejected(model, tmp_path, name, edit, message):
    out = run_child(_corrupt_pickle(model, tmp_path, edit))
    assert out.startswith("REJECTED"), out
    assert any(m in out for m in message.split("|")), out


def test_pickles_with_node_arrays_still_load(model, monkeypatch):
    """Trees pickle their arrays as bytes; pickles holding the arrays (written
    before) load and are checked the same way."""
    from hgbt.tree.predictor import TreePredictor

    X = np.random.default_rng(2).random((50, 4))
    monkeypatch.setattr(TreePredictor, "__getstate__", lambda self: dict(self.__dict__))
    data = pickle.dumps(model)
    tree_at(model, 0).nodes["feature_idx"][0] += 100
    bad = pickle.dumps(model)
    tree_at(model, 0).nodes["feature_idx"][0] -= 100
    monkeypatch.undo()
    assert isinstance(tree_at(pickle.loads(data), 0).nodes, np.ndarray)
    assert pickle.loads(data).predict(X).tobytes() == model.predict(X).tobytes()
    with pytest.raises(ValueError, match="feature index"):
        pickle.loads(bad)


def test_json_with_huge_n_threads_predicts(model, tmp_path):
    path = tmp_path / "model.json"
    clone = pickle.loads(pickle.dumps(model))
    clone.set_params(n_threads=100_000).save_model(path)
    assert run_child(path).startswith("LOADED")


@pytest.mark.parametrize("n_threads", [40_000, 100_000])
def test_fit_with_huge_n_threads(n_threads, tmp_path):
    code = textwrap.dedent(f"""
        import numpy as np
        from hgbt import HistGBDTRegressor
        X = np.random.default_rng(0).random((3000, 3)); y = X[:, 0]
        HistGBDTRegressor(max_iter=2, n_threads={n_threads}).fit(X, y).predict(X)
        print("OK")""")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0 and "OK" in done.stdout, done.stderr[-2000:]


# ------------------------------------------------------------------ n_threads
def test_explicit_n_threads_is_clipped_to_a_few_per_cpu():
    from hgbt.core._openmp import (THREADS_PER_CPU, effective_n_threads, max_threads,
                                   openmp_enabled, usable_cpus)
    if not openmp_enabled():
        assert effective_n_threads(10**6) == 1
        return
    assert max_threads() == THREADS_PER_CPU * usable_cpus()
    assert effective_n_threads(max_threads()) == max_threads()
    assert effective_n_threads(10**9) == max_threads()
    assert effective_n_threads(np.int64(2)) == 2
    for bad in (0, -2, 2.5, True, "4"):  # -1: every usable CPU
        with pytest.raises(ValueError, match="n_threads"):
            effective_n_threads(bad)


def test_loaded_bin_mapper_threads_are_clipped(model, tmp_path):
    from hgbt.core._openmp import max_threads
    clone = pickle.loads(pickle.dumps(model))
    bin_mapper(clone).n_threads = 10**6
    assert bin_mapper(pickle.loads(pickle.dumps(clone))).n_threads == max_threads()


# ------------------------------------------------------------------ checksum
def test_json_checksum_detects_an_edit(model, tmp_path):
    import json

    from hgbt import load_model
    from hgbt.persistence import content_checksum

    path = tmp_path / "m.json"
    model.save_model(path)
    document = json.loads(path.read_text())
    assert document["checksum"] == content_checksum(document)
    assert document["checksum"].startswith("sha256:")
    # a valid model with another baseline: only the checksum tells
    document["fitted"]["baseline"][0] += 1.0
    path.write_text(json.dumps(document, separators=(",", ":")))
    with pytest.raises(ValueError, match="checksum"):
        load_model(path)
    edited = load_model(path, verify_checksum=False)
    X = np.random.default_rng(1).random((200, 4))
    assert not np.array_equal(edited.predict(X), model.predict(X))
    del document["checksum"]
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match="checksum: missing"):
        load_model(path)
