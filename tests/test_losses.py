"""Losses against float64 references.

Gradients and hessians against central finite differences of per-row losses
written out here; loss values against scikit-learn's metrics; baselines and
leaf refits against brute force and scipy minimisers; domains, buffers,
numerical stability, custom losses, the factory and thread-count invariance.
"""
import numpy as np

from hgbt.core.row_meta import RowMeta
import pytest
from scipy.optimize import minimize, minimize_scalar
from sklearn.metrics import log_loss as sk_log_loss
from sklearn.metrics import mean_tweedie_deviance

from hgbt.engine.losses import (
    LOSS_NAMES,
    AbsoluteError,
    BaseLoss,
    BinaryLogLoss,
    CustomBinaryLoss,
    CustomLoss,
    GammaLoss,
    HuberLoss,
    MultinomialLogLoss,
    PoissonLoss,
    QuantileLoss,
    SquaredError,
    TweedieLoss,
    get_loss,
    weighted_quantile,
)
from hgbt.engine.multi_output import MultiLogLoss, MultiSquaredError
from hgbt.engine.ranking import LambdaRankLoss
from hgbt.engine.survival import AFTLoss, CoxLoss
from hgbt.core._types import G_H_DTYPE, Y_DTYPE


# ------------------------------------------------------------------ references
# Per-row losses in float64 with raw of shape (k, n), written independently
# of hgbt (negative log-likelihoods up to additive constants in y).

def ref_squared(loss, y, raw):
    return 0.5 * (y - raw[0]) ** 2


def ref_absolute(loss, y, raw):
    return np.abs(y - raw[0])


def ref_quantile(loss, y, raw):
    q, r = loss.quantile, y - raw[0]
    return np.maximum(q * r, (q - 1) * r)


def ref_huber(loss, y, raw):
    d, r = loss.delta_, np.abs(y - raw[0])
    return np.where(r <= d, 0.5 * r ** 2, d * r - 0.5 * d ** 2)


def ref_poisson(loss, y, raw):
    mu = np.exp(raw[0])
    return mu - y * np.log(mu)


def ref_gamma(loss, y, raw):
    mu = np.exp(raw[0])
    return y / mu + np.log(mu)


def ref_tweedie(loss, y, raw):
    p, mu = loss.power, np.exp(raw[0])
    if p == 1:
        return ref_poisson(loss, y, raw)
    if p == 2:
        return ref_gamma(loss, y, raw)
    return -y * mu ** (1 - p) / (1 - p) + mu ** (2 - p) / (2 - p)


def ref_binary(loss, y, raw):
    p = 1 / (1 + np.exp(-raw[0]))
    return -y * np.log(p) - (1 - y) * np.log(1 - p)


def ref_multinomial(loss, y, raw):
    e = np.exp(raw)
    p = e / e.sum(axis=0)
    return -np.log(p[y.astype(int), np.arange(y.shape[0])])


# name: (constructor(sample_weight), reference, kind of y, smooth?)
CASES = {
    "squared": (lambda w: SquaredError(RowMeta(w)), ref_squared, "real", True),
    "absolute": (lambda w: AbsoluteError(RowMeta(w)), ref_absolute, "real", False),
    "quantile-0.1": (lambda w: QuantileLoss(0.1, RowMeta(w)), ref_quantile, "real", False),
    "quantile-0.5": (lambda w: QuantileLoss(0.5, RowMeta(w)), ref_quantile, "real", False),
    "quantile-0.9": (lambda w: QuantileLoss(0.9, RowMeta(w)), ref_quantile, "real", False),
    "huber-1": (lambda w: HuberLoss(1.0, RowMeta(w)), ref_huber, "real", False),
    "huber-auto": (lambda w: HuberLoss(None, RowMeta(w)), ref_huber, "real", False),
    "poisson": (lambda w: PoissonLoss(RowMeta(w)), ref_poisson, "count", True),
    "gamma": (lambda w: GammaLoss(RowMeta(w)), ref_gamma, "positive", True),
    "tweedie-1": (lambda w: TweedieLoss(1.0, RowMeta(w)), ref_tweedie, "count", True),
    "tweedie-1.3": (lambda w: TweedieLoss(1.3, RowMeta(w)), ref_tweedie, "count", True),
    "tweedie-1.5": (lambda w: TweedieLoss(1.5, RowMeta(w)), ref_tweedie, "count", True),
    "tweedie-1.9": (lambda w: TweedieLoss(1.9, RowMeta(w)), ref_tweedie, "count", True),
    "tweedie-2": (lambda w: TweedieLoss(2.0, RowMeta(w)), ref_tweedie, "positive", True),
    "binary": (lambda w: BinaryLogLoss(RowMeta(w)), ref_binary, "binary", True),
    "multinomial": (lambda w: MultinomialLogLoss(3, RowMeta(w)), ref_multinomial, "classes", True),
}
CONSTANT_HESSIAN = {"squared", "absolute", "quantile-0.1", "quantile-0.5",
                    "quantile-0.9", "huber-1", "huber-auto"}


def make_problem(case, n, seed, weighted):
    """(loss, y, raw, sample_weight); real-valued raw stays >= 0.05 from y."""
    make, _, kind, _ = CASES[case]
    rng = np.random.default_rng(seed)
    if kind == "real":
        y = rng.normal(0, 2, n)
        offset = rng.uniform(0.05, 3, n) * rng.choice([-1.0, 1.0], n)
        raw = (y + offset)[None, :]
    elif kind == "count":
        y = rng.poisson(1.5, n).astype(Y_DTYPE)
        raw = rng.normal(0.3, 0.8, (1, n))
    elif kind == "positive":
        y = rng.gamma(2.0, 1.0, n)
        raw = rng.normal(0.3, 0.8, (1, n))
    elif kind == "binary":
        y = (rng.random(n) < 0.4).astype(Y_DTYPE)
        raw = rng.normal(0, 2, (1, n))
    else:
        y = rng.integers(0, 3, n).astype(Y_DTYPE)
        raw = rng.normal(0, 2, (3, n))
    w = rng.uniform(0, 2, n) if weighted else None
    if weighted:
        w[:3] = 0.0
    return make(w), y, np.ascontiguousarray(raw), w


def compute(loss, y, raw, n_threads=2, constant_buffer=False):
    k, n = raw.shape
    if constant_buffer:
        g, h = loss.allocate(n)
    else:
        g = np.full((k, n), np.nan, dtype=G_H_DTYPE)
        h = np.full((k, n), np.nan, dtype=G_H_DTYPE)
    loss.gradients(y, raw, g, h, n_threads)
    return g, h


def finite_differences(ref, loss, y, raw, w):
    """Central differences of the weighted per-row loss along each raw row."""
    g_fd = np.empty_like(raw)
    h_fd = np.empty_like(raw)
    scale = np.ones(y.shape[0]) if w is None else w
    for k in range(raw.shape[0]):
        def at(step):
            shifted = raw.copy()
            shifted[k] += step
            return ref(loss, y, shifted)
        e1, e2 = 1e-5, 1e-3
        g_fd[k] = scale * (at(e1) - at(-e1)) / (2 * e1)
        h_fd[k] = scale * (at(e2) - 2 * at(0.0) + at(-e2)) / e2 ** 2
    return g_fd, h_fd


# ------------------------------------------------------ gradients / hessians

@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("case", list(CASES))
def test_gradients_match_finite_differences(case, weighted):
    loss, y, raw, w = make_problem(case, 400, seed=1, weighted=weighted)
    _, ref, _, smooth = CASES[case]
    g, h = compute(loss, y, raw)
    assert g.dtype == G_H_DTYPE and h.dtype == G_H_DTYPE
    assert g.shape == h.shape == raw.shape
    g_fd, h_fd = finite_differences(ref, loss, y, raw, w)
    keep = np.ones(y.shape[0], dtype=bool)
    if case.startswith("huber"):  # stay 0.01 away from the kinks at |r| = delta
        keep = np.abs(np.abs(y - raw[0]) - loss.delta_) > 1e-2
        assert keep.sum() > 300
    np.testing.assert_allclose(g[:, keep], g_fd[:, keep], rtol=1e-5, atol=1e-5)
    scale = np.ones(y.shape[0]) if w is None else w
    if smooth:
        np.testing.assert_allclose(h, h_fd, rtol=1e-5, atol=1e-5)
    else:
        # piecewise-linear: the weight stands in for the (zero) true hessian
        np.testing.assert_array_equal(h[0], scale.astype(G_H_DTYPE))
        inside = keep & (np.abs(y - raw[0]) < (loss.delta_ if case.startswith("huber")
                                                else 0.0))
        np.testing.assert_allclose(h_fd[0, keep & ~inside], 0, atol=1e-6)
        np.testing.assert_allclose(h_fd[0, inside], scale[inside], rtol=1e-5, atol=1e-6)
        if case.startswith("huber"):
            assert inside.sum() > 50 and (keep & ~inside).sum() > 20


@pytest.mark.parametrize("case", sorted(CONSTANT_HESSIAN))
def test_constant_hessian_buffer(case):
    loss, y, raw, _ = make_problem(case, 300, seed=2, weighted=False)
    assert loss.constant_hessian
    g_const, h_const = compute(loss, y, raw, constant_buffer=True)
    assert h_const.shape == (1, 1) and h_const[0, 0] == 1
    g_full, h_full = compute(loss, y, raw)  # per-row buffers pre-filled with NaN
    np.testing.assert_array_equal(g_const, g_full)
    np.testing.assert_array_equal(h_full, np.ones_like(h_full))
    g_forced, h_forced = loss.allocate_buffers(300, full_hessian=True)
    assert h_forced.shape == (1, 300)
    weighted, *_ = make_problem(case, 300, seed=2, weighted=True)
    assert not weighted.constant_hessian
    assert weighted.allocate(300)[1].shape == (1, 300)


@pytest.mark.parametrize("case", sorted(set(CASES) - CONSTANT_HESSIAN))
def test_non_constant_hessian_losses_allocate_per_row(case):
    loss, y, raw, _ = make_problem(case, 50, seed=3, weighted=False)
    assert not loss.constant_hessian
    g, h = loss.allocate(50)
    assert g.shape == h.shape == raw.shape


def test_kernels_reject_mismatched_buffers():
    rng = np.random.default_rng(0)
    y, raw = rng.random(10), rng.random((1, 10))
    w = np.ones(10)
    g = np.empty((1, 10), dtype=G_H_DTYPE)
    with pytest.raises(ValueError, match="hessians has length 1"):
        AbsoluteError(RowMeta(w)).gradients(y, raw, g, np.ones((1, 1), G_H_DTYPE), 1)
    with pytest.raises(ValueError, match="hessians has length 1"):
        PoissonLoss().gradients(y, raw, g, np.ones((1, 1), G_H_DTYPE), 1)
    with pytest.raises(ValueError, match="gradients has length 9"):
        SquaredError().gradients(y, raw, g[:, :9], np.ones((1, 1), G_H_DTYPE), 1)
    with pytest.raises(ValueError, match="sample_weight has length 5"):
        GammaLoss(RowMeta(np.ones(5))).gradients(y + 1, raw, g, g.copy(), 1)
    with pytest.raises(ValueError, match="one per class"):
        MultinomialLogLoss(3).gradients(y, rng.random((3, 10)), g, g.copy(), 1)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_unweighted_squared_error_is_the_float32_residual(n_threads):
    # The unweighted squared error has a loop of its own: it must give the
    # correctly rounded raw - y, bit for bit, on every row (vector body and
    # remainder alike), and ones in a per-row hessian buffer.
    rng = np.random.default_rng(5)
    n = 70_003
    y, raw = rng.standard_normal(n) * 1e3, rng.standard_normal((1, n))
    raw[0, :7] = [0.0, -0.0, 1e300, -1e300, 3e38, 2.0**-140, 1.0]
    y[:7] = [0.0, 0.0, 0.0, 0.0, -3e38, 0.0, 1.0]
    g = np.full((1, n), np.nan, dtype=G_H_DTYPE)
    h = np.full((1, n), np.nan, dtype=G_H_DTYPE)
    with np.errstate(over="ignore"):
        SquaredError().gradients(y, raw, g, h, n_threads)
        expected = (raw[0] - y).astype(G_H_DTYPE)
    np.testing.assert_array_equal(g[0].view(np.uint32), expected.view(np.uint32))
    np.testing.assert_array_equal(h, np.ones_like(h))


@pytest.mark.parametrize("case", list(CASES))
def test_results_do_not_depend_on_thread_count(case):
    loss, y, raw, _ = make_problem(case, 100_000, seed=4, weighted=True)
    g1, h1 = compute(loss, y, raw, n_threads=1)
    g2, h2 = compute(loss, y, raw, n_threads=2)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(h1, h2)
    np.testing.assert_array_equal(loss.row_loss(y, raw, n_threads=1),
                                  loss.row_loss(y, raw, n_threads=2))


def test_tweedie_endpoints_are_poisson_and_gamma():
    for power, other, seed in [(1.0, PoissonLoss, 5), (2.0, GammaLoss, 6)]:
        case = "tweedie-1" if power == 1 else "tweedie-2"
        tweedie, y, raw, w = make_problem(case, 500, seed, weighted=True)
        reference = other(RowMeta(w))
        for a, b in zip(compute(tweedie, y, raw), compute(reference, y, raw)):
            np.testing.assert_array_equal(a, b)
        assert tweedie.loss(y, raw) == pytest.approx(reference.loss(y, raw), rel=1e-14)


# ------------------------------------------------------------- loss values

@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("case", [c for c in CASES if c != "huber-auto"])
def test_loss_is_weighted_mean_of_reference(case, weighted):
    """Equal to the reference up to a constant in raw (0 for the non-deviances)."""
    loss, y, raw, w = make_problem(case, 300, seed=7, weighted=weighted)
    _, ref, kind, _ = CASES[case]
    other = raw + np.random.default_rng(8).normal(0, 0.5, raw.shape)
    for r in (raw, other):
        expected = np.average(ref(loss, y, r), weights=w)
        if kind in ("count", "positive"):  # half deviance: shift by saturated value
            expected -= np.average(ref(loss, y, np.log(np.maximum(y, 1e-300))[None]),
                                   weights=w)
        assert loss.loss(y, r) == pytest.approx(expected, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("case", [c for c in CASES if c != "huber-auto"])
def test_row_loss_matches_reference_row_by_row(case):
    """The per-row kernel against the reference, row by row (the
    deviances shifted by the reference's value at the saturated model)."""
    loss, y, raw, _ = make_problem(case, 2_000, seed=11, weighted=False)
    _, ref, kind, _ = CASES[case]
    expected = ref(loss, y, raw)
    if kind in ("count", "positive"):
        expected = expected - ref(loss, y, np.log(np.maximum(y, 1e-300))[None])
    np.testing.assert_allclose(loss.row_loss(y, raw), expected, rtol=1e-11, atol=1e-11)


def test_row_loss_kernels_reject_bad_input():
    from hgbt.engine._loss import LossKind, multinomial_row_losses, row_losses
    y, out = np.zeros(3), np.empty(3)
    with pytest.raises(ValueError, match="length"):
        row_losses(LossKind.SQUARED_ERROR, y, np.zeros(2), 0.0, out, 1)
    with pytest.raises(ValueError, match="unknown loss kind"):
        row_losses(max(LossKind) + 1, y, np.zeros(3), 0.0, out, 1)
    with pytest.raises(ValueError, match="not a class index"):
        multinomial_row_losses(np.array([0.0, 3.0, 1.0]), np.zeros((3, 3)), out, 1)
    with pytest.raises(ValueError, match="not a class index"):
        multinomial_row_losses(np.array([0.0, 0.5, 1.0]), np.zeros((3, 3)), out, 1)


@pytest.mark.parametrize("case", ["poisson", "gamma", "tweedie-1", "tweedie-1.3",
                                  "tweedie-1.5", "tweedie-1.9", "tweedie-2"])
def test_log_link_loss_is_half_mean_deviance(case):
    loss, y, raw, w = make_problem(case, 300, seed=9, weighted=True)
    power = {"poisson": 1, "gamma": 2}.get(case) or float(case.split("-")[1])
    mu = loss.inverse_link(raw)
    np.testing.assert_allclose(mu, np.exp(raw[0]))
    expected = 0.5 * mean_tweedie_deviance(y, mu, sample_weight=w, power=power)
    assert loss.loss(y, raw) == pytest.approx(expected, rel=1e-10)
    if case != "poisson" and case != "tweedie-1" and np.all(y > 0):
        assert loss.loss(y, np.log(y)[None]) == pytest.approx(0, abs=1e-12)


def test_log_loss_values_match_sklearn():
    binary, y, raw, w = make_problem("binary", 300, seed=10, weighted=True)
    proba = binary.inverse_link(raw)
    assert proba.shape == (300, 2)
    assert binary.loss(y, raw) == pytest.approx(sk_log_loss(y, proba, sample_weight=w))
    multi, y, raw, w = make_problem("multinomial", 300, seed=11, weighted=True)
    proba = multi.inverse_link(raw)
    assert proba.shape == (300, 3)
    assert multi.loss(y, raw) == pytest.approx(
        sk_log_loss(y, proba, sample_weight=w, labels=[0, 1, 2]))


def test_huber_loss_and_adaptive_delta():
    loss, y, raw, w = make_problem("huber-auto", 400, seed=12, weighted=True)
    assert loss.delta_ is None
    before = loss.loss(y, raw)  # delta from these residuals, not stored
    assert loss.delta_ is None
    compute(loss, y, raw)
    r = np.abs(y - raw[0])
    assert loss.delta_ == weighted_quantile(r, w, 0.9)
    assert before == pytest.approx(np.average(ref_huber(loss, y, raw), weights=w))
    # recomputed at every gradients call: halving the residuals halves delta
    half = (y - 0.5 * (y - raw[0]))[None]
    compute(loss, y, half)
    assert loss.delta_ == pytest.approx(0.5 * weighted_quantile(r, w, 0.9))
    # a given delta is never changed
    fixed = HuberLoss(0.7, RowMeta(w))
    compute(fixed, y, raw)
    assert fixed.delta_ == 0.7


def test_regression_inverse_link_is_identity():
    raw = np.arange(6.0).reshape(1, 6)
    for loss in (SquaredError(), AbsoluteError(), QuantileLoss(0.3), HuberLoss()):
        np.testing.assert_array_equal(loss.inverse_link(raw), raw[0])


# ------------------------------------------------------- weighted quantiles

@pytest.mark.parametrize("q", [0.05, 0.1, 0.25, 0.3, 0.5, 0.75, 0.9])
def test_weighted_quantile_matches_repeated_data(q):
    rng = np.random.default_rng(13)
    for n in (1, 2, 5, 10, 40):
        values = rng.normal(size=n)
        counts = rng.integers(1, 4, n)
        expected = np.quantile(np.repeat(values, counts), q,
                               method="averaged_inverted_cdf")
        assert weighted_quantile(values, counts.astype(float), q) == pytest.approx(
            expected, rel=1e-12, abs=1e-12)
        repeated = np.repeat(values, counts)
        unweighted = np.quantile(repeated, q, method="averaged_inverted_cdf")
        assert weighted_quantile(repeated, None, q) == pytest.approx(unweighted)
        assert weighted_quantile(repeated, np.ones(repeated.size), q) == \
            weighted_quantile(repeated, None, q)


def test_weighted_quantile_zero_weights():
    values = np.array([1.0, 2.0, 3.0, 100.0])
    assert weighted_quantile(values, np.array([1.0, 0.0, 1.0, 0.0]), 0.5) == 2.0
    assert weighted_quantile(values, np.array([0.0, 1.0, 0.0, 0.0]), 0.5) == 2.0
    assert weighted_quantile(values, np.zeros(4), 0.5) == 2.5  # all 0 -> unweighted
    assert weighted_quantile(np.array([3.0, 1.0, 2.0]), None, 0.5) == 2.0
    with pytest.raises(ValueError, match="empty"):
        weighted_quantile(np.array([]), None, 0.5)


# ----------------------------------------------------------------- baselines

def mean_loss_at(case, loss, y, w, constant):
    raw = np.broadcast_to(np.asarray(constant, dtype=float).reshape(-1, 1),
                          (loss.n_trees_per_iteration, y.shape[0]))
    return np.average(CASES[case][1](loss, y, raw), weights=w)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("case", [c for c in CASES
                                  if not c.startswith("huber") and c != "multinomial"])
def test_baseline_is_optimal_constant(case, weighted):
    loss, y, _, w = make_problem(case, 301, seed=14, weighted=weighted)
    base = loss.baseline(y)
    assert base.shape == (1,) and base.dtype == Y_DTYPE

    def f(c):
        return mean_loss_at(case, loss, y, w, c)

    best = minimize_scalar(f, bracket=(-1.0, 1.0), tol=1e-12)
    assert f(base[0]) <= best.fun + 1e-12
    if CASES[case][3]:  # strictly convex: the minimiser is unique
        assert base[0] == pytest.approx(best.x, abs=1e-5)
    else:  # piecewise linear: a minimiser is at a data point
        assert f(base[0]) <= min(f(c) for c in y) + 1e-12


def test_specific_baselines():
    rng = np.random.default_rng(15)
    y, w = rng.gamma(2.0, 1.0, 100), rng.uniform(0, 2, 100)
    assert PoissonLoss(RowMeta(w)).baseline(y)[0] == pytest.approx(np.log(np.average(y, weights=w)))
    assert SquaredError(RowMeta(w)).baseline(y)[0] == pytest.approx(np.average(y, weights=w))
    assert AbsoluteError().baseline(y[:99])[0] == np.median(y[:99])
    assert HuberLoss(1.0, RowMeta(w)).baseline(y)[0] == weighted_quantile(y, w, 0.5)
    assert HuberLoss().baseline(y[:99])[0] == np.median(y[:99])
    assert QuantileLoss(0.25, RowMeta(w)).baseline(y)[0] == weighted_quantile(y, w, 0.25)
    # clipped means: finite baselines for a single observed class
    assert BinaryLogLoss().baseline(np.zeros(10))[0] == pytest.approx(
        np.log(1e-15), rel=1e-6)
    assert BinaryLogLoss().baseline(np.ones(10))[0] == pytest.approx(
        -np.log(1e-15), rel=1e-6)
    multi = MultinomialLogLoss(3).baseline(np.zeros(10))
    assert np.all(np.isfinite(multi)) and multi[0] > 20


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_multinomial_baseline_is_optimal(weighted):
    loss, y, _, w = make_problem("multinomial", 300, seed=16, weighted=weighted)
    base = loss.baseline(y)
    assert base.shape == (3,) and abs(base.sum()) < 1e-12
    priors = np.bincount(y.astype(int), weights=w, minlength=3).astype(float)
    priors /= priors.sum()
    np.testing.assert_allclose(loss.inverse_link(base[:, None])[0], priors, rtol=1e-12)

    def f(c):
        return mean_loss_at("multinomial", loss, y, w, c)

    best = minimize(f, np.zeros(3), method="BFGS", options={"gtol": 1e-10})
    assert f(base) <= best.fun + 1e-12


# -------------------------------------------------------------- leaf refits

def leaf(seed, n, weighted, skew=False):
    rng = np.random.default_rng(seed)
    y = rng.normal(0, 1, n)
    if skew:
        y[: n // 5] += rng.uniform(5, 20, n // 5)  # outliers on one side
    raw = rng.normal(0, 0.3, n)
    w = rng.uniform(0.1, 3, n) if weighted else None
    return y, raw, w


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("quantile", [None, 0.05, 0.25, 0.5, 0.8, 0.95])
def test_refit_leaf_is_argmin_of_leaf_loss(quantile, weighted):
    loss = AbsoluteError() if quantile is None else QuantileLoss(quantile)
    assert loss.needs_leaf_refit
    q = 0.5 if quantile is None else quantile
    for seed, n in [(17, 37), (18, 200), (19, 4)]:
        y, raw, w = leaf(seed, n, weighted)
        value = loss.refit_leaf(y, raw, w)
        residuals = y - raw

        def f(c):  # mean leaf loss after adding c to raw, for an array of c
            diff = residuals[None, :] - np.atleast_1d(c)[:, None]
            per_row = np.maximum(q * diff, (q - 1) * diff)
            if quantile is None:
                per_row = np.abs(diff)
            return np.average(per_row, axis=1, weights=w)

        grid = np.linspace(residuals.min() - 0.1, residuals.max() + 0.1, 4001)
        brute = min(f(residuals).min(), f(grid).min())
        assert f(value)[0] <= brute + 1e-12
        best = minimize_scalar(lambda c: f(c)[0], bounds=(residuals.min(),
                               residuals.max()), method="bounded",
                               options={"xatol": 1e-10})
        assert f(value)[0] <= best.fun + 1e-12


def test_absolute_refit_is_median_of_residuals():
    y, raw, _ = leaf(20, 51, False)
    assert AbsoluteError().refit_leaf(y, raw, None) == np.median(y - raw)
    counts = np.arange(1, 52) % 4 + 1
    expected = np.median(np.repeat(y - raw, counts))
    assert AbsoluteError().refit_leaf(y, raw, counts.astype(float)) == \
        pytest.approx(expected)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("delta", [None, 0.5, 2.0])
def test_huber_refit_is_one_step_estimate(delta, weighted):
    y, raw, w = leaf(21, 301, weighted, skew=True)
    loss = HuberLoss(delta)
    full_raw = raw[None].copy()
    compute(loss, y, full_raw)  # sets delta_ for the adaptive variant
    d = loss.delta_
    assert d > 0
    value = loss.refit_leaf(y, raw, w)
    r = y - raw
    if w is None:
        median = np.median(r)
        expected = median + np.mean(np.clip(r - median, -d, d))
    else:
        median = weighted_quantile(r, w, 0.5)
        expected = median + np.sum(w * np.clip(r - median, -d, d)) / np.sum(w)
    assert value == pytest.approx(expected, rel=1e-12)

    def f(c):
        return np.average(ref_huber(loss, y, (raw + c)[None]), weights=w)

    best = minimize_scalar(f, bracket=(median - 1, median + 1), tol=1e-10).x
    assert f(value) < f(median)  # the outliers pull the optimum off the median
    assert abs(value - best) < abs(median - best)


# ------------------------------------------------------------------ domains

@pytest.mark.parametrize("loss, y, w, message", [
    (GammaLoss(), [1.0, 0.0, 2.0], None, "loss='gamma' requires strictly positive y"),
    (GammaLoss(), [1.0, -1.0], None, "strictly positive"),
    (PoissonLoss(), [1.0, -0.5], None, "loss='poisson' requires non-negative y"),
    (PoissonLoss(), [0.0, 0.0], None, "strictly positive \\(weighted\\) sum"),
    (PoissonLoss(RowMeta(np.array([0.0, 1.0]))), [3.0, 0.0], "w", "strictly positive"),
    (TweedieLoss(1.5), [1.0, -1.0], None, "loss='tweedie' requires non-negative y"),
    (TweedieLoss(2.0), [1.0, 0.0], None, "loss='tweedie' requires strictly positive"),
    (BinaryLogLoss(), [0.0, 2.0], None, "requires y in \\{0, 1\\}"),
    (BinaryLogLoss(), [0.0, 0.5], None, "requires y in \\{0, 1\\}"),
    (MultinomialLogLoss(3), [0.0, 3.0], None, "class indices 0..2"),
    (MultinomialLogLoss(3), [0.0, 1.5], None, "class indices 0..2"),
    (MultinomialLogLoss(3), [-1.0, 1.0], None, "class indices 0..2"),
    (AbsoluteError(), [0.0, np.nan], None, "loss='absolute_error' requires finite y"),
    (QuantileLoss(0.3), [np.inf], None, "loss='quantile' requires finite y"),
    (HuberLoss(), [np.nan], None, "loss='huber' requires finite y"),
])
def test_check_y_rejects_out_of_domain(loss, y, w, message):
    with pytest.raises(ValueError, match=message):
        loss.check_y(np.asarray(y, dtype=Y_DTYPE))


@pytest.mark.parametrize("case", list(CASES))
def test_check_y_accepts_domain(case):
    loss, y, _, _ = make_problem(case, 50, seed=22, weighted=True)
    loss.check_y(y)
    if case in ("poisson", "tweedie-1.5"):
        CASES[case][0](None).check_y(np.array([0.0, 0.0, 1.0]))


@pytest.mark.parametrize("make, message", [
    (lambda: QuantileLoss(0.0), "quantile must be a real number in \\(0, 1\\)"),
    (lambda: QuantileLoss(1.0), "quantile must be"),
    (lambda: QuantileLoss(-0.2), "quantile must be"),
    (lambda: QuantileLoss("0.5"), "quantile must be"),
    (lambda: QuantileLoss(np.ones(3)), "quantile must be"),
    (lambda: TweedieLoss(0.5), "tweedie power must be a real number in \\[1, 2\\]"),
    (lambda: TweedieLoss(2.5), "tweedie power"),
    (lambda: HuberLoss(0.0), "huber delta must be"),
    (lambda: HuberLoss(np.nan), "huber delta must be"),
    (lambda: HuberLoss(np.ones(3)), "huber delta must be"),
    (lambda: MultinomialLogLoss(1), "n_classes must be an integer >= 2"),
    (lambda: MultinomialLogLoss(2.5), "n_classes must be"),
    (lambda: CustomLoss("not callable"), "must be callable"),
])
def test_invalid_parameters(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ------------------------------------------------------------- stability

def test_binary_log_loss_is_stable_for_large_raw():
    raw = np.array([[-1000.0, -40.0, 0.0, 40.0, 1000.0] * 2])
    y = np.repeat([0.0, 1.0], 5)
    loss = BinaryLogLoss()
    g, h = compute(loss, y, raw)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    p = np.array([0.0, np.exp(-40.0), 0.5, 1.0, 1.0])
    np.testing.assert_allclose(g[0, :5], p, rtol=1e-6)  # y = 0: p
    np.testing.assert_allclose(g[0, 5:], [-1, -1, -0.5, -np.exp(-40.0), 0], rtol=1e-6)
    np.testing.assert_allclose(h[0, [1, 3]], np.exp(-40.0), rtol=1e-6)  # not 0
    assert h[0, 2] == 0.25 and h[0, 0] == 0 and h[0, 4] == 0
    proba = loss.inverse_link(raw)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    assert proba[0, 1] == 0 and proba[4, 1] == 1 and proba[1, 1] > 0
    losses = [loss.loss(y[i:i + 1], raw[:, i:i + 1]) for i in range(10)]
    np.testing.assert_allclose(losses, [0, 0, np.log(2), 40, 1000,
                                        1000, 40, np.log(2), 0, 0], atol=1e-15)


def test_binary_log_loss_is_float32_accurate():
    # The binary kernel works in float32 (a vector loop): within a few float32
    # ulps of the float64 formula, the rounding of raw to float32 included
    # (relative 6e-8 of |raw| in exp(-|raw|)).
    rng = np.random.default_rng(3)
    raw = np.concatenate([rng.normal(0, 3, 50_000), rng.uniform(-80, 80, 50_000)])
    y = (rng.random(raw.size) < 0.5).astype(Y_DTYPE)
    g, h = compute(BinaryLogLoss(), y, raw[None, :])
    e = np.exp(-np.abs(raw))
    g_ref = np.where(raw >= 0, (1 - y) - y * e, e * (1 - y) - y) / (1 + e)
    h_ref = e / (1 + e) ** 2
    tolerance = 4 * np.finfo(np.float32).eps + 6e-8 * np.abs(raw)
    assert np.all(np.abs(g[0] - g_ref) <= tolerance * np.abs(g_ref))
    assert np.all(np.abs(h[0] - h_ref) <= tolerance * h_ref)


def test_multinomial_is_float32_accurate():
    # Softmax in float32 (vector loops): within a few float32 ulps of float64,
    # with 1 - p of the top class taken from the other classes (no
    # cancellation for confident rows).
    rng = np.random.default_rng(5)
    K, n = 4, 3000
    raw = rng.normal(0, 3, (K, n))
    raw[:, :500] *= 12  # p of the top class within 1e-30 of 1
    y = rng.integers(0, K, n).astype(Y_DTYPE)
    g, h = compute(MultinomialLogLoss(K), y, raw)
    e = np.exp(raw - raw.max(axis=0))
    total = e.sum(axis=0)
    p = e / total
    q = np.array([np.delete(e, k, axis=0).sum(axis=0) for k in range(K)]) / total  # 1 - p
    g_ref = np.where(np.arange(K)[:, None] == y, -q, p)
    h_ref = p * q
    # raw - max rounded to float32: relative 6e-8 of it in each exp of the row
    tolerance = 4 * np.finfo(np.float32).eps + 6e-8 * np.ptp(raw, axis=0)
    keep = h_ref > 1e-30  # exps under 1e-38 (float32 normals) are dropped
    assert np.all(np.abs(g - g_ref)[keep] <= (tolerance * np.abs(g_ref))[keep])
    assert np.all(np.abs(h - h_ref)[keep] <= (tolerance * h_ref)[keep])
    # confident rows were checked: 1 - p of their top class is far below float32's eps
    top = raw.argmax(axis=0), np.arange(n)
    assert np.count_nonzero(keep[top] & (q[top] < 1e-10)) > 100


def test_multinomial_is_stable_for_large_raw():
    raw = np.array([[1000.0, -1000.0, 0.0, 1000.0, 0.0],
                    [-1000.0, 1000.0, 0.0, 1000.0, 0.0],
                    [0.0, -1000.0, 1000.0, -1000.0, 0.0]])
    y = np.array([0.0, 0.0, 2.0, 1.0, 1.0])
    w = np.array([1.0, 2.0, 1.0, 1.0, 3.0])
    loss = MultinomialLogLoss(3, RowMeta(w))
    g, h = compute(loss, y, raw)
    assert np.all(np.isfinite(g)) and np.all(np.isfinite(h))
    np.testing.assert_allclose(g.sum(axis=0), 0, atol=1e-6)
    np.testing.assert_allclose(g[:, 0], [0, 0, 0], atol=1e-7)
    np.testing.assert_allclose(g[:, 1], [-2, 2, 0], atol=1e-7)
    np.testing.assert_allclose(g[:, 3], [0.5, -0.5, 0], atol=1e-7)
    np.testing.assert_allclose(h[:, 3], [0.25, 0.25, 0], atol=1e-7)
    np.testing.assert_allclose(g[:, 4], 3 * (np.full(3, 1 / 3) - [0, 1, 0]), rtol=1e-6)
    proba = loss.inverse_link(raw)
    assert proba.shape == (5, 3) and np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1, rtol=1e-14)
    single = MultinomialLogLoss(3)
    assert single.loss(y[1:2], raw[:, 1:2]) == pytest.approx(2000)
    assert single.loss(y[3:4], raw[:, 3:4]) == pytest.approx(np.log(2))


# ------------------------------------------------------------- custom loss

def squared_error_func(y_true, raw_prediction, sample_weight):
    w = 1.0 if sample_weight is None else sample_weight
    return w * (raw_prediction - y_true), w * np.ones_like(y_true)


def test_custom_loss_matches_builtin():
    loss, y, raw, w = make_problem("squared", 200, seed=23, weighted=True)
    custom = get_loss(squared_error_func, RowMeta(w))
    assert isinstance(custom, CustomLoss) and not custom.constant_hessian
    g, h = custom.allocate(200)
    custom.gradients(y, raw, g, h, 2)
    g_ref, h_ref = compute(loss, y, raw)
    np.testing.assert_array_equal(g, g_ref)
    np.testing.assert_array_equal(h, h_ref)
    # the constant where the gradients sum to zero: the weighted mean (to the
    # float32 precision of the gradients the search reads)
    np.testing.assert_allclose(custom.baseline(y), loss.baseline(y), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(custom.inverse_link(raw), raw[0])
    with pytest.raises(ValueError, match="scoring='loss' needs a built-in loss"):
        custom.loss(y, raw)


def test_custom_loss_receives_read_only_inputs():
    seen = {}

    def func(y_true, raw_prediction, sample_weight):
        seen.update(y=y_true, raw=raw_prediction, w=sample_weight)
        with pytest.raises(ValueError, match="read-only"):
            raw_prediction[0] = 1.0
        return np.zeros(3), np.ones(3, dtype=np.int64)

    y, raw, w = np.arange(3.0), np.full((1, 3), 5.0), np.array([1.0, 2.0, 3.0])
    custom = CustomLoss(func, RowMeta(w))
    g, h = custom.allocate(3)
    custom.gradients(y, raw, g, h, 1)
    assert seen["raw"].shape == (3,) and np.all(seen["raw"] == 5.0)
    np.testing.assert_array_equal(seen["w"], w)
    np.testing.assert_array_equal(h, np.ones((1, 3)))
    CustomLoss(func).gradients(y, raw, g, h, 1)
    assert seen["w"] is None


@pytest.mark.parametrize("result, message", [
    ((np.zeros(4), np.ones(5)), "gradient of shape \\(4,\\); expected \\(5,\\)"),
    ((np.zeros((5, 1)), np.ones(5)), "gradient of shape \\(5, 1\\)"),
    ((np.zeros(5), np.ones(6)), "hessian of shape \\(6,\\)"),
    ((np.array([0, 0, np.nan, 0, 0]), np.ones(5)), "gradient with NaN or infinite"),
    ((np.zeros(5), np.array([1, 1, np.inf, 1, 1])), "hessian with NaN or infinite"),
    ((np.zeros(5), np.array([1, 1, -0.1, 1, 1])), "negative hessian"),
    ((np.array(list("abcde")), np.ones(5)), "non-numeric gradient"),
    ((np.zeros(5), np.array([None] * 5)), "non-numeric hessian"),
    ((np.zeros(5), np.ones(5, dtype=bool)), "non-numeric hessian"),
    ((np.full(5, 1e40), np.ones(5)), "gradient too large for float32"),
    (np.zeros(5), "must return a \\(gradient, hessian\\) pair"),
    ((np.zeros(5),), "must return a \\(gradient, hessian\\) pair"),
    (None, "must return a \\(gradient, hessian\\) pair"),
])
def test_custom_loss_validation(result, message):
    custom = CustomLoss(lambda y, raw, w: result)
    g, h = custom.allocate(5)
    with pytest.raises(ValueError, match=message):
        custom.gradients(np.zeros(5), np.zeros((1, 5)), g, h, 1)


# ------------------------------------------------------------------ factory

@pytest.mark.parametrize("name, kwargs, cls, attrs", [
    ("squared_error", {}, SquaredError, {}),
    ("absolute_error", {}, AbsoluteError, {}),
    ("huber", {}, HuberLoss, {"delta": None}),
    ("huber", {"huber_delta": 2.5}, HuberLoss, {"delta": 2.5, "delta_": 2.5}),
    ("quantile", {"quantile": 0.3}, QuantileLoss, {"quantile": 0.3}),
    ("poisson", {}, PoissonLoss, {}),
    ("gamma", {}, GammaLoss, {}),
    ("tweedie", {}, TweedieLoss, {"power": 1.5}),
    ("tweedie", {"tweedie_power": 1.2}, TweedieLoss, {"power": 1.2}),
    ("log_loss", {"n_classes": 2}, BinaryLogLoss, {"n_trees_per_iteration": 1}),
    ("log_loss", {"n_classes": 4}, MultinomialLogLoss, {"n_trees_per_iteration": 4}),
])
def test_get_loss(name, kwargs, cls, attrs):
    w = np.ones(3)
    loss = get_loss(name, RowMeta(w), **kwargs)
    assert type(loss) is cls and loss.sample_weight is w
    assert name in LOSS_NAMES
    for key, value in attrs.items():
        assert getattr(loss, key) == value
    assert get_loss(name, **kwargs).sample_weight is None


@pytest.mark.parametrize("args, kwargs, message", [
    (("hinge",), {}, "unknown loss 'hinge'; valid losses are 'squared_error', "
                     "'absolute_error', 'huber', 'quantile', 'poisson', 'gamma', "
                     "'tweedie', 'log_loss', 'lambdarank', 'pairwise', 'cox', 'aft' or a callable"),
    ((3,), {}, "unknown loss 3"),
    (("quantile",), {}, "loss='quantile' requires quantile"),
    (("quantile",), {"quantile": 1.5}, "quantile must be"),
    (("log_loss",), {}, "loss='log_loss' requires n_classes"),
    (("log_loss",), {"n_classes": 1}, "requires n_classes >= 2"),
    (("tweedie",), {"tweedie_power": 3}, "tweedie power"),
    (("huber",), {"huber_delta": -1}, "huber delta"),
])
def test_get_loss_errors(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        get_loss(*args, **kwargs)


_EVERY_LOSS = [SquaredError(), AbsoluteError(), QuantileLoss(0.3), HuberLoss(), PoissonLoss(),
               GammaLoss(), TweedieLoss(1.5), BinaryLogLoss(), MultinomialLogLoss(3),
               CustomLoss(lambda y, raw, w: (raw - y, np.ones_like(y))),
               CustomBinaryLoss(lambda y, raw, w: (raw - y, np.ones_like(y))),
               LambdaRankLoss(RowMeta(qid=np.zeros(5))),
               CoxLoss(RowMeta(label_upper_bound=np.ones(5))),
               AFTLoss(RowMeta(label_upper_bound=np.ones(5))), MultiSquaredError(3),
               MultiLogLoss(3)]


def test_every_loss_class_has_its_link_checked():
    # a new loss with its own inverse_link must join the test below
    def concrete(cls):
        for sub in cls.__subclasses__():
            yield from concrete(sub)
            if not sub.__name__.startswith("_"):
                yield sub
    assert set(concrete(BaseLoss)) == {type(loss) for loss in _EVERY_LOSS}


@pytest.mark.parametrize("loss", _EVERY_LOSS)
def test_link_names_what_inverse_link_computes(loss):
    # the exporters read ``link``; predictions come from ``inverse_link``
    raw = np.random.default_rng(0).normal(size=(loss.n_trees_per_iteration, 5))
    # (several outputs: one column each)
    expected = {"identity": lambda r: r[0] if r.shape[0] == 1 else r.T,
                "exp": lambda r: np.exp(r[0]),
                "logistic": lambda r: np.column_stack([1 / (1 + np.exp(r[0])),
                                                       1 / (1 + np.exp(-r[0]))])
                if r.shape[0] == 1 else 1 / (1 + np.exp(-r.T)),  # labels: P(1) each
                "softmax": lambda r: (np.exp(r) / np.exp(r).sum(axis=0)).T}[loss.link](raw)
    np.testing.assert_allclose(loss.inverse_link(raw), expected, rtol=1e-12)


def _pseudo_huber(y_true, raw_prediction, sample_weight, delta=2.0):
    r = raw_prediction - y_true
    s = np.sqrt(1.0 + (r / delta) ** 2)
    return r / s, 1.0 / s ** 3


def test_a_custom_loss_starts_where_its_gradients_sum_to_zero():
    from scipy.optimize import brentq
    rng = np.random.default_rng(0)
    y = rng.lognormal(5, 1, size=2000)  # skewed, far from 0
    root = brentq(lambda c: np.sum(_pseudo_huber(y, np.full_like(y, c), None)[0]),
                  y.min(), y.max(), xtol=1e-12)
    np.testing.assert_allclose(CustomLoss(_pseudo_huber).baseline(y), [root], rtol=1e-6)
    # a loss on another scale: a Poisson loss on log(mu) starts at log(mean y)
    def log_scale(y_true, raw, w):
        mu = np.exp(np.minimum(raw, 50.0))
        return mu - y_true, mu
    np.testing.assert_allclose(CustomLoss(log_scale).baseline(y * 1e-3),
                               [np.log(np.mean(y * 1e-3))], rtol=1e-5)
    # gradients of one sign everywhere: no best constant, 0 as before
    def falling(y_true, raw, w):
        return np.full_like(y_true, -1.0), np.ones_like(y_true)
    np.testing.assert_array_equal(CustomLoss(falling).baseline(y), [0.0])
    np.testing.assert_array_equal(CustomLoss(_pseudo_huber).baseline(np.full(5, 3.0)), [3.0])


def test_a_pseudo_huber_fit_no_longer_starts_from_zero():
    from hgbt import HistGBDTRegressor
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1500, 5))
    y = 5000 + 800 * X[:, 0] + 100 * rng.normal(size=1500)
    model = HistGBDTRegressor(loss=_pseudo_huber, max_iter=50, early_stopping=False)
    model.fit(X, y)
    assert abs(float(model.booster_.baseline[0]) - np.median(y)) < 100
    assert model.score(X, y) > 0.9



def test_huber_scores_no_rows_without_error():
    # a Dask shard scores its (possibly empty) validation set with the
    # adaptive delta not yet fitted: no rows is no loss, not an error
    loss = HuberLoss(None, None)
    stats = loss.for_rows(None).loss_statistics(np.empty(0), np.empty((1, 0)))
    assert np.isnan(stats.value())
    assert np.isnan(loss._adaptive_delta(np.empty(0), np.empty(0), None))
