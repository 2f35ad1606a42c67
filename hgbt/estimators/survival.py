"""HistGBDTSurvival: gradient-boosted trees for times to an event."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from ..core._openmp import effective_n_threads
from ..core._types import Y_DTYPE
from ..core.params import SURVIVAL, constraints, make_init
from ..data.dataset import Dataset, MatrixLike
from ..engine.survival import TimeOrder, concordance_index
from ..model.booster import objective_from_params
from ..persistence import register_estimator
from .docstrings import COMMON_ATTRIBUTES_DOC, COMMON_PARAMETERS_DOC, FIT_DOC
from .gradient_boosting import BaseHistGBDT, peer_predict_options
from .monitoring import RegressionRound

#: scipy's laws of the AFT noise (extreme: the minimum Gumbel law)
_LAWS = {"normal": stats.norm, "logistic": stats.logistic, "extreme": stats.gumbel_l}

SURVIVAL_FIT_DOC = FIT_DOC.replace("""y : array-like of shape (n_samples,) or (n_samples, n_outputs)
    Targets (regression: finite numbers; classification: labels). A
    regressor with ``loss='squared_error'`` takes several columns: one
    model of every output, one tree per output a round
    (``doc/multi_output.md``).""", """y : structured array of shape (n_samples,), or array of shape (n_samples, 2)
    A structured array with a boolean field (the event happened) and
    a numeric one (its time, or the censoring time), as
    scikit-survival's ``Surv.from_arrays`` makes: right censoring. Or
    the bounds of each time, columns (lower, upper), as XGBoost's
    ``label_lower_bound`` / ``label_upper_bound``: equal for an exact
    time, ``upper = inf`` right-censored, ``lower = 0`` left-censored,
    else interval-censored (``loss='aft'`` only).""", 1)


def survival_bounds(y):
    """``(lower, upper)`` float64 bounds of each row's time from ``y`` (see
    ``fit``), checked: 0 <= lower <= upper, lower finite (the AFT loss also
    needs upper > 0: the log of a time)."""
    y = np.asarray(y)
    if y.dtype.names is not None:
        kinds = {name: y.dtype[name].kind for name in y.dtype.names}
        event = [n for n, k in kinds.items() if k == "b"]
        time = [n for n, k in kinds.items() if k in "iuf"]
        if len(y.dtype.names) != 2 or len(event) != 1 or len(time) != 1:
            raise ValueError("a structured y holds two fields: the event flag (bool) and "
                             f"the time (numbers); got fields {kinds}.")
        lower = y[time[0]].astype(np.float64)
        upper = np.where(y[event[0]], lower, np.inf)
    else:
        bounds = np.asarray(y, dtype=np.float64)
        if bounds.ndim != 2 or bounds.shape[1] != 2:
            raise ValueError("y must be a structured array of (event, time), e.g. "
                             "sksurv.util.Surv.from_arrays(event, time), or the bounds "
                             f"(lower, upper) of each time as 2 columns; got shape "
                             f"{bounds.shape}.")
        lower, upper = bounds[:, 0].copy(), bounds[:, 1].copy()
    bad = ~np.isfinite(lower) | (lower < 0) | np.isnan(upper) | (upper < lower)
    if np.any(bad):
        raise ValueError("survival times must satisfy 0 <= lower <= upper (upper may be inf) "
                         f"with a finite lower bound; row {np.flatnonzero(bad)[0]} has "
                         f"({lower[bad][0]!r}, {upper[bad][0]!r}).")
    return lower, upper


@register_estimator
class HistGBDTSurvival(BaseHistGBDT):
    __doc__ = f"""Histogram-based gradient-boosted trees for time-to-event data.

    ``loss='cox'``: Cox proportional hazards (the negative log partial
    likelihood with Breslow's ties; right-censored times, sample weights);
    the trees learn the log hazard ratio. ``loss='aft'``: an accelerated
    failure time model, ``log T = f(x) + aft_sigma * Z`` with ``Z`` normal,
    logistic or extreme-value, for exact, right-, left- and
    interval-censored times. ``y`` follows scikit-survival (a structured
    array of event flag and time) or gives each time's bounds (XGBoost's
    convention); ``score`` is Harrell's concordance index.

    Parameters
    ----------
    loss : {{'cox', 'aft'}}, default='cox'
        The survival model.
    aft_distribution : {{'normal', 'logistic', 'extreme'}}, default='normal'
        AFT: the law of ``Z`` (XGBoost's ``aft_loss_distribution``).
    aft_sigma : float, default=1.0
        AFT: the scale of the noise (XGBoost's ``aft_loss_distribution_scale``).
{COMMON_PARAMETERS_DOC}

    Attributes
    ----------
{COMMON_ATTRIBUTES_DOC}
    baseline_hazard_ : ndarray of shape (2, n_event_times)
        Cox: the distinct event times of the training rows and Breslow's
        cumulative baseline hazard at each (the survival function's).

    Examples
    --------
    >>> import numpy as np
    >>> from hgbt import HistGBDTSurvival
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3))
    >>> time = rng.exponential(np.exp(-X[:, 0]))
    >>> y = np.array(list(zip(rng.random(500) < 0.7, time)),
    ...              dtype=[("event", bool), ("time", float)])
    >>> model = HistGBDTSurvival(max_iter=20).fit(X, y)
    >>> model.score(X, y) > 0.6
    True
    """

    _parameter_constraints = constraints(SURVIVAL)
    if TYPE_CHECKING:  # the generated __init__ (the registry's parameters) hides the
        # class from type checkers: they see one taking any arguments
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...
    else:
        __init__ = make_init(SURVIVAL)
    _stratify = False

    def fit(self, X: MatrixLike | Dataset, y: ArrayLike | None = None,
            sample_weight: ArrayLike | None = None, *,
            X_val: MatrixLike | None = None, y_val: ArrayLike | None = None,
            sample_weight_val: ArrayLike | None = None,
            eval_set: list[tuple[MatrixLike, ArrayLike]] | None = None,
            eval_names: list[str] | None = None,
            eval_sample_weight: list[ArrayLike | None] | None = None,
            callbacks: list | None = None, init_score: ArrayLike | None = None,
            init_score_val: ArrayLike | None = None,
            eval_init_score: list[ArrayLike | None] | None = None) -> HistGBDTSurvival:
        if isinstance(X, Dataset) and X.label_upper_bound is None:
            raise ValueError("A survival Dataset needs each time's upper bound: "
                             "Dataset(X, label=time, label_upper_bound=np.where(event, "
                             "time, np.inf)).")
        self._fit_rows(X, y, sample_weight, X_val, y_val, sample_weight_val, eval_set,
                       eval_names, eval_sample_weight, callbacks,
                       (init_score, init_score_val, eval_init_score))
        if self.loss == "cox":
            self.baseline_hazard_ = self._breslow(X, y, sample_weight, init_score)
        return self

    fit.__doc__ = SURVIVAL_FIT_DOC

    def _breslow(self, X, y, sample_weight, init_score):
        """Breslow's cumulative baseline hazard of the fitted scores (plus the
        rows' start scores) over the training rows (``X`` and ``y``, or a
        Dataset): the sum over event times of their events' weight over the
        weighted risk set's total hazard ratio."""
        if isinstance(X, Dataset):
            lower, upper, sample_weight = X.label, X.label_upper_bound, X.weight
            init_score = X.init_score if init_score is None else init_score
            raw = self.booster_.raw_predict_prepared(
                X.X, None, effective_n_threads(self.n_threads))[0]
        else:
            lower, upper = survival_bounds(y)
            raw = self._raw_predict(X)[0]
        hazard = np.exp(raw if init_score is None
                        else raw + np.asarray(init_score, dtype=np.float64).reshape(-1))
        lower = np.asarray(lower, dtype=np.float64)
        weight = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        event = (upper == lower).astype(np.float64)
        hazard = hazard * (1.0 if weight is None else weight)
        order = TimeOrder(lower, event, weight)
        at_risk = np.cumsum(np.add.reduceat(hazard[order.order], np.r_[0, order.group_end[:-1]])
                            [::-1])[::-1]
        times = lower[order.order][order.group_end - 1]
        has = order.event_weight > 0
        steps = order.event_weight[has] / at_risk[has]
        return np.vstack([times[has], np.cumsum(steps)]).astype(np.float64)

    def _target_fields(self, y):
        lower, upper = survival_bounds(y)
        return lower, {"label_upper_bound": upper}

    def _objective(self):
        return objective_from_params(self.get_params(deep=False))

    def _encode_y(self, y, reset):
        return np.ascontiguousarray(y, dtype=Y_DTYPE)

    def _decode(self, y):
        return y

    def _round_view(self, raw):
        return RegressionRound(raw, self.booster_.loss.inverse_link)

    @peer_predict_options
    def predict(self, X: MatrixLike,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Cox: each row's hazard ratio ``e^f(x)`` (a risk score: higher,
        sooner); AFT: its predicted time ``e^f(x)`` (higher, later).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        iteration_range : (int, int) or None, default=None
            Only the rounds ``begin <= round < end`` (0-based); None: every round.

        Returns
        -------
        y : ndarray of shape (n_samples,)
        """
        return self.booster_.loss.inverse_link(self._raw_predict(X, iteration_range))

    def predict_survival_function(self, X: MatrixLike, times: ArrayLike) -> np.ndarray:
        """Each row's probability to be event-free past each of ``times``.

        Cox: ``exp(-H0(t) e^f(x))`` with Breslow's baseline hazard
        (``baseline_hazard_``, a step function); AFT: ``1 - F((log t - f(x)) /
        aft_sigma)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        times : array-like of shape (n_times,)
            Non-negative times.

        Returns
        -------
        survival : ndarray of shape (n_samples, n_times)
        """
        times = np.asarray(times, dtype=np.float64).reshape(-1)
        if np.any(~(times >= 0)):
            raise ValueError("times must be non-negative numbers.")
        raw = self._raw_predict(X)[0]
        if self.loss == "cox":
            table = getattr(self, "baseline_hazard_", None)
            if table is None:  # a model file of the Booster alone (save_model(booster))
                raise ValueError("This Cox model has no baseline hazard (it was saved as a "
                                 "Booster): save and load the fitted HistGBDTSurvival.")
            steps = np.searchsorted(table[0], times, side="right")
            hazard = np.r_[0.0, table[1]][steps]
            return np.exp(-np.exp(raw)[:, None] * hazard[None, :])
        with np.errstate(divide="ignore"):
            z = (np.log(times)[None, :] - raw[:, None]) / self.aft_sigma
        return _LAWS[self.aft_distribution].sf(z)

    def score(self, X: MatrixLike, y: ArrayLike,
              sample_weight: ArrayLike | None = None) -> float:
        """Harrell's concordance index of the predictions: over comparable
        pairs, the share ordered as their times (see
        :func:`hgbt.engine.survival.concordance_index`). Rows with interval
        bounds count as events at their lower bound only when exact.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : structured array or array of shape (n_samples, 2)
            As in ``fit``.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        lower, upper = survival_bounds(y)
        prediction = self.predict(X)
        risk = prediction if self.loss == "cox" else -prediction
        return concordance_index(lower, upper == lower, risk, sample_weight)
