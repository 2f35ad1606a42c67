# C types shared by every kernel; mirrored as NumPy dtypes in _types.pyx.

ctypedef double X_DTYPE_C              # raw feature values, bin thresholds
ctypedef unsigned char X_BINNED_DTYPE_C  # bin codes (uint8)
ctypedef float G_H_DTYPE_C             # gradients and hessians (float32)
ctypedef double Y_DTYPE_C              # targets, raw predictions, leaf values
ctypedef unsigned int SIZE_C           # row indices and counts (uint32)
ctypedef unsigned int BITSET_WORD_C    # one 32-bit word of a 256-bit category set

# One histogram bin. Packed so the NumPy mirror is exactly this layout.
cdef packed struct hist_struct:
    double sum_gradients
    double sum_hessians
    unsigned int count

# One tree node in the flat predictor array.
cdef packed struct node_struct:
    Y_DTYPE_C value
    unsigned int count
    # Hessian sum of the rows that reached the node when it grew (XGBoost's
    # cover), on the true scale; NaN in trees loaded from files without it.
    double sum_hessians
    unsigned int feature_idx
    X_DTYPE_C num_threshold
    unsigned char missing_go_to_left
    unsigned int left
    unsigned int right
    Y_DTYPE_C gain
    unsigned int depth
    unsigned char is_leaf
    X_BINNED_DTYPE_C bin_threshold
    # Categorical split: the left set is cat_bitsets[bitset_idx] of the tree
    # (a code goes left iff its bit is set); num_threshold/bin_threshold unused.
    unsigned char is_categorical
    unsigned int bitset_idx

# Best split of one node (or one feature while scanning).
cdef struct split_info_struct:
    double gain
    int feature_idx
    unsigned int bin_idx
    unsigned char missing_go_to_left
    double sum_gradients_left
    double sum_hessians_left
    unsigned int n_samples_left
    double sum_gradients_right
    double sum_hessians_right
    unsigned int n_samples_right
    # Categorical split: bins (= category codes) sent left; bin_idx is 0.
    unsigned char is_categorical
    BITSET_WORD_C cat_bitset[8]

# One node of a tree grown by the _grower kernel (no Python per node).
cdef struct grown_node_struct:
    double sum_gradients
    double sum_hessians
    unsigned int count
    unsigned int depth
    # Bounds of the node's value under monotonic constraints, and the value
    # (Newton, clipped to them, not shrunk).
    double lower
    double upper
    double value
    # The node's rows: rows[start:stop] of the row-index array.
    unsigned int start
    unsigned int stop
    # Children (-1: a leaf) and, for an inner node, its split.
    int left
    int right
    split_info_struct split
