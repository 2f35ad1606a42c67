"""The one way tests reach a fitted estimator's model: its trees, baseline,
binning, target statistics and the other fitted state the estimators keep.

The model is the estimator's ``booster_`` (:class:`hgbt.Booster`); tests read
(and, to corrupt or edit a model, write) it through these functions only, so a
change of storage changes this module and no test. The trees returned are the
model's own objects (``TreePredictor``: ``.nodes``, ``.cat_bitsets``), not copies.
"""
from hgbt.data.dataset import bin_rows


# ------------------------------------------------------------------ trees
def rounds(est):
    """The model's list of rounds, each a list of its trees (one per output): the
    model's own list, so a ``ForestPredictor`` of it packs the model's trees."""
    return est.booster_.trees


def all_trees(est):
    """Every tree of the model in one flat list, round by round (outputs in order)."""
    return [tree for trees in est.booster_.trees for tree in trees]


def tree_at(est, i, k=0):
    """The tree of output ``k`` in round ``i``."""
    return est.booster_.trees[i][k]


def has_rounds(est):
    """Whether ``est`` holds a model's rounds at all (a fitted or partial model)."""
    return hasattr(est, "booster_")


def set_tree(est, i, k, tree):
    """Replace the tree of output ``k`` in round ``i`` by ``tree`` (the prediction
    cache is left as it is: ``predict`` must notice the new tree itself)."""
    est.booster_.trees[i][k] = tree


def pop_tree(est, i):
    """Remove (and return) the last tree of round ``i``: a model missing a tree."""
    return est.booster_.trees[i].pop()


# ------------------------------------------------------- the rest of the model
def baseline_prediction(est):
    """The model's baseline raw prediction, one value per output (an array)."""
    return est.booster_.baseline


def set_baseline_prediction(est, value):
    """Replace the model's baseline raw prediction by ``value``."""
    est.booster_.baseline = value


def bin_mapper(est):
    """The fitted ``BinMapper`` of the model (thresholds, missing bin, categories)."""
    return est.booster_.bin_mapper


def target_stats(est):
    """The target statistics of the pooled categorical features (a dict of
    ``features``, ``tables``, ...), or None where the model has none."""
    return est.booster_.target_stats


def categorical_by_value(est):
    """Per feature, whether its categories are matched by value (strings: a
    boolean array), or None for a model without categorical features."""
    encoding = est.booster_.categorical
    return None if encoding is None else encoding.by_value


def pooled_features(est):
    """Indices of the pooled categorical features (more than 255 categories)."""
    return est.booster_.pooled_features


# ------------------------------------------------------------ training state
def layout_of(est, X, n_threads=1):
    """Validated rows ``X`` binned by the model's bin mapper with the estimator's
    layout settings: the FeatureLayout its fit would build."""
    return bin_rows(X, est.booster_.bin_mapper, n_threads, est.enable_bundle,
                    est.max_conflict_rate)


def fit_seed(est):
    """The integer seed the fit drew from ``random_state`` (binning, early-stopping
    split, score rows)."""
    return est._seed


def class_weights(est):
    """The classifier's per-class weights from ``class_weight`` (None: unweighted)."""
    return est._class_weights


def tree_size_comparing(est):
    """Whether the model was saved before its fit's tree-size comparison ended
    (``max_leaf_nodes='auto'``: a warm start then still compares sizes)."""
    return est._tree_size_comparing
