"""The defaults of `arena score` and `arena distance`, written once: `scoring.score.Settings`,
the scoring functions and the command line's options take them from here (a module that
imports nothing heavy, so the command line reads them without importing the scoring stack)."""

import math

SUBSET = "eval200"
ALPHA = 1.0  # split-norm weight (1/m)
KAPPA = math.pi  # compactification scale
BOOTSTRAP = 10000  # resamples
SEED = 0  # of the bootstrap
WORKERS = 1  # processes reading and scoring objects
