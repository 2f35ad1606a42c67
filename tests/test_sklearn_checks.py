"""scikit-learn's own estimator checks, with short fits and with the defaults."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from hgbt import HistGBDTClassifier, HistGBDTRanker, HistGBDTRegressor


@parametrize_with_checks([
    HistGBDTRegressor(max_iter=10), HistGBDTClassifier(max_iter=10),
    HistGBDTRegressor(max_iter=10, use_quantized_grad=True),
    HistGBDTClassifier(max_iter=10, use_quantized_grad=True),
    # without qid every row is in one query (the checks' y are small integers)
    HistGBDTRanker(max_iter=10),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# With the defaults the checks' tiny data (15 rows, min_samples_leaf=20) allows
# no split: the fit stops before a round of one-leaf trees (engine/boosting.py),
# so integer weights and repeated rows give the same model (issue 20, item 7).
@parametrize_with_checks([HistGBDTRegressor(), HistGBDTClassifier(), HistGBDTRanker()])
def test_sklearn_compatible_defaults(estimator, check):
    check(estimator)
