"""``hgbt.Dataset``: rows validated once and binned once, reusable across fits.

A Dataset holds the rows as the trees read them before binning: categorical
columns as codes (a pooled feature's as its categories' positions), sparse
input as canonical CSR, with the label and the weights. The first fit on it
bins it (:meth:`Dataset.construct`): the target statistics of pooled
categorical features, the bin boundaries and the feature layout (bundles,
sparse-stored columns). Later fits on the same Dataset take those bins as
they are, so a search over tree or boosting parameters bins once; a fit
whose parameters would bin differently (``max_bins``, ``enable_bundle``,
``max_conflict_rate``, ``categorical_features``, another target kind or
class weights) is refused with a ValueError, as LightGBM refuses to change
``max_bin`` on a constructed Dataset.

A validation set is a Dataset with ``reference=`` the training one: its
columns are converted with the reference's categorical encoding and names.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, Union

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.utils import Tags, TargetTags, check_random_state
from sklearn.utils._param_validation import validate_parameter_constraints
from sklearn.utils.validation import _check_sample_weight, check_array

from ..core._openmp import effective_n_threads
from ..core._types import X_DTYPE, Y_DTYPE
from ..core.params import REGRESSOR, constraints, names, resolved_default
from ..core.row_meta import check_qid, qid_from_group
from . import batches as _batches
from . import target_stats
from .batches import BatchedRows
from .binning import BinMapper
from .bundling import DenseBins, FeatureLayout, SparseBins, build_layout
from .categorical import CategoricalEncoding, pooled_features, validate_X
from .pages import BinPages, PagedBins
from .sparse import ACCEPTED_FORMATS, as_csr, bin_stored_entries, check_sparse_format

#: rows as the estimators, Datasets and Boosters take them: arrays and anything
#: NumPy converts (pandas, polars, ...), or a scipy.sparse matrix or array
if TYPE_CHECKING:
    MatrixLike: TypeAlias = ArrayLike | sp.spmatrix | sp.sparray
else:  # the same at run time, where scipy < 1.11 has no sparray
    MatrixLike: TypeAlias = Union[ArrayLike, sp.spmatrix,
                                  getattr(sp, "sparray", sp.spmatrix)]

#: the parameters that decide how rows are binned (a reused Dataset keeps them)
BINNING_PARAMS = tuple(names("binning"))
#: those a Dataset from batches ignores (it is never bundled)
UNBUNDLED = ("enable_bundle", "max_conflict_rate")
#: ``binned_for`` of a Dataset from batches: its bins serve any target
ANY_TARGET = ("any target",)
PARAMETERS = constraints(REGRESSOR)  # their constraints, as the estimators check them


def new_seed(random_state: int | np.random.RandomState | None) -> int:
    """The seed of every random draw of a fit, from ``random_state``."""
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


class Binned:
    """What construction made of a Dataset's rows for one kind of target.

    Attributes
    ----------
    X : ndarray or sparse matrix
        The training rows as the trees read them: pooled features as their
        bins, followed by the target-statistic columns.
    layout : FeatureLayout
        The binned rows (bundled and sparse-stored columns where they pay).
    bin_mapper : BinMapper
    target_stats : dict or None
        The target statistics of the pooled features (None without any).
    """

    def __init__(self, X: np.ndarray | sp.csr_matrix, layout: FeatureLayout,
                 bin_mapper: BinMapper, target_stats: dict | None) -> None:
        self.X = X
        self.layout = layout
        self.bin_mapper = bin_mapper
        self.target_stats = target_stats


class Dataset:
    """Training or validation rows, validated once and binned once.

    Parameters
    ----------
    data : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
        Anything the estimators' ``fit`` takes: NumPy, pandas, polars,
        Arrow, scipy.sparse. NaN marks a missing value.
    label : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
        Targets (regression) or class labels (classification); several
        columns: multi-output regression, or multi-label classification
        (0/1).
    weight : array-like of shape (n_samples,), default=None
        Non-negative row weights.
    init_score : array-like of shape (n_samples,) or (n_samples, n_classes), default=None
        Each row's start score (the estimators' ``fit(init_score=...)``; for
        a validation Dataset, its rows'). Checked against the target's
        classes when a fit reads it.
    qid : array-like of shape (n_samples,), default=None
        Learning to rank: each row's query (XGBoost's ``qid``; the ranker's
        ``fit(qid=...)``). A query's rows need not be adjacent.
    group : array-like of int, default=None
        Learning to rank: the sizes of consecutive queries instead
        (LightGBM's ``group``).
    label_upper_bound : array-like of shape (n_samples,), default=None
        Survival: the end of each row's time interval, ``label`` its start
        (XGBoost's ``label_lower_bound`` / ``label_upper_bound``): equal for
        an event, ``inf`` for a right-censored time.
    reference : Dataset, default=None
        The training Dataset this one validates: its categorical encoding,
        feature names and binning are used. Only for validation sets.
    categorical_features : 'from_dtype', array-like or None, default='from_dtype'
        As the estimators' parameter.
    max_bins, enable_bundle, max_conflict_rate : default as the estimators'
        How the rows are binned (see the estimators).
    random_state : int, RandomState instance or None, default=None
        Seeds the binning's row subsample and the target statistics' folds;
        None: the seed of the first fit on this Dataset.
    n_threads : int or None, default=None
        Threads of the binning; None: every usable CPU.

    Attributes
    ----------
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``data`` has feature names.
    categorical : CategoricalEncoding or None
    label, weight, init_score, qid, label_upper_bound : ndarray or None
        (``qid`` as int64 codes, ``group`` turned into them)
    binned : Binned or None
        What the first fit made of the rows (None before it); ``binned_for``
        says for which kind of target.
    """

    def __init__(self, data: MatrixLike, label: ArrayLike | None = None, *,
                 weight: ArrayLike | None = None, init_score: ArrayLike | None = None,
                 qid: ArrayLike | None = None, group: ArrayLike | None = None,
                 label_upper_bound: ArrayLike | None = None,
                 reference: Dataset | None = None,
                 categorical_features: ArrayLike | Literal['from_dtype'] | None =
                 resolved_default("categorical_features"),
                 max_bins: int = resolved_default("max_bins"),
                 enable_bundle: bool = resolved_default("enable_bundle"),
                 max_conflict_rate: float = resolved_default("max_conflict_rate"),
                 random_state: int | np.random.RandomState | None = None,
                 n_threads: int | None = None) -> None:
        if isinstance(data, Dataset):
            raise TypeError("data is already a Dataset.")
        if reference is not None and not isinstance(reference, Dataset):
            raise TypeError(f"reference must be a Dataset, got {type(reference).__name__}.")
        binning = dict(categorical_features=categorical_features, max_bins=max_bins,
                       enable_bundle=enable_bundle, max_conflict_rate=max_conflict_rate)
        validate_parameter_constraints(
            {**{name: PARAMETERS[name] for name in BINNING_PARAMS},
             "random_state": PARAMETERS["random_state"], "n_threads": PARAMETERS["n_threads"]},
            dict(binning, random_state=random_state, n_threads=n_threads),
            caller_name="Dataset")
        self.reference = reference
        if reference is not None:  # validated as the reference's rows
            for name, value in binning.items():
                if not _same(value, resolved_default(name)) and not _same(
                        value, getattr(reference, name)):
                    raise ValueError(f"{name}={value!r}: a validation Dataset is binned as "
                                     f"its reference ({name}={getattr(reference, name)!r}).")
            categorical_features = reference.categorical_features
            max_bins, enable_bundle = reference.max_bins, reference.enable_bundle
            max_conflict_rate = reference.max_conflict_rate
        self.categorical_features = categorical_features
        self.max_bins = max_bins
        self.enable_bundle = enable_bundle
        self.max_conflict_rate = max_conflict_rate
        self.random_state = random_state
        self.n_threads = n_threads
        check_sparse_format(data)
        params = dict(positions=True, dtype=[X_DTYPE, np.float32], ensure_all_finite=False,
                      accept_sparse=ACCEPTED_FORMATS, accept_large_sparse=True)
        if reference is None:
            X, self.categorical = validate_X(self, data,
                                             categorical_features=categorical_features,
                                             reset=True, **params)
        else:
            X, self.categorical = validate_X(reference, data, reference.categorical,
                                             **params)
            self.n_features_in_ = reference.n_features_in_
            names = getattr(reference, "feature_names_in_", None)
            if names is not None:
                self.feature_names_in_ = names
        self._set_rows(as_csr(X) if sp.issparse(X) else X, label, weight)
        if init_score is not None:
            init_score = np.array(init_score, dtype=np.float64)
            if init_score.ndim not in (1, 2) or init_score.shape[0] != self.X.shape[0]:
                raise ValueError(f"init_score has shape {init_score.shape}; data has "
                                 f"{self.X.shape[0]} rows: one start score per row (and "
                                 "class).")
        self.init_score = init_score
        n = self.X.shape[0]
        if qid is not None and group is not None:
            raise ValueError("give qid or group, not both.")
        self.qid = check_qid(qid, n) if group is None else qid_from_group(group, n)
        if label_upper_bound is not None:
            label_upper_bound = np.array(label_upper_bound, dtype=np.float64)
            if label_upper_bound.shape != (n,):
                raise ValueError(f"label_upper_bound has shape {label_upper_bound.shape}; "
                                 f"data has {n} rows: one upper bound per row.")
        self.label_upper_bound = label_upper_bound

    def row_fields(self) -> dict[str, np.ndarray]:
        """The rows' side information a fit reads beside label and weight
        (:class:`~hgbt.core.row_meta.RowMeta` fields): query ids, upper bounds."""
        return {name: value for name, value in (("qid", self.qid),
                                                ("label_upper_bound", self.label_upper_bound))
                if value is not None}

    @classmethod
    def from_prepared(cls, X: np.ndarray | sp.csr_matrix, label: np.ndarray | None,
                      weight: np.ndarray | None, *,
                      categorical: CategoricalEncoding | None, n_features_in: int,
                      feature_names_in: np.ndarray | None = None,
                      **settings: Any) -> Dataset:
        """A Dataset of rows already validated and converted as the
        constructor converts them (a fit's own input checks do that): X as
        the trees read it before binning (pooled features as positions),
        ``label`` and ``weight`` checked arrays. ``settings``: the
        constructor's binning keywords."""
        out = cls.__new__(cls)
        out.reference = None
        for name in BINNING_PARAMS + ("random_state", "n_threads"):
            setattr(out, name, settings.get(name, resolved_default(name)
                                            if name in BINNING_PARAMS else None))
        out.categorical = categorical
        out.n_features_in_ = n_features_in
        if feature_names_in is not None:
            out.feature_names_in_ = feature_names_in
        out.X, out.label, out.weight = X, label, weight
        out.init_score = out.qid = out.label_upper_bound = None
        out.binned = out.binned_for = None
        out.__setstate__({})  # its lock
        return out

    @classmethod
    def from_batches(cls, batches: Any, *, label: str | None = None,
                     weight: str | None = None, reference: Dataset | None = None,
                     categorical_features: ArrayLike | Literal['from_dtype'] | None =
                     resolved_default("categorical_features"),
                     max_bins: int = resolved_default("max_bins"),
                     random_state: int | np.random.RandomState | None = None,
                     n_threads: int | None = None, out_of_core: bool = False,
                     directory: str | None = None,
                     memory_budget: int = 256 * 2**20, verbose: int = 0) -> Dataset:
        """A Dataset binned from batches of rows, never holding more than one
        batch's values (``hgbt/data/batches.py``).

        The batches are read twice: once for the bin boundaries (a quantile
        sketch per numeric column, the categories of the categorical ones,
        the labels and weights), once to bin them into one uint8 matrix. The
        boundaries are in-memory binning's while a column has at most 4,096
        distinct values; given the same boundaries the model is the
        in-memory one, bit for bit.

        Parameters
        ----------
        batches : iterable or callable
            Re-iterable batches (a list, :class:`~hgbt.data.batches.ParquetBatches`)
            or a function returning a new iterator of them on each call. A
            batch is ``(X, y)``, ``(X, y, weight)``, a dict with keys
            ``data``, ``label``, ``weight`` (XGBoost's ``DataIter`` names),
            or a pandas / polars / Arrow frame with the ``label`` (and
            ``weight``) columns. X is anything ``fit`` takes but sparse:
            NumPy, pandas, polars, Arrow tables or record batches.
        label, weight : str, default=None
            The columns of frame batches holding the label and the weights.
        reference : Dataset, default=None
            A validation set of that training Dataset: its batches are
            converted with the reference's encoding and kept as values (a
            validation set is predicted each round), in one pass.
        categorical_features, max_bins, random_state, n_threads
            As :class:`Dataset`'s. The rows are never bundled.
        out_of_core : bool, default=False
            Keep the bins on disk, in pages (:class:`~hgbt.data.pages.BinPages`),
            and train by passes over them (``hgbt/tree/paged.py``): in memory
            only the per-row state (labels, weights, scores, gradients, each
            row's node). The model is the one of the bins in memory, bit for
            bit. Not supported out of core (ValueError at fit): row sampling
            (``subsample`` < 1, GOSS), quantized gradients, vector leaves.
        directory : str, default=None
            Out of core: where the pages' own directory is made (default: the
            system's temporary directory); it is removed with the Dataset.
        memory_budget : int, default=256 MiB
            Out of core: bytes of pages kept in memory between passes.
        verbose : int, default=0
            > 0: a line every ``verbose`` batches of each pass, and one at its
            end (the fit's progress is the estimators' ``verbose``).

        Returns
        -------
        Dataset
            Binned already (``is_constructed``); its ``X`` keeps the shape
            only (:class:`~hgbt.data.batches.BatchedRows`).
        """
        if reference is not None:
            return cls._validation_from_batches(batches, label, weight, reference)
        validate_parameter_constraints(
            {name: PARAMETERS[name] for name in ("categorical_features", "max_bins",
                                                 "random_state", "n_threads")},
            dict(categorical_features=categorical_features, max_bins=max_bins,
                 random_state=random_state, n_threads=n_threads),
            caller_name="Dataset.from_batches")
        read = _batches.passes(batches)
        threads = effective_n_threads(n_threads)
        survey = _batches.survey_batches(read, categorical_features, label, weight, threads,
                                         verbose=verbose)
        encoding = survey.encoding()
        mapper = survey.bin_mapper(encoding, max_bins, threads)
        pages = (BinPages(survey.mask.size, directory=directory, memory_budget=memory_budget)
                 if out_of_core else None)
        codes = _batches.bin_batches(read, survey, encoding, mapper, label, weight, pages,
                                     verbose)
        n_rows, n_features = survey.n_rows, survey.mask.size
        y = (np.concatenate(survey.labels) if survey.labels else None)
        w = (np.concatenate(survey.weights) if survey.weights else None)
        rows = BatchedRows(n_rows, n_features)
        out = cls.from_prepared(
            rows, *_checked_label_weight(rows, y, w), categorical=encoding,
            n_features_in=n_features,
            feature_names_in=getattr(survey.schema, "feature_names_in_", None),
            categorical_features=categorical_features, max_bins=max_bins,
            random_state=random_state, n_threads=n_threads)
        layout = (PagedBins(pages, mapper.n_bins_non_missing_) if out_of_core
                  else FeatureLayout.plain(codes, mapper.n_bins_non_missing_))
        out.binned = Binned(out.X, layout, mapper, None)
        out.binned_for = ANY_TARGET
        return out

    @classmethod
    def _validation_from_batches(cls, batches, label, weight, reference):
        parts, labels, weights = [], [], []
        for index, item in enumerate(_batches.passes(batches)()):
            X, y, w = _batches.split_batch(item, label, weight, index)
            parts.append(validate_X(reference, X, reference.categorical, positions=True,
                                    dtype=[X_DTYPE, np.float32], ensure_all_finite=False)[0])
            if y is not None:
                labels.append(np.asarray(y))
            if w is not None:
                weights.append(np.asarray(w, dtype=Y_DTYPE))
        if not parts:
            raise ValueError("batches yielded no rows.")
        if len(labels) not in (0, len(parts)) or len(weights) not in (0, len(parts)):
            raise ValueError("every batch has a label (and weights), or none.")
        # the batches are validated and coded already: not a second time
        X = np.concatenate(parts)
        out = cls.from_prepared(
            X, *_checked_label_weight(X, np.concatenate(labels) if labels else None,
                                      np.concatenate(weights) if weights else None),
            categorical=reference.categorical, n_features_in=reference.n_features_in_,
            feature_names_in=getattr(reference, "feature_names_in_", None),
            **reference.binning)
        out.reference = reference
        return out

    def subset(self, rows: ArrayLike, reference: Dataset | None = None) -> Dataset:
        """A Dataset of some of these rows (not binned yet): the same
        categorical encoding, names and binning parameters; a validation
        set of ``reference`` if given."""
        rows = np.asarray(rows)
        out = Dataset.from_prepared(
            self.X[rows], None if self.label is None else self.label[rows],
            None if self.weight is None else self.weight[rows],
            categorical=self.categorical, n_features_in=self.n_features_in_,
            feature_names_in=getattr(self, "feature_names_in_", None), **self.binning,
            random_state=self.random_state, n_threads=self.n_threads)
        out.reference = reference
        for name in ("init_score", "qid", "label_upper_bound"):
            if getattr(self, name) is not None:
                setattr(out, name, getattr(self, name)[rows])
        return out

    def _set_rows(self, X, label, weight):
        self.X = X
        self.label, self.weight = _checked_label_weight(X, label, weight)
        self.binned = self.binned_for = None
        self._lock = threading.Lock()

    def __sklearn_tags__(self):
        # scikit-learn's validate_data records and checks feature names and
        # counts on a Dataset as on an estimator
        return Tags(estimator_type=None, target_tags=TargetTags(required=False))

    @property
    def n_rows(self) -> int:
        """Rows of the data."""
        return self.X.shape[0]

    @property
    def pooled_features(self) -> list[int]:
        """Indices of the pooled categorical features (more than 255 categories)."""
        return pooled_features(self.categorical)

    @property
    def binning(self) -> dict[str, Any]:
        """The binning parameters of this Dataset (:data:`BINNING_PARAMS`)."""
        return {name: getattr(self, name) for name in BINNING_PARAMS}

    @property
    def is_constructed(self) -> bool:
        """Whether a fit has binned these rows."""
        return self.binned is not None

    def check_binning(self, params: Mapping[str, Any]) -> None:
        """ValueError unless the binning parameters in ``params`` (a fit's)
        are this Dataset's: its rows are binned once, by its own."""
        for name in BINNING_PARAMS:
            if isinstance(self.X, BatchedRows) and name in UNBUNDLED:
                continue  # never bundled: the bundling parameters do not apply
            if name in params and not _same(params[name], getattr(self, name)):
                raise ValueError(
                    f"{name}={params[name]!r} differs from the Dataset's {name}="
                    f"{getattr(self, name)!r}: a Dataset's rows are binned once, with its "
                    f"own {name}. Build a new Dataset(..., {name}={params[name]!r}) for it.")

    def construct(self, y_columns: np.ndarray, weight: np.ndarray | None, key: tuple[str, ...],
                  seed: int, n_threads: int,
                  model: tuple[BinMapper, dict | None] | None = None) -> Binned:
        """The rows binned for targets ``y_columns`` (shape (n, n_outputs):
        what the pooled features' statistics encode) and row weights
        ``weight``: once, then the same :class:`Binned` for the same ``key``
        (the target kind and the class weights, as the fit states them).

        ``seed`` is the fit's (used unless the Dataset has its own
        ``random_state``). ``model`` = ``(bin_mapper, target_stats)`` of a
        warm start: its bins and statistics table are kept.
        """
        with self._lock:
            binned, binned_for = self.binned, self.binned_for
        if binned_for is ANY_TARGET:  # from batches: binned once, for any fit
            if model is not None and model[0] is not binned.bin_mapper:
                raise ValueError(
                    "warm_start: this Dataset was built from batches and binned by its "
                    "own boundaries; the model's are other ones, and the batches' values "
                    "are not kept to bin them again. Continue the model on the Dataset it "
                    "was fitted on, or on rows in memory.")
            return binned
        if model is not None and (binned is None or model[0] is not binned.bin_mapper):
            # a warm start bins by its model's mapper: not this Dataset's own bins
            return self._bin(y_columns, weight, seed, n_threads, model)
        if binned is None:
            binned = self._bin(y_columns, weight, seed, n_threads, model)
            with self._lock:  # a concurrent fit may have binned first: keep one
                if self.binned is None:
                    self.binned, self.binned_for = binned, key
                binned, binned_for = self.binned, self.binned_for
        if binned_for != key:
            raise ValueError(
                f"This Dataset was binned for {binned_for}; a fit for {key} needs other "
                "bins (the target statistics of its pooled categorical features, or "
                "other class weights). Build a new Dataset for it.")
        return binned

    def __getstate__(self):
        if self.binned is not None and isinstance(self.binned.layout, PagedBins):
            raise TypeError("A Dataset out of core (from_batches(..., out_of_core=True)) "
                            "keeps its bins in files of this process and is not pickled: "
                            "build it again from its batches where it is needed.")
        state = dict(self.__dict__)
        state.pop("_lock")  # a lock does not pickle; a new one on loading
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name in ("qid", "label_upper_bound"):  # a Dataset pickled before them
            self.__dict__.setdefault(name, None)
        self._lock = threading.Lock()

    def _bin(self, y_columns, weight, seed, n_threads, model):
        if self.random_state is not None:
            seed = new_seed(self.random_state)
        pooled = self.pooled_features
        stats = None if model is None else model[1]
        X = self.X
        if pooled and not (model is not None and stats is None):
            categories = self.categorical.categories
            fitted, columns = target_stats.fit_transform(
                X, pooled, [len(categories[f]) for f in pooled], y_columns, weight, seed)
            if model is None:  # a warm start keeps its first fit's table
                stats = fitted
            X = target_stats.with_columns(X, pooled, columns)
        elif pooled:  # a model saved before target statistics: bins only
            X = target_stats.with_columns(X, pooled, np.empty((X.shape[0], 0)))
        if model is None:
            is_categorical = target_stats.with_numeric_columns(
                None if self.categorical is None else self.categorical.mask, stats)
            mapper = BinMapper(max_bins=self.max_bins, random_state=seed,
                               n_threads=n_threads, is_categorical=is_categorical)
            mapper.fit(X, sample_weight=weight)
        else:
            mapper = model[0]
        return Binned(X, bin_rows(X, mapper, n_threads, self.enable_bundle,
                                  self.max_conflict_rate), mapper, stats)


def _checked_label_weight(X, label, weight):
    """A Dataset's label and weights, checked against its rows ``X``."""
    n = X.shape[0]
    if label is not None:
        label = check_array(label, ensure_2d=False, dtype=None, ensure_all_finite=False,
                            input_name="label")
        if label.ndim not in (1, 2) or label.shape[0] != n:
            raise ValueError(f"label has shape {label.shape}; data has {n} rows: it "
                             "must be one target per row (or one row of targets "
                             "per row: several outputs, or labels).")
    if weight is not None:
        weight = np.ascontiguousarray(_check_sample_weight(
            weight, X, dtype=Y_DTYPE, ensure_non_negative=True))
    return label, weight


def sparse_bins(X: sp.csr_matrix, bin_mapper: BinMapper, n_threads: int) -> SparseBins:
    """The bins of sparse rows, from their stored entries only."""
    X_csc = X.tocsc()
    return SparseBins(X_csc, bin_stored_entries(X_csc, bin_mapper, n_threads),
                      bin_mapper.zero_bins(), bin_mapper.missing_bin)


def bin_rows(X: np.ndarray | sp.csr_matrix, bin_mapper: BinMapper, n_threads: int,
             enable_bundle: bool, max_conflict_rate: float) -> FeatureLayout:
    """Rows as the trees read them, binned: a :class:`~hgbt.data.bundling.FeatureLayout`
    (bundled or sparse-stored columns where they pay, else the plain one)."""
    if sp.issparse(X):
        bins = sparse_bins(X, bin_mapper, n_threads)
    else:
        bins = DenseBins(bin_mapper.transform(X), bin_mapper.zero_bins(),
                         bin_mapper.missing_bin, n_threads)
    return build_layout(bins, bin_mapper.is_categorical_, bin_mapper.n_bins_non_missing_,
                        bin_mapper.missing_bin, enable_bundle=enable_bundle,
                        max_conflict_rate=max_conflict_rate)


def plain_bins(X: np.ndarray | sp.csr_matrix, bin_mapper: BinMapper,
               n_threads: int) -> FeatureLayout:
    """The plain layout of rows: every feature its own dense column of bins
    (sparse rows densified), for trees that read no other layout."""
    codes = (sparse_bins(X, bin_mapper, n_threads).dense_matrix() if sp.issparse(X)
             else bin_mapper.transform(X))
    return FeatureLayout.plain(np.asfortranarray(codes), bin_mapper.n_bins_non_missing_)


def _same(a, b):
    """Equal parameter values (arrays and lists element-wise)."""
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return type(a) is type(b) and a == b if not (a is None or b is None) else a is b
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except (TypeError, ValueError):
        return a == b
