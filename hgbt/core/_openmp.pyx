"""Thread-count helpers: how many OpenMP threads the kernels may use."""
import os

cdef extern from "_openmp_compat.h":
    int omp_get_max_threads() noexcept nogil
    int HGBT_OPENMP

# An explicit n_threads is clipped to this many threads per usable CPU. Models
# do not depend on the thread count, so clipping only changes speed; beyond a
# few threads per CPU oversubscription only slows down, and tens of thousands
# of threads make libgomp fail or crash. A small multiple (not 1x) keeps
# multi-thread code paths testable on small machines.
THREADS_PER_CPU = 4


def openmp_enabled():
    """Whether the kernels were compiled with OpenMP."""
    return bool(HGBT_OPENMP)


def usable_cpus():
    """Number of CPUs this process may run on (its affinity mask)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def max_threads():
    """The most threads an explicit ``n_threads`` gets: ``THREADS_PER_CPU``
    per usable CPU (1 without OpenMP)."""
    return THREADS_PER_CPU * usable_cpus() if HGBT_OPENMP else 1


def effective_n_threads(n_threads=None):
    """Number of threads the kernels use for a given ``n_threads`` setting.

    ``None`` means every core this process may use, capped by OpenMP's own
    limit (which threadpoolctl and ``OMP_NUM_THREADS`` set). An integer is
    used as given up to :func:`max_threads` and clipped to it above (a
    model or pickle from a bigger machine still runs). Without OpenMP it is
    always 1.

    Raises
    ------
    ValueError
        If ``n_threads`` is not None and not an integer of at least 1.
    """
    if n_threads is not None:
        if isinstance(n_threads, bool) or not hasattr(n_threads, "__index__") \
                or n_threads < 1:
            raise ValueError(f"n_threads must be None or an integer >= 1, got "
                             f"{n_threads!r}.")
    if not HGBT_OPENMP:
        return 1
    if n_threads is not None:
        return min(int(n_threads), max_threads())
    return max(1, min(omp_get_max_threads(), usable_cpus()))
