"""Feature importance: gain, split count and permutation
=====================================================

A fitted model can rank its features in several ways, and the rankings
disagree. This example fits a classifier on scikit-learn's breast cancer data
and compares three of them: the total split gain of each feature (what
``feature_importances_`` reports by default, as LightGBM's
``importance_type='gain'``), the number of splits on it (LightGBM's default
``'split'``), and scikit-learn's permutation importance, measured on held-out
rows. The first two describe how the trees were built; only the third
measures how much the predictions on new data depend on a feature.
"""

# %%
# Fit a classifier
# ----------------
#
# The breast cancer table has 569 tumours described by 30 measurements, many of
# them strongly correlated (radius, perimeter and area, for instance). We hold
# out 30% of the rows for the permutation importance. Passing a DataFrame keeps
# the feature names, which the plots then show.

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.inspection import permutation_importance
from sklearn.model_selection import train_test_split

from hgbt import HistGBDTClassifier
from hgbt.plotting import plot_importance

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, stratify=y,
                                                    random_state=0)
model = HistGBDTClassifier(random_state=0).fit(X_train, y_train)
print(f"{model.n_iter_} rounds, test accuracy {model.score(X_test, y_test):.3f}")

# %%
# The importance table
# --------------------
#
# ``feature_importance_table()`` holds, per feature, the number of splits
# (``split``), the total and mean gain (``total_gain``, ``gain``) and the cover
# (hessian sums). ``feature_importances_`` is the ``total_gain`` column
# normalised to sum to one (``importance_type='split'`` in the constructor
# switches it to the split counts).

table = model.feature_importance_table()
assert np.allclose(model.feature_importances_,
                   table["total_gain"].reindex(X.columns, fill_value=0)
                   / table["total_gain"].sum())
print(table[["split", "total_gain"]].sort_values("total_gain", ascending=False).head(5))

# %%
# Permutation importance on the held-out rows
# -------------------------------------------
#
# ``permutation_importance`` shuffles one column of the test rows at a time and
# records how much the log-loss gets worse, ten shuffles per feature.

perm = permutation_importance(model, X_test, y_test, scoring="neg_log_loss",
                              n_repeats=10, random_state=0)
perm_mean = pd.Series(perm.importances_mean, index=X.columns)
print("top 5 by permutation:", ", ".join(perm_mean.nlargest(5).index))

# %%
# Three rankings side by side
# ---------------------------
#
# ``hgbt.plotting.plot_importance`` draws one column of the table
# (``importance_type`` is one of ``'total_gain'``, ``'gain'``, ``'split'``,
# ``'total_cover'`` and ``'cover'``); the third panel is a box plot of the
# permutation importances, ten features each.

fig, axes = plt.subplots(1, 3, figsize=(15, 5))
plot_importance(model, "total_gain", max_features=10, ax=axes[0],
                title="Total gain (feature_importances_)")
axes[0].set_xlabel("total split gain")
plot_importance(model, "split", max_features=10, ax=axes[1], color="tab:orange",
                title="Split count")
axes[1].set_xlabel("number of splits")
top = perm_mean.nlargest(10).index[::-1]
columns = [X.columns.get_loc(name) for name in top]
axes[2].boxplot(perm.importances[columns].T, orientation="horizontal", tick_labels=list(top))
axes[2].axvline(0, color="0.5", ls="--", lw=1)
axes[2].set_xlabel("increase of the test log-loss when shuffled")
axes[2].set_title("Permutation importance (held-out rows)")
fig.tight_layout()

# %%
# How to read them
# ----------------
#
# - **Gain** credits the features the trees found most useful while fitting
#   the training rows. It is computed for free, but features that are split
#   on late, to fit noise, still collect gain.
# - **Split count** favours features with many distinct values, which offer
#   many thresholds for small refinements: a feature can be split on often
#   and still matter little: here *worst symmetry* and *smoothness error*
#   are among the ten most split features but in neither other top ten.
# - **Permutation importance** measures the loss on unseen rows, so it
#   reflects what the predictions depend on. With correlated features it is
#   shared out: shuffling one of two near copies hurts little because the
#   model can fall back on the other, so each may look unimportant.
#
# When the question is "which measurements drive the predictions", prefer
# the permutation importance on held-out data (or the SHAP values of the
# SHAP summary example); gain is a quick first look.
