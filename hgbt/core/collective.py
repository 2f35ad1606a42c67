"""The collective operations a fit spread over processes needs, behind one interface.

A tree grows wherever its rows are. When the rows are split over several
processes (the workers of ``hgbt.dask``), each process builds the histograms
of its own rows and the processes add them up among themselves: histograms
add, so a node's sum over all rows is the sum of the per-process ones. The
tree kernel calls :meth:`Collective.allreduce_histogram` right after it built
the root's histograms, and :meth:`Collective.reduce_scatter_histogram` after
any other node's: each process then holds the sums of its block of features
only, searches those, and the processes elect the best split
(:meth:`Collective.allgather_bytes` of each one's best); everything else a round agrees on (the gradient grid,
row counts) goes through :meth:`Collective.allgather`. Gradients lie on an
exact grid (:mod:`hgbt.core.exact`), so the sums do not depend on the order in
which the processes add them, and every process grows the tree a single
process would.

A local fit uses :data:`SINGLE_PROCESS`: nothing to exchange, and the kernel
skips the call.
"""
from typing import Any, Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Collective(Protocol):
    """A group of ``size`` processes, this one ``rank`` among them.

    Every process must make the same calls in the same order.

    Attributes
    ----------
    rank, size : int
    bytes_sent, bytes_received : int
        Traffic of this process so far.
    n_histograms : int
        Histograms summed so far.
    seconds : float
        Time this process spent in collective calls (waiting included).
    """

    rank: int
    size: int
    bytes_sent: int
    bytes_received: int
    n_histograms: int
    seconds: float

    def allreduce_histogram(self, histogram: np.ndarray) -> None:
        """Replace ``histogram`` (C-contiguous, ``HISTOGRAM_DTYPE``, the same
        shape everywhere) by the sum of every process's, in place."""

    def reduce_scatter_histogram(self, histogram: np.ndarray) -> tuple:
        """Sum this process's block of ``histogram``'s rows (columns) over
        every process's, in place; return the block ``(start, stop)``.

        The blocks are contiguous, ascending with the rank, and the same for
        every call with the same number of rows; the rows outside this
        process's block hold unspecified partial sums afterwards.
        """

    def allgather(self, value: Any) -> list:
        """Every process's (picklable) ``value``, in rank order."""

    def allgather_bytes(self, data: bytes) -> list:
        """Every process's ``data`` (the same length everywhere), in rank order."""

    def close(self) -> None:
        """End this process's part (after an error: the others then fail at
        their next exchange instead of waiting)."""


class SingleProcess:
    """The collective of a fit in one process: every operation is the identity."""

    rank = 0
    size = 1
    bytes_sent = bytes_received = n_histograms = 0
    seconds = 0.0

    def allreduce_histogram(self, histogram):
        pass

    def reduce_scatter_histogram(self, histogram):
        return 0, histogram.shape[0]

    def allgather(self, value):
        return [value]

    def allgather_bytes(self, data):
        return [bytes(data)]

    def close(self):
        pass


#: the collective of a local fit
SINGLE_PROCESS = SingleProcess()


def feature_block(n, rank, size):
    """The block ``[start, stop)`` of ``n`` features (histogram rows) that
    process ``rank`` of ``size`` sums or searches: contiguous, ascending with
    the rank, sizes differing by at most one."""
    return n * rank // size, n * (rank + 1) // size


def allreduce_max(collective, values):
    """Elementwise maximum of ``values`` (1-D floats) over the processes;
    NaN wins, as in ``np.max``."""
    values = np.asarray(values, dtype=np.float64)
    if collective.size == 1:
        return values
    return np.max(np.stack(collective.allgather(values)), axis=0)


def allreduce_sum(collective, values):
    """Elementwise sum of the array ``values`` (the same shape everywhere)
    over the processes, in their common dtype (a process without rows may
    hold integer zeros where the others hold floats); exact for integers,
    and for floats on a grid (:mod:`hgbt.core.exact`)."""
    values = np.asarray(values)
    if collective.size == 1:
        return values
    return np.sum(np.stack(collective.allgather(values)), axis=0)


def allreduce_merge(collective, items):
    """Each of ``items`` (mergeable statistics: ``ExactSum``,
    ``WeightedMean``) merged with ``+`` over the processes."""
    if collective.size == 1:
        return list(items)
    return [sum(each[1:], each[0]) for each in zip(*collective.allgather(list(items)))]


def allreduce_sum_int(collective, value):
    """The sum of an integer over the processes."""
    return int(value) if collective.size == 1 else int(sum(collective.allgather(int(value))))
