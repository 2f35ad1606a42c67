"""scikit-learn's own estimator checks."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from hgbt import HistGBDTRegressor


@parametrize_with_checks([HistGBDTRegressor(max_iter=10)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
