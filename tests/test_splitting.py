"""find_node_split against an exhaustive pure-Python enumeration of candidate splits."""
import numpy as np
import pytest

from split_search import find_node_split
from hgbt.core._types import HISTOGRAM_DTYPE


def _soft(g, l1):
    return np.sign(g) * max(abs(g) - l1, 0.0)


def _score(g, h, l2, l1=0.0):
    return 0.0 if h + l2 <= 0.0 else _soft(g, l1) ** 2 / (h + l2)


def reference_split(hist, n_bins_non_missing, G, H, N, l2, gamma, min_child_weight,
                    min_samples_leaf, missing_bin, l1=0.0, feature_mask=None):
    """Exhaustive best split, following the kernel's documented rules.

    Candidates are enumerated in the documented tie order: feature, then bin,
    then missing-right before missing-left; a later candidate replaces the
    best only with a strictly larger gain. Sums are accumulated bin by bin
    (same arithmetic as a running sum), right = total - left.
    """
    best = None
    for f in range(hist.shape[0]):
        if feature_mask is not None and not feature_mask[f]:
            continue
        nb = int(n_bins_non_missing[f])
        miss = hist[f, missing_bin]
        has_missing = int(miss["count"]) > 0
        gl_r = hl_r = 0.0  # running sums for missing-right (values only)
        nl_r = 0
        gl_l, hl_l, nl_l = float(miss["sum_gradients"]), float(miss["sum_hessians"]), int(miss["count"])
        for b in range(nb):
            gl_r += float(hist[f, b]["sum_gradients"])
            hl_r += float(hist[f, b]["sum_hessians"])
            nl_r += int(hist[f, b]["count"])
            gl_l += float(hist[f, b]["sum_gradients"])
            hl_l += float(hist[f, b]["sum_hessians"])
            nl_l += int(hist[f, b]["count"])
            for missing_left, (gl, hl, nl) in ((0, (gl_r, hl_r, nl_r)), (1, (gl_l, hl_l, nl_l))):
                if missing_left and not has_missing:
                    continue  # no missing values: a single direction
                if b == nb - 1 and (missing_left or not has_missing):
                    # missing-left + all values left = everything left;
                    # missing-right + all values left is a split only with NaNs
                    continue
                gr, hr, nr = G - gl, H - hl, N - nl
                if nl < min_samples_leaf or nr < min_samples_leaf:
                    continue
                if hl < min_child_weight or hr < min_child_weight:
                    continue
                gain = 0.5 * (_score(gl, hl, l2, l1) + _score(gr, hr, l2, l1)
                              - _score(G, H, l2, l1)) - gamma
                if gain > 0 and (best is None or gain > best["gain"]):
                    best = dict(gain=gain, feature_idx=f, bin_idx=b,
                                missing_go_to_left=missing_left,
                                sum_gradients_left=gl, sum_hessians_left=hl, n_samples_left=nl,
                                sum_gradients_right=gr, sum_hessians_right=hr, n_samples_right=nr,
                                has_missing=has_missing)
    return best


def random_node(seed, n_samples=300, n_features=6, max_bins=12, nan_rate=0.1,
                constant_hessian=False):
    """A random node: binned data with various bin counts, NaN in some features."""
    rng = np.random.default_rng(seed)
    n_bins = max_bins + 1
    n_bins_non_missing = rng.integers(1, max_bins + 1, size=n_features).astype(np.uint32)
    n_bins_non_missing[0] = max_bins
    X = np.empty((n_samples, n_features), dtype=np.intp)
    for f in range(n_features):
        X[:, f] = rng.integers(0, n_bins_non_missing[f], size=n_samples)
        if f % 2 == 1 and nan_rate > 0:  # odd features have missing values
            X[rng.random(n_samples) < nan_rate, f] = max_bins
    g = rng.normal(size=n_samples).astype(np.float32) + np.float32(rng.normal() * 0.3)
    if constant_hessian:
        h = np.full(n_samples, 1.0, dtype=np.float32)
    else:
        h = rng.uniform(0.05, 2.0, size=n_samples).astype(np.float32)
    hist = np.zeros((n_features, n_bins), dtype=HISTOGRAM_DTYPE)
    for f in range(n_features):
        hist["sum_gradients"][f] = np.bincount(X[:, f], weights=g.astype(np.float64), minlength=n_bins)
        hist["sum_hessians"][f] = np.bincount(X[:, f], weights=h.astype(np.float64), minlength=n_bins)
        hist["count"][f] = np.bincount(X[:, f], minlength=n_bins)
    G = float(g.astype(np.float64).sum())
    H = float(h.astype(np.float64).sum())
    return hist, n_bins_non_missing, G, H, n_samples, max_bins


NO_MASK = np.empty(0, dtype=np.uint8)


def call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl, n_threads=1,
                l1=0.0, feature_mask=NO_MASK):
    return find_node_split(hist, nbnm, G, H, N, l1, l2, gamma, mcw, msl, missing_bin,
                           feature_mask, n_threads)


def assert_matches(split, ref, hist, missing_bin):
    if ref is None:
        assert split["feature_idx"] == -1
        return
    assert split["feature_idx"] == ref["feature_idx"]
    assert split["bin_idx"] == ref["bin_idx"]
    np.testing.assert_allclose(split["gain"], ref["gain"], rtol=1e-9)
    for key in ("sum_gradients_left", "sum_hessians_left",
                "sum_gradients_right", "sum_hessians_right"):
        np.testing.assert_allclose(split[key], ref[key], rtol=1e-9, atol=1e-9)
    assert split["n_samples_left"] == ref["n_samples_left"]
    assert split["n_samples_right"] == ref["n_samples_right"]
    assert split["n_samples_left"] + split["n_samples_right"] == hist["count"][0].sum()
    if ref["has_missing"]:
        assert split["missing_go_to_left"] == ref["missing_go_to_left"]
    else:
        # no missing values at this node in the chosen feature: missing values
        # (seen at prediction) go to the child with more samples
        nl, nr = ref["n_samples_left"], ref["n_samples_right"]
        if nl > nr:
            assert split["missing_go_to_left"] == 1
        elif nl < nr:
            assert split["missing_go_to_left"] == 0
        else:
            assert split["missing_go_to_left"] in (0, 1)


CONSTRAINTS = [
    # l2, gamma, min_child_weight, min_samples_leaf
    (0.0, 0.0, 0.0, 1),
    (0.0, 0.0, 1e-3, 20),
    (1.0, 0.0, 1e-3, 5),
    (0.0, 0.5, 0.0, 1),
    (10.0, 0.1, 5.0, 10),
    (0.5, 0.0, 30.0, 1),
    (0.0, 0.0, 0.0, 60),
]


@pytest.mark.parametrize("constraints", CONSTRAINTS)
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nan_rate", [0.0, 0.15])
def test_matches_exhaustive_reference(constraints, seed, nan_rate):
    l2, gamma, mcw, msl = constraints
    hist, nbnm, G, H, N, missing_bin = random_node(seed, nan_rate=nan_rate,
                                                   constant_hessian=seed % 3 == 0)
    ref = reference_split(hist, nbnm, G, H, N, l2, gamma, mcw, msl, missing_bin)
    split = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl)
    assert_matches(split, ref, hist, missing_bin)
    split2 = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl, n_threads=2)
    assert split.tobytes() == split2.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_small_nodes_many_candidates_rejected(seed):
    # few rows: min_samples_leaf and min_child_weight bind often
    hist, nbnm, G, H, N, missing_bin = random_node(100 + seed, n_samples=25,
                                                   n_features=4, max_bins=8, nan_rate=0.3)
    for l2, gamma, mcw, msl in [(0.0, 0.0, 0.0, 1), (0.1, 0.0, 2.0, 3),
                                (0.0, 0.0, 0.0, 8), (0.0, 0.05, 0.5, 5)]:
        ref = reference_split(hist, nbnm, G, H, N, l2, gamma, mcw, msl, missing_bin)
        split = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl)
        assert_matches(split, ref, hist, missing_bin)


def test_chosen_split_respects_constraints():
    hist, nbnm, G, H, N, missing_bin = random_node(7, nan_rate=0.2)
    l2, gamma, mcw, msl = 2.0, 0.3, 10.0, 40
    split = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl)
    assert split["feature_idx"] >= 0
    assert split["n_samples_left"] >= msl and split["n_samples_right"] >= msl
    assert split["sum_hessians_left"] >= mcw and split["sum_hessians_right"] >= mcw
    gl, hl = float(split["sum_gradients_left"]), float(split["sum_hessians_left"])
    gr, hr = float(split["sum_gradients_right"]), float(split["sum_hessians_right"])
    gain = 0.5 * (gl * gl / (hl + l2) + gr * gr / (hr + l2) - G * G / (H + l2)) - gamma
    np.testing.assert_allclose(split["gain"], gain, rtol=1e-9)
    assert split["gain"] > 0


def test_missing_only_split_is_candidate_only_with_missing_values():
    # feature 0: one value bin (constant) + NaNs -> the only split is
    # "all values left, missing right"; feature 1 the same but without NaN
    missing_bin = 4
    hist = np.zeros((2, 5), dtype=HISTOGRAM_DTYPE)
    hist[0, 0] = (-10.0, 10.0, 10)
    hist[0, missing_bin] = (8.0, 5.0, 5)
    hist[1, 0] = (-2.0, 15.0, 15)
    nbnm = np.array([1, 1], dtype=np.uint32)
    split = call_kernel(hist, nbnm, -2.0, 15.0, 15, missing_bin, 0.0, 0.0, 0.0, 1)
    assert split["feature_idx"] == 0
    assert split["bin_idx"] == 0
    assert split["missing_go_to_left"] == 0
    assert split["n_samples_left"] == 10 and split["n_samples_right"] == 5
    expected = 0.5 * (100 / 10 + 64 / 5 - 4 / 15)
    np.testing.assert_allclose(split["gain"], expected, rtol=1e-12)
    # without the missing values nothing can split a single value bin
    hist[0, missing_bin] = (0.0, 0.0, 0)
    hist[0, 0] = (-2.0, 15.0, 15)
    split = call_kernel(hist, nbnm, -2.0, 15.0, 15, missing_bin, 0.0, 0.0, 0.0, 1)
    assert split["feature_idx"] == -1


def test_missing_goes_to_larger_child_without_missing_values():
    missing_bin = 3
    hist = np.zeros((1, 4), dtype=HISTOGRAM_DTYPE)
    # strong split after bin 0, left child small
    hist[0, 0] = (-6.0, 2.0, 2)
    hist[0, 1] = (1.0, 4.0, 4)
    hist[0, 2] = (2.0, 4.0, 4)
    nbnm = np.array([3], dtype=np.uint32)
    s = call_kernel(hist, nbnm, -3.0, 10.0, 10, missing_bin, 0.0, 0.0, 0.0, 1)
    assert (s["feature_idx"], s["bin_idx"]) == (0, 0)
    assert s["n_samples_left"] == 2 and s["missing_go_to_left"] == 0
    # mirrored: large left child
    hist[0, 0] = (1.0, 4.0, 4)
    hist[0, 1] = (2.0, 4.0, 4)
    hist[0, 2] = (-6.0, 2.0, 2)
    s = call_kernel(hist, nbnm, -3.0, 10.0, 10, missing_bin, 0.0, 0.0, 0.0, 1)
    assert (s["feature_idx"], s["bin_idx"]) == (0, 1)
    assert s["n_samples_left"] == 8 and s["missing_go_to_left"] == 1


@pytest.mark.parametrize("case", ["zero_gradients", "min_samples_leaf", "min_child_weight",
                                  "gamma", "single_bins"])
def test_no_valid_split(case):
    hist, nbnm, G, H, N, missing_bin = random_node(11, n_samples=100, nan_rate=0.1)
    l2, gamma, mcw, msl = 0.0, 0.0, 0.0, 1
    if case == "zero_gradients":
        hist["sum_gradients"] = 0.0
        G = 0.0
    elif case == "min_samples_leaf":
        msl = 51
    elif case == "min_child_weight":
        mcw = H / 2 + 1.0
    elif case == "gamma":
        gamma = 1e6
    elif case == "single_bins":
        hist[:, 1:] = np.zeros(1, dtype=HISTOGRAM_DTYPE)
        hist["count"][:, 0] = N
        hist["sum_gradients"][:, 0] = G
        hist["sum_hessians"][:, 0] = H
        nbnm[:] = 1
    assert reference_split(hist, nbnm, G, H, N, l2, gamma, mcw, msl, missing_bin) is None
    split = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl)
    assert split["feature_idx"] == -1
    split2 = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl, 2)
    assert split2["feature_idx"] == -1


def test_tie_between_features_resolves_to_lowest_feature():
    hist, nbnm, G, H, N, missing_bin = random_node(12, n_features=3, nan_rate=0.2)
    # features 1 and 2 identical copies of feature 0 -> identical gains
    hist[1] = hist[0]
    hist[2] = hist[0]
    nbnm[:] = nbnm[0]
    split = call_kernel(hist, nbnm, G, H, N, missing_bin, 0.0, 0.0, 0.0, 1)
    assert split["feature_idx"] == 0
    # feature 0 unsplittable (one value bin, no NaN): features 1, 2 tie -> 1
    hist[0] = np.zeros(1, dtype=HISTOGRAM_DTYPE)
    hist[0, 0] = (G, H, N)
    nbnm[0] = 1
    ref = reference_split(hist, nbnm, G, H, N, 0.0, 0.0, 0.0, 1, missing_bin)
    split = call_kernel(hist, nbnm, G, H, N, missing_bin, 0.0, 0.0, 0.0, 1)
    assert split["feature_idx"] == ref["feature_idx"] == 1
    split = call_kernel(hist, nbnm, G, H, N, missing_bin, 0.0, 0.0, 0.0, 2)
    assert split["feature_idx"] == 1


def test_tie_between_bins_resolves_to_lowest_bin():
    # empty bin 2: splitting after bin 1 or after bin 2 is the same partition
    missing_bin = 5
    hist = np.zeros((1, 6), dtype=HISTOGRAM_DTYPE)
    hist[0, 0] = (-3.0, 2.0, 2)
    hist[0, 1] = (-2.0, 2.0, 2)
    hist[0, 3] = (4.0, 2.0, 2)
    hist[0, 4] = (3.0, 2.0, 2)
    nbnm = np.array([5], dtype=np.uint32)
    s = call_kernel(hist, nbnm, 2.0, 8.0, 8, missing_bin, 0.0, 0.0, 0.0, 1)
    assert (s["feature_idx"], s["bin_idx"]) == (0, 1)


def test_tie_across_missing_directions_resolves_to_lowest_bin():
    """Documented tie order: lowest feature, then lowest bin, then missing-right.

    Bins 0..2 and the missing bin M with (g, h): 0:(-1,3) 1:(4,1) 2:(-1,3)
    M:(-1,2) (integers: every sum is exact). The split "bin <= 0, missing
    left" puts {M,0}=(-2,5) left and {1,2}=(3,4) right; "bin <= 1, missing
    right" puts {0,1}=(3,4) left and {2,M}=(-2,5) right: the same two sides
    swapped, so exactly the same gain, and it is the best split. The lowest
    bin (0, missing left) must win; the kernel scans all missing-right bins
    before any missing-left bin and returns (1, missing right).
    """
    missing_bin = 3
    hist = np.zeros((1, 4), dtype=HISTOGRAM_DTYPE)
    for b, (g, h) in enumerate([(-1.0, 3.0), (4.0, 1.0), (-1.0, 3.0), (-1.0, 2.0)]):
        hist[0, b] = (g, h, int(h))
    nbnm = np.array([3], dtype=np.uint32)
    G, H, N = 1.0, 9.0, 9
    ref = reference_split(hist, nbnm, G, H, N, 0.0, 0.0, 0.0, 1, missing_bin)
    assert (ref["bin_idx"], ref["missing_go_to_left"]) == (0, 1)
    s = call_kernel(hist, nbnm, G, H, N, missing_bin, 0.0, 0.0, 0.0, 1)
    np.testing.assert_allclose(s["gain"], ref["gain"], rtol=1e-12)
    assert (s["bin_idx"], s["missing_go_to_left"]) == (0, 1)


@pytest.mark.parametrize("seed", range(3))
def test_threads_identical_on_parallel_path(seed):
    # 40 features x 256 bins = 10240 >= 8192: the parallel scan is used
    hist, nbnm, G, H, N, missing_bin = random_node(200 + seed, n_samples=2000,
                                                   n_features=40, max_bins=255,
                                                   nan_rate=0.05)
    for l2, gamma, mcw, msl in [(0.0, 0.0, 1e-3, 20), (1.0, 0.2, 1.0, 5)]:
        s1 = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl, 1)
        s2 = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl, 2)
        assert s1.tobytes() == s2.tobytes()
        ref = reference_split(hist, nbnm, G, H, N, l2, gamma, mcw, msl, missing_bin)
        assert_matches(s1, ref, hist, missing_bin)


@pytest.mark.parametrize("l1", [0.5, 3.0, 50.0])
@pytest.mark.parametrize("seed", range(4))
def test_l1_regularization_matches_reference(l1, seed):
    hist, nbnm, G, H, N, missing_bin = random_node(seed, nan_rate=0.15)
    ref = reference_split(hist, nbnm, G, H, N, 0.5, 0.0, 1e-3, 5, missing_bin, l1=l1)
    split = call_kernel(hist, nbnm, G, H, N, missing_bin, 0.5, 0.0, 1e-3, 5, l1=l1)
    assert_matches(split, ref, hist, missing_bin)


@pytest.mark.parametrize("seed", range(4))
def test_feature_mask_restricts_candidates(seed):
    hist, nbnm, G, H, N, missing_bin = random_node(seed, nan_rate=0.15)
    unmasked = call_kernel(hist, nbnm, G, H, N, missing_bin, 0.0, 0.0, 1e-3, 5)
    mask = np.ones(hist.shape[0], dtype=np.uint8)
    mask[int(unmasked["feature_idx"])] = 0  # forbid the best feature
    ref = reference_split(hist, nbnm, G, H, N, 0.0, 0.0, 1e-3, 5, missing_bin,
                          feature_mask=mask)
    split = call_kernel(hist, nbnm, G, H, N, missing_bin, 0.0, 0.0, 1e-3, 5,
                        feature_mask=mask)
    assert_matches(split, ref, hist, missing_bin)
    assert split["feature_idx"] != unmasked["feature_idx"]
    none = call_kernel(hist, nbnm, G, H, N, missing_bin, 0.0, 0.0, 1e-3, 5,
                       feature_mask=np.zeros(hist.shape[0], dtype=np.uint8))
    assert none["feature_idx"] == -1


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("nan_rate", [0.0, 0.15])
def test_plain_scan_equals_general_scan(seed, nan_rate):
    # Without L1 or constraints and with min_child_weight > 0 the scan skips
    # their tests; an L1 of the smallest double soft-thresholds nothing
    # (|G| - 5e-324 rounds to |G|) but takes the general path: the same
    # split, bit for bit.
    hist, nbnm, G, H, N, missing_bin = random_node(300 + seed, n_samples=3000,
                                                   n_features=8, max_bins=64,
                                                   nan_rate=nan_rate)
    for l2, gamma, mcw, msl in [(0.0, 0.0, 1e-3, 20), (1.0, 0.2, 1.0, 5),
                                (0.0, 0.0, 1e-9, 1)]:
        plain = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl)
        general = call_kernel(hist, nbnm, G, H, N, missing_bin, l2, gamma, mcw, msl,
                              l1=5e-324)
        assert plain["feature_idx"] >= 0
        assert plain.tobytes() == general.tobytes()
