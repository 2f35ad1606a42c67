"""One node's split search as one call, for the split-search tests: the
settings of :class:`hgbt.tree._splitting.SplitSettings` and the node's
arguments of its ``find`` in one positional list, as the tests' reference
enumerations state a node. The package builds the settings once per fit."""
import math

from hgbt.core.params import resolved_default
from hgbt.tree._splitting import SplitSettings


def find_node_split(histograms, n_bins_non_missing, sum_gradients, sum_hessians, n_samples,
                    l1_regularization, l2_regularization, min_gain_to_split,
                    min_child_weight, min_samples_leaf, missing_bin, feature_mask, n_threads,
                    is_categorical=None,
                    max_cat_to_onehot=resolved_default("max_cat_to_onehot"),
                    cat_smooth=resolved_default("cat_smooth"),
                    cat_l2=resolved_default("cat_l2"),
                    min_data_per_group=resolved_default("min_data_per_group"),
                    max_cat_threshold=resolved_default("max_cat_threshold"),
                    monotonic_cst=None, lower_bound=-math.inf, upper_bound=math.inf,
                    feature_column=None, bundle_offset=None, bundle_n_codes=None,
                    default_bin=None, per_feature=None):
    """The best split of a node (``SplitSettings(...).find(...)``)."""
    settings = SplitSettings(
        n_bins_non_missing, missing_bin, l1_regularization=l1_regularization,
        l2_regularization=l2_regularization, min_gain_to_split=min_gain_to_split,
        min_child_weight=min_child_weight, min_samples_leaf=min_samples_leaf,
        is_categorical=is_categorical, max_cat_to_onehot=max_cat_to_onehot,
        cat_smooth=cat_smooth, cat_l2=cat_l2, min_data_per_group=min_data_per_group,
        max_cat_threshold=max_cat_threshold, monotonic_cst=monotonic_cst,
        feature_column=feature_column, bundle_offset=bundle_offset,
        bundle_n_codes=bundle_n_codes, default_bin=default_bin)
    return settings.find(histograms, sum_gradients, sum_hessians, n_samples, feature_mask,
                         lower_bound, upper_bound, n_threads, per_feature)
