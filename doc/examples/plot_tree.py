"""Looking at one tree, and the trees as a table
=============================================

A boosted model is a sum of small regression trees. Drawing one of them shows
what the model actually tests (which features, which thresholds, where missing
values go) and how many training rows reach each leaf. This example draws the
first tree of a small model with ``hgbt.plotting.plot_tree`` (matplotlib only,
no graphviz), reads the same tree from the table the booster gives
(``model.booster_.trees_to_dataframe()``), rebuilds the predictions from that
table by hand, and uses the table to see how much each later tree still adds.
"""

# %%
# A model of small trees
# ----------------------
#
# scikit-learn's diabetes table (442 patients, 10 scaled measurements, disease
# progression after a year). With ``max_leaf_nodes=6`` each tree has at most
# six leaves, small enough to read.

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes

from hgbt import HistGBDTRegressor
from hgbt.plotting import plot_tree

X, y = load_diabetes(return_X_y=True, as_frame=True)
model = HistGBDTRegressor(max_iter=100, learning_rate=0.1, max_leaf_nodes=6,
                          random_state=0).fit(X, y)
print(f"{model.n_iter_} rounds, one tree each")

# %%
# Draw the first tree
# -------------------
#
# Each inner node shows its test (the left branch, "yes", holds the rows with
# ``feature <= threshold``), the side missing values go to (learned from the
# training rows that had them; when, as here, there were none, the child with
# more training rows), the split's gain and the number of
# training rows. Each leaf shows its value, already multiplied by the learning
# rate: what the tree adds to the prediction of a row landing there.

ax = plot_tree(model, tree_index=0)
ax.set_title("First tree of the model (diabetes data, max_leaf_nodes=6)")

# %%
# The same tree as a table
# ------------------------
#
# ``model.booster_`` is the fitted model as one object (as LightGBM's
# ``booster_`` or XGBoost's ``get_booster()``). Its ``trees_to_dataframe()``
# has one row per node of every tree: ``node`` is the index ``apply`` returns,
# ``left`` and ``right`` the children, ``count`` the training rows that
# reached the node, ``value`` the (shrunk) output.

booster = model.booster_
nodes = booster.trees_to_dataframe()
columns = ["node", "depth", "is_leaf", "feature", "threshold", "missing_go_to_left",
           "left", "right", "gain", "count", "value"]
with pd.option_context("display.width", 120, "display.precision", 4):
    print(nodes.loc[nodes["tree"] == 0, columns].to_string(index=False))

# %%
# The table is the model
# ----------------------
#
# A prediction is the baseline (here the mean target) plus, for each tree, the
# value of the leaf the row reaches. ``booster_.apply`` gives those leaves;
# looking their values up in the table reproduces ``predict``.

leaves = booster.apply(X)[:, :, 0]                       # (n_rows, n_rounds)
leaf_value = nodes.set_index(["tree", "node"])["value"]
trees = np.broadcast_to(np.arange(leaves.shape[1]), leaves.shape)
by_hand = booster.baseline[0] + leaf_value.loc[
    list(zip(trees.ravel(), leaves.ravel()))].to_numpy().reshape(leaves.shape).sum(axis=1)
print(f"baseline {booster.baseline[0]:.2f}; largest |by hand - predict| "
      f"{np.abs(by_hand - model.predict(X)).max():.1e}")
assert np.allclose(by_hand, model.predict(X))

# %%
# What each later tree adds
# -------------------------
#
# Summing the split gains of each tree shows the boosting at work: the first
# trees capture the large effects, and the later ones correct ever smaller
# residuals. The gain is measured on the training rows, so it keeps falling
# smoothly and never says when to stop: that is what the validation score of
# early stopping is for (on by default; on a table this small it
# cross-validates the number of rounds, which ended the fit here).

splits = nodes[~nodes["is_leaf"]]
gain_per_tree = splits.groupby("tree")["gain"].sum()
print(f"gain of the first tree {gain_per_tree.iloc[0]:.3g}, "
      f"of the last {gain_per_tree.iloc[-1]:.3g}")

fig, ax = plt.subplots(figsize=(8, 4))
ax.semilogy(gain_per_tree.index, gain_per_tree.to_numpy(), "o-", ms=4)
ax.set_xlabel("tree (round)")
ax.set_ylabel("sum of split gains in the tree (log scale)")
ax.set_title("Gain found by each tree")
fig.tight_layout()
