"""Worker-to-worker collectives over TCP: a ring of the Dask workers of a fit.

Each worker listens on a port of its host (:func:`listen`, IPv4), the driver
hands every worker the list of addresses in rank order, and each connects to
the next and accepts the previous (:func:`join_ring`). A root's histograms
are all-reduced around the ring (a reduce-scatter, then an all-gather: each
worker sends and receives ``2 (size - 1) / size`` of a histogram), any other
node's only reduce-scattered (``(size - 1) / size``, plus the election of its
split), whatever the number of workers: the driver is never on the per-node
path. The bytes are not encrypted (a Dask cluster's TLS does not cover them);
a fit token tells the fit's peers from anything else that connects.

Plain sockets from the standard library carry the bytes; Dask's own comms
were measured against them (``benchmarks/RESULTS.md``, "Worker-to-worker
collectives"). A peer that dies closes its sockets: the others fail at their
next exchange with :class:`ConnectionError`, and every wait is bounded by
the fit's ``timeout``.
"""
import pickle
import selectors
import socket
import struct
import time

import numpy as np

from ..core.collective import SINGLE_PROCESS, feature_block

_HELLO = struct.Struct("<QQ")  # the fit's token, the sender's rank
_LENGTH = struct.Struct("<Q")
# Socket buffers asked for (the kernel caps them): with its default 16 kB send
# buffer a 72 kB chunk went out in several sends with a wait between each
# (157 µs per all-reduce of a 28 × 256 histogram between two processes)
_BUFFER_BYTES = 4 << 20


class RingError(ConnectionError):
    """A peer of the ring was lost, sent something unexpected, or did not
    answer within the timeout."""


def listen(host=""):
    """A listening socket on ``host`` (all interfaces: ``""``) and a free port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _large_buffers(server)  # accepted sockets inherit them
    server.bind((host, 0))
    server.listen(8)
    return server, server.getsockname()[1]


def join_ring(rank, addresses, server, token, timeout):
    """This process's :class:`RingCollective` (``SINGLE_PROCESS`` alone).

    ``addresses``: ``(host, port)`` of every rank's ``server``; ``token``
    tells this fit's peers from anything else that connects. Closes ``server``.
    """
    size = len(addresses)
    try:
        if size == 1:
            return SINGLE_PROCESS
        deadline = time.monotonic() + timeout
        to_next = _connect(addresses[(rank + 1) % size], deadline)
        try:
            to_next.sendall(_HELLO.pack(token, rank))
            prev = (rank - 1) % size
            from_prev = accept_ranks(server, token, {prev}, deadline)[prev]
        except BaseException:
            to_next.close()
            raise
        return RingCollective(rank, size, to_next, from_prev, timeout)
    finally:
        server.close()


def _large_buffers(sock):
    for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, option, _BUFFER_BYTES)
        except OSError:  # a platform that refuses: its defaults still work
            pass


def _connect(address, deadline):
    while True:  # the peer may not be listening yet
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            _large_buffers(sock)  # before connecting: the window scale is agreed then
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            sock.connect(tuple(address))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        except OSError as exc:
            sock.close()
            if time.monotonic() > deadline:
                raise RingError(f"could not reach the next worker at {address}: "
                                f"{exc}") from exc
            time.sleep(0.05)


def accept_ranks(server, token, expected, deadline, into=None):
    """The connections of the ranks in ``expected`` (a set, emptied) as
    ``into`` (rank -> socket, a new dict by default), each known by its
    hello (this fit's ``token`` and its rank); anything else that connects
    is closed. RingError when the deadline passes first."""
    into = {} if into is None else into
    while expected:
        server.settimeout(max(0.0, deadline - time.monotonic()))
        try:
            sock, _ = server.accept()
        except OSError as exc:  # socket.timeout is an OSError
            raise RingError(f"worker(s) of rank {sorted(expected)} did not connect in "
                            "time") from exc
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            fit, other = _HELLO.unpack(_recv_exact(sock, _HELLO.size))
            if fit == token and other in expected:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                into[other] = sock
                expected.discard(other)
                continue
        except OSError:
            pass
        sock.close()  # not this fit's peer: wait for the right one
    return into


def _recv_exact(sock, n):
    out = bytearray(n)
    view, got = memoryview(out), 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise ConnectionError("closed")
        got += k
    return bytes(out)


def _add_into(dest, other):
    """``dest += other``, field by field. Exact on the used bins: gradients lie
    on a grid. The bins past a column's last are never written by the
    kernels; whatever they hold may overflow here, and is never read."""
    with np.errstate(over="ignore", invalid="ignore"):
        for name in dest.dtype.names:
            dest[name] += other[name]


class RingCollective:
    """The :class:`~hgbt.core.collective.Collective` of ``size`` processes in a
    TCP ring: this one (``rank``) sends to the next and receives from the
    previous.

    Sends and receives of one step overlap (non-blocking sockets and a
    selector), so a histogram larger than the sockets' buffers cannot
    deadlock the ring. After any error the sockets are closed, so that the
    peers fail too instead of waiting.
    """

    def __init__(self, rank, size, to_next, from_prev, timeout):
        self.rank, self.size, self.timeout = rank, size, timeout
        self.bytes_sent = self.bytes_received = 0
        self.seconds = 0.0
        self.n_histograms = 0  # all-reduced so far
        self._next, self._prev = to_next, from_prev
        self._sockets = [to_next, from_prev]
        for sock in self._sockets:
            sock.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._waiting = {}  # socket -> the event a wait watches for
        self._scratch = None
        self.closed = False

    def close(self):
        if not self.closed:
            self.closed = True
            self._selector.close()
            for sock in self._sockets:
                sock.close()

    def _exchange(self, out, into, to=None, source=None):
        """Send the bytes ``out`` to the next rank (or the socket ``to``) while
        receiving ``into`` (a writable byte view, its size known to both) from
        the previous (or ``source``; the same socket may do both)."""
        to = self._next if to is None else to
        source = self._prev if source is None else source
        if self.closed:
            raise RingError("the ring was closed after an earlier error")
        n_out, n_in = len(out), len(into)
        sent = got = 0
        deadline = time.monotonic() + self.timeout
        try:
            while sent < n_out or got < n_in:
                progressed = False
                if sent < n_out:
                    try:
                        sent += to.send(out[sent:])
                        progressed = True
                    except BlockingIOError:
                        pass
                if got < n_in:
                    try:
                        k = source.recv_into(into[got:])
                    except BlockingIOError:
                        k = -1
                    if k == 0:
                        raise RingError(f"a worker exchanging with rank {self.rank} "
                                        "closed its connection (lost, or failed)")
                    if k > 0:
                        got += k
                        progressed = True
                if progressed or (sent == n_out and got == n_in):
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise RingError(f"no exchange with the neighbouring workers of rank "
                                    f"{self.rank} within timeout={self.timeout} s")
                self._wait_for(to, sent < n_out, source, got < n_in, min(remaining, 1.0))
        except RingError:
            self.close()
            raise
        except OSError as exc:  # a reset or broken connection: the peer died
            self.close()
            raise RingError(f"a neighbouring worker of rank {self.rank} was lost "
                            f"({type(exc).__name__}: {exc})") from exc
        except BaseException:
            self.close()
            raise
        self.bytes_sent += n_out
        self.bytes_received += n_in

    def _wait_for(self, to, sending, source, receiving, seconds):
        # watch only what is still pending: a socket watched for writing
        # after its last byte went out would wake the wait at once
        events = {}
        if sending:
            events[to] = selectors.EVENT_WRITE
        if receiving:
            events[source] = events.get(source, 0) | selectors.EVENT_READ
        for sock in list(self._waiting):
            if sock not in events:
                self._selector.unregister(sock)
                del self._waiting[sock]
        for sock, event in events.items():
            if sock not in self._waiting:
                self._selector.register(sock, event)
            elif self._waiting[sock] != event:
                self._selector.modify(sock, event)
            self._waiting[sock] = event
        self._selector.select(seconds)

    def allreduce_histogram(self, histogram):
        start = time.perf_counter()
        flat = histogram.reshape(-1)
        p = self.size
        # chunks of whole records: the summed chunk of this rank is rank + 1
        bounds = [flat.shape[0] * i // p for i in range(p + 1)]

        def chunk(i):
            return flat[bounds[i % p]:bounds[i % p + 1]]

        self._reduce_scatter(chunk, 0)
        # all-gather of the summed chunks, received in place
        for s in range(p - 1):
            send, dest = chunk(self.rank - s + 1), chunk(self.rank - s)
            self._exchange(memoryview(send.view(np.uint8)), memoryview(dest.view(np.uint8)))
        self.seconds += time.perf_counter() - start

    def reduce_scatter_histogram(self, histogram):
        start = time.perf_counter()
        p, rank = self.size, self.rank
        # blocks of whole rows (columns): the summed block of this rank is rank
        n = histogram.shape[0]

        def block(i):
            return histogram[slice(*feature_block(n, i % p, p))].reshape(-1)

        self._reduce_scatter(block, -1)
        self.seconds += time.perf_counter() - start
        return feature_block(n, rank, p)

    def _reduce_scatter(self, part, shift):
        """Sum the parts around the ring: after p - 1 steps this rank holds
        the sum of ``part(rank + 1 + shift)`` (``part(i)``: a flat view of
        part ``i mod p`` of a histogram, the same everywhere)."""
        p, rank = self.size, self.rank
        longest = max(part(i).shape[0] for i in range(p))
        dtype = part(0).dtype
        if (self._scratch is None or self._scratch.shape[0] < longest
                or self._scratch.dtype != dtype):
            self._scratch = np.empty(longest, dtype=dtype)
        for s in range(p - 1):
            send, dest = part(rank - s + shift), part(rank - s - 1 + shift)
            buf = self._scratch[:dest.shape[0]]
            self._exchange(memoryview(send.view(np.uint8)), memoryview(buf.view(np.uint8)))
            _add_into(dest, buf)
        self.n_histograms += 1

    def allgather_bytes(self, data):
        start = time.perf_counter()
        p = self.size
        items = [None] * p
        items[self.rank] = current = bytes(data)
        for s in range(p - 1):
            received = bytearray(len(current))
            self._exchange(memoryview(current), memoryview(received))
            items[(self.rank - s - 1) % p] = current = bytes(received)
        self.seconds += time.perf_counter() - start
        return items

    def allgather(self, value):
        start = time.perf_counter()
        p = self.size
        items = [None] * p
        items[self.rank] = current = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        length = bytearray(_LENGTH.size)
        for s in range(p - 1):
            self._exchange(memoryview(_LENGTH.pack(len(current))), memoryview(length))
            received = bytearray(_LENGTH.unpack(length)[0])
            self._exchange(memoryview(current), memoryview(received))
            items[(self.rank - s - 1) % p] = current = bytes(received)
        self.seconds += time.perf_counter() - start
        return [pickle.loads(item) for item in items]
