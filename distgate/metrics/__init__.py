"""The vectorised metric core.

Every function takes counts of shape ``(..., |Y|, |X|)`` (leading batch dimensions
allowed) and a baseline ``p`` of shape ``(|X|,)`` (or broadcastable), so one code path
serves a single assessment, a batch of candidate releases and Monte Carlo samples.
Absent targets (n_y = 0) get NaN statistics.

- :mod:`~distgate.metrics.information`: KL distance, mutual information, exposure
- :mod:`~distgate.metrics.pearson`: Pearson goodness of fit with merged groups
- :mod:`~distgate.metrics.dixon`: Dixon's Q (r10) and its critical values
- :mod:`~distgate.metrics.leakage`: distribution leakage, entropy leakage, earth mover's distance
- :mod:`~distgate.metrics.registry`: metric names mapped to tests with critical values
"""
