"""Learning rate against number of rounds
======================================

The learning rate scales every tree before it is added to the model. A smaller
rate takes smaller steps, so it needs more rounds to reach its best validation
loss, but that best is usually as good or a little better, because the model
creeps towards the data instead of overshooting. This example fits the same
model with three learning rates, records the validation loss after every round
(``eval_set`` and ``evals_result_``), and compares how many rounds each needs
and what the best round scores on a separate test set. It is the trade-off you
tune in LightGBM or XGBoost too: a rate low enough to be accurate and high
enough to finish in your time budget.
"""

# %%
# Data: a generated regression task
# ---------------------------------
#
# ``hgbt.datasets.make_regression_task`` draws a nonlinear regression problem
# (thresholds, products and smooth terms of the features, 5% of the values
# missing). We keep 6,000 rows: 3,000 to train on, 1,500 to watch the rounds
# on and 1,500 to test the chosen model.

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

from hgbt import HistGBDTRegressor
from hgbt.datasets import make_regression_task

X, y = make_regression_task(n_samples=6_000, n_features=12, random_state=0)
X_train, X_rest, y_train, y_rest = train_test_split(X, y, test_size=3_000, random_state=0)
X_val, X_test, y_val, y_test = train_test_split(X_rest, y_rest, test_size=0.5, random_state=0)

# %%
# One fit per learning rate
# -------------------------
#
# Early stopping is off so that every fit runs all its rounds and we see the
# whole curve; the smaller the rate, the more rounds we give it. ``eval_set``
# makes the fit score the validation rows after every round:
# ``evals_result_["val"]["loss"][i]`` is the loss of the model of the first
# ``i`` rounds (entry 0 is the constant baseline), and ``best_iteration_`` is
# the round where it was lowest. For squared error the
# recorded loss is half the mean squared error.

rounds_per_rate = {0.5: 300, 0.1: 1_000, 0.03: 2_000}
learning_rates = list(rounds_per_rate)
results = {}
for rate, n_rounds in rounds_per_rate.items():
    model = HistGBDTRegressor(
        learning_rate=rate,
        max_iter=n_rounds,
        max_leaf_nodes=15,
        early_stopping=False,
        random_state=0,
    )
    start = time.perf_counter()
    model.fit(X_train, y_train, eval_set=[(X_val, y_val)], eval_names=["val"])
    seconds = time.perf_counter() - start
    best = model.best_iteration_
    test_mse = mean_squared_error(y_test, model.predict(X_test, iteration_range=(0, best)))
    results[rate] = dict(curve=np.array(model.evals_result_["val"]["loss"]), best=best,
                         test_mse=test_mse)
    print(f"learning_rate={rate:<4}  best round {best:4d}  "
          f"test MSE at best round {test_mse:.3f}  fit {seconds:.2f}s")

# %%
# The validation curves
# ---------------------
#
# The left panel shows the validation loss against the number of rounds; a
# dot marks each curve's minimum. The large rate drops fastest, reaches its
# lowest loss within a few dozen rounds and then overfits: the loss climbs
# again. The smaller rates need many more rounds to get there, and end lower.
# The right panel puts the rounds needed beside the test error of the best
# round (the test rows were not used to choose anything): going from 0.5 to
# 0.1 pays off clearly, going further to 0.03 gains little for about four
# times the rounds.

fig, (ax_curve, ax_best) = plt.subplots(1, 2, figsize=(11, 4.2),
                                        gridspec_kw=dict(width_ratios=[1.6, 1]))
colors = ["tab:red", "tab:blue", "tab:green"]
for color, rate in zip(colors, learning_rates):
    res = results[rate]
    rounds = np.arange(len(res["curve"]))
    ax_curve.plot(rounds, res["curve"], color=color, label=f"learning_rate={rate}")
    ax_curve.plot(res["best"], res["curve"][res["best"]], "o", color=color)
floor = min(res["curve"].min() for res in results.values())
ax_curve.set_ylim(floor * 0.95, floor * 1.6)
ax_curve.set_xlabel("number of rounds")
ax_curve.set_ylabel("validation loss (half the MSE)")
ax_curve.set_title("Validation loss per round (dot: best round)")
ax_curve.legend()

bars = ax_best.bar([str(rate) for rate in learning_rates],
                   [results[rate]["test_mse"] for rate in learning_rates], color=colors)
for bar, rate in zip(bars, learning_rates):
    ax_best.annotate(f"{results[rate]['best']} rounds",
                     (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                     ha="center", va="bottom", xytext=(0, 3), textcoords="offset points")
high = max(results[rate]["test_mse"] for rate in learning_rates)
ax_best.set_ylim(0, high * 1.12)
ax_best.set_xlabel("learning rate")
ax_best.set_ylabel("test MSE at the best round")
ax_best.set_title("Test error and rounds needed")
fig.tight_layout()

# %%
# What to take away
# -----------------
#
# The rounds needed grow roughly in inverse proportion to the learning rate,
# and so does the fit time. A common recipe: pick the smallest rate whose fit
# time you can afford, set ``max_iter`` well above the rounds it needs, and let
# early stopping (``n_iter_no_change``, see the early-stopping example) end the
# fit near its best round instead of running every round as here.
