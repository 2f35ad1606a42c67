"""Thread-count helpers: how many OpenMP threads the kernels may use."""
import os

cdef extern from "_openmp_compat.h":
    int omp_get_max_threads() noexcept nogil
    int HGBT_OPENMP


def openmp_enabled():
    """Whether the kernels were compiled with OpenMP."""
    return bool(HGBT_OPENMP)


def effective_n_threads(n_threads=None):
    """Number of threads the kernels use for a given ``n_threads`` setting.

    ``None`` means every core this process may use, capped by OpenMP's own
    limit (which threadpoolctl and ``OMP_NUM_THREADS`` set). Without OpenMP
    it is always 1.
    """
    if not HGBT_OPENMP:
        return 1
    if n_threads is not None:
        return int(n_threads)
    try:
        n_cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        n_cpus = os.cpu_count() or 1
    return max(1, min(omp_get_max_threads(), n_cpus))
