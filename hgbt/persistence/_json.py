"""The JSON model format: ``save_model`` / ``load_model`` (``doc/model-format.md``).

A documented, versioned JSON document holds everything ``predict`` and
``warm_start`` need. Floats are written with ``repr`` (exact for every
finite double); ``nan`` / ``inf`` / ``-inf`` are written as those strings.
Every field of the node array is written, whatever fields ``NODE_DTYPE``
has; files written before a field was added (``NODE_FIELDS_ADDED``) load
with its default. The document carries the SHA-256 of its content (``checksum``), so an
edited or damaged file is detected. Loading validates the file completely
(structure, types, the checksum, then the estimator's state with
:func:`._checks.check_state`) before any kernel sees it, and reports
problems as ``ValueError``.
"""
import hashlib
import inspect
import json
import math
import os
import warnings

from typing import TYPE_CHECKING

import numpy as np

from ..core._types import NODE_DTYPE, NODE_FIELDS_ADDED, stored_node_dtype, upgrade_nodes
from ..data.binning import BinMapper
from ..model.booster import Booster
from ..tree.predictor import TreePredictor
from ._checks import (BIN_MAPPER_ATTRIBUTES, FITTED_ATTRIBUTES, check_bin_mapper,
                      check_state, check_target_stats)
from ._flat import FLAT_MODEL_KEYS, flatten, nest
from ._pickle import hgbt_version

if TYPE_CHECKING:  # the estimators register themselves from the layer above
    from ..estimators.gradient_boosting import BaseHistGBDT

#: The ``"format"`` field of every model file.
FORMAT = "hgbt-model"
#: The newest format version this hgbt reads and writes.
FORMAT_VERSION = 3
# Version 2 adds pooled categorical features (more than 255 categories, see
# data/categorical.py), version 3 their target statistics (the attribute
# _target_stats, data/target_stats.py); a model is written with the lowest
# version that holds it.

#: The estimator classes a model file may hold, by name.
ESTIMATORS = ("HistGBDTRegressor", "HistGBDTClassifier", "HistGBDTRanker",
              "HistGBDTSurvival")
# name -> class; the estimator modules register their classes (this module sits
# below them, so it does not import them)
_CLASSES = {}


def register_estimator(cls):
    """Class decorator: ``cls`` can be loaded from a model file by its name."""
    if cls.__name__ not in ESTIMATORS:
        raise ValueError(f"{cls.__name__} is not a model-file estimator {ESTIMATORS}.")
    _CLASSES[cls.__name__] = cls
    return cls

# Fitted attributes (of the flat state, _flat.py) written under their own keys
# of "fitted"; every other one that is not a parameter goes to
# "fitted.attributes".
_EXPLICIT_ATTRIBUTES = frozenset({
    "n_features_in_", "feature_names_in_", "classes_", "n_iter_",
    "n_trees_per_iteration_", "_baseline_prediction", "_bin_mapper", "_predictors",
})
_BIN_MAPPER_EXPLICIT = frozenset({"max_bins", "missing_bin", "bin_thresholds_"})
# The names "attributes" may hold (what the writer writes there; load refuses
# others before it decodes a value): the estimator's fitted attributes but the
# explicit ones (attributes a user set are not the model's: pickles keep them,
# files do not, as LightGBM's and XGBoost's model files), the bin mapper's but
# its explicit ones, a tree's bitsets.
_ESTIMATOR_ATTRIBUTES = frozenset(FITTED_ATTRIBUTES) | frozenset(FLAT_MODEL_KEYS) \
    - _EXPLICIT_ATTRIBUTES
_TREE_ATTRIBUTES = frozenset({"cat_bitsets"})

_NONFINITE_NAMES = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


# ------------------------------------------------------------- JSON values
def _float_out(x):
    return x if math.isfinite(x) else ("nan" if x != x else ("inf" if x > 0 else "-inf"))


def _numeric_data(array):
    """Nested lists of a bool / int / float array; non-finite floats as strings."""
    data = array.tolist()
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        data = _map_nested(data, _float_out)
    return data


def _map_nested(data, fn):
    if isinstance(data, list):
        return [_map_nested(item, fn) for item in data]
    return fn(data)


def _encode_array(array, where):
    kind = array.dtype.kind
    if kind == "f" and array.dtype.itemsize > 8 or kind not in "biufUO":
        raise ValueError(f"{where}: arrays of dtype {array.dtype} cannot be saved to JSON; "
                         "pickle the model instead.")
    if kind == "O":
        data = [_encode(item, f"{where}[{i}]") for i, item in enumerate(array.ravel())]
    else:
        data = _numeric_data(array.ravel()) if kind in "biuf" else array.ravel().tolist()
    return {"type": "ndarray", "dtype": array.dtype.str, "shape": list(array.shape),
            "data": data}


def _encode(value, where):
    """A JSON value for ``value``; every JSON object written is a tagged value."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.ndarray):
        return _encode_array(value, where)
    if isinstance(value, np.generic):
        encoded = _encode_array(np.asarray(value), where)
        return {"type": "numpy_scalar", "dtype": encoded["dtype"],
                "value": encoded["data"][0]}
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        out = _float_out(value)
        return out if isinstance(out, float) else {"type": "float", "value": out}
    if isinstance(value, list):
        return [_encode(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, tuple):
        return {"type": "tuple",
                "items": [_encode(item, f"{where}[{i}]") for i, item in enumerate(value)]}
    if isinstance(value, (set, frozenset)):
        try:
            items = sorted(value)
        except TypeError:
            items = list(value)
        return {"type": "set", "items": [_encode(item, f"{where} item") for item in items]}
    if isinstance(value, dict):
        return {"type": "dict", "items": [
            [_encode(k, f"{where} key"), _encode(v, f"{where}[{k!r}]")]
            for k, v in value.items()]}
    if isinstance(value, np.random.RandomState):
        return {"type": "RandomState",
                "state": _encode(value.get_state(legacy=True), where)}
    if callable(value):
        raise ValueError(f"{where}={value!r} is a callable, which cannot be saved to JSON; "
                         "pickle the model instead (pickle or joblib).")
    raise ValueError(f"{where}: a {type(value).__name__} cannot be saved to JSON; pickle "
                     "the model instead (pickle or joblib).")


def _fail(where, problem):
    raise ValueError(f"Invalid hgbt model: {where}: {problem}.")


def _kind(value):
    return type(value).__name__


def _as_dict(value, where):
    if not isinstance(value, dict):
        _fail(where, f"expected a JSON object, got {_kind(value)}")
    return value


def _as_list(value, where, length=None):
    if not isinstance(value, list):
        _fail(where, f"expected a JSON array, got {_kind(value)}")
    if length is not None and len(value) != length:
        _fail(where, f"expected {length} entries, got {len(value)}")
    return value


def _get(mapping, key, where):
    if key not in mapping:
        _fail(where, f"missing key {key!r}")
    return mapping[key]


def _as_int(value, where, low=None, high=None):
    if not isinstance(value, int) or isinstance(value, bool):
        _fail(where, f"expected an integer, got {_kind(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        _fail(where, f"{value} is out of range [{low}, {high}]")
    return value


def _float_in(value, where):
    if isinstance(value, str):
        if value not in _NONFINITE_NAMES:
            _fail(where, f"{value!r} is not a number ('nan', 'inf' and '-inf' are the only "
                         "strings allowed for floats)")
        return _NONFINITE_NAMES[value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(where, f"expected a number, got {_kind(value)}")
    try:
        return float(value)
    except OverflowError:
        _fail(where, f"{value} is too large for a float")


def _flatten(data, shape, where):
    """Flat list of the leaves of nested lists of the given shape."""
    if not shape:
        return [data]
    if not isinstance(data, list) or len(data) != shape[0]:
        _fail(where, f"expected nested arrays of shape {tuple(shape)}")
    if len(shape) == 1:
        if any(isinstance(item, list) for item in data):
            _fail(where, f"expected nested arrays of shape {tuple(shape)}")
        return data
    out = []
    for item in data:
        out.extend(_flatten(item, shape[1:], where))
    return out


def _numeric_array(data, dtype, shape, where):
    """An array of ``dtype`` (bool / int / float) from nested JSON lists."""
    shape = tuple(shape)
    flat = _flatten(data, shape, where)
    kind = dtype.kind
    if kind == "f":
        try:
            values = np.array(flat, dtype=np.float64) if all(
                type(x) is float or type(x) is int for x in flat) else None
        except (OverflowError, ValueError):
            values = None
        if values is None:
            values = np.array([_float_in(x, where) for x in flat], dtype=np.float64)
        if dtype.itemsize < 8:
            with np.errstate(over="ignore"):
                cast = values.astype(dtype)
            finite = np.isfinite(values)
            if np.any(cast[finite].astype(np.float64) != values[finite]):
                _fail(where, f"values are not exactly representable as {dtype}")
            return cast.reshape(shape)
        return values.astype(dtype).reshape(shape)
    if kind == "b":
        if not all(type(x) is bool for x in flat):
            _fail(where, "expected booleans")
        return np.array(flat, dtype=dtype).reshape(shape)
    if kind in "iu":
        if not all(type(x) is int for x in flat):
            _fail(where, "expected integers")
        info = np.iinfo(dtype)
        if flat and (min(flat) < info.min or max(flat) > info.max):
            _fail(where, f"integers out of the range of {dtype}")
        return np.array(flat, dtype=dtype).reshape(shape)
    _fail(where, f"unsupported dtype {dtype}")


def _decode_dtype(text, where, kinds="biufUO"):
    if not isinstance(text, str):
        _fail(where, f"dtype must be a string, got {_kind(text)}")
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError):
        _fail(where, f"unknown dtype {text!r}")
    if dtype.kind not in kinds or dtype.fields is not None or dtype.subdtype is not None \
            or (dtype.kind == "f" and dtype.itemsize > 8):
        _fail(where, f"unsupported dtype {text!r}")
    return dtype


def _decode_array(value, where):
    dtype = _decode_dtype(_get(value, "dtype", where), f"{where}.dtype")
    shape = _as_list(_get(value, "shape", where), f"{where}.shape")
    for n in shape:
        _as_int(n, f"{where}.shape", low=0)
    size = math.prod(shape)
    data = _as_list(_get(value, "data", where), f"{where}.data", length=size)
    if dtype.kind == "O":
        out = np.empty(size, dtype=object)
        for i, item in enumerate(data):
            out[i] = _decode(item, f"{where}.data[{i}]")
        return out.reshape(shape)
    if dtype.kind == "U":
        width = dtype.itemsize // 4
        if not all(isinstance(s, str) and len(s) <= width for s in data):
            _fail(f"{where}.data", f"expected strings of at most {width} characters")
        # the array takes size * width * 4 bytes: a width far beyond its
        # strings' (a few bytes of file) is refused before it is allocated
        if size * width > 4 * (sum(map(len, data)) + size) + 4096:
            _fail(f"{where}.dtype", f"{dtype.str} is far wider than the strings "
                                    "it holds")
        return np.array(data, dtype=dtype).reshape(shape)
    return _numeric_array(data, dtype, [size], f"{where}.data").reshape(shape)


def _decode(value, where):
    """Inverse of :func:`_encode`."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, list):
        return [_decode(item, f"{where}[{i}]") for i, item in enumerate(value)]
    value = _as_dict(value, where)
    tag = _get(value, "type", where)
    if tag == "float":
        text = _get(value, "value", where)
        if not isinstance(text, str):
            _fail(where, "a tagged float holds 'nan', 'inf' or '-inf'")
        return _float_in(text, where)
    if tag == "ndarray":
        return _decode_array(value, where)
    if tag == "numpy_scalar":
        array = _decode_array({"dtype": _get(value, "dtype", where), "shape": [1],
                               "data": [_get(value, "value", where)]}, where)
        return array[0]
    if tag in ("tuple", "set"):
        items = [_decode(item, f"{where}[{i}]") for i, item in
                 enumerate(_as_list(_get(value, "items", where), f"{where}.items"))]
        if tag == "tuple":
            return tuple(items)
        try:
            return set(items)
        except TypeError:
            _fail(where, "set items must be hashable")
    if tag == "dict":
        out = {}
        for i, pair in enumerate(_as_list(_get(value, "items", where), f"{where}.items")):
            key, item = _as_list(pair, f"{where}.items[{i}]", length=2)
            key = _decode(key, f"{where}.items[{i}]")
            item = _decode(item, f"{where}[{key!r}]")
            try:
                out[key] = item
            except TypeError:
                _fail(where, "dict keys must be hashable")
        return out
    if tag == "RandomState":
        state = _decode(_get(value, "state", where), f"{where}.state")
        rs = np.random.RandomState()
        try:
            rs.set_state(state)
        except (TypeError, ValueError, IndexError):
            _fail(where, "invalid RandomState state")
        return rs
    _fail(where, f"unknown value type {tag!r}")


def _encode_attributes(attributes, skip, where):
    return {name: _encode(value, f"{where}.{name}")
            for name, value in attributes.items() if name not in skip}


def _decode_attributes(value, names, where, ignore_unknown=False):
    """Instance attributes, of the ``names`` a writer writes there only, checked
    before any value is decoded. Others are refused, or (``ignore_unknown``:
    an older hgbt wrote other fitted attributes, or a user's) left out with
    a warning, never decoded."""
    value = _as_dict(value, where)
    unknown = sorted(name for name in value if name not in names)
    if unknown and not ignore_unknown:
        _fail(where, f"{unknown} are not attributes hgbt writes here")
    if unknown:
        warnings.warn(f"The model file's {where} {unknown} are not attributes this hgbt "
                      "writes (an older hgbt's, or set by a user); they are ignored.",
                      UserWarning, stacklevel=4)
    return {name: _decode(item, f"{where}.{name}") for name, item in value.items()
            if name in names}


# ------------------------------------------------------------------- trees
def _node_dtype_description(dtype):
    return [[name, dtype.fields[name][0].base.str, list(dtype.fields[name][0].shape)]
            for name in dtype.names]


def _encode_tree(tree):
    nodes = tree.nodes
    out = {"n_nodes": int(nodes.shape[0]),
           "nodes": {name: _numeric_data(nodes[name]) for name in nodes.dtype.names}}
    extra = _encode_attributes(vars(tree), {"nodes"}, "tree")
    if extra:
        out["attributes"] = extra
    return out


def _check_node_dtype(description, where):
    """The file's node fields must be this hgbt's ``NODE_DTYPE`` fields, but
    for fields added since (``NODE_FIELDS_ADDED``); returns their names."""
    description = _as_list(description, where)
    fields = {}
    for i, entry in enumerate(description):
        name, dtype, shape = _as_list(entry, f"{where}[{i}]", length=3)
        if not isinstance(name, str):
            _fail(f"{where}[{i}]", "field name must be a string")
        kind_of = _decode_dtype(dtype, f"{where}[{i}]", kinds="biuf").kind
        fields[name] = (kind_of, tuple(_as_list(shape, f"{where}[{i}]")))
    ours = {name: (NODE_DTYPE.fields[name][0].base.kind, NODE_DTYPE.fields[name][0].shape)
            for name in NODE_DTYPE.names if name in fields or name not in NODE_FIELDS_ADDED}
    if set(fields) != set(ours):
        missing, unknown = sorted(set(ours) - set(fields)), sorted(set(fields) - set(ours))
        _fail(where, f"node fields differ from this hgbt's (missing {missing}, unknown "
                     f"{unknown}); it was saved by an incompatible hgbt version")
    for name, (kind, shape) in fields.items():
        if (kind, shape) != ours[name] and not (kind in "iu" and ours[name][0] in "iu"
                                                 and shape == ours[name][1]):
            _fail(where, f"node field {name!r} has kind {kind!r} and shape {shape}, this "
                         f"hgbt expects {ours[name]}")
    return stored_node_dtype(name for name in NODE_DTYPE.names if name in fields)


def _decode_tree(value, where, stored):
    # stored: the file's node dtype (_check_node_dtype)
    value = _as_dict(value, where)
    n_nodes = _as_int(_get(value, "n_nodes", where), f"{where}.n_nodes", low=1,
                      high=np.iinfo(np.uint32).max)
    fields = _as_dict(_get(value, "nodes", where), f"{where}.nodes")
    unknown = set(fields) - set(stored.names)
    if unknown:
        _fail(f"{where}.nodes", f"unknown node fields {sorted(unknown)}")
    for name in stored.names:  # sizes bounded by the file's, before the allocation
        _as_list(_get(fields, name, f"{where}.nodes"), f"{where}.nodes.{name}",
                 length=n_nodes)
    nodes = np.zeros(n_nodes, dtype=stored)
    for name in stored.names:
        field = stored.fields[name][0]
        nodes[name] = _numeric_array(_get(fields, name, f"{where}.nodes"), field.base,
                                     (n_nodes,) + field.shape, f"{where}.nodes.{name}")
    nodes = upgrade_nodes(nodes)
    attributes = {}
    if "attributes" in value:
        attributes = _decode_attributes(value["attributes"], _TREE_ATTRIBUTES,
                                        f"{where}.attributes")
    # The constructor checks what it is given (e.g. categorical bitsets);
    # attributes it does not take are set afterwards, as unpickling would.
    accepted = inspect.signature(TreePredictor).parameters
    kwargs = {name: attributes.pop(name) for name in list(attributes) if name in accepted}
    try:
        tree = TreePredictor(nodes, **kwargs)
    except (TypeError, ValueError) as exc:
        _fail(where, f"not a valid tree: {exc}")
    tree.__dict__.update(attributes)
    return tree


# ------------------------------------------------------------------- model
def _holder(booster):
    """The estimator that holds ``booster`` (its loss's parameters, the
    fitted attributes the format needs): how a Booster is written."""
    loss = booster.objective.get("loss")
    name = ("HistGBDTClassifier" if booster.classes is not None else "HistGBDTRanker"
            if loss in ("lambdarank", "pairwise") else "HistGBDTSurvival"
            if loss in ("cox", "aft") else "HistGBDTRegressor")
    params = {key: value for key, value in booster.objective.items()
              if key not in ("n_classes", "n_outputs")}
    estimator = _CLASSES[name](**params, max_bins=int(booster.bin_mapper.max_bins))
    if "n_outputs" in booster.objective:  # a multi-output or multi-label model's
        estimator.n_outputs_ = booster.objective["n_outputs"]
    vars(estimator).update(booster_=booster, n_features_in_=booster.n_features_in_,
                           n_iter_=booster.n_iter,
                           n_trees_per_iteration_=booster.n_trees_per_iteration)
    if booster.feature_names_in_ is not None:
        estimator.feature_names_in_ = booster.feature_names_in_
    if booster.classes is not None:
        estimator.classes_ = booster.classes
    return estimator


def model_to_dict(estimator):
    """The JSON document (as Python objects) of a fitted estimator, or of a
    Booster as the estimator that holds it."""
    from sklearn.utils.validation import check_is_fitted

    if isinstance(estimator, Booster):
        estimator = _holder(estimator)
    name = type(estimator).__name__
    if name not in ESTIMATORS:
        raise TypeError(f"save_model supports {ESTIMATORS}, not {name}.")
    check_is_fitted(estimator)
    params = estimator.get_params(deep=False)
    for key, value in params.items():
        if callable(value) and not isinstance(value, np.random.RandomState):
            what = ("a custom objective (callable loss)" if key == "loss"
                    else f"a callable {key}")
            raise ValueError(f"{name} with {what} cannot be saved to JSON: the format "
                             "holds no code. Pickle the model instead (pickle or joblib), "
                             f"or save it with a built-in {key}.")
    encoded_params = {key: _encode(value, f"params.{key}") for key, value in params.items()}

    state = flatten(vars(estimator))
    bin_mapper = state["_bin_mapper"]
    n_features = int(state["n_features_in_"])
    names = state.get("feature_names_in_")
    classes = state.get("classes_")
    fitted = {
        "n_features_in_": n_features,
        "feature_names_in_": None if names is None else [str(s) for s in names],
        "classes_": None if classes is None else _encode(np.asarray(classes), "classes_"),
        "n_iter_": int(state["n_iter_"]),
        "n_trees_per_iteration_": int(state["n_trees_per_iteration_"]),
        "baseline": _numeric_data(np.asarray(state["_baseline_prediction"],
                                             dtype=np.float64)),
        "bin_mapper": {
            "max_bins": int(bin_mapper.max_bins),
            "missing_bin": int(bin_mapper.missing_bin),
            "bin_thresholds": [_numeric_data(np.asarray(t, dtype=np.float64))
                               for t in bin_mapper.bin_thresholds_],
            "attributes": _encode_attributes(vars(bin_mapper), _BIN_MAPPER_EXPLICIT,
                                             "bin_mapper"),
        },
        "node_dtype": _node_dtype_description(NODE_DTYPE),
        "trees": [[_encode_tree(tree) for tree in trees]
                  for trees in state["_predictors"]],
        # hgbt's own: what a user set on the estimator is not the model's
        "attributes": _encode_attributes(state, set(state) - _ESTIMATOR_ATTRIBUTES,
                                         "estimator"),
    }
    document = {
        "format": FORMAT,
        "format_version": (FORMAT_VERSION if state["_target_stats"] is not None
                           else 2 if state["_categorical_pooled"] else 1),
        "hgbt_version": hgbt_version(),
        "estimator": name,
        "params": encoded_params,
        "fitted": fitted,
    }
    document["checksum"] = content_checksum(document)
    return document


def content_checksum(document):
    """``"sha256:<hex>"`` of the document without its ``checksum`` key, written as
    compact JSON (``json.dumps`` with ``separators=(",", ":")``, keys in their
    order, non-ASCII characters escaped)."""
    content = {key: value for key, value in document.items() if key != "checksum"}
    text = json.dumps(content, allow_nan=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _verify_checksum(document):
    stored = document.get("checksum")
    if stored is None:
        _fail("checksum", "missing: the file was edited or written by an hgbt without "
                          "checksums; load_model(path, verify_checksum=False) loads it if "
                          "you trust its content")
    if stored != content_checksum(document):
        _fail("checksum", "the content does not match the checksum: the file was edited "
                          "or damaged after it was saved (load_model(path, "
                          "verify_checksum=False) loads it if you trust the edit)")


def save_model(estimator: "BaseHistGBDT | Booster", path: "str | os.PathLike") -> None:
    """Write a fitted estimator, or a Booster, to ``path`` as JSON (see
    ``doc/model-format.md``).

    A Booster is written as the estimator that holds it (its class from the
    loss, its parameters the loss's): :func:`load_model` returns that
    estimator, whose ``booster_`` predicts as the Booster did. The document
    is built completely before the file is opened, so a model that cannot
    be saved (e.g. a callable loss) leaves no file.
    """
    text = json.dumps(model_to_dict(estimator), allow_nan=False, separators=(",", ":"))
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        f.write(text)
        f.write("\n")


def _reject_constant(name):
    raise ValueError(f"non-standard JSON constant {name}")


def load_model(path: "str | os.PathLike", *,
               verify_checksum: bool = True) -> "BaseHistGBDT":
    """Load an estimator written by ``save_model``.

    The safe way to load a model file from elsewhere: the file is data, and
    every part of it is checked before use (unlike a pickle, which runs code).

    Parameters
    ----------
    path : str or path-like
    verify_checksum : bool, default=True
        Whether the file's ``checksum`` must match its content. Set it to
        False only to load a file you edited on purpose (or one written
        before checksums); the content is validated either way.

    Returns
    -------
    estimator : HistGBDTRegressor or HistGBDTClassifier
        Fitted; its predictions are bit-identical to the saved estimator's.

    Raises
    ------
    ValueError
        If the file is not valid JSON (e.g. truncated), not an hgbt model,
        of a newer ``format_version``, inconsistent (e.g. a tree with a
        child index out of range), or edited after it was saved (checksum).
    """
    with open(os.fspath(path), "rb") as f:
        raw = f.read()
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{os.fspath(path)!r} is not a valid hgbt model file: not valid "
                         f"JSON (truncated or corrupt?): {exc}") from None
    return model_from_dict(document, verify_checksum=verify_checksum)


def model_from_dict(document, *, verify_checksum=True):
    """Rebuild an estimator from a document of :func:`model_to_dict` (validated;
    see :func:`load_model`)."""
    try:
        return _model_from_dict(document, verify_checksum)
    except RecursionError:
        raise ValueError("Invalid hgbt model: values nested too deeply.") from None
    except ValueError:
        raise
    except Exception as exc:  # a corrupt document must never escape as anything else
        raise ValueError(f"Invalid hgbt model: {type(exc).__name__}: {exc}") from exc


def _model_from_dict(document, verify_checksum):
    document = _as_dict(document, "document")
    fmt = document.get("format")
    if fmt != FORMAT:
        _fail("format", f"expected {FORMAT!r}, got {fmt!r} (not an hgbt model file)")
    version = _get(document, "format_version", "document")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        _fail("format_version", f"expected a positive integer, got {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(
            f"The model file has format_version {version}, newer than the versions this "
            f"hgbt ({hgbt_version()}) reads (up to {FORMAT_VERSION}); it was written by "
            f"hgbt {document.get('hgbt_version')!r}. Upgrade hgbt to load it.")
    name = _get(document, "estimator", "document")
    if name not in ESTIMATORS:
        _fail("estimator", f"expected one of {ESTIMATORS}, got {name!r}")
    cls = _CLASSES[name]

    params = {key: _decode(value, f"params.{key}") for key, value in
              _as_dict(_get(document, "params", "document"), "params").items()}
    estimator = cls()
    unknown = set(params) - set(estimator.get_params(deep=False))
    if unknown:
        _fail("params", f"unknown parameters {sorted(unknown)} for {name}")
    estimator.set_params(**params)
    check_state(cls, vars(estimator))  # the parameters, before they are used

    fitted = _as_dict(_get(document, "fitted", "document"), "fitted")
    n_features = _as_int(_get(fitted, "n_features_in_", "fitted"), "fitted.n_features_in_",
                         low=1)
    names = _get(fitted, "feature_names_in_", "fitted")
    if names is not None:
        names = _as_list(names, "fitted.feature_names_in_", length=n_features)
        if not all(isinstance(s, str) for s in names):
            _fail("fitted.feature_names_in_", "feature names must be strings")
        names = np.asarray(names, dtype=object)

    classes = _get(fitted, "classes_", "fitted")
    if name == "HistGBDTClassifier":
        classes = _decode(classes, "fitted.classes_")
        if not isinstance(classes, np.ndarray) or classes.ndim != 1 or classes.size < 2:
            _fail("fitted.classes_", "expected an array of at least two class labels")
        try:
            ordered = np.array_equal(np.unique(classes), classes)
        except TypeError:
            ordered = False
        if not ordered:
            _fail("fitted.classes_", "class labels must be sorted and distinct")
    elif classes is not None:
        _fail("fitted.classes_", "a regressor has no classes")

    k_trees = _as_int(_get(fitted, "n_trees_per_iteration_", "fitted"),
                      "fitted.n_trees_per_iteration_", low=1)
    multiclass = name == "HistGBDTClassifier" and classes.size > 2
    if multiclass and k_trees != classes.size:
        _fail("fitted.n_trees_per_iteration_", f"expected {classes.size}, got {k_trees}")
    n_iter = _as_int(_get(fitted, "n_iter_", "fitted"), "fitted.n_iter_", low=0)
    baseline = _numeric_array(_get(fitted, "baseline", "fitted"), np.dtype(np.float64),
                              (k_trees,), "fitted.baseline")

    attributes = _decode_attributes(_get(fitted, "attributes", "fitted"),
                                    _ESTIMATOR_ATTRIBUTES, "fitted.attributes",
                                    ignore_unknown=True)
    # a regressor (a binary classifier) grows one tree a round per output
    # (per label), the others one
    outputs = (attributes.get("n_outputs_", 1)
               if name in ("HistGBDTRegressor", "HistGBDTClassifier") else 1)
    if not multiclass and k_trees != outputs:
        _fail("fitted.n_trees_per_iteration_", f"expected {outputs}, got {k_trees}")
    # the bin mapper (and the trees) also cover the target-statistic columns
    n_internal = n_features + check_target_stats(attributes, n_features, k_trees,
                                                 "fitted.attributes._target_stats")
    bin_mapper = _decode_bin_mapper(_get(fitted, "bin_mapper", "fitted"), n_internal)
    stored = _check_node_dtype(_get(fitted, "node_dtype", "fitted"), "fitted.node_dtype")
    trees = _as_list(_get(fitted, "trees", "fitted"), "fitted.trees", length=n_iter)
    predictors = []
    for i, round_trees in enumerate(trees):
        round_trees = _as_list(round_trees, f"fitted.trees[{i}]", length=k_trees)
        predictors.append([_decode_tree(tree, f"fitted.trees[{i}][{k}]", stored)
                           for k, tree in enumerate(round_trees)])
    state = dict(vars(estimator), **attributes, n_features_in_=n_features,
                 n_iter_=n_iter, n_trees_per_iteration_=k_trees,
                 _baseline_prediction=baseline, _bin_mapper=bin_mapper,
                 _predictors=predictors)
    if names is not None:
        state["feature_names_in_"] = names
    if name == "HistGBDTClassifier":
        state["classes_"] = classes
    check_state(cls, state)
    if verify_checksum:
        _verify_checksum(document)
    estimator.__dict__.update(nest(cls, state))
    estimator.booster_.pack()
    return estimator


def _decode_bin_mapper(value, n_features):
    where = "fitted.bin_mapper"
    value = _as_dict(value, where)
    max_bins = _as_int(_get(value, "max_bins", where), f"{where}.max_bins", low=2, high=255)
    missing_bin = _as_int(_get(value, "missing_bin", where), f"{where}.missing_bin",
                          low=max_bins, high=255)
    thresholds = _as_list(_get(value, "bin_thresholds", where), f"{where}.bin_thresholds",
                          length=n_features)
    decoded = []
    for f, t in enumerate(thresholds):
        w = f"{where}.bin_thresholds[{f}]"
        t = _as_list(t, w)
        if len(t) > max_bins - 1:
            _fail(w, f"{len(t)} thresholds, at most max_bins - 1 = {max_bins - 1}")
        t = _numeric_array(t, np.dtype(np.float64), (len(t),), w)
        if np.any(np.isnan(t)) or np.any(np.diff(t) <= 0):
            _fail(w, "thresholds must be strictly increasing numbers")
        decoded.append(t)
    mapper = object.__new__(BinMapper)
    mapper.__dict__.update(_decode_attributes(
        _get(value, "attributes", where), BIN_MAPPER_ATTRIBUTES, f"{where}.attributes"))
    mapper.max_bins = max_bins
    mapper.missing_bin = missing_bin
    mapper.bin_thresholds_ = decoded
    check_bin_mapper(mapper, n_features, where)
    return mapper
