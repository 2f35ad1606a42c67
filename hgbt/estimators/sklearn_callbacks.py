"""scikit-learn's experimental callbacks (``sklearn.callback``, 1.9+) on hgbt's rounds.

``estimator.set_callbacks(...)`` takes scikit-learn's callbacks (its
``ProgressBar``, ``ScoringMonitor``, or any ``FitCallback``); meta-estimators
such as ``GridSearchCV`` propagate theirs. A fit is a task whose subtasks are
the rounds: :class:`SklearnRounds` maps hgbt's round hooks onto
``on_fit_task_begin`` / ``on_fit_task_end``, a callback's True ends the fit
as hgbt's ``"stop"`` does, and ``fitted_estimator`` is the model of the
rounds so far. With an older scikit-learn there is nothing to set.
"""
try:
    from sklearn.callback import CallbackSupportMixin, with_callbacks
except ImportError:  # scikit-learn < 1.9: no callback API
    class CallbackSupportMixin:
        """Stands in for scikit-learn's mixin where it does not exist."""

    with_callbacks = None

from ..engine.callbacks import STOP, Callback


def uses_sklearn_callbacks(estimator):
    """Whether the fit runs scikit-learn callbacks: set on the estimator, or
    propagated by a meta-estimator."""
    return with_callbacks is not None and bool(
        getattr(estimator, "_skl_callbacks", None)
        or getattr(estimator, "_parent_callback_ctx", None) is not None)


def managed(fit):
    """``fit`` run so that scikit-learn tears its callbacks down however it ends."""
    return with_callbacks(fit)


class SklearnRounds(Callback):
    """The fit's scikit-learn task, each round one of its subtasks.

    Parameters
    ----------
    context : sklearn.callback.CallbackContext
        The fit's root context (``_init_callback_context``).
    X, y : the training rows and targets the hooks receive
    metadata : dict or None
        ``{'sample_weight': ...}`` when weighted.
    fitted_state : callable
        ``fitted_state(estimator)``: the attributes that make a copy of the
        estimator a model of the rounds so far.
    """

    def __init__(self, context, X, y, metadata, fitted_state):
        self.context = context
        self.data = dict(X=X, y=y, metadata=metadata)
        self.fitted_state = fitted_state
        self._round = None

    def on_fit_begin(self, history, estimator):
        self.context.call_on_fit_task_begin(estimator=estimator, **self.data)

    def before_round(self, iteration, history, estimator):
        self._round = self.context.subcontext(task_name="round")
        self._round.call_on_fit_task_begin(estimator=estimator, **self.data)

    def after_round(self, iteration, history, estimator):
        round_, self._round = self._round, None
        stop = round_.call_on_fit_task_end(
            estimator=estimator, **self.data,
            reconstruction_attributes=lambda: self.fitted_state(estimator))
        if stop:
            self.reason = "a scikit-learn callback asked to stop"
            return STOP
        return None

    def on_fit_end(self, history, estimator):
        if self._round is not None:  # begun, then the fit stopped before growing it
            self._round.call_on_fit_task_end(estimator=estimator)
            self._round = None
        self.context.call_on_fit_task_end(
            estimator=estimator, **self.data,
            reconstruction_attributes=lambda: self.fitted_state(estimator))
