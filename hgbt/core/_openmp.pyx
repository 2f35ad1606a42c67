"""Thread-count helpers: how many OpenMP threads the kernels may use."""
import os
import warnings

from .load import cgroup_cpus

cdef extern from "_openmp_compat.h":
    int omp_get_max_threads() noexcept nogil
    int HGBT_OPENMP

# An explicit n_threads is clipped to this many threads per usable CPU. Models
# do not depend on the thread count, so clipping only changes speed; beyond a
# few threads per CPU oversubscription only slows down, and tens of thousands
# of threads make libgomp fail or crash. A small multiple (not 1x) keeps
# multi-thread code paths testable on small machines.
THREADS_PER_CPU = 4

# GNU OpenMP's worker threads do not survive fork(): a child process that opens
# a parallel region after its parent ran one waits for the parent's workers
# forever (multiprocessing's default start method on Linux forks). So a
# process forked after hgbt ran threads runs single-threaded, and says so.
_threads_started = False
_forked_after_threads = False


def _after_fork_in_child():
    global _forked_after_threads
    _forked_after_threads = _threads_started


os.register_at_fork(after_in_child=_after_fork_in_child)


def _single_threaded_after_fork():
    global _forked_after_threads
    _forked_after_threads = None  # warned: the next calls are quiet
    warnings.warn(
        "hgbt runs single-threaded in this process: it was forked after hgbt had run "
        "OpenMP threads, whose worker threads do not survive a fork (the process would "
        "hang). For parallel fits in worker processes, start them with "
        "multiprocessing's 'spawn' or 'forkserver' method (joblib's default loky "
        "backend does), or pass n_threads=1 in the forked process.", RuntimeWarning,
        stacklevel=3)


# read once: the limit of a running container does not change
_CGROUP_CPUS = cgroup_cpus()


def openmp_enabled():
    """Whether the kernels were compiled with OpenMP."""
    return bool(HGBT_OPENMP)


def usable_cpus():
    """Number of CPUs this process may run on: its affinity mask, bounded by
    its cgroup's CPU limit (a container's)."""
    try:
        n = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
    limit = _CGROUP_CPUS
    return n if limit is None else min(n, limit)


def max_threads():
    """The most threads an explicit ``n_threads`` gets: ``THREADS_PER_CPU``
    per usable CPU (1 without OpenMP)."""
    return THREADS_PER_CPU * usable_cpus() if HGBT_OPENMP else 1


def effective_n_threads(n_threads=None):
    """Number of threads the kernels use for a given ``n_threads`` setting.

    ``None`` (or -1) means every core this process may use, capped by
    OpenMP's own limit (which threadpoolctl and ``OMP_NUM_THREADS`` set). An integer is
    used as given up to :func:`max_threads` and clipped to it above (a
    model or pickle from a bigger machine still runs). Without OpenMP it is
    always 1, and in a process forked after hgbt ran threads it is 1 with a
    ``RuntimeWarning`` (once): OpenMP's threads do not survive a fork.

    Raises
    ------
    ValueError
        If ``n_threads`` is not None and not an integer of at least 1.
    """
    if n_threads is not None:
        if isinstance(n_threads, bool) or not hasattr(n_threads, "__index__") \
                or (n_threads < 1 and n_threads != -1):
            raise ValueError(f"n_threads must be None or -1 (every usable CPU) or an "
                             f"integer >= 1, got {n_threads!r}.")
        if n_threads == -1:  # joblib's, LightGBM's and XGBoost's spelling of "all"
            n_threads = None
    global _threads_started
    if not HGBT_OPENMP:
        return 1
    if n_threads is not None:
        n = min(int(n_threads), max_threads())
    else:
        n = max(1, min(omp_get_max_threads(), usable_cpus()))
    if n > 1:
        if _forked_after_threads is not False:
            if _forked_after_threads:
                _single_threaded_after_fork()
            return 1
        _threads_started = True
    return n
