"""The rows a tree grows on, as the kernels read them.

:func:`set_buffers` points a :c:type:`tree_buffers` at one tree's arrays
(``TreeKernel.grow``'s, by name) and its binned rows (a
:class:`~hgbt.data.bundling.FeatureLayout`); :func:`node_histograms` and
:func:`partition_node` are the two things the grower loop asks of them, each
dispatching on the layout (plain dense columns, bundled columns,
sparse-stored columns, the dense columns' row-wise multi-value bins, packed
quantized gradients), so the loop
(``_grower.pyx``) reads no layout field itself.
"""
from libc.string cimport memcpy, memset

from libc.stdint cimport int64_t

import numpy as np

from ..core._types cimport (X_BINNED_DTYPE_C, G_H_DTYPE_C, SIZE_C, hist_struct,
                            split_info_struct)
from ._histogram cimport _used_width, histogram_root, histogram_rows, histogram_packed
from ._histogram_sparse cimport histogram_sparse
from ._multi_value cimport by_rows, histogram_multi_value
from ._partition cimport partition, partition_stored
from ._rules cimport goes_left_table, bundle_table


cdef int set_buffers(tree_buffers* buf, dict buffers, int n_features, int n_bins,
                     int n_columns_expected) except -1:
    # buf's pointers into the arrays of ``buffers`` (TreeKernel.grow's, the
    # binned rows as "layout"): valid while those live (the caller holds them
    # for the tree). ValueError for arrays of inconsistent shapes.
    layout, rows, buffer = (buffers.get("layout"), buffers.get("rows"),
                            buffers.get("buffer"))
    if layout is None or rows is None or buffer is None:
        raise ValueError("TreeKernel.grow: layout, rows and buffer are needed for "
                         "local rows.")
    packed = buffers.get("packed")
    cdef SIZE_C[::1] rows_view = rows, buffer_view = buffer
    cdef const G_H_DTYPE_C[::1] g_view, h_view
    cdef G_H_DTYPE_C[::1] og_view, oh_view
    cdef const int64_t[::1] packed_view
    cdef int64_t[:, ::1] acc_view, sums_view
    cdef const X_BINNED_DTYPE_C[:, ::1] rows_major
    cdef const int[::1] lay_column, lay_bundle
    cdef const X_BINNED_DTYPE_C[:, ::1] lay_codes
    cdef const X_BINNED_DTYPE_C[::1] lay_default, lay_col_default, lay_sp_codes
    cdef const X_BINNED_DTYPE_C[::1] lay_col_codes
    cdef X_BINNED_DTYPE_C[::1] scratch_view
    cdef const long long[::1] lay_indptr, lay_col_indptr
    cdef const unsigned int[::1] lay_sp_columns, bounds_view
    cdef const SIZE_C[::1] lay_col_rows
    cdef const X_BINNED_DTYPE_C[::1, :] X = layout.X_dense
    cdef const unsigned short[::1] width_view = layout.column_width
    plain = layout.is_plain
    n_samples = rows_view.shape[0]
    n_dense = X.shape[1]
    n_columns = layout.n_columns
    if (X.shape[0] != n_samples or buffer_view.shape[0] < n_samples or n_bins > 256
            or width_view.shape[0] != n_columns or (plain and n_dense != n_features)
            or (not plain and n_columns_expected != n_columns)):
        raise ValueError("TreeKernel.grow: inconsistent shapes.")
    memset(buf, 0, sizeof(tree_buffers))
    buf.X = &X[0, 0] if n_dense else NULL
    buf.n_samples = n_samples
    buf.n_dense = n_dense
    buf.n_columns = n_columns
    buf.n_bins = n_bins
    buf.rows = &rows_view[0]
    buf.buffer = &buffer_view[0]
    g_view, h_view = buffers.get("gradients"), buffers.get("hessians")
    buf.constant_hessian = h_view.shape[0] == 1
    if g_view.shape[0]:
        buf.gradients, buf.hessians = &g_view[0], &h_view[0]
    if packed is None:
        og_view, oh_view = buffers["ordered_gradients"], buffers["ordered_hessians"]
        buf.ordered_gradients = &og_view[0]
        buf.ordered_hessians = &oh_view[0]
    else:
        packed_view = packed
        acc_view, sums_view = buffers["acc"], buffers["sums"]
        if (packed_view.shape[0] < n_samples or acc_view.shape[1] < n_dense * 256
                or sums_view.shape[1] != 3 * acc_view.shape[1]):
            raise ValueError("TreeKernel.grow: inconsistent packed buffers.")
        buf.packed = &packed_view[0]
        buf.q.g_exponent, buf.q.h_exponent = buffers["exponents"]
        buf.q.h_shift, buf.q.g_shift, buf.q.block_rows = buffers["packed_lanes"]
        buf.q.constant_hessian = buffers["constant_hessian"]
        buf.acc, buf.sums = &acc_view[0, 0], &sums_view[0, 0]
        buf.part_stride = acc_view.shape[1]
        buf.max_parts = acc_view.shape[0]
        X_rows = buffers.get("X_rows")
        if X_rows is not None:
            rows_major = X_rows
            if rows_major.shape[0] != n_samples or rows_major.shape[1] < n_dense:
                raise ValueError("TreeKernel.grow: X_rows must hold X_binned's rows.")
            buf.X_rows = &rows_major[0, 0]
            buf.row_stride = rows_major.shape[1]
    if n_columns:
        # histograms and subtractions touch only the bins a column uses
        buf.column_width = &width_view[0]
    multi_value = buffers.get("multi_value")
    if multi_value is not None:
        _set_multi_value(&buf.mv, multi_value, n_samples, n_dense, packed is not None,
                         buf.column_width, n_bins)
    if not plain:
        lay_column = layout.feature_column
        lay_bundle = layout.bundle_index
        lay_default = layout.default_bin
        lay_col_default = layout.column_default
        if (lay_column.shape[0] != n_features or lay_bundle.shape[0] != n_features
                or lay_default.shape[0] != n_features
                or lay_col_default.shape[0] != n_columns):
            raise ValueError("TreeKernel.grow: inconsistent layout.")
        buf.feature_column = &lay_column[0]
        buf.bundle_index = &lay_bundle[0]
        buf.default_bin = &lay_default[0]
        buf.column_default = &lay_col_default[0]
        if layout.bundle_codes.shape[0]:
            lay_codes = layout.bundle_codes
            buf.bundle_codes = &lay_codes[0, 0]
        if n_columns > n_dense:
            lay_indptr = layout.sparse_indptr
            lay_sp_columns = layout.sparse_columns
            lay_sp_codes = layout.sparse_codes
            lay_col_indptr = layout.column_indptr
            lay_col_rows = layout.column_rows
            lay_col_codes = layout.column_codes
            bounds_view = buffers["column_bounds"]
            scratch_view = buffers["scratch"]
            if (lay_indptr.shape[0] != n_samples + 1 or scratch_view.shape[0] < n_samples
                    or bounds_view[bounds_view.shape[0] - 1] != n_columns - n_dense
                    or buf.gradients == NULL):
                raise ValueError("TreeKernel.grow: inconsistent sparse columns.")
            buf.sparse_indptr = &lay_indptr[0]
            if lay_sp_columns.shape[0]:
                buf.sparse_columns = &lay_sp_columns[0]
                buf.sparse_codes = &lay_sp_codes[0]
                buf.column_rows = &lay_col_rows[0]
                buf.column_codes = &lay_col_codes[0]
            buf.column_indptr = &lay_col_indptr[0]
            buf.column_bounds = &bounds_view[0]
            buf.n_chunks = bounds_view.shape[0] - 1
            buf.scratch = &scratch_view[0]
    return 0


cdef int _set_multi_value(multi_value_bins* mv, multi_value, SIZE_C n_samples,
                          int n_dense, bint packed, const unsigned short* column_width,
                          int n_bins) except -1:
    # mv's pointers into a training_data.MultiValueBins.view (the dense
    # columns; packed: with its integer sums); its slots must be the bins
    # of these columns' histograms
    cdef int c
    cdef const long long[::1] indptr = multi_value.indptr, offset = multi_value.offset
    cdef const unsigned short[::1] slots16
    cdef const unsigned int[::1] slots32
    cdef const X_BINNED_DTYPE_C[::1] mode = multi_value.mode
    cdef hist_struct[:, ::1] private = multi_value.private
    cdef double[::1] totals = multi_value.totals
    cdef int64_t[:, ::1] acc, sums
    cdef int64_t[::1] total_lanes
    cdef unsigned char[::1] flushed
    if (indptr.shape[0] != n_samples + 1 or offset.shape[0] != n_dense + 1
            or mode.shape[0] != n_dense or private.shape[1] != offset[n_dense]
            or totals.shape[0] < 2 * private.shape[0] or private.shape[0] < 1):
        raise ValueError("TreeKernel.grow: inconsistent multi-value bins.")
    for c in range(n_dense):
        if offset[c + 1] - offset[c] != _used_width(column_width, c, n_bins) + 1:
            raise ValueError("TreeKernel.grow: multi-value bins of other bins.")
    mv.indptr = &indptr[0]
    if multi_value.slots.dtype == np.uint16:
        slots16 = multi_value.slots
        mv.slots16 = &slots16[0] if slots16.shape[0] else <const unsigned short*>mv.indptr
    else:
        slots32 = multi_value.slots
        mv.slots32 = &slots32[0] if slots32.shape[0] else <const unsigned int*>mv.indptr
    mv.offset = &offset[0]
    mv.mode = &mode[0]
    mv.n_columns = n_dense
    mv.entries_per_row = indptr[n_samples] / max(<double>n_samples, 1.0)
    mv.private = &private[0, 0]
    mv.totals = &totals[0]
    mv.max_parts = private.shape[0]
    if packed:
        acc, sums = multi_value.acc, multi_value.sums
        total_lanes, flushed = multi_value.total_lanes, multi_value.flushed
        if (acc.shape[0] < mv.max_parts or acc.shape[1] != offset[n_dense]
                or sums.shape[0] < mv.max_parts or sums.shape[1] != 3 * offset[n_dense]
                or total_lanes.shape[0] < 3 * mv.max_parts
                or flushed.shape[0] < mv.max_parts * sizeof(bint)):
            raise ValueError("TreeKernel.grow: inconsistent multi-value integer sums.")
        mv.acc, mv.sums = &acc[0, 0], &sums[0, 0]
        mv.total_lanes, mv.flushed = &total_lanes[0], <bint*>&flushed[0]
    return 0


cdef void node_histograms(const tree_buffers* buf, SIZE_C start, SIZE_C n,
                          Py_ssize_t first, int n_dense, hist_struct* out,
                          int n_threads) noexcept nogil:
    # The histograms of the node's rows (rows[start:start + n]) into out: the
    # dense columns first .. first + n_dense - 1 (all, or a feature-parallel
    # process's block), then the sparse-stored ones.
    cdef bint all_rows = n == buf.n_samples
    cdef const X_BINNED_DTYPE_C* X = (buf.X + first * buf.n_samples
                                      if buf.X != NULL else NULL)
    cdef const unsigned short* width = (buf.column_width + first
                                        if buf.column_width != NULL else NULL)
    cdef hist_struct* into = out + first * buf.n_bins
    if n == 0:
        memset(out, 0, <Py_ssize_t>max(buf.n_columns, 1) * buf.n_bins * sizeof(hist_struct))
    elif n_dense == 0:
        pass
    elif n_dense == buf.n_dense and by_rows(&buf.mv, n):
        histogram_multi_value(&buf.mv, buf.rows + start, n, buf.gradients, buf.hessians,
                              buf.constant_hessian, buf.packed, &buf.q, out, buf.n_bins,
                              n_threads)
    elif buf.packed != NULL:
        histogram_packed(X, buf.n_samples, n_dense,
                         buf.X_rows + first if buf.X_rows != NULL else NULL,
                         buf.row_stride, not all_rows, buf.rows + start, n,
                         buf.packed, &buf.q, buf.acc, buf.sums,
                         buf.part_stride, buf.max_parts, into, buf.n_bins,
                         width, n_threads)
    elif all_rows:
        histogram_root(X, buf.n_samples, n_dense, buf.gradients,
                       buf.hessians, buf.constant_hessian, into, buf.n_bins,
                       width, n_threads)
    else:
        histogram_rows(X, buf.n_samples, n_dense, buf.rows + start, n,
                       buf.gradients, buf.hessians, buf.constant_hessian,
                       buf.ordered_gradients, buf.ordered_hessians, into, buf.n_bins,
                       width, n_threads)
    if n > 0 and buf.n_columns > buf.n_dense:
        histogram_sparse(buf.sparse_indptr, buf.sparse_columns, buf.sparse_codes,
                         buf.rows + start, n, buf.gradients, buf.hessians,
                         buf.constant_hessian, buf.column_default + buf.n_dense,
                         buf.column_width + buf.n_dense, buf.column_bounds,
                         buf.n_chunks, out + <Py_ssize_t>buf.n_dense * buf.n_bins,
                         buf.n_columns - buf.n_dense, buf.n_bins, n_threads)



cdef SIZE_C partition_node(const tree_buffers* buf, SIZE_C start, SIZE_C n,
                           const split_info_struct* split, int n_threads) noexcept nogil:
    # Partition rows[start:start + n] by the split, in place: a table over the
    # split feature's bins, then over its column's codes. Returns the left count.
    cdef unsigned char goes_left[256]
    cdef unsigned char table[256]
    cdef int f, column
    goes_left_table(split, buf.n_bins - 1, goes_left)
    f = split.feature_idx
    column = f
    if buf.feature_column != NULL:
        column = buf.feature_column[f]
        if buf.bundle_index[f] >= 0:
            bundle_table(buf.bundle_codes + <Py_ssize_t>buf.bundle_index[f] * 256,
                          goes_left[buf.default_bin[f]], goes_left, table)
            memcpy(goes_left, table, 256)
    if column < buf.n_dense:
        return partition(buf.rows + start, buf.buffer, n,
                         buf.X + <Py_ssize_t>column * buf.n_samples, False, goes_left,
                         n_threads)
    return partition_stored(
        buf.rows + start, buf.buffer, n, buf.sparse_indptr, buf.sparse_columns,
        buf.sparse_codes, buf.column_indptr, buf.column_rows, buf.column_codes,
        column - buf.n_dense, buf.column_default[column], goes_left, buf.scratch,
        n_threads)


# The per-node interface of LocalTrainingData (the Python loop the tests check
# the kernel against) goes through the same dispatch.

def build_node_histograms(dict buffers, int n_features, SIZE_C start, SIZE_C n,
                          hist_struct[:, ::1] out, int n_threads):
    """The histograms of rows ``rows[start:start + n]`` of ``buffers``
    (``TreeKernel.grow``'s) into ``out`` (one row of bins per column)."""
    cdef tree_buffers buf
    set_buffers(&buf, buffers, n_features, out.shape[1], buffers["layout"].n_columns)
    if out.shape[0] != max(buf.n_columns, 1) or start + n > buf.n_samples:
        raise ValueError("build_node_histograms: inconsistent shapes.")
    with nogil:
        node_histograms(&buf, start, n, 0, buf.n_dense, &out[0, 0], n_threads)


def partition_node_rows(dict buffers, int n_features, int n_bins, SIZE_C start, SIZE_C n,
                        split_info_struct[::1] split, int n_threads):
    """Partition ``rows[start:start + n]`` of ``buffers`` in place by
    ``split[0]`` (a SPLIT_INFO_DTYPE record); returns the left count."""
    cdef tree_buffers buf
    cdef SIZE_C n_left
    set_buffers(&buf, buffers, n_features, n_bins, buffers["layout"].n_columns)
    if (start + n > buf.n_samples or split.shape[0] != 1
            or not 0 <= split[0].feature_idx < n_features):
        raise ValueError("partition_node_rows: inconsistent split or rows.")
    with nogil:
        n_left = partition_node(&buf, start, n, &split[0], n_threads)
    return n_left
