# The rows a tree grows on, as the kernels read them (_layout.pyx): the
# buffers of one tree, and the two things the grower asks of them, a node's
# histograms and the partition of a node's rows by a split. The grower loop
# (_grower.pyx) reads no layout field itself.
from libc.stdint cimport int64_t

from ..core._types cimport (X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct,
                            split_info_struct)
from ._histogram cimport packed_params
from ._multi_value cimport multi_value_bins


cdef struct tree_buffers:
    # The rows a tree grows on and how their histograms are built.
    const X_BINNED_DTYPE_C* X  # n_samples x n_dense codes, F-ordered (NULL: none)
    SIZE_C n_samples
    int n_dense  # dense columns; the others are sparse-stored
    int n_columns  # histogram rows
    int n_bins
    SIZE_C* rows  # the row-index array: node slices are partitioned in place
    SIZE_C* buffer
    # float histograms (packed == NULL) and the sparse-stored columns' always
    const G_H_DTYPE_C* gradients
    const G_H_DTYPE_C* hessians
    bint constant_hessian
    G_H_DTYPE_C* ordered_gradients
    G_H_DTYPE_C* ordered_hessians
    # packed quantized histograms of the dense columns
    const int64_t* packed
    packed_params q
    int64_t* acc
    int64_t* sums
    Py_ssize_t part_stride
    int max_parts
    const X_BINNED_DTYPE_C* X_rows  # NULL: never row-wise
    Py_ssize_t row_stride
    # the feature layout (bundling.FeatureLayout); feature_column NULL: none
    const int* feature_column
    const int* bundle_index
    const X_BINNED_DTYPE_C* bundle_codes  # 256 per bundled feature
    const X_BINNED_DTYPE_C* default_bin
    const unsigned short* column_width
    const X_BINNED_DTYPE_C* column_default
    # sparse-stored columns: row-wise and column-wise entries
    const long long* sparse_indptr
    const unsigned int* sparse_columns
    const X_BINNED_DTYPE_C* sparse_codes
    const unsigned int* column_bounds
    int n_chunks
    const long long* column_indptr
    const SIZE_C* column_rows
    const X_BINNED_DTYPE_C* column_codes
    X_BINNED_DTYPE_C* scratch  # a zero byte per row
    # the dense columns row-wise (mv.indptr NULL: column-wise histograms)
    multi_value_bins mv


cdef int set_buffers(tree_buffers* buf, dict buffers, int n_features, int n_bins,
                     int n_columns_expected) except -1

cdef void node_histograms(const tree_buffers* buf, SIZE_C start, SIZE_C n,
                          Py_ssize_t first, int n_dense, hist_struct* out,
                          int n_threads) noexcept nogil

cdef SIZE_C partition_node(const tree_buffers* buf, SIZE_C start, SIZE_C n,
                           const split_info_struct* split, int n_threads) noexcept nogil
