"""Fits that end cleanly: at interpreter exit, and never half-applied.

A fit in a daemon thread that is still inside a kernel when the
interpreter finalizes can abort the process (the thread wakes up without
an interpreter). :func:`running_fit` registers every fit; at exit (an
``atexit`` hook, which runs while daemon threads still run) a shared event
asks each one to stop at its next round boundary (the
:class:`ShutdownStop` callback every fit carries) and waits until they have
left the kernels, for at most :data:`EXIT_WAIT_SECONDS`. A fit that starts
once the interpreter is exiting raises instead of starting kernels.
"""
import atexit
import threading
from contextlib import contextmanager

from .callbacks import STOP, Callback

#: the longest the interpreter's exit waits for running fits to stop
EXIT_WAIT_SECONDS = 60.0

_exiting = threading.Event()
_running = threading.Condition()
_n_running = 0


class ShutdownStop(Callback):
    """Stop the fit at the next round boundary once the interpreter exits
    (every fit carries one)."""

    reason = "the interpreter is exiting"

    def before_round(self, iteration, history, estimator):
        return STOP if _exiting.is_set() else None


@contextmanager
def running_fit():
    """Register a fit for the whole of its run (see the module's docstring).

    Raises
    ------
    RuntimeError
        When the interpreter is already exiting.
    """
    global _n_running
    if _exiting.is_set():
        raise RuntimeError("the interpreter is exiting: a fit cannot start now")
    with _running:
        _n_running += 1
    try:
        yield
    finally:
        with _running:
            _n_running -= 1
            _running.notify_all()


def stop_running_fits(timeout=EXIT_WAIT_SECONDS):
    """Ask every running fit to stop and wait until none runs (or ``timeout``).

    Returns
    -------
    stopped : bool
        Whether no fit runs any more.
    """
    _exiting.set()
    with _running:
        return _running.wait_for(lambda: _n_running == 0, timeout)


atexit.register(stop_running_fits)
