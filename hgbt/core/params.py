"""Every parameter of hgbt, declared once.

Each :class:`Param` has its name, default, constraint (scikit-learn's
parameter-validation form), a one-line description, where it acts
(``stage``), which estimators take it, and the closest LightGBM, XGBoost and
scikit-learn names. From this table come the estimators' ``__init__``
signatures and ``_parameter_constraints`` (:func:`make_init`,
:func:`constraints`), the parameters ``hgbt.train`` accepts, the defaults of
the settings objects below the estimators (:func:`default`), and the check
of ``doc/parameters.md`` (``tests/test_params.py``). A parameter added here is
added everywhere; one added anywhere else fails that test.

Stages: ``'objective'`` (the loss), ``'binning'`` (the binned data: a
``Dataset`` reused with other values would need binning again), ``'tree'``
(how one tree grows), ``'boosting'`` (the rounds), ``'early_stopping'``
(validation and the stopping rule), ``'estimator'`` (the estimator's own
behaviour: warm start, reporting, threads).

Each parameter's type hint (:attr:`Param.annotation`, in the generated
``__init__``'s signature and ``__annotations__``) is read off its constraint
(:func:`annotation_of`) unless the declaration gives one: a string that
``typing.get_type_hints`` evaluates in this module.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Literal  # noqa: F401 - the annotation strings name them

import numpy as np
from numpy.typing import ArrayLike  # noqa: F401 - the annotation strings name it
from sklearn.utils._param_validation import Interval, Options, StrOptions

from ._types import MAX_TREE_DEPTH

#: the estimators, by the kind of target they take
REGRESSOR, CLASSIFIER, RANKER, SURVIVAL = "regressor", "classifier", "ranker", "survival"
ALL = (REGRESSOR, CLASSIFIER, RANKER, SURVIVAL)
STAGES = ("objective", "binning", "tree", "boosting", "early_stopping", "estimator")
# LightGBM's quantization uses a few levels; more than this would only shrink
# the blocks of rows the histogram kernel packs (training_data.packed_lanes).
MAX_GRAD_QUANT_BINS = 1024
REGRESSION_LOSSES = ("squared_error", "absolute_error", "huber", "quantile", "poisson",
                     "gamma", "tweedie")
RANKING_LOSSES = ("lambdarank", "pairwise")
SURVIVAL_LOSSES = ("cox", "aft")


@dataclass(frozen=True)
class Param:
    """One parameter.

    Attributes
    ----------
    name : str
    default : object
    constraint : list
        scikit-learn's parameter-validation constraints (any one must hold).
    doc : str
        One line: what it does.
    stage : str
        Where it acts (see the module doc).
    estimators : tuple of str
        The estimators that take it (``'regressor'``, ``'classifier'``, ``'ranker'``,
        ``'survival'``).
    lightgbm, xgboost, sklearn : str or None
        The closest parameter of each (None: none).
    annotation : str
        The type hint, as a string evaluated in this module (None given:
        :func:`annotation_of` the constraint).
    """

    name: str
    default: object
    constraint: list
    doc: str
    stage: str
    estimators: tuple = ALL
    lightgbm: str | None = None
    xgboost: str | None = None
    sklearn: str | None = None
    annotation: str | None = None

    def __post_init__(self) -> None:
        if self.annotation is None:
            object.__setattr__(self, "annotation", annotation_of(self.constraint))


#: the type hints of scikit-learn's named constraints
_NAMED_HINTS = {"boolean": "bool", "array-like": "ArrayLike", "verbose": "int | bool",
                "random_state": "int | np.random.RandomState | None"}


def annotation_of(constraint: list) -> str:
    """The type hint of a parameter from its constraints: the union of what
    each allows (None last), e.g. ``"int | Literal['auto'] | None"``."""
    parts = []
    for c in constraint:
        if c is None:
            hint = "None"
        elif c is callable:
            hint = "Callable[..., Any]"
        elif isinstance(c, Interval):
            hint = "int" if c.type is Integral else "float"
        elif isinstance(c, Options) and not isinstance(c, StrOptions):
            hint = "int" if c.type is Integral else "float"
        elif isinstance(c, StrOptions):
            hint = f"Literal[{', '.join(repr(o) for o in sorted(c.options))}]"
        elif isinstance(c, type) and c.__module__ == "builtins":
            hint = c.__name__
        elif isinstance(c, str) and c in _NAMED_HINTS:
            hint = _NAMED_HINTS[c]
        else:
            raise ValueError(f"No type hint for the constraint {c!r}: declare the "
                             "parameter's annotation.")
        parts.extend(h for h in hint.split(" | ") if h not in parts)
    if "None" in parts:
        parts.remove("None")
        parts.append("None")
    return " | ".join(parts)


def _p(name, default, constraint, doc, stage, estimators=ALL, lightgbm=None, xgboost=None,
       sklearn=None, annotation=None):
    return Param(name, default, constraint, doc, stage, estimators, lightgbm, xgboost,
                 sklearn, annotation)


_UNIT = Interval(Real, 0, 1, closed="right")  # a share in (0, 1]
_NON_NEGATIVE = Interval(Real, 0, None, closed="left")

#: every parameter, in the estimators' signature order (``loss`` first and
#: positional; the rest keyword-only)
PARAMS = (
    _p("loss", "squared_error", [StrOptions(set(REGRESSION_LOSSES)), callable],
       "The regression loss, or a callable returning (gradient, hessian).", "objective",
       (REGRESSOR,), "objective", "objective", "loss",
       annotation=f"Literal[{', '.join(map(repr, REGRESSION_LOSSES))}]"
                  " | Callable[..., tuple[ArrayLike, ArrayLike]]"),
    _p("loss", "log_loss", [StrOptions({"log_loss"}), callable],
       "Binary or multinomial log-loss, from the number of classes, or a callable "
       "binary loss on the log-odds returning (gradient, hessian).", "objective",
       (CLASSIFIER,), "objective", "objective", "loss",
       annotation="Literal['log_loss'] | Callable[..., tuple[ArrayLike, ArrayLike]]"),
    _p("class_weight", None, [dict, StrOptions({"balanced"}), None],
       "Weights per class label, multiplied into sample_weight.", "objective",
       (CLASSIFIER,), "class_weight", "scale_pos_weight", "class_weight"),
    _p("quantile", None, [Interval(Real, 0, 1, closed="neither"), None],
       "The quantile predicted with loss='quantile'.", "objective", (REGRESSOR,),
       "alpha", "quantile_alpha", "quantile"),
    _p("huber_delta", None, [Interval(Real, 0, None, closed="neither"), None],
       "Huber threshold; None re-estimates it each round.", "objective", (REGRESSOR,),
       "alpha"),
    _p("tweedie_power", 1.5, [Interval(Real, 1, 2, closed="both")],
       "Power of the Tweedie deviance.", "objective", (REGRESSOR,),
       "tweedie_variance_power", "tweedie_variance_power"),
    _p("multi_strategy", "one_output_per_tree",
       [StrOptions({"one_output_per_tree", "multi_output_tree"})],
       "Several outputs or labels: a tree per output each round, or one tree whose "
       "leaves hold a value per output.", "boosting", (REGRESSOR, CLASSIFIER), None,
       "multi_strategy"),
    _p("loss", "lambdarank", [StrOptions(set(RANKING_LOSSES))],
       "LambdaMART optimising NDCG, or the pairwise logistic loss (RankNet).",
       "objective", (RANKER,), "objective", "objective"),
    _p("lambdarank_truncation_level", 30, [Interval(Integral, 1, None, closed="left")],
       "LambdaMART: only pairs with a row in these top ranks count.", "objective",
       (RANKER,), "lambdarank_truncation_level", "lambdarank_num_pair_per_sample"),
    _p("lambdarank_norm", True, ["boolean"],
       "Scale each query's gradients by log2(1 + L) / L, L its pairs' total |lambda|.",
       "objective", (RANKER,), "lambdarank_norm"),
    _p("label_gain", None, ["array-like", None],
       "The gain of each relevance label; None: 2^label - 1.", "objective", (RANKER,),
       "label_gain"),
    _p("sigmoid", 1.0, [Interval(Real, 0, None, closed="neither")],
       "Slope of the pairwise logistic loss.", "objective", (RANKER,), "sigmoid"),
    _p("loss", "cox", [StrOptions(set(SURVIVAL_LOSSES))],
       "Cox proportional hazards, or accelerated failure time.", "objective", (SURVIVAL,),
       "objective", "objective"),
    _p("aft_distribution", "normal", [StrOptions({"normal", "logistic", "extreme"})],
       "AFT: the law of the log time's noise.", "objective", (SURVIVAL,), None,
       "aft_loss_distribution"),
    _p("aft_sigma", 1.0, [Interval(Real, 0, None, closed="neither")],
       "AFT: the scale of the log time's noise.", "objective", (SURVIVAL,), None,
       "aft_loss_distribution_scale"),
    _p("learning_rate", 0.15, [Interval(Real, 0, None, closed="neither")],
       "Shrinkage of every leaf value.", "boosting", ALL, "learning_rate", "eta",
       "learning_rate"),
    _p("max_iter", 150, [Interval(Integral, 1, None, closed="left")],
       "Boosting rounds (K trees a round for K > 2 classes).", "boosting", ALL,
       "num_iterations", "num_boost_round", "max_iter"),
    _p("max_leaf_nodes", "auto", [Interval(Integral, 2, None, closed="left"), None,
                                  StrOptions({"auto"})],
       "Leaves per tree; None: no limit; 'auto': 31, or 63 when it scores better.",
       "tree", ALL, "num_leaves", "max_leaves", "max_leaf_nodes"),
    _p("max_depth", None, [Interval(Integral, 1, MAX_TREE_DEPTH, closed="both"), None],
       f"Depth limit of a tree (the root at 0); None: {MAX_TREE_DEPTH}, the deepest "
       "tree a model file holds.", "tree", ALL, "max_depth",
       "max_depth", "max_depth"),
    _p("min_samples_leaf", 20, [Interval(Integral, 1, None, closed="left")],
       "Fewest rows in a leaf.", "tree", ALL, "min_data_in_leaf", None,
       "min_samples_leaf"),
    _p("min_child_weight", 1e-3, [_NON_NEGATIVE],
       "Smallest hessian sum in a leaf.", "tree", ALL, "min_sum_hessian_in_leaf",
       "min_child_weight"),
    _p("min_gain_to_split", 0.0, [_NON_NEGATIVE],
       "Subtracted from every split's gain.", "tree", ALL, "min_gain_to_split",
       "gamma"),
    _p("l1_regularization", 0.0, [_NON_NEGATIVE],
       "L1 penalty on leaf values.", "tree", ALL, "lambda_l1", "alpha"),
    _p("l2_regularization", "auto", [_NON_NEGATIVE, StrOptions({"auto"})],
       "L2 penalty on leaf values; 'auto': the tree size's (1 or 10).", "tree", ALL,
       "lambda_l2", "lambda", "l2_regularization"),
    _p("max_bins", 255, [Interval(Integral, 2, 255, closed="both")],
       "Value bins per feature, plus one for missing values.", "binning", ALL,
       "max_bin", "max_bin", "max_bins"),
    _p("enable_bundle", True, ["boolean"],
       "Bundle rarely non-zero features into shared columns.", "binning", ALL,
       "enable_bundle"),
    _p("max_conflict_rate", 0.0, [Interval(Real, 0, 1, closed="left")],
       "Share of rows on which bundled features may both be non-zero.", "binning",
       ALL, "max_conflict_rate"),
    _p("use_quantized_grad", False, ["boolean"],
       "Histograms of stochastically rounded integer gradients.", "boosting", ALL,
       "use_quantized_grad"),
    _p("num_grad_quant_bins", 32,
       [Interval(Integral, 2, MAX_GRAD_QUANT_BINS, closed="both")],
       "Levels of the quantized gradients.", "boosting", ALL, "num_grad_quant_bins"),
    _p("grow_policy", "lossguide", [StrOptions({"lossguide", "depthwise"})],
       "Best-first by gain, or level by level.", "tree", ALL, None, "grow_policy"),
    _p("early_stopping", "auto", [StrOptions({"auto", "cv"}), "boolean"],
       "Stop when the watched score stops improving; 'auto': from 100 rows ('cv' "
       "below 10,000); 'cv': rounds cross-validated, then all rows.",
       "early_stopping", ALL, None, None, "early_stopping"),
    _p("scoring", "loss", [str, callable, None],
       "The metric early stopping watches.", "early_stopping",
       (REGRESSOR, CLASSIFIER, SURVIVAL),
       "metric", "eval_metric", "scoring"),
    _p("scoring", "ndcg@10", [str, callable, None],
       "The metric early stopping watches.", "early_stopping", (RANKER,), "metric",
       "eval_metric", "scoring"),
    _p("eval_metric", None, [str, callable, list, tuple, dict, None],
       "More metrics recorded on every set.", "early_stopping", ALL, "metric",
       "eval_metric"),
    _p("early_stopping_set", None, [str, None],
       "The set early stopping watches.", "early_stopping", ALL),
    _p("truncate_at_best", False, ["boolean"],
       "Drop the rounds after the best one.", "early_stopping", ALL),
    _p("validation_fraction", 0.1, [Interval(Real, 0, 1, closed="neither"),
                                    Interval(Integral, 1, None, closed="left"), None],
       "The hold-out of early stopping: a share or a count of rows.", "early_stopping",
       ALL, None, None, "validation_fraction"),
    _p("n_iter_no_change", 8, [Interval(Integral, 1, None, closed="left")],
       "Rounds without improvement before stopping.", "early_stopping", ALL,
       "early_stopping_round", "early_stopping_rounds", "n_iter_no_change"),
    _p("tol", 1e-7, [_NON_NEGATIVE],
       "The least improvement that counts.", "early_stopping", ALL,
       "early_stopping_min_delta", None, "tol"),
    _p("warm_start", False, ["boolean"],
       "Continue from the fitted rounds.", "estimator", ALL, "init_model",
       "xgb_model", "warm_start"),
    _p("subsample", 1.0, [_UNIT],
       "Share of rows drawn for each round (bagging).", "boosting", ALL,
       "bagging_fraction", "subsample"),
    _p("data_sample_strategy", "bagging", [StrOptions({"bagging", "goss"})],
       "Row sampling: 'bagging' or 'goss'.", "boosting", ALL, "data_sample_strategy"),
    _p("goss_top_rate", 0.2, [_UNIT],
       "GOSS: share of rows kept by largest gradient.", "boosting", ALL, "top_rate"),
    _p("goss_other_rate", 0.1, [_UNIT],
       "GOSS: share of the other rows sampled.", "boosting", ALL, "other_rate"),
    _p("bagging_by_query", False, ["boolean"],
       "Ranker: bagging keeps or drops whole queries.", "boosting", (RANKER,),
       "bagging_by_query"),
    _p("colsample_bytree", 1.0, [_UNIT],
       "Share of features each tree may split on.", "boosting", ALL,
       "feature_fraction", "colsample_bytree"),
    _p("colsample_bynode", 1.0, [_UNIT],
       "Share of the tree's features each node may split on.", "boosting", ALL,
       "feature_fraction_bynode", "colsample_bynode", "max_features"),
    _p("categorical_features", "from_dtype",
       ["array-like", StrOptions({"from_dtype"}), None],
       "The categorical columns: from the dtypes, a mask, indices or names.",
       "binning", ALL, "categorical_feature", "enable_categorical",
       "categorical_features"),
    _p("max_cat_to_onehot", 4, [Interval(Integral, 1, None, closed="left")],
       "Up to this many categories: one category against the rest.", "tree", ALL,
       "max_cat_to_onehot", "max_cat_to_onehot"),
    _p("cat_smooth", 50.0, [_NON_NEGATIVE],
       "Added to the hessian when sorting categories.", "tree", ALL, "cat_smooth"),
    _p("cat_l2", 10.0, [_NON_NEGATIVE],
       "Extra L2 of a sorted categorical split's children.", "tree", ALL, "cat_l2"),
    _p("min_data_per_group", 100, [Interval(Integral, 0, None, closed="left")],
       "Rows between candidates of a sorted categorical split.", "tree", ALL,
       "min_data_per_group"),
    _p("max_cat_threshold", 8, [Interval(Integral, 1, None, closed="left")],
       "Most categories taken from either end of the sorted order.", "tree", ALL,
       "max_cat_threshold", "max_cat_threshold"),
    _p("monotonic_cst", None, ["array-like", dict, None],
       "Per feature -1, 0 or 1: a decreasing, free or increasing effect.", "tree", ALL,
       "monotone_constraints", "monotone_constraints", "monotonic_cst"),
    _p("interaction_cst", None, [list, tuple, StrOptions({"pairwise", "no_interactions"}),
                                 None],
       "Groups of features a branch may combine.", "tree", ALL,
       "interaction_constraints", "interaction_constraints", "interaction_cst"),
    _p("importance_type", "gain", [StrOptions({"gain", "split"})],
       "What feature_importances_ counts: split gain or number of splits.", "estimator",
       ALL, "importance_type", "importance_type"),
    _p("n_threads", None, [Interval(Integral, 1, None, closed="left"),
                           Options(Integral, {-1}), None],
       "OpenMP threads; None or -1: every usable CPU other processes leave free.",
       "estimator", ALL, "num_threads",
       "nthread"),
    _p("histogram_layout", "auto", [StrOptions({"auto", "col_wise", "row_wise"})],
       "Histograms by columns or by rows (multi-value bins); 'auto' times both.",
       "estimator", ALL, "force_row_wise"),
    _p("random_state", None, ["random_state"],
       "Seeds binning, the hold-out and every sampling.", "boosting", ALL, "seed",
       "seed", "random_state"),
    _p("verbose", 0, ["verbose"],
       "Print the scores every this many rounds.", "estimator", ALL, "verbosity",
       "verbosity", "verbose"),
)


# max_leaf_nodes='auto': trees of the first size; a fit that runs to max_iter
# without stopping early (still improving: the data may carry larger trees) is
# made again with the second, on the same validation rows, and the model that
# scores better there is kept. It took the real-data suite from 12 to 13 of 15
# tables within noise of the best library, at 0.99x LightGBM's default fit time
# (0.83x before), and made no table worse, there or on 20 small tables
# (benchmarks/RESULTS.md). With a fixed max_leaf_nodes, 'auto' L2 is the first
# size's.
AUTO_TREE_SIZES = ({"max_leaf_nodes": 31, "l2_regularization": 1.0},
                   {"max_leaf_nodes": 63, "l2_regularization": 10.0})


#: the parameters of how one tree grows (stage 'tree', as the settings below
#: the estimators take them)
TREE_PARAMS = ("grow_policy", "max_leaf_nodes", "max_depth", "min_samples_leaf",
               "min_child_weight", "min_gain_to_split", "l1_regularization",
               "l2_regularization", "max_cat_to_onehot", "cat_smooth", "cat_l2",
               "min_data_per_group", "max_cat_threshold")


def params_of(estimator: str) -> list[Param]:
    """The parameters of ``'regressor'``, ``'classifier'``, ``'ranker'`` or
    ``'survival'``, in signature order."""
    return [p for p in PARAMS if estimator in p.estimators]


def default(name: str, estimator: str = REGRESSOR) -> Any:
    """The default of parameter ``name`` (of the regressor unless said)."""
    for p in params_of(estimator):
        if p.name == name:
            return p.default
    raise KeyError(f"hgbt has no parameter {name!r}.")


def resolved_default(name: str) -> Any:
    """The default a setting below the estimators takes: the parameter's,
    with ``'auto'`` tree sizes resolved to the first of ``AUTO_TREE_SIZES``."""
    value = default(name)
    return AUTO_TREE_SIZES[0][name] if value == "auto" else value


def names(stage: str | None = None, estimator: str = REGRESSOR) -> list[str]:
    """Names of the parameters of a stage (None: every stage)."""
    return [p.name for p in params_of(estimator) if stage is None or p.stage == stage]


def constraints(estimator: str) -> dict[str, list]:
    """The ``_parameter_constraints`` of an estimator."""
    return {p.name: list(p.constraint) for p in params_of(estimator)}


#: the scikit-learn API names of LightGBM's and XGBoost's estimators, where
#: they differ from their native names (those are the registry's)
_SKLEARN_API_NAMES = {"n_estimators": "max_iter", "reg_lambda": "l2_regularization",
                      "reg_alpha": "l1_regularization", "n_jobs": "n_threads",
                      "min_child_samples": "min_samples_leaf",
                      "min_split_gain": "min_gain_to_split", "num_boost_round": "max_iter",
                      "early_stopping_rounds": "n_iter_no_change", "nthread": "n_threads",
                      "colsample_bylevel": "colsample_bynode", "max_bin": "max_bins"}


def peer_names() -> dict[str, list[str]]:
    """{LightGBM or XGBoost parameter name: the hgbt parameters it maps to},
    for names hgbt does not use itself."""
    ours = {p.name for p in PARAMS}
    found: dict[str, list[str]] = {}
    for p in PARAMS:
        for peer in (p.lightgbm, p.xgboost):
            if peer and peer not in ours and p.name not in found.setdefault(peer, []):
                found[peer].append(p.name)
    for peer, name in _SKLEARN_API_NAMES.items():
        if name not in found.setdefault(peer, []):
            found[peer].append(name)
    return found


def unknown_parameter_message(owner: str, name: str, valid: list[str]) -> str:
    """What to say about a parameter ``owner`` does not have: hgbt's name for a
    LightGBM or XGBoost spelling, else the closest of ``valid``."""
    import difflib

    ours = peer_names().get(name)
    if ours:
        return (f"{owner} has no parameter {name!r} (a LightGBM or XGBoost name): use "
                + " or ".join(ours) + " (doc/parameters.md maps the peers' names).")
    close = difflib.get_close_matches(name, valid, n=3)
    hint = f" Did you mean {' or '.join(close)}?" if close else ""
    return f"{owner} has no parameter {name!r}.{hint}"


def make_init(estimator: str) -> Callable[..., None]:
    """The ``__init__`` of an estimator: its parameters as keyword arguments
    (``loss`` also positional) with their defaults, each set as an attribute
    of the same name. Its signature is what scikit-learn's ``get_params``
    reads; it and ``__annotations__`` carry each parameter's annotation
    (strings, as ``from __future__ import annotations`` makes them; their
    names are this module's)."""
    params = params_of(estimator)
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD if i == 0
                             else inspect.Parameter.KEYWORD_ONLY, default=p.default,
                             annotation=p.annotation)
           for i, p in enumerate(params)], return_annotation=None)

    def __init__(self, *args, **kwargs):
        unknown = [name for name in kwargs if name not in signature.parameters]
        if unknown:
            raise TypeError(unknown_parameter_message(
                type(self).__name__, unknown[0], list(signature.parameters)[1:]))
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in bound.arguments.items():
            if name != "self":
                setattr(self, name, value)

    __init__.__signature__ = signature
    __init__.__annotations__ = {**{p.name: p.annotation for p in params}, "return": None}
    return __init__
