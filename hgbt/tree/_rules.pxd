# The growth rules of a tree, shared by every loop that grows one (the
# kernel's local and remote loops, _grower.pyx): which node may split, the
# queue order, a child's totals from its parent's split, children's bounds
# and values under monotonic constraints, and the partition tables.
from libc.string cimport memset

from ..core._types cimport X_BINNED_DTYPE_C, split_info_struct, grown_node_struct
from ._splitting cimport bounded_value, split_params


cdef inline bint may_split(const grown_node_struct* node, int max_depth,
                           const split_params* p) noexcept nogil:
    # max_depth -1: none
    if max_depth >= 0 and <int>node.depth >= max_depth:
        return False
    return (node.count >= 2 * p.min_samples_leaf
            and node.sum_hessians >= 2 * p.min_child_weight)


cdef inline bint queued_before(const grown_node_struct* nodes, int a, int b,
                               bint lossguide) noexcept nogil:
    # The queue order of TreeGrower's heap: (-gain, id) or (depth, id).
    if lossguide:
        if nodes[a].split.gain != nodes[b].split.gain:
            return nodes[a].split.gain > nodes[b].split.gain
    elif nodes[a].depth != nodes[b].depth:
        return nodes[a].depth < nodes[b].depth
    return a < b


cdef inline void child_of(const grown_node_struct* parent, grown_node_struct* child,
                          bint left) noexcept nogil:
    memset(child, 0, sizeof(grown_node_struct))
    if left:
        child.sum_gradients = parent.split.sum_gradients_left
        child.sum_hessians = parent.split.sum_hessians_left
        child.count = parent.split.n_samples_left
    else:
        child.sum_gradients = parent.split.sum_gradients_right
        child.sum_hessians = parent.split.sum_hessians_right
        child.count = parent.split.n_samples_right
    child.depth = parent.depth + 1
    child.left = child.right = -1


cdef inline void bound_children(
    grown_node_struct* parent, grown_node_struct* left, grown_node_struct* right,
    const split_params* p,
) noexcept nogil:
    # The children's bounds under monotonic constraints, then each one's
    # (unshrunk) value.
    cdef signed char cst = 0
    cdef double mid, l1 = p.l1_regularization, l2 = p.l2_regularization
    left.lower = right.lower = parent.lower
    left.upper = right.upper = parent.upper
    if p.monotonic_cst != NULL:
        cst = p.monotonic_cst[parent.split.feature_idx]
    if cst != 0:
        mid = 0.5 * (bounded_value(left.sum_gradients, left.sum_hessians, l1, l2,
                                   left.lower, left.upper)
                     + bounded_value(right.sum_gradients, right.sum_hessians, l1, l2,
                                     right.lower, right.upper))
        if cst > 0:
            left.upper = right.lower = mid
        else:
            left.lower = right.upper = mid
    left.value = bounded_value(left.sum_gradients, left.sum_hessians, l1, l2, left.lower,
                               left.upper)
    right.value = bounded_value(right.sum_gradients, right.sum_hessians, l1, l2,
                                right.lower, right.upper)


cdef inline void goes_left_table(const split_info_struct* split, int missing_bin,
                                 unsigned char* goes_left) noexcept nogil:
    # The partition's table: value bins <= bin_idx (or in the category set),
    # and the missing bin by the split's missing direction.
    cdef int b
    for b in range(256):
        if split.is_categorical:
            goes_left[b] = (split.cat_bitset[b >> 5] >> (b & 31)) & 1
        else:
            goes_left[b] = b <= <int>split.bin_idx
    goes_left[missing_bin] = split.missing_go_to_left


cdef inline void bundle_table(const X_BINNED_DTYPE_C* codes, unsigned char default_left,
                              const unsigned char* goes_left,
                              unsigned char* table) noexcept nogil:
    # A table over a bundled feature's bins as one over its column's codes
    # (FeatureLayout.feature_codes): code 0 and other members' codes mean
    # the feature is at its default bin.
    cdef int b
    memset(table, default_left, 256)
    for b in range(256):
        if codes[b]:
            table[codes[b]] = goes_left[b]
