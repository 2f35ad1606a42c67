"""Survival analysis with censored times
=====================================

When the target is the time until an event (a relapse, a customer leaving,
a machine failing), some rows end before the event happens: the study
closed, the patient moved away. Their time is *censored*, only known to
exceed the follow-up. Dropping those rows, or treating their follow-up as
the event time, biases any model toward short times.
:class:`~hgbt.HistGBDTSurvival` fits boosted trees to censored times with
the Cox proportional hazards loss (XGBoost's ``survival:cox``) or an
accelerated failure time model (``survival:aft``), and gives each row a
survival curve. This example fits both on a simulated clinical study and
checks the curves against the true ones.
"""

# %%
# A simulated study
# -----------------
#
# Patients enter a study over several years and are followed until relapse or
# until the study closes (administrative censoring); some also leave early.
# Their relapse time follows a Weibull model whose hazard depends on age, a
# biomarker (with a threshold effect), tumour size and a treatment that
# works better for younger patients. Because we simulate, we know every
# patient's true survival function ``S(t) = exp(-(t / scale)^shape e^eta)``.

import matplotlib.pyplot as plt
import numpy as np

from hgbt import HistGBDTSurvival

rng = np.random.default_rng(0)
n = 4000
age = rng.uniform(30, 85, size=n)
biomarker = rng.lognormal(0, 0.6, size=n)
tumour_size = rng.gamma(2.0, 1.2, size=n)                 # cm
treated = rng.random(n) < 0.5
noise = rng.normal(size=(n, 3))                           # unrelated measurements
X = np.column_stack([age, biomarker, tumour_size, treated, noise])

eta = (0.03 * (age - 60) + 1.0 * (biomarker > 1.5) + 0.25 * tumour_size
       - treated * (1.2 - 0.02 * (age - 30)))
shape, scale = 1.5, 6.0


def true_survival(t, eta):
    return np.exp(-np.power.outer(t, shape).T / scale**shape * np.exp(eta)[:, None])


relapse = scale * (-np.log(rng.random(n)) / np.exp(eta)) ** (1 / shape)
follow_up = np.minimum(rng.uniform(2, 8, size=n),         # study closes
                       rng.exponential(20, size=n))       # moved away
event = relapse <= follow_up
time = np.minimum(relapse, follow_up)
y = np.array(list(zip(event, time)), dtype=[("event", bool), ("time", float)])
print(f"{n} patients, {1 - event.mean():.0%} censored")

train, test = np.arange(n) < 3000, np.arange(n) >= 3000

# %%
# Cox proportional hazards
# ------------------------
#
# ``y`` is a structured array of an event flag and a time, as
# scikit-survival's ``Surv.from_arrays`` makes it. The trees learn the log
# hazard ratio; ``predict`` returns the hazard ratio (higher: the event
# comes sooner) and ``score`` Harrell's concordance index: among comparable
# pairs of patients (the shorter time is a relapse), the share that the
# model orders correctly (0.5 is a coin toss). The small function below
# computes it and checks ``score``; with the true ``eta`` as risk it gives
# the concordance of the perfect model, the ceiling that the noise of the
# relapse times leaves on these rows.

cox = HistGBDTSurvival(loss="cox", random_state=0).fit(X[train], y[train])
print(f"Cox: {cox.n_iter_} rounds, held-out concordance "
      f"{cox.score(X[test], y[test]):.3f}")


def concordance(time, event, risk):
    """Harrell's C: pairs whose shorter time is an event, ordered by risk."""
    shorter = (time[:, None] < time[None, :]) & event[:, None]
    right = (risk[:, None] > risk[None, :]) + 0.5 * (risk[:, None] == risk[None, :])
    return (right * shorter).sum() / shorter.sum()


assert np.isclose(concordance(time[test], event[test], cox.predict(X[test])),
                  cox.score(X[test], y[test]))
print(f"concordance of the true eta on the same rows: "
      f"{concordance(time[test], event[test], eta[test]):.3f}")

# %%
# Survival curves for low, medium and high risk
# ---------------------------------------------
#
# ``predict_survival_function(X, times)`` gives each row's probability of
# being relapse-free past each time, from Breslow's estimate of the baseline
# hazard on the training rows. We take the held-out patients at the 10th,
# 50th and 90th percentile of predicted risk and draw their curves next to
# the true ones.

risk = cox.predict(X[test])
picked = np.argsort(risk)[[int(0.1 * risk.size), risk.size // 2, int(0.9 * risk.size)]]
rows = X[test][picked]
times = np.linspace(0, 8, 81)
cox_curves = cox.predict_survival_function(rows, times)
truth = true_survival(times, eta[test][picked])

fig, ax = plt.subplots(figsize=(8, 4.5))
labels = ["low risk (10th percentile)", "medium risk (median)",
          "high risk (90th percentile)"]
for curve, true_curve, label, color in zip(cox_curves, truth, labels,
                                           ["tab:green", "tab:blue", "tab:red"]):
    ax.plot(times, curve, color=color, label=label)
    ax.plot(times, true_curve, color=color, ls="--", lw=1)
ax.plot([], [], color="k", ls="--", lw=1, label="true curve (dashed)")
ax.set_xlabel("years since entering the study")
ax.set_ylabel("probability of no relapse yet")
ax.set_ylim(0, 1.02)
ax.set_title("Cox model: predicted survival of three held-out patients")
ax.legend(loc="lower left", fontsize="small")
fig.tight_layout()

# %%
# The predicted curves order the three patients correctly and follow the
# true ones, but the extremes are pulled toward the average: the low-risk
# patient's predicted survival is too pessimistic. The predicted log hazard
# ratios spread less than the true ``eta`` (their standard deviations are
# printed below): early stopping kept few rounds, and a boosted model
# shrinks toward the average what it cannot yet tell from noise. The Cox
# curves are steps, one at each training event time (Breslow's estimate),
# and flatten where few events remain late in the study.

print(f"standard deviation of log(predicted hazard ratio): "
      f"{np.log(cox.predict(X[test])).std():.2f}, of the true eta: "
      f"{eta[test].std():.2f}")

# %%
# Accelerated failure time
# ------------------------
#
# The AFT model writes ``log T = f(x) + sigma Z``: ``predict`` gives a time
# rather than a risk, which is often easier to communicate. A Weibull
# proportional hazards model is also an AFT model with an extreme-value
# ``Z`` and ``sigma = 1 / shape``, so ``aft_distribution='extreme'`` fits
# this simulation's noise exactly; on real data, choose the distribution and
# ``aft_sigma`` on validation data. ``score`` is again the concordance, a
# longer predicted time counting as a lower risk. The predicted time
# ``e^f(x)`` is where ``Z = 0``: not the median, but for the extreme-value
# law the time by which ``1 - 1/e``, about 63% of such patients, have
# relapsed (survival ``1/e``, printed below).

aft = HistGBDTSurvival(loss="aft", aft_distribution="extreme", aft_sigma=1 / shape,
                       random_state=0).fit(X[train], y[train])
print(f"AFT: {aft.n_iter_} rounds, held-out concordance "
      f"{aft.score(X[test], y[test]):.3f}")
print("predicted times e^f(x) of the three patients (years):",
      np.round(aft.predict(rows), 1))
print("their survival at those times:",
      np.round(np.diag(aft.predict_survival_function(rows, aft.predict(rows))), 3))
aft_curves = aft.predict_survival_function(rows, times)

fig, axes = plt.subplots(1, 3, figsize=(10, 3.5), sharey=True)
for ax, cox_curve, aft_curve, true_curve, label in zip(axes, cox_curves, aft_curves,
                                                       truth, labels):
    ax.plot(times, cox_curve, label="Cox")
    ax.plot(times, aft_curve, label="AFT")
    ax.plot(times, true_curve, "k--", lw=1, label="true")
    ax.set_title(label, fontsize="medium")
    ax.set_xlabel("years")
axes[0].set_ylabel("probability of no relapse yet")
axes[0].legend(loc="lower left")
fig.suptitle("Cox and AFT survival curves against the truth")
fig.tight_layout()
