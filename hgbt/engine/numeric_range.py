"""The numeric range a fit supports: float32 gradients and hessians.

Gradients and hessians are float32 (as in LightGBM, XGBoost and
scikit-learn's HistGradientBoosting), snapped to a power-of-two grid no
finer than ``2**-126`` (:func:`hgbt.core.exact.grid_exponent`). Values
beyond float32's range (about 3.4e38) overflow to inf and make every later
prediction NaN; values below about ``2**-100`` lose their precision on the
grid and, below ``2**-126``, become 0, so every tree is a single leaf.

hgbt rejects such fits with a ValueError naming the limit rather than
rescaling internally: a scale factor would change the meaning of the
absolute parameters (``l2_regularization``, ``min_hessian_to_split``,
``max_delta_step``-like leaf clipping, ``tol``) and of the stored model.
Rescaling ``y`` (e.g. dividing by a power of ten) or the weights is the
user's one-line fix. Two checks:

* before the first round (:func:`check_fit_range`, on every process
  holding rows): regression targets with ``|y| > MAX_VALUE`` or a nonzero
  spread below ``MIN_SPREAD``, sample weights above ``MAX_VALUE`` or all
  below ``MIN_SPREAD``;
* every tree (:func:`hgbt.core.exact.grid_exponent` raises
  :class:`~hgbt.core.exact.GradientOverflowError` on the largest ``|g|`` or
  ``|h|`` the grid is chosen from anyway, so it costs nothing; the boosting
  loop turns it into a ValueError naming the round): gradients
  that overflowed all the same (large ``|y| * weight``, or a diverging
  fit, e.g. Poisson with a large ``learning_rate``).
"""
import numpy as np

#: largest |y| and sample weight accepted: 2**126 ~ 8.5e37, almost a factor
#: 4 below float32's largest value (~2**128), for residuals of both signs
MAX_VALUE = 2.0 ** 126
#: smallest nonzero spread (max - min) of y, and largest weight, accepted:
#: 2**-100 ~ 7.9e-31, so gradients keep float32 precision on the 2**-126 grid
MIN_SPREAD = 2.0 ** -100


def check_fit_range(loss, y, sample_weight):
    """Raise ValueError if ``y`` or ``sample_weight`` is outside the range
    float32 gradients can represent (see the module docstring).

    Parameters
    ----------
    loss : BaseLoss
        The fit's loss (a custom loss's targets may mean anything: its
        gradients are only checked per tree).
    y : ndarray of shape (n_samples,), float64
        Encoded targets (class codes for a classifier: always in range).
    sample_weight : ndarray of shape (n_samples,) or None
    """
    if loss.name != "custom" and y.shape[0]:
        low, high = float(np.min(y)), float(np.max(y))
        largest = max(-low, high)
        if largest > MAX_VALUE:
            raise ValueError(
                f"|y| up to {largest:.3g} exceeds the supported {MAX_VALUE:.3g} (2**126): "
                "gradients are float32 (largest 3.4e38). Divide y by a constant.")
        if 0.0 < high - low < MIN_SPREAD:
            raise ValueError(
                f"y spans only {high - low:.3g}, below the supported {MIN_SPREAD:.3g} "
                "(2**-100): float32 gradients would lose their precision or "
                "underflow to 0. Multiply y by a constant.")
    if sample_weight is not None and sample_weight.shape[0]:
        largest = float(np.max(sample_weight))
        if largest > MAX_VALUE:
            raise ValueError(
                f"sample_weight up to {largest:.3g} exceeds the supported {MAX_VALUE:.3g} "
                "(2**126): weighted gradients are float32 (largest 3.4e38). Divide "
                "the weights by a constant.")
        if 0.0 < largest < MIN_SPREAD:
            raise ValueError(
                f"every sample_weight is at most {largest:.3g}, below the supported "
                f"{MIN_SPREAD:.3g} (2**-100): weighted float32 gradients would "
                "underflow. Multiply the weights by a constant.")


def diverged_message(iteration):
    """The error message of a gradient overflow at round ``iteration``."""
    if iteration == 0:
        return ("Gradients at the baseline prediction overflow float32 (|g|, |h| <= "
                "3.4e38): |y| times sample_weight is too large. Divide y or the "
                "weights by a constant.")
    return (f"The fit diverged at round {iteration}: gradients overflowed float32 "
            "(|g|, |h| <= 3.4e38). Lower learning_rate (or rescale y / sample_weight).")
