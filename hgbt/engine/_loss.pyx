"""Kernels: per-row gradients and hessians of the losses, and per-row losses.

Every kernel reads float64 targets and raw predictions, writes float32
gradients and hessians or float64 unweighted losses (``row_losses``,
``multinomial_row_losses``: what early stopping's scores sum), and does
per-row arithmetic only inside a ``prange`` over rows, so its output does
not depend on the number of threads.

``sample_weight`` of length 0 means unweighted. Gradients and hessians are
the weighted derivatives ``w * dl/draw`` and ``w * d2l/draw2`` of the per-row
loss ``l`` (``hgbt.engine.losses`` documents each ``l``). For losses whose hessian
is constant when unweighted, ``hessians`` may have length 1 (the caller
keeps the constant 1 there and it is left as it is); a per-row ``hessians``
is always filled.
"""
from cython.parallel cimport prange
from libc.math cimport exp, fabs, fabsf, log, log1p, pow
from libc.stdint cimport int32_t, uint32_t
from libc.string cimport memcpy

from ..core._types cimport G_H_DTYPE_C, Y_DTYPE_C

# Rows below which a kernel runs on one thread: waking a team costs more
# than the work, and far more when the cores are oversubscribed.
DEF MIN_PARALLEL_ROWS = 16384
# Rows per block of the vectorised binary log-loss loop.
DEF ROW_BLOCK = 4096
# Rows per block of the softmax: its per-row scratch and the block's
# classes stay in cache.
DEF SOFTMAX_BLOCK = 512


cdef inline int _threads_for(Py_ssize_t n, int n_threads) noexcept nogil:
    return n_threads if n >= MIN_PARALLEL_ROWS else 1


cdef struct grad_hess:
    double gradient
    double hessian


# ---------------------------------------------------------------- checks

cdef Py_ssize_t _check_shapes(
    const Y_DTYPE_C[::1] y_true,
    Py_ssize_t n_raw,
    const Y_DTYPE_C[::1] sample_weight,
    Py_ssize_t n_gradients,
    Py_ssize_t n_hessians,
    bint hessian_may_be_constant,
) except -1:
    """Number of rows; ValueError if a buffer does not fit (no bounds checks run)."""
    cdef Py_ssize_t n = y_true.shape[0]
    if n_raw != n:
        raise ValueError(f"raw_prediction has length {n_raw}, y_true has {n}")
    if sample_weight.shape[0] not in (0, n):
        raise ValueError(
            f"sample_weight has length {sample_weight.shape[0]}, y_true has {n}")
    if n_gradients != n:
        raise ValueError(f"gradients has length {n_gradients}, y_true has {n}")
    if n_hessians == n:
        return n
    if n_hessians == 1 and hessian_may_be_constant and sample_weight.shape[0] == 0:
        return n
    raise ValueError(
        f"hessians has length {n_hessians}; expected {n}"
        + (" or 1 (constant hessian, unweighted)" if hessian_may_be_constant else ""))


# ------------------------------------------------- per-row derivatives

cdef inline double _sign(double x) noexcept nogil:
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    return 0.0


cdef inline double _clip(double x, double bound) noexcept nogil:
    if x > bound:
        return bound
    if x < -bound:
        return -bound
    return x


cdef inline grad_hess _poisson(double y, double raw) noexcept nogil:
    # l = exp(raw) - y raw (+ const)
    cdef grad_hess out
    cdef double mu = exp(raw)
    out.gradient = mu - y
    out.hessian = mu
    return out


cdef inline grad_hess _gamma(double y, double raw) noexcept nogil:
    # l = y exp(-raw) + raw (+ const)
    cdef grad_hess out
    cdef double y_over_mu = y * exp(-raw)
    out.gradient = 1.0 - y_over_mu
    out.hessian = y_over_mu
    return out


cdef inline grad_hess _tweedie(double y, double raw, double power) noexcept nogil:
    # l = -y exp((1-p) raw) / (1-p) + exp((2-p) raw) / (2-p) (+ const);
    # written so that p = 1 and p = 2 need no special case.
    cdef grad_hess out
    cdef double a = y * exp((1.0 - power) * raw)
    cdef double b = exp((2.0 - power) * raw)
    out.gradient = b - a
    out.hessian = (2.0 - power) * b + (power - 1.0) * a
    return out


cdef inline float _select_float(bint condition, float a, float b) noexcept nogil:
    # a if condition else b on the bits: no branch, so loops vectorise.
    cdef uint32_t bits_a, bits_b, mask = -<uint32_t>condition
    memcpy(&bits_a, &a, 4)
    memcpy(&bits_b, &b, 4)
    bits_a = (bits_a & mask) | (bits_b & ~mask)
    memcpy(&a, &bits_a, 4)
    return a


cdef inline float _exp_float(float x) noexcept nogil:
    # exp(x) for x <= 88 in float32 within a few ulp, 0 below -87 (under the
    # smallest normal float). Plain arithmetic without branches or calls, so a
    # loop over rows vectorises: glibc's exp is one call per row and took
    # three times as long. 2^k exp(f), k = round(x / ln 2), |f| <= ln(2) / 2,
    # ln 2 in two parts; exp(f) by a degree-7 polynomial (Cephes' expf).
    cdef float xc = _select_float(x < <float> -87.0, <float> -87.0, x)
    cdef float k = ((xc * <float> 1.44269504088896341 + <float> 12582912.0)
                    - <float> 12582912.0)  # + 1.5 * 2^23 rounds to an integer
    cdef float f = xc - k * <float> 0.693359375 + k * <float> 2.12194440e-4
    cdef float p = <float> 1.9875691500e-4
    p = p * f + <float> 1.3981999507e-3
    p = p * f + <float> 8.3334519073e-3
    p = p * f + <float> 4.1665795894e-2
    p = p * f + <float> 1.6666665459e-1
    p = p * f + <float> 5.0000001201e-1
    p = p * f * f + f + <float> 1.0
    cdef int32_t bits = (<int32_t> k + 127) << 23  # 2^k, k in [-126, 127]
    cdef float scale
    memcpy(&scale, &bits, 4)
    return _select_float(x < <float> -87.0, <float> 0.0, p * scale)


cdef void _binary_rows(
    const double* y, const double* raw, G_H_DTYPE_C* gradients,
    G_H_DTYPE_C* hessians, Py_ssize_t n,
) noexcept nogil:
    # l = log(1 + exp(raw)) - y raw; p = sigmoid(raw). With e = exp(-|raw|)
    # (never overflows), p - y and p (1 - p) = e / (1 + e)^2 are formed
    # without cancellation for y in {0, 1}: p = 1 / (1 + e) if raw >= 0, else
    # e / (1 + e). In float32, the precision of the outputs: a vector loop.
    cdef Py_ssize_t i
    cdef float r, t, e, d
    for i in range(n):
        r = <float> raw[i]
        t = <float> y[i]
        e = _exp_float(-fabsf(r))
        d = <float> 1.0 + e
        gradients[i] = _select_float(r >= 0, (<float> 1.0 - t) - t * e,
                                     e * (<float> 1.0 - t) - t) / d
        hessians[i] = e / (d * d)


cdef void _multinomial_rows(
    const double* y, const double* raw, Py_ssize_t n_classes, G_H_DTYPE_C* gradients,
    G_H_DTYPE_C* hessians, Py_ssize_t stride, Py_ssize_t n,
) noexcept nogil:
    # Softmax of n <= SOFTMAX_BLOCK rows in float32, each loop over rows a
    # vector loop; class k of row i is at raw[k * stride + i], likewise the
    # outputs (gradients holds exp(raw - top) in between). With top the
    # largest raw value of the row (its first class on ties), S = e_top +
    # rest, where rest sums the other classes' exps directly: 1 - p_top =
    # rest / S keeps its precision when p_top is near 1 (1 - p would cancel).
    # Every other class has p <= 1/2, so 1 - p is exact enough there.
    cdef float top[SOFTMAX_BLOCK]
    cdef float top_class[SOFTMAX_BLOCK]  # class indices as floats: 32-bit lanes
    cdef float top_exp[SOFTMAX_BLOCK]
    cdef float rest[SOFTMAX_BLOCK]
    cdef float label[SOFTMAX_BLOCK]
    cdef Py_ssize_t i, k
    cdef const double* raw_k
    cdef G_H_DTYPE_C* g_k
    cdef G_H_DTYPE_C* h_k
    cdef float r, e, total, p, q, c
    for i in range(n):
        top[i] = <float> raw[i]
        top_class[i] = 0.0
        top_exp[i] = 0.0
        rest[i] = 0.0
        label[i] = <float> y[i]
    for k in range(1, n_classes):
        raw_k = raw + k * stride
        c = <float> k
        for i in range(n):
            r = <float> raw_k[i]
            top_class[i] = _select_float(r > top[i], c, top_class[i])
            top[i] = _select_float(r > top[i], r, top[i])
    for k in range(n_classes):
        raw_k = raw + k * stride
        g_k = gradients + k * stride
        c = <float> k
        for i in range(n):
            # top is raw_top rounded to float32: e_top is 1 within an ulp or so
            e = _exp_float(<float> (raw_k[i] - <double> top[i]))
            g_k[i] = e
            top_exp[i] = _select_float(top_class[i] == c, e, top_exp[i])
            rest[i] = rest[i] + _select_float(top_class[i] == c, <float> 0.0, e)
    for k in range(n_classes):
        g_k = gradients + k * stride
        h_k = hessians + k * stride
        c = <float> k
        for i in range(n):
            total = top_exp[i] + rest[i]
            p = g_k[i] / total
            q = _select_float(top_class[i] == c, rest[i] / total, <float> 1.0 - p)  # 1 - p
            g_k[i] = _select_float(label[i] == c, -q, p)  # p - 1{y = k}
            h_k[i] = p * q


cdef inline void _weigh_rows(
    const double* sample_weight, G_H_DTYPE_C* gradients, G_H_DTYPE_C* hessians,
    Py_ssize_t n,
) noexcept nogil:
    # Multiply n rows' gradients and hessians by their weights, in place.
    cdef Py_ssize_t i
    for i in range(n):
        gradients[i] = sample_weight[i] * gradients[i]
        hessians[i] = sample_weight[i] * hessians[i]


# ---------------------------------------------------------------- kernels

# The kinds of per-row losses served by row_gradients and row_losses: the
# enum LossKind of _loss.pxd (Python: LossKind, passed by losses.py). The
# first four, through HUBER, have the row weight as hessian (exact for squared
# error, a surrogate for the others), so their hessian may be a constant.


cdef inline grad_hess _row(int kind, double y, double raw, double param) noexcept nogil:
    # The kind is the same for every row: this branch is always predicted.
    cdef grad_hess out
    out.hessian = 1.0
    if kind == SQUARED_ERROR:
        out.gradient = raw - y
    elif kind == ABSOLUTE_ERROR:
        out.gradient = _sign(raw - y)
    elif kind == QUANTILE:
        out.gradient = (1.0 - param) if y < raw else -param
    elif kind == HUBER:
        out.gradient = _clip(raw - y, param)
    elif kind == POISSON:
        return _poisson(y, raw)
    elif kind == GAMMA:
        return _gamma(y, raw)
    elif kind == TWEEDIE:
        return _tweedie(y, raw, param)
    return out


def row_gradients(
    int kind,
    const Y_DTYPE_C[::1] y_true,
    const Y_DTYPE_C[::1] raw_prediction,
    const Y_DTYPE_C[::1] sample_weight,
    G_H_DTYPE_C[::1] gradients,
    G_H_DTYPE_C[::1] hessians,
    double param,
    int n_threads,
):
    """Gradients and hessians of a single-output loss, row by row.

    ``kind`` is a :class:`LossKind`:

    - SQUARED_ERROR (half): g = w (raw - y), h = w (exact).
    - ABSOLUTE_ERROR: g = w sign(raw - y) (0 on a tie), h = w (surrogate).
    - QUANTILE (pinball, ``param`` = quantile): g = w (1{y < raw} - quantile).
    - HUBER (``param`` = delta): g = w clip(raw - y, -delta, delta), h = w
      (exact within delta, a surrogate outside).
    - POISSON, log link: g = w (exp(raw) - y), h = w exp(raw).
    - GAMMA, log link: g = w (1 - y exp(-raw)), h = w y exp(-raw).
    - TWEEDIE (1 <= ``param`` = power <= 2), log link, mu = exp(raw):
      g = w (mu^(2-p) - y mu^(1-p)), h = w ((2-p) mu^(2-p) + (p-1) y mu^(1-p)).
    - BINARY_LOG_LOSS on log-odds: g = w (p - y), h = w p (1 - p), p = sigmoid(raw).

    Without ``sample_weight`` (length 0) w = 1. For the first four kinds
    (through HUBER) a length-1 ``hessians`` (constant hessian) is left as it
    is; otherwise ``hessians`` must have one entry per row.
    """
    cdef Py_ssize_t n = _check_shapes(y_true, raw_prediction.shape[0], sample_weight,
                                      gradients.shape[0], hessians.shape[0],
                                      kind <= HUBER)
    cdef Py_ssize_t i
    cdef double w
    cdef grad_hess gh
    cdef bint weighted = sample_weight.shape[0] > 0
    cdef bint per_row = hessians.shape[0] == n
    cdef Py_ssize_t block, start, stop
    if kind == BINARY_LOG_LOSS:
        # Blocks of a fixed size whatever the thread count, so each row takes
        # the same (vector or scalar remainder) path: same bits for any count.
        for block in prange((n + ROW_BLOCK - 1) // ROW_BLOCK, nogil=True,
                            schedule='static', num_threads=_threads_for(n, n_threads)):
            start = block * ROW_BLOCK
            stop = min(start + ROW_BLOCK, n)
            _binary_rows(&y_true[start], &raw_prediction[start], &gradients[start],
                         &hessians[start], stop - start)
            if weighted:
                _weigh_rows(&sample_weight[start], &gradients[start], &hessians[start],
                            stop - start)
        return
    if kind == SQUARED_ERROR and not weighted:
        # The commonest case gets a loop without the per-row dispatch, which
        # vectorizes (IEEE subtraction: the same bits either way).
        for i in prange(n, nogil=True, schedule='static',
                        num_threads=_threads_for(n, n_threads)):
            gradients[i] = <G_H_DTYPE_C>(raw_prediction[i] - y_true[i])
        if per_row:
            for i in range(n):
                hessians[i] = 1.0
        return
    for i in prange(n, nogil=True, schedule='static',
                    num_threads=_threads_for(n, n_threads)):
        w = sample_weight[i] if weighted else 1.0
        gh = _row(kind, y_true[i], raw_prediction[i], param)
        gradients[i] = w * gh.gradient
        if per_row:
            hessians[i] = w * gh.hessian


def multinomial_log_loss_gradients(
    const Y_DTYPE_C[::1] y_true,
    const Y_DTYPE_C[:, ::1] raw_prediction,
    const Y_DTYPE_C[::1] sample_weight,
    G_H_DTYPE_C[:, ::1] gradients,
    G_H_DTYPE_C[:, ::1] hessians,
    int n_threads,
):
    """Multinomial log loss, softmax over ``raw_prediction[:, i]`` (K classes):

    g_k = w (p_k - 1{y = k}), h_k = w p_k (1 - p_k) (the diagonal of the
    hessian). ``y_true`` holds class indices 0..K-1 as float64. The maximum
    raw value of the row is subtracted before exponentiating; the rest is
    float32 arithmetic (the precision of the outputs), with ``1 - p`` of the
    most likely class formed from the other classes' sum (no cancellation
    when p is near 1).
    """
    cdef Py_ssize_t n_classes = raw_prediction.shape[0]
    if gradients.shape[0] != n_classes or hessians.shape[0] != n_classes:
        raise ValueError(
            f"gradients and hessians need {n_classes} rows (one per class), got "
            f"{gradients.shape[0]} and {hessians.shape[0]}")
    cdef Py_ssize_t n = _check_shapes(y_true, raw_prediction.shape[1], sample_weight,
                                      gradients.shape[1], hessians.shape[1], False)
    cdef Py_ssize_t k, block, start, stop
    cdef bint weighted = sample_weight.shape[0] > 0
    if n == 0:
        return
    # Fixed blocks of rows, as in row_gradients: same bits for any thread count.
    for block in prange((n + SOFTMAX_BLOCK - 1) // SOFTMAX_BLOCK, nogil=True,
                        schedule='static', num_threads=_threads_for(n, n_threads)):
        start = block * SOFTMAX_BLOCK
        stop = min(start + SOFTMAX_BLOCK, n)
        _multinomial_rows(&y_true[start], &raw_prediction[0, start], n_classes,
                          &gradients[0, start], &hessians[0, start], n, stop - start)
        if weighted:
            for k in range(n_classes):
                _weigh_rows(&sample_weight[start], &gradients[k, start], &hessians[k, start],
                            stop - start)


# ------------------------------------------------------- per-row losses

cdef inline double _row_loss(int kind, double y, double raw, double param) noexcept nogil:
    # The per-row losses of losses.py, in float64 (they are summed exactly
    # for the scores that early stopping compares). Same kind on every row.
    cdef double r, one, two
    if kind == SQUARED_ERROR:
        r = y - raw
        return 0.5 * r * r
    if kind == ABSOLUTE_ERROR:
        return fabs(y - raw)
    if kind == QUANTILE:
        r = y - raw
        return param * r if r >= 0 else (param - 1.0) * r
    if kind == HUBER:
        r = fabs(y - raw)
        return 0.5 * r * r if r <= param else param * (r - 0.5 * param)
    if kind == POISSON or (kind == TWEEDIE and param == 1.0):
        # y log y - y raw - y + exp(raw), with 0 log 0 = 0
        return ((y * log(y) if y > 0 else 0.0) - y * raw - y) + exp(raw)
    if kind == GAMMA or (kind == TWEEDIE and param == 2.0):
        return ((y * exp(-raw) - log(y)) + raw) - 1.0
    if kind == TWEEDIE:
        one = 1.0 - param
        two = 2.0 - param
        return (pow(y, two) / (one * two) - y * exp(one * raw) / one) + exp(two * raw) / two
    # BINARY_LOG_LOSS: log(1 + exp(raw)) - y raw, exp of -|raw| only (no overflow)
    return ((raw if raw > 0 else 0.0) + log1p(exp(-fabs(raw)))) - y * raw


def row_losses(
    int kind,
    const Y_DTYPE_C[::1] y_true,
    const Y_DTYPE_C[::1] raw_prediction,
    double param,
    Y_DTYPE_C[::1] out,
    int n_threads,
):
    """Unweighted loss of every row into ``out``, for the kinds of
    :func:`row_gradients` (``param``: the quantile, Huber's delta or the
    Tweedie power). The formulas are those of ``hgbt.engine.losses``."""
    cdef Py_ssize_t i, n = y_true.shape[0]
    if raw_prediction.shape[0] != n or out.shape[0] != n:
        raise ValueError(f"raw_prediction has length {raw_prediction.shape[0]} and out "
                         f"{out.shape[0]}, y_true has {n}")
    if kind < SQUARED_ERROR or kind > BINARY_LOG_LOSS:
        raise ValueError(f"unknown loss kind {kind}")
    for i in prange(n, nogil=True, schedule='static',
                    num_threads=_threads_for(n, n_threads)):
        out[i] = _row_loss(kind, y_true[i], raw_prediction[i], param)


def multinomial_row_losses(
    const Y_DTYPE_C[::1] y_true,
    const Y_DTYPE_C[:, ::1] raw_prediction,
    Y_DTYPE_C[::1] out,
    int n_threads,
):
    """``log(sum_k exp(raw_k)) - raw_y`` of every row into ``out`` (float64,
    the row's largest raw value subtracted before exponentiating); ``y_true``
    holds class indices."""
    cdef Py_ssize_t n_classes = raw_prediction.shape[0], n = y_true.shape[0]
    cdef Py_ssize_t i, k, label
    cdef double top, total
    if raw_prediction.shape[1] != n or out.shape[0] != n:
        raise ValueError(f"raw_prediction has {raw_prediction.shape[1]} columns and out "
                         f"{out.shape[0]} entries, y_true has {n}")
    for i in range(n):
        label = <Py_ssize_t> y_true[i]
        if not 0 <= label < n_classes or label != y_true[i]:
            raise ValueError(f"y_true[{i}] = {y_true[i]!r} is not a class index "
                             f"0..{n_classes - 1}")
    for i in prange(n, nogil=True, schedule='static',
                    num_threads=_threads_for(n, n_threads)):
        top = raw_prediction[0, i]
        for k in range(1, n_classes):
            if raw_prediction[k, i] > top:
                top = raw_prediction[k, i]
        total = 0.0
        for k in range(n_classes):
            total = total + exp(raw_prediction[k, i] - top)
        out[i] = (log(total) + top) - raw_prediction[<Py_ssize_t> y_true[i], i]
