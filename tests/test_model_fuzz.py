"""Corruption fuzz over saved models (JSON and pickle): 1,100 damaged models and
the crafted ones of ``model_corruption.TARGETED``, none may crash or hang, a
JSON file is refused with a ValueError only, and a model that loads works
(predictions, contributions, fits). Cases run in worker processes
(``model_corruption.py``), so a crash fails the test instead of killing
pytest. The 5,000-case sweep outside CI is ``benchmarks/corruption_sweep.py``."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hgbt.core._types import NODE_DTYPE
from hgbt.tree.validation import InvalidTreeError, check_tree
from model_corruption import TARGETED, sweep

# (kind, cases per model): 2 models x (250 + 100 + 200) = 1,100 cases, ~30 s
CASES = {"pickle": 250, "json-bytes": 100, "json-fields": 200}


@pytest.mark.parametrize("model_index", [0, 1], ids=["regressor", "classifier"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_damaged_models_never_crash_or_hang(kind, model_index):
    counts, types, problems, _ = sweep(kind, CASES[kind], model_index, timeout=20.0)
    assert not problems, f"{kind}: crashes or hangs at (kind, model, seed, outcome, rc) " \
                         f"{problems}; replay with model_corruption.case_input"
    assert sum(counts.values()) == CASES[kind]
    assert counts["late-error"] == 0, types  # what loads, works
    if kind != "pickle":  # a pickle's own framing fails in pickle, before hgbt runs
        assert counts["rejected-other"] == 0, types
    assert counts["rejected"] > CASES[kind] // 4, counts
    if kind == "json-fields":  # edits with the checksum recomputed reach the checks
        assert counts["loaded"] > 0, counts
    else:  # the checksum (of the file, or of a pickle's payload) rejects almost all
        assert counts["rejected"] >= CASES[kind] * 0.9, counts


@pytest.mark.parametrize("model_index", [0, 1], ids=["regressor", "classifier"])
def test_crafted_models_are_refused_with_a_value_error_or_work(model_index):
    # depth, random-state and size bombs, unknown names, damaged warm-start
    # state: each as JSON and as a pickle whose checksums are valid
    counts, types, problems, results = sweep("targeted", len(TARGETED), model_index,
                                             timeout=60.0)
    assert not problems, problems
    wrong = [(name, form, results[case]) for case, (name, form, _, loads)
             in enumerate(TARGETED) if results[case] != (("loaded", "-") if loads
                                                          else ("rejected", "ValueError"))]
    assert not wrong, wrong


# --------------------------------------------------- check_tree as a property
def _walk_is_a_tree(nodes, n_bitsets, n_features):
    """Pure-Python reference: from the root, every index is in range, every
    node is visited exactly once (so every walk ends in a leaf) and records
    its distance from the root as its depth, and every leaf's value is finite."""
    seen, stack = set(), [(0, 0)]
    while stack:
        i, depth = stack.pop()
        if i in seen or not 0 <= i < len(nodes):
            return False
        seen.add(i)
        node = nodes[i]
        if node["depth"] != depth:
            return False
        if node["is_leaf"] == 0:
            if node["feature_idx"] >= n_features:
                return False
            if node["is_categorical"] == 1 and node["bitset_idx"] >= n_bitsets:
                return False
            if node["is_categorical"] == 0 and np.isnan(node["num_threshold"]):
                return False
            if node["is_leaf"] > 1 or node["is_categorical"] > 1:
                return False
            stack += [(int(node["left"]), depth + 1), (int(node["right"]), depth + 1)]
        elif node["is_leaf"] != 1 or not np.isfinite(node["value"]):
            return False
    return len(seen) == len(nodes)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_check_tree_accepts_exactly_walkable_trees(data):
    n = data.draw(st.integers(1, 9))
    small = st.integers(0, n + 1)
    nodes = np.zeros(n, dtype=NODE_DTYPE)
    for i in range(n):
        nodes[i]["is_leaf"] = data.draw(st.sampled_from([0, 0, 1, 1, 2]))
        nodes[i]["left"] = data.draw(small)
        nodes[i]["right"] = data.draw(small)
        nodes[i]["feature_idx"] = data.draw(st.sampled_from([0, 1, 2, 3, 2**31]))
        nodes[i]["is_categorical"] = data.draw(st.sampled_from([0, 0, 1, 3]))
        nodes[i]["bitset_idx"] = data.draw(st.integers(0, 2))
        nodes[i]["num_threshold"] = data.draw(st.sampled_from([0.5, np.inf, -np.inf, np.nan]))
        nodes[i]["value"] = data.draw(st.sampled_from([0.25, 0.25, 0.25, np.nan, -np.inf]))
    # depths as a walk from the root finds them (the first time it reaches a
    # node), sometimes one of them off by one
    depth, stack = {}, [(0, 0)]
    while stack:
        i, d = stack.pop()
        if i < n and i not in depth:
            depth[i] = d
            if nodes[i]["is_leaf"] == 0:
                stack += [(int(nodes[i]["left"]), d + 1), (int(nodes[i]["right"]), d + 1)]
    for i, d in depth.items():
        nodes[i]["depth"] = d
    if data.draw(st.booleans()):
        nodes[data.draw(st.integers(0, n - 1))]["depth"] += 1
    n_bitsets = data.draw(st.integers(0, 2))
    bitsets = np.zeros((n_bitsets, 8), dtype=np.uint32)
    try:
        check_tree(nodes, bitsets, n_features=3)
        accepted = True
    except InvalidTreeError:
        accepted = False
    assert accepted == _walk_is_a_tree(nodes, n_bitsets, 3)


def test_check_tree_rejects_what_is_not_a_node_array():
    good = np.zeros(1, dtype=NODE_DTYPE)
    good["is_leaf"] = 1
    bitsets = np.zeros((0, 8), dtype=np.uint32)
    check_tree(good, bitsets, 1)
    for nodes, cat_bitsets in [(good[["value", "left"]], bitsets), (good[:0], bitsets),
                               (np.repeat(good, 3)[::2], bitsets), ([0], bitsets),
                               (good, np.zeros((1, 7), dtype=np.uint32)),
                               (good, np.zeros((1, 8), dtype=np.int64)), (good, None)]:
        with pytest.raises(InvalidTreeError):
            check_tree(nodes, cat_bitsets, 1)
