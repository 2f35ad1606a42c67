"""SHAP summary plot with TreeSHAP contributions
=============================================

``predict_contributions`` computes exact SHAP values (TreeSHAP) for every row:
how much each feature moved that row's prediction away from the model's
expected value. This example checks that the contributions add up to the
prediction, then draws the two usual summaries with plain matplotlib, without
the shap package: a beeswarm plot (one row of dots per feature, each dot a
patient, coloured by the feature's value) and a bar chart of the mean absolute
contribution. Unlike a global importance, the beeswarm also shows the
direction of each effect and how it varies between rows.
"""

# %%
# Fit a regressor on the diabetes data
# ------------------------------------
#
# scikit-learn's diabetes table: 442 patients, 10 baseline measurements (age,
# sex, body mass index, blood pressure and six blood serum values s1-s6, all
# centred and scaled), and a measure of disease progression one year later.

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes

from hgbt import HistGBDTRegressor

X, y = load_diabetes(return_X_y=True, as_frame=True)
model = HistGBDTRegressor(max_iter=200, learning_rate=0.05, max_leaf_nodes=8,
                          random_state=0).fit(X, y)
print(f"{model.n_iter_} rounds")

# %%
# Contributions add up to the prediction
# --------------------------------------
#
# ``predict_contributions(X)`` has one column per feature plus a last column
# holding the expected value (the same for every row). Each row sums to the
# raw score, which for squared error is ``predict`` itself (for a classifier it
# is ``decision_function``, the log-odds).

contrib = model.predict_contributions(X)
shap_values, expected = contrib[:, :-1], contrib[0, -1]
print(f"contributions shape {contrib.shape}, expected value {expected:.1f}")
gap = np.abs(contrib.sum(axis=1) - model.predict(X)).max()
print(f"largest |sum of contributions - prediction|: {gap:.2e}")
assert np.allclose(contrib.sum(axis=1), model.predict(X))

# %%
# Beeswarm summary and mean absolute contribution
# -----------------------------------------------
#
# Features are sorted by their mean absolute contribution, the largest on top.
# Each dot is one patient: its horizontal position is the feature's
# contribution to that patient's prediction, its colour the feature's value
# (blue low, red high; each feature scaled between its 5th and 95th
# percentiles). Dots with similar contributions are spread vertically so the
# density shows, as in the shap package's plot.


def swarm_offsets(values, n_bins=60, width=0.38):
    """Vertical offsets that pile up dots falling in the same bin of values."""
    edges = np.linspace(values.min(), values.max() + 1e-12, n_bins + 1)
    bins = np.digitize(values, edges)
    offsets = np.zeros(len(values))
    for b in np.unique(bins):
        members = np.flatnonzero(bins == b)
        rank = np.arange(len(members))
        # 0, +1, -1, +2, -2, ...: centred piles
        offsets[members] = np.where(rank % 2, 1, -1) * ((rank + 1) // 2)
    return offsets * width / max(np.abs(offsets).max(), 1)


mean_abs = np.abs(shap_values).mean(axis=0)
order = np.argsort(mean_abs)  # smallest first: drawn at the bottom
names = np.asarray(X.columns)

fig, (ax_swarm, ax_bar) = plt.subplots(1, 2, figsize=(12, 5.5),
                                       gridspec_kw=dict(width_ratios=[1.7, 1]))
for position, feature in enumerate(order):
    values = X.iloc[:, feature].to_numpy()
    low, high = np.percentile(values, [5, 95])
    colour = np.clip((values - low) / (high - low), 0, 1)
    points = ax_swarm.scatter(shap_values[:, feature],
                              position + swarm_offsets(shap_values[:, feature]),
                              c=colour, cmap="coolwarm", vmin=0, vmax=1, s=9, lw=0)
ax_swarm.axvline(0, color="0.5", lw=1)
ax_swarm.set_yticks(range(len(order)), names[order])
ax_swarm.set_xlabel("contribution to the predicted progression (SHAP value)")
ax_swarm.set_title("SHAP summary: one dot per patient")
colorbar = fig.colorbar(points, ax=ax_swarm, ticks=[0, 1], pad=0.01, aspect=40)
colorbar.ax.set_yticklabels(["low", "high"])
colorbar.set_label("feature value")

# Right: the mean absolute contribution over the rows, a global importance
# on the scale of the target, in the same order as the beeswarm.
ax_bar.barh(range(len(order)), mean_abs[order], color="tab:purple")
ax_bar.set_yticks(range(len(order)), names[order])
ax_bar.set_xlabel("mean |SHAP value|")
ax_bar.set_title("Mean absolute contribution")
fig.tight_layout()
for feature in order[::-1][:3]:
    print(f"{names[feature]:>4}: mean |contribution| {mean_abs[feature]:.1f}")

# %%
# Reading the plot
# ----------------
#
# For ``bmi`` and ``s5`` (a serum triglycerides measure) red dots sit on the
# right: high values raise the predicted progression, low values lower it,
# by a few tens of points either way. ``s3`` (HDL cholesterol) works the
# other way round: its high values (red) lower the prediction. Features near
# the bottom hardly move any prediction. The spread of a feature's dots at one colour is where
# interactions show: the same value contributes differently depending on the
# other features (``predict_interactions`` separates those effects).
