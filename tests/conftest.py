"""Shared test setup."""
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seeded_global_rng():
    # random_state=None draws a fit's seed from NumPy's global generator, and
    # early stopping (on from 100 rows by default) holds out rows with it:
    # each test starts from the same state, so a failure is reproducible.
    np.random.seed(0)
    yield
