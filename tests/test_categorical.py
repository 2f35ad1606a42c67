"""Native categorical features: split finder, partition, prediction, estimators."""
import itertools
import math
import warnings

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.tree._partition import partition_rows_by_table
from hgbt.tree._predictor import predict_add, predict_binned_add
from split_search import find_node_split
from hgbt.core._types import HISTOGRAM_DTYPE, NODE_DTYPE, SIZE_DTYPE
from hgbt.data.binning import BinMapper, bitset_to_codes, category_codes, codes_to_bitset
from hgbt.tree.predictor import TreePredictor
from fitted import bin_mapper, rounds

NO_MASK = np.empty(0, dtype=np.uint8)


# ---------------------------------------------------------------------------
# split finder

def _score(g, h, l2, l1=0.0):
    g = math.copysign(max(abs(g) - l1, 0.0), g)
    return 0.0 if h + l2 <= 0.0 else g * g / (h + l2)


def categorical_histograms(seed, n_samples=400, n_features=4, n_cats=(3, 12, 40, 7),
                           nan_rate=0.1, missing_bin=255, constant_hessian=False,
                           empty_rate=0.2):
    """Histograms of random categorical features; some codes have no rows."""
    rng = np.random.default_rng(seed)
    n_bins = missing_bin + 1
    nbnm = np.array([n_cats[f % len(n_cats)] for f in range(n_features)], dtype=np.uint32)
    X = np.empty((n_samples, n_features), dtype=np.intp)
    for f in range(n_features):
        present = np.flatnonzero(rng.random(nbnm[f]) >= empty_rate)
        if present.size == 0:
            present = np.array([0])
        X[:, f] = rng.choice(present, n_samples)
        if f % 2 == 1 and nan_rate > 0:
            X[rng.random(n_samples) < nan_rate, f] = missing_bin
    effect = rng.normal(size=(n_features, n_bins))
    g = (rng.normal(size=n_samples) + effect[np.arange(n_features), X].sum(axis=1)
         ).astype(np.float32)
    h = (np.ones(n_samples) if constant_hessian
         else rng.uniform(0.1, 2.0, size=n_samples)).astype(np.float32)
    hist = np.zeros((n_features, n_bins), dtype=HISTOGRAM_DTYPE)
    for f in range(n_features):
        hist["sum_gradients"][f] = np.bincount(X[:, f], weights=g.astype(np.float64),
                                               minlength=n_bins)
        hist["sum_hessians"][f] = np.bincount(X[:, f], weights=h.astype(np.float64),
                                              minlength=n_bins)
        hist["count"][f] = np.bincount(X[:, f], minlength=n_bins)
    G, H = float(g.astype(np.float64).sum()), float(h.astype(np.float64).sum())
    return hist, nbnm, G, H, n_samples, missing_bin


# Sorted-scan regularisation off: every prefix is a candidate.
NO_CAT_REG = dict(cat_l2=0.0, min_data_per_group=0, max_cat_threshold=255)


def reference_categorical(hist, nbnm, G, H, N, missing_bin, l2=0.0, gamma=0.0, mcw=0.0,
                          msl=1, l1=0.0, max_cat_to_onehot=4, cat_smooth=10.0,
                          cat_l2=10.0, min_data_per_group=100, max_cat_threshold=32,
                          is_categorical=None):
    """The documented search, in pure Python, over every (categorical) feature.

    Candidate order per feature: one-vs-rest, each category by increasing
    code; sorted, over the categories with at least cat_smooth rows ordered
    by G / (H + cat_smooth) then code, the first 1, 2, ... then the last 1,
    2, ... (at most max_cat_threshold and half of them; a candidate once
    min_data_per_group rows were added since the last one; stop when fewer
    than that remain right), children scored with l2 + cat_l2. Each with
    missing right then left; then "all categories left, missing right"; a
    candidate replaces the best only with a strictly larger gain; features
    in increasing order.
    """
    best = None
    for f in range(hist.shape[0]):
        if is_categorical is not None and not is_categorical[f]:
            continue
        hf = hist[f]
        miss = hf[missing_bin]
        has_missing = int(miss["count"]) > 0
        cats = [b for b in range(int(nbnm[f])) if hf[b]["count"] > 0]

        def ratio(b):
            d = float(hf[b]["sum_hessians"]) + cat_smooth
            return float(hf[b]["sum_gradients"]) / d if d > 0 else 0.0

        k = len(cats)
        candidates = []  # (left set in summation order, missing left, child l2)
        if k <= max_cat_to_onehot:
            for i in range(k):
                if k > 1:
                    candidates += [([cats[i]], m, l2) for m in (0, 1)[:1 + has_missing]]
        else:
            used = sorted((b for b in cats if hf[b]["count"] >= cat_smooth),
                          key=lambda b: (ratio(b), b))
            max_num = min(max_cat_threshold, (len(used) + 1) // 2, k - 1)
            for order in (used, used[::-1]):
                group = n = 0
                for i in range(max_num):
                    n += int(hf[order[i]]["count"])
                    group += int(hf[order[i]]["count"])
                    if N - n < min_data_per_group:
                        break
                    if group < min_data_per_group:
                        continue
                    group = 0
                    candidates += [(order[:i + 1], m, l2 + cat_l2)
                                   for m in (0, 1)[:1 + has_missing]]
        if has_missing:
            candidates.append((cats, 0, l2))
        for left, missing_left, child_l2 in candidates:
            gl = hl = 0.0
            nl = 0
            for b in left:
                gl += float(hf[b]["sum_gradients"])
                hl += float(hf[b]["sum_hessians"])
                nl += int(hf[b]["count"])
            if missing_left:
                gl += float(miss["sum_gradients"])
                hl += float(miss["sum_hessians"])
                nl += int(miss["count"])
            gr, hr, nr = G - gl, H - hl, N - nl
            if nl < msl or nr < msl or hl < mcw or hr < mcw:
                continue
            gain = 0.5 * (_score(gl, hl, child_l2, l1) + _score(gr, hr, child_l2, l1)
                          - _score(G, H, l2, l1)) - gamma
            if gain > 0 and (best is None or gain > best["gain"]):
                best = dict(gain=gain, feature_idx=f, left=sorted(left),
                            missing_go_to_left=missing_left, has_missing=has_missing,
                            n_samples_left=nl, n_samples_right=nr,
                            sum_gradients_left=gl, sum_hessians_left=hl)
    return best


def kernel(hist, nbnm, G, H, N, missing_bin, l2=0.0, gamma=0.0, mcw=0.0, msl=1, l1=0.0,
           max_cat_to_onehot=4, cat_smooth=10.0, cat_l2=10.0, min_data_per_group=100,
           max_cat_threshold=32, is_categorical=None, n_threads=1, feature_mask=NO_MASK):
    if is_categorical is None:
        is_categorical = np.ones(hist.shape[0], dtype=np.uint8)
    return find_node_split(hist, nbnm, G, H, N, l1, l2, gamma, mcw, msl, missing_bin,
                           feature_mask, n_threads, is_categorical, max_cat_to_onehot,
                           cat_smooth, cat_l2, min_data_per_group, max_cat_threshold)


def assert_same_split(split, ref):
    if ref is None:
        assert split["feature_idx"] == -1
        return
    assert split["feature_idx"] == ref["feature_idx"]
    assert split["is_categorical"] == 1
    assert split["bin_idx"] == 0
    assert bitset_to_codes(split["cat_bitset"]).tolist() == ref["left"]
    np.testing.assert_allclose(split["gain"], ref["gain"], rtol=1e-10)
    np.testing.assert_allclose(split["sum_gradients_left"], ref["sum_gradients_left"],
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(split["sum_hessians_left"], ref["sum_hessians_left"],
                               rtol=1e-10)
    assert split["n_samples_left"] == ref["n_samples_left"]
    assert split["n_samples_right"] == ref["n_samples_right"]
    if ref["has_missing"]:
        assert split["missing_go_to_left"] == ref["missing_go_to_left"]
    else:  # no missing value in the node: the larger child takes them
        assert split["missing_go_to_left"] == (ref["n_samples_left"]
                                               >= ref["n_samples_right"])


CONSTRAINTS = [  # l2, gamma, min_child_weight, min_samples_leaf, l1
    (0.0, 0.0, 0.0, 1, 0.0),
    (1.0, 0.0, 1e-3, 20, 0.0),
    (0.0, 0.5, 5.0, 5, 0.0),
    (2.0, 0.1, 1.0, 10, 3.0),
    (0.0, 0.0, 0.0, 60, 0.0),
]


CAT_REGULARISATION = [  # cat_l2, min_data_per_group, max_cat_threshold
    (0.0, 0, 255),
    (10.0, 100, 32),  # the defaults
    (3.0, 25, 4),
]


@pytest.mark.parametrize("constraints", CONSTRAINTS)
@pytest.mark.parametrize("max_cat_to_onehot", [1, 4, 255])
@pytest.mark.parametrize("cat_reg", CAT_REGULARISATION)
@pytest.mark.parametrize("seed", range(4))
def test_split_matches_reference(constraints, max_cat_to_onehot, cat_reg, seed):
    l2, gamma, mcw, msl, l1 = constraints
    cat_l2, min_data_per_group, max_cat_threshold = cat_reg
    hist, nbnm, G, H, N, mb = categorical_histograms(seed, constant_hessian=seed == 0)
    for cat_smooth in (0.0, 10.0):
        args = dict(l2=l2, gamma=gamma, mcw=mcw, msl=msl, l1=l1,
                    max_cat_to_onehot=max_cat_to_onehot, cat_smooth=cat_smooth,
                    cat_l2=cat_l2, min_data_per_group=min_data_per_group,
                    max_cat_threshold=max_cat_threshold)
        ref = reference_categorical(hist, nbnm, G, H, N, mb, **args)
        split = kernel(hist, nbnm, G, H, N, mb, **args)
        assert_same_split(split, ref)
        assert split.tobytes() == kernel(hist, nbnm, G, H, N, mb, n_threads=2,
                                         **args).tobytes()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_cats", [9, 17, 100, 255])
def test_sorted_split_breaks_ratio_ties_by_code(seed, n_cats):
    # Categories in three groups of equal ratio: a prefix cut short by
    # max_cat_threshold inside a group takes that group's lowest codes.
    # Sizes around the kernel's insertion runs (8) and merge widths.
    rng = np.random.default_rng(seed)
    hist = np.zeros((1, 256), dtype=HISTOGRAM_DTYPE)
    ratio = rng.choice([-1.0, 0.0, 1.0], n_cats)
    hist["count"][0, :n_cats] = 20
    hist["sum_hessians"][0, :n_cats] = 20.0
    hist["sum_gradients"][0, :n_cats] = 30.0 * ratio
    G, H, N = float(hist["sum_gradients"].sum()), float(hist["sum_hessians"].sum()), 20 * n_cats
    nbnm = np.array([n_cats], dtype=np.uint32)
    for max_cat_threshold in (3, 37, 255):
        args = dict(max_cat_to_onehot=1, cat_smooth=10.0, cat_l2=0.0,
                    min_data_per_group=0, max_cat_threshold=max_cat_threshold)
        ref = reference_categorical(hist, nbnm, G, H, N, 255, **args)
        assert_same_split(kernel(hist, nbnm, G, H, N, 255, **args), ref)


def test_split_reference_covers_both_modes():
    # The random nodes above exercise both search modes and both missing sides.
    modes, missing = set(), set()
    for seed in range(4):
        hist, nbnm, G, H, N, mb = categorical_histograms(seed)
        for f in range(hist.shape[0]):
            k = int((hist["count"][f, :nbnm[f]] > 0).sum())
            modes.add(k <= 4)
        for onehot in (1, 255):
            ref = reference_categorical(hist, nbnm, G, H, N, mb, max_cat_to_onehot=onehot)
            missing.add((ref["has_missing"], ref["missing_go_to_left"]))
    assert modes == {True, False}
    assert len(missing) >= 2


def _best_over_subsets(hf, n_bins, missing_bin, G, H, N, singletons=False):
    """Exhaustive best gain over every left set of categories (and missing)."""
    cats = [b for b in range(n_bins) if hf[b]["count"] > 0]
    has_missing = hf[missing_bin]["count"] > 0
    items = cats + ([missing_bin] if has_missing else [])
    best = 0.0
    sizes = [1] if singletons else range(1, len(items))
    for size in sizes:
        for left in itertools.combinations(items, size):
            nl = sum(int(hf[b]["count"]) for b in left)
            if nl == 0 or nl == N:
                continue
            gl = sum(float(hf[b]["sum_gradients"]) for b in left)
            hl = sum(float(hf[b]["sum_hessians"]) for b in left)
            gain = 0.5 * (_score(gl, hl, 0.0) + _score(G - gl, H - hl, 0.0)
                          - _score(G, H, 0.0))
            best = max(best, gain)
    return best


@pytest.mark.parametrize("seed", range(6))
def test_sorted_scan_is_optimal_over_all_subsets(seed):
    # Without smoothing and regularisation the best binary partition of the
    # categories (missing values being one more) is contiguous in G/H order
    # (Fisher 1958): the sorted scan with missing tried on both sides finds it.
    hist, nbnm, G, H, N, mb = categorical_histograms(
        seed, n_features=2, n_cats=(9, 10), nan_rate=0.2, empty_rate=0.0)
    for f in range(2):
        one = hist[f:f + 1]
        split = kernel(one, nbnm[f:f + 1], G, H, N, mb, max_cat_to_onehot=1,
                       cat_smooth=0.0, **NO_CAT_REG)
        best = _best_over_subsets(one[0], int(nbnm[f]), mb, G, H, N)
        np.testing.assert_allclose(split["gain"], best, rtol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_one_vs_rest_is_best_single_category(seed):
    hist, nbnm, G, H, N, mb = categorical_histograms(
        seed, n_features=2, n_cats=(4, 4), nan_rate=0.2, empty_rate=0.0)
    for f in range(2):
        one = hist[f:f + 1]
        split = kernel(one, nbnm[f:f + 1], G, H, N, mb, max_cat_to_onehot=4)
        left = bitset_to_codes(split["cat_bitset"])
        has_missing = one[0, mb]["count"] > 0
        # one category on one side, with the missing values on either side
        # (a single missing bin is "all categories vs missing")
        best = _best_over_subsets(one[0], int(nbnm[f]), mb, G, H, N, singletons=True)
        if has_missing:
            for c in range(int(nbnm[f])):
                keep = one[0].copy()
                keep[c] = (keep[c]["sum_gradients"] + keep[mb]["sum_gradients"],
                           keep[c]["sum_hessians"] + keep[mb]["sum_hessians"],
                           keep[c]["count"] + keep[mb]["count"])
                keep[mb] = (0.0, 0.0, 0)
                best = max(best, _best_over_subsets(keep, int(nbnm[f]), mb, G, H, N,
                                                    singletons=True))
        np.testing.assert_allclose(split["gain"], best, rtol=1e-9)
        assert left.size == 1 or left.size == int(nbnm[f])


@pytest.mark.parametrize("seed", range(6))
def test_sorted_split_obeys_categorical_regularisation(seed):
    # The documented limits, checked on the chosen left set itself.
    hist, nbnm, G, H, N, mb = categorical_histograms(
        seed, n_samples=3000, n_features=2, n_cats=(80,), empty_rate=0.1)
    counts = hist["count"]
    n_checked = 0
    for cat_smooth, min_data_per_group, max_cat_threshold in ((10.0, 100, 32),
                                                              (35.0, 150, 4)):
        for f in range(2):
            s = kernel(hist[f:f + 1], nbnm[f:f + 1], G, H, N, mb, max_cat_to_onehot=1,
                       cat_smooth=cat_smooth, cat_l2=0.0,
                       min_data_per_group=min_data_per_group,
                       max_cat_threshold=max_cat_threshold)
            if s["feature_idx"] < 0:
                continue
            left = bitset_to_codes(s["cat_bitset"])
            n_left = int(counts[f, left].sum())
            if left.size == int((counts[f, :nbnm[f]] > 0).sum()):
                continue  # "every category left, missing right"
            assert left.size <= max_cat_threshold
            assert counts[f, left].min() >= cat_smooth
            assert n_left >= min_data_per_group
            assert N - n_left >= min_data_per_group
            n_checked += 1
    assert n_checked >= 2


def test_min_data_per_group_keeps_rows_on_the_right():
    # Category 0 (lowest ratio) holds 950 of 1,000 rows: leaving only 50 on
    # the right, it is no candidate, and from the other end three categories
    # (at most half) never gather 100 rows.
    hist = np.zeros((1, 8), dtype=HISTOGRAM_DTYPE)
    hist[0, 0] = (-950.0, 950.0, 950)
    for b in range(1, 6):
        hist[0, b] = (float(b), 10.0, 10)
    nbnm, G, H, N = np.array([6], np.uint32), -935.0, 1000.0, 1000
    args = dict(max_cat_to_onehot=1, cat_smooth=0.0, cat_l2=0.0, max_cat_threshold=32)
    assert kernel(hist, nbnm, G, H, N, 7, min_data_per_group=100, **args)[
        "feature_idx"] == -1
    s = kernel(hist, nbnm, G, H, N, 7, min_data_per_group=50, **args)
    assert bitset_to_codes(s["cat_bitset"]).tolist() == [0]


def test_cat_l2_penalises_only_sorted_splits():
    hist, nbnm, G, H, N, mb = categorical_histograms(2, n_samples=2000, n_features=1,
                                                     n_cats=(40,), nan_rate=0.0)
    plain = kernel(hist, nbnm, G, H, N, mb, max_cat_to_onehot=1, **NO_CAT_REG)
    penalised = kernel(hist, nbnm, G, H, N, mb, max_cat_to_onehot=1,
                       **dict(NO_CAT_REG, cat_l2=50.0))
    gl, hl = float(penalised["sum_gradients_left"]), float(penalised["sum_hessians_left"])
    expected = 0.5 * (_score(gl, hl, 50.0) + _score(G - gl, H - hl, 50.0)
                      - _score(G, H, 0.0))
    np.testing.assert_allclose(penalised["gain"], expected, rtol=1e-12)
    assert penalised["gain"] < plain["gain"]
    # one-vs-rest splits are not affected
    few = kernel(hist, nbnm, G, H, N, mb, max_cat_to_onehot=255, **NO_CAT_REG)
    assert few.tobytes() == kernel(hist, nbnm, G, H, N, mb, max_cat_to_onehot=255,
                                   **dict(NO_CAT_REG, cat_l2=50.0)).tobytes()


def test_cat_l2_same_gain_with_loose_bounds():
    # With bounds (monotonic constraints above the node) the gain is the
    # objective decrease at clipped values; bounds that clip nothing must give
    # the unbounded gain, whose node term keeps l2_regularization.
    hist, nbnm, G, H, N, mb = categorical_histograms(4, n_samples=2000, n_features=1,
                                                     n_cats=(40,))
    args = (hist, nbnm, G, H, N, 0.0, 1.0, 0.0, 0.0, 1, mb, NO_MASK, 1,
            np.ones(1, np.uint8), 1, 0.0, 20.0, 0, 255, None)
    free = find_node_split(*args)
    bounded = find_node_split(*args, -1e9, 1e9)
    assert free["is_categorical"] == 1
    assert bounded["cat_bitset"].tobytes() == free["cat_bitset"].tobytes()
    np.testing.assert_allclose(bounded["gain"], free["gain"], rtol=1e-9)


def test_numeric_features_unchanged_and_mixed_with_categorical():
    hist, nbnm, G, H, N, mb = categorical_histograms(3, n_features=4, n_cats=(30,))
    numeric = kernel(hist, nbnm, G, H, N, mb, is_categorical=np.zeros(4, np.uint8))
    legacy = find_node_split(hist, nbnm, G, H, N, 0.0, 0.0, 0.0, 0.0, 1, mb, NO_MASK, 1)
    assert numeric.tobytes() == legacy.tobytes()
    assert numeric["is_categorical"] == 0
    assert not numeric["cat_bitset"].any()
    # feature 0 categorical, the rest numeric: the better of both searches
    mask = np.array([1, 0, 0, 0], dtype=np.uint8)
    mixed = kernel(hist, nbnm, G, H, N, mb, is_categorical=mask, max_cat_to_onehot=4)
    ref = reference_categorical(hist, nbnm, G, H, N, mb, is_categorical=mask)
    only_numeric = kernel(hist, nbnm, G, H, N, mb, is_categorical=mask,
                          feature_mask=np.array([0, 1, 1, 1], dtype=np.uint8))
    assert mixed["gain"] == max(ref["gain"], only_numeric["gain"])
    assert mixed["is_categorical"] == (ref["gain"] > only_numeric["gain"])


def test_ties_resolve_to_lowest_feature_and_first_candidate():
    hist, nbnm, G, H, N, mb = categorical_histograms(5, n_features=3, n_cats=(20,))
    hist[1] = hist[0]
    hist[2] = hist[0]
    split = kernel(hist, nbnm, G, H, N, mb, max_cat_to_onehot=1)
    assert split["feature_idx"] == 0
    assert split.tobytes() == kernel(hist, nbnm, G, H, N, mb, max_cat_to_onehot=1,
                                     n_threads=3).tobytes()
    # two categories, no missing: {0} | {1} and {1} | {0} tie -> {0} left
    hist = np.zeros((1, 4), dtype=HISTOGRAM_DTYPE)
    hist[0, 0] = (-4.0, 2.0, 2)
    hist[0, 1] = (4.0, 2.0, 2)
    s = kernel(hist, np.array([2], np.uint32), 0.0, 4.0, 4, 3, max_cat_to_onehot=4)
    assert bitset_to_codes(s["cat_bitset"]).tolist() == [0]
    # equal ratios sort by code: the prefix holds the lower codes
    hist = np.zeros((1, 8), dtype=HISTOGRAM_DTYPE)
    for b, g in enumerate([5.0, -3.0, 5.0, -3.0, 5.0, -3.0]):
        hist[0, b] = (g, 1.0, 1)
    s = kernel(hist, np.array([6], np.uint32), 6.0, 6.0, 6, 7, max_cat_to_onehot=1,
               cat_smooth=0.0, **NO_CAT_REG)
    assert bitset_to_codes(s["cat_bitset"]).tolist() == [1, 3, 5]


def test_no_split_cases():
    hist = np.zeros((1, 5), dtype=HISTOGRAM_DTYPE)
    hist[0, 2] = (3.0, 4.0, 4)  # a single category, no missing values
    s = kernel(hist, np.array([4], np.uint32), 3.0, 4.0, 4, 4)
    assert s["feature_idx"] == -1
    hist[0, 4] = (-3.0, 2.0, 2)  # ... plus missing values: category vs missing
    s = kernel(hist, np.array([4], np.uint32), 0.0, 6.0, 6, 4)
    assert s["feature_idx"] == 0 and s["missing_go_to_left"] == 0
    assert bitset_to_codes(s["cat_bitset"]).tolist() == [2]
    hist[0, 2] = (0.0, 0.0, 0)  # only missing values
    s = kernel(hist, np.array([4], np.uint32), -3.0, 2.0, 2, 4)
    assert s["feature_idx"] == -1


def test_parallel_path_identical():
    # 40 features x 256 bins: above the threshold of the parallel scan
    hist, nbnm, G, H, N, mb = categorical_histograms(8, n_samples=3000, n_features=40,
                                                     n_cats=(3, 50, 200, 254))
    mask = (np.arange(40) % 3 != 0).astype(np.uint8)
    s1 = kernel(hist, nbnm, G, H, N, mb, is_categorical=mask, n_threads=1)
    s2 = kernel(hist, nbnm, G, H, N, mb, is_categorical=mask, n_threads=4)
    assert s1.tobytes() == s2.tobytes()


def test_is_categorical_length_checked():
    hist, nbnm, G, H, N, mb = categorical_histograms(0, n_features=2)
    with pytest.raises(ValueError, match="is_categorical"):
        kernel(hist, nbnm, G, H, N, mb, is_categorical=np.ones(3, np.uint8))


# ---------------------------------------------------------------------------
# bitsets, partition

def test_bitset_helpers_round_trip():
    rng = np.random.default_rng(0)
    codes = np.unique(rng.integers(0, 256, 60))
    bitset = codes_to_bitset(codes)
    assert bitset.dtype == np.uint32 and bitset.shape == (8,)
    np.testing.assert_array_equal(bitset_to_codes(bitset), codes)
    assert all(bool(bitset[c >> 5] >> (c & 31) & 1) == (c in codes) for c in range(256))
    assert not codes_to_bitset([]).any()


@pytest.mark.parametrize("n_threads", [1, 2, 4])
@pytest.mark.parametrize("n_rows", [0, 1, 1000, 70_000])
def test_partition_rows_by_table_is_stable_partition(n_threads, n_rows):
    rng = np.random.default_rng(n_rows)
    X = np.asfortranarray(rng.integers(0, 256, size=(max(n_rows, 1) * 2, 3)).astype(np.uint8))
    rows_in = np.sort(rng.choice(X.shape[0], n_rows, replace=False)).astype(SIZE_DTYPE)
    goes_left = (rng.random(256) < 0.4).astype(np.uint8)
    rows = rows_in.copy()
    buffer = np.empty(max(n_rows, 1), dtype=SIZE_DTYPE)
    n_left = partition_rows_by_table(rows, buffer, X, 1, goes_left, n_threads)
    left = goes_left[X[rows_in, 1]].astype(bool)
    assert n_left == left.sum()
    np.testing.assert_array_equal(rows[:n_left], rows_in[left])
    np.testing.assert_array_equal(rows[n_left:], rows_in[~left])


def test_partition_rows_by_table_checks_table():
    X = np.zeros((4, 1), dtype=np.uint8, order="F")
    rows = np.arange(4, dtype=SIZE_DTYPE)
    with pytest.raises(ValueError, match="256"):
        partition_rows_by_table(rows, rows.copy(), X, 0, np.zeros(255, np.uint8), 1)


# ---------------------------------------------------------------------------
# prediction kernels

def random_categorical_tree(rng, n_features, is_cat, max_depth=6):
    nodes, bitsets = [], []

    def build(depth):
        idx = len(nodes)
        nodes.append(None)
        if depth >= max_depth or (depth > 0 and rng.random() < 0.25):
            nodes[idx] = dict(value=rng.normal(), is_leaf=1, depth=depth)
            return idx
        f = int(rng.integers(n_features))
        rec = dict(value=rng.normal(), is_leaf=0, feature_idx=f, depth=depth,
                   missing_go_to_left=int(rng.integers(2)))
        if is_cat[f]:
            rec.update(is_categorical=1, bitset_idx=len(bitsets), num_threshold=np.nan)
            bitsets.append(codes_to_bitset(np.flatnonzero(rng.random(256) < 0.5)))
        else:
            b = int(rng.integers(0, 30))
            rec.update(num_threshold=float(b), bin_threshold=b)
        nodes[idx] = rec
        rec["left"] = build(depth + 1)
        rec["right"] = build(depth + 1)
        return idx

    build(0)
    arr = np.zeros(len(nodes), dtype=NODE_DTYPE)
    for i, rec in enumerate(nodes):
        for k, v in rec.items():
            arr[k][i] = v
    return arr, np.array(bitsets, dtype=np.uint32).reshape(-1, 8)


def traverse(nodes, bitsets, x):
    i = 0
    while not nodes["is_leaf"][i]:
        v = float(x[int(nodes["feature_idx"][i])])
        missing = math.isnan(v)
        if nodes["is_categorical"][i]:
            missing = missing or not (0 <= v < 256 and v == int(v))
            if not missing:
                c = int(v)
                go_left = bool(bitsets[nodes["bitset_idx"][i]][c >> 5] >> (c & 31) & 1)
        elif not missing:
            go_left = v <= nodes["num_threshold"][i]
        if missing:
            go_left = bool(nodes["missing_go_to_left"][i])
        i = int(nodes["left"][i] if go_left else nodes["right"][i])
    return float(nodes["value"][i])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predict_add_categorical_matches_python(seed, dtype):
    rng = np.random.default_rng(seed)
    n, p = 3000, 4
    is_cat = np.array([1, 0, 1, 1], dtype=bool)
    X = rng.integers(0, 40, size=(n, p)).astype(np.float64)
    special = [np.nan, -1.0, -0.5, 2.5, 255.0, 256.0, 1e9, np.inf, -np.inf, 254.0]
    hit = rng.random((n, p)) < 0.15
    X[hit] = rng.choice(special, hit.sum())
    X = X.astype(dtype)
    nodes, bitsets = random_categorical_tree(rng, p, is_cat)
    expected = np.array([traverse(nodes, bitsets, x) for x in X])
    for n_threads in (1, 2):
        out = np.zeros(n)
        predict_add(nodes, X, out, n_threads, bitsets)
        np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(TreePredictor(nodes, bitsets).predict(X), expected)


@pytest.mark.parametrize("seed", range(3))
def test_predict_binned_add_categorical_matches_python(seed):
    rng = np.random.default_rng(seed)
    n, p, missing_bin = 3000, 3, 255
    is_cat = np.array([1, 0, 1], dtype=bool)
    X_binned = rng.integers(0, 60, size=(n, p)).astype(np.uint8)
    X_binned[rng.random((n, p)) < 0.1] = missing_bin
    X_binned = np.asfortranarray(X_binned)
    nodes, bitsets = random_categorical_tree(rng, p, is_cat)
    nodes["num_threshold"][nodes["is_categorical"] == 0] = nodes["bin_threshold"][
        nodes["is_categorical"] == 0]
    X_raw = np.where(X_binned == missing_bin, np.nan, X_binned.astype(np.float64))
    rows = np.sort(rng.choice(n, 2500, replace=False)).astype(SIZE_DTYPE)
    expected = np.zeros(n)
    expected[rows] = [traverse(nodes, bitsets, X_raw[r]) for r in rows]
    for n_threads in (1, 2):
        out = np.zeros(n)
        predict_binned_add(nodes, X_binned, rows, missing_bin, out, n_threads, bitsets)
        np.testing.assert_array_equal(out, expected)


def test_tree_predictor_checks_bitsets():
    rng = np.random.default_rng(0)
    nodes, bitsets = random_categorical_tree(rng, 2, np.array([True, True]), max_depth=3)
    with pytest.raises(ValueError, match="cat_bitsets"):
        TreePredictor(nodes, bitsets[:0])
    with pytest.raises(ValueError, match="cat_bitsets"):
        TreePredictor(nodes, np.zeros((len(bitsets), 4), np.uint32))


# ---------------------------------------------------------------------------
# binning

def test_bin_mapper_categorical_bins_are_codes():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 50, 1000), rng.normal(size=1000)]).astype(float)
    X[X[:, 0] == 7, 0] = 8.0  # code 7 unseen
    X[rng.random(1000) < 0.1, 0] = np.nan
    mapper = BinMapper(max_bins=16, is_categorical=[True, False], subsample=None).fit(X)
    assert mapper.n_bins_non_missing_[0] == 50
    assert mapper.missing_bin == 50  # above the largest code, not max_bins
    assert mapper.bin_thresholds_[0].size == 0
    np.testing.assert_array_equal(mapper.categories_[0], np.setdiff1d(np.arange(50), [7]))
    assert mapper.categories_[1] is None
    binned = mapper.transform(X)
    np.testing.assert_array_equal(binned[:, 0], np.where(np.isnan(X[:, 0]), 50, X[:, 0]))
    assert binned[:, 1].max() < 16  # numeric binning untouched
    X_new = np.array([[7.0, 0.0], [-1.0, 0.0], [2.5, 0.0], [60.0, 0.0], [300.0, 0.0],
                      [49.0, 0.0], [np.inf, 0.0]])
    np.testing.assert_array_equal(mapper.transform(X_new)[:, 0],
                                  [50, 50, 50, 50, 50, 49, 50])


def test_bin_mapper_categories_from_all_rows_not_the_subsample():
    X = np.zeros((1000, 1))
    X[-1, 0] = 200.0  # a rare code the subsample may miss
    mapper = BinMapper(is_categorical=[True], subsample=10, random_state=0).fit(X)
    np.testing.assert_array_equal(mapper.categories_[0], [0, 200])
    assert mapper.missing_bin == 255


@pytest.mark.parametrize("bad, match", [(-1.0, "non-negative"), (1.5, "integers"),
                                        (255.0, "below 255"), (np.inf, "below 255")])
def test_bin_mapper_rejects_invalid_codes(bad, match):
    X = np.array([[0.0], [1.0], [bad]])
    with pytest.raises(ValueError, match=match):
        BinMapper(is_categorical=[True]).fit(X)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_category_codes_match_numpy(dtype, order):
    # One pass over a strided column of any dtype: the distinct codes of
    # NumPy's unique, NaN left out; the input is not modified.
    rng = np.random.default_rng(0)
    X = rng.integers(0, 255, (5000, 3)).astype(dtype, order=order)
    X[:, 1] = rng.choice([3, 17, 254], 5000)
    if dtype != np.int64:
        X[rng.random(5000) < 0.2, 1] = np.nan
    before = X.copy()
    for j in range(3):
        col = X[:, j].astype(np.float64)
        np.testing.assert_array_equal(category_codes(X[:, j]),
                                      np.unique(col[~np.isnan(col)]).astype(np.intp))
    np.testing.assert_array_equal(category_codes(X[::-3, 1]), [3, 17, 254])
    assert category_codes(np.full(4, np.nan)).size == 0
    np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize("first, later, match", [(300.0, -1.0, "non-negative"),
                                                 (np.inf, 2.5, "integers"),
                                                 (-0.5, 300.0, "integers")])
def test_category_codes_report_the_invalid_code_first(first, later, match):
    # A non-integer or negative value is reported before a too large code,
    # wherever each is in the column.
    column = np.array([0.0, first, 1.0, later, np.nan], dtype=np.float32)
    with pytest.raises(ValueError, match=match):
        category_codes(column)


# ---------------------------------------------------------------------------
# estimators

def subset_task(seed=0, n=20_000, n_cats=30, nan_rate=0.05):
    """y depends on membership of a categorical code in a random subset."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, n_cats, n).astype(float)
    subset = rng.permutation(n_cats)[:n_cats // 3]
    x = rng.normal(size=n)
    y = np.isin(c, subset) * 3.0 + np.sin(2 * x) + rng.normal(size=n) * 0.5
    c[rng.random(n) < nan_rate] = np.nan
    X = np.column_stack([c, x])
    return X[: n * 3 // 4], X[n * 3 // 4:], y[: n * 3 // 4], y[n * 3 // 4:]


def rmse(model, X, y):
    return float(np.sqrt(np.mean((model.predict(X) - y) ** 2)))


PARAMS = dict(max_iter=60, learning_rate=0.1, l2_regularization=0.0, early_stopping=False,
              random_state=0)


def test_subset_signal_learned_like_sklearn():
    X_train, X_test, y_train, y_test = subset_task()
    ours = HistGBDTRegressor(categorical_features=[0], **PARAMS).fit(X_train, y_train)
    sk = HistGradientBoostingRegressor(categorical_features=[0], **PARAMS).fit(
        X_train, y_train)
    r_ours, r_sk = rmse(ours, X_test, y_test), rmse(sk, X_test, y_test)
    assert r_ours <= r_sk * 1.02, (r_ours, r_sk)
    # Bayes error: noise 0.5, plus the subset effect (variance 2) of the 5%
    # rows whose category is missing
    assert r_ours < np.sqrt(0.25 + 0.05 * 2.0) + 0.02
    assert any(t[0].nodes["is_categorical"].any() for t in rounds(ours))
    # Small trees: one categorical split isolates the subset, thresholds on
    # the (meaningless) code order cannot.
    small = dict(PARAMS, max_iter=30, max_leaf_nodes=3)
    native = HistGBDTRegressor(categorical_features=[0], **small).fit(X_train, y_train)
    numeric = HistGBDTRegressor(categorical_features=None, **small).fit(X_train, y_train)
    assert rmse(native, X_test, y_test) < 0.75 < 1.2 < rmse(numeric, X_test, y_test)


def test_one_hot_and_native_reach_comparable_loss():
    X_train, X_test, y_train, y_test = subset_task(seed=1, nan_rate=0.0)

    def one_hot(X):
        return np.column_stack([X[:, 0:1] == np.arange(30), X[:, 1]]).astype(float)

    native = HistGBDTRegressor(categorical_features=[0], **PARAMS).fit(X_train, y_train)
    onehot = HistGBDTRegressor(**PARAMS).fit(one_hot(X_train), y_train)
    r_native, r_onehot = rmse(native, X_test, y_test), rmse(onehot, one_hot(X_test), y_test)
    assert abs(r_native - r_onehot) < 0.05 * r_onehot, (r_native, r_onehot)


@pytest.mark.parametrize("nan_rate", [0.0, 0.1])
def test_unseen_and_invalid_codes_follow_missing_direction(nan_rate):
    X_train, X_test, y_train, _ = subset_task(seed=2, n=4000, nan_rate=nan_rate)
    keep = X_train[:, 0] != 5  # code 5 never seen at fit
    model = HistGBDTRegressor(categorical_features=[True, False], max_cat_to_onehot=4,
                              **PARAMS).fit(X_train[keep], y_train[keep])
    np.testing.assert_array_equal(model.categorical_categories_[0],
                                  np.setdiff1d(np.arange(30), [5]))
    X_nan = X_test[:50].copy()
    X_nan[:, 0] = np.nan
    expected = model.predict(X_nan)
    for value in (5.0, 30.0, 200.0, 254.0, 255.0, 1000.0, -1.0, 2.5, np.inf):
        X_other = X_nan.copy()
        X_other[:, 0] = value
        np.testing.assert_array_equal(model.predict(X_other), expected, err_msg=str(value))
    X_seen = X_nan.copy()
    X_seen[:, 0] = 6.0
    assert not np.array_equal(model.predict(X_seen), expected)


def test_training_raw_predictions_match_predict():
    # binned routing during fit (bagging: rows outside the sample) and raw
    # routing at predict send every row to the same leaf
    X_train, _, y_train, _ = subset_task(seed=3, n=6000)
    model = HistGBDTRegressor(categorical_features=[0], subsample=0.5, max_iter=20,
                              early_stopping=False, random_state=0).fit(X_train, y_train)
    binned = bin_mapper(model).transform(X_train)
    from_bins = model.booster_.raw_from_trees(np.empty((1, X_train.shape[0])),
                                              X_binned=binned)
    np.testing.assert_allclose(from_bins[0], model.predict(X_train), rtol=0, atol=1e-12)


@pytest.mark.parametrize("bad, match", [
    (-1.0, "non-negative"), (2.5, "integers"), (-np.inf, "OrdinalEncoder")])
def test_invalid_codes_at_fit_raise(bad, match):
    # (codes >= 255 are pooled: tests/test_high_cardinality.py)
    X = np.column_stack([np.arange(100) % 7, np.arange(100)]).astype(float)
    X[3, 0] = bad
    with pytest.raises(ValueError, match=match):
        HistGBDTRegressor(categorical_features=[0], max_iter=2).fit(X, np.arange(100.0))


def test_categorical_features_resolution_errors():
    X = np.column_stack([np.arange(60) % 3, np.arange(60)]).astype(float)
    y = np.arange(60.0)
    with pytest.raises(ValueError, match="boolean mask must have 2"):
        HistGBDTRegressor(categorical_features=[True], max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="outside"):
        HistGBDTRegressor(categorical_features=[2], max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="column names"):
        HistGBDTRegressor(categorical_features=["a"], max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="categorical_features must be"):
        HistGBDTRegressor(categorical_features=[0.5], max_iter=2).fit(X, y)
    # 'from_dtype' on an array and an empty list: no categorical feature
    for spec in ("from_dtype", []):
        model = HistGBDTRegressor(categorical_features=spec, max_iter=2).fit(X, y)
        assert model.is_categorical_ is None


def test_mask_indices_equivalent_and_threads_bit_identical():
    X_train, X_test, y_train, _ = subset_task(seed=4, n=80_000)
    X_train = np.column_stack([X_train, X_train[:, 0] % 11])  # a second categorical
    X_test = np.column_stack([X_test, X_test[:, 0] % 11])
    params = dict(max_iter=8, early_stopping=False, random_state=0, max_cat_to_onehot=4)
    preds = []
    for spec, n_threads in [([0, 2], 1), ([True, False, True], 2), ([2, 0], 4)]:
        model = HistGBDTRegressor(categorical_features=spec, n_threads=n_threads,
                                  **params).fit(X_train, y_train)
        preds.append(model.predict(X_test))
    assert preds[0].tobytes() == preds[1].tobytes() == preds[2].tobytes()


def test_warm_start_equals_one_fit():
    X_train, X_test, y_train, _ = subset_task(seed=5, n=3000)
    params = dict(categorical_features=[0], early_stopping=False, random_state=0)
    full = HistGBDTRegressor(max_iter=20, **params).fit(X_train, y_train)
    warm = HistGBDTRegressor(max_iter=10, warm_start=True, **params).fit(X_train, y_train)
    warm.set_params(max_iter=20).fit(X_train, y_train)
    np.testing.assert_array_equal(warm.predict(X_test), full.predict(X_test))


def test_small_max_bins_with_many_categories():
    # codes up to 29 with max_bins=8: categories keep one bin each
    X_train, X_test, y_train, y_test = subset_task(seed=6, n=8000)
    model = HistGBDTRegressor(categorical_features=[0], max_bins=8, **PARAMS).fit(
        X_train, y_train)
    assert bin_mapper(model).missing_bin == 30
    numeric = HistGBDTRegressor(max_bins=8, **PARAMS).fit(X_train, y_train)
    assert rmse(model, X_test, y_test) < 0.72 < 1.2 < rmse(numeric, X_test, y_test)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_classifier_with_categorical_feature(n_classes):
    rng = np.random.default_rng(n_classes)
    n = 6000
    c = rng.integers(0, 40, n)
    label_of = rng.integers(0, n_classes, 40)
    y = np.where(rng.random(n) < 0.9, label_of[c], rng.integers(0, n_classes, n))
    X = np.column_stack([c, rng.normal(size=n)]).astype(float)
    # a small budget (10 rounds of 4 leaves): one categorical split groups
    # the levels by label, where splits on the codes' order need many (with
    # 30 rounds of 31 leaves both reach the noise's limit, 0.9 + 0.1 / k)
    small = dict(max_iter=10, max_leaf_nodes=4, early_stopping=False, random_state=0)
    clf = HistGBDTClassifier(categorical_features=[0], **small).fit(X[:4500], y[:4500])
    assert clf.score(X[4500:], y[4500:]) > 0.87
    numeric = HistGBDTClassifier(categorical_features=None, **small).fit(X[:4500], y[:4500])
    assert clf.score(X[4500:], y[4500:]) > numeric.score(X[4500:], y[4500:]) + 0.03
    proba = clf.predict_proba(X[4500:])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_early_stopping_with_scorer_on_categorical_frame():
    pd = pytest.importorskip("pandas")
    X_train, _, y_train, _ = subset_task(seed=7, n=4000)
    df = pd.DataFrame({"c": pd.Categorical.from_codes(
        np.nan_to_num(X_train[:, 0], nan=-1).astype(int),
        categories=[f"k{i}" for i in range(30)]), "x": X_train[:, 1]})
    model = HistGBDTRegressor(early_stopping=True, scoring="r2", max_iter=30,
                              n_iter_no_change=3, random_state=0).fit(df, y_train)
    assert model.validation_score_[-1] > 0.8  # the scorer saw codes, not NaN


# ---------------------------------------------------------------------------
# DataFrames

def _frame(pd, X, categories, order=None):
    codes = np.nan_to_num(X[:, 0], nan=-1).astype(int)
    values = pd.Categorical.from_codes(codes, categories=categories)
    if order is not None:
        values = values.reorder_categories(order)
    return pd.DataFrame({"city": values, "x": X[:, 1]})


def test_pandas_from_dtype_round_trip_with_reordered_categories():
    pd = pytest.importorskip("pandas")
    X_train, X_test, y_train, y_test = subset_task(seed=8, n=6000)
    names = [f"city{i:02d}" for i in range(30)]
    df_train = _frame(pd, X_train, names)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no feature-name warnings
        model = HistGBDTRegressor(**PARAMS).fit(df_train, y_train)
        pred = model.predict(_frame(pd, X_test, names))
        shuffled = list(np.random.default_rng(0).permutation(names))
        pred_reordered = model.predict(_frame(pd, X_test, names, order=shuffled))
    np.testing.assert_array_equal(model.is_categorical_, [True, False])
    np.testing.assert_array_equal(model.categorical_categories_[0], names)
    assert list(model.feature_names_in_) == ["city", "x"]
    np.testing.assert_array_equal(pred, pred_reordered)
    # the same model as the codes of an array with categorical_features=[0]
    on_codes = HistGBDTRegressor(categorical_features=[0], **PARAMS).fit(X_train, y_train)
    np.testing.assert_array_equal(pred, on_codes.predict(X_test))
    # a plain string column at predict is mapped by value too
    as_str = pd.DataFrame({"city": np.asarray(_frame(pd, X_test, names)["city"],
                                              dtype=object), "x": X_test[:, 1]})
    np.testing.assert_array_equal(model.predict(as_str), pred)
    assert rmse(model, _frame(pd, X_test, names), y_test) < 0.66


def test_pandas_unseen_category_follows_missing():
    pd = pytest.importorskip("pandas")
    X_train, X_test, y_train, _ = subset_task(seed=9, n=4000)
    names = [f"c{i}" for i in range(30)]
    model = HistGBDTRegressor(**PARAMS).fit(_frame(pd, X_train, names), y_train)
    rows = 40
    x = X_test[:rows, 1]
    nan_pred = model.predict(pd.DataFrame({"city": pd.Categorical([None] * rows,
                                                                  categories=names),
                                           "x": x}))
    new = pd.DataFrame({"city": pd.Categorical(["brand-new"] * rows), "x": x})
    np.testing.assert_array_equal(model.predict(new), nan_pred)


def test_pandas_names_and_resolution_errors():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 600
    df = pd.DataFrame({"a": rng.normal(size=n), "color": rng.choice(["r", "g", "b"], n),
                       "code": rng.integers(0, 5, n)})
    y = (df["color"] == "g") * 2.0 + df["code"] + rng.normal(size=n) * 0.1
    model = HistGBDTRegressor(categorical_features=["color", "code"], max_iter=20,
                              min_samples_leaf=5, random_state=0).fit(df, y)
    np.testing.assert_array_equal(model.is_categorical_, [False, True, True])
    np.testing.assert_array_equal(model.categorical_categories_[1], ["b", "g", "r"])
    np.testing.assert_array_equal(model.categorical_categories_[2], np.arange(5))
    assert model.score(df, y) > 0.95
    with pytest.raises(ValueError, match="not feature names"):
        HistGBDTRegressor(categorical_features=["nope"], max_iter=2).fit(df, y)
    # a category column left out of categorical_features cannot be numeric
    cat = df.assign(color=df["color"].astype("category"))
    with pytest.raises(ValueError, match="categorical_features"):
        HistGBDTRegressor(categorical_features=["code"], max_iter=2).fit(cat, y)


def test_polars_categorical_and_enum():
    pl = pytest.importorskip("polars")
    X_train, X_test, y_train, _ = subset_task(seed=10, n=5000)
    names = [f"city{i:02d}" for i in range(30)]  # sorted: polars codes = pandas codes

    def frame(X, dtype):
        values = [None if np.isnan(v) else names[int(v)] for v in X[:, 0]]
        return pl.DataFrame({"city": pl.Series(values, dtype=dtype), "x": X[:, 1]})

    on_codes = HistGBDTRegressor(categorical_features=[0], **PARAMS).fit(X_train, y_train)
    expected = on_codes.predict(X_test)
    for dtype in (pl.Categorical, pl.Enum(names)):
        model = HistGBDTRegressor(**PARAMS).fit(frame(X_train, dtype), y_train)
        np.testing.assert_array_equal(model.is_categorical_, [True, False])
        assert list(model.feature_names_in_) == ["city", "x"]
        np.testing.assert_array_equal(model.predict(frame(X_test, dtype)), expected)
    # unseen category at predict: as missing
    model = HistGBDTRegressor(**PARAMS).fit(frame(X_train, pl.Categorical), y_train)
    x = X_test[:20, 1]
    unseen = pl.DataFrame({"city": pl.Series(["zzz"] * 20, dtype=pl.Categorical), "x": x})
    missing = pl.DataFrame({"city": pl.Series([None] * 20, dtype=pl.Categorical), "x": x})
    np.testing.assert_array_equal(model.predict(unseen), model.predict(missing))


def test_same_categories_needs_equal_values_of_equal_types():
    # the shortcut that keeps a column's own codes (no lookup) only where the
    # lookup would give those codes: True is not 1, 1.0 is not 1, order counts
    from hgbt.data.categorical import _same_categories
    obj = lambda *v: np.array(list(v), dtype=object)  # noqa: E731
    assert _same_categories(obj("a", "b", 1), obj("a", "b", 1))
    assert not _same_categories(obj("a", "b"), obj("b", "a"))
    assert not _same_categories(obj("a", 1), obj("a", True))
    assert not _same_categories(obj("a", 1), obj("a", 1.0))
    assert not _same_categories(np.array([0, 1]), np.array([False, True]))
    assert not _same_categories(np.array([0, 1]), np.array([0, 1, 2]))
    assert _same_categories(np.array([3, 1]), np.array([3, 1]))
