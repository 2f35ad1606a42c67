"""Partial dependence, one-way and two-way
=======================================

A partial dependence plot shows how the model's prediction changes with one
or two features when the other features are averaged out: the shape of an
effect (linear, a threshold, saturation) that a single importance number
hides. hgbt computes it by the recursion method directly on its trees, so it
costs milliseconds and does not predict on the data at all. This example draws
one-way and two-way partial dependence on scikit-learn's diabetes data with
``hgbt.plotting.plot_partial_dependence``, reads the numbers from
``hgbt.partial_dependence``, and compares them with scikit-learn's brute-force
average of predictions.
"""

# %%
# Fit a regressor
# ---------------
#
# The diabetes table: 442 patients, 10 baseline measurements (centred and
# scaled), and disease progression one year later as the target.

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.inspection import partial_dependence as sklearn_partial_dependence

import hgbt
from hgbt import HistGBDTRegressor
from hgbt.plotting import plot_partial_dependence

X, y = load_diabetes(return_X_y=True, as_frame=True)
model = HistGBDTRegressor(max_iter=200, learning_rate=0.05, max_leaf_nodes=8,
                          random_state=0).fit(X, y)
print(f"{model.n_iter_} rounds")

# %%
# One-way and two-way plots
# -------------------------
#
# Each entry of ``features`` is one plot: a feature name gives a line, a pair
# a contour plot of the joint effect. ``X`` provides the grid (between the 5th
# and 95th percentiles of each feature) and the decile ticks along the axes.
# The result is scikit-learn's ``PartialDependenceDisplay``.

fig, axes = plt.subplots(1, 4, figsize=(15, 3.8))
display = plot_partial_dependence(model, X, ["bmi", "s5", "bp", ("bmi", "s5")],
                                  grid_resolution=40, ax=axes)
fig.suptitle("Partial dependence of the predicted progression (diabetes data)")
fig.tight_layout()

# %%
# The progression predicted rises with body mass index (``bmi``) and with
# ``s5`` (a serum triglycerides measure), mostly in steps, as trees model it;
# ``bp`` (blood pressure) has a smaller effect. The contour shows the two
# main effects adding up: the highest predictions need both ``bmi`` and
# ``s5`` high.
#
# The numbers
# -----------
#
# ``hgbt.partial_dependence`` returns the same Bunch as scikit-learn's
# ``partial_dependence(..., kind="average")``: ``grid_values`` and ``average``
# of shape ``(n_outputs, *grid_sizes)``. Here the effect of ``bmi`` across its
# grid, and the range of the joint effect.

start = time.perf_counter()
pd_bmi = hgbt.partial_dependence(model, X, "bmi", grid_resolution=40)
seconds = time.perf_counter() - start
assert np.array_equal(display.pd_results[0].average, pd_bmi.average)
curve = pd_bmi.average[0]
print(f"bmi: prediction {curve[0]:.1f} at the low end of the grid, "
      f"{curve[-1]:.1f} at the high end ({seconds * 1e3:.1f} ms)")
pair = hgbt.partial_dependence(model, X, ["bmi", "s5"], grid_resolution=40)
print(f"bmi x s5 grid {pair.average.shape[1:]}: "
      f"from {pair.average.min():.1f} to {pair.average.max():.1f}")

# %%
# Recursion against brute force
# -----------------------------
#
# scikit-learn's ``method="brute"`` sets the feature to each grid value in
# every row of ``X`` and averages the predictions. The recursion instead walks
# each tree once per grid point and, at a split on another feature, averages
# both branches weighted by the training rows that went each way. For trees of
# one split (``max_leaf_nodes=2``) the two agree exactly; for deeper trees the
# recursion is an approximation (the same one scikit-learn uses for its own
# gradient boosting), as the right panel shows.

stumps = HistGBDTRegressor(max_iter=200, learning_rate=0.05, max_leaf_nodes=2,
                           random_state=0).fit(X, y)
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, fitted, name in [(axes[0], stumps, "trees of one split"),
                         (axes[1], model, "trees of 8 leaves")]:
    recursion = hgbt.partial_dependence(fitted, X, "bmi", grid_resolution=40)
    start = time.perf_counter()
    brute = sklearn_partial_dependence(fitted, X, "bmi", grid_resolution=40,
                                       method="brute", kind="average")
    brute_seconds = time.perf_counter() - start
    gap = np.abs(recursion.average - brute["average"]).max()
    print(f"{name}: largest gap recursion - brute {gap:.3g} "
          f"(brute force took {brute_seconds * 1e3:.0f} ms)")
    ax.plot(recursion.grid_values[0], recursion.average[0], lw=2.5,
            label="recursion (hgbt.partial_dependence)")
    ax.plot(brute["grid_values"][0], brute["average"][0], "--", color="black",
            label="brute force (mean of predict)")
    ax.set_title(f"bmi, {name}")
    ax.set_xlabel("bmi (scaled)")
axes[0].set_ylabel("partial dependence (predicted progression)")
axes[0].legend()
fig.tight_layout()

# %%
# The gap on the deeper model is small next to the effect itself. When the
# exact average over your rows matters (an ICE plot, or a feature tied up in
# strong interactions), use scikit-learn's brute method; for a quick look at
# many features, the recursion is much cheaper.
