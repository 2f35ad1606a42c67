"""Grow the trees of one boosting round side by side.

A multiclass round has one tree per class, all from the gradients of the
round's start and independent of each other. Growing them at the same time,
each on its share of the threads, keeps every thread busy through what does
not parallelise within a tree (small nodes, split scans, the per-tree Python
around the kernels) instead of joining the threads at every kernel of one tree.
A tree depends only on its own inputs, never on the number of threads that
grew it (the kernels' guarantee), so the model is the same for any schedule.
"""
import queue
from concurrent.futures import Future, ThreadPoolExecutor


class TreeTeam:
    """Training-data sources that grow the trees of a round concurrently.

    Parameters
    ----------
    make_source : callable
        ``make_source(n_threads)`` returns a training-data source with a
        ``fork(n_threads)`` method (:class:`~hgbt.tree.training_data.LocalTrainingData`).
    n_threads : int
        Threads of the whole fit.
    n_trees : int
        Trees per round. With one tree, or one thread, there is a single
        source with every thread and trees are grown one after another.
    """

    def __init__(self, make_source, n_threads, n_trees):
        self.n_threads = n_threads
        n_workers = max(1, min(n_threads, n_trees))
        shares = [n_threads // n_workers + (i < n_threads % n_workers)
                  for i in range(n_workers)]
        first = make_source(shares[0])
        self.sources = [first] + [first.fork(t) for t in shares[1:]]
        self._pool = (None if n_workers == 1 else
                      ThreadPoolExecutor(n_workers, thread_name_prefix="hgbt-tree"))

    def grow(self, grow_one, n_trees):
        """``[grow_one(source, k) for k in range(n_trees)]``, each call on a
        source no other running call holds."""
        if self._pool is None:
            return [grow_one(self.sources[0], k) for k in range(n_trees)]
        free = queue.SimpleQueue()
        for source in self.sources:
            free.put(source)

        def task(k):
            source = free.get()
            try:
                return grow_one(source, k)
            finally:
                free.put(source)

        futures = [self._submit(task, k) for k in range(n_trees)]
        try:
            return [future.result() for future in futures]
        finally:  # after an error, no tree may still be growing on return
            for future in futures:
                future.cancel()
            for future in futures:
                if not future.cancelled():
                    future.exception()  # waits; the first error is raised above

    def _submit(self, task, k):
        try:
            return self._pool.submit(task, k)
        except RuntimeError:
            # The interpreter is exiting (a fit in a daemon thread): its pools
            # take no more work. The tree grows here instead; the same tree,
            # as a tree never depends on the schedule.
            future = Future()
            try:
                future.set_result(task(k))
            except BaseException as exc:  # raised by result(), as the pool's
                future.set_exception(exc)
            return future

    def close(self):
        """Stop the worker threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
