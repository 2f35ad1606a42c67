/* Lets the kernels call OpenMP's runtime whether or not it was found at build time. */
#ifndef HGBT_OPENMP_COMPAT_H
#define HGBT_OPENMP_COMPAT_H
#ifdef _OPENMP
#include <omp.h>
#define HGBT_OPENMP 1
#else
#define HGBT_OPENMP 0
static inline int omp_get_max_threads(void) { return 1; }
#endif
#endif
