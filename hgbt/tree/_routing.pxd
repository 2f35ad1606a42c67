# How a raw value is routed at a tree node, shared by every kernel that walks
# the node array on raw values (_predictor.pyx, _apply.pyx, _shap.pyx), so
# that they agree on every row.
from ..core._types cimport node_struct, BITSET_WORD_C


cdef inline bint in_bitset(const BITSET_WORD_C* bitset, unsigned int code) noexcept nogil:
    return (bitset[code >> 5] >> (code & 31)) & 1


cdef inline bint goes_left(const node_struct* node, const BITSET_WORD_C* bitsets,
                           double x) noexcept nogil:
    """Whether value ``x`` of the node's feature goes to the left child.

    NaN follows ``missing_go_to_left``; a numeric split sends ``x <= threshold``
    left; a categorical split sends an integer code 0..255 left iff its bit is
    set in the node's row of ``bitsets``, and any other value (negative,
    fractional, too large) the way missing values go.
    """
    if x != x:  # NaN
        return node.missing_go_to_left
    if node.is_categorical:
        if x >= 0.0 and x < 256.0 and x == <double> <unsigned int> x:
            return in_bitset(&bitsets[8 * node.bitset_idx], <unsigned int> x)
        return node.missing_go_to_left
    return x <= node.num_threshold


cdef inline unsigned int leaf_index(const node_struct* nodes, const BITSET_WORD_C* bitsets,
                                    const double* row) noexcept nogil:
    """Index (in the tree's node array) of the leaf that ``row`` reaches."""
    cdef unsigned int j = 0
    while not nodes[j].is_leaf:
        if goes_left(&nodes[j], bitsets, row[nodes[j].feature_idx]):
            j = nodes[j].left
        else:
            j = nodes[j].right
    return j
