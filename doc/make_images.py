"""Draw the pictures of doc/plots.md into doc/images/.

    python doc/make_images.py

A small regressor on scikit-learn's diabetes data (442 rows, 10 features,
bundled with scikit-learn), the same code as the page's examples; PNGs at
80 dpi with the Agg backend.
"""
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.datasets import load_diabetes  # noqa: E402

from hgbt import HistGBDTRegressor  # noqa: E402
from hgbt.plotting import (plot_importance, plot_learning_curve,  # noqa: E402
                           plot_partial_dependence, plot_tree)

IMAGES = Path(__file__).resolve().parent / "images"


def fitted_model():
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    model = HistGBDTRegressor(max_iter=200, learning_rate=0.05, max_leaf_nodes=8,
                              n_iter_no_change=10, eval_metric="r2", random_state=0)
    model.fit(X[:350], y[:350], X_val=X[350:], y_val=y[350:])
    return model, X


def main():
    IMAGES.mkdir(exist_ok=True)
    model, X = fitted_model()
    drawings = {
        "importance.png": lambda: plot_importance(model, max_features=8).figure,
        "tree.png": lambda: plot_tree(model, tree_index=0, precision=3).figure,
        "learning_curve.png": lambda: plot_learning_curve(model, metric="r2").figure,
        "partial_dependence.png": lambda: plot_partial_dependence(
            model, X, ["bmi", "s5", ("bmi", "s5")], grid_resolution=40,
            ax=plt.subplots(figsize=(10, 3.6))[1]).figure_,
    }
    for name, draw in drawings.items():
        figure = draw()
        figure.tight_layout()
        figure.savefig(IMAGES / name, dpi=80)
        plt.close(figure)
        print(f"{name}: {(IMAGES / name).stat().st_size / 1024:.0f} KB")


if __name__ == "__main__":
    main()
