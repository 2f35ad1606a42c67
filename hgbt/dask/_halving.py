"""Log-step collectives for larger clusters: recursive halving and doubling.

Around a ring (:mod:`hgbt.dask._ring`) a reduction takes ``size - 1`` steps,
each waiting a network latency: at 100 machines the steps, not the bytes,
dominate (``benchmarks/RESULTS.md``, the model of a 100-machine fit). Here
the ``q`` (the largest power of two ``<= size``) "host" ranks reduce in
``log2 q`` steps instead: in step ``k`` each exchanges half of what it still
sums with the partner whose rank differs in one bit (recursive halving), and
gathers back in the reverse order (recursive doubling). Each of the other
``size - q`` ranks pairs with a host (``rank - q``): it hands its histogram
over first and gets its share back last. A worker sends about as many bytes as
around the ring, in ``2 + log2 q`` steps rather than ``size - 1``.

The sums and blocks are those of the ring: rank ``r`` ends with the sums of
``feature_block(n, r, size)``; gradients on an exact grid make the order of
the additions irrelevant, so the trees do not depend on the topology.
"""
import pickle
import time

import numpy as np

from ..core.collective import feature_block
from ._ring import _HELLO, RingCollective, _add_into, _connect, accept_ranks


#: the group size from which a fit's workers reduce in log steps, not a ring
#: (below it the ring's steps are as few, with fewer connections)
MIN_SIZE = 8


def host_count(size):
    """The hosts of a log-step group of ``size``: the largest power of two <= size."""
    return 1 << (size.bit_length() - 1)


def peers(rank, size):
    """The ranks ``rank`` exchanges with: its halving partners and its extra
    rank (a host), or its host (an extra rank)."""
    q = host_count(size)
    if rank >= q:
        return [rank - q]
    out = [rank ^ (1 << k) for k in range(q.bit_length() - 1)]
    return out + ([rank + q] if rank + q < size else [])


def join_halving(rank, addresses, server, token, timeout):
    """This process's :class:`HalvingCollective`: a connection to each of its
    :func:`peers`, the higher rank of a pair connecting to the lower."""
    size = len(addresses)
    deadline = time.monotonic() + timeout
    sockets = {}
    try:
        for other in peers(rank, size):
            if other < rank:
                sock = _connect(addresses[other], deadline)
                sockets[other] = sock
                sock.sendall(_HELLO.pack(token, rank))
        accept_ranks(server, token, {o for o in peers(rank, size) if o > rank}, deadline,
                     sockets)
    except BaseException:
        for sock in sockets.values():
            sock.close()
        raise
    finally:
        server.close()
    return HalvingCollective(rank, size, sockets, timeout)


class HalvingCollective(RingCollective):
    """The :class:`~hgbt.core.collective.Collective` of ``size`` processes by
    recursive halving and doubling (see the module); ``sockets``: rank ->
    the connection to each of :func:`peers`."""

    def __init__(self, rank, size, sockets, timeout):
        first = next(iter(sockets.values()))
        super().__init__(rank, size, first, first, timeout)
        self._peer = sockets
        self._sockets = list(sockets.values())
        for sock in self._sockets:
            sock.setblocking(False)
        self._q = host_count(size)

    # -- the shape of the exchanges
    def _ranks_of(self, lo, hi):
        """The ranks whose blocks hosts ``lo .. hi - 1`` hold: each host's own
        and its extra's."""
        q, p = self._q, self.size
        return [r for v in range(lo, hi) for r in (v, v + q) if r < p]

    def _halving_steps(self):
        """``(partner, kept, sent)`` per step of the halving, ranges of hosts."""
        lo, hi, v, steps = 0, self._q, self.rank, []
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if v < mid:
                steps.append((v + mid - lo, (lo, mid), (mid, hi)))
                hi = mid
            else:
                steps.append((v - (mid - lo), (mid, hi), (lo, mid)))
                lo = mid
        return steps

    def _swap(self, partner, out, into):
        sock = self._peer[partner]
        self._exchange(memoryview(out), memoryview(into), sock, sock)

    # -- reductions
    def _trade(self, partner, out_parts, into_parts, add):
        """Send ``out_parts`` (flat views) to ``partner`` while receiving its
        pieces for ``into_parts``, added into them (``add``) or copied."""
        out = np.concatenate(out_parts).view(np.uint8) if out_parts else b""
        got = (np.empty(sum(p.shape[0] for p in into_parts), dtype=into_parts[0].dtype)
               if into_parts else None)
        self._swap(partner, out, bytearray(0) if got is None else got.view(np.uint8))
        offset = 0
        for piece in into_parts:
            received = got[offset:offset + piece.shape[0]]
            if add:
                _add_into(piece, received)
            else:
                piece[:] = received
            offset += piece.shape[0]

    def _reduce_blocks(self, part):
        """Sum ``part(r)`` (a flat view, rank ``r``'s block) over the
        processes into this rank's own ``part(rank)``; on a host also its
        extra's, which it then hands over."""
        q, rank = self._q, self.rank
        parts = [part(r) for r in range(self.size)]
        if rank >= q:  # hand everything to the host, get this block back
            self._trade(rank - q, parts, [], False)
            self._trade(rank - q, [], [parts[rank]], False)
        else:
            extra = rank + q if rank + q < self.size else None
            if extra is not None:
                self._trade(extra, [], parts, True)
            for partner, kept, sent in self._halving_steps():
                self._trade(partner, [parts[r] for r in self._ranks_of(*sent)],
                            [parts[r] for r in self._ranks_of(*kept)], True)
            if extra is not None:
                self._trade(extra, [parts[extra]], [], False)
        self.n_histograms += 1

    def _gather_blocks(self, part):
        """Every process's ``part(r)`` into every process (recursive doubling;
        each rank starts with its own summed block)."""
        q, rank = self._q, self.rank
        parts = [part(r) for r in range(self.size)]
        if rank >= q:
            self._trade(rank - q, [], parts, False)
            return
        for partner, kept, sent in reversed(self._halving_steps()):
            self._trade(partner, [parts[r] for r in self._ranks_of(*kept)],
                        [parts[r] for r in self._ranks_of(*sent)], False)
        if rank + q < self.size:
            self._trade(rank + q, parts, [], False)

    def allreduce_histogram(self, histogram):
        start = time.perf_counter()
        flat = histogram.reshape(-1)

        def part(r):
            return flat[slice(*feature_block(flat.shape[0], r, self.size))]

        self._reduce_blocks(part)
        self._gather_blocks(part)
        self.seconds += time.perf_counter() - start

    def reduce_scatter_histogram(self, histogram):
        start = time.perf_counter()
        n = histogram.shape[0]

        def part(r):
            return histogram[slice(*feature_block(n, r, self.size))].reshape(-1)

        self._reduce_blocks(part)
        self.seconds += time.perf_counter() - start
        return feature_block(n, self.rank, self.size)

    # -- gathers
    def _gather_items(self, items, lengths):
        """``items`` (rank -> bytes, this rank's) completed with every
        rank's, whose lengths are ``lengths``: recursive doubling among the
        hosts, the extras through their host."""
        q, rank = self._q, self.rank
        if rank >= q:
            self._swap(rank - q, items[rank], bytearray(0))
            got = bytearray(sum(lengths))
            self._swap(rank - q, b"", got)
            return _split(got, range(self.size), lengths)
        extra = rank + q if rank + q < self.size else None
        if extra is not None:
            got = bytearray(lengths[extra])
            self._swap(extra, b"", got)
            items[extra] = bytes(got)
        for partner, kept, sent in reversed(self._halving_steps()):
            mine, theirs = self._ranks_of(*kept), self._ranks_of(*sent)
            got = bytearray(sum(lengths[r] for r in theirs))
            self._swap(partner, b"".join(items[r] for r in mine), got)
            items.update(_split(got, theirs, lengths))
        if extra is not None:
            self._swap(extra, b"".join(items[r] for r in range(self.size)), bytearray(0))
        return items

    def allgather_bytes(self, data):
        start = time.perf_counter()
        data = bytes(data)
        items = self._gather_items({self.rank: data}, [len(data)] * self.size)
        self.seconds += time.perf_counter() - start
        return [items[r] for r in range(self.size)]

    def allgather(self, value):
        start = time.perf_counter()
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        sizes = self._gather_items({self.rank: np.int64(len(data)).tobytes()},
                                   [8] * self.size)
        lengths = [int(np.frombuffer(sizes[r], dtype=np.int64)[0]) for r in range(self.size)]
        items = self._gather_items({self.rank: data}, lengths)
        self.seconds += time.perf_counter() - start
        return [pickle.loads(items[r]) for r in range(self.size)]


def _split(data, ranks, lengths):
    out, offset = {}, 0
    for r in ranks:
        out[r] = bytes(data[offset:offset + lengths[r]])
        offset += lengths[r]
    return out
