"""Feature layout of the binned training data: exclusive feature bundling (EFB)
and sparse storage.

Every feature has a *default bin*, the bin of 0.0. Features that are rarely
off their default bin are candidates for bundling: greedily (most entries
first), a feature joins the first recent bundle whose rows it does not share
(up to ``max_conflict_rate`` of the rows) and whose 254 codes have room for
its non-default bins; code 0 of a bundle means "every member at its default
bin". The binned *columns* are bundles and unbundled features. A column is
stored as a dense uint8 column, or, when at most ``SPARSE_MAX_DENSITY`` of
its rows are off its default code and there are enough such columns to pay
(``MIN_SPARSE_SAVING``), only by its other entries in one row-wise CSR
shared by all sparse columns (its default bin is then the node total minus
its other bins).

Trees never see this: splits are searched and stored per original feature
(``_splitting`` unpacks a bundled feature's bins from its column), and on the
gradient grid every histogram sum is exact, so a layout without conflicts
gives bit for bit the model of the plain layout.
"""
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ._bundling import column_entries, column_stats, first_fit_bundles
from ..core._types import SIZE_DTYPE, X_BINNED_DTYPE

# Sparse storage saves a column's dense pass over a node's rows but costs
# every thread a pass over the node's row pointers and about 1/0.15 dense
# passes per unit of density (the entries' scattered adds): so a column is a
# candidate when at most this share of its rows is off its default code, and
# the candidates are stored sparse only when they save at least
# MIN_SPARSE_SAVING dense passes, counting 1 - density / SPARSE_MAX_DENSITY
# each (measured on real tables: a handful of 5-15% columns is faster dense;
# benchmarks/RESULTS.md).
SPARSE_MAX_DENSITY = 0.15
MIN_SPARSE_SAVING = 8.0
# Features off their default bin on more rows than this are never bundled.
BUNDLE_MAX_DENSITY = 0.5
# Codes 1..254 of a bundle hold its members' bins (0: all default, 255 unused
# so that 255 stays the missing bin of every unbundled column).
MAX_BUNDLE_CODES = 254
# Features needing more codes are left alone (EFB pays for one-hot, counts
# and flags; a continuous sparse feature fills a bundle by itself).
MAX_FEATURE_CODES = 64
# Bundles a candidate is tried against: the most recently opened ones.
SEARCH_WINDOW = 100


class DenseBins:
    """Binned features of a dense matrix (``BinMapper.transform`` output)."""

    def __init__(self, X_binned, default_bin, missing_bin, n_threads=1):
        self.X_binned = np.asfortranarray(X_binned, dtype=X_BINNED_DTYPE)
        self.n_rows, self.n_features = X_binned.shape
        self.default_bin = np.ascontiguousarray(default_bin, dtype=X_BINNED_DTYPE)
        self.nnz, self.has_missing = column_stats(self.X_binned, self.default_bin,
                                                  missing_bin, n_threads)
        # The bundle search and the assembly read a sparse column's entries
        # alike: kept once read (read-only) for the sparse-storage candidates,
        # whose entries (5 bytes each) take less room than the column.
        self._entries = {}
        self._keep_entries = self.nnz <= SPARSE_MAX_DENSITY * self.n_rows

    def entries(self, f):
        """Rows off the default bin (sorted, uint32) and their bins."""
        found = self._entries.get(f)
        if found is None:
            found = column_entries(self.X_binned, f, self.default_bin[f], self.nnz[f])
            if self._keep_entries[f]:
                for array in found:
                    array.flags.writeable = False
                self._entries[f] = found
        return found

    def dense_column(self, f):
        return self.X_binned[:, f]

    def dense_matrix(self):
        """Every feature as its own column (F-ordered uint8)."""
        return self.X_binned


class SparseBins:
    """Binned features of a CSC matrix, from its stored entries only."""

    def __init__(self, X_csc, codes, default_bin, missing_bin):
        self.n_rows, self.n_features = X_csc.shape
        self.default_bin = default_bin
        counts = np.diff(X_csc.indptr)
        feature = np.repeat(np.arange(self.n_features), counts)
        keep = codes != default_bin[feature]  # stored zeros are not entries
        feature = feature[keep]
        self.rows = X_csc.indices[keep].astype(SIZE_DTYPE)
        self.codes = codes[keep]
        self.nnz = np.bincount(feature, minlength=self.n_features).astype(np.int64)
        self.indptr = np.concatenate([[0], np.cumsum(self.nnz)])
        self.has_missing = np.bincount(feature[self.codes == missing_bin],
                                       minlength=self.n_features) > 0

    def entries(self, f):
        start, stop = self.indptr[f], self.indptr[f + 1]
        return self.rows[start:stop], self.codes[start:stop]

    def dense_column(self, f):
        col = np.full(self.n_rows, self.default_bin[f], dtype=X_BINNED_DTYPE)
        rows, codes = self.entries(f)
        col[rows] = codes
        return col

    def dense_matrix(self):
        """Every feature as its own column (F-ordered uint8)."""
        X_binned = np.empty((self.n_rows, self.n_features), dtype=X_BINNED_DTYPE, order="F")
        for f in range(self.n_features):
            X_binned[:, f] = self.dense_column(f)
        return X_binned


@dataclass
class FeatureLayout:
    """The binned training data: where each feature's bins live.

    Columns ``0 .. n_dense - 1`` are the columns of ``X_dense``; the others
    (``n_dense + j``) are column ``j`` of the row-wise CSR ``sparse_*``. A
    plain matrix is the trivial layout (:meth:`plain`): every feature its own
    dense column.
    """

    n_features: int
    feature_column: np.ndarray   # int32 (n_features,)
    bundle_index: np.ndarray     # int32 (n_features,): row of bundle_codes, -1 alone
    bundle_codes: np.ndarray     # uint8 (n_bundled, 256): feature bin -> code, 0 = none
    bundle_offset: np.ndarray    # int32 (n_features,): a bundled feature's first code, -1 alone
    bundle_n_codes: np.ndarray   # int32 (n_features,): its number of codes
    default_bin: np.ndarray      # uint8 (n_features,)
    column_default: np.ndarray   # uint8 (n_columns,): code of rows without an entry
    columns: list                # members of each column
    X_dense: np.ndarray          # uint8 (n_rows, n_dense), F-ordered
    sparse_indptr: np.ndarray    # int64 (n_rows + 1,)
    sparse_columns: np.ndarray   # uint32 (n_entries,): sparse column, sorted per row
    sparse_codes: np.ndarray     # uint8 (n_entries,)
    # The same entries column by column (rows sorted), for partitions.
    column_indptr: np.ndarray    # int64 (n_sparse + 1,)
    column_rows: np.ndarray      # uint32 (n_entries,)
    column_codes: np.ndarray     # uint8 (n_entries,)
    column_width: np.ndarray     # uint16 (n_columns,): codes below it, plus 255, are used
    conflicts: int               # rows whose value a bundle dropped

    @classmethod
    def plain(cls, X_binned, n_bins_non_missing=None, default_bin=None):
        """The trivial layout: feature ``f`` is column ``f`` of ``X_binned``.

        ``n_bins_non_missing`` (default: all 255) bounds the bins each column
        uses; ``default_bin`` (default 0) is the bin of 0.0 of each feature.
        """
        n_rows, n_features = X_binned.shape
        width = (np.full(n_features, 255) if n_bins_non_missing is None
                 else np.minimum(n_bins_non_missing, 255))
        default = (np.zeros(n_features) if default_bin is None else default_bin)
        default = np.asarray(default, dtype=X_BINNED_DTYPE)
        none = np.full(n_features, -1, dtype=np.int32)
        empty_rows = np.empty(0, dtype=SIZE_DTYPE)
        empty_codes = np.empty(0, dtype=X_BINNED_DTYPE)
        return cls(
            n_features=n_features, feature_column=np.arange(n_features, dtype=np.int32),
            bundle_index=none, bundle_codes=np.zeros((0, 256), dtype=X_BINNED_DTYPE),
            bundle_offset=none.copy(), bundle_n_codes=np.zeros(n_features, dtype=np.int32),
            default_bin=default, column_default=default.copy(),
            columns=[[f] for f in range(n_features)], X_dense=X_binned,
            sparse_indptr=np.zeros(n_rows + 1, dtype=np.int64),
            sparse_columns=np.empty(0, dtype=np.uint32), sparse_codes=empty_codes,
            column_indptr=np.zeros(1, dtype=np.int64), column_rows=empty_rows,
            column_codes=empty_codes, column_width=width.astype(np.uint16), conflicts=0)

    @property
    def is_plain(self):
        """Whether every feature is its own dense column (``X_dense``'s ``f``)."""
        return self.n_dense == self.n_features and not self.bundle_codes.shape[0]

    @property
    def n_columns(self):
        return len(self.columns)

    @property
    def n_dense(self):
        return self.X_dense.shape[1]

    @property
    def n_bundles(self):
        return sum(len(members) > 1 for members in self.columns)

    def column_bounds(self, n_threads):
        """Sparse-column ranges of about equal entry counts, one per thread."""
        n_sparse = self.n_columns - self.n_dense
        counts = np.bincount(self.sparse_columns, minlength=n_sparse)
        cum = np.concatenate([[0], np.cumsum(counts)])
        n_chunks = max(1, min(n_threads, n_sparse))
        cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_chunks) / n_chunks)
        return np.unique(np.concatenate([[0], np.minimum(cuts, n_sparse),
                                         [n_sparse]])).astype(np.uint32)

    def feature_codes(self, f, goes_left):
        """A 256-entry table over feature ``f``'s bins as a table over its column's codes."""
        k = self.bundle_index[f]
        if k < 0:
            return goes_left
        codes = self.bundle_codes[k]
        table = np.full(256, goes_left[self.default_bin[f]], dtype=np.uint8)
        own = np.flatnonzero(codes)
        table[codes[own]] = goes_left[own]
        return table


def _n_codes(n_bins_non_missing, default_bin, has_missing):
    """Codes a feature needs in a bundle: its bins other than the default one."""
    return (n_bins_non_missing.astype(np.int64) - (default_bin < n_bins_non_missing)
            + has_missing)


def find_bundles(bins, candidates, n_codes, max_conflict_rate,
                 max_codes=MAX_BUNDLE_CODES):
    """Greedy exclusive bundles of the ``candidates`` (lists of features).

    Most entries first; each feature joins the first bundle of the search
    window with room for its codes and at most the remaining conflict budget
    (``max_conflict_rate`` of the rows, per bundle); a bundle has at most
    ``max_codes`` codes besides 0. Returns the bundles and their total
    conflicts.
    """
    n_rows = bins.n_rows
    budget = int(max_conflict_rate * n_rows)
    order = sorted(candidates, key=lambda f: (-bins.nnz[f], f))
    bundle_of, conflicts = first_fit_bundles(
        bins.entries, np.asarray(order, dtype=np.int64),
        np.ascontiguousarray(n_codes, dtype=np.int64), n_rows, budget, max_codes,
        SEARCH_WINDOW)
    bundles = [[] for _ in range(int(bundle_of.max()) + 1 if len(order) else 0)]
    for f, b in zip(order, bundle_of.tolist()):
        bundles[b].append(f)
    return bundles, conflicts


def build_layout(bins, is_categorical, n_bins_non_missing, missing_bin, *,
                 enable_bundle=True, max_conflict_rate=0.0):
    """The :class:`FeatureLayout` of binned input: bundles and sparse-stored
    columns where they pay, else the plain one (every feature its own dense
    column: dense binned input's ``X_binned`` as it is).
    """
    n_rows, n_features = bins.n_rows, bins.n_features
    is_categorical = (np.zeros(n_features, dtype=bool) if is_categorical is None
                      else np.asarray(is_categorical, dtype=bool))
    nnz = bins.nnz
    n_codes = _n_codes(n_bins_non_missing, bins.default_bin, bins.has_missing)
    groups = [[f] for f in range(n_features)]
    conflicts = 0
    # Codes 1 .. missing_bin - 1: a histogram row has missing_bin + 1 bins and
    # its last one stays the missing bin.
    max_codes = min(MAX_BUNDLE_CODES, missing_bin - 1)
    if enable_bundle:
        candidates = np.flatnonzero(~is_categorical & (nnz <= BUNDLE_MAX_DENSITY * n_rows)
                                    & (n_codes <= min(MAX_FEATURE_CODES, max_codes)))
        if candidates.size > 1:
            bundles, conflicts = find_bundles(bins, candidates.tolist(), n_codes,
                                              max_conflict_rate, max_codes)
            alone = np.setdiff1d(np.arange(n_features), candidates)
            groups = sorted([[int(f)] for f in alone] + bundles, key=min)
    density = np.array([nnz[g].sum() for g in groups]) / max(n_rows, 1)
    sparse = np.array([density[i] <= SPARSE_MAX_DENSITY and not is_categorical[g].any()
                       for i, g in enumerate(groups)], dtype=bool)
    if np.sum(1.0 - density[sparse] / SPARSE_MAX_DENSITY) < MIN_SPARSE_SAVING:
        sparse[:] = False
    if not sparse.any() and all(len(g) == 1 for g in groups):
        return FeatureLayout.plain(bins.dense_matrix(), n_bins_non_missing,
                                   bins.default_bin)
    columns = [g for g, s in zip(groups, sparse) if not s] + \
              [g for g, s in zip(groups, sparse) if s]
    return _assemble(bins, columns, int((~sparse).sum()), n_bins_non_missing,
                     missing_bin, conflicts)


def _assemble(bins, columns, n_dense, n_bins_non_missing, missing_bin, conflicts):
    n_rows, n_features = bins.n_rows, bins.n_features
    default_bin = np.asarray(bins.default_bin, dtype=X_BINNED_DTYPE)
    feature_column = np.empty(n_features, dtype=np.int32)
    bundle_index = np.full(n_features, -1, dtype=np.int32)
    bundle_offset = np.full(n_features, -1, dtype=np.int32)
    bundle_n_codes = np.zeros(n_features, dtype=np.int32)
    bundled = [f for members in columns if len(members) > 1 for f in members]
    bundle_codes = np.zeros((len(bundled), 256), dtype=X_BINNED_DTYPE)
    column_default = np.zeros(len(columns), dtype=X_BINNED_DTYPE)
    X_dense = np.empty((n_rows, n_dense), dtype=X_BINNED_DTYPE, order="F")
    sparse_rows, sparse_codes, sparse_counts = [], [], []
    next_bundled = 0
    for c, members in enumerate(columns):
        feature_column[members] = c
        if len(members) == 1:
            f = members[0]
            column_default[c] = default_bin[f]
            if c < n_dense:
                X_dense[:, c] = bins.dense_column(f)
            else:
                rows, codes = bins.entries(f)
                sparse_rows.append(rows)
                sparse_codes.append(codes)
                sparse_counts.append(rows.size)
            continue
        offset = 1
        col_rows, col_codes = [], []
        for f in members:
            k = bundle_index[f] = next_bundled
            next_bundled += 1
            own = [b for b in range(int(n_bins_non_missing[f])) if b != default_bin[f]]
            if bins.has_missing[f]:
                own.append(missing_bin)
            bundle_codes[k, own] = np.arange(offset, offset + len(own))
            bundle_offset[f], bundle_n_codes[f] = offset, len(own)
            offset += len(own)
            rows, codes = bins.entries(f)
            col_rows.append(rows)
            col_codes.append(bundle_codes[k][codes])
        rows = np.concatenate(col_rows)
        codes = np.concatenate(col_codes)
        # On a conflict row the first member (most entries) keeps its value.
        rows, first = np.unique(rows, return_index=True)
        codes = codes[first]
        if c < n_dense:
            X_dense[:, c] = 0
            X_dense[rows, c] = codes
        else:
            sparse_rows.append(rows.astype(SIZE_DTYPE))
            sparse_codes.append(codes)
            sparse_counts.append(rows.size)
    indptr, columns_csr, codes_csr = _row_wise(n_rows, sparse_rows, sparse_codes,
                                               sparse_counts)
    column_width = np.array([n_bins_non_missing[m[0]] if len(m) == 1
                             else 1 + bundle_n_codes[m].sum() for m in columns],
                            dtype=np.uint16)
    return FeatureLayout(
        column_indptr=np.concatenate([[0], np.cumsum(sparse_counts)]).astype(np.int64),
        column_rows=np.concatenate(sparse_rows or [np.empty(0)]).astype(SIZE_DTYPE),
        column_codes=np.concatenate(sparse_codes or [np.empty(0)]).astype(X_BINNED_DTYPE),
        column_width=column_width,
        n_features=n_features, feature_column=feature_column, bundle_index=bundle_index,
        bundle_codes=bundle_codes, bundle_offset=bundle_offset,
        bundle_n_codes=bundle_n_codes, default_bin=default_bin, column_default=column_default,
        columns=columns, X_dense=X_dense, sparse_indptr=indptr,
        sparse_columns=columns_csr, sparse_codes=codes_csr, conflicts=int(conflicts))


def _row_wise(n_rows, rows, codes, counts):
    """Per-column (rows, codes) lists as one CSR sorted by row, then column."""
    n_cols = len(rows)
    if n_cols == 0:
        return (np.zeros(n_rows + 1, dtype=np.int64), np.empty(0, dtype=np.uint32),
                np.empty(0, dtype=X_BINNED_DTYPE))
    col_indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    # scipy's CSC -> CSR conversion is a counting sort and keeps stored zeros.
    csc = sp.csc_matrix((np.concatenate(codes), np.concatenate(rows).astype(np.int64),
                         col_indptr), shape=(n_rows, n_cols))
    csr = csc.tocsr()
    assert csr.nnz == col_indptr[-1]
    return (csr.indptr.astype(np.int64), csr.indices.astype(np.uint32),
            np.ascontiguousarray(csr.data, dtype=X_BINNED_DTYPE))
