"""Kernels of survival analysis: Cox proportional hazards and accelerated
failure time (AFT) gradients, hessians and negative log-likelihoods.

Cox (Breslow's handling of tied times): with risk scores ``eta``, weights
``w`` and event flags ``d``, the negative log partial likelihood is
``sum_i w_i d_i (log S(t_i) - eta_i)``, ``S(t) = sum_{t_j >= t} w_j e^eta_j``.
Row ``k``'s gradient is ``w_k e^eta_k A(t_k) - w_k d_k`` and its (diagonal)
hessian ``w_k e^eta_k A(t_k) - (w_k e^eta_k)^2 B(t_k)``, where ``A(t)`` and
``B(t)`` sum ``D_g / S_g`` and ``D_g / S_g^2`` over the distinct event times
``t_g <= t`` (``D_g``: the weight of the events at ``t_g``). Scores are
shifted by their maximum before ``exp`` (the ratios do not change). One pass
down the times and one up: sequential, so the same for any thread count.

AFT: ``log T = eta + sigma Z``, ``Z`` normal, logistic or extreme-value
(minimum Gumbel). A row observed in ``[lower, upper]`` (equal: an exact
time; ``upper = inf``: right-censored; ``lower = 0``: left-censored) has the
negative log-likelihood ``-log f(z) + log(sigma t)`` (exact) or
``-log(F(z_u) - F(z_l))``, ``z = (log t - eta) / sigma``. Gradients are
clipped to [-15, 15] and hessians to [1e-16, 15], XGBoost's bounds, so a row
far in a tail cannot dominate a leaf; an interval whose probability
underflows (hundreds of sigmas away) gets the gradient 15 toward it and the
hessian 15: a step of one in log time before shrinkage.
"""
from cython.parallel cimport prange
from libc.math cimport INFINITY, M_PI, erfc, exp, expm1, fabs, log, log1p, sqrt

import numpy as np

cpdef enum Distribution:
    NORMAL = 0
    LOGISTIC = 1
    EXTREME = 2

DEF MIN_GRADIENT = -15.0
DEF MAX_GRADIENT = 15.0
DEF MIN_HESSIAN = 1e-16
DEF MAX_HESSIAN = 15.0
DEF TINY = 1e-300


# ------------------------------------------------------------------- Cox
def cox_gradients(const double[::1] raw, const Py_ssize_t[::1] order,
                  const Py_ssize_t[::1] group_end, const double[::1] event_weight,
                  const double[::1] weight, const double[::1] event, float[::1] gradients,
                  float[::1] hessians):
    """Fill ``gradients`` and ``hessians`` of the Cox loss. ``order``: the rows
    by time, ascending; ``group_end[g]``: the end in ``order`` of the rows of
    the g-th distinct time (ascending); ``event_weight[g]``: their events'
    total weight; ``weight``: per row (empty: 1); ``event``: per row, 0 or 1."""
    cdef Py_ssize_t n = order.shape[0], n_groups = group_end.shape[0], g, i, r, start
    cdef bint weighted = weight.shape[0] > 0
    cdef double top = -INFINITY, total = 0.0, a = 0.0, b = 0.0, s, ew
    cdef double[::1] risk = np.empty(n_groups, dtype=np.float64)
    for i in range(n):
        if raw[i] > top:
            top = raw[i]
    with nogil:
        for g in range(n_groups - 1, -1, -1):  # down the times: the risk sets
            start = group_end[g - 1] if g else 0
            for i in range(start, group_end[g]):
                r = order[i]
                total += (weight[r] if weighted else 1.0) * exp(raw[r] - top)
            risk[g] = total
        for g in range(n_groups):  # up the times: A and B of each row
            s = risk[g]
            if event_weight[g] > 0 and s > 0:
                a += event_weight[g] / s
                b += event_weight[g] / (s * s)
            start = group_end[g - 1] if g else 0
            for i in range(start, group_end[g]):
                r = order[i]
                ew = (weight[r] if weighted else 1.0) * exp(raw[r] - top)
                gradients[r] = <float> (ew * a - (weight[r] if weighted else 1.0) * event[r])
                hessians[r] = <float> max(ew * a - ew * ew * b, MIN_HESSIAN)


def cox_event_losses(const double[::1] raw, const Py_ssize_t[::1] order,
                     const Py_ssize_t[::1] group_end, const double[::1] weight,
                     const double[::1] event):
    """Per row: ``d (log S(t) - eta)`` (0 for a censored row), the terms of
    the negative log partial likelihood (unweighted; the caller weighs)."""
    cdef Py_ssize_t n = order.shape[0], n_groups = group_end.shape[0], g, i, r, start
    cdef bint weighted = weight.shape[0] > 0
    cdef double top = -INFINITY, total = 0.0
    out_array = np.zeros(n, dtype=np.float64)
    cdef double[::1] out = out_array
    for i in range(n):
        if raw[i] > top:
            top = raw[i]
    with nogil:
        for g in range(n_groups - 1, -1, -1):
            start = group_end[g - 1] if g else 0
            for i in range(start, group_end[g]):
                r = order[i]
                total += (weight[r] if weighted else 1.0) * exp(raw[r] - top)
            for i in range(start, group_end[g]):
                r = order[i]
                if event[r] > 0:
                    out[r] = log(total) + top - raw[r]
    return out_array


# ------------------------------------------------------------------- AFT
cdef inline double _pdf(double z, int dist) noexcept nogil:
    cdef double e
    if z == INFINITY or z == -INFINITY:
        return 0.0
    if dist == NORMAL:
        return exp(-0.5 * z * z) / sqrt(2.0 * M_PI)
    if dist == LOGISTIC:
        e = exp(-fabs(z))
        return e / ((1.0 + e) * (1.0 + e))
    e = exp(z)
    return e * exp(-e) if e < INFINITY else 0.0


cdef inline double _score(double z, int dist) noexcept nogil:
    """f'(z) / f(z)."""
    if dist == NORMAL:
        return -z
    if dist == LOGISTIC:  # 1 - 2 F(z)
        return -1.0 + 2.0 / (1.0 + exp(z)) if z > 0 else 1.0 - 2.0 / (1.0 + exp(-z))
    return 1.0 - exp(z)


cdef inline double _cdf(double z, int dist) noexcept nogil:
    if dist == NORMAL:
        return 0.5 * erfc(-z / sqrt(2.0))
    if dist == LOGISTIC:
        return 1.0 / (1.0 + exp(-z))
    return -expm1(-exp(z))


cdef inline double _sf(double z, int dist) noexcept nogil:
    """1 - F(z), accurate in the upper tail."""
    if dist == NORMAL:
        return 0.5 * erfc(z / sqrt(2.0))
    if dist == LOGISTIC:
        return 1.0 / (1.0 + exp(z))
    return exp(-exp(z))


cdef inline double _mass(double z_l, double z_u, int dist) noexcept nogil:
    """F(z_u) - F(z_l), from the tail where it is accurate."""
    if z_l > 0:
        return _sf(z_l, dist) - _sf(z_u, dist)
    return _cdf(z_u, dist) - _cdf(z_l, dist)


cdef inline double _z(double t, double raw, double sigma) noexcept nogil:
    if t <= 0.0:
        return -INFINITY
    if t == INFINITY:
        return INFINITY
    return (log(t) - raw) / sigma


cdef inline double _clip(double x, double low, double high) noexcept nogil:
    return low if x < low else (high if x > high else x)


def aft_gradients(const double[::1] raw, const double[::1] lower, const double[::1] upper,
                  const double[::1] weight, float[::1] gradients, float[::1] hessians,
                  double sigma, int dist, int n_threads=1):
    """Fill ``gradients`` and ``hessians`` of the AFT loss per row (times
    ``weight``; empty: unweighted)."""
    cdef Py_ssize_t n = raw.shape[0], i
    cdef bint weighted = weight.shape[0] > 0
    cdef double z, z_l, z_u, f_l, f_u, d_l, d_u, mass, g, h, w
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        w = weight[i] if weighted else 1.0
        if lower[i] == upper[i]:  # an exact time
            z = _z(lower[i], raw[i], sigma)
            g = _score(z, dist) / sigma
            if dist == NORMAL:
                h = 1.0 / (sigma * sigma)
            elif dist == LOGISTIC:
                h = 2.0 * _pdf(z, dist) / (sigma * sigma)  # 2 F (1 - F) = 2 f
            else:
                h = exp(z) / (sigma * sigma)
        else:  # an interval: F(z_u) - F(z_l)
            z_l = _z(lower[i], raw[i], sigma)
            z_u = _z(upper[i], raw[i], sigma)
            f_l = _pdf(z_l, dist)
            f_u = _pdf(z_u, dist)
            d_l = f_l * _score(z_l, dist) if f_l > 0 else 0.0
            d_u = f_u * _score(z_u, dist) if f_u > 0 else 0.0
            mass = _mass(z_l, z_u, dist)
            if mass > TINY:
                g = (f_u - f_l) / (sigma * mass)
                h = ((f_u - f_l) * (f_u - f_l) - (d_u - d_l) * mass) / (sigma * sigma * mass
                                                                      * mass)
            else:  # the interval beyond the float range of the law: one full step
                g = MIN_GRADIENT if z_l > 0 else MAX_GRADIENT  # toward it
                h = MAX_HESSIAN
        gradients[i] = <float> (w * _clip(g, MIN_GRADIENT, MAX_GRADIENT))
        hessians[i] = <float> (w * _clip(h, MIN_HESSIAN, MAX_HESSIAN))


def aft_row_losses(const double[::1] raw, const double[::1] lower, const double[::1] upper,
                   double sigma, int dist, int n_threads=1):
    """Per row, the AFT negative log-likelihood (unweighted)."""
    cdef Py_ssize_t n = raw.shape[0], i
    cdef double z
    out_array = np.empty(n, dtype=np.float64)
    cdef double[::1] out = out_array
    for i in prange(n, nogil=True, schedule="static", num_threads=n_threads):
        if lower[i] == upper[i]:
            z = _z(lower[i], raw[i], sigma)
            out[i] = -log(max(_pdf(z, dist), TINY)) + log(sigma * lower[i])
        else:
            out[i] = -log(max(_mass(_z(lower[i], raw[i], sigma), _z(upper[i], raw[i], sigma),
                                    dist), TINY))
    return out_array
