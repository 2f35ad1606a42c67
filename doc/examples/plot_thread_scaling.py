"""Fit time against the number of threads
======================================

hgbt builds histograms, finds splits and partitions rows with OpenMP
threads; ``n_threads`` sets how many. This example times one fit for a few
thread counts and shows two things a user should know: how much faster the
fit gets with more threads on the machine at hand, and that the fitted model
does not depend on the thread count at all, bit for bit, so a model trained
on a laptop with 4 threads and on a server with 64 is the same model.
"""

# %%
# Data and thread counts
# ----------------------
#
# :func:`hgbt.datasets.make_regression_task` generates a nonlinear regression
# task with 28 features and missing values. We time up to four thread
# counts, from 1 to ``os.cpu_count()``.

import os
import time

import matplotlib.pyplot as plt
import numpy as np

from hgbt import HistGBDTRegressor
from hgbt.datasets import make_regression_task

X, y = make_regression_task(n_samples=30_000, random_state=0)
cpus = os.cpu_count() or 1
counts = [c for c in (1, 2, 4, 8, 16, 32, 64, 128) if c < cpus] + [cpus]
if len(counts) > 4:
    counts = counts[:1] + counts[-3:]
print(f"{X.shape[0]} rows, {X.shape[1]} features; os.cpu_count() = {cpus}; "
      f"thread counts {counts}")

# %%
# Timing the fits
# ---------------
#
# Each count is fitted twice and the faster fit is kept, which removes most
# of the noise of a shared machine. Early stopping is off, so that every fit
# grows the same 30 rounds of 31-leaf trees. An explicit ``n_threads`` is
# used as given (up to 4 per usable CPU), not adapted to the load.

fit_time, predictions = {}, {}
for n_threads in counts:
    model = HistGBDTRegressor(max_iter=30, max_leaf_nodes=31, early_stopping=False,
                              n_threads=n_threads, random_state=0)
    best = np.inf
    for _ in range(2):
        start = time.perf_counter()
        model.fit(X, y)
        best = min(best, time.perf_counter() - start)
    fit_time[n_threads] = best
    predictions[n_threads] = model.predict(X)
    print(f"n_threads={n_threads:3d}: best fit {best:.3f} s, "
          f"speed-up {fit_time[counts[0]] / best:.2f}x")

# %%
# The same model for every thread count
# -------------------------------------
#
# Floating-point sums depend on the order of their terms, so a library that
# lets each thread add up its own rows can grow slightly different trees
# with another number of threads. hgbt sums in a fixed order, so the
# predictions are identical, not merely close:

reference = predictions[counts[0]]
for n_threads in counts[1:]:
    print(f"n_threads={n_threads} predicts exactly as n_threads={counts[0]}:",
          np.array_equal(predictions[n_threads], reference))

# %%
# Speed-up
# --------
#
# The figure shows the speed-up over one thread, against the ideal linear
# speed-up. These numbers were measured on the machine that built this page,
# and depend on it: its cores, its memory bandwidth and, above all, what
# else was running. On cores that other processes keep busy, OpenMP threads
# wait for each other at the end of every parallel region, and a fit with
# more threads can even be slower than with one; the default
# ``n_threads=None`` measures the free cores and uses only those. For a
# proper measurement, side by side with LightGBM and XGBoost on the same
# data, run ``benchmarks/thread_scaling.py`` from the source tree on an idle
# machine.

speedup = [fit_time[counts[0]] / fit_time[c] for c in counts]
fig, (ax_time, ax_speed) = plt.subplots(1, 2, figsize=(9, 3.8))
ax_time.bar([str(c) for c in counts], [fit_time[c] for c in counts])
ax_time.set_xlabel("n_threads")
ax_time.set_ylabel("fit time (s), best of 2")
ax_time.set_title("Fit time")
ax_speed.plot(counts, speedup, "o-", label="measured")
ax_speed.plot(counts, counts, "k--", lw=1, label="ideal")
ax_speed.set_xticks(counts)
ax_speed.set_xlabel("n_threads")
ax_speed.set_ylabel("speed-up over 1 thread")
ax_speed.set_title("Speed-up")
ax_speed.legend(loc="upper left")
fig.suptitle(f"{X.shape[0]:,} rows x {X.shape[1]} features, 30 rounds, "
             f"on a machine with {cpus} CPUs")
fig.tight_layout()
