"""partition_rows against a stable NumPy partition."""
import numpy as np
import pytest

from hgbt.tree._partition import partition_rows
from hgbt.core._types import SIZE_DTYPE

MISSING_BIN = 255


def make_binned(n_samples, n_features, seed, nan_rate=0.1, n_value_bins=40):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, n_value_bins, size=(n_samples, n_features)).astype(np.uint8)
    X[rng.random(X.shape) < nan_rate] = MISSING_BIN
    return rng, np.asfortranarray(X)


def reference(rows, col, bin_threshold, missing_go_to_left):
    codes = col[rows]
    left = np.where(codes == MISSING_BIN, bool(missing_go_to_left), codes <= bin_threshold)
    return rows[left], rows[~left]


def run(rows, X, f, b, mgl, n_threads, buffer_size=None):
    rows = np.array(rows, dtype=SIZE_DTYPE)
    buffer = np.empty(buffer_size or max(rows.size, 1), dtype=SIZE_DTYPE)
    n_left = partition_rows(rows, buffer, X, f, b, MISSING_BIN, mgl, n_threads)
    return n_left, rows


def check(rows_in, X, f, b, mgl, n_threads):
    rows_in = np.asarray(rows_in, dtype=SIZE_DTYPE)
    n_left, rows = run(rows_in, X, f, b, mgl, n_threads)
    exp_left, exp_right = reference(rows_in, X[:, f], b, mgl)
    assert n_left == exp_left.size
    np.testing.assert_array_equal(rows[:n_left], exp_left)   # stable on the left
    np.testing.assert_array_equal(rows[n_left:], exp_right)  # stable on the right
    np.testing.assert_array_equal(np.sort(rows), np.sort(rows_in))  # each row once
    return n_left, rows


@pytest.mark.parametrize("missing_go_to_left", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_matches_stable_reference(missing_go_to_left, seed):
    rng, X = make_binned(1000, 3, seed)
    for f in range(3):
        for b in (0, 5, 20, 39):
            rows = rng.permutation(1000)[: rng.integers(1, 1000)]  # unsorted subset
            check(rows, X, f, b, missing_go_to_left, 1)


def test_missing_direction_only_moves_missing_rows():
    rng, X = make_binned(500, 1, 3, nan_rate=0.3)
    rows = rng.permutation(500)
    n_r, rows_r = check(rows, X, 0, 10, False, 1)
    n_l, rows_l = check(rows, X, 0, 10, True, 1)
    n_missing = int(np.sum(X[:, 0] == MISSING_BIN))
    assert n_missing > 0 and n_l == n_r + n_missing
    left_l, left_r = X[rows_l[:n_l], 0], X[rows_r[:n_r], 0]
    assert np.sum(left_l == MISSING_BIN) == n_missing  # every missing row left
    assert np.all(left_r <= 10)                          # no missing row left
    # same non-missing rows on the left, in the same order
    np.testing.assert_array_equal(rows_l[:n_l][left_l != MISSING_BIN], rows_r[:n_r])


def test_empty_input():
    _, X = make_binned(10, 1, 4)
    rows = np.empty(0, dtype=SIZE_DTYPE)
    buffer = np.empty(1, dtype=SIZE_DTYPE)
    for n_threads in (1, 2):
        assert partition_rows(rows, buffer, X, 0, 3, MISSING_BIN, True, n_threads) == 0


def test_all_left_and_all_right():
    rng, X = make_binned(300, 1, 5, nan_rate=0.0, n_value_bins=10)
    rows = rng.permutation(300)
    n_left, out = check(rows, X, 0, 9, False, 1)  # every value bin <= 9
    assert n_left == 300
    np.testing.assert_array_equal(out, rows)
    X2 = X.copy(order="F")
    X2[:, 0] = np.maximum(X2[:, 0], 1)
    n_left, out = check(rows, X2, 0, 0, False, 1)  # nothing <= 0
    assert n_left == 0
    np.testing.assert_array_equal(out, rows)
    # all missing, both directions
    X3 = np.full((300, 1), MISSING_BIN, dtype=np.uint8, order="F")
    assert check(rows, X3, 0, 200, True, 1)[0] == 300
    assert check(rows, X3, 0, 200, False, 1)[0] == 0


def test_single_row_and_subslice_in_place():
    rng, X = make_binned(200, 2, 6)
    check([17], X, 0, 20, True, 1)
    # partition a slice of a bigger index array in place (as the grower does)
    all_rows = rng.permutation(200).astype(SIZE_DTYPE)
    before = all_rows.copy()
    buffer = np.empty(200, dtype=SIZE_DTYPE)
    sl = all_rows[50:150]
    n_left = partition_rows(sl, buffer, X, 1, 15, MISSING_BIN, False, 1)
    exp_left, exp_right = reference(before[50:150], X[:, 1], 15, False)
    assert n_left == exp_left.size
    np.testing.assert_array_equal(all_rows[50:50 + n_left], exp_left)
    np.testing.assert_array_equal(all_rows[50 + n_left:150], exp_right)
    np.testing.assert_array_equal(all_rows[:50], before[:50])
    np.testing.assert_array_equal(all_rows[150:], before[150:])


@pytest.mark.parametrize("n_samples", [100_000, 100_003, 40_000])
@pytest.mark.parametrize("missing_go_to_left", [False, True])
def test_large_multi_chunk_matches_single_thread(n_samples, missing_go_to_left):
    # >= 2 * 16384 rows: n_threads > 1 splits the work into chunks
    rng, X = make_binned(n_samples, 1, n_samples, nan_rate=0.05)
    rows_in = rng.permutation(n_samples).astype(SIZE_DTYPE)
    exp_left, exp_right = reference(rows_in, X[:, 0], 17, missing_go_to_left)
    results = {}
    for n_threads in (1, 2, 3):
        n_left, rows = run(rows_in, X, 0, 17, missing_go_to_left, n_threads)
        assert n_left == exp_left.size
        np.testing.assert_array_equal(rows[:n_left], exp_left)
        np.testing.assert_array_equal(rows[n_left:], exp_right)
        results[n_threads] = rows.tobytes()
    assert results[1] == results[2] == results[3]


def test_large_all_left_all_right_multi_chunk():
    n = 70_000
    rng, X = make_binned(n, 1, 7, nan_rate=0.0, n_value_bins=5)
    rows_in = rng.permutation(n).astype(SIZE_DTYPE)
    for b, expected in ((4, n), (0, None)):
        for n_threads in (1, 2):
            n_left, rows = run(rows_in, X, 0, b, False, n_threads)
            exp_left, exp_right = reference(rows_in, X[:, 0], b, False)
            assert n_left == exp_left.size
            if expected is not None:
                assert n_left == expected
            np.testing.assert_array_equal(rows, np.concatenate([exp_left, exp_right]))
