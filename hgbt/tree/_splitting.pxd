# The split search's C interface, for kernels that grow a tree without Python
# between nodes (_grower.pyx).
from ..core._types cimport hist_struct, split_info_struct


cdef struct split_params:
    double l1_regularization
    double l2_regularization
    double min_gain_to_split
    double min_child_weight
    unsigned int min_samples_leaf
    int missing_bin
    unsigned int max_cat_to_onehot
    double cat_smooth
    double cat_l2
    unsigned int min_data_per_group
    unsigned int max_cat_threshold
    # Monotonic constraints: per feature -1/0/1 (NULL: none), and the bounds
    # the node's children values must stay within.
    const signed char* monotonic_cst
    # T(G)^2 / (H + lambda) of the node itself, the same for every candidate,
    # and its lambda (l2_regularization even where the children get cat_l2).
    double parent_score
    double parent_l2
    bint bounded
    double lower_bound
    double upper_bound


cdef struct layout_params:
    # Features in bundled columns (see bundling.py); NULL pointers: every
    # feature is its own column. A bundled feature's bins other than its
    # default one (then its missing bin) are the column's codes
    # bundle_offset[f] .. bundle_offset[f] + bundle_n_codes[f] - 1, in order.
    const int* feature_column
    const int* bundle_offset
    const int* bundle_n_codes
    const unsigned char* default_bin


cdef inline double soft_threshold(double g, double l1) noexcept nogil:
    """sign(G) max(|G| - alpha, 0): the L1 penalty's effect on a gradient sum."""
    if g > l1:
        return g - l1
    if g < -l1:
        return g + l1
    return 0.0


cdef inline double structure_score(double g, double h, double l1, double l2) noexcept nogil:
    # T(G)^2 / (H + lambda); an empty or weightless side scores 0.
    if h + l2 <= 0.0:
        return 0.0
    g = soft_threshold(g, l1)
    return g * g / (h + l2)


cdef double bounded_value(
    double g, double h, double l1, double l2, double lower, double upper,
) noexcept nogil

cdef double newton_value(
    double g, double h, double l1, double l2, double min_child_weight, double lower,
    double upper,
) noexcept nogil

cdef void set_split_params(
    split_params* p, double l1_regularization, double l2_regularization,
    double min_gain_to_split, double min_child_weight, unsigned int min_samples_leaf,
    int missing_bin, unsigned int max_cat_to_onehot, double cat_smooth, double cat_l2,
    unsigned int min_data_per_group, unsigned int max_cat_threshold, double lower_bound,
    double upper_bound,
) noexcept nogil

cdef void find_split(
    const hist_struct* histograms, Py_ssize_t stride, int n_features,
    const int* features, int n_scan,
    const unsigned int* n_bins_non_missing, double sum_gradients, double sum_hessians,
    unsigned int n_samples, const unsigned char* feature_mask,
    const unsigned char* categorical, const layout_params* lay, split_params* p,
    split_info_struct* per_feature, split_info_struct* best, int n_threads,
) noexcept nogil


cdef class SplitSettings:
    # A fit's split-search settings (see _splitting.SplitSettings).
    cdef split_params params
    cdef layout_params layout
    cdef readonly int n_features
    cdef readonly int n_columns
    cdef readonly int missing_bin
    cdef const unsigned int* n_bins_non_missing
    cdef const unsigned char* categorical
    cdef int max_code_end
    cdef list _arrays

cdef int live_features(
    const hist_struct* histograms, Py_ssize_t stride, const layout_params* lay,
    const int* candidates, int n_candidates, unsigned int n_samples,
    unsigned int min_samples_leaf, int* out,
) noexcept nogil
