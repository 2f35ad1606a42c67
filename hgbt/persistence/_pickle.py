"""Pickles: the hgbt version they were written with, and checks on load.

Unpickling runs whatever code the pickle names (that is how pickle works),
so a pickle from elsewhere is as trusted as a script from there; use
:func:`hgbt.load_model` (or skops) for files from elsewhere. What hgbt can
do, it does: an estimator's state is pickled as one payload of bytes with
its SHA-256, checked before the payload is unpickled, so a damaged byte
inside it is a ``ValueError`` before pickle's own machinery reads it (a
damaged memo index there can make CPython's unpickler allocate gigabytes);
then the state passes :func:`._checks.check_state` before the estimator
packs or predicts anything.
"""
import hashlib
import pickle
import warnings

from ..core import version
from ._checks import check_state
from ._flat import flatten, nest


def hgbt_version():
    """The running hgbt version."""
    return version.__version__


class InconsistentVersionWarning(UserWarning):
    """An estimator is unpickled with another hgbt version than it was pickled with.

    The hgbt counterpart of :class:`sklearn.exceptions.InconsistentVersionWarning`
    (whose constructor names scikit-learn versions).

    Parameters
    ----------
    estimator_name : str
        Estimator class name.
    current_hgbt_version : str
        The running hgbt version.
    original_hgbt_version : str
        The hgbt version that pickled the estimator ('unknown' when the
        pickle does not record one).
    """

    def __init__(self, *, estimator_name: str, current_hgbt_version: str,
                 original_hgbt_version: str) -> None:
        super().__init__(estimator_name, current_hgbt_version, original_hgbt_version)
        self.estimator_name = estimator_name
        self.current_hgbt_version = current_hgbt_version
        self.original_hgbt_version = original_hgbt_version

    def __str__(self):
        return (f"Trying to unpickle estimator {self.estimator_name} from hgbt version "
                f"{self.original_hgbt_version} when using hgbt version "
                f"{self.current_hgbt_version}. This might lead to breaking code or invalid "
                "results. Use at your own risk. The JSON format of save_model() / "
                "hgbt.load_model() is versioned and checked on load "
                "(doc/model-format.md).")


def pickle_state(state):
    """``__getstate__``: the state (flat: ``_flat.py``) pickled into one
    checksummed payload, with the hgbt version."""
    payload = pickle.dumps(flatten(state), protocol=pickle.HIGHEST_PROTOCOL)
    return {"_hgbt_version": hgbt_version(), "_hgbt_payload": payload,
            "_hgbt_sha256": hashlib.sha256(payload).hexdigest()}


def _unwrap(state):
    # The payload of pickle_state, checked before it is unpickled; states of
    # pickles written before payloads are returned as they are.
    if "_hgbt_payload" not in state:
        return dict(state)
    payload, digest = state.get("_hgbt_payload"), state.get("_hgbt_sha256")
    if (not isinstance(payload, bytes) or not isinstance(digest, str)
            or hashlib.sha256(payload).hexdigest() != digest):
        raise ValueError("Invalid hgbt pickle: its content does not match its SHA-256 "
                         "checksum (the file is damaged).")
    inner = pickle.loads(payload)
    if not isinstance(inner, dict):
        raise ValueError(f"Invalid hgbt pickle: the state is a {type(inner).__name__}, "
                         "not a dict.")
    return dict(inner, _hgbt_version=state.get("_hgbt_version", "unknown"))


def unpickle_state(estimator, state):
    """``__setstate__``: unpack the payload (its checksum first), pop the
    recorded hgbt version, warn if it differs, check the state
    (:func:`._checks.check_state`) and return it as the estimator's
    ``__dict__`` (its model a Booster: ``_flat.nest``).

    Raises
    ------
    ValueError
        If the pickle is damaged or the state is not one the estimator can
        safely predict with.
    """
    if not isinstance(state, dict):
        raise ValueError(f"Invalid hgbt pickle: the state is a {type(state).__name__}, "
                         "not a dict.")
    state = _unwrap(state)
    original = state.pop("_hgbt_version", "unknown")
    current = hgbt_version()
    if original != current:
        warnings.warn(InconsistentVersionWarning(
            estimator_name=type(estimator).__name__, current_hgbt_version=current,
            original_hgbt_version=original), stacklevel=3)
    check_state(type(estimator), state)
    return nest(type(estimator), state)
