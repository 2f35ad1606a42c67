"""Interrupt safety (hgbt/engine/interrupts.py and the estimators' fit):
Ctrl-C or an error during fit leaves the estimator exactly as before the
call; a daemon thread's fit does not abort the interpreter's exit. The
signal and exit tests run in subprocesses, from a folder outside the source
tree (the uninstalled package there would shadow the built one)."""
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from hgbt import HistGBDTClassifier, HistGBDTRegressor
from hgbt.engine import interrupts
from fitted import rounds

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
TESTS = os.path.dirname(os.path.abspath(__file__))  # the children import fitted.py


def _run(code, cwd, **kwargs):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kwargs)


def test_an_error_mid_warm_start_leaves_the_estimator_as_it_was():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = X[:, 0] + rng.normal(size=500)
    model = HistGBDTRegressor(max_iter=10, warm_start=True, random_state=0,
                              eval_metric="r2").fit(X, y, eval_set=[(X[:50], y[:50])])
    before = pickle.dumps(model)
    predictions = model.predict(X)

    class Boom:
        def after_round(self, iteration, history, estimator):
            if iteration == 14:
                raise RuntimeError("boom")

    model.set_params(max_iter=30)
    with pytest.raises(RuntimeError, match="boom"):
        model.fit(X, y, eval_set=[(X[:50], y[:50])], callbacks=[Boom()])
    model.set_params(max_iter=10)
    assert pickle.dumps(model) == before
    assert model.n_iter_ == len(rounds(model)) == 10
    assert model.predict(X).tobytes() == predictions.tobytes()
    assert len(model.evals_result_["valid_0"]["r2"]) == 11


_SIGINT_CHILD = """
    import pickle, sys
    import numpy as np
    from hgbt import HistGBDTClassifier
    sys.path.insert(0, {tests!r})
    from fitted import rounds
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 10))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    model = HistGBDTClassifier(max_iter=5, warm_start=True, random_state=0,
                               early_stopping=True, n_iter_no_change=10**6)
    if {warm}:
        model.fit(X, y)
    before = pickle.dumps(model)
    predictions = model.predict_proba(X).tobytes() if {warm} else None

    class Announce:
        def after_round(self, iteration, history, estimator):
            if iteration == 7:
                print("ROUND", flush=True)

    model.set_params(max_iter=100_000)
    try:
        model.fit(X, y, callbacks=[Announce()])
        print("FINISHED", flush=True)
    except KeyboardInterrupt:
        model.set_params(max_iter=5)
        same = pickle.dumps(model) == before
        if {warm}:
            same = same and model.predict_proba(X).tobytes() == predictions
            same = same and model.n_iter_ == len(rounds(model)) == 5
        else:
            same = same and not hasattr(model, "n_iter_")
        print("SAME" if same else "CHANGED", flush=True)
"""


@pytest.mark.parametrize("warm", [False, True], ids=["fit", "warm-start refit"])
def test_sigint_during_fit_leaves_the_estimator_as_before(tmp_path, warm):
    verdicts = []
    for delay in (0.0, 0.013, 0.031, 0.047, 0.089):
        child = _run(_SIGINT_CHILD.format(warm=warm, tests=TESTS), tmp_path)
        # a child that hangs before its first round fails the test, not CI's clock
        if not select.select([child.stdout], [], [], 120)[0]:
            child.kill()
            pytest.fail("the child printed nothing in 120 s")
        assert child.stdout.readline().strip() == "ROUND", child.stderr.read()
        time.sleep(delay)  # land in different places of a round
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
        verdicts.append(out.strip())
        assert child.returncode == 0, err
    assert verdicts == ["SAME"] * 5


_DAEMON_CHILD = """
    import threading
    import numpy as np
    from hgbt import HistGBDTClassifier
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30_000, 10))
    y = np.digitize(X[:, 0] + X[:, 1], [-1.0, 0.0, 1.0])  # 4 classes
    running = threading.Event()

    class Running:
        def after_round(self, iteration, history, estimator):
            running.set()

    def work():
        HistGBDTClassifier(max_iter=10**6, n_threads=2, early_stopping=False).fit(
            X, y, callbacks=[Running()])

    threading.Thread(target=work, daemon=True).start()
    running.wait()
    print("EXITING", flush=True)
"""


def test_interpreter_exit_during_a_daemon_thread_fit_is_clean(tmp_path):
    for _ in range(10):
        child = _run(_DAEMON_CHILD, tmp_path)
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        assert out.strip() == "EXITING"
        assert "Fatal" not in err and "Traceback" not in err, err


def test_stop_running_fits_waits_for_a_fit_to_stop(monkeypatch):
    # in-process: the exit hook's event stops a running fit at a round boundary
    exiting = threading.Event()
    monkeypatch.setattr(interrupts, "_exiting", exiting)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    started = threading.Event()

    class Started:
        def after_round(self, iteration, history, estimator):
            started.set()

    model = HistGBDTClassifier(max_iter=10**6, early_stopping=False)
    thread = threading.Thread(target=model.fit, args=(X, y),
                              kwargs=dict(callbacks=[Started()]))
    thread.start()
    assert started.wait(60)
    assert interrupts.stop_running_fits(timeout=60)
    thread.join(60)
    assert 0 < model.n_iter_ < 10**6
    with pytest.raises(RuntimeError, match="interpreter is exiting"):
        HistGBDTClassifier(max_iter=2).fit(X, y)
