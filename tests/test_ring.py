"""The collective layer (hgbt/core/collective.py) and the workers' TCP ring
(hgbt/dask/_ring.py): all-reduce and all-gather against NumPy sums, trees
grown on shards over a ring against the tree of all rows, and failures that
end in a clear error instead of a hang. Processes are threads here, each with
its own sockets, as the Dask workers are (tests/test_dask.py runs real ones)."""
import socket
import threading
import time

import numpy as np
import pytest

from hgbt.core._types import HISTOGRAM_DTYPE
from hgbt.core.collective import SINGLE_PROCESS, Collective, allreduce_max, allreduce_sum_int
from hgbt.dask._halving import join_halving, peers
from hgbt.dask._ring import RingError, join_ring, listen
from hgbt.data.binning import BinMapper
from hgbt.tree.grower import TreeGrower, TreeSettings
from hgbt.tree.training_data import LocalTrainingData


def ring_of(size, timeout=10.0, join=join_ring):
    servers = [listen("127.0.0.1") for _ in range(size)]
    addresses = [("127.0.0.1", port) for _, port in servers]
    return run_all(size, lambda rank: join(rank, addresses, servers[rank][0], 7, timeout))


def halving_of(size, timeout=10.0):
    """Collectives of ``size`` processes by recursive halving and doubling."""
    return ring_of(size, timeout, join_halving)


def run_all(size, task):
    """``[task(rank) for rank in range(size)]``, each in its own thread, errors kept."""
    out = [None] * size

    def run(rank):
        try:
            out[rank] = task(rank)
        except BaseException as exc:  # returned, for the test to look at
            out[rank] = exc

    threads = [threading.Thread(target=run, args=(rank,)) for rank in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def random_histograms(size, shape, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(size):
        h = np.zeros(shape, dtype=HISTOGRAM_DTYPE)
        h["sum_gradients"] = rng.integers(-2**20, 2**20, shape) / 2**10  # on a grid
        h["sum_hessians"] = rng.integers(0, 2**20, shape) / 2**12
        h["count"] = rng.integers(0, 1000, shape)
        out.append(h)
    return out


def test_single_process_is_the_identity():
    assert isinstance(SINGLE_PROCESS, Collective)
    h = random_histograms(1, (3, 4), 0)[0]
    before = h.copy()
    SINGLE_PROCESS.allreduce_histogram(h)
    assert h.tobytes() == before.tobytes()
    assert SINGLE_PROCESS.allgather("x") == ["x"]
    assert allreduce_sum_int(SINGLE_PROCESS, 5) == 5


@pytest.mark.parametrize("size", [2, 3, 4, 5])
@pytest.mark.parametrize("shape", [(28, 256), (1, 3), (2, 1)])  # (1, 3), (2, 1): empty chunks
def test_ring_allreduce_is_the_sum_on_every_rank(size, shape):
    rings = ring_of(size)
    assert all(isinstance(r, Collective) for r in rings)
    parts = random_histograms(size, shape, size)
    total = np.zeros(shape, dtype=HISTOGRAM_DTYPE)
    for name in HISTOGRAM_DTYPE.names:
        total[name] = sum(p[name] for p in parts)

    def reduce(rank):
        out = []
        for _ in range(3):  # repeated calls reuse the scratch buffer
            h = parts[rank].copy()
            rings[rank].allreduce_histogram(h)
            out.append(h)
        sent = rings[rank].bytes_sent
        gathered = rings[rank].allgather({"rank": rank, "big": np.arange(rank * 1000)})
        return out, sent, gathered, allreduce_max(rings[rank], [rank, -rank]), \
            allreduce_sum_int(rings[rank], rank)

    results = run_all(size, reduce)
    # each rank sends 2 (p - 1) / p of a histogram, up to the chunks' rounding
    per_histogram = 2 * (size - 1) / size * total.nbytes
    for rank, (out, sent, gathered, maximum, total_int) in enumerate(results):
        assert abs(sent / 3 - per_histogram) <= 2 * size * HISTOGRAM_DTYPE.itemsize
        for h in out:
            assert h.tobytes() == total.tobytes()
        assert [g["rank"] for g in gathered] == list(range(size))
        assert all(g["big"].shape == (r * 1000,) for r, g in enumerate(gathered))
        np.testing.assert_array_equal(maximum, [size - 1, 0])
        assert total_int == size * (size - 1) // 2
    assert all(ring.n_histograms == 3 for ring in rings)


@pytest.mark.parametrize("size", [2, 3, 4])
@pytest.mark.parametrize("n_columns", [7, 2])  # 2 < 3, 4: some ranks own no column
def test_reduce_scatter_sums_each_ranks_block(size, n_columns):
    rings = ring_of(size)
    parts = random_histograms(size, (n_columns, 16), n_columns)
    total = np.zeros((n_columns, 16), dtype=HISTOGRAM_DTYPE)
    for name in HISTOGRAM_DTYPE.names:
        total[name] = sum(p[name] for p in parts)

    def scatter(rank):
        h = parts[rank].copy()
        block = rings[rank].reduce_scatter_histogram(h)
        return h, block, rings[rank].allgather_bytes(bytes([rank]) * 5)

    blocks = []
    for rank, (h, (start, stop), gathered) in enumerate(run_all(size, scatter)):
        assert h[start:stop].tobytes() == total[start:stop].tobytes()
        blocks.append((start, stop))
        assert gathered == [bytes([r]) * 5 for r in range(size)]
    # contiguous blocks, ascending with the rank, covering every column once
    assert blocks[0][0] == 0 and blocks[-1][1] == n_columns
    assert all(a[1] == b[0] for a, b in zip(blocks[:-1], blocks[1:]))
    assert SINGLE_PROCESS.reduce_scatter_histogram(parts[0]) == (0, n_columns)


@pytest.mark.parametrize("size", [2, 3, 4, 5, 6, 7, 8])
def test_log_step_collectives_sum_and_gather_as_the_ring(size):
    # recursive halving and doubling among the largest power of two of the
    # ranks, the others through a partner: the ring's sums, blocks and gathers
    assert all(rank in peers(other, size) for rank in range(size)
               for other in peers(rank, size))
    groups = halving_of(size)
    n_columns = 7
    parts = random_histograms(size, (n_columns, 16), size)
    total = np.zeros((n_columns, 16), dtype=HISTOGRAM_DTYPE)
    for name in HISTOGRAM_DTYPE.names:
        total[name] = sum(p[name] for p in parts)

    def run(rank):
        group = groups[rank]
        whole, block = parts[rank].copy(), parts[rank].copy()
        group.allreduce_histogram(whole)
        span = group.reduce_scatter_histogram(block)
        return (whole, block, span, group.allgather_bytes(bytes([rank]) * 3),
                group.allgather({"rank": rank, "pad": "x" * rank}))

    for rank, out in enumerate(run_all(size, run)):
        assert not isinstance(out, BaseException), out
        whole, block, (start, stop), gathered, values = out
        assert whole.tobytes() == total.tobytes()
        assert (start, stop) == (n_columns * rank // size, n_columns * (rank + 1) // size)
        assert block[start:stop].tobytes() == total[start:stop].tobytes()
        assert gathered == [bytes([r]) * 3 for r in range(size)]
        assert values == [{"rank": r, "pad": "x" * r} for r in range(size)]
    # the steps: 2 + log2(hosts) at most, against the ring's size - 1
    assert all(len(group._halving_steps()) <= 3 for group in groups)


def test_log_step_processes_grow_the_tree_of_all_rows():
    rng = np.random.default_rng(4)
    n = 3000
    X = rng.standard_normal((n, 5))
    y = X[:, 0] - 2 * X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    mapper = BinMapper(max_bins=63, random_state=0).fit(X)
    X_binned = mapper.transform(X)
    g = (-y).astype(np.float32)
    settings = TreeSettings(max_leaf_nodes=15, min_samples_leaf=5, learning_rate=1.0)

    def grow(rows, collective):
        data = LocalTrainingData(np.asfortranarray(X_binned[rows]), mapper.missing_bin + 1,
                                 1, collective)
        data.use_gradients(g[rows].copy(), np.ones(1, np.float32), constant_hessian=True)
        data.start_tree(0)
        return TreeGrower(data, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                          settings, n_threads=1).grow().nodes

    whole = grow(np.arange(n), SINGLE_PROCESS)
    shards = np.array_split(np.arange(n), 5)
    groups = halving_of(5)
    for tree in run_all(5, lambda rank: grow(shards[rank], groups[rank])):
        assert not isinstance(tree, BaseException), tree
        assert tree.tobytes() == whole.tobytes()


def test_a_ring_grows_the_tree_of_all_rows():
    # Three shards of uneven size (one empty) grow, over a ring, the tree a
    # single process grows on all rows, bit for bit (each searching its block
    # of the 5 features below the root, the best split elected)
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.standard_normal((n, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) - 2 * np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.standard_normal(n)
    mapper = BinMapper(max_bins=63, random_state=0).fit(X)
    X_binned = mapper.transform(X)
    g = (-y).astype(np.float32)
    h = np.ones(1, dtype=np.float32)
    settings = TreeSettings(max_leaf_nodes=15, min_samples_leaf=5, learning_rate=1.0)

    def grow(rows, collective):
        data = LocalTrainingData(np.asfortranarray(X_binned[rows]), mapper.missing_bin + 1,
                                 1, collective)
        data.use_gradients(g[rows].copy(), h, constant_hessian=True)
        data.start_tree(0)
        grower = TreeGrower(data, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                            settings, n_threads=1)
        return grower.grow().nodes

    whole = grow(np.arange(n), SINGLE_PROCESS)
    assert whole.shape[0] == 2 * 15 - 1
    shards = [np.arange(0, 1700), np.arange(1700, 1700), np.arange(1700, n)]
    rings = ring_of(3)
    trees = run_all(3, lambda rank: grow(shards[rank], rings[rank]))
    for tree in trees:
        assert not isinstance(tree, BaseException), tree
        for field in ("feature_idx", "bin_threshold", "missing_go_to_left", "value",
                      "count", "gain"):
            np.testing.assert_array_equal(tree[field], whole[field])


@pytest.mark.parametrize("size", [2, 3, 5])
@pytest.mark.parametrize("quantized", [False, True])
def test_feature_parallel_processes_grow_the_tree_of_one(size, quantized):
    # Every process holds all rows and builds and searches only its block of
    # the 5 features; every split is elected: the single process's tree (5
    # processes: one feature each)
    rng = np.random.default_rng(2)
    n = 2500
    X = rng.standard_normal((n, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 3]) * 2 + np.nan_to_num(X[:, 4]) ** 2 + 0.1 * rng.standard_normal(n)
    mapper = BinMapper(max_bins=63, random_state=0).fit(X)
    X_binned = np.asfortranarray(mapper.transform(X))
    g = (-y).astype(np.float32)
    h = np.ones(1, dtype=np.float32)
    settings = TreeSettings(max_leaf_nodes=15, min_samples_leaf=5, learning_rate=1.0)

    def grow(feature_collective):
        data = LocalTrainingData(X_binned, mapper.missing_bin + 1, 1,
                                 feature_collective=feature_collective)
        data.use_gradients(g.copy(), h, constant_hessian=True)
        data.start_tree(0, quantize=(16, 3) if quantized else None)
        grower = TreeGrower(data, mapper.bin_thresholds_, mapper.n_bins_non_missing_,
                            settings, n_threads=1)
        return grower.grow().nodes

    whole = grow(None)
    rings = ring_of(size)
    for tree in run_all(size, lambda rank: grow(rings[rank])):
        assert not isinstance(tree, BaseException), tree
        for field in ("feature_idx", "bin_threshold", "missing_go_to_left", "value",
                      "count", "gain"):
            np.testing.assert_array_equal(tree[field], whole[field])
    # nothing reduced: only the elections' split records went around
    assert all(ring.n_histograms == 0 for ring in rings)


def _voting_data(n=4000, n_features=12, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = (2 * np.nan_to_num(X[:, 0]) + np.sin(3 * np.nan_to_num(X[:, 1]))
         + np.nan_to_num(X[:, 2]) * np.nan_to_num(X[:, 3]) + 0.3 * rng.standard_normal(n))
    mapper = BinMapper(max_bins=63, random_state=0).fit(X)
    return np.asfortranarray(mapper.transform(X)), (-y).astype(np.float32), mapper


def _grow_voting(X_binned, g, mapper, rows, collective=SINGLE_PROCESS, top_k=0):
    data = LocalTrainingData(np.asfortranarray(X_binned[rows]), mapper.missing_bin + 1, 1,
                             collective, voting_top_k=top_k)
    data.use_gradients(g[rows].copy(), np.ones(1, dtype=np.float32), constant_hessian=True)
    data.start_tree(0)
    settings = TreeSettings(max_leaf_nodes=15, min_samples_leaf=10, learning_rate=1.0)
    return TreeGrower(data, mapper.bin_thresholds_, mapper.n_bins_non_missing_, settings,
                      n_threads=1).grow().nodes


def test_voting_with_every_feature_chosen_is_the_tree_of_all_rows():
    # 2 * top_k >= n_features: every feature's histogram is summed, the exact search
    X_binned, g, mapper = _voting_data()
    n = X_binned.shape[0]
    whole = _grow_voting(X_binned, g, mapper, np.arange(n))
    shards = [np.arange(0, 1500), np.arange(1500, n)]
    rings = ring_of(2)
    for tree in run_all(2, lambda r: _grow_voting(X_binned, g, mapper, shards[r], rings[r],
                                                  top_k=6)):
        assert not isinstance(tree, BaseException), tree
        for field in ("feature_idx", "bin_threshold", "value", "count", "gain"):
            np.testing.assert_array_equal(tree[field], whole[field])


@pytest.mark.parametrize("size", [2, 3])
def test_voting_reduces_only_the_nominated_features(size):
    # top_k=2 of 12 features: each node sums 4 features' histograms. The trees
    # agree on every process, split on the informative features, and nearly
    # match the exact tree's gains; the bytes are a third of a full reduction
    X_binned, g, mapper = _voting_data()
    n = X_binned.shape[0]
    whole = _grow_voting(X_binned, g, mapper, np.arange(n))
    shards = np.array_split(np.arange(n), size)
    rings = ring_of(size)
    trees = run_all(size, lambda r: _grow_voting(X_binned, g, mapper, shards[r], rings[r],
                                                 top_k=2))
    for tree in trees:
        assert not isinstance(tree, BaseException), tree
        assert tree.tobytes() == trees[0].tobytes()
    tree = trees[0]
    used = set(tree["feature_idx"][tree["feature_idx"] >= 0].tolist())
    assert used <= {0, 1, 2, 3}
    assert tree["feature_idx"][0] == whole["feature_idx"][0]  # the root's split
    assert tree["gain"].sum() >= 0.97 * whole["gain"].sum()
    rows_summed = 2 * 2  # of 12 per node
    full = X_binned.shape[1] * (mapper.missing_bin + 1) * HISTOGRAM_DTYPE.itemsize
    per_node = rings[0].bytes_sent / rings[0].n_histograms
    assert per_node < (rows_summed + 1) / 12 * full * 2


@pytest.mark.parametrize("tied", [False, True])
def test_goss_on_shards_picks_the_rows_of_goss_on_all_rows(tied):
    # The top rows are selected over all shards (a radix selection on the
    # scores' bits, counts summed over the ring), ties by each row's key,
    # the other rows by each row's draw: the rows and re-weighted gradients
    # of one process, shard by shard
    from hgbt.engine.sampling import RowSampler

    n = 3000
    rng = np.random.default_rng(1)
    g = rng.standard_normal((2, n)).astype(np.float32)
    if tied:  # many equal scores: the threshold falls inside a tie
        g = np.round(g).astype(np.float32)
    h = np.ones((2, n), dtype=np.float32)
    sampler = RowSampler("goss", 1.0, 0.2, 0.1, n, np.random.default_rng(0))
    sampler.start_round(np.random.default_rng(0), seed=5, iteration=2)
    g_all, h_all = g.copy(), h.copy()
    whole = sampler.sample(g_all, h_all)
    ids = np.arange(n, dtype=np.int64)
    shards = [ids[:1000], ids[1000:1000], ids[1000:2500], ids[2500:]]
    rings = ring_of(len(shards))

    def draw(rank):
        rows = shards[rank]
        gs, hs = g[:, rows].copy(), h[:, rows].copy()
        picked = sampler.sample(gs, hs, row_ids=rows, collective=rings[rank])
        return rows[picked], gs, hs

    parts = run_all(len(shards), draw)
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), whole)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts], axis=1), g_all)
    np.testing.assert_array_equal(np.concatenate([p[2] for p in parts], axis=1), h_all)
    assert whole.size >= sampler.n_top


@pytest.mark.parametrize("join", [join_ring, join_halving])
def test_a_lost_peer_fails_the_others_at_once(join):
    rings = ring_of(3, timeout=30.0, join=join)

    def reduce(rank):
        if rank == 1:
            rings[rank].close()  # as a worker that died: its sockets close
            return None
        start = time.perf_counter()
        with pytest.raises(RingError, match="closed|lost"):
            for _ in range(10):
                rings[rank].allreduce_histogram(random_histograms(1, (28, 256), rank)[0])
        return time.perf_counter() - start

    seconds = run_all(3, reduce)
    assert all(s is None or (not isinstance(s, BaseException) and s < 5) for s in seconds), \
        seconds
    # a closed ring refuses further calls, and says why
    with pytest.raises(RingError, match="closed"):
        rings[0].allgather(1)


def test_a_silent_peer_ends_in_a_timeout():
    rings = ring_of(2, timeout=0.5)

    def reduce(rank):
        if rank == 1:
            time.sleep(1.5)  # alive but never answering in time
            return None
        with pytest.raises(RingError, match="timeout=0.5"):
            rings[rank].allgather("hello")
        return True

    assert run_all(2, reduce)[0] is True
    for ring in rings:
        ring.close()


def test_strangers_are_turned_away_and_a_missing_peer_is_reported():
    servers = [listen("127.0.0.1") for _ in range(2)]
    addresses = [("127.0.0.1", port) for _, port in servers]
    # something else connects first to rank 1, and says nothing useful
    stranger = socket.create_connection(addresses[1])
    stranger.sendall(b"GET / HTTP/1.0\r\n\r\n")
    rings = run_all(2, lambda rank: join_ring(rank, addresses, servers[rank][0], 99, 10.0))
    stranger.close()
    assert run_all(2, lambda rank: rings[rank].allgather(rank)) == [[0, 1], [0, 1]]
    # a peer that never comes
    server, port = listen("127.0.0.1")
    lonely, _ = listen("127.0.0.1")
    with pytest.raises(RingError, match="did not connect in time"):
        join_ring(0, [("127.0.0.1", port), ("127.0.0.1", lonely.getsockname()[1])],
                  server, 1, 0.5)
    lonely.close()
