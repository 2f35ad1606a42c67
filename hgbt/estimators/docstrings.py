"""The numpydoc sections both estimators share, formatted into their docstrings."""

#: Parameters shared by both estimators (numpydoc), formatted into their docstrings.
COMMON_PARAMETERS_DOC = """\
    learning_rate : float, default=0.15
        Shrinkage applied to every leaf value. The defaults of this and of
        ``max_iter``, ``l2_regularization``, ``early_stopping``,
        ``n_iter_no_change``, ``cat_smooth`` and ``max_cat_threshold`` were
        chosen together by measurement on real tables (``doc/training.md``).
    max_iter : int, default=150
        Maximum number of boosting rounds (one tree each, or one per class
        for multiclass classification). Without column sampling, the fit
        also ends when no tree of a round can split (as LightGBM's does):
        later rounds could not split either, and their one-leaf trees would
        only add rounding noise; that round is not kept.
    max_leaf_nodes : int, None or 'auto', default='auto'
        Maximum leaves per tree; None for no limit. 'auto' grows trees of
        31 leaves and, when that fit runs to ``max_iter`` without stopping
        early (it was still improving: the data may carry larger trees),
        fits again from the start with 63 leaves on the same validation set
        and keeps the model that scores better there (``max_leaf_nodes_``,
        ``tree_size_scores_``). It compares only when early stopping watches
        a validation set (the hold-out, ``X_val`` or an ``eval_set``); else
        'auto' is 31. Such fits take up to twice as long. Chosen by
        measurement on real tables (``doc/training.md``); LightGBM's and
        scikit-learn's default is 31.
    max_depth : int or None, default=None
        Maximum depth of a tree (the root is depth 0), at most 1024; None:
        1024, the deepest tree a model file holds.
    min_samples_leaf : int, default=20
        Minimum number of rows in a leaf.
    min_child_weight : float, default=1e-3
        Minimum sum of hessians in a leaf. A tree whose root holds less
        (e.g. a rare class whose probability underflowed) takes no Newton
        step: -G/H of a vanishing H is unbounded.
    min_gain_to_split : float, default=0.0
        Gain a split must exceed (γ; subtracted from every split's gain). The
        gain is ½[G_L²/(H_L+λ) + G_R²/(H_R+λ) − G²/(H+λ)], half of
        LightGBM's and XGBoost's: their ``min_split_gain`` / ``gamma`` of 2γ
        equals hgbt's γ.
    l1_regularization : float, default=0.0
        L1 penalty α on leaf values: gradient sums are soft-thresholded by α
        in gains and leaf values.
    l2_regularization : float or 'auto', default='auto'
        L2 penalty λ on leaf values. 'auto' is 1.0 (XGBoost's default;
        LightGBM's and scikit-learn's is 0) for trees of 31 leaves or a
        fixed ``max_leaf_nodes``, and 10.0 for the 63-leaf trees that
        ``max_leaf_nodes='auto'`` tries (``l2_regularization_``).
    max_bins : int, default=255
        Maximum value bins per feature (2 to 255); missing values get one more.
        A feature with more distinct values is cut greedily by row counts:
        a value holding at least ``1 / max_bins`` of the rows gets a bin of
        its own, the other rows share the remaining bins equally, so ties
        do not waste bins a heavy tail needs.
    enable_bundle : bool, default=True
        Exclusive feature bundling: features that are rarely non-zero on the
        same rows (one-hot, counts, flags) share one binned column, so wide
        sparse data trains like a few dense columns. Splits are still on the
        original features (``doc/sparse.md``).
    max_conflict_rate : float, default=0.0
        Share of the rows on which bundled features may both be non-zero (on
        such a row the feature with more non-zeros keeps its value, the other
        is seen as 0 during training). 0 keeps the model exactly the
        unbundled one.
    use_quantized_grad : bool, default=False
        Build histograms from gradients and hessians rounded stochastically
        to a few integer levels (LightGBM's ``use_quantized_grad``). One
        integer add then updates a bin's gradient and hessian sums, so
        histograms (most of a fit) build faster (measured in
        ``benchmarks/RESULTS.md``). Splits are
        chosen on the quantized sums; leaf values are refit from the exact
        float sums of each leaf's rows. Rounding is seeded by
        ``random_state`` and each row's index, so the model still does not
        depend on the thread count, nor on the number of Dask workers.
    num_grad_quant_bins : int, default=32
        Levels of the quantized gradients (within ±bins/2) and hessians
        (within [0, bins]); more levels are more accurate. 32 packs like 16
        (the same speed) and rounds the small hessians of multiclass rows
        less coarsely.
    grow_policy : {'lossguide', 'depthwise'}, default='lossguide'
        'lossguide' splits the leaf with the largest gain first; 'depthwise'
        grows level by level (still capped by ``max_leaf_nodes``: set it to
        None and use ``max_depth`` for XGBoost-style depth-wise trees).
    early_stopping : 'auto', 'cv' or bool, default='auto'
        Stop when the watched score (``scoring`` on ``early_stopping_set``)
        has not improved by more than ``tol`` for ``n_iter_no_change``
        rounds. 'auto' turns it on from 100 rows (scikit-learn's: above
        10,000), or when ``X_val`` is given to ``fit``: below 10,000 rows it
        is 'cv' (below) where nothing else is watched (no ``X_val``,
        ``eval_set`` or ``early_stopping_set``, no warm start or
        ``truncate_at_best``, every class in the 5 folds), else a hold-out
        of ``validation_fraction`` (not for a classifier with a class too
        rare for a stratified hold-out). On an
        :class:`hgbt.Dataset`, 'auto' turns it on when a validation set is
        given (``X_val`` or ``eval_set``), whatever the row count: a hold-out
        would bin the Dataset again. 'cv': the rounds are chosen by 5-fold
        cross-validation of the training rows (the round of the best mean
        ``scoring``, and with ``max_leaf_nodes='auto'`` the better tree
        size), then every row is fitted for that many rounds
        (``cv_results_``): steadier than a hold-out of a few hundred rows,
        for 8-10 times a hold-out fit's time on small tables; each fold's
        fit stops ``4 * n_iter_no_change`` rounds after its best; callbacks
        follow the final fit. Not with a Dataset (``hgbt.cv``), ``X_val``,
        ``early_stopping_set`` or a warm start (but a checkpoint of the
        final fit, warm started, finishes its rounds).
    scoring : str, callable or None, default='loss'
        Score used for early stopping and ``best_iteration_``: 'loss' (the
        loss; the smaller the better), or a scikit-learn scorer name or
        callable (None: the estimator's ``score``).
    eval_metric : str, callable, list, dict or None, default=None
        More metrics recorded in ``evals_result_`` each round on every set:
        scikit-learn scorer names or callables ``(estimator, X, y)``, a
        list of them, or a dict name → scorer; 'loss' is the loss. The loss
        (with a built-in loss) and ``scoring`` are always recorded. Scorers
        read the raw predictions the rounds keep up to date (no predicting
        again). On the training rows every metric, the loss too, reads at
        most 10,000 of them (a seeded sample; pass them in ``eval_set`` to
        score them all).
    early_stopping_set : str or None, default=None
        The set early stopping and ``best_iteration_`` watch: 'train',
        'validation' (``X_val``, or the hold-out of ``validation_fraction``)
        or a name of ``fit``'s ``eval_set``. None: 'validation' when there
        is ``X_val``, else the first ``eval_set`` set that does not hold the
        training rows (as LightGBM skips its training set; warned), else the
        hold-out (with early stopping), else 'train'.
    truncate_at_best : bool, default=False
        After the fit, drop the rounds after ``best_iteration_`` (``n_iter_``
        becomes ``best_iteration_``). Off by default, as in scikit-learn:
        the model is then every round grown and ``n_iter_`` the rounds fitted,
        and nothing depends on a score being comparable across rounds; turn
        it on, or predict with ``iteration_range=(0, best_iteration_)``, to
        get the best round's model as LightGBM and XGBoost predict by default.
    validation_fraction : float, int or None, default=0.1
        Share (or number) of training rows held out for early stopping
        (stratified for classifiers); None scores the training data.
    n_iter_no_change : int, default=8
        Rounds without improvement before stopping.
    tol : float, default=1e-7
        Minimum score improvement that counts.
    warm_start : bool, default=False
        Continue from the fitted rounds up to ``max_iter`` instead of
        starting again (binning and validation split are kept).
    subsample : float, default=1.0
        With ``data_sample_strategy='bagging'``, the probability of each row
        to be in a round's sample (drawn anew each round, from the seed, the
        round and the row's index: the same rows on any number of threads or
        Dask workers).
    data_sample_strategy : {'bagging', 'goss'}, default='bagging'
        'goss' keeps the ``goss_top_rate`` rows with the largest
        ``|gradient × hessian|`` and, on average, ``goss_other_rate`` of
        the rows in random draws from the others, whose gradients and
        hessians are scaled by ``(1 - top_rate) / other_rate`` so sums stay
        unbiased.
    goss_top_rate : float, default=0.2
        GOSS: share of rows kept for their large gradients (see
        ``data_sample_strategy``).
    goss_other_rate : float, default=0.1
        GOSS: share of the other rows sampled (see ``data_sample_strategy``).
    colsample_bytree : float, default=1.0
        Share of features each tree may split on.
    colsample_bynode : float, default=1.0
        Share of the tree's features each node may split on.
    categorical_features : 'from_dtype', array-like or None, default='from_dtype'
        Features split on category subsets rather than thresholds: a boolean
        mask, integer indices, or feature names; 'from_dtype' takes pandas
        ``category`` and string columns, polars ``Categorical``/``Enum``/
        ``String`` and Arrow dictionary and string columns. Categories are
        non-negative integers (or the DataFrame's values), any number per
        feature: beyond 255 (or integer codes >= 255), the 254 most frequent
        are bins and the others share one bin; categories unseen at fit
        follow the missing values (see ``doc/categorical.md``).
    max_cat_to_onehot : int, default=4
        Categorical features with at most this many categories are split one
        category against the rest; others by a scan of categories sorted by
        gradient / (hessian + ``cat_smooth``).
    cat_smooth : float, default=50.0
        Smoothing added to the hessian when ordering categories; categories
        with fewer rows than this in a node stay on the right in the sorted
        scan (LightGBM's default is 10).
    cat_l2 : float, default=10.0
        Extra L2 regularisation of the children of a sorted-scan categorical
        split, in its gain only (leaf values use ``l2_regularization``).
    min_data_per_group : int, default=100
        Sorted scan: rows the categories added to the left set must hold
        before the next candidate, and rows that must remain on the right.
    max_cat_threshold : int, default=8
        Sorted scan: most categories of a left set taken from either end of
        the order (and at most half of them; LightGBM's default is 32).
    monotonic_cst : array-like of int, dict or None, default=None
        Per feature -1 (decreasing), 0 (none) or 1 (increasing) constraint on
        the prediction; a dict maps feature indices or names to constraints.
        Regression and binary classification only.
    interaction_cst : {'pairwise', 'no_interactions'}, list of sets or None, default=None
        Groups of features allowed to interact, by index or (fitted on a
        DataFrame) by name: every path of a tree uses features from one
        group only. Features in no group form one more group together.
    importance_type : {'gain', 'split'}, default='gain'
        What ``feature_importances_`` sums per feature: split gains or the
        number of splits.
    n_threads : int or None, default=None
        OpenMP threads the kernels use; None (or -1) means all available
        cores (as limited by ``OMP_NUM_THREADS`` or threadpoolctl, the
        affinity mask and a container's CPU limit) but those other processes
        keep busy, checked round by round (at least one). A multiclass round
        grows its trees side by side, each on a share of the threads. An
        integer above 4 per usable CPU is clipped to that (same model).
    histogram_layout : {'auto', 'col_wise', 'row_wise'}, default='auto'
        How node histograms are built: by columns (a thread fills whole
        columns) or by rows (row-wise multi-value bins: each row's entries
        off its columns' most frequent bins, a node's rows split between
        the threads). 'auto' times the second to fifth trees, two with
        each, and grows the others with the faster (``histogram_layout_``);
        where over 90% of the values are off their column's most frequent
        bin, by columns without trying.
        Speed only: the model is the same bit for bit (quantized gradients
        too).
    random_state : int, RandomState instance or None, default=None
        Seeds binning subsample, validation split and all sampling. Models
        are bit-identical for equal seeds, whatever ``n_threads``.
    verbose : int, default=0
        Every ``verbose`` rounds print a line with each score (set and
        metric named), the rounds per second and the estimated time left,
        and at the end why and after which round the fit stopped (1: every
        round; 0: quiet). The same as ``fit(callbacks=[LogPrinter(verbose)])``."""

COMMON_ATTRIBUTES_DOC = """\
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (``n_features_in_``,)
        Names of the features seen during fit, when they are all strings.
    is_categorical_ : ndarray of bool of shape (``n_features_in_``,) or None
        Categorical features; None when there are none.
    categorical_categories_ : list or None
        Per feature: None (numeric), or for a categorical feature the
        categories whose positions are its codes (DataFrame categories;
        mapped by value at prediction, unseen ones as missing), or the
        integer codes seen during fit. None without categorical features.
    n_iter_ : int
        Number of boosting rounds fitted (fewer than ``max_iter`` after
        early stopping, or when no tree could split; 0 when none could from
        the start: the model is then the baseline).
    n_trees_per_iteration_ : int
        Trees per round: the number of classes for multiclass, else 1.
    histogram_layout_ : {'col_wise', 'row_wise'}
        How the fit's last trees built their histograms: ``histogram_layout``,
        or what 'auto' chose (a multiclass round's trees side by side: what
        most chose; vector leaves: 'col_wise').
    evals_result_ : dict
        The evaluation history: ``{set: {metric: list of float}}``, entry
        ``i`` the score of the model of the first ``i`` rounds (entry 0: the
        baseline), for every round grown (with ``truncate_at_best``, also
        those dropped). Sets: 'train', 'validation' (``X_val`` or the
        hold-out) and ``eval_set``'s names; metrics: 'loss' (the loss
        value), ``scoring`` and ``eval_metric``'s names. Empty when nothing
        is scored (no early stopping, ``eval_set``, ``eval_metric`` or
        ``verbose``). Named as LightGBM's.
    best_iteration_ : int or None
        Rounds of the best-scored model of the watched score (``scoring`` on
        ``early_stopping_set``; the first of equal scores; 0: the baseline);
        None when nothing is scored.
    best_score_ : float or None
        The watched score at ``best_iteration_`` (``early_stopping='cv'``:
        its mean over the folds).
    cv_results_ : dict
        Only with ``early_stopping='cv'``: ``'<metric>-mean'`` and
        ``'<metric>-std'``, the watched metric on the held-out folds before
        the first round and after each (as :func:`hgbt.cv`), and
        ``'best_iteration'``, the rounds of the final fit (also
        ``best_iteration_`` and ``n_iter_``).
    train_score_ : ndarray of shape (``n_iter_`` + 1,)
        The watched metric on the training data before the first round and
        after each, higher is better (the loss negated); empty without
        early stopping.
    validation_score_ : ndarray of shape (``n_iter_`` + 1,)
        The same on the watched validation set; empty without one.
    max_leaf_nodes_ : int or None
        The trees' leaf limit: ``max_leaf_nodes``, or the size
        ``max_leaf_nodes='auto'`` kept (a warm start continues it).
    l2_regularization_ : float
        The L2 penalty of the trees (``l2_regularization`` resolved).
    tree_size_scores_ : list of dict
        With ``max_leaf_nodes='auto'``, when the first fit ran to
        ``max_iter``: one entry per tree size fitted, the smaller first,
        each ``{'max_leaf_nodes', 'l2_regularization', 'n_iter', 'score'}``
        (``score``: the watched validation score of the model that fit
        keeps, higher is better as ``validation_score_``). The size with the
        higher score is kept (the second only when higher by more than
        ``tol``); ``evals_result_`` is the kept fit's. Empty when one size
        was fitted."""


# BaseHistGBDT.fit's (set after its definition: the method stays short)
FIT_DOC = """Fit the gradient-boosted trees.

On any error, and on ``KeyboardInterrupt`` (Ctrl-C), the estimator
is left exactly as it was before the call (a warm start's earlier
rounds included); a fit stopped by a callback (``"stop"``) ends
cleanly as a model of the rounds finished.

Parameters
----------
X : array-like of shape (n_samples, n_features), or Dataset
    Training data. NaN marks a missing value; ±inf are allowed. An
    :class:`hgbt.Dataset` (with its label and weights, no ``y``)
    is binned by its first fit and reused by later ones; its
    binning parameters must be the estimator's.
y : array-like of shape (n_samples,) or (n_samples, n_outputs)
    Targets (regression: finite numbers; classification: labels). A
    regressor with ``loss='squared_error'`` takes several columns: one
    model of every output, one tree per output a round
    (``doc/multi_output.md``).
    Gradients are float32, so regression targets must satisfy
    ``|y| <= 2**126`` (~8.5e37), and their spread ``max(y) - min(y)``
    must be 0 or at least ``2**-100`` (~7.9e-31); otherwise, and when
    the gradients overflow during the fit (e.g. a diverging
    ``learning_rate``), a ValueError names the limit: divide or
    multiply ``y`` by a constant.
sample_weight : array-like of shape (n_samples,), default=None
    Non-negative row weights (zeros allowed), at most ``2**126``
    and not all below ``2**-100`` (float32 gradients).
X_val, y_val : array-like, default=None
    Validation set for early stopping, used instead of holding out
    ``validation_fraction`` of the training data; named
    'validation' in ``evals_result_``. ``X_val`` may be a validation
    Dataset (``reference=`` the training Dataset; no ``y_val``).
sample_weight_val : array-like of shape (n_val,), default=None
    Weights of the validation rows.
eval_set : list of (X, y) pairs or validation Datasets, default=None
    More validation sets, scored after every round into
    ``evals_result_`` (each metric of ``eval_metric`` and the loss).
    Early stopping watches the first of them when there is no
    ``X_val`` (no hold-out is made then), or the one
    ``early_stopping_set`` names. A set of the training rows
    themselves (LightGBM's and XGBoost's ``eval_set=[(X_train,
    y_train), (X_val, y_val)]``) is scored but never watched: a
    warning names the set watched instead.
eval_names : list of str, default=None
    Names of the ``eval_set`` sets ('valid_0', 'valid_1', ... by
    default; not 'train' or 'validation').
eval_sample_weight : list of array-like or None, default=None
    Row weights of each ``eval_set`` set (None entries: unweighted).
callbacks : list, default=None
    Objects called before and after every round
    (:mod:`hgbt.callbacks`); one returning ``"stop"`` ends the fit.
init_score : array-like of shape (n_samples,) or (n_samples, n_classes), default=None
    A raw score (``decision_function`` scale: log-odds, or the log of
    a log-link loss's prediction) each row starts from, e.g. another
    model's or the log of an exposure; LightGBM's ``init_score``,
    XGBoost's ``base_margin``. The trees learn what it leaves; the
    baseline is then 0 and predictions do not include it: add it to
    the raw score (``booster_.predict(X, raw_score=True)``) yourself.
    A hold-out for early stopping takes its rows' scores along.
init_score_val : array-like, default=None
    The start scores of ``X_val``'s rows (required with
    ``init_score``).
eval_init_score : list of array-like, default=None
    The start scores of each ``eval_set`` set (required with
    ``init_score``).

Returns
-------
self : object
    The fitted estimator.
"""
