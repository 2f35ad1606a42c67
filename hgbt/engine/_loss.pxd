# The kinds of single-output loss that _loss.pyx's row_gradients and
# row_losses dispatch on, one per loss of losses.py. Python sees them as the
# IntEnum _loss.LossKind (members are ints), which losses.py passes. The
# first four (through HUBER) have the row weight as hessian, so their
# hessian may be a constant; keep them first.
cpdef enum LossKind:
    SQUARED_ERROR = 0
    ABSOLUTE_ERROR = 1
    QUANTILE = 2
    HUBER = 3
    POISSON = 4
    GAMMA = 5
    TWEEDIE = 6
    BINARY_LOG_LOSS = 7
