# The split search of vector-leaf trees (_vector_scan.pyx), for their grower
# (_vector_grower.pyx): the settings struct both read, a feature's best split.


cdef struct vector_params:
    int n_outputs
    int n_features
    int n_bins  # per feature, the missing bin included
    int missing_bin
    int n_hessians  # hessian sums per bin: 1 (shared by the outputs) or k
    int stride  # doubles per bin: k gradients, n_hessians hessians, the count
    int n_channels  # values gathered per row: k gradients (+ n_hessians hessians)
    double l1
    double l2
    double min_gain_to_split
    double min_child_weight
    double min_samples_leaf
    int max_leaf_nodes  # -1: none
    int max_depth  # -1: none
    bint lossguide


cdef struct vsplit:
    double gain
    int feature  # -1: none
    int bin
    unsigned char missing_left
    double n_left


cdef double output_score(double g, double h, const vector_params* p) noexcept nogil

cdef double outputs_score(const double* sums, const vector_params* p) noexcept nogil

cdef void scan_feature(
    const double* hist, int f, unsigned int n_bins_non_missing, const double* total,
    double parent_score, const vector_params* p, double* run, vsplit* best,
) noexcept nogil
