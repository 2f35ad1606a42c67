"""Survival kernels against finite differences of the log-likelihood, and the
concordance index against a brute-force count."""
import numpy as np
import pytest

from hgbt.core.row_meta import RowMeta
from hgbt.engine.survival import AFTLoss, CoxLoss, concordance_index


def _cox_nll(eta, time, event, w):
    """Negative log partial likelihood, Breslow's ties, brute force."""
    total = 0.0
    for i in np.flatnonzero(event):
        at_risk = time >= time[i]
        total += w[i] * (np.log(np.sum(w[at_risk] * np.exp(eta[at_risk]))) - eta[i])
    return total


def _kernel(loss, y, raw):
    g = np.empty((1, y.size), dtype=np.float32)
    h = np.empty_like(g)
    loss.gradients(y, raw[None, :], g, h, 1)
    return g[0].astype(np.float64), h[0].astype(np.float64)


def _cox_problem(seed, n=40):
    rng = np.random.default_rng(seed)
    time = rng.integers(1, 12, n).astype(np.float64)  # many tied times
    event = rng.random(n) < 0.6
    return time, event, rng.uniform(0.3, 2.0, n), rng.normal(size=n)


@pytest.mark.parametrize("weighted", [False, True])
def test_cox_gradients_and_hessians_are_derivatives_of_the_partial_likelihood(weighted):
    time, event, w, eta = _cox_problem(3)
    w = w if weighted else np.ones_like(w)
    upper = np.where(event, time, np.inf)
    loss = CoxLoss(RowMeta(w if weighted else None, label_upper_bound=upper))
    g, h = _kernel(loss, time, eta)
    eps = 1e-5
    for k in range(time.size):
        e = np.zeros(time.size)
        e[k] = eps
        plus, minus = _cox_nll(eta + e, time, event, w), _cox_nll(eta - e, time, event, w)
        assert g[k] == pytest.approx((plus - minus) / (2 * eps), rel=1e-5, abs=1e-6)
        e[k] = 1e-3  # a wider step for the second difference (its rounding error)
        plus, minus = _cox_nll(eta + e, time, event, w), _cox_nll(eta - e, time, event, w)
        centre = _cox_nll(eta, time, event, w)
        assert h[k] == pytest.approx((plus - 2 * centre + minus) / 1e-6, rel=1e-4, abs=1e-6)
    # its value: the weighted mean over events
    stats = loss.loss_statistics(time, eta[None, :])
    expected = _cox_nll(eta, time, event, w) / np.sum(w * event)
    assert stats.value() == pytest.approx(expected, rel=1e-12)


def test_cox_does_not_depend_on_a_shift_of_the_scores():
    time, event, w, eta = _cox_problem(4, n=200)
    loss = CoxLoss(RowMeta(label_upper_bound=np.where(event, time, np.inf)))
    for a, b in zip(_kernel(loss, time, eta), _kernel(loss, time, eta + 300.0)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def _aft_nll(eta, lower, upper, sigma, dist):
    from scipy import stats
    law = {"normal": stats.norm, "logistic": stats.logistic,
           "extreme": stats.gumbel_l}[dist]
    z = lambda t: (np.log(t) - eta) / sigma  # noqa: E731
    if lower == upper:
        return -law.logpdf(z(lower)) + np.log(sigma * lower)
    if upper == np.inf:
        return -law.logsf(z(lower))
    if lower == 0:
        return -law.logcdf(z(upper))
    return -np.log(law.sf(z(lower)) - law.sf(z(upper)))  # the upper tail, accurately


CENSORING = {"exact": (3.0, 3.0), "right": (3.0, np.inf), "left": (0.0, 3.0),
             "interval": (2.0, 5.0)}


@pytest.mark.parametrize("dist", ["normal", "logistic", "extreme"])
@pytest.mark.parametrize("censoring", list(CENSORING))
@pytest.mark.parametrize("sigma", [0.5, 1.3])
def test_aft_gradients_and_hessians_are_derivatives_of_the_likelihood(dist, censoring, sigma):
    lower, upper = CENSORING[censoring]
    etas = np.linspace(-1.0, 2.5, 8)
    y = np.full(etas.size, lower)
    loss = AFTLoss(RowMeta(label_upper_bound=np.full(etas.size, upper)), dist, sigma)
    g, h = _kernel(loss, y, etas)
    values = loss.row_loss(y, etas[None, :])
    eps = 1e-4
    for i, eta in enumerate(etas):
        f = lambda e: _aft_nll(e, lower, upper, sigma, dist)  # noqa: E731
        assert values[i] == pytest.approx(f(eta), rel=1e-9, abs=1e-12)
        # clipped as XGBoost clips them: gradients to [-15, 15], hessians to [1e-16, 15]
        first = (f(eta + eps) - f(eta - eps)) / (2 * eps)
        assert g[i] == pytest.approx(np.clip(first, -15, 15), rel=1e-4, abs=1e-6)
        second = (f(eta + eps) - 2 * f(eta) + f(eta - eps)) / eps ** 2
        assert h[i] == pytest.approx(np.clip(second, 1e-16, 15), rel=2e-3, abs=1e-5)
    assert np.any((np.abs(g) < 15) & (h < 15))  # not every case clipped


def test_aft_far_tails_stay_finite_and_clipped():
    y = np.array([1e-8, 1e8, 1.0])
    upper = np.array([1e-8, np.inf, 1.0])
    loss = AFTLoss(RowMeta(label_upper_bound=upper), "normal", 0.2)
    g, h = _kernel(loss, y, np.array([50.0, -50.0, 300.0]))
    assert np.all(np.isfinite(g)) and np.all(np.abs(g) <= 15)
    assert np.all((h >= 1e-16) & (h <= 15))


def test_aft_baseline_minimises_the_loss():
    rng = np.random.default_rng(0)
    time = np.exp(rng.normal(1.0, 0.8, 500))
    event = rng.random(500) < 0.7
    upper = np.where(event, time, np.inf)
    loss = AFTLoss(RowMeta(label_upper_bound=upper), "logistic", 1.0)
    eta = loss.baseline(time)[0]
    value = loss.loss(time, np.full((1, 500), eta))
    for other in (eta - 0.01, eta + 0.01):
        assert loss.loss(time, np.full((1, 500), other)) > value


def _brute_concordance(time, event, risk, w):
    concordant = comparable = 0.0
    for i in range(time.size):
        if not event[i]:
            continue
        for j in range(time.size):
            if time[i] < time[j] or (time[i] == time[j] and not event[j]):
                comparable += w[i]
                concordant += w[i] * (1.0 if risk[i] > risk[j] else
                                      0.5 if risk[i] == risk[j] else 0.0)
    return concordant / comparable


def test_concordance_index_matches_a_brute_force_count():
    rng = np.random.default_rng(1)
    time = rng.integers(0, 15, 120).astype(float)
    event = rng.random(120) < 0.5
    risk = np.round(rng.normal(size=120), 1)  # tied risks
    w = rng.uniform(0.5, 2, 120)
    assert concordance_index(time, event, risk) == pytest.approx(
        _brute_concordance(time, event, risk, np.ones(120)), rel=1e-12)
    assert concordance_index(time, event, risk, w) == pytest.approx(
        _brute_concordance(time, event, risk, w), rel=1e-12)
    distinct = np.arange(120.0)
    assert concordance_index(distinct, event, -distinct) == 1.0
    assert concordance_index(distinct, event, distinct) == 0.0


# ------------------------------------------------------------ the estimator
import pickle  # noqa: E402

from sklearn.model_selection import GridSearchCV, KFold  # noqa: E402

from hgbt import HistGBDTSurvival, load_model, save_model  # noqa: E402

FAST = dict(max_iter=30, early_stopping=False, random_state=0)


def survival_problem(n=1500, seed=0, censor=0.3):
    """Exponential times whose log hazard is 1.2 x0 - 0.8 x1; a share
    ``censor`` of the rows censored at a uniform fraction of their time."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    time = rng.exponential(np.exp(-(1.2 * X[:, 0] - 0.8 * X[:, 1])))
    censored = rng.random(n) < censor
    time = np.where(censored, time * rng.uniform(0.2, 1.0, n), time)
    return X, np.array(list(zip(~censored, time)), dtype=[("event", bool), ("time", float)])


@pytest.mark.parametrize("loss", ["cox", "aft"])
def test_the_model_orders_risks(loss):
    X, y = survival_problem()
    X_test, y_test = survival_problem(seed=1)
    model = HistGBDTSurvival(loss, **FAST).fit(X, y)
    oracle = concordance_index(y_test["time"], y_test["event"],
                               1.2 * X_test[:, 0] - 0.8 * X_test[:, 1])
    assert oracle - 0.03 < model.score(X_test, y_test) <= oracle + 0.01
    times = [0.0, 0.2, 1.0, 5.0]
    survival = model.predict_survival_function(X_test[:50], times)
    assert survival.shape == (50, 4) and np.all((survival >= 0) & (survival <= 1))
    assert np.all(np.diff(survival, axis=1) <= 0)
    if loss == "cox":
        np.testing.assert_array_equal(survival[:, 0], 1.0)


def test_breslow_baseline_hazard_matches_a_brute_force_sum():
    X, y = survival_problem(n=300)
    w = np.random.default_rng(2).uniform(0.5, 2, 300)
    model = HistGBDTSurvival(**FAST).fit(X, y, sample_weight=w)
    hazard = model.predict(X)
    times, cumulative = model.baseline_hazard_
    expected, total = [], 0.0
    for t in np.unique(y["time"][y["event"]]):
        deaths = np.sum(w[(y["time"] == t) & y["event"]])
        total += deaths / np.sum(w[y["time"] >= t] * hazard[y["time"] >= t])
        expected.append(total)
    np.testing.assert_allclose(times, np.unique(y["time"][y["event"]]))
    np.testing.assert_allclose(cumulative, expected, rtol=1e-12)


def test_aft_takes_interval_censored_bounds():
    X, y = survival_problem()
    t = y["time"]
    bounds = np.column_stack([t, np.where(y["event"], t, np.inf)])
    same = HistGBDTSurvival("aft", **FAST).fit(X, bounds).predict(X)
    np.testing.assert_array_equal(same, HistGBDTSurvival("aft", **FAST).fit(X, y).predict(X))
    # widen every exact time into an interval, and left-censor some rows
    intervals = np.column_stack([t * 0.8, np.where(y["event"], t * 1.25, np.inf)])
    intervals[:100, 0] = 0.0
    model = HistGBDTSurvival("aft", aft_distribution="logistic", **FAST).fit(X, intervals)
    assert model.score(X, y) > 0.7
    with pytest.raises(ValueError, match="right-censored times only"):
        HistGBDTSurvival("cox", **FAST).fit(X, intervals)


@pytest.mark.parametrize("loss", ["cox", "aft"])
def test_threads_early_stopping_and_persistence(loss, tmp_path):
    X, y = survival_problem()
    one = HistGBDTSurvival(loss, **FAST, n_threads=1).fit(X, y)
    two = HistGBDTSurvival(loss, **FAST, n_threads=2).fit(X, y)
    np.testing.assert_array_equal(one.predict(X), two.predict(X))
    stopped = HistGBDTSurvival(loss, max_iter=500, early_stopping=True, n_iter_no_change=5,
                               eval_metric=None, random_state=0).fit(X, y)
    assert stopped.n_iter_ < 500 and "loss" in stopped.evals_result_["validation"]
    for loaded in (pickle.loads(pickle.dumps(one)),
                   (save_model(one, tmp_path / "m.json"), load_model(tmp_path / "m.json"))[1]):
        assert type(loaded) is HistGBDTSurvival
        np.testing.assert_array_equal(loaded.predict(X), one.predict(X))
        np.testing.assert_array_equal(loaded.predict_survival_function(X[:5], [0.5, 1]),
                                      one.predict_survival_function(X[:5], [0.5, 1]))


def test_grid_search_scores_the_concordance():
    X, y = survival_problem(n=600)
    search = GridSearchCV(HistGBDTSurvival(**FAST), {"learning_rate": [0.05, 0.3]},
                          cv=KFold(3)).fit(X, y)
    assert 0.6 < search.best_score_ < 1


@pytest.mark.parametrize("y_of, message", [
    (lambda y: y["time"], "structured array of \\(event, time\\)"),
    (lambda y: np.array(list(zip(y["event"], -y["time"])), dtype=y.dtype), "0 <= lower"),
    (lambda y: np.array(list(zip(y["time"], y["time"])),
                        dtype=[("a", float), ("b", float)]), "two fields"),
])
def test_bad_targets_get_a_clear_error(y_of, message):
    X, y = survival_problem(n=200)
    with pytest.raises(ValueError, match=message):
        HistGBDTSurvival(**FAST).fit(X, y_of(y))


def test_aft_refuses_an_event_at_time_zero_and_cox_reports_divergence():
    X, y = survival_problem(n=400)
    y["time"][0], y["event"][0] = 0.0, True
    HistGBDTSurvival("cox", **FAST).fit(X, y)  # Cox reads the order only
    with pytest.raises(ValueError, match="an event at time 0 has no log"):
        HistGBDTSurvival("aft", **FAST).fit(X, y)
    with pytest.raises(ValueError, match="the Cox fit diverged"):
        HistGBDTSurvival("cox", max_iter=300, min_samples_leaf=1, min_child_weight=0.0,
                         l2_regularization=0.0, learning_rate=1.0,
                         early_stopping=False).fit(X, y)


def test_a_dataset_with_upper_bounds_and_the_native_api():
    import hgbt
    X, y = survival_problem()
    upper = np.where(y["event"], y["time"], np.inf)
    for loss in ("cox", "aft"):
        reference = HistGBDTSurvival(loss, **FAST).fit(X, y)
        data = hgbt.Dataset(X, y["time"], label_upper_bound=upper)
        model = HistGBDTSurvival(loss, **FAST).fit(data)
        np.testing.assert_array_equal(model.predict(X), reference.predict(X))
        if loss == "cox":
            np.testing.assert_array_equal(model.baseline_hazard_, reference.baseline_hazard_)
        booster = hgbt.train({"loss": loss, "max_iter": 30, "random_state": 0}, data)
        np.testing.assert_array_equal(booster.predict(X), reference.predict(X))
    with pytest.raises(ValueError, match="needs each time's upper bound"):
        HistGBDTSurvival(**FAST).fit(hgbt.Dataset(X, y["time"]))


def test_review_cases_cox_spread_start_scores_and_a_booster_file(tmp_path):
    import hgbt
    # a spread of scores within the accepted range keeps every risk set
    time, event = np.array([1.0, 2.0, 3.0]), np.array([True, True, True])
    loss = CoxLoss(RowMeta(label_upper_bound=time))
    g, _ = _kernel(loss, time, np.array([340.0, -300.0, -310.0]))
    expected = np.array([0.0, 1 / (1 + np.exp(-10.0)) - 1, 1 / (1 + np.exp(10.0))])
    np.testing.assert_allclose(g, expected, atol=1e-6)
    assert np.isfinite(loss.loss(time, np.array([[340.0, -300.0, -310.0]])))
    assert np.isnan(CoxLoss(RowMeta(label_upper_bound=np.full(3, np.inf))).loss(
        time, np.zeros((1, 3))))  # no event: no value, not a perfect 0
    # the baseline hazard counts the rows' start scores
    X, y = survival_problem(n=300)
    offset = np.random.default_rng(0).normal(size=300)
    model = HistGBDTSurvival(**FAST).fit(X, y, init_score=offset)
    hazard = model.predict(X) * np.exp(offset)
    first = np.min(y["time"][y["event"]])
    np.testing.assert_allclose(model.baseline_hazard_[1][0],
                               np.sum(y["event"] & (y["time"] == first))
                               / np.sum(hazard[y["time"] >= first]), rtol=1e-12)
    hgbt.save_model(model.booster_, tmp_path / "booster.json")
    loaded = hgbt.load_model(tmp_path / "booster.json")
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    with pytest.raises(ValueError, match="no baseline hazard"):
        loaded.predict_survival_function(X[:2], [1.0])
