"""Model persistence: pickles with the hgbt version, and the JSON model format.

Pickles (``pickle``, ``joblib``) record the hgbt version that wrote them;
unpickling under another version warns with :class:`InconsistentVersionWarning`.
``estimator.save_model(path)`` / :func:`load_model` use a documented,
versioned JSON format (``doc/model-format.md``) with a checksum of its content.

Both loaders treat their input as untrusted data: the estimator's state is
checked (``_checks.check_state``: parameters, counts, bin mapper, every
tree) before anything predicts with it, and a violation is a ``ValueError``.
A pickle still runs the code it names, by design: only :func:`load_model`
(or skops) is safe for files from elsewhere.

Modules: ``_pickle`` (version record, checks on unpickling), ``_json`` (the
model format), ``_checks`` (the checks both use; trees via
``hgbt.tree.validation``).
"""
from ._checks import check_state
from ._json import (ESTIMATORS, FORMAT, FORMAT_VERSION, NODE_DTYPE, content_checksum,
                    load_model, model_from_dict, model_to_dict, register_estimator,
                    save_model)
from ._pickle import InconsistentVersionWarning, hgbt_version, pickle_state, unpickle_state

__all__ = ["ESTIMATORS", "FORMAT", "FORMAT_VERSION", "InconsistentVersionWarning",
           "NODE_DTYPE", "check_state", "content_checksum", "hgbt_version", "load_model",
           "model_from_dict", "model_to_dict", "pickle_state", "register_estimator",
           "save_model", "unpickle_state"]
