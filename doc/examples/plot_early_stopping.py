"""Early stopping
==============

Boosting adds trees until ``max_iter``; past some round the new trees fit
noise and the validation loss climbs again. Early stopping scores a
validation set after every round and ends the fit once the score has not
improved for ``n_iter_no_change`` rounds. This example shows the watched
validation loss round by round with the best round marked, the two ways to
give the validation rows (your own ``X_val``/``y_val`` or an automatic
hold-out), and what a fit without early stopping costs in time and accuracy.
"""

# %%
# Data: a generated binary task
# -----------------------------
#
# ``hgbt.datasets.make_binary_task`` draws a noisy binary problem (5% of the
# labels flipped), where overfitting shows quickly. We keep 12,000 rows: 6,000
# to train on, 3,000 to watch the rounds on and 3,000 to test.

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

from hgbt import HistGBDTClassifier
from hgbt.datasets import make_binary_task
from hgbt.plotting import plot_learning_curve

X, y = make_binary_task(n_samples=12_000, n_features=20, random_state=0)
X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=6_000, random_state=0)
X_val, X_test, y_val, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)

params = dict(learning_rate=0.1, max_iter=600, max_leaf_nodes=31, random_state=0)


def fit_timed(model, **fit_params):
    start = time.perf_counter()
    model.fit(X_train, y_train, **fit_params)
    return model, time.perf_counter() - start


# %%
# Early stopping on your own validation rows
# ------------------------------------------
#
# ``early_stopping=True`` with ``X_val``/``y_val`` watches the loss on those
# rows (``scoring='loss'``, the default). The fit stops after
# ``n_iter_no_change`` rounds without improvement: ``n_iter_`` is the number
# of rounds grown, ``best_iteration_`` the round with the lowest validation
# loss, ``best_score_`` that loss.

stopped, t_stopped = fit_timed(
    HistGBDTClassifier(early_stopping=True, n_iter_no_change=20, **params),
    X_val=X_val, y_val=y_val,
)
print(f"early stopping on X_val: {stopped.n_iter_} rounds grown, "
      f"best round {stopped.best_iteration_} "
      f"(validation log-loss {stopped.best_score_:.4f}), fit {t_stopped:.2f}s")

# %%
# Without early stopping
# ----------------------
#
# For comparison, the same model runs all 600 rounds. ``eval_set`` still
# records the validation loss of every round, so we can see what happens after
# the point where early stopping would have ended the fit.

full, t_full = fit_timed(
    HistGBDTClassifier(early_stopping=False, **params),
    eval_set=[(X_val, y_val)], eval_names=["val"],
)
print(f"no early stopping: {full.n_iter_} rounds, fit {t_full:.2f}s")

# %%
# The validation loss per round
# -----------------------------
#
# ``hgbt.plotting.plot_learning_curve`` draws the early-stopped fit's
# recorded losses (training and validation) and a dashed line at
# ``best_iteration_``. We add the validation loss of the fit that ran every
# round and a dotted line where early stopping ended the fit. The validation
# loss reaches its minimum and then rises steadily while the training loss
# keeps falling: every round after the minimum makes the model worse on new
# data.

fig, ax = plt.subplots(figsize=(8, 4.5))
plot_learning_curve(stopped, yscale="linear", ax=ax)
val_full = full.evals_result_["val"]["loss"]
ax.plot(np.arange(len(val_full)), val_full, color="0.6", lw=1, zorder=1,
        label="validation, no early stopping")
ax.axvline(stopped.n_iter_, color="tab:red", ls=":", lw=1.5,
           label=f"fit stopped ({stopped.n_iter_} rounds)")
ax.set_ylim(min(stopped.evals_result_["train"]["loss"]) - 0.02, 0.72)
ax.set_xlabel("number of rounds")
ax.set_ylabel("log-loss")
ax.set_title("Early stopping: validation log-loss per round")
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# The automatic hold-out, and which rounds to predict with
# --------------------------------------------------------
#
# Without ``X_val``, ``early_stopping=True`` holds out ``validation_fraction``
# (10%) of the training rows and watches them. (With the default
# ``early_stopping='auto'``, tables under 10,000 rows get cross-validated
# rounds instead, and larger ones this hold-out.)
#
# Like scikit-learn, hgbt keeps every round it grew, including the
# ``n_iter_no_change`` rounds after the best one. Predict with the best
# round's model through ``iteration_range=(0, best_iteration_)``, or refit
# with ``truncate_at_best=True`` to drop the extra rounds.

holdout, t_holdout = fit_timed(
    HistGBDTClassifier(early_stopping=True, n_iter_no_change=20, **params))
print(f"early stopping on a 10% hold-out: {holdout.n_iter_} rounds grown, "
      f"best round {holdout.best_iteration_}, fit {t_holdout:.2f}s")

test_loss = {
    "X_val, all rounds": log_loss(y_test, stopped.predict_proba(X_test)),
    "X_val, best round": log_loss(
        y_test, stopped.predict_proba(X_test, iteration_range=(0, stopped.best_iteration_))),
    "hold-out, all rounds": log_loss(y_test, holdout.predict_proba(X_test)),
    "no early stopping": log_loss(y_test, full.predict_proba(X_test)),
}
for name, loss in test_loss.items():
    print(f"test log-loss, {name:<22}{loss:.4f}")

fig, (ax_loss, ax_time) = plt.subplots(1, 2, figsize=(10, 3.6))
names = list(test_loss)
colors = ["tab:blue", "tab:blue", "tab:orange", "0.5"]
bars = ax_loss.barh(names, [test_loss[name] for name in names], color=colors)
ax_loss.bar_label(bars, fmt="%.3f", padding=3)
ax_loss.set_xlim(0, 1.2 * max(test_loss.values()))
ax_loss.invert_yaxis()
ax_loss.set_xlabel("test log-loss (lower is better)")
ax_loss.set_title("Accuracy on the test rows")
fit_names = ["early stopping, X_val", "early stopping, hold-out", "no early stopping"]
bars = ax_time.barh(fit_names, [t_stopped, t_holdout, t_full],
                    color=["tab:blue", "tab:orange", "0.5"])
ax_time.bar_label(bars, fmt="%.2f s", padding=3)
ax_time.set_xlim(0, 1.25 * max(t_stopped, t_holdout, t_full))
ax_time.invert_yaxis()
ax_time.set_xlabel("fit time (seconds)")
ax_time.set_title("Fit time")
fig.tight_layout()

# %%
# The fit without early stopping costs several times the time and ends with a
# clearly worse test loss. The hold-out fit trained on 10% fewer rows but
# needs no separate validation set. Keep ``n_iter_no_change`` large enough to
# ride out a noisy validation score (here 20 rounds); a small value can stop
# on a chance dip.
