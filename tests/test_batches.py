"""Dataset.from_batches (issue 41): bins from a sketch over batches, the model
of in-memory training on the same bins, bit for bit."""
import gc
import weakref

import numpy as np
import pytest

import hgbt
from hgbt import Dataset, HistGBDTClassifier, HistGBDTRegressor
from hgbt.data.batches import RAW_ROWS_HINT, ParquetBatches
from hgbt.data.binning import BinMapper
from hgbt.data.dataset import Binned, plain_bins
from fitted import all_trees, baseline_prediction, bin_mapper

pd = pytest.importorskip("pandas")

FIT = dict(max_iter=15, max_leaf_nodes=15, early_stopping=False, random_state=0, n_threads=2)


def assert_same_model(a, b):
    ta, tb = all_trees(a), all_trees(b)
    assert len(ta) == len(tb) > 0
    for x, y in zip(ta, tb):
        for name in x.nodes.dtype.names:  # NaN thresholds of categorical nodes equal
            np.testing.assert_array_equal(x.nodes[name], y.nodes[name], err_msg=name)
        np.testing.assert_array_equal(getattr(x, "cat_bitsets", None),
                                      getattr(y, "cat_bitsets", None))
    np.testing.assert_array_equal(baseline_prediction(a), baseline_prediction(b))


def assert_same_thresholds(a, b):
    ma, mb = (m if isinstance(m, BinMapper) else bin_mapper(m) for m in (a, b))
    assert len(ma.bin_thresholds_) == len(mb.bin_thresholds_)
    for x, y in zip(ma.bin_thresholds_, mb.bin_thresholds_):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(ma.n_bins_non_missing_, mb.n_bins_non_missing_)


def cuts(n, sizes):
    """Row ranges of batches of the given sizes (the last takes the rest)."""
    bounds = np.cumsum([0] + list(sizes))
    bounds = np.append(bounds[bounds < n], n)
    return list(zip(bounds[:-1], bounds[1:]))


def regression(n=6000, p=6, decimals=2, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, p)), decimals).astype(dtype)
    X[rng.random(X.shape) < 0.05] = np.nan
    clean = np.nan_to_num(X)
    y = 2 * clean[:, 0] - clean[:, 1] ** 2 + np.sin(3 * clean[:, 2]) + rng.normal(0, .3, n)
    return X, y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("sizes", [[6000], [1000, 500, 2500], [1] + [777] * 10])
def test_few_distinct_values_give_the_in_memory_bins_and_model(dtype, sizes):
    X, y = regression(dtype=dtype)
    batches = [(X[a:b], y[a:b]) for a, b in cuts(len(X), sizes)]
    ds = Dataset.from_batches(batches)
    assert ds.is_constructed and ds.n_rows == len(X)
    got = HistGBDTRegressor(**FIT).fit(ds)
    expected = HistGBDTRegressor(**FIT).fit(X, y)
    assert_same_thresholds(got, expected)
    assert_same_model(got, expected)
    np.testing.assert_array_equal(got.predict(X), expected.predict(X))


def in_memory_on(mapper, X, y, weight=None, key=("regression",)):
    """An in-memory Dataset binned by ``mapper`` (the same boundaries)."""
    ds = Dataset(X, y, weight=weight)
    ds.binned = Binned(ds.X, plain_bins(ds.X, mapper, 1), mapper, None)
    ds.binned_for = key
    return ds


def test_many_distinct_values_keep_the_model_of_the_same_bins_and_rank_error():
    # continuous columns: past the sketch's 4,096 entries
    rng = np.random.default_rng(1)
    n = 30_000
    X = np.column_stack([rng.normal(size=n), rng.lognormal(size=n), rng.random(n)])
    y = X[:, 0] + np.log(X[:, 1]) * X[:, 2] + rng.normal(0, .2, n)
    ds = Dataset.from_batches([(X[a:b], y[a:b]) for a, b in cuts(n, [3000] * 10)])
    got = HistGBDTRegressor(**FIT).fit(ds)
    mapper = got.booster_.bin_mapper
    same_bins = HistGBDTRegressor(**FIT).fit(in_memory_on(mapper, X, y))
    assert_same_model(got, same_bins)
    # the cuts are as near the quantiles k / 255 as in-memory binning's, to
    # within the sketch's rank error (8 / capacity, tests/test_sketch.py)
    exact = BinMapper(subsample=None).fit(X)
    quantiles = np.arange(1, 255) / 255
    for f in range(X.shape[1]):
        t_got, t_exact = mapper.bin_thresholds_[f], exact.bin_thresholds_[f]
        assert t_got.size == t_exact.size == 254
        column = np.sort(X[:, f])
        off = np.abs(np.searchsorted(column, t_got, side="right") / n - quantiles)
        off_exact = np.abs(np.searchsorted(column, t_exact, side="right") / n - quantiles)
        assert off.max() <= off_exact.max() + 8 / 4096


def test_weights_across_batches():
    X, y = regression(n=5000)
    w = np.random.default_rng(2).uniform(0.1, 3, len(X))
    batches = [(X[a:b], y[a:b], w[a:b]) for a, b in cuts(len(X), [1200, 800, 3000])]
    ds = Dataset.from_batches(batches)
    np.testing.assert_array_equal(ds.weight, w)
    got = HistGBDTRegressor(**FIT).fit(ds)
    same_bins = HistGBDTRegressor(**FIT).fit(
        in_memory_on(got.booster_.bin_mapper, X, y, weight=w))
    assert_same_model(got, same_bins)
    # one batch: the in-memory weighted thresholds themselves
    one = HistGBDTRegressor(**FIT).fit(Dataset.from_batches([(X, y, w)]))
    assert_same_model(one, HistGBDTRegressor(**FIT).fit(X, y, sample_weight=w))


def frame(n, seed, levels="abcdefghij"):
    rng = np.random.default_rng(seed)
    color = rng.choice(list(levels), n)
    X = pd.DataFrame({
        "x": np.round(rng.normal(size=n), 2),
        "size": pd.Categorical(rng.choice(["S", "M", "L", "XL"], n),
                               categories=["XL", "L", "M", "S"]),
        "color": pd.Series(color, dtype=object),
        "z": rng.integers(0, 50, n).astype(float),
    })
    label = np.where(X["x"] + (X["size"] == "L") * 1.5 + (X["color"] == "c") > 0.5,
                     "yes", "no")
    return X.assign(label=label)


def test_categorical_frames_get_the_in_memory_encoding_and_model():
    # string levels differ across batches; the category dtype is shared
    parts = [frame(900, 0, "abcde"), frame(1500, 1, "cdefgh"), frame(600, 2, "aij")]
    ds = Dataset.from_batches(parts, label="label")
    whole = pd.concat(parts, ignore_index=True)
    X, y = whole.drop(columns="label"), whole["label"].to_numpy()
    got = HistGBDTClassifier(**FIT).fit(ds)
    expected = HistGBDTClassifier(**FIT).fit(X, y)
    mine, theirs = got.booster_.categorical, expected.booster_.categorical
    np.testing.assert_array_equal(mine.mask, theirs.mask)
    for a, b in zip(mine.categories, theirs.categories):
        assert (a is None and b is None) or list(a) == list(b)
    assert list(mine.categories[1]) == ["XL", "L", "M", "S"]  # the dtype's order
    assert list(mine.categories[2]) == list("abcdefghij")      # sorted, all batches'
    assert_same_thresholds(got, expected)
    assert_same_model(got, expected)
    np.testing.assert_array_equal(got.predict_proba(X), expected.predict_proba(X))
    for part in parts:  # nothing the user passed in is modified
        assert "label" in part.columns and part["color"].dtype == object


def test_integer_coded_categorical_and_multiclass():
    rng = np.random.default_rng(3)
    n = 4000
    X = np.column_stack([rng.normal(size=n).round(2), rng.integers(0, 30, n)]).astype(float)
    y = (X[:, 1] % 3 + (X[:, 0] > 0)).astype(int)
    # the first batch lacks some codes the others hold
    X[:1000, 1] %= 10
    batches = [(X[a:b], y[a:b]) for a, b in cuts(n, [1000, 1000, 2000])]
    params = dict(FIT, categorical_features=[1])
    got = HistGBDTClassifier(**params).fit(Dataset.from_batches(batches,
                                                                categorical_features=[1]))
    expected = HistGBDTClassifier(**params).fit(X, y)
    np.testing.assert_array_equal(got.booster_.categorical.categories[1],
                                  expected.booster_.categorical.categories[1])
    assert_same_model(got, expected)


def test_polars_arrow_and_parquet_batches_give_the_pandas_model(tmp_path):
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(4)
    parts = []
    for i, n in enumerate([700, 1300, 1000]):
        parts.append(pd.DataFrame({"a": rng.normal(size=n).round(2), "b": rng.random(n).round(3),
                                   "w": rng.uniform(0.5, 2, n)}).assign(
            target=lambda d: d["a"] * 2 + d["b"]))
    expected = HistGBDTRegressor(**FIT).fit(
        Dataset.from_batches(parts, label="target", weight="w"))
    arrow = [pa.RecordBatch.from_pandas(p, preserve_index=False) for p in parts]
    polars = [pl.from_pandas(p) for p in parts]
    for i, p in enumerate(parts):
        pq.write_table(pa.Table.from_pandas(p, preserve_index=False),
                       tmp_path / f"part-{i:03d}.parquet")
    for batches in (Dataset.from_batches(arrow, label="target", weight="w"),
                    Dataset.from_batches(polars, label="target", weight="w"),
                    Dataset.from_batches(ParquetBatches(tmp_path, label="target", weight="w",
                                                        batch_size=400))):
        assert_same_model(HistGBDTRegressor(**FIT).fit(batches), expected)
    whole = pd.concat(parts, ignore_index=True)
    assert_same_model(expected, HistGBDTRegressor(**FIT).fit(
        whole[["a", "b"]], whole["target"], sample_weight=whole["w"]))


def test_validation_set_from_batches_and_early_stopping():
    X, y = regression(n=6000, seed=5)
    train = Dataset.from_batches([(X[a:b], y[a:b]) for a, b in cuts(4000, [1500, 2500])])
    valid = Dataset.from_batches([(X[4000 + a:4000 + b], y[4000 + a:4000 + b])
                                  for a, b in cuts(2000, [700, 1300])],
                                 reference=train)
    params = dict(FIT, max_iter=200, early_stopping=True, n_iter_no_change=3,
                  learning_rate=0.5)
    got = HistGBDTRegressor(**params).fit(train, X_val=valid)
    assert got.n_iter_ < 200
    mapper = got.booster_.bin_mapper
    in_memory = in_memory_on(mapper, X[:4000], y[:4000])
    expected = HistGBDTRegressor(**params).fit(
        in_memory, X_val=Dataset(X[4000:], y[4000:], reference=in_memory))
    assert_same_model(got, expected)
    booster = hgbt.train({k: v for k, v in FIT.items() if k != "max_iter"}, train,
                         num_boost_round=10)
    np.testing.assert_array_equal(booster.predict(X[:100]), HistGBDTRegressor(
        **dict(FIT, max_iter=10)).fit(train).predict(X[:100]))


def test_holds_one_batch_at_a_time():
    X, y = regression(n=4000)
    alive, most = set(), [0]

    def batches():
        for a, b in cuts(len(X), [500] * 8):
            batch = X[a:b].copy()
            key = id(batch)
            alive.add(key)
            weakref.finalize(batch, alive.discard, key)
            most[0] = max(most[0], len(alive))
            yield batch, y[a:b]
            del batch
            gc.collect()

    Dataset.from_batches(batches)
    assert most[0] <= 2  # the next batch made while the last is handed over


def test_errors():
    X, y = regression(n=1000)
    with pytest.raises(TypeError, match="read once"):
        Dataset.from_batches(iter([(X, y)]))
    with pytest.raises(TypeError, match="read once"):
        Dataset.from_batches((b for b in [(X, y)]))
    with pytest.raises(ValueError, match="no rows"):
        Dataset.from_batches([])
    with pytest.raises(ValueError, match="same columns"):
        Dataset.from_batches([(X, y), (X[:, :3], y)])
    with pytest.raises(ValueError, match="label"):
        Dataset.from_batches([(X, y), (X, None)])
    sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(TypeError, match="sparse"):
        Dataset.from_batches([(sparse.csr_matrix(np.nan_to_num(X)), y)])
    with pytest.raises(ValueError, match="no column 'target'"):
        Dataset.from_batches([pd.DataFrame(X)], label="target")
    with pytest.raises(TypeError, match="tuples"):
        Dataset.from_batches([X], label="target")
    many = pd.DataFrame({"c": pd.Series([f"v{i}" for i in range(300)]), "x": range(300)})
    with pytest.raises(ValueError, match="255 categories"):
        Dataset.from_batches([(many, np.zeros(300))])
    halves = [pd.DataFrame({"c": [f"v{i}" for i in range(k, k + 200)], "x": range(200)})
              for k in (0, 200)]
    with pytest.raises(ValueError, match="400 categories"):
        Dataset.from_batches([(h, np.zeros(200)) for h in halves])
    typed = [pd.DataFrame({"c": pd.Categorical(["a", "b"]), "x": [1.0, 2.0]}),
             pd.DataFrame({"c": [1.0, 2.0], "x": [1.0, 2.0]})]
    with pytest.raises(ValueError, match="categorical here but numeric|numeric here but"):
        Dataset.from_batches([(t, np.zeros(2)) for t in typed])
    calls = [0]

    def shrinking():
        calls[0] += 1
        return iter([(X, y)] if calls[0] == 1 else [(X[:10], y[:10])])

    with pytest.raises(ValueError, match="changed between the two passes"):
        Dataset.from_batches(shrinking)
    ds = Dataset.from_batches([(X, y)])
    with pytest.raises(ValueError, match="hold-out"):
        HistGBDTRegressor(early_stopping=True).fit(ds)
    with pytest.raises(ValueError, match="keeps its rows binned"):
        ds.subset(np.arange(10))
    other = HistGBDTRegressor(**FIT).fit(X, y)
    with pytest.raises(ValueError, match="built from batches"):
        other.set_params(warm_start=True, max_iter=20).fit(ds)
    assert RAW_ROWS_HINT.startswith("A Dataset built from batches")


def test_bundling_parameters_do_not_apply():
    X, y = regression(n=1000)
    ds = Dataset.from_batches([(X, y)])
    model = HistGBDTRegressor(**dict(FIT, enable_bundle=False)).fit(ds)
    assert model.n_iter_ == FIT["max_iter"]
    with pytest.raises(ValueError, match="max_bins"):
        HistGBDTRegressor(**dict(FIT, max_bins=63)).fit(ds)
