"""The defaults of the options a user may leave out, each written once.

The library's signatures, the command line's flags (and the ``[default: ...]`` of their
help) and the settings file's fallbacks all take them from here. This module imports
nothing, so that the command line can read it without loading the library.
"""

# the tests: which metrics, at which level, with which critical values
DEFAULT_METRIC = "kld"
DEFAULT_ALPHA = 0.2
DEFAULT_CRITICAL = "auto"
# the Monte Carlo draws of the critical values (and of everything else a seed drives)
DEFAULT_SEED = 0
DEFAULT_DRAWS = 10_000

# the online gate: when a target's releases start being checked (none: from the first),
# and the request log's key column
DEFAULT_GRACE = "none"
DEFAULT_KEY = "id"

# ldiv's l: the number of distinct values of X (or "entropy": e to their entropy)
DEFAULT_DIVERSITY = "distinct"

# assess --fix: the strategy, and the merge plans re-assessed exhaustively before the
# search switches to a greedy heuristic
DEFAULT_FIX_BY = "both"
DEFAULT_FIX_BUDGET = 3000

# audit: the disclosure threshold, and the merge plans checked exhaustively (each
# recomputes every bound of a merged table) before the greedy heuristic takes over
DEFAULT_TAU = 3
DEFAULT_AUDIT_BUDGET = 3000
DEFAULT_MERGE = "both"  # what audit --fix may merge: rows, columns or both

# randomize: which attributes randomized response randomizes (qi, sensitive or both)
DEFAULT_SIDE = "both"

# calibrate: the levels and sample sizes measured, and the null releases per size
DEFAULT_CALIBRATION_ALPHAS = (0.05, 0.2)
DEFAULT_CALIBRATION_SIZES = (20, 40, 100, 400, 2000)
DEFAULT_RELEASES = 4000

# simulate: the metrics and levels compared, and the random request orders
DEFAULT_SIMULATE_METRICS = ("mis", "kld", "cst", "dqt")
DEFAULT_SIMULATE_ALPHAS = (0.2, 0.05)
DEFAULT_SEQUENCES = 20

# serve: where it listens, and what one request may hold
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
DEFAULT_MAX_BATCH = 10_000  # keys in one POST
DEFAULT_MAX_BODY = 4 << 20  # bytes of one request body
DEFAULT_MAX_KEY_BYTES = 256  # bytes of one key (UTF-8)
DEFAULT_BODY_TIMEOUT = 10.0  # seconds to receive a body
