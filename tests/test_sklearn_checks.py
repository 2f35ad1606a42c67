"""scikit-learn's own estimator checks."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from hgbt import HistGBDTClassifier, HistGBDTRegressor


@parametrize_with_checks([
    HistGBDTRegressor(max_iter=10), HistGBDTClassifier(max_iter=10),
    HistGBDTRegressor(max_iter=10, use_quantized_grad=True),
    HistGBDTClassifier(max_iter=10, use_quantized_grad=True),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)
