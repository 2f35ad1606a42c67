"""NumPy dtypes mirroring the C types of ``_types.pxd``."""
import numpy as np

from ._types cimport grown_node_struct, hist_struct, node_struct, split_info_struct

X_DTYPE = np.float64
X_BINNED_DTYPE = np.uint8
G_H_DTYPE = np.float32
Y_DTYPE = np.float64
SIZE_DTYPE = np.uint32
# A set of category codes 0..255: 8 words of 32 bits, code c is bit c % 32 of
# word c // 32.
BITSET_DTYPE = np.uint32
BITSET_WORDS = 8
# The deepest a tree may be (a leaf's depth, the root at 0): the grower stops
# there whatever max_depth says, and a loaded tree deeper than this is refused
# (tree/validation.py). It bounds the tree walks that recurse (TreeSHAP) and
# their path buffers, whatever a model file holds.
MAX_TREE_DEPTH = 1024

HISTOGRAM_DTYPE = np.dtype([
    ("sum_gradients", np.float64),
    ("sum_hessians", np.float64),
    ("count", np.uint32),
])

NODE_DTYPE = np.dtype([
    ("value", np.float64),
    ("count", np.uint32),
    ("sum_hessians", np.float64),
    ("feature_idx", np.uint32),
    ("num_threshold", np.float64),
    ("missing_go_to_left", np.uint8),
    ("left", np.uint32),
    ("right", np.uint32),
    ("gain", np.float64),
    ("depth", np.uint32),
    ("is_leaf", np.uint8),
    ("bin_threshold", np.uint8),
    ("is_categorical", np.uint8),
    ("bitset_idx", np.uint32),
])

# Node fields added after trees were first saved, with the value a tree saved
# before them gets: its hessian sums were not recorded.
NODE_FIELDS_ADDED = {"sum_hessians": np.nan}
# The node fields of every tree saved before the additions.
NODE_FIELDS_FIRST = tuple(name for name in NODE_DTYPE.names if name not in NODE_FIELDS_ADDED)


def stored_node_dtype(names):
    """The packed dtype of node records saved with the fields ``names`` (in
    ``NODE_DTYPE``'s order). Only fields of ``NODE_FIELDS_ADDED`` may be
    missing; ValueError for any other difference."""
    names = tuple(names)
    if (names != tuple(n for n in NODE_DTYPE.names if n in names)
            or not set(NODE_FIELDS_FIRST) <= set(names)):
        raise ValueError(f"node fields {list(names)} differ from this hgbt's "
                         f"{list(NODE_DTYPE.names)}")
    return np.dtype([(name, NODE_DTYPE.fields[name][0]) for name in names])


def upgrade_nodes(stored):
    """Node records with the fields of :func:`stored_node_dtype` as
    ``NODE_DTYPE`` records: ``stored`` itself when they are already, else a
    copy in which the added fields missing get their default."""
    if stored.dtype == NODE_DTYPE:
        return stored
    nodes = np.empty(stored.shape[0], dtype=NODE_DTYPE)  # every field set below
    for name in NODE_DTYPE.names:
        nodes[name] = stored[name] if name in stored.dtype.names else NODE_FIELDS_ADDED[name]
    return nodes


SPLIT_INFO_DTYPE = np.dtype([
    ("gain", np.float64),
    ("feature_idx", np.int32),
    ("bin_idx", np.uint32),
    ("missing_go_to_left", np.uint8),
    ("sum_gradients_left", np.float64),
    ("sum_hessians_left", np.float64),
    ("n_samples_left", np.uint32),
    ("sum_gradients_right", np.float64),
    ("sum_hessians_right", np.float64),
    ("n_samples_right", np.uint32),
    ("is_categorical", np.uint8),
    ("cat_bitset", np.uint32, (8,)),
], align=True)

GROWN_NODE_DTYPE = np.dtype([
    ("sum_gradients", np.float64),
    ("sum_hessians", np.float64),
    ("count", np.uint32),
    ("depth", np.uint32),
    ("lower", np.float64),
    ("upper", np.float64),
    ("value", np.float64),
    ("start", np.uint32),
    ("stop", np.uint32),
    ("left", np.int32),
    ("right", np.int32),
    ("split", SPLIT_INFO_DTYPE),
], align=True)

# The kernels reinterpret these arrays as the C structs: sizes must agree.
assert HISTOGRAM_DTYPE.itemsize == sizeof(hist_struct)
assert NODE_DTYPE.itemsize == sizeof(node_struct)
assert SPLIT_INFO_DTYPE.itemsize == sizeof(split_info_struct)
assert GROWN_NODE_DTYPE.itemsize == sizeof(grown_node_struct)

cdef grown_node_struct _node
_offsets = {"lower": <char*>&_node.lower - <char*>&_node,
            "start": <char*>&_node.start - <char*>&_node,
            "left": <char*>&_node.left - <char*>&_node,
            "split": <char*>&_node.split - <char*>&_node}
assert all(GROWN_NODE_DTYPE.fields[name][1] == offset for name, offset in _offsets.items())
