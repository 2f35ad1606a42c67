"""The one way tests reach a fitted estimator's model: its trees, baseline,
binning, target statistics and the other fitted state the estimators keep.

Where the estimators store their model is an implementation detail; tests read
(and, to corrupt or edit a model, write) it through these functions only, so a
change of storage changes this module and no test. The trees returned are the
model's own objects (``TreePredictor``: ``.nodes``, ``.cat_bitsets``), not copies.
"""


# ------------------------------------------------------------------ trees
def rounds(est):
    """The model's list of rounds, each a list of its trees (one per output): the
    model's own list, so a ``ForestPredictor`` of it packs the model's trees."""
    return est._predictors


def all_trees(est):
    """Every tree of the model in one flat list, round by round (outputs in order)."""
    return [tree for trees in est._predictors for tree in trees]


def tree_at(est, i, k=0):
    """The tree of output ``k`` in round ``i``."""
    return est._predictors[i][k]


def has_rounds(est):
    """Whether ``est`` holds a model's rounds at all (a fitted or partial model)."""
    return hasattr(est, "_predictors")


def set_tree(est, i, k, tree):
    """Replace the tree of output ``k`` in round ``i`` by ``tree`` (the prediction
    cache is left as it is: ``predict`` must notice the new tree itself)."""
    est._predictors[i][k] = tree


def pop_tree(est, i):
    """Remove (and return) the last tree of round ``i``: a model missing a tree."""
    return est._predictors[i].pop()


# ------------------------------------------------------- the rest of the model
def baseline_prediction(est):
    """The model's baseline raw prediction, one value per output (an array)."""
    return est._baseline_prediction


def set_baseline_prediction(est, value):
    """Replace the model's baseline raw prediction by ``value``."""
    est._baseline_prediction = value


def bin_mapper(est):
    """The fitted ``BinMapper`` of the model (thresholds, missing bin, categories)."""
    return est._bin_mapper


def target_stats(est):
    """The target statistics of the pooled categorical features (a dict of
    ``features``, ``tables``, ...), or None where the model has none."""
    return est._target_stats


def set_target_stats(est, value):
    """Replace the model's target statistics by ``value`` (None: none)."""
    est._target_stats = value


def categorical_by_value(est):
    """Per feature, whether its categories are matched by value (strings: a
    boolean array), or None for a model without categorical features."""
    return est._categorical_by_value


def set_categorical_pooled(est, value):
    """Replace the model's record of whether it has pooled categorical features."""
    est._categorical_pooled = value


# ------------------------------------------------------------ training state
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
