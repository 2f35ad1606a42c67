"""``hgbt-demo`` / ``python -m hgbt``: train on a generated regression task; print score and time."""
import argparse
import time

from sklearn.metrics import mean_squared_error, r2_score
from sklearn.model_selection import train_test_split

from . import HistGBDTRegressor, __version__
from .core._openmp import effective_n_threads
from .datasets import make_regression_task


def main(argv=None):
    parser = argparse.ArgumentParser(prog="hgbt-demo", description=__doc__)
    parser.add_argument("--n-samples", type=int, default=200_000)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--n-threads", type=int, default=None)
    args = parser.parse_args(argv)

    X, y = make_regression_task(n_samples=args.n_samples, random_state=0)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2,
                                                        random_state=0)
    model = HistGBDTRegressor(max_iter=args.max_iter, n_threads=args.n_threads,
                              early_stopping=False,
                              random_state=0)
    t0 = time.perf_counter()
    model.fit(X_train, y_train)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = model.predict(X_test)
    predict_s = time.perf_counter() - t0
    print(f"hgbt {__version__}: {X_train.shape[0]} x {X.shape[1]} regression with 5% "
          f"missing, {args.max_iter} rounds, "
          f"{effective_n_threads(args.n_threads)} threads")
    print(f"test R^2 {r2_score(y_test, pred):.4f}  "
          f"RMSE {mean_squared_error(y_test, pred) ** 0.5:.4f}")
    print(f"fit {fit_s:.2f}s  predict {predict_s:.3f}s ({X_test.shape[0]} rows)")


if __name__ == "__main__":
    main()
