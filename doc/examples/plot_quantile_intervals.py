"""Prediction intervals with quantile regression
=============================================

A point prediction says nothing about how far the truth may fall from it.
With ``loss='quantile'`` a :class:`~hgbt.HistGBDTRegressor` learns a chosen
quantile of ``y`` given ``X`` instead of its mean, so three models (the 5th,
50th and 95th percentiles) give a median prediction with a 90% interval
around it. Unlike a constant "± 2 standard deviations", the interval's width
follows the data: narrow where the target is predictable, wide where it is
noisy. This example fits the three models on a 1-D simulation whose noise
grows with ``x`` and checks how often held-out rows fall inside the interval.
"""

# %%
# A heteroscedastic simulation
# ----------------------------
#
# We simulate a signal ``x sin(x)`` measured with noise whose spread grows
# with ``x`` (as, say, the error of a sensor that degrades with load), and a
# right-skewed noise so that the interval is not symmetric around the median.

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from hgbt import HistGBDTRegressor

rng = np.random.default_rng(0)
n = 3000
x = rng.uniform(0, 10, size=n)
noise_scale = 0.2 + 0.25 * x
noise = noise_scale * (rng.lognormal(mean=0.0, sigma=0.6, size=n) - np.exp(0.18))
y = x * np.sin(x) + noise
X = x.reshape(-1, 1)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

# %%
# One model per quantile
# ----------------------
#
# Each quantile is a separate model with the pinball loss of its level
# (LightGBM's ``objective='quantile', alpha=q``, XGBoost's
# ``reg:quantileerror``). ``min_samples_leaf`` is raised a little because a
# 5% quantile estimated in a leaf of 20 rows rests on a single row.

quantiles = [0.05, 0.5, 0.95]
models = {}
for q in quantiles:
    models[q] = HistGBDTRegressor(
        loss="quantile", quantile=q, max_iter=200, learning_rate=0.1,
        max_leaf_nodes=15, min_samples_leaf=40, random_state=0,
    ).fit(X_train, y_train)
    print(f"quantile {q:.2f}: {models[q].n_iter_} rounds")

# %%
# Empirical coverage on held-out rows
# -----------------------------------
#
# A 90% interval should contain about 90% of new observations. We count the
# held-out rows between the 5% and 95% predictions, and also check each bound
# on its own: about 5% of the rows should fall below the lower one and 5%
# above the upper one. Expect the coverage to come out somewhat below the
# nominal 90%: each bound is fitted to the training rows and is a little
# tighter on them than on new rows. If exact coverage matters, calibrate the
# bounds on held-out rows (conformal prediction).

low = models[0.05].predict(X_test)
median = models[0.5].predict(X_test)
high = models[0.95].predict(X_test)
inside = (y_test >= low) & (y_test <= high)
print(f"coverage of the 90% interval: {inside.mean():.1%}")
print(f"below the 5% bound: {(y_test < low).mean():.1%}, "
      f"above the 95% bound: {(y_test > high).mean():.1%}")
print(f"below the median: {(y_test < median).mean():.1%}")

# %%
# The interval as a band
# ----------------------
#
# On a grid of ``x`` the band widens where the noise does. The trees give
# step functions, and as each quantile is fitted separately, the bounds
# could in principle cross; with enough rows per leaf they rarely do.

grid = np.linspace(0, 10, 500).reshape(-1, 1)
fig, ax = plt.subplots(figsize=(8, 4.5))
ax.scatter(X_test[:, 0], y_test, s=4, color="0.6", alpha=0.6, label="held-out rows")
ax.fill_between(grid[:, 0], models[0.05].predict(grid), models[0.95].predict(grid),
                color="tab:blue", alpha=0.25, label="5% to 95% quantile")
ax.plot(grid[:, 0], models[0.5].predict(grid), color="tab:blue", label="median")
ax.plot(grid[:, 0], grid[:, 0] * np.sin(grid[:, 0]), color="k", ls="--", lw=1,
        label="x sin(x): the mean of y")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.set_title(f"90% prediction interval (held-out coverage {inside.mean():.1%})")
ax.legend(loc="upper left", fontsize="small")
fig.tight_layout()

# %%
# Width of the interval
# ---------------------
#
# The interval's width at each test row, against ``x``, recovers the noise
# level of the simulation: the quantile models learned the heteroscedasticity
# without being told about it. For lognormal noise the true width of the 90%
# interval is a fixed multiple of ``noise_scale``, drawn for reference.

true_width = (0.2 + 0.25 * grid[:, 0]) * (np.exp(0.6 * 1.6449) - np.exp(-0.6 * 1.6449))
fig, ax = plt.subplots(figsize=(8, 3.5))
ax.scatter(X_test[:, 0], high - low, s=4, label="predicted width (held-out rows)")
ax.plot(grid[:, 0], true_width, color="k", ls="--", lw=1, label="true width")
ax.set_xlabel("x")
ax.set_ylabel("95% minus 5% quantile")
ax.set_title("The interval widens where the noise grows")
ax.legend(loc="upper left", fontsize="small")
fig.tight_layout()
